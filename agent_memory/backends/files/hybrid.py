"""Hybrid search: the lexical engine, the vector cache and the scoring pipeline composed for one query.

This is the seam ``MemoryStore.search(mode=…)`` calls. Visibility is applied on both sides before
any top-k: the lexical engine filters inside its SQL, the dense side searches only the
``{id: content hash}`` map of records this caller may see (with the same scope/kind/date filters).
An embedder failure never fails a search: it falls back to lexical and says so in the trace.

The query is embedded on one worker thread while the lexical side runs (:class:`_Overlap`; ONNX Runtime and
sqlite3 both release the GIL), so a hybrid query's wall time is about max(embed, lexical) + dense + fusion.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

import agent_memory.model.queries as queries
from agent_memory.backends.files.fts import Fts5Engine, date_filter_sql
from agent_memory.backends.files.index import Index, scope_filter_sql, visibility_sql, visible_params
from agent_memory.backends.files.vectors import VectorCache, visible_for_hashes, visible_hashes
from agent_memory.embeddings import Embedder, EmbeddingError
from agent_memory.errors import InvalidInputError, StorageError
from agent_memory.model.records import normalize_tags
from agent_memory.search.floor import dense_floor_for, hybrid_scores
from agent_memory.search.focus import focus_query, query_words
from agent_memory.search.fusion import (
    NoiseFloor,
    Pipeline,
    QueryContext,
    default_pipeline,
    lexical_confidence,
    lexical_strength,
    to_embed,
)
from agent_memory.search.text import term_key
from agent_memory.search.types import SearchHit, SearchRequest, SearchResult

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.files.parts import StoreParts

__all__ = ["hybrid_search", "Mode", "MODES"]

Mode = Literal["lexical", "dense", "hybrid"]
MODES: tuple[str, ...] = ("lexical", "dense", "hybrid")


log = logging.getLogger("agent_memory")

WIDEN_SHARE = 0.1  # below this visible share of the nearest vectors, search the caller's visible set exactly
WIDEN_MAX = 20_000  # the widest margin of nearest vectors checked for visibility
STATS_SAMPLE = 4_096  # at most this many of the caller's visible vectors give the cosines' mean and std
STATS_TTL = 60.0  # seconds a caller's sample is reused without an index change (expiry changes visibility silently)


class _Overlap:
    """One worker thread, shared by every search in the process, that embeds a query while the lexical side runs.

    Bounded: at most one embedding runs on it; a search that finds it busy (another thread's search) embeds on
    its own thread, as before, so nothing ever queues behind another query. The thread is made on first use and
    lives as long as the process (no thread per call). ``submit`` runs the call in the caller's context
    (``contextvars``); the future's ``result()`` raises whatever the embedder raised, so failures surface exactly
    as a direct call's would."""

    def __init__(self) -> None:
        self._reset()
        # a forked child has no worker thread (and maybe a lock held by a thread that is gone): it starts afresh,
        # else its first hybrid search would wait for ever on a pool whose thread does not exist there
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._busy = False

    def submit(self, fn: Callable[[], npt.NDArray[np.float32]]) -> Future[npt.NDArray[np.float32]] | None:
        """The running call, or None when the worker is busy (the caller then calls ``fn`` itself)."""
        with self._lock:
            if self._busy:
                return None
            self._busy = True
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agent-memory-embed")
            pool = self._pool
        ctx = contextvars.copy_context()

        def run() -> npt.NDArray[np.float32]:
            try:
                return ctx.run(fn)
            finally:
                with self._lock:
                    self._busy = False

        try:
            return pool.submit(run)
        except RuntimeError:  # interpreter shutting down: no new threads
            with self._lock:
                self._busy = False
            return None


_OVERLAP = _Overlap()
OVERLAP = True  # embed the query beside the lexical search (False: one after the other, as before)


class _Query:
    """The query vector: given, embedding on the worker, or embedded here on first ``get()``. With ``then`` (the
    nearest vectors over the whole cache: no visibility yet, so nothing of the index is read off the caller's
    thread), the worker runs it too once the vector is there; ``near()`` returns what it found."""

    def __init__(
        self,
        embedder: Embedder,
        text: str,
        given: npt.NDArray[np.float32] | None,
        overlap: bool,
        then: Callable[[npt.NDArray[np.float32]], list[tuple[str, float]]] | None = None,
    ) -> None:
        self._embedder, self._text, self._value, self._then = embedder, text, given, then
        self._near: list[tuple[str, float]] | None = None
        self._future = _OVERLAP.submit(self._work) if given is None and overlap else None

    def _embed(self) -> npt.NDArray[np.float32]:
        row: npt.NDArray[np.float32] = self._embedder.embed([self._text])[0]
        return row

    def _work(self) -> npt.NDArray[np.float32]:
        q = self._embed()
        if self._then is not None:
            self._near = self._then(q)
        return q

    def get(self) -> npt.NDArray[np.float32]:
        if self._value is None:
            self._value = self._future.result() if self._future is not None else self._embed()
        return self._value

    def near(self) -> list[tuple[str, float]] | None:
        """The worker's nearest vectors (after :meth:`get`), or None when it did not look them up."""
        return self._near


def _filters(store: StoreParts, **filters: Any) -> tuple[str, dict[str, Any]]:
    """SQL (alias ``r``) for the scope/kind/date filters of a search, as the lexical engine applies them."""
    dates = queries.date_filters(
        created_after=filters.get("created_after"),
        created_before=filters.get("created_before"),
        updated_after=filters.get("updated_after"),
        updated_before=filters.get("updated_before"),
    )
    req = SearchRequest(
        query="",
        scopes=queries.scopes_of(filters.get("scope")),
        kinds=queries.kinds_of(filters.get("kind")),
        created_after=dates[0],
        created_before=dates[1],
        updated_after=dates[2],
        updated_before=dates[3],
        **_when(filters),
    )
    params: dict[str, Any] = {}
    sql = scope_filter_sql(req.scopes) + date_filter_sql(req, params)
    return (sql[len(" AND ") :] if sql.startswith(" AND ") else sql), params


def _rows(store: StoreParts, ids: Sequence[str], *, body: bool = True) -> dict[str, Any]:
    """Index rows of ``ids`` (with the body when ``body``): for candidates only the dense side found."""
    if not ids:
        return {}
    sql = (
        "SELECT r.*, f.body AS body FROM records r JOIN fts f ON f.rowid = r.rowid" if body else "SELECT r.* FROM records r"
    ) + " WHERE r.id IN (SELECT value FROM json_each(?))"
    rows = store.index.guarded(lambda c: c.execute(sql, (json.dumps(list(ids)),)).fetchall())
    return {row["id"]: row for row in rows}


def _dense_hit(store: StoreParts, row: Any, score: float) -> SearchHit:
    """A hit for a record only the dense side found: the first lines of the body as the snippet."""
    lines = (row["body"] or "").splitlines() or [""]
    shown = lines[:3]
    start = int(row["body_line"] or 1)
    return SearchHit(
        id=row["id"],
        path=str(store.records_dir / row["file"]),
        line_start=start,
        line_end=start + len(shown) - 1,
        snippet="\n".join(shown)[:320],
        score=score,
        title=row["title"] or "",
        kind=row["kind"] or "",
        scope=row["scope"] or "",
        tags=tuple(json.loads(row["tags"] or "[]")),
        updated=row["updated"] or "",
        metadata=json.loads(row["metadata"] or "{}"),
    )


def _request(store: StoreParts, query: str, limit: int, session_id: str | None, user_id: str | None, **filters: Any) -> SearchRequest:
    """The lexical request :meth:`MemoryStore.search` would make (same validation, same filters)."""
    if not isinstance(query, str):
        raise InvalidInputError("query must be a string")
    if not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise InvalidInputError("limit must be an integer between 1 and 1000")
    queries.check_strings(session_id=session_id, user_id=user_id)
    dates = queries.date_filters(
        created_after=filters.get("created_after"),
        created_before=filters.get("created_before"),
        updated_after=filters.get("updated_after"),
        updated_before=filters.get("updated_before"),
    )
    strict = filters.get("strict_visibility")
    store.open()
    return SearchRequest(
        query=query,
        session_id=session_id,
        user_id=user_id,
        tags=normalize_tags(filters.get("tags") or ()),
        scopes=queries.scopes_of(filters.get("scope")),
        kinds=queries.kinds_of(filters.get("kind")),
        limit=limit,
        created_after=dates[0],
        created_before=dates[1],
        updated_after=dates[2],
        updated_before=dates[3],
        strict_visibility=store.strict_visibility if strict is None else bool(strict),
        **_when(filters),
    )


def _when(filters: Mapping[str, Any]) -> dict[str, Any]:
    """The supersession/as-of part of a request: both sides of a hybrid search read the same point in time."""
    return {"include_superseded": bool(filters.get("include_superseded")), "as_of": queries.as_of_filter(filters.get("as_of"))}


def _margin(pool: int) -> int:
    """How many nearest vectors the dense side checks for visibility first."""
    return 2 * pool + 50


def _dense(
    store: StoreParts,
    cache: VectorCache,
    model: str,
    q: npt.NDArray[np.float32],
    pool: int,
    session_id: str | None,
    user_id: str | None,
    where: str,
    params: dict[str, Any],
    near0: list[tuple[str, float]] | None = None,
) -> tuple[list[tuple[str, float]], str]:
    """The ``pool`` nearest records this caller may see (``near0``: the first margin's nearest vectors, looked up
    already beside the lexical side).

    Visibility is checked on a margin of the nearest vectors first (one indexed lookup). When too few of them
    are visible but a fair share is (at least :data:`WIDEN_SHARE`), the margin is widened once to what that
    share predicts; otherwise, or when that is still short, the whole visible map is built and searched
    exactly, so a caller who sees a small part of the store still gets the exact nearest ``pool`` of it.
    """
    margin = _margin(pool)
    for attempt in (0, 1):
        near = near0 if attempt == 0 and near0 is not None else cache.nearest(model, q, margin)
        allowed = visible_for_hashes(store.index, [h for h, _ in near], session_id=session_id, user_id=user_id, where=where, params=params)
        if len(allowed) >= pool or len(near) < margin:  # the cosines are known already: no second product
            sim = dict(near)
            found = sorted(((rid, sim[h]) for rid, h in allowed.items()), key=lambda p: (-p[1], p[0]))
            return found[:pool], "checked on the nearest vectors"  # how many: that counts the records hidden from this caller
        share = len(allowed) / max(1, len(near))
        wider = int(2 * pool / share) + 50 if share >= WIDEN_SHARE else WIDEN_MAX + 1
        if attempt or wider > WIDEN_MAX:
            break
        margin = max(wider, 2 * margin)
    allowed = visible_hashes(store.index, session_id=session_id, user_id=user_id, where=where, params=params)
    return cache.search(model, q, allowed, limit=pool), f"full visible map ({len(allowed)})"


def _visible_stats(
    store: StoreParts, cache: VectorCache, model: str, q: npt.NDArray[np.float32], session_id: str | None, user_id: str | None
) -> dict[str, float]:
    """The query's cosine mean and std over the records this caller may see: what standardises the cosines
    for fusion (empty when fewer than two of them have a vector: then the candidates' own z-scores serve).

    Up to :data:`STATS_SAMPLE` distinct content hashes of the caller's visible records, the smallest first (a
    content hash is a pseudo-random key, so this is a fair sample of the visible set). It depends on nothing
    the caller cannot see: another user's record, hidden or not, moves no score (it used to: the mean and std
    spanned every vector in the cache, so a hidden record close to the query shifted every visible score).
    """
    bind = visible_params(session_id, user_id)
    sql = (
        "SELECT DISTINCT r.content_hash FROM records r WHERE r.content_hash IS NOT NULL AND r.content_hash != ''"
        f" AND {visibility_sql('r')} ORDER BY r.content_hash LIMIT {STATS_SAMPLE}"
    )

    def state(conn: Any) -> tuple[int, int, int]:  # changes with every commit to the index, ours or another's
        return id(conn), conn.total_changes, int(conn.execute("PRAGMA data_version").fetchone()[0])

    key = (tuple(sorted(bind.items())), store.index.guarded(state), int(time.monotonic() // STATS_TTL))
    return cache.sample_stats(model, q, key, lambda: [row[0] for row in store.index.guarded(lambda c: c.execute(sql, bind).fetchall())])


def _hashes_of(store: StoreParts, ids: Sequence[str], known: Mapping[str, Any] | None = None) -> dict[str, str]:
    """``{id: content hash}`` of ``ids`` (from ``known`` rows when there, else one lookup)."""
    out = {i: known[i]["content_hash"] for i in ids if known and i in known and known[i]["content_hash"]}
    ids = [i for i in ids if i not in out]
    if not ids:
        return out
    rows = store.index.guarded(
        lambda c: c.execute(
            "SELECT id, content_hash FROM records WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(list(ids)),)
        ).fetchall()
    )
    return out | {r[0]: r[1] for r in rows if r[1]}


def _embed_missing(
    store: StoreParts, cache: VectorCache, embedder: Embedder, q: npt.NDArray[np.float32], ids: Sequence[str], known: Mapping[str, Any]
) -> dict[str, float]:
    """Cosines of the lexical candidates ``ids`` (best first) that have no vector yet, embedded now
    (:func:`~agent_memory.search.fusion.to_embed`: at most 32) and stored in the cache (derived data, as a backfill
    would: the next search finds them). An embedder failure leaves them without one (no dense evidence, a neutral
    dense score); a cache that cannot be written keeps this search's cosines."""
    hashes = _hashes_of(store, ids, known)
    have = cache.with_vector(embedder.name, hashes.values())
    want = to_embed(ids, lambda rid: rid not in hashes or hashes[rid] in have)
    bodies = _rows(store, want)
    want = [rid for rid in want if rid in bodies]
    if not want:
        return {}
    try:
        vecs = np.asarray(embedder.embed([bodies[rid]["body"] or "" for rid in want]), dtype=np.float32)
    except (EmbeddingError, InvalidInputError) as exc:
        log.warning("could not embed %d search candidates without a vector: %s", len(want), exc)
        return {}
    try:
        if os.access(cache.path, os.W_OK):  # a cache this process may only read is left alone (never "rebuilt")
            cache.put(embedder.name, [hashes[rid] for rid in want], vecs)
    except (StorageError, InvalidInputError, OSError) as exc:  # the cosines still serve this search
        log.warning("could not store the vectors of %d search candidates: %s", len(want), exc)
    sims = vecs @ np.asarray(q, dtype=np.float32).reshape(-1)
    return {rid: float(s) for rid, s in zip(want, sims.tolist(), strict=True) if math.isfinite(s)}


def _focus(
    store: StoreParts, engine: Fts5Engine | None, query: str, *, embed: bool, visible_to: tuple[str | None, str | None] | None
) -> tuple[TermStats | None, str, list[str]]:
    """``(term stats, text to embed, words left out)``: the query without the words half the records share
    (:mod:`agent_memory.search.focus`); the stats serve the lexical strength too. Whole query without the FTS5 engine;
    only the strength's stats when the query is not to be embedded (``embed`` false: its vector was given)."""
    if engine is None:
        return None, query, []
    words = query_words(query, engine.terms, engine.stop_words) if embed else {}
    stats = index_term_stats(store.index, engine, [*engine.terms(query), *(t for ts in words.values() for t in ts)], visible_to=visible_to)
    text, common = focus_query(query, words, stats[1], stats[0])
    return stats, text, common


def hybrid_search(
    store: StoreParts,
    cache: VectorCache,
    embedder: Embedder | None,
    query: str,
    *,
    mode: Mode = "hybrid",
    limit: int = 10,
    session_id: str | None = None,
    user_id: str | None = None,
    pipeline: Pipeline | None = None,
    pool: int | None = None,
    lexical_pool: int | None = None,
    query_vector: npt.NDArray[np.float32] | None = None,
    trace: bool = False,
    now: dt.datetime | None = None,
    lexical_search: Callable[..., SearchResult] | None = None,
    dense_floor: float | None | Literal["auto"] = "auto",
    _refreshed: bool = False,
    **filters: Any,
) -> SearchResult:
    """Search ``store`` lexically, densely or both; ``filters`` are those of :meth:`MemoryStore.search`.

    ``lexical_pool`` lexical and ``pool`` dense candidates enter the fusion (default each: 3 × ``limit``, at least 30;
    measured on LoCoMo, more changes nothing in the top ``limit``); ``query_vector`` skips embedding the query.
    ``lexical_search`` is the store's lexical path (default ``store.search``; pass the lexical-only method once
    ``store.search`` itself dispatches on ``mode``, or this would recurse). With the default FTS5 engine the
    lexical candidates are ranked without snippets and hits are built for the final top-k only.
    ``dense_floor``: dense-only hits below this cosine are dropped (:class:`~agent_memory.search.stages.NoiseFloor`;
    ``"auto"``: the embedder's measured floor, higher for a query lexical search finds nothing for,
    :func:`~agent_memory.search.floor.dense_floor_for`; None: none).
    """
    if mode not in MODES:
        raise InvalidInputError(f"mode must be one of {', '.join(MODES)}")
    lex_search = lexical_search or store.search
    if mode == "lexical" or embedder is None:
        lexical = lex_search(query, limit=limit, session_id=session_id, user_id=user_id, trace=trace, **filters)
        if mode != "lexical" and lexical.trace is not None:
            lexical.trace.append({"stage": "dense", "skipped": "no embedder configured"})
        return lexical
    pool = pool or max(30, 3 * limit)
    lexical_pool = lexical_pool or max(30, 3 * limit)
    engine = store.engine if isinstance(store.engine, Fts5Engine) else None
    # validated first (a bad request fails before anything is embedded)
    req = _request(store, query, max(limit, lexical_pool), session_id, user_id, **filters) if engine is not None else None
    strict = store.strict_visibility if filters.get("strict_visibility") is None else bool(filters["strict_visibility"])
    term_stats, focused, common = _focus(
        store, engine, query, embed=query_vector is None, visible_to=(session_id, user_id) if strict else None
    )
    model, margin = embedder.name, _margin(pool)
    # embedding, then the nearest vectors, from here on beside the lexical side
    query_vec = _Query(embedder, focused, query_vector, OVERLAP, then=lambda v: cache.nearest(model, v, margin))
    steps: list[dict[str, Any]] | None = None
    rows: dict[str, Any] = {}
    if engine is not None and req is not None:  # ids and raw scores only; the lexical trace (if asked) from the lexical path
        ranked_rows = engine.ranked(store.index, req, refresh=False)  # visible rows only; final hits re-checked below
        lex_pairs = [(row["id"], raw) for raw, row in ranked_rows]
        rows = {row["id"]: row for _, row in ranked_rows}
        if trace:
            steps = lex_search(query, limit=limit, session_id=session_id, user_id=user_id, trace=True, **filters).trace
        by_id: dict[str, SearchHit] = {}
    else:
        lexical = lex_search(query, limit=max(limit, lexical_pool), session_id=session_id, user_id=user_id, trace=trace, **filters)
        steps = lexical.trace if trace else None
        lex_pairs = [(h.id, h.score) for h in lexical.hits]
        by_id = {h.id: h for h in lexical.hits}
    stats: dict[str, float] = {}
    try:
        q = query_vec.get()
        where, params = _filters(store, **filters)
        dense, visible = _dense(store, cache, embedder.name, q, pool, session_id, user_id, where, params, query_vec.near())
        # strict: standardised over the (visible) candidates; otherwise over a sample of the caller's visible vectors
        stats = {} if strict else _visible_stats(store, cache, embedder.name, q, session_id, user_id)
    except EmbeddingError as exc:  # fail open: lexical results, flagged
        fallback = lex_search(query, limit=limit, session_id=session_id, user_id=user_id, trace=trace, **filters)
        if fallback.trace is not None:
            fallback.trace.append({"stage": "dense", "error": str(exc), "fallback": "lexical"})
        return fallback
    # lexical candidates written since the last backfill: embedded now (bounded), so a keyword match has a cosine
    fresh = _embed_missing(store, cache, embedder, q, [r for r, _ in lex_pairs], rows) if mode == "hybrid" and dense and lex_pairs else {}
    if steps is not None:
        steps.append(
            {
                "stage": "dense",
                "model": embedder.name,
                "visibility": visible,
                "found": len(dense),
                **({"embedded_now": len(fresh)} if fresh else {}),
                **({"focus": {"embedded": focused, "left_out": common}} if common else {}),
                "top": [{"id": r, "cosine": round(s, 4)} for r, s in dense[:10]],
            }
        )
    matched = bool(lex_pairs)  # lexical search found a visible record (dense mode too: it ran, its hits are not used)
    if mode == "dense":
        lex_pairs = []
    strength = None
    if lex_pairs and engine is not None:
        strength = index_strength(
            store.index, engine, query, lex_pairs[0][1], visible_to=(session_id, user_id) if strict else None, stats=term_stats
        )
    extra = _rows(store, [r for r, _ in dense if r not in rows and r not in by_id], body=False)
    info = {rid: {"updated": row["updated"] or "", "importance": row["importance"]} for rid, row in (rows | extra).items()}
    info.update({h.id: {"updated": h.updated} for h in by_id.values()})
    chosen = pipeline or default_pipeline()
    if chosen.fuse.dense_scores is None:  # cosines for lexical hits the dense top list missed
        chosen = replace(
            chosen,
            fuse=replace(
                chosen.fuse,
                dense_scores=lambda ids: {
                    **cache.scores(embedder.name, q, _hashes_of(store, ids, rows)),
                    **{i: fresh[i] for i in ids if i in fresh},
                },
            ),
        )
    floor = dense_floor_for(embedder, lexical_matched=matched) if dense_floor == "auto" else dense_floor
    if floor is not None:  # after every other stage: what a stage promoted is still noise below it
        chosen = replace(chosen, stages=[*chosen.stages, NoiseFloor(floor)])
    ctx = QueryContext(query=query, confidence=strength, now=now, dense_mean=stats.get("mean"), dense_std=stats.get("std"))
    ranked = chosen.run(lex_pairs, dense, ctx, info=info, limit=limit, trace=steps)
    if (
        engine is not None
        and not _refreshed
        and store.index.refresh_rows(store.index.conn, [rows.get(c.id) or extra[c.id] for c in ranked if c.id in rows or c.id in extra])
    ):
        return hybrid_search(
            store,
            cache,
            embedder,
            query,
            mode=mode,
            limit=limit,
            session_id=session_id,
            user_id=user_id,
            pipeline=pipeline,
            pool=pool,
            lexical_pool=lexical_pool,
            query_vector=q,
            trace=trace,
            now=now,
            lexical_search=lexical_search,
            dense_floor=dense_floor,
            _refreshed=True,
            **filters,
        )  # a hit's file changed by hand
    extra = _rows(store, [c.id for c in ranked if c.id in extra])
    hits = []
    for c, score in zip(ranked, hybrid_scores(ranked, strength, embedder), strict=True):
        if c.id in by_id:
            hits.append(replace(by_id[c.id], score=score))
        elif c.id in rows and engine is not None:
            hits.append(engine.hit(store.index, rows[c.id], score, query))
        elif c.id in extra:
            hits.append(_dense_hit(store, extra[c.id], score))
    return SearchResult(hits, steps)


# -- lexical strength read from the FTS index --------------------------------------------------
TermStats = tuple[int, dict[str, int]]
"""``(N, {term: df})`` from the FTS index: how many records, and how many match each term."""


def index_term_stats(
    index: Index, engine: Fts5Engine, terms: Sequence[str], *, visible_to: tuple[str | None, str | None] | None = None
) -> TermStats:
    """N and df of ``terms`` from the FTS index (df cached per index for the unrestricted counts).

    ``visible_to`` (``(session_id, user_id)``, for strict visibility): N and df count only the records that
    caller may see, so records hidden from them cannot move a weight (O(visible matches) per term).
    """
    terms = list(dict.fromkeys(terms))

    def read(conn: Any) -> TermStats:
        if visible_to is not None:
            bind = visible_params(*visible_to)
            n = int(conn.execute(f"SELECT count(*) FROM records r WHERE {visibility_sql('r')}", bind).fetchone()[0])
            sql = f"SELECT count(*) FROM fts f JOIN records r ON r.rowid = f.rowid WHERE fts MATCH :q AND {visibility_sql('r')}"
            return n, {t: int(conn.execute(sql, {**bind, "q": engine.match_expression([t])}).fetchone()[0]) for t in terms}
        n = int(conn.execute("SELECT max(rowid) FROM records").fetchone()[0] or 0)
        return n, engine.document_frequencies(conn, index, terms, n)

    result: TermStats = index.guarded(read)
    return result


def index_strength(
    index: Index,
    engine: Fts5Engine,
    query: str,
    top_score: float,
    *,
    visible_to: tuple[str | None, str | None] | None = None,
    stats: TermStats | None = None,
) -> float:
    """:func:`lexical_strength` with IDF ``log((N + 1) / (df + 0.5))`` per distinct query term, from the FTS index
    (:func:`index_term_stats`; ``stats`` when already read for these terms and this caller)."""
    terms = engine.terms(query)
    if not terms or top_score <= 0:
        return 0.0
    rows, df = (
        stats if stats is not None and all(t in stats[1] for t in terms) else index_term_stats(index, engine, terms, visible_to=visible_to)
    )
    idf: dict[str, float] = {}
    for t in terms:
        k = term_key(t)
        idf[k] = max(idf.get(k, 0.0), math.log((rows + 1) / (df.get(t, 0) + 0.5)))
    return lexical_strength(top_score, idf.values())


def index_confidence(index: Index, engine: Fts5Engine, query: str, top_ids: Sequence[str]) -> float:
    """:func:`lexical_confidence` over the bodies of ``top_ids`` (the lexical top hits, e.g. 5), with
    IDF ``log((N + 1) / (df + 0.5))`` from the FTS index itself."""
    terms = engine.terms(query)
    if not terms or not top_ids:
        return 0.0
    rows = index.count()
    marks = ",".join("?" for _ in top_ids)

    def read(conn: Any) -> tuple[dict[str, int], list[str]]:
        df = engine.document_frequencies(conn, index, terms, rows)
        bodies = [
            r[0] or ""
            for r in conn.execute(f"SELECT f.body FROM records r JOIN fts f ON f.rowid = r.rowid WHERE r.id IN ({marks})", list(top_ids))
        ]
        return df, bodies

    df, bodies = index.guarded(read)
    idf: dict[str, float] = {}
    for t in terms:
        k = term_key(t)
        idf[k] = max(idf.get(k, 0.0), math.log((rows + 1) / (df.get(t, 0) + 0.5)))
    return lexical_confidence(terms, bodies, idf)
