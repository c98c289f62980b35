"""Where features meet (issue 27): every surface × both backends × the lifecycle × two users.

Surfaces: the Python API (``MemoryProvider``, ``export_records``/``import_file``), the ``agent-memory`` CLI as a
real subprocess, the MCP server over stdio and over streamable HTTP (official ``mcp`` client, one identity per
user), Claude's memory tool (``MemoryToolHandler``) and import (CLI ``import --as-user`` and ``import_file``).
Backends: files (a temp root) and PostgreSQL (a fresh database per cell: the CLI always uses the default schema).

Each cell drives one lifecycle: write (alice private, bob private, a shared project record), replace (keyed),
supersede, forget, undo, forget + restore, consolidate (files: nothing current lost; PostgreSQL: the typed
"unsupported" error), export + import into a fresh root/database, purge alice. An operation a surface does not
offer is done by the cell's driver (the API, or the CLI for the CLI and import cells), and the surface's own
views are checked after every step anyway. After each step:

- bob never sees alice's content through the surface (search, get, list, recall, inject/core, events, history,
  as far as the surface offers them), nor through the driver's list;
- alice sees what she should (the current version of each fact, not what she forgot or replaced);
- the planted secrets (an ``sk-proj-…`` and a ``ghp_…`` token, ``password: hunter2-…``) are in no byte under the
  files root (every file, index.db and its -wal included) or in no row of the database, and in no output;
- after export + import, each user sees the same contents in the copy; after purge, no byte or row holds
  alice's words and bob's records and the shared one are intact.

Soft assertions: a cell goes on after a failed check and reports every failure at the end, step by step.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from _matrix import (
    ALICE,
    ALICE_WORD,
    BOB,
    BOB_WORD,
    SHARED_WORD,
    ApiSurface,
    Cli,
    CliError,
    CliSurface,
    McpSurface,
    NotOffered,
    Surface,
    ToolSurface,
    close_backend,
    files_blob,
    found,
    fresh_database,
    make_secrets,
    pg_blob,
    secret_needles,
)

SURFACES = ("api", "cli", "mcp_stdio", "mcp_http", "memory_tool", "import")
BACKENDS = ("files", "postgres")
ALICE_MARKERS = ("kestrel", "falcon", "heron", "ibis", "jackdaw")
BOB_QUERY = f"{ALICE_WORD} trail deploy parks kestrel falcon heron ibis jackdaw"


@pytest.fixture(scope="module")
def pg_server_url() -> str:
    from _pg import require_psycopg, server

    require_psycopg()
    return server().url


def texts(sec: dict[str, str]) -> dict[str, str]:
    kestrel = f"Alice's favourite trail is the {ALICE_WORD} kestrel ridge."
    return {
        "kestrel": kestrel,
        "falcon": kestrel.replace("kestrel", "falcon"),
        "heron": (
            f"Alice's deploy notes {ALICE_WORD} heron: the token is {sec['sk']} and the CI token {sec['ghp']}; password: {sec['pw']}"
        ),
        "ibis": f"Alice parks at the {ALICE_WORD} ibis garage on level two.",
        "jackdaw": f"Alice parks at the {ALICE_WORD} jackdaw garage on level five.",
        "bob": f"Bob's favourite trail is the {BOB_WORD} coastal path.",
        "shared": f"The release train {SHARED_WORD} leaves every second Tuesday.",
    }


class ImportSurface(ApiSurface):
    """Writes come from files: ``agent-memory import --as-user`` (alice, hostile lines included),
    ``agent_memory.import_file(..., user_id=...)`` (bob) and a plain operator import (the shared record);
    export + import by the CLI. The rest of the lifecycle and the reads go through the Python API."""

    name = "import"

    def __init__(self, target: str, cwd: Path, outputs: list[str], **options: Any) -> None:
        super().__init__(target, outputs, **options)
        self.backend_target = target
        self.cli = Cli(target, cwd, outputs)

    async def export_import(self, out: Path, target: str) -> Any:
        return await CliSurface.export_import(self, out, target)  # type: ignore[arg-type]

    async def write_all(self, t: dict[str, str], sec: dict[str, str]) -> list[str]:
        problems: list[str] = []
        alice = [
            {"content": t["kestrel"], "memory_key": "trail", "tags": ["outdoors"]},
            {"content": t["heron"], "tags": ["deploy"], "metadata": {"api_key": sec["ghp"], "note": f"password: {sec['pw']}"}},
            {"content": t["ibis"]},
            # hostile lines: a shared record, a write into bob's partition, secrets in keys, tags and metadata keys
            {"content": f"Alice planted {ALICE_WORD} owl for every user.", "scope": "global"},
            {"content": f"Alice wrote {ALICE_WORD} wren into bob's partition.", "scope": "user", "user_id": BOB},
            {"content": f"Alice {ALICE_WORD} tern note.", "tags": [sec["ghp"]], "metadata": {sec["sk"]: "x"}},
            {"content": f"Alice {ALICE_WORD} plover note.", "memory_key": sec["sk"]},
        ]
        path = self.cli.cwd / "alice.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in alice), encoding="utf-8")
        first = await self.cli.run("import", str(path), "--as-user", ALICE, "--skip-invalid")
        again = await self.cli.run("import", str(path), "--as-user", ALICE, "--skip-invalid")
        if again.get("written", again.get("created", 0)):
            problems.append(f"import: re-running alice's import wrote again: {again}")
        bob = self.cli.cwd / "bob-mem0.json"  # a mem0 export naming another owner: the override must win
        bob.write_text(
            json.dumps({"results": [{"id": "m-1", "memory": t["bob"], "user_id": ALICE, "created_at": "2026-01-05T10:00:00Z"}]}),
            encoding="utf-8",
        )

        def run_import_file() -> Any:
            from agent_memory import import_file, open_backend

            backend = open_backend(self.backend_target)
            try:
                return import_file(backend, bob, user_id=BOB).to_dict()
            finally:
                close_backend(backend)

        report = await asyncio.wait_for(asyncio.to_thread(run_import_file), 60)
        self.outputs.append(json.dumps(report))
        shared = self.cli.cwd / "shared.jsonl"
        shared.write_text(json.dumps({"content": t["shared"], "scope": "project"}) + "\n", encoding="utf-8")
        await self.cli.run("import", str(shared))
        self.outputs.append(json.dumps(first))
        return problems


class Cell:
    def __init__(self, surface_name: str, backend: str, tmp: Path, pg_url: str | None) -> None:
        self.surface_name, self.backend, self.tmp = surface_name, backend, tmp
        self.outputs: list[str] = []
        self.failures: list[str] = []
        self.native: dict[str, bool] = {}
        if backend == "files":
            from agent_memory import MemoryStore

            self.target = str(tmp / "mem")
            self.copy_target = str(tmp / "copy")
            MemoryStore(self.target).close()
            self.api_options: dict[str, Any] = {"durable": False, "rescan_interval": 0}
        else:
            assert pg_url
            self.target = fresh_database(pg_url)
            self.copy_target = fresh_database(pg_url)
            self.api_options = {}
        self.sec = make_secrets()
        self.t = texts(self.sec)
        self.ids: dict[str, str] = {}  # marker -> record id (alice's and bob's)
        self.alice_ids: set[str] = set()

    def blob(self, target: str | None = None) -> bytes:
        target = target or self.target
        return pg_blob(target) if target.startswith("postgresql://") else files_blob(Path(target))

    def fail(self, step: str, message: str) -> None:
        self.failures.append(f"[{step}] {message}")

    async def setup(self) -> None:
        cli_cwd = self.tmp / "cwd"
        cli_cwd.mkdir()
        name = self.surface_name
        if name == "cli":
            self.surface: Surface = CliSurface(self.target, cli_cwd, self.outputs)
            self.driver: Surface = self.surface
            self.api: ApiSurface | None = None
            return
        if name == "import":
            self.surface = self.driver = ImportSurface(self.target, cli_cwd, self.outputs, **self.api_options)
            return
        self.api = ApiSurface(self.target, self.outputs, **self.api_options)
        self.driver = self.api
        if name == "api":
            self.surface = self.api
        elif name == "memory_tool":
            self.surface = ToolSurface(self.api.p, self.outputs)
        else:
            self.surface = McpSurface(name.split("_")[1], self.target, self.tmp, self.outputs)
            await self.surface.start()

    async def close(self) -> None:
        if self.surface is not self.driver:
            await self.surface.close()
        await self.driver.close()

    # -- operations: the surface's own when it has one, else the driver's -----------------------------------------
    async def op(self, step: str, name: str, *args: Any, **kwargs: Any) -> Any:
        try:
            try:
                result = await getattr(self.surface, name)(*args, **kwargs)
                self.native[name] = True
                return result
            except NotOffered:
                self.native.setdefault(name, False)
                return await getattr(self.driver, name)(*args, **kwargs)
        except Exception as exc:  # a failing operation is a failing cell, and the lifecycle goes on
            self.fail(step, f"{name} raised {type(exc).__name__}: {str(exc)[:300]}")
            return exc

    async def learn_ids(self) -> dict[str, dict[str, str]]:
        """The driver's list of each user's records (the truth), and the ids of the markers found in it."""
        users = (ALICE, BOB, None)
        got = await asyncio.gather(*(self.driver.list(u) for u in users))
        lists = {u or "anon": g for u, g in zip(users, got, strict=True)}
        for rid, content in lists[ALICE].items():
            for marker in ALICE_MARKERS:
                if marker in content:
                    self.ids[marker] = rid
            if ALICE_WORD in content:
                self.alice_ids.add(rid)
        if isinstance(self.surface, ToolSurface):
            for marker, path in self.surface.paths.items():
                if marker in self.ids:
                    self.surface.ids[self.ids[marker]] = path
        return lists

    # -- checks ---------------------------------------------------------------------------------------------------
    async def check(
        self, step: str, *, alice_has: set[str], alice_not: set[str], full: bool = True, purged: bool = False, ids: set[str] | None = None
    ) -> None:
        try:
            lists = await self.learn_ids()
        except Exception as exc:
            self.fail(step, f"truth list raised {type(exc).__name__}: {exc}")
            return
        alice_text = "\n".join(lists[ALICE].values())
        for marker in sorted(alice_has):
            if marker not in alice_text:
                self.fail(step, f"alice's list lacks '{marker}' (lost)")
        for marker in sorted(alice_not):
            if marker in alice_text:
                self.fail(step, f"alice's list still shows '{marker}'")
        if SHARED_WORD not in alice_text:
            self.fail(step, "alice's list lacks the shared record")
        bob_text = "\n".join(lists[BOB].values())
        if ALICE_WORD in bob_text:
            self.fail(step, "LEAK: bob's list (driver) holds alice's content")
        if BOB_WORD not in bob_text or SHARED_WORD not in bob_text:
            self.fail(step, f"bob's list lacks his record or the shared one: {sorted(lists[BOB].values())}")
        if ALICE_WORD in "\n".join(lists["anon"].values()):
            self.fail(step, "LEAK: an anonymous caller's list holds alice's content")
        await self.check_surface(step, full=full, purged=purged, ids=ids)
        self.check_secrets(step)
        if purged:
            hits = found(self.blob(), [ALICE_WORD, *ALICE_MARKERS])
            if hits:
                self.fail(step, f"purge left alice's words on disk/in rows: {hits}")

    async def check_surface(self, step: str, *, full: bool, purged: bool, ids: set[str] | None) -> None:
        s = self.surface
        cheap = not isinstance(s, CliSurface)
        probe_ids = sorted(self.alice_ids if (full or cheap or ids is None) else ids & self.alice_ids)
        jobs: dict[str, Any] = {}
        if "search" in s.views:
            jobs["search"] = s.search(BOB, BOB_QUERY)
            if full or cheap:
                jobs["search-own"] = s.search(BOB, f"{BOB_WORD} {SHARED_WORD} trail")
        if "list" in s.views and s is not self.driver:  # the driver's lists were just checked
            jobs["list"] = s.list(BOB)
            if not purged:
                jobs["list-alice"] = s.list(ALICE)
        if "recall" in s.views and (cheap or step in ("write", "purge")):  # a CLI recall costs ~3 s: twice a cell
            jobs["recall"] = s.recall(BOB, f"where does alice park, and her {ALICE_WORD} trail?")
        if "inject" in s.views and (full or cheap):
            jobs["inject"] = s.inject(BOB)
        if "events" in s.views:
            jobs["events"] = s.events(BOB)
        for rid in probe_ids:
            if "get" in s.views:
                jobs[f"get {rid}"] = s.get(BOB, rid)
            if "history" in s.views and (full or cheap):
                jobs[f"history {rid}"] = s.history(BOB, rid)
        names = list(jobs)
        results = await gather_limited([jobs[n] for n in names], limit=4)
        for name, res in zip(names, results, strict=True):
            where = f"{s.name} {name}"
            if isinstance(res, NotOffered):
                continue
            if isinstance(res, BaseException):
                self.fail(step, f"{where} raised {type(res).__name__}: {str(res)[:300]}")
                continue
            text = json.dumps(res) if not isinstance(res, str) else res
            if name == "list-alice":
                if ALICE_WORD not in text and self.surface_name != "memory_tool":
                    self.fail(step, f"{where}: alice sees none of her records through the surface")
                continue
            if name == "search-own":
                if BOB_WORD not in text:
                    self.fail(step, f"{where}: bob cannot find his own record through the surface")
                continue
            leaked = ALICE_WORD in text or any(rid in text for rid in self.alice_ids)
            if name == "events":
                leaked = bool(set(res) & self.alice_ids)
            if leaked:
                self.fail(step, f"LEAK: {where} as bob shows alice's content or ids: {text[:200]}")
            if name.startswith("history") and res is not None:
                self.fail(step, f"LEAK: {where} as bob is not refused")

    def check_secrets(self, step: str) -> None:
        needles = secret_needles(self.sec)
        on_disk = found(self.blob(), needles)
        if on_disk:
            self.fail(step, f"SECRET on disk/in rows under the store: {on_disk}")
        shown = found("\n".join(self.outputs).encode(), needles)
        if shown:
            self.fail(step, f"SECRET in a {self.surface.name} output: {shown}")


async def gather_limited(coros: list[Any], limit: int) -> list[Any]:
    sem = asyncio.Semaphore(limit)

    async def one(c: Any) -> Any:
        async with sem:
            return await c

    return await asyncio.gather(*(one(c) for c in coros), return_exceptions=True)


async def lifecycle(cell: Cell) -> None:
    t, s = cell.t, cell.surface
    every = set(ALICE_MARKERS)
    # 1. write -----------------------------------------------------------------------------------------------------
    step = "write"
    if isinstance(s, ImportSurface):
        try:
            for problem in await s.write_all(t, cell.sec):
                cell.fail(step, problem)
        except Exception as exc:
            cell.fail(step, f"import raised {type(exc).__name__}: {str(exc)[:300]}")
    else:
        await cell.op(step, "write", ALICE, t["kestrel"], marker="kestrel", key="trail")
        await cell.op(step, "write", ALICE, t["heron"], marker="heron")
        await cell.op(step, "write", ALICE, t["ibis"], marker="ibis")
        await cell.op(step, "write", BOB, t["bob"], marker="bob", key="trail")
        await cell.op(step, "write", None, t["shared"], marker="shared", scope="project")
    await cell.check(step, alice_has={"kestrel", "heron", "ibis"}, alice_not=every - {"kestrel", "heron", "ibis"})
    # 2. replace (keyed) ---------------------------------------------------------------------------------------------
    step = "replace"
    await cell.op(step, "replace", ALICE, "trail", "kestrel", "falcon" if isinstance(s, ToolSurface) else t["falcon"], marker="falcon")
    await cell.check(
        step, alice_has={"falcon", "heron", "ibis"}, alice_not={"kestrel", "jackdaw"}, full=False, ids={cell.ids.get("kestrel", "")}
    )
    # 3. supersede ---------------------------------------------------------------------------------------------------
    step = "supersede"
    await cell.op(step, "supersede", ALICE, cell.ids.get("ibis", "?"), t["jackdaw"], marker="jackdaw")
    await cell.check(
        step, alice_has={"falcon", "heron", "jackdaw"}, alice_not={"kestrel", "ibis"}, full=False, ids={cell.ids.get("ibis", "")}
    )
    # 4. forget the replaced record, 5. undo: it comes back as it was (the replaced text) ----------------------------
    step = "forget"
    trail = cell.ids.get("falcon", "?")
    await cell.op(step, "forget", ALICE, trail, marker="falcon")
    await cell.check(step, alice_has={"heron", "jackdaw"}, alice_not={"kestrel", "falcon", "ibis"}, full=False, ids={trail})
    step = "undo"
    await cell.op(step, "undo", ALICE)
    await cell.check(step, alice_has={"falcon", "heron", "jackdaw"}, alice_not={"kestrel", "ibis"}, full=False, ids={trail})
    # 6. forget the superseding record, then restore it -------------------------------------------------------------
    step = "restore"
    jackdaw = cell.ids.get("jackdaw", "?")
    await cell.op(step, "forget", ALICE, jackdaw, marker="jackdaw")
    await cell.op(step, "restore", ALICE, jackdaw)
    await cell.check(step, alice_has={"falcon", "heron", "jackdaw"}, alice_not={"kestrel", "ibis"})
    # 7. consolidate -------------------------------------------------------------------------------------------------
    step = "consolidate"
    result = await cell.op("consolidate(raw)", "consolidate")
    if cell.backend == "postgres":
        cell.failures = [f for f in cell.failures if not f.startswith("[consolidate(raw)]")]
        kind = result.type if isinstance(result, CliError) else type(result).__name__
        text = str(result)
        if not isinstance(result, Exception) or not ("Unsupported" in kind or "NotSupported" in kind):
            cell.fail(step, f"PostgreSQL consolidate: expected the typed unsupported error, got {kind}: {text[:200]}")
    await cell.check(step, alice_has={"falcon", "heron", "jackdaw"}, alice_not={"kestrel", "ibis"}, full=False, ids=set())
    # 8. export, then import into a fresh root / database ------------------------------------------------------------
    step = "export/import"
    before = {u: sorted((await cell.driver.list(u)).values()) for u in (ALICE, BOB)}
    res = await cell.op(step, "export_import", cell.tmp / "export.jsonl", cell.copy_target)
    if not isinstance(res, Exception):
        await check_copy(cell, step, before)
    # 9. purge alice -------------------------------------------------------------------------------------------------
    step = "purge"
    await cell.op(step, "purge_user", ALICE)
    await cell.check(step, alice_has=set(), alice_not=every, purged=True)


async def check_copy(cell: Cell, step: str, before: dict[str, list[str]]) -> None:
    copy: Surface
    if isinstance(cell.driver, CliSurface):
        copy = CliSurface(cell.copy_target, cell.driver.cli.cwd, cell.outputs)
    else:
        copy = ApiSurface(cell.copy_target, cell.outputs, **cell.api_options)
    try:
        for user in (ALICE, BOB):
            after = sorted((await copy.list(user)).values())
            if after != before[user]:
                lost = sorted(set(before[user]) - set(after))
                extra = sorted(set(after) - set(before[user]))
                cell.fail(
                    step,
                    f"{user}: {len(before[user])} records before, {len(after)} in the copy; "
                    f"lost {[x[:60] for x in lost]}, new {[x[:60] for x in extra]}",
                )
        hits = await copy.search(BOB, BOB_QUERY)
        if any(ALICE_WORD in snippet for _, snippet in hits):
            cell.fail(step, "LEAK: bob finds alice's content in the imported copy")
        on_disk = found(cell.blob(cell.copy_target), secret_needles(cell.sec))
        if on_disk:
            cell.fail(step, f"SECRET on disk/in rows of the imported copy: {on_disk}")
    except Exception as exc:
        cell.fail(step, f"reading the copy raised {type(exc).__name__}: {str(exc)[:300]}")
    finally:
        await copy.close()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("surface", SURFACES)
async def test_matrix(surface: str, backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    pg_url = request.getfixturevalue("pg_server_url") if backend == "postgres" else None
    cell = Cell(surface, backend, tmp_path, pg_url)
    started = time.monotonic()
    try:
        async with asyncio.timeout(300):  # one task throughout: MCP client contexts are entered and left in it
            await cell.setup()
            await lifecycle(cell)
    finally:
        try:
            async with asyncio.timeout(30):
                await cell.close()
        except Exception as exc:
            cell.fail("close", f"{type(exc).__name__}: {exc}")
    offered = ", ".join(f"{k}={'surface' if v else 'driver'}" for k, v in sorted(cell.native.items()))
    print(f"\n{surface}×{backend}: {time.monotonic() - started:.1f}s; {offered}")
    assert not cell.failures, f"{surface} × {backend}: {len(cell.failures)} failure(s)\n" + "\n".join(cell.failures)
