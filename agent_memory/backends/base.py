"""The storage seam: one narrow, async protocol every backend implements, and the caller identity.

Tools and workers depend on :class:`MemoryBackend` and a :class:`Caller`, never on the provider.
:class:`FilesBackend` adapts the synchronous files-and-SQLite :class:`~agent_memory.backends.files.store.MemoryStore`
(each call runs in a worker thread, so the event loop never blocks on disk or locks).
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:  # annotations only: a PostgreSQL process never imports the files store
    from agent_memory.backends.files.store import MemoryStore
    from agent_memory.model.drafts import MemoryDraft, RememberResult
    from agent_memory.model.records import MemoryRecord
    from agent_memory.model.reports import DoctorReport, SweepReport
    from agent_memory.search.types import SearchResult

T = TypeVar("T")

__all__ = ["Caller", "MemoryBackend", "FilesBackend"]


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is asking: fixed by the application, never by a model's tool arguments."""

    session_id: str | None = None
    user_id: str | None = None

    def kwargs(self) -> dict[str, str | None]:
        return {"session_id": self.session_id, "user_id": self.user_id}


@runtime_checkable
class MemoryBackend(Protocol):
    """What a memory store must do. Visibility is applied inside every read, before any limit."""

    async def remember(self, draft: MemoryDraft, *, source: str = "tool") -> RememberResult: ...

    async def remember_many(
        self, drafts: Iterable[MemoryDraft], *, source: str = "import", on_error: Literal["raise", "skip"] = "raise",
        errors: builtins.list[tuple[int, str]] | None = None, progress: Callable[[int], None] | None = None,
    ) -> builtins.list[RememberResult]: ...

    async def supersede(self, old_id: str, draft: MemoryDraft, *, source: str = "tool") -> RememberResult: ...

    async def get(self, record_id: str, caller: Caller) -> MemoryRecord: ...

    async def list(self, caller: Caller, *, limit: int | None = 50, **filters: Any) -> builtins.list[MemoryRecord]: ...

    async def count(self, caller: Caller, **filters: Any) -> int: ...

    async def search(self, query: str, caller: Caller, *, limit: int = 10, **options: Any) -> SearchResult: ...

    async def forget(self, record_id: str, caller: Caller) -> bool: ...

    async def core_lines(self, caller: Caller, limit: int | None) -> builtins.list[str]: ...

    async def user_md(self) -> str: ...

    async def sweep(self) -> SweepReport: ...

    async def reindex(self) -> Any: ...

    async def doctor(self) -> DoctorReport: ...

    async def close(self) -> None: ...


class FilesBackend:
    """:class:`MemoryBackend` over Markdown record files and their SQLite index."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self._sessions: Any = None

    @property
    def sessions(self) -> Any:
        """The :class:`~agent_memory.sessions.SessionStore` of this root (session logs and summaries)."""
        if self._sessions is None:
            from agent_memory.sessions import SessionStore

            self._sessions = SessionStore(self.store.root, durable=self.store.durable)
        return self._sessions

    @property
    def root(self) -> Path:
        return self.store.root

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(partial(fn, *args, **kwargs))

    async def remember(self, draft: MemoryDraft, *, source: str = "tool") -> RememberResult:
        return (await self._run(self.store.remember_many, [draft], source=source))[0]

    async def remember_many(
        self, drafts: Iterable[MemoryDraft], *, source: str = "import", on_error: Literal["raise", "skip"] = "raise",
        errors: builtins.list[tuple[int, str]] | None = None, progress: Callable[[int], None] | None = None,
    ) -> builtins.list[RememberResult]:
        return await self._run(self.store.remember_many, list(drafts), source=source, on_error=on_error, errors=errors,
                               progress=progress)

    async def supersede(self, old_id: str, draft: MemoryDraft, *, source: str = "tool") -> RememberResult:
        return await self._run(self.store.supersede, old_id, draft, source=source)

    async def get(self, record_id: str, caller: Caller) -> MemoryRecord:
        return await self._run(self.store.get, record_id, **caller.kwargs())

    async def list(self, caller: Caller, *, limit: int | None = 50, **filters: Any) -> builtins.list[MemoryRecord]:
        return await self._run(self.store.list, limit=limit, **caller.kwargs(), **filters)

    async def count(self, caller: Caller, **filters: Any) -> int:
        return await self._run(self.store.count, **caller.kwargs(), **filters)

    async def search(self, query: str, caller: Caller, *, limit: int = 10, **options: Any) -> SearchResult:
        if options.get("mode") == "contextual":  # sessions by summary, then messages and records within them
            from agent_memory.sessions.contextual import contextual_search, embedder_of

            rest = {k: v for k, v in options.items() if k not in ("mode", "trace")}
            return await self._run(contextual_search, self.sessions, query, limit=limit, trace=bool(options.get("trace")),
                                   records=lambda n: self.store.search(query, limit=n, session_id=caller.session_id,
                                                                       user_id=caller.user_id, **rest),
                                   embedder=embedder_of(self), **caller.kwargs())
        return await self._run(self.store.search, query, limit=limit, **caller.kwargs(), **options)

    async def forget(self, record_id: str, caller: Caller) -> bool:
        return await self._run(self.store.forget, record_id, **caller.kwargs())

    async def core_lines(self, caller: Caller, limit: int | None) -> builtins.list[str]:
        def lines() -> builtins.list[str]:
            self.store.open()  # the index follows the files (hand edits included) before it is read
            return self.store.visible_lines(limit=limit, **caller.kwargs())

        return await self._run(lines)

    async def user_md(self) -> str:
        path = self.store.root / "USER.md"

        def read() -> str:
            if not path.is_file() or path.is_symlink():
                return ""
            return path.read_text(encoding="utf-8")

        return await self._run(read)

    async def forget_purge(self, record_id: str, caller: Caller) -> bool:
        return await self._run(self.store.forget, record_id, purge=True, **caller.kwargs())

    async def purge(self, record_id: str | None = None, *, session_id: str | None = None,
                    user_id: str | None = None) -> Any:
        return await self._run(self.store.purge, record_id, session_id=session_id, user_id=user_id)

    async def history(self, record_id: str, caller: Caller) -> Any:
        return await self._run(self.store.history, record_id, **caller.kwargs())

    async def restore(self, record_id: str, caller: Caller, *, version: int | None = None) -> MemoryRecord:
        return await self._run(self.store.restore, record_id, version=version, **caller.kwargs())

    async def undo(self, caller: Caller) -> Any:
        return await self._run(self.store.undo, **caller.kwargs())

    async def events(self, caller: Caller, *, record_id: str | None = None, limit: int | None = None) -> Any:
        return await self._run(self.store.events_for, record_id, limit=limit, **caller.kwargs())

    async def provenance(self, record_id: str, caller: Caller) -> dict[str, Any]:
        return await self._run(self.store.provenance, record_id, **caller.kwargs())

    async def sweep(self) -> SweepReport:
        return await self._run(self.store.sweep)

    async def reindex(self) -> Any:
        return await self._run(self.store.reindex)

    async def doctor(self) -> DoctorReport:
        return await self._run(self.store.doctor)

    async def close(self) -> None:
        self.store.close()
