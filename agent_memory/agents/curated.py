"""Curated ("hot") memory over any backend: list, add, replace and remove one caller's curated lines.

The rules of a line (one line, length, priority, order, bounds) are in :mod:`agent_memory.model.curated`; the
lines are ordinary records, so every write here is a ``remember``/``forget`` through the backend (the write gate
redacts and stamps them; the event log, history, undo and purge see them like any record). A caller changes only
its own lines: a ``user`` line of its user (``project`` lines when the caller allows shared ones), never another
user's — whose ids are simply "not found". Used by the provider, the ``memory_curate`` tool, the core block and
the MCP server.

The cap is atomic: :func:`add_line` counts the partition's lines and writes the new one while holding the
partition's lock (:class:`~agent_memory.backends.base.PartitionLockBackend`: a file lock on a files root, an advisory
lock on PostgreSQL), so concurrent writers — tasks, threads or processes — never leave more than
:data:`~agent_memory.model.curated.MAX_LINES` lines, and every line reported ``created`` is kept. A backend without
the capability is serialised within this process only.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import weakref
from collections.abc import AsyncIterator, Sequence

from agent_memory.backends.base import Caller, MemoryBackend, PartitionLockBackend, capability
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.model.curated import (
    DEFAULT_PRIORITY,
    KIND,
    MAX_LINES,
    PRIORITY_KEY,
    CuratedLimitError,
    CuratedLine,
    check_line,
    check_priority,
    check_scope,
    curated_order,
    new_key,
    priority_of,
)
from agent_memory.model.drafts import MemoryDraft, RememberResult
from agent_memory.model.records import MemoryRecord, Scope
from agent_memory.model.supersession import CAPTURE_SOURCES
from agent_memory.redaction.api import redact

__all__ = ["MAX_CANDIDATES", "add_line", "curated_lines", "curated_records", "own_line", "partition_key", "remove_line", "replace_line"]

MAX_CANDIDATES = 500  # curated records read for one block (two partitions of MAX_LINES, and hand-written extras)
OWN: tuple[Scope, ...] = (Scope.USER,)
OWN_AND_SHARED: tuple[Scope, ...] = (Scope.USER, Scope.PROJECT)


async def curated_records(backend: MemoryBackend, caller: Caller, *, limit: int = MAX_CANDIDATES) -> builtins.list[MemoryRecord]:
    """The current curated records ``caller`` may see (its user's and the shared ones), in block order."""
    return curated_order(await backend.list(caller, kind=KIND, limit=limit))


async def curated_lines(backend: MemoryBackend, caller: Caller, *, scope: Scope | str | None = None) -> builtins.list[CuratedLine]:
    """:func:`curated_records` as :class:`~agent_memory.model.curated.CuratedLine` (only ``scope``'s when given)."""
    wanted = None if scope is None else check_scope(scope)
    return [CuratedLine.of(r) for r in await curated_records(backend, caller) if wanted is None or r.scope is wanted]


def _needs_user(scope: Scope, caller: Caller) -> None:
    if scope is Scope.USER and not caller.user_id:
        raise InvalidInputError("a user's curated line needs a user_id (give --user / user_id=; shared lines: scope='project')")


def _mine(rec: MemoryRecord, caller: Caller, scopes: Sequence[Scope]) -> bool:
    if rec.kind != KIND or rec.scope not in scopes or rec.superseded_by:
        return False
    if rec.namespace != (caller.namespace or ""):  # an ancestor's line is read, never changed, from a namespace below it
        return False
    return rec.scope is not Scope.USER or (caller.user_id is not None and rec.user_id == caller.user_id)


def partition_key(caller: Caller, scope: Scope) -> str:
    """The partition a new line of ``scope`` counts against: the caller's namespace, the scope and (``user``) its user."""
    return json.dumps(["curated", caller.namespace or "", scope.value, (caller.user_id or "") if scope is Scope.USER else ""])


_LOCAL: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]]" = weakref.WeakKeyDictionary()


@contextlib.asynccontextmanager
async def _partition(backend: MemoryBackend, key: str) -> AsyncIterator[None]:
    """Hold partition ``key``: the backend's own lock (every process), else a lock of this process's event loop."""
    locking = capability(backend, PartitionLockBackend)
    if locking is not None:
        async with locking.partition_lock(key):
            yield
        return
    locks = _LOCAL.setdefault(asyncio.get_running_loop(), {})
    async with locks.setdefault(key, asyncio.Lock()):
        yield


async def own_line(backend: MemoryBackend, caller: Caller, record_id: str, scopes: Sequence[Scope], source: str) -> MemoryRecord:
    """The caller's own curated line ``record_id``; anything else (another user's, not curated) is "not found"."""
    try:
        rec = await backend.get(record_id, caller)
    except NotFoundError:
        rec = None
    if rec is None or not _mine(rec, caller, scopes):
        raise NotFoundError(f"no curated line {record_id!r} of this caller (see curate --list)")
    if source in CAPTURE_SOURCES and rec.source not in CAPTURE_SOURCES:
        raise InvalidInputError(f"curated line {record_id!r} was written by a person or a tool; capture changes only the lines it wrote")
    return rec


async def add_line(
    backend: MemoryBackend,
    caller: Caller,
    text: str,
    *,
    priority: int | None = None,
    scope: Scope | str = Scope.USER,
    source: str = "tool",
) -> RememberResult:
    """Add one curated line for ``caller`` (``user``: its user's; ``project``: shared).

    The same text again is the same line (``duplicate``; a new ``priority`` given with it replaces the line's).
    A full partition (:data:`~agent_memory.model.curated.MAX_LINES`) is a
    :class:`~agent_memory.model.curated.CuratedLimitError`."""
    line = check_line(text)
    prio = DEFAULT_PRIORITY if priority is None else check_priority(priority)
    where = check_scope(scope)
    _needs_user(where, caller)
    stored_text = redact(line).text
    async with _partition(backend, partition_key(caller, where)):  # count and write as one step (the cap is atomic)
        existing = [r for r in await backend.list(caller, kind=KIND, scope=where.value, limit=MAX_CANDIDATES) if _mine(r, caller, (where,))]
        for rec in existing:
            if rec.content.strip() == stored_text:
                if priority is not None and priority_of(rec.metadata) != prio:
                    return await replace_line(backend, caller, rec.id, priority=prio, source=source, scopes=(where,))
                return RememberResult(rec.id, "duplicate", rec.path or "", 0)
        if len(existing) >= MAX_LINES:
            raise CuratedLimitError(
                f"{where.value} curated memory already holds {len(existing)} lines (at most {MAX_LINES}); remove or replace one first"
            )
        return await backend.remember(_new_line(caller, line, where, prio), source=source)


def _new_line(caller: Caller, line: str, where: Scope, prio: int) -> MemoryDraft:
    return MemoryDraft(
        line,
        kind=KIND,
        scope=where.value,
        session_id=caller.session_id,
        user_id=caller.user_id,
        namespace=caller.namespace,
        memory_key=new_key(),
        on_existing="skip",
        metadata={PRIORITY_KEY: prio},
    )


async def replace_line(
    backend: MemoryBackend,
    caller: Caller,
    record_id: str,
    text: str | None = None,
    *,
    priority: int | None = None,
    source: str = "tool",
    scopes: Sequence[Scope] = OWN_AND_SHARED,
) -> RememberResult:
    """Replace the text and/or priority of one of the caller's curated lines (the id stays; the old text is a
    version in its history, so ``undo``/``restore`` bring it back)."""
    if text is None and priority is None:
        raise InvalidInputError("replace a curated line with a new text, a new priority, or both")
    line = None if text is None else check_line(text)
    prio = None if priority is None else check_priority(priority)
    rec = await own_line(backend, caller, record_id, scopes, source)
    draft = MemoryDraft(
        line if line is not None else rec.content,
        kind=KIND,
        scope=rec.scope.value,
        session_id=caller.session_id,
        user_id=rec.user_id if rec.scope is Scope.USER else caller.user_id,
        namespace=caller.namespace,
        memory_key=rec.id,
        on_existing="replace",
        metadata={PRIORITY_KEY: prio if prio is not None else priority_of(rec.metadata)},
    )
    return await backend.remember(draft, source=source)


async def remove_line(
    backend: MemoryBackend, caller: Caller, record_id: str, *, source: str = "tool", scopes: Sequence[Scope] = OWN_AND_SHARED
) -> bool:
    """Remove one of the caller's curated lines (archived: ``undo``/``restore`` bring it back)."""
    rec = await own_line(backend, caller, record_id, scopes, source)
    return await backend.forget(rec.id, caller)
