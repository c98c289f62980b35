"""Helpers for tests/test_matrix.py: one adapter per public surface, byte oracles for both backends.

Only public surfaces are used: ``agent_memory`` top-level names, the ``agent-memory`` command as a real
subprocess, the MCP server through the official ``mcp`` client, and ``MemoryToolHandler``.
Every adapter speaks the same small language (write / replace / supersede / forget and read views) so that
one lifecycle drives them all; an operation a surface does not offer is done by its *driver* (the Python API
or the CLI), and the surface's own views are still checked after it.
"""

from __future__ import annotations

import asyncio
import builtins
import itertools
import json
import os
import secrets
import string
import sys
import uuid
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

AGENT = str(Path(sys.executable).with_name("agent-memory"))
ALICE, BOB = "alice", "bob"
ALICE_WORD, BOB_WORD, SHARED_WORD = "quokkalantern", "marmosetharbor", "pelicanrelease"
_db_counter = itertools.count()


# -- planted secrets ----------------------------------------------------------------------------------------------


def make_secrets() -> dict[str, str]:
    """Synthetic, provider-shaped secrets, fresh per cell (so a hit can only come from this cell)."""
    alnum = string.ascii_letters + string.digits
    rnd = "".join(secrets.choice(alnum) for _ in range(48))
    return {
        "sk": "sk-proj-" + rnd,
        "ghp": "ghp_" + "".join(secrets.choice(alnum) for _ in range(36)),
        "pw": "hunter2-" + secrets.token_hex(6),
    }


def secret_needles(sec: dict[str, str]) -> list[str]:
    """What must never appear: each secret whole, and its random part alone."""
    return [sec["sk"], sec["sk"][len("sk-proj-") :], sec["ghp"], sec["ghp"][4:], sec["pw"], sec["pw"][len("hunter2-") :]]


# -- byte oracles ---------------------------------------------------------------------------------------------------


def files_blob(root: Path) -> bytes:
    """Every byte of every file under ``root`` (records, archive, history, events, index.db, -wal, -shm, ...)."""
    out = []
    for path in sorted(root.rglob("*")):
        if path.is_file():
            try:
                out.append(path.name.encode() + b"\0" + path.read_bytes())
            except OSError:
                pass
    return b"\n".join(out)


def pg_blob(url: str) -> bytes:
    """Every row of every table of every non-system schema of the database, as JSON text."""
    import psycopg

    out: list[str] = []
    with psycopg.connect(url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
            "AND table_schema NOT IN ('pg_catalog', 'information_schema')"
        ).fetchall()
        for schema, table in tables:
            for (row,) in conn.execute(f'SELECT row_to_json(x)::text FROM "{schema}"."{table}" x'):
                out.append(f"{schema}.{table}: {row}")
    return "\n".join(out).encode()


def fresh_database(server_url: str) -> str:
    """A new empty database on the test server; its URL (the CLI always uses the default schema, so a
    database per cell keeps cells apart and lets the CLI and the Python API share one store)."""
    import psycopg

    base, _, _ = server_url.rpartition("/")
    name = f"mx_{os.getpid()}_{next(_db_counter)}_{uuid.uuid4().hex[:8]}"  # unique even if this module loads twice
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{base}/{name}"


def found(blob: bytes, needles: list[str]) -> list[str]:
    low = blob.lower()
    return [n for n in needles if n.lower().encode() in low]


# -- the command line -----------------------------------------------------------------------------------------------


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEMORY_")}
    env.update({"LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYDANTIC_AI_NO_BANNER": "1"})
    return env


class CliError(Exception):
    def __init__(self, rc: int, out: str, err: str) -> None:
        super().__init__(f"exit {rc}: {err.strip()[:300]}")
        self.rc, self.out, self.err = rc, out, err
        try:
            self.type = json.loads(out)["error"]["type"]
        except Exception:
            self.type = "?"


class Cli:
    """``agent-memory --root ROOT ... --json`` as a real subprocess; every byte it prints is kept."""

    def __init__(self, root: str, cwd: Path, outputs: list[str]) -> None:
        self.root, self.cwd, self.outputs = root, cwd, outputs

    async def run(self, *args: str, root: str | None = None, timeout: float = 120) -> Any:
        proc = await asyncio.create_subprocess_exec(
            AGENT,
            "--root",
            root or self.root,
            *args,
            "--json",
            cwd=self.cwd,
            env=cli_env(),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out_b, err_b = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise CliError(-9, "", f"timed out after {timeout}s: agent-memory {' '.join(args)}") from None
        out, err = out_b.decode(errors="replace"), err_b.decode(errors="replace")
        self.outputs += [out, err]
        if proc.returncode != 0:
            raise CliError(proc.returncode or 0, out, err)
        return json.loads(out)


# -- surfaces -------------------------------------------------------------------------------------------------------


class NotOffered(Exception):
    """The surface has no such operation or view (the driver does it instead)."""


class Surface:
    """One public way into the store. ``user`` None is the anonymous operator (shared records)."""

    name = "?"
    views: tuple[str, ...] = ("search", "get", "list", "recall", "inject", "events", "history")

    def __init__(self, outputs: list[str]) -> None:
        self.outputs = outputs

    async def write(self, user: str | None, content: str, *, marker: str, scope: str | None = None, key: str | None = None) -> None:
        raise NotOffered

    async def replace(self, user: str, key: str, old: str, new: str, *, marker: str) -> None:
        raise NotOffered

    async def supersede(self, user: str, old_id: str, content: str, *, marker: str) -> None:
        raise NotOffered

    async def forget(self, user: str, rid: str, *, marker: str) -> None:
        raise NotOffered

    async def undo(self, user: str) -> None:
        raise NotOffered

    async def restore(self, user: str, rid: str) -> None:
        raise NotOffered

    async def purge_user(self, user: str) -> Any:
        raise NotOffered

    async def consolidate(self) -> Any:
        raise NotOffered

    async def export_import(self, out: Path, target: str) -> Any:
        raise NotOffered

    # views: each returns text (or a list of ids/texts) for one caller; get/history return None when refused
    async def search(self, user: str | None, query: str) -> list[tuple[str, str]]:
        raise NotOffered

    async def get(self, user: str | None, rid: str) -> str | None:
        raise NotOffered

    async def list(self, user: str | None) -> dict[str, str]:
        raise NotOffered

    async def recall(self, user: str | None, query: str) -> str:
        raise NotOffered

    async def inject(self, user: str | None) -> str:
        raise NotOffered

    async def events(self, user: str | None) -> builtins.list[str]:
        raise NotOffered

    async def history(self, user: str | None, rid: str) -> str | None:
        raise NotOffered

    async def close(self) -> None:
        pass


class ApiSurface(Surface):
    """``agent_memory.MemoryProvider`` (async API), ``export_records`` and ``import_file``."""

    name = "api"

    def __init__(self, target: str, outputs: list[str], **options: Any) -> None:
        super().__init__(outputs)
        from agent_memory import MemoryProvider

        self.target, self.options = target, options
        self.p = MemoryProvider(target, **options)

    def _keep(self, value: Any) -> Any:
        self.outputs.append(repr(value))
        return value

    async def write(self, user, content, *, marker, scope=None, key=None):  # type: ignore[no-untyped-def]
        self._keep(await self.p.remember(content, user_id=user, scope=scope, memory_key=key))

    async def replace(self, user, key, old, new, *, marker):  # type: ignore[no-untyped-def]
        self._keep(await self.p.remember(new, user_id=user, memory_key=key, on_existing="replace"))

    async def supersede(self, user, old_id, content, *, marker):  # type: ignore[no-untyped-def]
        self._keep(await self.p.remember(content, user_id=user, supersedes=old_id))

    async def forget(self, user, rid, *, marker):  # type: ignore[no-untyped-def]
        assert self._keep(await self.p.forget(rid, user_id=user)) is True

    async def undo(self, user):  # type: ignore[no-untyped-def]
        self._keep(await self.p.undo(user_id=user))

    async def restore(self, user, rid):  # type: ignore[no-untyped-def]
        self._keep(await self.p.restore(rid, user_id=user))

    async def purge_user(self, user):  # type: ignore[no-untyped-def]
        return self._keep(await self.p.purge(user_id=user)).to_dict()

    async def consolidate(self):  # type: ignore[no-untyped-def]
        return self._keep(await self.p.consolidate())

    async def export_import(self, out, target):  # type: ignore[no-untyped-def]
        from agent_memory import export_records, import_file, open_backend

        def run() -> Any:
            src = open_backend(self.target, **self.options)
            dst = open_backend(target, **self.options)
            try:
                n = export_records(src, out)
                return n, import_file(dst, out).to_dict()
            finally:
                for b in (src, dst):
                    close_backend(b)

        return self._keep(await asyncio.wait_for(asyncio.to_thread(run), 60))

    async def search(self, user, query):  # type: ignore[no-untyped-def]
        res = self._keep(await self.p.search(query, user_id=user, limit=50))
        return [(h.id, h.snippet) for h in res.hits]

    async def get(self, user, rid):  # type: ignore[no-untyped-def]
        from agent_memory import NotFoundError

        try:
            return str(self._keep(await self.p.get(rid, user_id=user)).content)
        except NotFoundError:
            return None

    async def list(self, user):  # type: ignore[no-untyped-def]
        return {r.id: r.content for r in self._keep(await self.p.list(user_id=user, limit=None))}

    async def recall(self, user, query):  # type: ignore[no-untyped-def]
        return str(self._keep(await self.p.recall(query, user_id=user)).summary)

    async def inject(self, user):  # type: ignore[no-untyped-def]
        return str(self._keep(await self.p.inject(4000, user_id=user)).text)

    async def events(self, user):  # type: ignore[no-untyped-def]
        return [e.id for e in self._keep(await self.p.events(user_id=user))]

    async def history(self, user, rid):  # type: ignore[no-untyped-def]
        from agent_memory import NotFoundError

        try:
            return repr(self._keep(await self.p.history(rid, user_id=user)))
        except NotFoundError:
            return None

    async def close(self) -> None:
        await self.p.aclose()


def close_backend(backend: Any) -> None:
    """Close a backend opened with ``open_backend`` from sync code (its ``close`` may be a coroutine)."""
    close = getattr(backend, "close", None)
    if close is None:
        return
    result = close()
    if asyncio.iscoroutine(result):
        asyncio.run(result)


def _u(user: str | None) -> list[str]:
    return ["--user", user] if user else []


class CliSurface(Surface):
    """The ``agent-memory`` command, one subprocess per call."""

    name = "cli"

    def __init__(self, root: str, cwd: Path, outputs: list[str]) -> None:
        super().__init__(outputs)
        self.cli = Cli(root, cwd, outputs)

    async def write(self, user, content, *, marker, scope=None, key=None):  # type: ignore[no-untyped-def]
        await self.cli.run("remember", content, *_u(user), *(["--scope", scope] if scope else []), *(["--key", key] if key else []))

    async def replace(self, user, key, old, new, *, marker):  # type: ignore[no-untyped-def]
        await self.cli.run("remember", new, *_u(user), "--key", key, "--on-existing", "replace")

    async def supersede(self, user, old_id, content, *, marker):  # type: ignore[no-untyped-def]
        await self.cli.run("remember", content, *_u(user), "--supersede", old_id)

    async def forget(self, user, rid, *, marker):  # type: ignore[no-untyped-def]
        await self.cli.run("forget", rid, *_u(user))

    async def undo(self, user):  # type: ignore[no-untyped-def]
        await self.cli.run("undo", *_u(user))

    async def restore(self, user, rid):  # type: ignore[no-untyped-def]
        await self.cli.run("restore", rid, *_u(user))

    async def purge_user(self, user):  # type: ignore[no-untyped-def]
        return await self.cli.run("purge", "--user", user)

    async def consolidate(self):  # type: ignore[no-untyped-def]
        return await self.cli.run("consolidate")

    async def export_import(self, out, target):  # type: ignore[no-untyped-def]
        exported = await self.cli.run("export", "--out", str(out), timeout=60)
        if not target.startswith("postgresql://"):
            await self.cli.run("init", root=target)
        return exported, await self.cli.run("import", str(out), root=target, timeout=60)

    async def search(self, user, query):  # type: ignore[no-untyped-def]
        return [(h["id"], h["snippet"]) for h in (await self.cli.run("search", query, *_u(user), "--limit", "50"))["hits"]]

    async def get(self, user, rid):  # type: ignore[no-untyped-def]
        try:
            return str((await self.cli.run("get", rid, *_u(user)))["content"])
        except CliError as exc:
            if exc.type == "NotFoundError":
                return None
            raise

    async def list(self, user):  # type: ignore[no-untyped-def]
        return {r["id"]: r["content"] for r in (await self.cli.run("list", *_u(user), "--all"))["records"]}

    async def recall(self, user, query):  # type: ignore[no-untyped-def]
        return str((await self.cli.run("recall", query, *_u(user)))["summary"])

    async def inject(self, user):  # type: ignore[no-untyped-def]
        return str((await self.cli.run("inject", "--budget", "4000", *_u(user)))["text"])

    async def events(self, user):  # type: ignore[no-untyped-def]
        return [e["id"] for e in (await self.cli.run("events", *_u(user)))["events"]]

    async def history(self, user, rid):  # type: ignore[no-untyped-def]
        try:
            return json.dumps(await self.cli.run("history", rid, *_u(user)))
        except CliError as exc:
            if exc.type == "NotFoundError":
                return None
            raise


class McpSurface(Surface):
    """The MCP server (``agent-memory mcp``) through ``mcp.ClientSession``: one session per user.

    ``stdio``: one server process per user (``--user``); ``http``: one server, one bearer token per user."""

    views = ("search", "get", "list", "recall", "inject")

    def __init__(self, transport: str, root: str, tmp: Path, outputs: list[str]) -> None:
        super().__init__(outputs)
        self.name = f"mcp_{transport}"
        self.transport, self.root, self.tmp = transport, root, tmp
        self.stack = AsyncExitStack()
        self.sessions: dict[str, Any] = {}
        self.proc: Any = None

    async def start(self) -> None:
        from _mcp_util import free_port, http_session, write_tokens
        from mcp import ClientSession, StdioServerParameters, stdio_client

        if self.transport == "stdio":
            for user in (ALICE, BOB):
                params = StdioServerParameters(
                    command=AGENT, args=["mcp", "--root", self.root, "--user", user, "--tools", "foreground"], env=cli_env()
                )
                read, write = await self.stack.enter_async_context(stdio_client(params))
                session = await self.stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                self.sessions[user] = session
            return
        tokens = {f"{u}-token-{secrets.token_hex(12)}": {"user": u} for u in (ALICE, BOB)}
        path = write_tokens(self.tmp / "tokens.json", tokens)
        port = free_port()
        proc = await asyncio.create_subprocess_exec(
            AGENT,
            "mcp",
            "--root",
            self.root,
            "--transport",
            "http",
            "--port",
            str(port),
            "--tokens",
            str(path),
            "--tools",
            "foreground",
            env=cli_env(),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        self.proc = proc
        for _ in range(300):
            if proc.returncode is not None:
                raise RuntimeError(f"MCP HTTP server exited: {(await proc.stderr.read()).decode()}")  # type: ignore[union-attr]
            try:
                _, w = await asyncio.open_connection("127.0.0.1", port)
                w.close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        for token, ident in tokens.items():
            self.sessions[ident["user"]] = await self.stack.enter_async_context(http_session(f"http://127.0.0.1:{port}/mcp", token))

    async def call(self, user: str | None, tool: str, args: dict[str, Any]) -> tuple[bool, Any, str]:
        if user is None:
            raise NotOffered  # every MCP identity here is a user; shared records come from the driver
        result = await self.sessions[user].call_tool(tool, args)
        text = "\n".join(getattr(c, "text", "") for c in result.content)
        self.outputs += [text, json.dumps(result.structured_content)]
        return bool(result.is_error), result.structured_content, text

    async def ok(self, user: str | None, tool: str, args: dict[str, Any]) -> Any:
        err, data, text = await self.call(user, tool, args)
        assert not err, f"{tool}: {text[:300]}"
        return data

    async def write(self, user, content, *, marker, scope=None, key=None):  # type: ignore[no-untyped-def]
        await self.ok(
            user, "memory_remember", {"content": content, **({"scope": scope} if scope else {}), **({"memory_key": key} if key else {})}
        )

    async def replace(self, user, key, old, new, *, marker):  # type: ignore[no-untyped-def]
        await self.ok(user, "memory_remember", {"content": new, "memory_key": key, "on_existing": "replace"})

    async def supersede(self, user, old_id, content, *, marker):  # type: ignore[no-untyped-def]
        await self.ok(user, "memory_supersede", {"id": old_id, "content": content})

    async def forget(self, user, rid, *, marker):  # type: ignore[no-untyped-def]
        await self.ok(user, "memory_forget", {"id": rid})

    async def search(self, user, query):  # type: ignore[no-untyped-def]
        data = await self.ok(user, "memory_search", {"query": query, "limit": 50})
        return [(h["id"], h.get("snippet", "")) for h in data["hits"]]

    async def get(self, user, rid):  # type: ignore[no-untyped-def]
        err, data, text = await self.call(user, "memory_get", {"id": rid})
        if err:
            assert "NotFoundError" in text, text[:300]
            return None
        return str(data["content"])

    async def list(self, user):  # type: ignore[no-untyped-def]
        data = await self.ok(user, "memory_list", {"limit": 100})
        return {r["id"]: json.dumps(r) for r in data["records"]}

    async def recall(self, user, query):  # type: ignore[no-untyped-def]
        return str((await self.ok(user, "memory_recall", {"message": query}))["summary"])

    async def inject(self, user):  # type: ignore[no-untyped-def]
        if user is None:
            raise NotOffered
        contents = (await self.sessions[user].read_resource("memory://core")).contents
        text = "\n".join(getattr(c, "text", "") for c in contents)
        self.outputs.append(text)
        return text

    async def close(self) -> None:
        try:
            await self.stack.aclose()
        finally:
            if self.proc is not None and self.proc.returncode is None:
                self.proc.terminate()
                try:
                    await asyncio.wait_for(self.proc.wait(), 10)
                except TimeoutError:
                    self.proc.kill()
                    await self.proc.wait()


class ToolSurface(Surface):
    """Claude's memory tool (``agent_memory.MemoryToolHandler``), one ``/memories`` tree per user."""

    name = "memory_tool"
    views = ("list", "get")

    def __init__(self, provider: Any, outputs: list[str]) -> None:
        super().__init__(outputs)
        from agent_memory import MemoryToolHandler

        self.handlers = {u: MemoryToolHandler(provider, user_id=u) for u in (ALICE, BOB)}
        self.paths: dict[str, str] = {}  # marker -> path
        self.texts: dict[str, str] = {}  # path -> the text this surface last wrote there
        self.ids: dict[str, str] = {}  # record id -> path (filled by the lifecycle)

    async def cmd(self, user: str, command: dict[str, Any]) -> str:
        out = await self.handlers[user].ahandle(command)
        self.outputs.append(out)
        return out

    async def write(self, user, content, *, marker, scope=None, key=None):  # type: ignore[no-untyped-def]
        if user is None or scope is not None:
            raise NotOffered  # the tool writes its caller's own tree
        path = f"/memories/{key or marker}.md"
        out = await self.cmd(user, {"command": "create", "path": path, "file_text": content + "\n"})
        assert out.startswith("File created"), out
        self.paths[marker] = path
        self.texts[path] = content

    async def replace(self, user, key, old, new, *, marker):  # type: ignore[no-untyped-def]
        path = f"/memories/{key}.md"
        out = await self.cmd(user, {"command": "str_replace", "path": path, "old_str": old, "new_str": new})
        assert out.startswith("The memory file has been edited"), out
        self.paths[marker] = path
        self.texts[path] = self.texts.get(path, "").replace(old, new)

    async def supersede(self, user, old_id, content, *, marker):  # type: ignore[no-untyped-def]
        """A file is no fact to supersede (the backends refuse it): the tool's way is to replace its whole text."""
        path = self.ids.get(old_id)
        if path is None or path not in self.texts:
            raise NotOffered  # not a memory file (written by the driver)
        out = await self.cmd(user, {"command": "str_replace", "path": path, "old_str": self.texts[path], "new_str": content})
        assert out.startswith("The memory file has been edited"), out
        self.paths[marker] = path
        self.texts[path] = content

    async def forget(self, user, rid, *, marker):  # type: ignore[no-untyped-def]
        path = self.paths.get(marker)
        if path is None:
            raise NotOffered  # not a memory file (written by the driver)
        out = await self.cmd(user, {"command": "delete", "path": path})
        assert out.startswith("Successfully deleted"), out

    async def list(self, user):  # type: ignore[no-untyped-def]
        if user is None:
            raise NotOffered
        listing = await self.cmd(user, {"command": "view", "path": "/memories"})
        files = {}
        for line in listing.split("\n")[1:]:
            _, _, path = line.partition("\t")
            if path.endswith(".md"):
                files[path] = await self.cmd(user, {"command": "view", "path": path})
        files["<listing>"] = listing
        return files

    async def get(self, user, rid):  # type: ignore[no-untyped-def]
        path = self.ids.get(rid)
        if user is None or path is None:
            raise NotOffered
        out = await self.cmd(user, {"command": "view", "path": path})
        return None if out.startswith("Error") else out
