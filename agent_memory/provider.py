"""``MemoryProvider``: the one façade applications hold.

It composes a :class:`~agent_memory.backends.base.MemoryBackend` (files + SQLite for a directory, PostgreSQL
for a ``postgresql://`` URL, or any backend object), the private recall and capture workers and
their model profiles; it is the only module that knows all of them. The workers and tools take the
backend and a :class:`~agent_memory.backends.base.Caller`, never the provider. Worker modules are imported
lazily, so using only the store never imports pydantic-ai or litellm.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import os
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, cast

from agent_memory.agents.core_block import DEFAULT_CORE_BUDGET, MemoryBlock, inject
from agent_memory.backends import open_backend
from agent_memory.backends.base import (
    Caller,
    EpisodesBackend,
    LifecycleBackend,
    MemoryBackend,
    SessionsBackend,
    VectorsBackend,
    capability,
    require,
)
from agent_memory.backends.files.backend import FilesBackend
from agent_memory.errors import InvalidInputError
from agent_memory.model.drafts import MemoryDraft, OnExisting, RememberResult
from agent_memory.model.events import Event, NotSupportedError
from agent_memory.model.records import MemoryRecord, Scope
from agent_memory.model.reports import DoctorReport, History, PurgeReport, SweepReport, SyncReport
from agent_memory.search.types import SearchResult

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.agents.profiles import Profile
    from agent_memory.agents.workers.capture import CaptureResult, Extractor
    from agent_memory.agents.workers.recall import RecallResult
    from agent_memory.agents.workers.reflect import Reflection
    from agent_memory.backends.extended import Hooks
    from agent_memory.backends.files.meaning import Meaning
    from agent_memory.backends.files.store import MemoryStore
    from agent_memory.consolidate import ConsolidationReport
    from agent_memory.embeddings import Embedder
    from agent_memory.episodes import Episode, Episodes
    from agent_memory.sessions import SessionInfo, SessionMessage, SessionStore, SessionSummary, SummaryPolicy

T = TypeVar("T")
H = TypeVar("H", bound=Callable[[Any], Any])
logger = logging.getLogger("agent_memory")

__all__ = ["MemoryProvider", "PendingCaptureWarning"]


class PendingCaptureWarning(RuntimeWarning):
    """Background captures were still pending where they would be lost (a closed provider, ``run_sync``)."""


class MemoryProvider:
    """Durable memory for one backend, with private recall and capture workers.

    ``target`` is a root directory (files + SQLite), a ``postgresql://`` URL, or a
    :class:`~agent_memory.backends.base.MemoryBackend`. ``profile`` names a model profile
    (``"offline"`` by default: a deterministic worker, no LLM) or a path to a TOML file.
    ``turn_extractor``/``compaction_extractor`` replace the capture worker with a plain function
    returning :class:`MemoryDraft` objects. Other keyword options go to the backend (for
    directories, :class:`~agent_memory.backends.files.store.MemoryStore`: ``engine``, ``tokenizer``, ``default_scope``, …).

    ``hooks`` (:class:`~agent_memory.backends.extended.Hooks`) or :meth:`on` register extension hooks;
    ``track_recalls=True`` logs which records were recalled (consolidation's decay rule needs it).

    ``async with MemoryProvider(...) as memory:`` flushes pending captures and closes on exit.
    """

    def __init__(
        self,
        target: "str | os.PathLike[str] | MemoryBackend" = ".agent-memory",
        *,
        profile: "str | os.PathLike[str] | Profile" = "offline",
        turn_extractor: "Extractor | None" = None,
        compaction_extractor: "Extractor | None" = None,
        hooks: "Hooks | None" = None,
        track_recalls: bool = False,
        **backend_options: Any,
    ) -> None:
        if "root" in backend_options:  # the keyword's old name
            root = backend_options.pop("root")
            if target != ".agent-memory":
                raise InvalidInputError("MemoryProvider got both `target` and `root` (its old name); pass only `target`")
            warnings.warn(
                "MemoryProvider(root=...) is deprecated; pass the root as `target` (or positionally)", DeprecationWarning, stacklevel=2
            )
            target = root
        self.backend: MemoryBackend = open_backend(target, **backend_options)
        if hooks:  # extension hooks (agent_memory.backends.extended): every read and write passes through them
            from agent_memory.backends.extended import ExtendedBackend

            self.backend = ExtendedBackend(self.backend, hooks)
        files = capability(self.backend, FilesBackend)
        if files is not None and "embedder" not in backend_options:
            _use_recorded_embedder(files)  # a root with vectors: search uses them (docs/meaning.md)
        if track_recalls and files is not None:  # decay (files backend) needs to know what was recalled
            from agent_memory.consolidate.recalls import RecallLog

            self.on("on_memory_retrieved", RecallLog(files.root).hook)
        self._profile_spec = profile
        self._profile: Profile | None = None
        self.turn_extractor = turn_extractor
        self.compaction_extractor = compaction_extractor
        self._pending: set[asyncio.Task[Any]] = set()

    @property
    def root(self) -> Path | str:
        """The backend's root directory (files backend) or its URL/name."""
        root = getattr(self.backend, "root", None)
        return root if root is not None else str(getattr(self.backend, "url", type(self.backend).__name__))

    @property
    def store(self) -> "MemoryStore":
        """The synchronous :class:`~agent_memory.backends.files.store.MemoryStore` behind a files backend (else ``AttributeError``)."""
        files = capability(self.backend, FilesBackend)
        if files is None:
            raise AttributeError(f"{type(self.backend).__name__} has no MemoryStore")
        return files.store

    @property
    def profile(self) -> "Profile":
        """The resolved model profile (loaded on first use)."""
        if self._profile is None:
            from agent_memory.agents.profiles import load_profile

            self._profile = load_profile(self._profile_spec)
        return self._profile

    async def _loaded_profile(self) -> None:
        if self._profile is None:  # reading and validating TOML happens off the event loop
            try:
                await asyncio.to_thread(lambda: self.profile)
            except Exception:
                pass  # the worker resolves it again and fails open with the reason

    # -- store ---------------------------------------------------------------------------
    async def remember(
        self,
        content: str,
        *,
        title: str | None = None,
        kind: str | None = None,
        scope: Scope | str | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        tags: Iterable[str] = (),
        memory_key: str | None = None,
        on_existing: OnExisting = "append",
        source: str = "tool",
        expires: str | None = None,
        importance: float | None = None,
        metadata: Mapping[str, Any] | None = None,
        happened_at: str | None = None,
        valid_from: str | None = None,
        valid_to: str | None = None,
        supersedes: str | None = None,
    ) -> RememberResult:
        """Store one memory; returns its id and ``created|duplicate|appended|replaced|skipped|superseded``."""
        draft = MemoryDraft(
            content,
            title=title,
            kind=kind,
            scope=scope,
            session_id=session_id,
            user_id=user_id,
            tags=cast(Any, tags) if isinstance(tags, str) else tuple(tags),
            memory_key=memory_key,
            on_existing=on_existing,
            expires=expires,
            importance=importance,
            metadata=metadata,
            happened_at=happened_at,
            valid_from=valid_from,
            valid_to=valid_to,
            supersedes=supersedes,
        )
        result = await self.backend.remember(draft, source=source)
        self._embed_soon()
        return result

    async def supersede(self, old_id: str, draft: MemoryDraft, *, source: str = "tool") -> RememberResult:
        """Write ``draft`` as the current fact in place of ``old_id`` (kept, superseded; see ``docs/time.md``)."""
        return await self.backend.supersede(old_id, draft, source=source)

    async def remember_many(self, drafts: Iterable[MemoryDraft], *, source: str = "import", **kwargs: Any) -> builtins.list[RememberResult]:
        """Bulk write (one lock and transaction per batch)."""
        results = await self.backend.remember_many(list(drafts), source=source, **kwargs)
        self._embed_soon()
        return results

    async def search(
        self,
        query: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        tags: Iterable[str] = (),
        limit: int = 10,
        **filters: Any,
    ) -> SearchResult:
        """Ranked, scope-visible hits with snippets and line ranges (``.hits``; ``.trace`` with ``trace=True``).

        ``mode="contextual"``: sessions by their summaries, then messages and records within them (files backend)."""
        if filters.get("mode") == "contextual":
            _ = self.session_store  # a clear typed error where session logs are not kept
        return await self.backend.search(query, Caller(session_id, user_id), tags=tags, limit=limit, **filters)

    async def search_trace(self, query: str, **kwargs: Any) -> SearchResult:
        """Like :meth:`search` with ``trace=True``."""
        return await self.search(query, trace=True, **kwargs)

    async def get(self, record_id: str, *, session_id: str | None = None, user_id: str | None = None) -> MemoryRecord:
        return await self.backend.get(record_id, Caller(session_id, user_id))

    async def list(
        self, *, session_id: str | None = None, user_id: str | None = None, limit: int | None = 50, **filters: Any
    ) -> list[MemoryRecord]:
        return await self.backend.list(Caller(session_id, user_id), limit=limit, **filters)

    async def count(self, *, session_id: str | None = None, user_id: str | None = None, **filters: Any) -> int:
        return await self.backend.count(Caller(session_id, user_id), **filters)

    async def forget(self, record_id: str, *, session_id: str | None = None, user_id: str | None = None, purge: bool = False) -> bool:
        """Archive a visible record (undo with :meth:`restore`); ``purge=True`` deletes every byte of it."""
        if purge:
            return await self._lifecycle("forget --purge").forget_purge(record_id, Caller(session_id, user_id))
        return await self.backend.forget(record_id, Caller(session_id, user_id))

    async def sweep(self) -> SweepReport:
        return await self.backend.sweep()

    async def reindex(self) -> SyncReport:
        return await self.backend.reindex()

    async def doctor(self) -> DoctorReport:
        return await self.backend.doctor()

    async def inject(self, budget: int = DEFAULT_CORE_BUDGET, *, session_id: str | None = None, user_id: str | None = None) -> MemoryBlock:
        """The core block for one caller: ``USER.md`` (redacted) + visible ``MEMORY.md`` lines within ``budget`` tokens."""
        return await inject(self.backend, budget, caller=Caller(session_id, user_id))

    # -- workers -------------------------------------------------------------------------
    async def recall(
        self,
        message: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        summary_tokens: int | None = None,
        timeout_s: float | None = None,
    ) -> "RecallResult":
        """One compact, cited summary of what memory knows about ``message``. Never raises.

        ``timeout_s`` shortens the profile's recall timeout for this call.
        """
        from agent_memory.agents.workers.recall import run_recall

        await self._loaded_profile()
        return await run_recall(
            self.backend,
            message,
            caller=Caller(session_id, user_id),
            worker=lambda: self.profile.recall,
            summary_tokens=summary_tokens,
            timeout_s=timeout_s,
        )

    async def capture_turn(
        self,
        input: str,
        output: str | None = None,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        at: Any = None,
    ) -> "CaptureResult":
        """Let the capture worker (or ``turn_extractor``) store durable facts from one turn.

        ``at`` (a datetime): when the turn was said; relative dates in it resolve against it (``docs/time.md``)."""
        from agent_memory.agents.workers.capture import capture_turn

        if self.turn_extractor is None:
            await self._loaded_profile()
        result = await capture_turn(
            self.backend,
            input,
            output,
            caller=Caller(session_id, user_id),
            worker=lambda: self.profile.capture,
            extractor=self.turn_extractor,
            at=at,
        )
        self._embed_soon()
        return result

    async def capture_before_compaction(
        self,
        removed_messages: Sequence[Any],
        next_summary: str | None = None,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
    ) -> "CaptureResult":
        """Last-chance capture from messages about to be compacted away (await before committing)."""
        from agent_memory.agents.workers.capture import capture_before_compaction

        if self.compaction_extractor is None:
            await self._loaded_profile()
        result = await capture_before_compaction(
            self.backend,
            removed_messages,
            next_summary,
            caller=Caller(session_id, user_id),
            worker=lambda: self.profile.capture,
            extractor=self.compaction_extractor,
        )
        self._embed_soon()
        return result

    def capture_turn_in_background(self, input: str, output: str | None = None, **kwargs: Any) -> "asyncio.Task[CaptureResult]":
        """Schedule :meth:`capture_turn` without waiting; :meth:`flush` awaits it."""
        return self.background(self.capture_turn(input, output, **kwargs))

    def background(self, coro: Awaitable[T]) -> "asyncio.Task[T]":
        task: asyncio.Task[T] = asyncio.ensure_future(coro)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        return task

    @property
    def pending(self) -> int:
        """How many background captures have not finished yet."""
        return sum(1 for t in self._pending if not t.done())

    async def flush(self) -> builtins.list[Any]:
        """Wait for every pending background capture; returns their results (exceptions included)."""
        results: builtins.list[Any] = []
        while self._pending:
            batch = list(self._pending)
            results.extend(await asyncio.gather(*batch, return_exceptions=True))
            self._pending.difference_update(batch)
        return results

    # -- meaning: vectors catch up after writes, in a background thread, never inside a write --------
    def _meaning(self) -> "Meaning | None":
        files = capability(self.backend, FilesBackend)
        return None if files is None else files.store.meaning

    def _embedder(self) -> "Embedder | None":
        vectors = capability(self.backend, VectorsBackend)
        return None if vectors is None else vectors.embedder

    def _embed_soon(self) -> None:
        meaning = self._meaning()
        if meaning is not None:
            meaning.kick()  # returns at once; a failure there is logged, never raised here

    async def embedded(self, timeout: float | None = None) -> bool:
        """Wait (off the event loop) until background embedding has caught up; False if ``timeout`` passed first."""
        vectors = capability(self.backend, VectorsBackend)
        return True if vectors is None else await vectors.embedded(timeout)

    def close(self) -> None:
        """Close the backend. Warns (:class:`PendingCaptureWarning`) if background captures are still pending.
        Background embedding is abandoned after the batch in flight (the next embed catches up)."""
        meaning = self._meaning()
        if meaning is not None:
            meaning.stop()
        if self.pending:
            warnings.warn(
                f"MemoryProvider closed with {self.pending} background capture(s) pending; "
                "await provider.flush() first (or use `async with MemoryProvider(...)`)",
                PendingCaptureWarning,
                stacklevel=2,
            )
        result = self.backend.close()
        if asyncio.iscoroutine(result):
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                asyncio.run(result)
            else:  # inside a loop (prefer aclose()): a files backend closes synchronously, others as a task
                result.close()
                files = capability(self.backend, FilesBackend)
                if files is not None:
                    files.store.close()
                else:
                    self.background(self.backend.close())

    async def aclose(self) -> None:
        """Flush pending captures, stop background embedding (after its batch in flight), then close the backend."""
        await self.flush()
        meaning = self._meaning()
        if meaning is not None:
            await asyncio.to_thread(meaning.stop)
        await self.backend.close()

    async def __aenter__(self) -> "MemoryProvider":
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    # -- lifecycle: history, restore, undo, events, purge ----------------------------------
    def _lifecycle(self, feature: str) -> LifecycleBackend:
        """The backend as a :class:`~agent_memory.backends.base.LifecycleBackend`, else the one unsupported error."""
        return require(self.backend, LifecycleBackend, feature, error=NotSupportedError)

    async def purge(self, record_id: str | None = None, *, session_id: str | None = None, user_id: str | None = None) -> PurgeReport:
        """Delete content for good (irreversible): one record the caller may see, or, without ``record_id``,
        everything of ``user_id`` and/or ``session_id`` (see :mod:`agent_memory.backends.files.purge`)."""
        return await self._lifecycle("purge").purge(record_id, session_id=session_id, user_id=user_id)

    async def history(self, record_id: str, *, session_id: str | None = None, user_id: str | None = None) -> History:
        """Every version of a visible record (live or archived), oldest first, with its events."""
        return await self._lifecycle("history").history(record_id, Caller(session_id, user_id))

    async def restore(
        self, record_id: str, *, version: int | None = None, session_id: str | None = None, user_id: str | None = None
    ) -> MemoryRecord:
        """Bring back a forgotten/swept record, or make ``version`` (default: the previous one) current."""
        return await self._lifecycle("restore").restore(record_id, Caller(session_id, user_id), version=version)

    async def undo(self, *, session_id: str | None = None, user_id: str | None = None) -> Event:
        """Reverse this caller's last change not undone yet; returns the event it reversed."""
        return await self._lifecycle("undo").undo(Caller(session_id, user_id))

    async def events(
        self, *, record_id: str | None = None, session_id: str | None = None, user_id: str | None = None, limit: int | None = None
    ) -> builtins.list[Event]:
        """Events of records the caller may see, oldest first."""
        return await self._lifecycle("events").events(Caller(session_id, user_id), record_id=record_id, limit=limit)

    async def provenance(self, record_id: str, *, session_id: str | None = None, user_id: str | None = None) -> dict[str, Any]:
        """Who created and last changed a visible record."""
        return await self._lifecycle("provenance").provenance(record_id, Caller(session_id, user_id))

    # -- extensions, consolidation, reflect ------------------------------------------------
    def on(self, name: str, fn: H) -> H:
        """Register an extension hook (``on_memory_written``, ``on_memory_retrieved``, ``on_session_end``); returns ``fn``.

        See :mod:`agent_memory.backends.extended`. Registering the first hook wraps the backend, so tools and workers
        built afterwards see it."""
        from agent_memory.backends.extended import ExtendedBackend, Hooks

        if not isinstance(self.backend, ExtendedBackend):
            self.backend = ExtendedBackend(self.backend, Hooks())
        self.backend.hooks.add(name, fn)
        return fn

    async def end_session(self, session_id: str | None, *, user_id: str | None = None, **info: Any) -> None:
        """Tell ``on_session_end`` hooks a conversation ended (pending captures are awaited first). Never raises."""
        await self.flush()
        from agent_memory.backends.extended import ExtendedBackend

        if isinstance(self.backend, ExtendedBackend):  # only hooks hear of it
            await self.backend.end_session(session_id, user_id, **info)

    async def consolidate(
        self,
        *,
        dry_run: bool = False,
        max_share: float | None = None,
        worker: bool = False,
        session_id: str | None = None,
        user_id: str | None = None,
        **options: Any,
    ) -> "ConsolidationReport":
        """Consolidate memory without destroying it (merge near-duplicates, TTL, scope-path, decay; lint); see
        :mod:`agent_memory.consolidate`. Changes are archives (restorable), at most ``max_share`` (default 10%).

        Default: the deterministic pass over every partition (or over what ``session_id``/``user_id`` see, when
        given). ``worker=True``: the consolidate worker of the profile reviews that plan for the caller and acts
        on it (fails open: a model error is reported, never raised)."""
        from agent_memory.consolidate import consolidate_backend, fire_archived

        if not worker:
            caller = Caller(session_id, user_id) if session_id or user_id else None
            return await consolidate_backend(self.backend, dry_run=dry_run, max_share=max_share, caller=caller, **options)
        from agent_memory.agents.workers.consolidate import run_consolidate

        await self._loaded_profile()
        report = await run_consolidate(
            self.backend,
            caller=Caller(session_id, user_id),
            worker=lambda: self.profile.consolidate,
            max_share=max_share,
            dry_run=dry_run,
            **options,
        )
        await fire_archived(self.backend, report)
        return report

    async def reflect(
        self, question: str, *, session_id: str | None = None, user_id: str | None = None, timeout_s: float | None = None
    ) -> "Reflection":
        """A synthesised answer to ``question`` citing the records it rests on (the reflect worker). Never raises."""
        from agent_memory.agents.workers.reflect import run_reflect

        await self._loaded_profile()
        return await run_reflect(
            self.backend, question, caller=Caller(session_id, user_id), worker=lambda: self.profile.reflect, timeout_s=timeout_s
        )

    # -- episodes (one per agent run; files backend) -------------------------------------
    async def record_episode(self, goal: str, *, session_id: str | None = None, user_id: str | None = None, **facts: Any) -> "Episode":
        """Store the episode of one run; ``facts`` as :func:`agent_memory.episodes.build_episode` takes them.

        With a model in the profile's ``[episode]`` section, the stored episode is then refined in the background
        (:mod:`agent_memory.agents.workers.episode`; ``await provider.flush()`` waits for it); this call never waits for it."""
        from agent_memory.episodes import build_episode

        store = self._episodes()
        episode: Episode = await asyncio.to_thread(
            lambda: store.write(build_episode(goal, session_id=session_id, user_id=user_id, **facts))
        )
        await self._loaded_profile()
        try:
            worker = self.profile.episode
        except Exception:  # an unreadable profile: the workers that need it report it; the episode stands
            return episode
        if not (isinstance(worker.model, str) and worker.model == "offline"):
            self.background(self._refine_episode(store, episode, worker))
        return episode

    async def _refine_episode(self, store: "Episodes", episode: "Episode", worker: Any) -> "Episode | None":
        from agent_memory.agents.workers.episode import refine_episode

        refined = await refine_episode(episode, worker=worker)
        if refined is None:
            return None
        try:
            stored: Episode = await asyncio.to_thread(store.replace, refined)
            return stored
        except Exception:  # e.g. purged or hand-edited meanwhile: the deterministic episode (or nothing) stays
            logger.warning("agent_memory: could not store the refined episode %s", episode.id, exc_info=True)
            return None

    async def episodes(
        self,
        query: str | None = None,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        limit: int = 20,
        status: str | None = None,
    ) -> "builtins.list[Episode]":
        """The caller's episodes: newest first, or best match for ``query`` first; ``status`` ok, failed or paused."""
        store = self._episodes()
        return await asyncio.to_thread(store.list, query, session_id=session_id, user_id=user_id, limit=limit, status=status)

    async def episode(self, episode_id: str, *, session_id: str | None = None, user_id: str | None = None) -> "Episode":
        """One episode the caller may see (else :class:`~agent_memory.errors.NotFoundError`)."""
        store = self._episodes()
        return await asyncio.to_thread(store.get, episode_id, session_id=session_id, user_id=user_id)

    def _episodes(self) -> "Episodes":
        """The backend's episode store (:class:`~agent_memory.episodes.EpisodesUnsupportedError` if it keeps none)."""
        from agent_memory.episodes import EpisodesUnsupportedError

        return require(self.backend, EpisodesBackend, "episodes", error=EpisodesUnsupportedError).episodes

    # -- sessions (logs, summaries, contextual search; files and PostgreSQL) --------------
    @property
    def session_store(self) -> "SessionStore":
        """The :class:`~agent_memory.sessions.SessionStore` of the backend (:class:`SessionsNotSupportedError` if none)."""
        from agent_memory.sessions.api import SessionsNotSupportedError

        return require(self.backend, SessionsBackend, "session logs", error=SessionsNotSupportedError).sessions

    async def log_messages(
        self, messages: Iterable[Mapping[str, Any]], *, session_id: str, user_id: str | None = None
    ) -> "builtins.list[SessionMessage]":
        """Append messages (``{"role", "text", "at"?, "speaker"?}``) to the session's log (redacted, locked)."""
        store, items = self.session_store, builtins.list(messages)
        return await asyncio.to_thread(store.append, session_id, items, user_id=user_id)

    async def sessions(
        self, *, session_id: str | None = None, user_id: str | None = None, limit: int | None = None
    ) -> "builtins.list[SessionInfo]":
        """The caller's sessions (its own, and its user's), most recently active first."""
        store = self.session_store
        return await asyncio.to_thread(store.sessions, session_id=session_id, user_id=user_id, limit=limit)

    async def session(
        self, target: str, *, session_id: str | None = None, user_id: str | None = None, limit: int | None = None
    ) -> "tuple[SessionInfo, builtins.list[SessionMessage]]":
        """One visible session and its messages (``limit``: the last N); :class:`NotFoundError` otherwise."""
        from agent_memory.sessions.api import read_session

        return await asyncio.to_thread(read_session, self.session_store, target, session_id, user_id, limit)

    async def summarize_session(
        self,
        target: str | None = None,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        force: bool = False,
        policy: "SummaryPolicy | None" = None,
    ) -> "SessionSummary | None":
        """Summarise a session (default: the caller's own) when due under ``policy`` or ``force``; fails open."""
        from agent_memory.agents.workers.summarize import summarize_session

        await self._loaded_profile()
        return await summarize_session(
            self.session_store,
            target or session_id,
            session_id=session_id,
            user_id=user_id,
            worker=lambda: self.profile.summarize,
            force=force,
            policy=policy,
        )

    async def search_sessions(
        self, query: str, *, session_id: str | None = None, user_id: str | None = None, limit: int = 5
    ) -> "builtins.list[dict[str, Any]]":
        """The caller's sessions best matching ``query`` by their summaries, each with its best messages."""
        from agent_memory.sessions.contextual import search_sessions

        return await asyncio.to_thread(
            search_sessions, self.session_store, query, session_id=session_id, user_id=user_id, limit=limit, embedder=self._embedder()
        )


def _use_recorded_embedder(files: FilesBackend) -> None:
    """Attach the embedder recorded with a files root's vectors, if it has vectors and the embedder can be rebuilt."""
    from agent_memory.backends.files.vector_meta import recorded

    found = recorded(files.root)
    if found is None or found.spec is None or files.embedder is not None:
        return
    try:
        files.use_embedder(found.spec)
    except Exception as exc:  # e.g. numpy gone since the vectors were made: lexical, as before
        logging.getLogger("agent_memory").warning("not using this root's vectors (%s): %s", found.model, exc)
