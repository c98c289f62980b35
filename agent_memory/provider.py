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
import contextlib
import copy
import dataclasses
import logging
import os
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
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
    RecordedEmbedder,
    SessionsBackend,
    VectorsBackend,
    capability,
    innermost,
    require,
)
from agent_memory.backends.files.backend import FilesBackend
from agent_memory.errors import InvalidInputError, PermissionDeniedError, UnsupportedError
from agent_memory.model import scopes
from agent_memory.model.drafts import MemoryDraft, OnExisting, RememberResult, check_on_existing
from agent_memory.model.events import Event, NotSupportedError
from agent_memory.model.records import MemoryRecord, Scope
from agent_memory.model.reports import DoctorReport, History, PurgeReport, SweepReport, SyncReport
from agent_memory.search.types import SearchResult

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.agents.extensions import ToolMiddleware, WriteApproval
    from agent_memory.agents.profiles import Profile
    from agent_memory.agents.workers.capture import CaptureResult, Extractor
    from agent_memory.agents.workers.recall import RecallResult
    from agent_memory.agents.workers.reflect import Reflection
    from agent_memory.backends.extended import Hooks
    from agent_memory.backends.files.meaning import Meaning
    from agent_memory.backends.files.store import MemoryStore
    from agent_memory.consolidate import ConsolidationReport
    from agent_memory.consolidate.contradict import Contradiction
    from agent_memory.consolidate.tend import DistillReport, IdleReport, IdleSummaries
    from agent_memory.consolidate.tidy import TidyReport
    from agent_memory.embeddings import Embedder
    from agent_memory.episodes import Episode, Episodes
    from agent_memory.model.curated import CuratedLine
    from agent_memory.model.links import RecordLinks
    from agent_memory.search.stages import Stage
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
    ``worker_tools`` (extra read tools for the workers), ``tool_middleware`` (around every worker tool call) and
    ``approve_write`` (asked before each worker write) extend the private workers (:mod:`agent_memory.agents.extensions`).

    ``namespace`` (``"acme/support"``) and ``isolation`` (``full``, ``inherited``, ``shared``) are the identity
    every call of this provider carries beside its session and user (``docs/namespaces.md``): writes land in that
    namespace, reads see what the isolation allows. Default: the root namespace, as before namespaces existed.

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
        worker_tools: "Sequence[Any] | Mapping[str, Sequence[Any]] | None" = None,
        tool_middleware: "ToolMiddleware | Sequence[ToolMiddleware] | None" = None,
        approve_write: "WriteApproval | None" = None,
        namespace: str | None = None,
        isolation: str | None = None,
        **backend_options: Any,
    ) -> None:
        who = Caller(namespace=namespace, isolation=cast(Any, isolation))  # checks both (InvalidInputError naming the rule)
        self.namespace: str | None = who.namespace
        self.isolation: str | None = who.isolation
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
        # a store with vectors: search uses them, with the embedder recorded with them (docs/meaning.md); a files
        # root is asked now (a file read), any other backend at the first search without a mode
        self._find_vectors = "embedder" not in backend_options
        if files is not None and self._find_vectors:
            from agent_memory.backends.files.vector_meta import recorded

            self._find_vectors = False
            _use_recorded_embedder(files, recorded(files.root))
        if track_recalls and files is not None:  # decay (files backend) needs to know what was recalled
            from agent_memory.consolidate.recalls import RecallLog

            self.on("on_memory_retrieved", RecallLog(files.root).hook)
        self._profile_spec = profile
        self._profile: Profile | None = None
        self._extensions: dict[str, Any] = {}
        if worker_tools is not None or tool_middleware is not None or approve_write is not None:
            from agent_memory.agents.extensions import check_extensions

            check_extensions(worker_tools, tool_middleware, approve_write)  # bad ones fail here, not in a worker run
            self._extensions = {"worker_tools": worker_tools, "tool_middleware": tool_middleware, "approve_write": approve_write}
        self.turn_extractor = turn_extractor
        self.compaction_extractor = compaction_extractor
        self._pending: set[asyncio.Task[Any]] = set()

    def _caller(
        self, session_id: str | None = None, user_id: str | None = None, namespace: str | None = None, isolation: str | None = None
    ) -> Caller:
        """The caller of one call: its session and user, in ``namespace`` with ``isolation`` (per call), else this
        provider's namespace and isolation."""
        ns = namespace or self.namespace
        return Caller(session_id, user_id, ns, cast(Any, isolation or (self.isolation if ns == self.namespace else None)))

    def _stamped(self, draft: MemoryDraft, namespace: str | None = None) -> MemoryDraft:
        """``draft`` in the call's namespace (``namespace``, else this provider's): a draft naming another namespace
        is refused (never written there)."""
        target = self._caller(namespace=namespace).namespace
        if not isinstance(draft, MemoryDraft) or (draft.namespace or None) == target:
            return draft
        if draft.namespace:
            raise InvalidInputError(f"a draft names namespace {draft.namespace!r}; this call writes in {target or 'the root'!r}")
        return dataclasses.replace(draft, namespace=target)

    def in_namespace(self, namespace: str | None, isolation: str | None = None) -> "MemoryProvider":
        """This provider acting in ``namespace`` with ``isolation``: the same backend, workers and pending
        captures (close the original, not the view), every call carrying that namespace."""
        view = copy.copy(self)
        who = Caller(namespace=namespace, isolation=cast(Any, isolation))
        view.namespace, view.isolation = who.namespace, who.isolation
        return view

    async def configure_namespace(self, namespace: str, *, shared: bool | None = None, isolation: str | None = None) -> dict[str, Any]:
        """Mark ``namespace`` shared (its siblings with ``shared`` isolation read it) and/or set its default
        isolation, in the root's namespace registry (files: ``namespaces.json``; PostgreSQL: a table)."""
        configure = getattr(innermost(self.backend), "configure_namespace", None)
        if configure is None:
            raise UnsupportedError.of("namespace registry", innermost(self.backend))
        return cast(dict[str, Any], await configure(namespace, shared=shared, isolation=isolation))

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

            loaded = load_profile(self._profile_spec)
            if self._extensions:  # extra worker tools, middleware, write approval (agent_memory.agents.extensions)
                from agent_memory.agents.extensions import extend_profile

                loaded = extend_profile(loaded, **self._extensions)
            self._profile = loaded
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
        namespace: str | None = None,
    ) -> RememberResult:
        """Store one memory; returns its id and ``created|duplicate|appended|replaced|skipped|superseded``.

        It lands in ``namespace`` (per call), else in this provider's namespace. ``on_existing`` says what a
        ``memory_key`` write does when that memory exists: ``replace`` or ``skip`` without a ``memory_key`` is an
        :class:`~agent_memory.errors.InvalidInputError` (as ``agent-memory remember --on-existing`` without ``--key``)."""
        check_on_existing(on_existing, memory_key)
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
            namespace=self._caller(namespace=namespace).namespace,
        )
        result = await self.backend.remember(draft, source=source)
        self._embed_soon()
        return result

    async def supersede(self, old_id: str, draft: MemoryDraft, *, source: str = "tool", namespace: str | None = None) -> RememberResult:
        """Write ``draft`` as the current fact in place of ``old_id`` (kept, superseded; see ``docs/time.md``), in
        ``namespace`` (per call), else this provider's."""
        return await self.backend.supersede(old_id, self._stamped(draft, namespace), source=source)

    async def remember_many(
        self, drafts: Iterable[MemoryDraft], *, source: str = "import", namespace: str | None = None, **kwargs: Any
    ) -> builtins.list[RememberResult]:
        """Bulk write (one lock and transaction per batch), in ``namespace`` (per call), else this provider's."""
        results = await self.backend.remember_many([self._stamped(d, namespace) for d in drafts], source=source, **kwargs)
        self._embed_soon()
        return results

    async def search(
        self,
        query: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
        tags: Iterable[str] = (),
        limit: int = 10,
        stages: "Sequence[Stage] | None" = None,
        **filters: Any,
    ) -> SearchResult:
        """Ranked, scope-visible hits with snippets and line ranges (``.hits``; ``.trace`` with ``trace=True``).

        ``mode="contextual"``: sessions by their summaries, then messages and records within them (files backend).
        ``stages``: ranking stages (``TimeDecay``, ``MMR``, …) re-ranking the default ranking's best hits (docs/search.md)."""
        if filters.get("mode") == "contextual":
            _ = self.session_store  # a clear typed error where session logs are not kept
        if stages is not None:
            filters["stages"] = stages
        caller = self._caller(session_id, user_id, namespace, isolation)
        if self._find_vectors and filters.get("mode") is None:
            self._find_vectors = False
            vectors = capability(self.backend, VectorsBackend)
            if vectors is not None and vectors.embedder is None:
                _use_recorded_embedder(vectors, await vectors.recorded_embedder())
        if filters.pop("expand_links", False):  # opt-in: the top hits' linked records join the candidates (docs/links.md)
            return await self._search_linked(query, caller, tags=tags, limit=limit, **filters)
        return await self.backend.search(query, caller, tags=tags, limit=limit, **filters)

    async def search_trace(self, query: str, **kwargs: Any) -> SearchResult:
        """Like :meth:`search` with ``trace=True``."""
        return await self.search(query, trace=True, **kwargs)

    async def get(
        self,
        record_id: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
    ) -> MemoryRecord:
        return await self.backend.get(record_id, self._caller(session_id, user_id, namespace, isolation))

    async def list(
        self,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
        limit: int | None = 50,
        **filters: Any,
    ) -> list[MemoryRecord]:
        return await self.backend.list(self._caller(session_id, user_id, namespace, isolation), limit=limit, **filters)

    async def count(
        self,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
        **filters: Any,
    ) -> int:
        return await self.backend.count(self._caller(session_id, user_id, namespace, isolation), **filters)

    async def forget(
        self,
        record_id: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
        purge: bool = False,
    ) -> bool:
        """Archive a visible record (undo with :meth:`restore`); ``purge=True`` deletes every byte of it.

        True when it was archived (or purged); False when the caller has no such record to change (unknown, not
        visible, another namespace's, already forgotten), on both backends (``MemoryBackend.forget``), so a repeated
        forget is harmless. The CLI (``agent-memory forget``) and the MCP tool turn False into a ``NotFoundError``."""
        if purge:
            return await self._lifecycle("forget --purge").forget_purge(record_id, self._caller(session_id, user_id, namespace, isolation))
        return await self.backend.forget(record_id, self._caller(session_id, user_id, namespace, isolation))

    async def sweep(self) -> SweepReport:
        return await self.backend.sweep()

    async def reindex(self) -> SyncReport:
        return await self.backend.reindex()

    async def doctor(self) -> DoctorReport:
        return await self.backend.doctor()

    async def inject(
        self,
        budget: int = DEFAULT_CORE_BUDGET,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
    ) -> MemoryBlock:
        """The core block for one caller: its curated lines (:meth:`curate`), ``USER.md`` (redacted) and the other
        visible ``MEMORY.md`` lines, within ``budget`` tokens."""
        return await inject(self.backend, budget, caller=self._caller(session_id, user_id, namespace, isolation))

    # -- workers -------------------------------------------------------------------------
    async def recall(
        self,
        message: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
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
            caller=self._caller(session_id, user_id, namespace, isolation),
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
        namespace: str | None = None,
        isolation: str | None = None,
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
            caller=self._caller(session_id, user_id, namespace, isolation),
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
        namespace: str | None = None,
        isolation: str | None = None,
    ) -> "CaptureResult":
        """Last-chance capture from messages about to be compacted away (await before committing)."""
        from agent_memory.agents.workers.capture import capture_before_compaction

        if self.compaction_extractor is None:
            await self._loaded_profile()
        result = await capture_before_compaction(
            self.backend,
            removed_messages,
            next_summary,
            caller=self._caller(session_id, user_id, namespace, isolation),
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

    async def flush(self, *, embedding_timeout: float | None = 30.0) -> builtins.list[Any]:
        """Wait for every pending background capture, then up to ``embedding_timeout`` seconds (None: no limit) for
        background embedding to catch up with what they and earlier writes stored (a failing embedder does not hold
        it up: embedding fails open; a stalled one is left behind with a warning, and the next embed or write catches
        up); returns the captures' results (exceptions included)."""
        results = await self._captured()
        if not await self.embedded(timeout=embedding_timeout):
            logger.warning("flush: background embedding did not catch up within %s s; the next embed catches up", embedding_timeout)
        return results

    async def _captured(self) -> builtins.list[Any]:
        """Wait for every pending background capture (not for embedding); their results."""
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
        for task in self.__dict__.pop("_tidying", {}).values():  # upkeep, not a capture: the next run's end tidies
            task.cancel()
            self._pending.discard(task)
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
        await self._stop_schedules()  # an idle-summary schedule (schedule_idle_summaries) ends before the flush
        await self._captured()  # not flush(): closing abandons embedding after the batch in flight
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

    async def purge(
        self, record_id: str | None = None, *, session_id: str | None = None, user_id: str | None = None, namespace: str | None = None
    ) -> PurgeReport:
        """Delete content for good (irreversible): one record the caller may see, or, without ``record_id``,
        everything of ``user_id`` and/or ``session_id`` (see :mod:`agent_memory.backends.files.purge`); with
        ``namespace``, only what is in that namespace and its descendants (alone: everything there, whoever owns
        it). The root namespace is refused (that would be the whole memory).

        A namespaced provider purges only in its own namespace and descendants
        (:class:`~agent_memory.errors.PermissionDeniedError` otherwise; an owner purge without ``namespace`` is
        its own namespace's); a root provider (the operator) may purge any."""
        lifecycle = self._lifecycle("purge")  # an unsupported backend says so before any namespace rule
        mine = self.namespace or ""
        if mine:
            if namespace is None and record_id is None:
                namespace = mine
            elif namespace is not None and not _within(scopes.check_namespace(namespace), mine):
                raise PermissionDeniedError(
                    f"a provider in namespace {mine!r} cannot purge namespace {namespace!r} (only {mine!r} and below)"
                )
            if record_id is not None:
                versions = (await self.history(record_id, session_id=session_id, user_id=user_id)).versions
                theirs = (versions[-1].namespace or "") if versions else ""
                if not _within(theirs, mine):
                    raise PermissionDeniedError(
                        f"record {record_id!r} is in namespace {theirs!r}, outside {mine!r}: this provider cannot purge it"
                    )
                with scopes.viewing(Caller(namespace=theirs).own_view()):  # the backend finds it in its own namespace
                    return await lifecycle.purge(record_id, session_id=session_id, user_id=user_id)
        return await lifecycle.purge(record_id, session_id=session_id, user_id=user_id, namespace=namespace)

    async def history(
        self,
        record_id: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
    ) -> History:
        """Every version of a visible record (live or archived), oldest first, with its events."""
        return await self._lifecycle("history").history(record_id, self._caller(session_id, user_id, namespace, isolation))

    async def restore(
        self,
        record_id: str,
        *,
        version: int | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
    ) -> MemoryRecord:
        """Bring back a forgotten/swept record, or make ``version`` (default: the previous one) current."""
        restored = await self._lifecycle("restore").restore(
            record_id, self._caller(session_id, user_id, namespace, isolation), version=version
        )
        self._embed_soon()  # its vector may have been dropped while it was archived
        return restored

    async def undo(
        self, *, session_id: str | None = None, user_id: str | None = None, namespace: str | None = None, isolation: str | None = None
    ) -> Event:
        """Reverse this caller's last change not undone yet; returns the event it reversed."""
        reversed_event = await self._lifecycle("undo").undo(self._caller(session_id, user_id, namespace, isolation))
        self._embed_soon()  # an undone forget brings back a record whose vector may have been dropped
        return reversed_event

    async def events(
        self,
        *,
        record_id: str | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
        limit: int | None = None,
    ) -> builtins.list[Event]:
        """Events of records the caller may see, oldest first."""
        return await self._lifecycle("events").events(
            self._caller(session_id, user_id, namespace, isolation), record_id=record_id, limit=limit
        )

    async def provenance(
        self,
        record_id: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
    ) -> dict[str, Any]:
        """Who created and last changed a visible record."""
        return await self._lifecycle("provenance").provenance(record_id, self._caller(session_id, user_id, namespace, isolation))

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
        namespace: str | None = None,
        isolation: str | None = None,
        anonymous: bool = False,
        **options: Any,
    ) -> "ConsolidationReport":
        """Consolidate memory without destroying it (merge near-duplicates, TTL, scope-path, decay; lint); see
        :mod:`agent_memory.consolidate`. Changes are archives (restorable), at most ``max_share`` (default 10%).

        Default: the deterministic pass over every partition (or over what ``session_id``/``user_id`` see, when
        given). ``anonymous=True`` (an agent run's route: :class:`MemoryHooks`' ``consolidate_every``): a call with
        no session, user or namespace is an anonymous caller (the project and global records of its namespace),
        never the operator. ``worker=True``: the consolidate worker of the profile reviews that plan for the caller
        and acts on it (fails open: a model error is reported, never raised)."""
        from agent_memory.consolidate import consolidate_backend, fire_archived

        if not worker:
            # an agent in a namespace consolidates its own namespace; only a root caller with no identity is the
            # operator, and only when it did not come from a run (``anonymous``)
            who = anonymous or session_id or user_id or namespace or self.namespace
            caller = self._caller(session_id, user_id, namespace, isolation) if who else None
            return await consolidate_backend(self.backend, dry_run=dry_run, max_share=max_share, caller=caller, **options)
        from agent_memory.agents.workers.consolidate import run_consolidate

        await self._loaded_profile()
        report = await run_consolidate(
            self.backend,
            caller=self._caller(session_id, user_id, namespace, isolation),
            worker=lambda: self.profile.consolidate,
            max_share=max_share,
            dry_run=dry_run,
            **options,
        )
        await fire_archived(self.backend, report)
        files = capability(self.backend, FilesBackend)
        if files is not None:  # the worker's own run joins the history beside the plan it reviewed
            from agent_memory.consolidate.governance import record_run

            store = files.store
            report.run_id = await asyncio.to_thread(
                record_run,
                store.root,
                report,
                [],
                self._caller(session_id, user_id, namespace, isolation),
                durable=store.durable,
                worker=True,
            )
        return report

    async def reflect(
        self,
        question: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
        timeout_s: float | None = None,
    ) -> "Reflection":
        """A synthesised answer to ``question`` citing the records it rests on (the reflect worker). Never raises."""
        from agent_memory.agents.workers.reflect import run_reflect

        await self._loaded_profile()
        return await run_reflect(
            self.backend,
            question,
            caller=self._caller(session_id, user_id, namespace, isolation),
            worker=lambda: self.profile.reflect,
            timeout_s=timeout_s,
        )

    # -- episodes (one per agent run; files backend) -------------------------------------
    async def record_episode(
        self, goal: str, *, session_id: str | None = None, user_id: str | None = None, namespace: str | None = None, **facts: Any
    ) -> "Episode":
        """Store the episode of one run (in ``namespace``, else the provider's); ``facts`` as
        :func:`agent_memory.episodes.build_episode` takes them.

        With a model in the profile's ``[episode]`` section, the stored episode is then refined in the background
        (:mod:`agent_memory.agents.workers.episode`; ``await provider.flush()`` waits for it); this call never waits for it."""
        from agent_memory.episodes import build_episode

        store = self._episodes()
        async with self._seeing(namespace, None):
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
        namespace: str | None = None,
        isolation: str | None = None,
    ) -> "builtins.list[Episode]":
        """The caller's episodes: newest first, or best match for ``query`` first; ``status`` ok, failed or paused."""
        store = self._episodes()
        async with self._seeing(namespace, isolation):
            return await asyncio.to_thread(store.list, query, session_id=session_id, user_id=user_id, limit=limit, status=status)

    async def episode(
        self,
        episode_id: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
    ) -> "Episode":
        """One episode the caller may see (else :class:`~agent_memory.errors.NotFoundError`)."""
        store = self._episodes()
        async with self._seeing(namespace, isolation):
            return await asyncio.to_thread(store.get, episode_id, session_id=session_id, user_id=user_id)

    @contextlib.asynccontextmanager
    async def _seeing(self, namespace: str | None, isolation: str | None) -> AsyncIterator[tuple[str, ...]]:
        """Bind the view of this provider's caller in ``namespace``/``isolation`` (per call, else the provider's) for
        the block (:func:`agent_memory.model.scopes.viewing`): session logs and episodes read it, and their writes
        land in its first namespace, the caller's own. Threads started in the block (``asyncio.to_thread``) inherit it."""
        from agent_memory.sessions.api import caller_view

        view = await caller_view(innermost(self.backend), self._caller(namespace=namespace, isolation=isolation))
        with scopes.viewing(view):
            yield view

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
        self, messages: Iterable[Mapping[str, Any]], *, session_id: str, user_id: str | None = None, namespace: str | None = None
    ) -> "builtins.list[SessionMessage]":
        """Append messages (``{"role", "text", "at"?, "speaker"?}``) to the session's log (redacted, locked) in
        ``namespace`` (else the provider's): the same session id in two namespaces is two logs."""
        store, items = self.session_store, builtins.list(messages)
        async with self._seeing(namespace, None):
            return await asyncio.to_thread(store.append, session_id, items, user_id=user_id)

    async def _captured_log(self, logged: Sequence["SessionMessage"], *, written: int) -> None:
        """A live capture read the logged turn ``logged``: marked on its session (``consolidate.tend.mark_captured``),
        so :meth:`distill` reads only what no capture has read."""
        if not logged:
            return
        from agent_memory.consolidate.tend import mark_captured
        from agent_memory.sessions._messages import SessionDir, writer_namespace

        async with self._seeing(None, None):
            namespace = writer_namespace()  # the log's: where log_messages appended it
        first = logged[0]
        await mark_captured(self.backend, SessionDir(Path(), first.session_id, first.user_id, namespace), logged, written=written)

    async def sessions(
        self,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        limit: int | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
    ) -> "builtins.list[SessionInfo]":
        """The caller's sessions (its own, and its user's, in its namespace view), most recently active first."""
        store = self.session_store
        async with self._seeing(namespace, isolation):
            return await asyncio.to_thread(store.sessions, session_id=session_id, user_id=user_id, limit=limit)

    async def session(
        self,
        target: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        limit: int | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
    ) -> "tuple[SessionInfo, builtins.list[SessionMessage]]":
        """One visible session and its messages (``limit``: the last N); :class:`NotFoundError` otherwise."""
        from agent_memory.sessions.api import read_session

        async with self._seeing(namespace, isolation):
            return await asyncio.to_thread(read_session, self.session_store, target, session_id, user_id, limit)

    async def summarize_session(
        self,
        target: str | None = None,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        force: bool = False,
        policy: "SummaryPolicy | None" = None,
        namespace: str | None = None,
        isolation: str | None = None,
    ) -> "SessionSummary | None":
        """Summarise a session (default: the caller's own) when due under ``policy`` or ``force``; fails open.

        The summary is written into the log of ``namespace`` (per call, else the provider's) only, never an
        ancestor's the caller may read (``isolation`` is accepted for symmetry; a write needs no view)."""
        from agent_memory.agents.workers.summarize import summarize_session

        await self._loaded_profile()
        with scopes.viewing(
            self._caller(session_id, user_id, namespace, isolation).own_view()
        ):  # a summary is written: the caller's own namespace's log only
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
        self,
        query: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        limit: int = 5,
        namespace: str | None = None,
        isolation: str | None = None,
    ) -> "builtins.list[dict[str, Any]]":
        """The caller's sessions best matching ``query`` by their summaries, each with its best messages."""
        from agent_memory.sessions.contextual import search_sessions

        async with self._seeing(namespace, isolation):
            return await asyncio.to_thread(
                search_sessions, self.session_store, query, session_id=session_id, user_id=user_id, limit=limit, embedder=self._embedder()
            )

    # -- memory that tends itself: the run's end, idle sessions, raw logs distilled (agent_memory.consolidate.tidy/tend)
    async def tidy(
        self,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
        max_share: float | None = None,
        dry_run: bool = False,
        workspace: "str | os.PathLike[str] | None" = None,
        rules: Sequence[str] | None = None,
        now: Any = None,
        anonymous: bool = False,
    ) -> "TidyReport":
        """The run's-end tidy pass (the seeds' ``extract()``): archive expired, orphaned (``scope_path`` gone) and
        exactly duplicated records, at most ``max_share`` (default 1%, at least one) of what it looks at, and refresh
        ``MEMORY.md``; each change an ``archived`` event (``undo``/``restore`` bring it back). With ``session_id`` or
        ``user_id`` (or in a namespace: ``namespace`` per call, else this provider's): only what that caller may change
        (see :mod:`agent_memory.consolidate.tidy`); else every partition of every namespace (the operator's pass),
        unless ``anonymous=True`` (the run's-end route, :meth:`tidy_in_background`): then a call with no identity is
        an anonymous caller (the project and global records of its namespace), never the operator.
        ``now`` (an aware datetime): the clock expiry is judged by (default: now)."""
        from agent_memory.consolidate.tidy import TIDY_RULES, TIDY_SHARE, tidy_backend

        who = anonymous or session_id or user_id or namespace or self.namespace
        caller = self._caller(session_id, user_id, namespace, isolation) if who else None
        return await tidy_backend(
            self.backend,
            caller=caller,
            max_share=TIDY_SHARE if max_share is None else max_share,
            dry_run=dry_run,
            workspace=None if workspace is None else Path(workspace),
            rules=TIDY_RULES if rules is None else tuple(rules),
            now=now,
        )

    def tidy_in_background(
        self, *, session_id: str | None = None, user_id: str | None = None, namespace: str | None = None, isolation: str | None = None
    ) -> "asyncio.Task[Any]":
        """Schedule :meth:`tidy` for this caller after a run (:meth:`flush` and :meth:`aclose` await it). A pass still
        pending for the same caller is returned instead of starting a second one. Failures are logged, never raised.
        A run with no session, user or namespace is an anonymous caller here, never the operator (``anonymous=True``)."""
        tidying: dict[Caller, asyncio.Task[Any]] = self.__dict__.setdefault("_tidying", {})
        key = self._caller(session_id, user_id, namespace, isolation)
        task = tidying.get(key)
        if task is not None and not task.done():
            return task

        before = [t for t in self._pending if t not in tidying.values()]  # the run's capture first: its writes are tidied too

        async def run() -> Any:
            if before:
                await asyncio.wait(before)
            try:
                return await self.tidy(session_id=session_id, user_id=user_id, namespace=namespace, isolation=isolation, anonymous=True)
            except UnsupportedError:  # a backend without tidy (neither files nor PostgreSQL): nothing to tend, no warning
                return None
            except Exception as exc:  # memory upkeep never breaks the app
                logger.warning("agent_memory: the run's-end tidy pass failed: %r", exc)
                return None

        task = self.background(run())
        tidying[key] = task
        return task

    async def summarize_idle(
        self,
        *,
        user_id: str | None = None,
        policy: "SummaryPolicy | None" = None,
        limit: int = 20,
        now: Any = None,
        namespace: str | None = None,
    ) -> "IdleReport":
        """Summarise every session past the summary policy (idle ≥ 30 min or ≥ 20 new messages; ``policy``), of
        ``user_id`` when given, at most ``limit`` sessions a call; each a ``summarized`` event. ``now``: the clock.
        The logs of ``namespace`` (per call), else of this provider's; at the root every namespace's (as :meth:`distill`)."""
        from agent_memory.consolidate.tend import summarize_idle

        await self._loaded_profile()
        return await summarize_idle(
            self.backend,
            self.session_store,
            worker=lambda: self.profile.summarize,
            user_id=user_id,
            policy=policy,
            limit=limit,
            now=now,
            namespace=self._caller(namespace=namespace).namespace,
        )

    def schedule_idle_summaries(self, every_s: float = 300.0, **options: Any) -> "IdleSummaries":
        """Start an opt-in background schedule running :meth:`summarize_idle` (``options``) every ``every_s``
        seconds, in a long-lived app; :meth:`aclose` stops it (or its own ``stop()``)."""
        from agent_memory.consolidate.tend import IdleSummaries

        sleep = options.pop("sleep", asyncio.sleep)  # a test's clock
        schedule = IdleSummaries(lambda: self.summarize_idle(**options), every_s, sleep=sleep)
        self.__dict__.setdefault("_schedules", []).append(schedule)
        return schedule.start()

    async def distill(
        self,
        *,
        user_id: str | None = None,
        session: str | None = None,
        limit: int = 500,
        extractor: "Extractor | None" = None,
        namespace: str | None = None,
    ) -> "DistillReport":
        """Run the capture worker (the profile's, or ``extractor`` / the provider's ``turn_extractor``) over session-log
        messages not captured yet, imported histories included; what was read is marked durably, so a second call
        stores nothing twice. Facts land in the partition of each session's owner, in ``namespace`` (per call), else this
        provider's. At most ``limit`` messages a call."""
        from agent_memory.consolidate.tend import distill_sessions

        extractor = extractor or self.turn_extractor
        if extractor is None:
            await self._loaded_profile()
        report = await distill_sessions(
            self.backend,
            self.session_store,
            worker=lambda: self.profile.capture,
            extractor=extractor,
            user_id=user_id,
            session=session,
            limit=limit,
            namespace=self._caller(namespace=namespace).namespace,
        )
        self._embed_soon()
        return report

    async def _stop_schedules(self) -> None:
        for schedule in self.__dict__.pop("_schedules", []):
            await schedule.stop()

    # -- links between memories (files and PostgreSQL; docs/links.md) ----------------
    async def links(
        self,
        record_id: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
    ) -> "RecordLinks":
        """A visible record's outgoing ``[[id]]``/``[[Title]]`` links and its backlinks, resolved among the records the
        caller may see (an unresolved link names no hidden record); :class:`NotFoundError` if the record is hidden."""
        from agent_memory.backends.base import LinksBackend

        caller = self._caller(session_id, user_id, namespace, isolation)
        return await require(self.backend, LinksBackend, "links").links(record_id, caller)

    async def _search_linked(self, query: str, caller: Caller, *, limit: int, **options: Any) -> SearchResult:
        """:meth:`search` with ``expand_links=True``: the first hits' linked records (outgoing and backlinks, only
        those the caller may see) added at a discounted score (:mod:`agent_memory.search.links`) — only those that
        pass every filter of the search (:class:`~agent_memory.search.links.LinkedFilter`); a link to a version the
        search would not show follows ``superseded_by`` to the one it would."""
        from agent_memory.backends.base import LinksBackend
        from agent_memory.errors import AgentMemoryError, NotFoundError
        from agent_memory.search.links import FOLLOW, SEEDS, LinkedFilter, expand_hits
        from agent_memory.search.types import SearchHit

        backend = require(self.backend, LinksBackend, "links")
        result = await self.backend.search(query, caller, limit=limit, **options)
        admit = LinkedFilter(options)  # after the search: a bad filter is the search's own error
        linked: dict[str, builtins.list[SearchHit]] = {}
        for seed in result.hits[:SEEDS]:
            if admit.no_links:
                break
            try:
                found = await backend.links(seed.id, caller)
            except AgentMemoryError:  # not a record (a session message of a contextual search) or gone meanwhile
                continue
            ids = dict.fromkeys([x.record_id for x in found.outgoing if x.record_id] + [x.record_id for x in found.backlinks])
            for rid in ids:
                try:
                    rec = await self.backend.get(rid, caller)
                    for _ in range(FOLLOW):  # an older version: the one this search shows instead, if the caller sees it
                        if admit.in_time(rec) or not rec.superseded_by:
                            break
                        rec = await self.backend.get(rec.superseded_by, caller)
                except NotFoundError:  # gone (or expired) since the link was read, or its newer version is hidden
                    continue
                if not admit.admits(rec):
                    continue
                end = rec.body_line + max(0, rec.content.count("\n"))
                hit = SearchHit(rec.id, str(rec.path), rec.body_line, end, rec.content[:300], 0.0, rec.title, rec.kind, rec.scope.value)
                hit = dataclasses.replace(
                    hit,
                    tags=rec.tags,
                    updated=rec.updated,
                    recorded_at=rec.created,
                    happened_at=rec.happened_at,
                    valid_from=rec.valid_from,
                    valid_to=rec.valid_to,
                    superseded_by=rec.superseded_by,
                )
                linked.setdefault(seed.id, []).append(hit)
        merged = expand_hits(result.hits, linked, limit=limit)
        return SearchResult(admit.scored(merged, result.hits), result.trace)

    # -- curated ("hot") memory: short lines first in the core block (agent_memory.model.curated) ------------
    async def curate(
        self,
        text: str | None = None,
        *,
        priority: int | None = None,
        scope: Scope | str = "user",
        replace: str | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
        source: str = "tool",
    ) -> RememberResult:
        """Add one curated line (priority 1-10, default 5) to ``user_id``'s curated memory (``scope="project"``: a line
        shared by every caller), or with ``replace=ID`` change the text and/or priority of one of the caller's lines.

        Curated lines come first in :meth:`inject`, highest priority first, then newest. A line is one line of at most
        :data:`~agent_memory.model.curated.MAX_CHARS` characters, redacted like every write; a partition holds at most
        :data:`~agent_memory.model.curated.MAX_LINES` (:class:`~agent_memory.model.curated.CuratedLimitError`)."""
        from agent_memory.agents.curated import add_line, replace_line

        caller = self._caller(session_id, user_id, namespace, isolation)
        if replace is not None:
            return await replace_line(self.backend, caller, replace, text, priority=priority, source=source)
        if text is None:
            raise InvalidInputError("curate needs the text of the line (or replace=ID with a new text or priority)")
        return await add_line(self.backend, caller, text, priority=priority, scope=scope, source=source)

    async def curated(
        self,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
        scope: Scope | str | None = None,
    ) -> "builtins.list[CuratedLine]":
        """The curated lines the caller's core block starts with (its user's and the shared ones), in block order."""
        from agent_memory.agents.curated import curated_lines

        return await curated_lines(self.backend, self._caller(session_id, user_id, namespace, isolation), scope=scope)

    async def uncurate(
        self,
        record_id: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
    ) -> bool:
        """Remove one of the caller's curated lines (archived: :meth:`undo` or :meth:`restore` brings it back);
        another user's line, or a record that is no curated line, is :class:`~agent_memory.errors.NotFoundError`."""
        from agent_memory.agents.curated import remove_line

        return await remove_line(self.backend, self._caller(session_id, user_id, namespace, isolation), record_id)

    # -- contradictions, dream governance, episode deletion (issue 30) --------------------
    async def contradict(
        self,
        text: str,
        *,
        key: str | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
        exclude: Iterable[str] = (),
        limit: int = 8,
    ) -> "builtins.list[Contradiction]":
        """The records the caller may see that state a different value than ``text`` for the same subject, best
        first (see :mod:`agent_memory.consolidate.contradict`); ``key``: the memory_key ``text`` would be stored
        under; ``exclude``: ids never reported. Restatements, look-alikes and superseded versions are not returned."""
        from agent_memory.consolidate.contradict import backend_contradictions
        from agent_memory.model.records import check_content

        check_content(text)
        caller = self._caller(session_id, user_id, namespace, isolation)
        return await backend_contradictions(self.backend, text, caller, key=key, exclude=exclude, limit=limit)

    async def delete_episode(
        self, episode_id: str, *, session_id: str | None = None, user_id: str | None = None, namespace: str | None = None
    ) -> "Episode":
        """Delete one episode the caller may see in its own namespace (``namespace``, else the provider's: a change
        never reaches an ancestor's) (evented; :meth:`restore_episode` brings it back); returns it."""
        store = self._episodes()
        with scopes.viewing(self._caller(namespace=namespace).own_view()):  # to_thread carries the view
            return await asyncio.to_thread(store.delete, episode_id, session_id=session_id, user_id=user_id)

    async def restore_episode(
        self, episode_id: str, *, session_id: str | None = None, user_id: str | None = None, namespace: str | None = None
    ) -> "Episode":
        """Bring back an episode :meth:`delete_episode` deleted, if the caller may see it in its own namespace
        (``namespace``, else the provider's) (evented); returns it."""
        store = self._episodes()
        with scopes.viewing(self._caller(namespace=namespace).own_view()):
            return await asyncio.to_thread(store.restore, episode_id, session_id=session_id, user_id=user_id)

    async def consolidation_history(
        self,
        *,
        since: str | None = None,
        limit: int | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
    ) -> "builtins.list[dict[str, Any]]":
        """Consolidation runs (dry or applied), newest first: when, what changed, what was skipped and why, the drift
        found — only the changes of records the caller may see (see :mod:`agent_memory.consolidate.governance`).
        ``since``: an ISO date or instant. Files backend (where consolidation runs)."""
        from agent_memory.consolidate import store_of
        from agent_memory.consolidate.governance import history

        root = store_of(self.backend).root
        caller = self._caller(session_id, user_id, namespace, isolation)
        files = capability(self.backend, FilesBackend)
        view = files.view(caller) if files is not None else caller.view(None)  # without a registry: no shared siblings
        return await asyncio.to_thread(
            history, root, session_id=session_id, user_id=user_id, since=since, limit=limit, namespace=caller.namespace, view=view
        )

    async def consolidation_digest(
        self,
        *,
        since: str | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        namespace: str | None = None,
        isolation: str | None = None,
    ) -> RememberResult | None:
        """Write one ordinary record (kind ``summary``, tag ``digest``) saying what consolidation changed since
        ``since`` (default: 7 days ago) among the records the caller may see, in the caller's scope (its user, else its
        session, else project); evented like any write. None when nothing changed."""
        import datetime as dt

        from agent_memory.consolidate.governance import _when, digest_text

        start, until = _when(since, dt.timedelta(days=7)), _when(None, dt.timedelta(0))
        runs = await self.consolidation_history(
            since=start, session_id=session_id, user_id=user_id, namespace=namespace, isolation=isolation
        )
        text = digest_text(runs, start, until)
        if text is None:
            return None
        scope = "user" if user_id else "session" if session_id else "project"
        title = f"Memory maintenance digest {start[:10]} to {until[:10]}"
        return await self.remember(
            text,
            title=title,
            kind="summary",
            scope=scope,
            session_id=session_id,
            user_id=user_id,
            namespace=namespace,
            tags=("digest",),
            source="consolidation",
        )


def _within(namespace: str, root: str) -> bool:
    """Whether ``namespace`` is ``root`` or one of its descendants."""
    return namespace == root or namespace.startswith(root + "/")


def _use_recorded_embedder(vectors: VectorsBackend, found: RecordedEmbedder | None) -> None:
    """Attach the embedder recorded with a store's vectors (``found``), if it has vectors, has no embedder yet, and
    that embedder can be rebuilt and run here (:mod:`agent_memory.backends.vector_choice` decides); otherwise
    search stays lexical, and a warning says why when vectors go unused."""
    from agent_memory.backends.vector_choice import choose

    choice = choose(found, None, None)
    if vectors.embedder is not None or (choice.spec is None and choice.notice is None):
        return
    log = logging.getLogger("agent_memory")
    if choice.spec is None:
        log.info("%s", choice.notice)  # a user function's vectors: the application passes its embedder
        return
    try:
        vectors.use_embedder(choice.spec)
        from agent_memory.embeddings import check_installed

        check_installed(vectors.embedder)
    except Exception as exc:  # e.g. the embeddings extra gone since the vectors were made: lexical, said once
        vectors.use_embedder(None)
        log.warning("not using this store's vectors (%s): %s; searching lexically", found.model if found else "?", exc)
