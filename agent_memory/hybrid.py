"""Hybrid search: the lexical engine, the vector cache and the scoring pipeline composed for one query.

This is the seam ``MemoryStore.search(mode=…)`` calls. Visibility is applied on both sides before
any top-k: the lexical engine filters inside its SQL, the dense side searches only the
``{id: content hash}`` map of records this caller may see (with the same scope/kind/date filters).
An embedder failure never fails a search: it falls back to lexical and says so in the trace.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from . import _reads
from .embeddings import Embedder, EmbeddingError
from .errors import InvalidInputError
from .fusion import Pipeline, QueryContext, default_pipeline, index_confidence
from .index import scope_filter_sql
from .search import Fts5Engine, SearchHit, SearchRequest, SearchResult, date_filter_sql
from .vectors import VectorCache, visible_for_hashes, visible_hashes

if TYPE_CHECKING:  # pragma: no cover
    from .store import MemoryStore

__all__ = ["hybrid_search", "Mode", "MODES"]

Mode = Literal["lexical", "dense", "hybrid"]
MODES: tuple[str, ...] = ("lexical", "dense", "hybrid")


def _filters(store: MemoryStore, **filters: Any) -> tuple[str, dict[str, Any]]:
    """SQL (alias ``r``) for the scope/kind/date filters of a search, as the lexical engine applies them."""
    dates = _reads.date_filters(created_after=filters.get("created_after"), created_before=filters.get("created_before"),
                          updated_after=filters.get("updated_after"), updated_before=filters.get("updated_before"))
    req = SearchRequest(query="", scopes=_reads.scopes_of(filters.get("scope")), kinds=_reads.kinds_of(filters.get("kind")),
                        created_after=dates[0], created_before=dates[1], updated_after=dates[2], updated_before=dates[3])
    params: dict[str, Any] = {}
    sql = scope_filter_sql(req.scopes) + date_filter_sql(req, params)
    return (sql[len(" AND "):] if sql.startswith(" AND ") else sql), params


def _dense_hits(store: MemoryStore, ids: Sequence[str]) -> dict[str, SearchHit]:
    """Hits for records only the dense side found: the first lines of the body as the snippet."""
    if not ids:
        return {}
    rows = store.index.guarded(lambda c: c.execute(
        "SELECT r.*, f.body AS body FROM records r JOIN fts f ON f.rowid = r.rowid"
        " WHERE r.id IN (SELECT value FROM json_each(?))", (json.dumps(list(ids)),)).fetchall())
    out: dict[str, SearchHit] = {}
    for row in rows:
        lines = (row["body"] or "").splitlines() or [""]
        shown = lines[:3]
        start = int(row["body_line"] or 1)
        out[row["id"]] = SearchHit(
            id=row["id"], path=str(store.records_dir / row["file"]), line_start=start, line_end=start + len(shown) - 1,
            snippet="\n".join(shown)[:320], score=0.0, title=row["title"] or "", kind=row["kind"] or "",
            scope=row["scope"] or "", tags=tuple(json.loads(row["tags"] or "[]")), updated=row["updated"] or "",
            metadata=json.loads(row["metadata"] or "{}"))
    return out


def _dense(store: MemoryStore, cache: VectorCache, model: str, q: npt.NDArray[np.float32], pool: int,
           session_id: str | None, user_id: str | None, where: str, params: dict[str, Any],
           stats: dict[str, float]) -> tuple[list[tuple[str, float]], str]:
    """The ``pool`` nearest records this caller may see (``stats``: the query's cosine mean and std).

    Visibility is checked on a margin of the nearest vectors first (one indexed lookup); when too few of
    them are visible, the whole visible map is built and searched, so the answer is always exactly the
    nearest ``pool`` among visible records.
    """
    margin = 2 * pool + 50
    near = cache.nearest(model, q, margin, stats=stats)
    allowed = visible_for_hashes(store.index, [h for h, _ in near], session_id=session_id, user_id=user_id,
                                 where=where, params=params)
    if len(allowed) >= pool or len(near) < margin:
        return cache.search(model, q, allowed, limit=pool), f"checked on the nearest {len(near)}"
    allowed = visible_hashes(store.index, session_id=session_id, user_id=user_id, where=where, params=params)
    return cache.search(model, q, allowed, limit=pool, stats=stats), f"full visible map ({len(allowed)})"


def _hashes_of(store: MemoryStore, ids: Sequence[str]) -> dict[str, str]:
    if not ids:
        return {}
    rows = store.index.guarded(lambda c: c.execute(
        "SELECT id, content_hash FROM records WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(list(ids)),)).fetchall())
    return {r[0]: r[1] for r in rows if r[1]}


def hybrid_search(store: MemoryStore, cache: VectorCache, embedder: Embedder | None, query: str, *,
                  mode: Mode = "hybrid", limit: int = 10, session_id: str | None = None, user_id: str | None = None,
                  pipeline: Pipeline | None = None, pool: int = 100, lexical_pool: int = 100, query_vector: npt.NDArray[np.float32] | None = None,
                  trace: bool = False, now: dt.datetime | None = None,
                  lexical_search: Callable[..., SearchResult] | None = None, **filters: Any) -> SearchResult:
    """Search ``store`` lexically, densely or both; ``filters`` are those of :meth:`MemoryStore.search`.

    ``lexical_pool`` lexical and ``pool`` dense candidates enter the fusion; ``query_vector`` skips embedding the query.
    ``lexical_search`` is the store's lexical path (default ``store.search``; pass the lexical-only method once
    ``store.search`` itself dispatches on ``mode``, or this would recurse).
    """
    if mode not in MODES:
        raise InvalidInputError(f"mode must be one of {', '.join(MODES)}")
    lexical = (lexical_search or store.search)(query, limit=max(limit, lexical_pool) if mode != "lexical" else limit, session_id=session_id,
                           user_id=user_id, trace=trace, **filters)
    if mode == "lexical" or embedder is None:
        if mode != "lexical" and lexical.trace is not None:
            lexical.trace.append({"stage": "dense", "skipped": "no embedder configured"})
        lexical.hits = lexical.hits[:limit]
        return lexical
    steps: list[dict[str, Any]] | None = lexical.trace if trace else None
    try:
        q = query_vector if query_vector is not None else embedder.embed([query])[0]
        where, params = _filters(store, **filters)
        stats: dict[str, float] = {}
        dense, visible = _dense(store, cache, embedder.name, q, pool, session_id, user_id, where, params, stats)
    except EmbeddingError as exc:  # fail open: lexical results, flagged
        if steps is not None:
            steps.append({"stage": "dense", "error": str(exc), "fallback": "lexical"})
        lexical.hits = lexical.hits[:limit]
        return lexical
    if steps is not None:
        steps.append({"stage": "dense", "model": embedder.name, "visibility": visible, "found": len(dense),
                      "top": [{"id": r, "cosine": round(s, 4)} for r, s in dense[:10]]})
    by_id = {h.id: h for h in lexical.hits}
    lex_pairs = [] if mode == "dense" else [(h.id, h.score) for h in lexical.hits]
    confidence = None
    if lex_pairs and isinstance(store.engine, Fts5Engine):
        confidence = index_confidence(store.index, store.engine, query, [r for r, _ in lex_pairs[:5]])
    info = {h.id: {"updated": h.updated} for h in lexical.hits}
    chosen = pipeline or default_pipeline()
    if chosen.fuse.dense_scores is None:  # cosines for lexical hits the dense top list missed
        chosen = replace(chosen, fuse=replace(
            chosen.fuse, dense_scores=lambda ids: cache.scores(embedder.name, q, _hashes_of(store, ids))))
    ctx = QueryContext(query=query, confidence=confidence, now=now, dense_mean=stats.get("mean"), dense_std=stats.get("std"))
    ranked = chosen.run(lex_pairs, dense, ctx, info=info, limit=limit, trace=steps)
    extra = _dense_hits(store, [c.id for c in ranked if c.id not in by_id])
    hits = []
    for c in ranked:
        base = by_id.get(c.id) or extra.get(c.id)
        if base is not None:
            hits.append(replace(base, score=round(c.score, 6)))
    return SearchResult(hits, steps)
