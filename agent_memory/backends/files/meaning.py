"""The store's link to the meaning layer: an optional embedder, its derived vectors, and search modes.

Imported only when a store is given an embedder or asked for a non-lexical mode, so lexical users never load
numpy or a model. Vectors are derived data: a write never waits for them; :func:`embed` catches up in batches.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from agent_memory.backends.files.parts import StoreParts
from agent_memory.errors import InvalidInputError, needs_extra
from agent_memory.model.values import shown

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.files.vectors import VectorCache
    from agent_memory.embeddings import Embedder
    from agent_memory.model.reports import BackfillReport
    from agent_memory.search.types import SearchResult

MODES = ("lexical", "dense", "hybrid")
log = logging.getLogger("agent_memory")


class Meaning:
    """One store's embedder and vector cache (``<root>/vectors.db``)."""

    def __init__(self, store: StoreParts, embedder: Embedder | str) -> None:
        with needs_extra("an embedder (dense and hybrid search)"):  # numpy: the embeddings extra
            from agent_memory.backends.files.vectors import VectorCache
        from agent_memory.embeddings import make_embedder

        made = make_embedder(embedder)
        if made is None:
            raise InvalidInputError("embedder 'none' given: leave it out for lexical search")
        self.store = store
        self.embedder: Embedder = made
        self.vectors: VectorCache = VectorCache.for_root(store.root)
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self.last_report: BackfillReport | None = None

    def embed(self, progress: Callable[[int, int], None] | None = None, stop: Callable[[], bool] | None = None) -> BackfillReport:
        """Embed every live record not embedded yet by this model (and drop vectors nothing uses). What the
        embedder needs not being installed raises :class:`~agent_memory.errors.MissingExtraError` first."""
        from agent_memory.backends.files.vectors import live_items
        from agent_memory.embeddings import check_installed

        check_installed(self.embedder)

        self.store.open()
        return self.vectors.backfill(live_items(self.store.index), self.embedder, progress=progress, prune=True, stop=stop)

    # -- background embedding: after writes, never in them ---------------------------------
    def kick(self) -> None:
        """Ask the background embedder to catch up (returns at once; starts its thread on first use).

        Kicks while a backfill runs coalesce into one more pass, so a burst of writes is embedded in batches."""
        with self._lock:
            if self._stopping:
                return
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="agent-memory-embed", daemon=True)
                self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        while not self._stopping:
            self._wake.wait()
            self._idle.clear()  # before clearing the wake-up, so drain() never sees a gap
            self._wake.clear()
            try:
                if not self._stopping:
                    self.last_report = self.embed(stop=lambda: self._stopping)
                    if self.last_report.error and self.last_report.error != "stopped":
                        log.warning("background embedding stopped: %s", self.last_report.error)
            except Exception as exc:  # fail open: vectors are derived data, a write never depends on them
                log.warning("background embedding failed: %s", exc)
            finally:
                self._idle.set()

    @property
    def busy(self) -> bool:
        """True while a background pass is running or requested."""
        thread = self._thread
        return thread is not None and thread.is_alive() and (self._wake.is_set() or not self._idle.is_set())

    def stop(self, timeout: float | None = 30.0) -> bool:
        """Stop background embedding: the batch in flight finishes, the rest is abandoned (the next
        :meth:`embed` or kick catches up). True when the thread has ended within ``timeout``."""
        with self._lock:
            self._stopping = True
            thread = self._thread
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            return not thread.is_alive()
        return True

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until no background pass is pending or running (True), or ``timeout`` passes (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.busy:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    def search(self, query: str, mode: str, lexical: Callable[..., SearchResult], **options: Any) -> SearchResult:
        with needs_extra(f"{mode} search"):
            from agent_memory.backends.files.hybrid import hybrid_search

        return hybrid_search(
            self.store,
            self.vectors,
            self.embedder,
            query,
            mode=mode,  # type: ignore[arg-type]
            lexical_search=lexical,
            **options,
        )


def resolve_mode(mode: str | None, meaning: Meaning | None) -> str:
    """``None`` → hybrid with an embedder, else lexical; dense/hybrid without an embedder is a typed error."""
    if mode is None:
        return "hybrid" if meaning is not None else "lexical"
    if mode not in MODES:
        raise InvalidInputError(f"mode must be one of {', '.join(MODES)}, not {shown(mode)}")
    if mode != "lexical" and meaning is None:
        raise InvalidInputError(f"mode {mode!r} needs an embedder (MemoryStore(embedder='local') or a litellm model id)")
    return mode


class StoreWithMeaning(StoreParts, Protocol):
    """A store that may carry a :class:`Meaning` (its embedder and vectors): what :func:`attach` gives one and a
    purge drops vectors through."""

    meaning: Meaning | None


def attach(store: StoreWithMeaning, embedder: Embedder | str) -> Meaning:
    """Give an open store an embedder after construction (the CLI's ``--embedder``); returns its :class:`Meaning`."""
    meaning = Meaning(store, embedder)
    store.meaning = meaning
    return meaning
