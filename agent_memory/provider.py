"""``MemoryProvider``: the one façade applications hold.

Async first. Store operations run in a worker thread over :class:`~agent_memory.store.MemoryStore`;
recall and capture run the provider-owned worker agents (imported lazily, so using only
the store never imports pydantic-ai or litellm).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .core import DEFAULT_CORE_BUDGET, MemoryBlock, inject
from .records import MemoryRecord, Scope
from .search import SearchHit, SearchResult
from .store import DoctorReport, MemoryDraft, MemoryStore, OnExisting, RememberResult, SweepReport

if TYPE_CHECKING:  # pragma: no cover
    from .profiles import Profile
    from .workers.capture import CaptureResult, Extractor
    from .workers.recall import RecallResult

T = TypeVar("T")


class MemoryProvider:
    """Durable memory for one root, with private recall and capture workers.

    ``profile`` names a model profile (``"offline"`` by default: a deterministic worker,
    no LLM) or a path to a TOML file. ``turn_extractor``/``compaction_extractor`` replace
    the capture worker with a plain function returning :class:`MemoryDraft` objects.
    Other keyword options go to :class:`MemoryStore` (``engine``, ``tokenizer``,
    ``stop_words``, ``snippet_lines``, ``default_scope``, …).
    """

    def __init__(
        self,
        root: str | os.PathLike[str] = ".agent-memory",
        *,
        profile: "str | os.PathLike[str] | Profile" = "offline",
        turn_extractor: "Extractor | None" = None,
        compaction_extractor: "Extractor | None" = None,
        **store_options: Any,
    ) -> None:
        self.store = MemoryStore(root, **store_options)
        self._profile_spec = profile
        self._profile: Profile | None = None
        self.turn_extractor = turn_extractor
        self.compaction_extractor = compaction_extractor
        self._pending: set[asyncio.Task[Any]] = set()

    @property
    def root(self) -> Path:
        return self.store.root

    @property
    def profile(self) -> "Profile":
        """The resolved model profile (loaded on first use)."""
        if self._profile is None:
            from .profiles import load_profile

            self._profile = load_profile(self._profile_spec)
        return self._profile

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(partial(fn, *args, **kwargs))

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
    ) -> RememberResult:
        """Store one memory; returns its id and ``created|duplicate|appended|replaced|skipped``."""
        return await self._run(
            self.store.remember, content, title=title, kind=kind, scope=scope, session_id=session_id, user_id=user_id,
            tags=tags, memory_key=memory_key, on_existing=on_existing, source=source, expires=expires,
            importance=importance, metadata=metadata,
        )

    async def remember_many(self, drafts: Iterable[MemoryDraft], *, source: str = "import", **kwargs: Any) -> list[RememberResult]:
        """Bulk write (one lock and transaction per batch)."""
        return await self._run(self.store.remember_many, list(drafts), source=source, **kwargs)

    async def search(
        self,
        query: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        tags: Iterable[str] = (),
        limit: int = 10,
        **filters: Any,
    ) -> list[SearchHit]:
        """Ranked, scope-visible hits with snippets and line ranges."""
        result = await self._run(self.store.search, query, session_id=session_id, user_id=user_id, tags=tags, limit=limit, **filters)
        return result.hits

    async def search_trace(self, query: str, **kwargs: Any) -> SearchResult:
        """Like :meth:`search` but returns the per-stage trace as well."""
        return await self._run(self.store.search, query, trace=True, **kwargs)

    async def get(self, record_id: str, *, session_id: str | None = None, user_id: str | None = None) -> MemoryRecord:
        return await self._run(self.store.get, record_id, session_id=session_id, user_id=user_id)

    async def list(self, **filters: Any) -> list[MemoryRecord]:
        return await self._run(self.store.list, **filters)

    async def forget(self, record_id: str, *, session_id: str | None = None, user_id: str | None = None) -> bool:
        return await self._run(self.store.forget, record_id, session_id=session_id, user_id=user_id)

    async def sweep(self) -> SweepReport:
        return await self._run(self.store.sweep)

    async def reindex(self) -> Any:
        return await self._run(self.store.reindex)

    async def doctor(self) -> DoctorReport:
        return await self._run(self.store.doctor)

    async def inject(self, budget: int = DEFAULT_CORE_BUDGET, *, session_id: str | None = None, user_id: str | None = None) -> MemoryBlock:
        """The core block for one caller: ``USER.md`` + visible ``MEMORY.md`` lines within ``budget`` tokens."""
        return await self._run(inject, self.store, budget, session_id=session_id, user_id=user_id)

    # -- workers -------------------------------------------------------------------------
    async def recall(
        self, message: str, *, session_id: str | None = None, user_id: str | None = None, summary_tokens: int | None = None,
    ) -> "RecallResult":
        """One compact, cited summary of what memory knows about ``message``. Never raises."""
        from .workers.recall import run_recall

        return await run_recall(self, message, session_id=session_id, user_id=user_id, summary_tokens=summary_tokens)

    async def capture_turn(
        self, input: str, output: str | None = None, *, session_id: str | None = None, user_id: str | None = None,
    ) -> "CaptureResult":
        """Let the capture worker (or ``turn_extractor``) store durable facts from one turn."""
        from .workers.capture import capture_turn

        return await capture_turn(self, input, output, session_id=session_id, user_id=user_id)

    async def capture_before_compaction(
        self, removed_messages: Sequence[Any], next_summary: str | None = None, *,
        session_id: str | None = None, user_id: str | None = None,
    ) -> "CaptureResult":
        """Last-chance capture from messages about to be compacted away (await before committing)."""
        from .workers.capture import capture_before_compaction

        return await capture_before_compaction(self, removed_messages, next_summary, session_id=session_id, user_id=user_id)

    def capture_turn_in_background(self, input: str, output: str | None = None, **kwargs: Any) -> "asyncio.Task[CaptureResult]":
        """Schedule :meth:`capture_turn` without waiting; :meth:`flush` awaits it."""
        return self.background(self.capture_turn(input, output, **kwargs))

    def background(self, coro: Awaitable[T]) -> "asyncio.Task[T]":
        task: asyncio.Task[T] = asyncio.ensure_future(coro)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        return task

    async def flush(self) -> list[Any]:
        """Wait for every pending background capture; returns their results (exceptions included)."""
        results: list[Any] = []
        while self._pending:
            batch = list(self._pending)
            results.extend(await asyncio.gather(*batch, return_exceptions=True))
            self._pending.difference_update(batch)
        return results

    def close(self) -> None:
        self.store.close()
