"""Claude's memory tool (``memory_20250818``) over the store: ``/memories`` files are memory records.

:class:`MemoryToolHandler` executes one tool-use input (``view``, ``create``, ``str_replace``,
``insert``, ``delete``, ``rename``) and returns the text the reference implementation would return.
Each file is one record (tag ``memory-tool``, its path in ``metadata["memory_path"]``) in the scope
the application chooses for this handler; writes go through the store's redaction and dedupe.
With the ``anthropic`` SDK installed, :meth:`MemoryToolHandler.as_sdk_tool` gives a tool for its
tool runner. Errors are returned as text by :meth:`handle` (and raised by :meth:`execute`).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import unicodedata
import uuid
from collections.abc import Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

from agent_memory.agents.tools import as_backend, caller_scope
from agent_memory.backends.base import Caller, MemoryBackend
from agent_memory.errors import AgentMemoryError, InvalidInputError
from agent_memory.integrations._memory_tool_paths import ROOT, MemoryToolError, listing, numbered, occurrence_lines, stored_path
from agent_memory.model.drafts import MemoryDraft
from agent_memory.model.events import acting
from agent_memory.model.records import MemoryRecord

__all__ = ["MemoryToolHandler", "MemoryToolError", "TAG"]

TAG = "memory-tool"
KIND = "memory_file"
PATH_KEY = "memory_path"
COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")
MAX_FILES = 10_000


def _key(path: str) -> str:
    return "memtool." + hashlib.sha256(path.encode("utf-8")).hexdigest()[:40]


def _run_sync(coro: Coroutine[Any, Any, str]) -> str:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1) as pool:  # never block (or re-enter) the caller's running loop
        return pool.submit(asyncio.run, coro).result()


def _path(command: Mapping[str, Any], name: str = "path") -> str:
    """The checked path ``command[name]`` under the name it is stored as (secrets in its segments redacted)."""
    return stored_path(command.get(name), name=name)


@functools.lru_cache(maxsize=16_384)
def _file_path(path: str) -> str | None:
    """The path a record's ``memory_path`` is listed and found under, or None when it is no legal stored path.

    A file kept before paths were NFKC-normalised (``café`` decomposed, ``ﬁle``) is found under its normalised name,
    beside any file already there (the newest is the file; ``delete``/``rename`` take both)."""
    try:
        stored = _path({"path": path})
    except MemoryToolError:
        return None
    return stored if stored == unicodedata.normalize("NFKC", path) else None


def _is_stored_path(path: str) -> bool:
    return _file_path(path) == path


def _need(command: Mapping[str, Any], name: str, kind: type) -> Any:
    value = command.get(name)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
        raise MemoryToolError(f"Missing or invalid `{name}` parameter for the {command.get('command')} command")
    return value


class MemoryToolHandler:
    """Execute ``memory_20250818`` commands against a provider's (or backend's) store.

    ``user_id``/``session_id`` name the owner of this ``/memories`` tree; ``scope`` is its scope
    (default: ``user`` with a user, else ``session`` with a session, else ``project``). ``namespace``/``isolation``
    (default: the provider's) put the tree in a namespace: its files are written there, and it reads what the
    isolation allows.
    """

    def __init__(
        self,
        provider: Any,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        scope: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
    ) -> None:
        self.backend: MemoryBackend = as_backend(provider)
        ns = namespace if namespace is not None else getattr(provider, "namespace", None)  # a provider's, unless given
        iso = isolation if isolation is not None else getattr(provider, "isolation", None)
        self.caller = Caller(session_id=session_id, user_id=user_id, namespace=ns, isolation=cast(Any, iso))
        self.scope = scope or caller_scope(self.caller) or "project"

    # -- entry points ----------------------------------------------------------------------
    async def ahandle(self, command: Mapping[str, Any]) -> str:
        """Run one tool-use input; a refused command comes back as its error text (never raises for bad input)."""
        try:
            return await self.execute(command)
        except MemoryToolError as exc:
            return f"Error: {exc}"
        except AgentMemoryError as exc:
            return f"Error: {type(exc).__name__}: {exc}"

    def handle(self, command: Mapping[str, Any]) -> str:
        """Synchronous :meth:`ahandle` (safe to call from inside a running event loop: runs in a worker thread)."""
        return _run_sync(self.ahandle(command))

    def execute_sync(self, command: Mapping[str, Any]) -> str:
        """Synchronous :meth:`execute` (raises when refused)."""
        return _run_sync(self.execute(command))

    async def execute(self, command: Mapping[str, Any]) -> str:
        """Run one tool-use input; raises :class:`MemoryToolError` (or another typed error) when refused."""
        if not isinstance(command, Mapping):
            raise MemoryToolError("A memory tool input must be an object with a `command` field")
        name = command.get("command")
        if name not in COMMANDS:
            raise MemoryToolError(f"Unknown command {name!r}; expected one of {', '.join(COMMANDS)}")
        result: str = await getattr(self, f"_{name}")(command)
        return result

    def as_sdk_tool(self) -> Any:
        """A ``BetaAbstractMemoryTool`` for ``client.beta.messages.tool_runner(...)`` (needs ``anthropic``)."""
        from agent_memory.integrations._memory_tool_sdk import sync_tool

        return sync_tool(self)

    def as_async_sdk_tool(self) -> Any:
        """A ``BetaAsyncAbstractMemoryTool`` for the async tool runner (needs ``anthropic``)."""
        from agent_memory.integrations._memory_tool_sdk import async_tool

        return async_tool(self)

    # -- storage ---------------------------------------------------------------------------
    async def _records(self) -> dict[str, list[MemoryRecord]]:
        """Every live file record by path: the caller's own namespace first, then newest first (a restored old file can
        share a path with a new one; an inherited ancestor's file can share it too)."""
        recs = await self.backend.list(self.caller, tags=(TAG,), scope=self.scope, limit=MAX_FILES)
        out: dict[str, list[MemoryRecord]] = {}
        for rec in sorted(sorted(recs, key=lambda r: r.id), key=lambda r: r.updated, reverse=True):
            kept = rec.metadata.get(PATH_KEY) if isinstance(rec.metadata, Mapping) else None
            path = _file_path(kept) if rec.kind == KIND and isinstance(kept, str) else None
            if path is not None:
                out.setdefault(path, []).append(rec)
        own = self.caller.namespace or ""  # at one path the caller's own file wins over an ancestor's (read-only) one
        return {path: sorted(recs, key=lambda r: r.namespace != own) for path, recs in out.items()}

    async def _files(self) -> dict[str, MemoryRecord]:
        """The file at each path: its newest record, the one a keyed write (``str_replace``, ``insert``) changes."""
        return {path: recs[0] for path, recs in (await self._records()).items()}

    async def _write(self, path: str, content: str, *, new: bool) -> None:
        if not content.strip():
            raise MemoryToolError(f"Memory files cannot be empty; delete {path} instead")
        draft = MemoryDraft(
            content,
            title=path.rsplit("/", 1)[-1],
            kind=KIND,
            scope=self.scope,
            tags=(TAG,),
            memory_key=_key(path),
            on_existing="skip" if new else "replace",
            session_id=self.caller.session_id,
            user_id=self.caller.user_id,
            namespace=self.caller.namespace,
            metadata={PATH_KEY: path},
        )
        try:
            res = await self.backend.remember(draft, source="tool")
        except InvalidInputError as exc:
            raise MemoryToolError(f"Could not write {path}: {exc}") from None
        if new and res.status == "duplicate":  # a backend that dedupes memory files by text (ours do not)
            raise MemoryToolError(f"File {path} was not created: the backend holds its text as record {res.id}")
        if new and res.status == "skipped":
            raise MemoryToolError(f"File {path} already exists")

    async def _file(self, files: dict[str, MemoryRecord], path: str) -> MemoryRecord:
        rec = files.get(path)
        if rec is None:
            if any(p.startswith(path + "/") for p in files) or path == ROOT:
                raise MemoryToolError(f"The path {path} is not a file.")
            raise MemoryToolError(f"The path {path} does not exist. Please provide a valid path.")
        return rec

    # -- commands --------------------------------------------------------------------------
    async def _view(self, c: Mapping[str, Any]) -> str:
        path = _path(c)
        files = await self._files()
        if path in files:
            lines = files[path].content.split("\n")
            first = 1
            rng = c.get("view_range")
            if rng is not None:
                if (
                    not isinstance(rng, (list, tuple))
                    or len(rng) != 2
                    or not all(isinstance(v, int) and not isinstance(v, bool) for v in rng)
                ):
                    raise MemoryToolError("Invalid `view_range`: expected [start_line, end_line] (end -1 for the end)")
                first = max(1, rng[0])
                end = len(lines) if rng[1] == -1 else rng[1]
                lines = lines[first - 1 : end]
            return f"Here's the content of {path} with line numbers:\n{numbered(lines, first)}"
        sizes = {p: len(r.content.encode("utf-8")) for p, r in files.items()}
        if path != ROOT and not any(p.startswith(path + "/") for p in files):
            raise MemoryToolError(f"The path {path} does not exist. Please provide a valid path.")
        return listing(path, sizes)

    async def _create(self, c: Mapping[str, Any]) -> str:
        path = _path(c)
        text = _need(c, "file_text", str)
        files = await self._files()
        if path == ROOT or any(p.startswith(path + "/") for p in files):
            raise MemoryToolError(f"The path {path} is a directory")
        if any(path.startswith(p + "/") for p in files):
            raise MemoryToolError(f"A parent of {path} is a file")
        if path in files:
            self._refuse_inherited(path, [files[path]], "create", exists=True)
            raise MemoryToolError(f"File {path} already exists")
        await self._write(path, text, new=True)
        return f"File created successfully at: {path}"

    async def _str_replace(self, c: Mapping[str, Any]) -> str:
        path = _path(c)
        old, new = _need(c, "old_str", str), c.get("new_str", "")
        if not isinstance(new, str):
            raise MemoryToolError("Missing or invalid `new_str` parameter for the str_replace command")
        rec = await self._file(await self._files(), path)
        self._refuse_inherited(path, [rec], "edit")
        content = rec.content
        where = occurrence_lines(content, old) if old else []
        if not where:
            raise MemoryToolError(f"No replacement was performed, old_str `{old}` did not appear verbatim in {path}.")
        if len(where) > 1:
            raise MemoryToolError(
                f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines: "
                f"{', '.join(map(str, where))}. Please ensure it is unique"
            )
        updated = content.replace(old, new, 1)
        await self._write(path, updated, new=False)
        lines = updated.split("\n")
        lo, hi = max(0, where[0] - 3), min(len(lines), where[0] + 2)
        return "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n" + numbered(
            lines[lo:hi], lo + 1
        )

    async def _insert(self, c: Mapping[str, Any]) -> str:
        path = _path(c)
        at, text = _need(c, "insert_line", int), _need(c, "insert_text", str)
        rec = await self._file(await self._files(), path)
        self._refuse_inherited(path, [rec], "edit")
        lines = rec.content.split("\n")
        if lines[-1] == "":
            lines.pop()
        if not 0 <= at <= len(lines):
            raise MemoryToolError(f"Invalid `insert_line` parameter: {at}. It should be within the range [0, {len(lines)}].")
        lines.insert(at, text.rstrip("\n"))
        await self._write(path, "\n".join(lines) + "\n", new=False)
        return f"The file {path} has been edited."

    def _refuse_inherited(self, path: str, recs: list[MemoryRecord], verb: str, *, exists: bool = False) -> None:
        """A file this caller sees from another namespace (an ancestor's, or a shared sibling's) is read-only here, for
        every command that changes files: changing it would change nothing of the other namespace's file and yet
        report success, or quietly copy its text into this namespace while ``view`` still showed the original."""
        own = self.caller.namespace or ""
        inherited = sorted({r.namespace or "" for r in recs if (r.namespace or "") != own})
        if inherited:
            where = ", ".join(repr(ns) if ns else "the root namespace" for ns in inherited)
            if exists:
                raise MemoryToolError(f"File {path} already exists: it is shared from {where} and read-only in this namespace")
            raise MemoryToolError(f"Cannot {verb} {path}: it is shared from {where} and read-only in this namespace")

    async def _delete(self, c: Mapping[str, Any]) -> str:
        path = _path(c)
        if path == ROOT:
            raise MemoryToolError(f"Cannot delete the {ROOT} directory itself")
        files = await self._records()
        doomed = [r for p, recs in files.items() if p == path or p.startswith(path + "/") for r in recs]
        if not doomed:
            raise MemoryToolError(f"The path {path} does not exist")
        own = self.caller.namespace or ""
        mine = [r for r in doomed if (r.namespace or "") == own]
        if not mine:  # only an ancestor's files here: read-only in this namespace
            self._refuse_inherited(path, doomed, "delete")
        with acting(step=uuid.uuid4().hex[:16]):  # a directory's files go in one step: one undo brings them all back
            for rec in mine:
                await self.backend.forget(rec.id, self.caller)
        if len(mine) < len(doomed):
            return f"Deleted this namespace's files at {path}; the shared files of an ancestor namespace stay (read-only here)"
        return f"Successfully deleted {path}"

    async def _rename(self, c: Mapping[str, Any]) -> str:
        old = _path(c, "old_path")
        new = _path(c, "new_path")
        if old == ROOT:
            raise MemoryToolError(f"Cannot rename the {ROOT} directory itself")
        files = await self._files()
        if new == ROOT or new in files or any(p.startswith(new + "/") for p in files):
            raise MemoryToolError(f"The destination {new} already exists")
        moving = {p: r for p, r in files.items() if p == old or p.startswith(old + "/")}
        if not moving:
            raise MemoryToolError(f"The path {old} does not exist")
        if new.startswith(old + "/"):
            raise MemoryToolError(f"Cannot move {old} into itself")
        records = await self._records()  # every file at a moved path: a shared one cannot move (nor stay behind)
        self._refuse_inherited(old, [r for p in moving for r in records[p]], "rename")
        if any(new.startswith(p + "/") for p in files):
            raise MemoryToolError(f"A parent of {new} is a file")
        targets = {path: new + path[len(old) :] for path in moving}
        for target in targets.values():  # a file moved below a long name must still have a legal path
            if not _is_stored_path(target):
                raise MemoryToolError(f"Cannot rename {old} to {new}: {target[:80]}… would not be a valid path")
        with acting(step=uuid.uuid4().hex[:16]):  # the copies and the forgets are one step: one undo reverses the rename
            await self._move(moving, targets)
        return f"Successfully renamed {old} to {new}"

    async def _move(self, moving: Mapping[str, MemoryRecord], targets: Mapping[str, str]) -> None:
        written: list[str] = []
        try:  # every copy first, then the originals go: a refused write loses nothing
            for path, rec in moving.items():
                target = targets[path]
                await self._write(target, rec.content, new=True)
                written.append(target)
        except AgentMemoryError:
            copies = await self._files()
            for target in written:
                if target in copies:
                    await self.backend.forget(copies[target].id, self.caller)
            raise
        shadowed = await self._records()  # the moved files, and older records restored at their paths
        for path in moving:
            for rec in shadowed.get(path, ()):
                await self.backend.forget(rec.id, self.caller)
