"""Extension hooks without subclassing: observe writes, filter or annotate reads, react to a session's end.

:class:`ExtendedBackend` wraps any :class:`~agent_memory.backends.base.MemoryBackend`; the provider composes it as soon
as a hook is registered (``MemoryProvider(..., hooks=Hooks(...))`` or ``provider.on("on_memory_written", fn)``),
so every write and read that tools, workers and the provider make passes through it.

- ``on_memory_written(event: Written)`` after each ``remember``/``remember_many``/``forget`` (and each archive of a
  consolidation run) that stored or removed something (observe only).
- ``on_memory_retrieved(event: Retrieved)`` before search hits, listed records, a fetched record or the core
  block's records reach a worker or the main model: return ``None`` to keep ``event.items`` unchanged, or a list to use instead (filtered,
  reordered, annotated). A ``get`` whose record a hook drops is :class:`~agent_memory.errors.NotFoundError`.
- ``on_session_end(event: SessionEnded)`` when the application calls ``provider.end_session(...)``.

A hook may be sync or async. An error in a hook is logged (logger ``agent_memory``) and ignored: it never breaks
a write, a read or a turn (a failing ``on_memory_retrieved`` leaves the items as they were).
"""

from __future__ import annotations

import asyncio
import builtins
import inspect
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from agent_memory.backends.base import Caller, MemoryBackend
from agent_memory.errors import AgentMemoryError
from agent_memory.model.drafts import MemoryDraft, RememberResult
from agent_memory.model.records import MemoryRecord
from agent_memory.model.reports import DoctorReport, SweepReport
from agent_memory.model.wording import record_not_found
from agent_memory.search.types import SearchHit, SearchResult

__all__ = ["ExtendedBackend", "Hooks", "Retrieved", "SessionEnded", "Written", "HOOK_NAMES"]

log = logging.getLogger("agent_memory")
HOOK_NAMES = ("on_memory_written", "on_memory_retrieved", "on_session_end")
CORE_CHECKED = 2000  # core lines checked by retrieval hooks (far more than any core budget holds)
_CORE_ID = re.compile(r"- \[([^\]\s]+)\] ")


@dataclass(frozen=True)
class Written:
    """One write that changed memory: ``operation`` is ``remember``, ``forget`` or ``archive`` (consolidation)."""

    operation: Literal["remember", "forget", "archive"]
    record_id: str
    status: str
    source: str | None = None
    draft: MemoryDraft | None = None
    caller: Caller | None = None


@dataclass(frozen=True)
class Retrieved:
    """Results on their way to a worker or the main model (``items`` are hits for search, records otherwise)."""

    operation: Literal["search", "get", "list", "core"]
    caller: Caller
    items: list[Any]
    query: str | None = None


@dataclass(frozen=True)
class SessionEnded:
    session_id: str | None
    user_id: str | None = None
    info: dict[str, Any] = field(default_factory=dict)


Hook = Callable[[Any], Any]


class Hooks:
    """A registry of hook functions by name (several per name, called in registration order)."""

    def __init__(self, **hooks: Hook | Iterable[Hook]) -> None:
        self._hooks: dict[str, list[Hook]] = {name: [] for name in HOOK_NAMES}
        for name, value in hooks.items():
            for fn in [value] if callable(value) else list(value):
                self.add(name, fn)

    def add(self, name: str, fn: Hook) -> Hook:
        if name not in self._hooks:
            raise ValueError(f"unknown hook {name!r}; use one of {', '.join(HOOK_NAMES)}")
        if not callable(fn):
            raise TypeError(f"hook {name} must be callable, not {type(fn).__name__}")
        self._hooks[name].append(fn)
        return fn

    def __bool__(self) -> bool:
        return any(self._hooks.values())

    def get(self, name: str) -> builtins.list[Hook]:
        return list(self._hooks.get(name, ()))

    async def fire(self, name: str, event: Any) -> None:
        """Call every ``name`` hook with ``event``; errors are logged, never raised."""
        for fn in self.get(name):
            await _call(name, fn, event)

    async def filter(self, event: Retrieved) -> builtins.list[Any]:
        """Run ``on_memory_retrieved`` hooks in turn; each sees the previous one's items."""
        items = event.items
        for fn in self.get("on_memory_retrieved"):
            ok, out = await _call("on_memory_retrieved", fn, Retrieved(event.operation, event.caller, items, event.query))
            if not ok or out is None:
                continue
            if isinstance(out, (str, bytes)) or not isinstance(out, Iterable):
                log.warning("hook on_memory_retrieved %r returned %s, not a list; ignored", fn, type(out).__name__)
                continue
            items = list(out)
        return items


async def _call(name: str, fn: Hook, event: Any) -> tuple[bool, Any]:
    try:
        out = fn(event)
        if inspect.isawaitable(out):
            out = await out
        return True, out
    except asyncio.CancelledError:
        raise
    except Exception:  # a hook never breaks a write, a read or a turn
        log.warning("hook %s %r failed; ignored", name, fn, exc_info=True)
        return False, None


class ExtendedBackend:
    """A :class:`MemoryBackend` that runs :class:`Hooks` around another backend's writes and reads."""

    def __init__(self, backend: MemoryBackend, hooks: Hooks | None = None) -> None:
        self.inner = backend
        self.hooks = hooks if hooks is not None else Hooks()

    def __getattr__(self, name: str) -> Any:  # root, store, url, ... of the wrapped backend
        if name in ("inner", "hooks"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    async def remember(self, draft: MemoryDraft, *, source: str = "tool") -> RememberResult:
        result = await self.inner.remember(draft, source=source)
        await self._written(draft, result, source)
        return result

    async def remember_many(
        self,
        drafts: Iterable[MemoryDraft],
        *,
        source: str = "import",
        on_error: Literal["raise", "skip"] = "raise",
        errors: builtins.list[tuple[int, str]] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> builtins.list[RememberResult]:
        batch = list(drafts)
        results = await self.inner.remember_many(batch, source=source, on_error=on_error, errors=errors, progress=progress)
        by_position = batch if len(batch) == len(results) else [None] * len(results)  # skipped drafts shift positions
        for draft, result in zip(by_position, results, strict=True):
            await self._written(draft, result, source)
        return results

    async def _written(self, draft: MemoryDraft | None, result: RememberResult, source: str) -> None:
        if result.status in ("duplicate", "skipped") or not self.hooks.get("on_memory_written"):
            return
        caller = Caller(draft.session_id, draft.user_id, draft.namespace or None) if draft is not None else None
        await self.hooks.fire("on_memory_written", Written("remember", result.id, result.status, source, draft, caller))

    async def forget(self, record_id: str, caller: Caller) -> bool:
        done = await self.inner.forget(record_id, caller)
        if done:
            await self.hooks.fire("on_memory_written", Written("forget", record_id, "forgotten", caller=caller))
        return done

    async def get(self, record_id: str, caller: Caller) -> MemoryRecord:
        rec = await self.inner.get(record_id, caller)
        if not self.hooks.get("on_memory_retrieved"):
            return rec
        items = await self.hooks.filter(Retrieved("get", caller, [rec]))
        kept = [r for r in items if isinstance(r, MemoryRecord)]
        if not kept:
            raise record_not_found(record_id)
        return kept[0]

    async def list(self, caller: Caller, *, limit: int | None = 50, **filters: Any) -> builtins.list[MemoryRecord]:
        recs = await self.inner.list(caller, limit=limit, **filters)
        if not self.hooks.get("on_memory_retrieved"):
            return recs
        return [r for r in await self.hooks.filter(Retrieved("list", caller, recs)) if isinstance(r, MemoryRecord)]

    async def count(self, caller: Caller, **filters: Any) -> int:
        return await self.inner.count(caller, **filters)

    async def search(self, query: str, caller: Caller, *, limit: int = 10, **options: Any) -> SearchResult:
        result = await self.inner.search(query, caller, limit=limit, **options)
        if not self.hooks.get("on_memory_retrieved"):
            return result
        hits = [h for h in await self.hooks.filter(Retrieved("search", caller, list(result.hits), query)) if isinstance(h, SearchHit)]
        return SearchResult(hits, result.trace)

    async def core_lines(self, caller: Caller, limit: int | None) -> builtins.list[str]:
        """The core block's lines; with ``on_memory_retrieved`` hooks, only lines whose record the hooks keep
        (operation ``core``; the first :data:`CORE_CHECKED` lines are checked, the rest dropped)."""
        lines = await self.inner.core_lines(caller, limit)
        if not self.hooks.get("on_memory_retrieved") or not lines:
            return lines
        lines = lines[:CORE_CHECKED]
        ids = [m.group(1) if (m := _CORE_ID.match(line)) else None for line in lines]
        recs: builtins.list[MemoryRecord] = []
        for rid in dict.fromkeys(i for i in ids if i):
            try:
                recs.append(await self.inner.get(rid, caller))
            except AgentMemoryError:
                continue  # gone since the lines were read
        kept = {r.id for r in await self.hooks.filter(Retrieved("core", caller, recs)) if isinstance(r, MemoryRecord)}
        return [line for line, rid in zip(lines, ids, strict=True) if rid in kept]

    async def user_md(self) -> str:
        return await self.inner.user_md()

    async def sweep(self) -> SweepReport:
        return await self.inner.sweep()

    async def reindex(self) -> Any:
        return await self.inner.reindex()

    async def doctor(self) -> DoctorReport:
        return await self.inner.doctor()

    async def close(self) -> None:
        await self.inner.close()

    async def end_session(self, session_id: str | None, user_id: str | None = None, **info: Any) -> None:
        await self.hooks.fire("on_session_end", SessionEnded(session_id, user_id, dict(info)))
