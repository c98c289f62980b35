"""The files backend: :class:`MemoryBackend` over Markdown record files and their SQLite index.

It adapts the synchronous :class:`~agent_memory.backends.files.store.MemoryStore` (the engine the CLI also uses) to
the async protocol of :mod:`agent_memory.backends.base`, running each call in a worker thread, and offers every
optional capability there (lifecycle, sessions, episodes, vectors).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from contextlib import AbstractAsyncContextManager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from agent_memory.backends.base import Caller, RecordedEmbedder
from agent_memory.backends.files.namespaces import caller_view, configure, read_registry
from agent_memory.errors import InvalidInputError
from agent_memory.model import scopes

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.files.store import MemoryStore
    from agent_memory.embeddings import Embedder
    from agent_memory.episodes import EpisodeStore
    from agent_memory.model.drafts import MemoryDraft, RememberResult
    from agent_memory.model.events import Event
    from agent_memory.model.links import RecordLinks
    from agent_memory.model.records import MemoryRecord
    from agent_memory.model.reports import BackfillReport, DoctorReport, History, PurgeReport, SweepReport, SyncReport
    from agent_memory.search.types import SearchResult
    from agent_memory.sessions import SessionStore

__all__ = ["FilesBackend"]

T = TypeVar("T")


class FilesBackend:
    """:class:`MemoryBackend` over Markdown record files and their SQLite index."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self._sessions: SessionStore | None = None
        self._episodes: EpisodeStore | None = None

    @property
    def sessions(self) -> SessionStore:
        """The :class:`~agent_memory.sessions.SessionStore` of this root (session logs and summaries)."""
        if self._sessions is None:
            from agent_memory.sessions import SessionStore

            self._sessions = SessionStore(self.store.root, durable=self.store.durable)
        return self._sessions

    @property
    def episodes(self) -> EpisodeStore:
        """The :class:`~agent_memory.episodes.EpisodeStore` of this root (``episodes/<yyyy-mm>/<id>.md``)."""
        if self._episodes is None:
            from agent_memory.episodes import EpisodeStore

            self._episodes = EpisodeStore(self.store.root, on_change=self._episode_event)
        return self._episodes

    def _episode_event(self, kind: str, episode: Any, session_id: str | None, user_id: str | None) -> None:
        """An episode deleted or restored, in the root's event log (visible like the episode)."""
        owner = {
            "id": episode.id,
            "scope": episode.scope.value,
            "session_id": episode.session_id,
            "user_id": episode.user_id,
            "namespace": getattr(episode, "namespace", "") or None,  # visible, and purged by namespace, as the episode
        }
        with self.store.lock.hold():
            self.store.event(kind, owner, caller=(session_id, user_id))

    @property
    def root(self) -> Path:
        return self.store.root

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        import asyncio  # here: a cold CLI search never imports asyncio (tests/test_store_imports.py)

        return await asyncio.to_thread(partial(fn, *args, **kwargs))

    async def _as(self, caller: Caller, fn: Callable[..., T], *args: Any, change: bool = False, **kwargs: Any) -> T:
        """``fn`` in a worker thread, reading as ``caller``: its namespace view (from the root's registry) is bound
        for the call (:func:`agent_memory.model.scopes.viewing`), so every visibility test of the call uses it.
        ``change``: a call that changes what it finds (forget, restore, undo) sees the caller's own namespace only."""

        def call() -> T:
            with scopes.viewing(caller.own_view() if change else self.view(caller)):
                return fn(*args, **kwargs)

        return await self._run(call)

    def view(self, caller: Caller) -> tuple[str, ...]:
        """The namespaces ``caller`` reads (its namespace, isolation and this root's registry)."""
        return caller_view(self.store.root, caller)

    async def configure_namespace(self, namespace: str, *, shared: bool | None = None, isolation: str | None = None) -> dict[str, Any]:
        """Mark ``namespace`` shared (or not) and/or set its default isolation in ``namespaces.json``."""
        return await self._run(configure, self.store.root, namespace, shared=shared, isolation=isolation, lock=self.store.lock)

    async def namespaces(self) -> dict[str, dict[str, Any]]:
        """The root's namespace registry (``{namespace: {"shared", "isolation"}}``)."""
        return await self._run(read_registry, self.store.root)

    async def remember(self, draft: MemoryDraft, *, source: str = "tool") -> RememberResult:
        return (await self._run(self.store.remember_many, [draft], source=source))[0]

    async def remember_many(
        self,
        drafts: Iterable[MemoryDraft],
        *,
        source: str = "import",
        on_error: Literal["raise", "skip"] = "raise",
        errors: builtins.list[tuple[int, str]] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> builtins.list[RememberResult]:
        return await self._run(self.store.remember_many, list(drafts), source=source, on_error=on_error, errors=errors, progress=progress)

    async def supersede(self, old_id: str, draft: MemoryDraft, *, source: str = "tool") -> RememberResult:
        return await self._run(self.store.supersede, old_id, draft, source=source)

    async def get(self, record_id: str, caller: Caller) -> MemoryRecord:
        return await self._as(caller, self.store.get, record_id, **caller.kwargs())

    async def list(self, caller: Caller, *, limit: int | None = 50, **filters: Any) -> builtins.list[MemoryRecord]:
        return await self._as(caller, self.store.list, limit=limit, **caller.kwargs(), **filters)

    async def count(self, caller: Caller, **filters: Any) -> int:
        return await self._as(caller, self.store.count, **caller.kwargs(), **filters)

    async def search(self, query: str, caller: Caller, *, limit: int = 10, **options: Any) -> SearchResult:
        if options.get("mode") == "contextual":  # sessions by summary, then messages and records within them
            from agent_memory.sessions.contextual import contextual_search

            rest = {k: v for k, v in options.items() if k not in ("mode", "trace")}
            return await self._as(
                caller,
                contextual_search,
                self.sessions,
                query,
                limit=limit,
                trace=bool(options.get("trace")),
                records=lambda n: self.store.search(query, limit=n, session_id=caller.session_id, user_id=caller.user_id, **rest),
                embedder=self.embedder,
                **caller.kwargs(),
            )
        return await self._as(caller, self.store.search, query, limit=limit, **caller.kwargs(), **options)

    async def forget(self, record_id: str, caller: Caller) -> bool:
        return await self._as(caller, self.store.forget, record_id, change=True, **caller.kwargs())

    async def core_lines(self, caller: Caller, limit: int | None) -> builtins.list[str]:
        def lines() -> builtins.list[str]:
            self.store.open()  # the index follows the files (hand edits included) before it is read
            return self.store.visible_lines(limit=limit, **caller.kwargs())

        return await self._as(caller, lines)

    async def user_md(self) -> str:
        path = self.store.root / "USER.md"

        def read() -> str:
            if not path.is_file() or path.is_symlink():
                return ""
            return path.read_text(encoding="utf-8")

        return await self._run(read)

    async def forget_purge(self, record_id: str, caller: Caller) -> bool:
        return await self._as(caller, self.store.forget, record_id, change=True, purge=True, **caller.kwargs())

    async def purge(
        self, record_id: str | None = None, *, session_id: str | None = None, user_id: str | None = None, namespace: str | None = None
    ) -> PurgeReport:
        return await self._run(self.store.purge, record_id, session_id=session_id, user_id=user_id, namespace=namespace)

    async def history(self, record_id: str, caller: Caller) -> History:
        return await self._as(caller, self.store.history, record_id, **caller.kwargs())

    async def restore(self, record_id: str, caller: Caller, *, version: int | None = None) -> MemoryRecord:
        return await self._as(caller, self.store.restore, record_id, change=True, version=version, **caller.kwargs())

    async def undo(self, caller: Caller) -> Event:
        return await self._as(caller, self.store.undo, change=True, **caller.kwargs())

    async def events(self, caller: Caller, *, record_id: str | None = None, limit: int | None = None) -> builtins.list[Event]:
        return await self._as(caller, self.store.events_for, record_id, limit=limit, **caller.kwargs())

    async def provenance(self, record_id: str, caller: Caller) -> dict[str, Any]:
        return await self._as(caller, self.store.provenance, record_id, **caller.kwargs())

    async def sweep(self) -> SweepReport:
        return await self._run(self.store.sweep)

    async def reindex(self) -> SyncReport:
        return await self._run(self.store.reindex)

    async def doctor(self) -> DoctorReport:
        return await self._run(self.store.doctor)

    # -- vectors (VectorsBackend): the store's meaning layer (agent_memory.backends.files.meaning) ----------------
    @property
    def embedder(self) -> Embedder | None:
        """The embedder the store was given (``MemoryStore(embedder=…)`` or :meth:`use_embedder`), if any."""
        meaning = self.store.meaning
        return None if meaning is None else meaning.embedder

    def use_embedder(self, embedder: Embedder | str | None) -> None:
        """Attach (or, with ``None``, detach) an embedder after construction: dense/hybrid search and :meth:`embed`."""
        old = self.store.meaning
        if old is not None:
            old.stop()
        self.store.meaning = None
        if embedder is not None:
            from agent_memory.backends.files.meaning import attach

            attach(self.store, embedder)

    async def embed(self, progress: Callable[[int, int], None] | None = None) -> BackfillReport:
        """Embed records without a current vector (vectors are derived: writes never wait for them)."""
        meaning = self.store.meaning
        if meaning is None:
            raise InvalidInputError("this backend has no embedder (MemoryStore(root, embedder='local'))")
        return await self._run(meaning.embed, progress)

    async def embedded(self, timeout: float | None = None) -> bool:
        """Wait until background embedding has caught up; False if ``timeout`` passed first."""
        meaning = self.store.meaning
        return True if meaning is None else await self._run(meaning.drain, timeout)

    async def recorded_embedder(self) -> RecordedEmbedder | None:
        """Which embedder made this root's vectors (``vectors.db``'s ``embedders`` table), None without vectors."""
        from agent_memory.backends.files.vector_meta import recorded

        return await self._run(recorded, self.store.root)

    async def links(self, record_id: str, caller: Caller) -> RecordLinks:
        """Outgoing links and backlinks of a record the caller may see (see :mod:`agent_memory.backends.files.links`)."""
        from agent_memory.backends.files.links import links_for

        return await self._as(caller, links_for, self.store, record_id, caller.session_id, caller.user_id)

    def partition_lock(self, key: str) -> AbstractAsyncContextManager[None]:
        """Hold this root's partition lock (one for every ``key``) across several calls (a capped write); see
        :mod:`agent_memory.backends.files.partition_lock`."""
        from agent_memory.backends.files.partition_lock import partition_lock

        return partition_lock(self.store.root, self.store.lock.timeout_s)

    async def close(self) -> None:
        self.store.close()
