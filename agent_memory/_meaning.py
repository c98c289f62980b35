"""The store's link to the meaning layer: an optional embedder, its derived vectors, and search modes.

Imported only when a store is given an embedder or asked for a non-lexical mode, so lexical users never load
numpy or a model. Vectors are derived data: a write never waits for them; :func:`embed` catches up in batches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import InvalidInputError

if TYPE_CHECKING:  # pragma: no cover
    from .embeddings import Embedder
    from .search import SearchResult
    from .store import MemoryStore
    from .vectors import BackfillReport, VectorCache

MODES = ("lexical", "dense", "hybrid")


class Meaning:
    """One store's embedder and vector cache (``<root>/vectors.db``)."""

    def __init__(self, store: MemoryStore, embedder: Embedder | str) -> None:
        from .embeddings import make_embedder
        from .vectors import VectorCache

        made = make_embedder(embedder)
        if made is None:
            raise InvalidInputError("embedder 'none' given: leave it out for lexical search")
        self.store = store
        self.embedder: Embedder = made
        self.vectors: VectorCache = VectorCache.for_root(store.root)

    def embed(self, progress: Callable[[int, int], None] | None = None) -> BackfillReport:
        """Embed every live record not embedded yet by this model (and drop vectors nothing uses)."""
        from .vectors import live_items

        self.store.open()
        return self.vectors.backfill(live_items(self.store.index), self.embedder, progress=progress, prune=True)

    def search(self, query: str, mode: str, lexical: Callable[..., SearchResult], **options: Any) -> SearchResult:
        from .hybrid import hybrid_search

        return hybrid_search(self.store, self.vectors, self.embedder, query, mode=mode,  # type: ignore[arg-type]
                             lexical_search=lexical, **options)


def resolve_mode(mode: str | None, meaning: Meaning | None) -> str:
    """``None`` → hybrid with an embedder, else lexical; dense/hybrid without an embedder is a typed error."""
    if mode is None:
        return "hybrid" if meaning is not None else "lexical"
    if mode not in MODES:
        raise InvalidInputError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if mode != "lexical" and meaning is None:
        raise InvalidInputError(f"mode {mode!r} needs an embedder (MemoryStore(embedder='local') or a litellm model id)")
    return mode
