"""Lexical search: natural-language queries → FTS5 MATCH → BM25 → coordination → bounded snippets.

A question works as a query as it stands: punctuation is stripped, stop words dropped
(unless nothing else is left), digits and dates kept, the terms OR-ed and ranked by BM25
with field weights (title and tags are hints; the body is primary; neighbour context is
a weak signal). Scope visibility is part of the SQL, so it applies before ranking and limits.

An OR query lets a record that repeats one query word outrank one that holds most of them,
so the BM25 candidates (a pool a few times the limit) are re-scored by *coordination*: the
share of the query's distinct terms found in the record itself (a term found only in the
neighbour context counts ``context_share``), smoothed so a record never drops to zero.
Hit scores are relative to the best hit, in (0, 1] (:func:`readable_score`).

What ranking can still reveal: nothing in a result or trace names, counts or scores a record
the caller cannot see, and visibility applies before ranking and limits. But BM25 statistics
(records in the index, records holding each term, average length) are index-wide, and on a
large index the rarest terms (counted index-wide) choose the candidates. So the scores and the
*order of the caller's own hits* shift when hidden records hold a query term: a caller able to
write records can plant one per guess (PIN 0000…9999) and watch which one drops. With
``strict_visibility`` (``MemoryStore(strict_visibility=True)`` or per search) every statistic comes
from the caller's visible records and nothing is pruned index-wide, so results are identical
whatever other partitions hold; it costs O(visible matches) per query (see :mod:`agent_memory.backends.files.strict`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from agent_memory.backends.files.index_schema import date_filter_sql, scope_filter_sql, visibility_sql, visible_params
from agent_memory.model.lines import dates_text
from agent_memory.search.lexical import LexicalEngine
from agent_memory.search.text import (
    STOP_WORDS,
    Tokenizer,
    default_tokenizer,
    light_stem,
    phrase,
    term_key,
    term_matcher,
)
from agent_memory.search.types import (
    MIN_SCORE,
    SearchHit,
    SearchRequest,
    SearchResult,
    readable_score,
)

if TYPE_CHECKING:  # pragma: no cover - the index is only a parameter type here
    from agent_memory.backends.files.index import Index

__all__ = [
    "STOP_WORDS",
    "Fts5Engine",
    "dates_text",
    "SearchEngine",
    "SearchHit",
    "SearchRequest",
    "SearchResult",
    "Tokenizer",
    "date_filter_sql",
    "default_tokenizer",
    "light_stem",
    "term_key",
    "term_matcher",
    "readable_score",
    "MIN_SCORE",
]

_VISIBILITY_NOTE = "in SQL, before ranking and the limit"


class Fts5Engine(LexicalEngine):
    """The default engine: SQLite FTS5 + BM25 with field weights, coordination and line-aware snippets.

    ``weights`` are the BM25 weights of the FTS columns (title, tags, body, context).
    ``coordination`` is the exponent of the coordination factor (0 turns re-scoring off);
    ``context_share`` is how much a query term found only in the neighbour context counts;
    ``pool`` is the minimum number of BM25 candidates re-scored (at least twice the limit);
    ``max_terms`` bounds the OR expression built from a very long query.

    ``candidate_budget`` bounds the work of one query on a large index. BM25 costs a few
    microseconds per matching row, and an OR query with a common word matches a large share
    of 100k records. When the query's terms together match more rows than the budget, the
    rarest terms (fewest documents) *select* the candidates and the common ones only *score*
    them (as Lucene's common-terms query does): every BM25 score is still computed over the
    whole expression, but a record matching only common words is not a candidate. Indexes
    with fewer rows than the budget are never pruned.
    """

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._df: dict[str, dict[str, tuple[int, int]]] = {}  # index path -> term -> (documents, max rowid then)

    # -- query ----------------------------------------------------------------------------
    def match_expression(self, terms: Sequence[str], tags: Sequence[str] = ()) -> str:
        parts = [phrase(t) for t in terms if t.replace('"', "")]
        for tag in tags:
            tag_terms = [t.replace('"', '""') for t in self.tokenizer(tag)]
            if tag_terms:
                parts.append("tags : (" + " ".join(f'"{t}"' for t in tag_terms) + ")")
        return " OR ".join(parts)

    # -- candidate selection ----------------------------------------------------------------
    def document_frequencies(self, conn: Any, index: Index, terms: Sequence[str], rows: int) -> dict[str, int]:
        """How many records match each term (cached per index; refreshed as the index grows by 10%)."""
        cache = self._df.setdefault(str(index.path), {})
        if len(cache) > 20_000:
            cache.clear()
        out: dict[str, int] = {}
        for term in terms:
            hit = cache.get(term)
            if hit is None or abs(rows - hit[1]) > max(100, hit[1] // 10):
                count = conn.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (self.match_expression([term]),)).fetchone()[0]
                hit = cache[term] = (int(count), rows)
            out[term] = hit[0]
        return out

    def select_terms(self, dfs: Mapping[str, int], limit: int) -> list[str] | None:
        """The terms that select candidates, rarest first, or None to use every term."""
        budget = self.candidate_budget
        if budget is None or sum(dfs.values()) <= budget:
            return None
        chosen: list[str] = []
        total = 0
        for term in sorted((t for t in dfs if dfs[t] > 0), key=lambda t: dfs[t]):
            if chosen and total >= limit and total + dfs[term] > budget:
                break
            chosen.append(term)
            total += dfs[term]
        return chosen if chosen and len(chosen) < sum(1 for t in dfs if dfs[t] > 0) else None

    # -- search ---------------------------------------------------------------------------
    def search(self, index: Index, request: SearchRequest) -> SearchResult:
        terms = self.terms(request.query)
        trace: list[dict[str, Any]] | None = [] if request.trace else None
        match = self.match_expression(terms, request.tags)
        if trace is not None:
            trace.append({"stage": "parse", "query": request.query, "terms": terms, "match": match})
        if not match:
            return SearchResult([], trace)
        scored, params, extra, fetch, plan = self._scored(index, request, terms, match)
        limit = max(1, int(request.limit))
        found = term_matcher({term_key(t) for t in terms})
        top = scored[0][0] if scored else 0.0
        if trace is not None:
            visible = index.guarded(
                lambda c: c.execute(
                    f"SELECT count(*) FROM fts JOIN records r ON r.rowid = fts.rowid WHERE fts MATCH :q AND {visibility_sql('r')}{extra}",
                    params,
                ).fetchone()[0]
            )
            trace.append(
                {
                    "stage": "match",
                    "candidates": int(visible),
                    "note": "visible records matching any term",
                    "top": [{"id": r["id"], "scope": r["scope"]} for _, r in scored],
                }
            )
            weights = ", ".join(str(float(w)) for w in self.weights)
            self._trace(trace, weights, scored, top, fetch, limit, plan, request.strict_visibility)
        base = str(index.records_dir)
        hits = [self._hit(base, row, readable_score(score, top), found) for score, row in scored]
        return SearchResult(hits, trace)

    def ranked(self, index: Index, request: SearchRequest, *, refresh: bool = True) -> list[tuple[float, Any]]:
        """``(raw score, row)`` best first, exactly as :meth:`search` ranks them, without building hits or
        snippets (hybrid search fuses these and builds hits for its final top-k only, with :meth:`hit`).
        ``refresh=False`` skips re-reading rows whose file changed by hand (the caller checks its final hits)."""
        terms = self.terms(request.query)
        match = self.match_expression(terms, request.tags)
        return self._scored(index, request, terms, match, refresh)[0] if match else []

    def hit(self, index: Index, row: Any, score: float, query: str) -> SearchHit:
        """The hit (snippet, line range) for a ``row`` of :meth:`ranked`."""
        return self._hit(str(index.records_dir), row, score, term_matcher({term_key(t) for t in self.terms(query)}))

    def _scored(
        self, index: Index, request: SearchRequest, terms: list[str], match: str, refresh: bool = True
    ) -> tuple[list[tuple[float, Any]], dict[str, Any], str, int, dict[str, Any]]:
        """The visible candidates BM25-ranked and re-scored: ``(scored, params, extra SQL, fetch, plan)``."""
        limit = max(1, int(request.limit))
        fetch = max(self.pool, 2 * limit) if self.coordination else limit
        params: dict[str, Any] = {"q": match, **visible_params(request.session_id, request.user_id), "limit": fetch}
        extra = scope_filter_sql(request.scopes) + date_filter_sql(request, params)
        weights = ", ".join(str(float(w)) for w in self.weights)
        keys = {term_key(t) for t in terms}
        found = term_matcher(keys)
        plan: dict[str, Any] = {}

        strict = request.strict_visibility

        def run(conn: Any) -> list[tuple[float, Any]]:
            narrow = ""
            plan.clear()
            if strict:
                rows = self._strict_ranked(conn, params, extra, keys | {term_key(t) for t in self._tag_terms(request.tags)}, fetch, plan)
                return self._rescore(rows, keys, found)[:limit]
            if self.candidate_budget is not None and len(terms) > 1:
                size = int(conn.execute("SELECT max(rowid) FROM records").fetchone()[0] or 0)
                if size > self.candidate_budget:
                    dfs = self.document_frequencies(conn, index, terms, size)
                    chosen = self.select_terms(dfs, fetch)
                    if chosen is not None:
                        params["sel"] = self.match_expression(chosen)
                        narrow = " AND +fts.rowid IN (SELECT rowid FROM fts WHERE fts MATCH :sel)"
            rows = self._ranked_visible(conn, params, weights, narrow, extra, fetch, plan)
            return self._rescore(rows, keys, found)[:limit]

        scored = index.guarded(run)
        if refresh and index.refresh_rows(index.conn, [row for _, row in scored]):  # a file changed by hand: new text
            scored = index.guarded(run)
        return scored, params, extra, fetch, plan

    def _tag_terms(self, tags: Sequence[str]) -> list[str]:
        return [t for tag in tags for t in self.tokenizer(tag)]

    def _strict_ranked(self, conn: Any, params: dict[str, Any], extra: str, keys: set[str], fetch: int, plan: dict[str, Any]) -> list[Any]:
        """Visible matches ranked by BM25 over the caller's visible records only (see :mod:`agent_memory.backends.files.strict`)."""
        plan["visibility"] = "strict: found by FTS5, ranked with statistics of visible records only"
        match_sql = (
            "SELECT r.*, f.title AS title, f.tags AS ftags, f.body AS body, f.context AS context"
            " FROM fts f JOIN records r ON r.rowid = f.rowid"
            f" WHERE fts MATCH :q AND {visibility_sql('r')}{extra}"
        )
        count_sql = f"SELECT count(*) FROM records r WHERE {visibility_sql('r')}"
        from agent_memory.backends.files.strict import visible_bm25  # strict visibility only

        return visible_bm25(conn, match_sql, count_sql, params, keys, self.weights, fetch)

    def _ranked_visible(
        self, conn: Any, params: dict[str, Any], weights: str, narrow: str, extra: str, fetch: int, plan: dict[str, Any]
    ) -> list[Any]:
        """The ``fetch`` best visible rows by BM25, with their record columns, body and context.

        Ranking first and checking visibility on a margin of the best rows avoids a join per
        matching row; when the margin holds too few visible rows the query is answered again
        with visibility inside the ranking query, so the result is always exactly "the best
        ``fetch`` rows among those the caller may see" (hidden rows never use up the limit).
        """
        base = fetch + max(10, fetch // 2)
        for margin in (base, base * 8):  # a wider margin when hidden or superseded rows crowd the best ones
            ranked = conn.execute(
                f"SELECT fts.rowid, bm25(fts, {weights}) AS rank FROM fts WHERE fts MATCH :q{narrow} ORDER BY rank LIMIT {margin}", params
            ).fetchall()
            if not ranked:
                return []
            rank_of = {rowid: rank for rowid, rank in ranked}
            visible = conn.execute(
                "SELECT r.*, f.body AS body, f.context AS context FROM records r JOIN fts f ON f.rowid = r.rowid"
                f" WHERE r.rowid IN (SELECT value FROM json_each(:ids)) AND {visibility_sql('r')}{extra}",
                {**params, "ids": json.dumps(list(rank_of))},
            ).fetchall()
            if len(visible) >= fetch or len(ranked) < margin:
                plan["visibility"] = _VISIBILITY_NOTE
                visible.sort(key=lambda row: rank_of[row["rowid"]])
                return [_with_rank(row, rank_of[row["rowid"]]) for row in visible[:fetch]]
        plan["visibility"] = _VISIBILITY_NOTE  # the same words either way: which path ran depends on hidden rows
        sql = (
            "SELECT r.*, f.body AS body, f.context AS context, c.rank AS rank FROM ("
            f"SELECT fts.rowid AS rid, bm25(fts, {weights}) AS rank FROM fts JOIN records r ON r.rowid = fts.rowid"
            f" WHERE fts MATCH :q{narrow} AND {visibility_sql('r')}{extra} ORDER BY rank LIMIT :limit"
            ") c JOIN records r ON r.rowid = c.rid JOIN fts f ON f.rowid = c.rid ORDER BY c.rank"
        )
        return list(conn.execute(sql, params).fetchall())

    def _rescore(self, rows: list[Any], keys: set[str], found: Callable[[str], set[str]]) -> list[tuple[float, Any]]:
        """``(score, row)`` best first: BM25 (positive) times the smoothed coordination factor."""
        if not self.coordination or len(keys) < 2:
            return [(-float(row["rank"]), row) for row in rows]
        n = len(keys)
        scored = []
        for row in rows:
            own = found(f"{row['title'] or ''} {row['tags'] or ''} {row['body'] or ''}")
            matched = float(len(own))
            if self.context_share and row["context"]:
                matched += self.context_share * len(found(row["context"]) - own)
            coord = (matched + 1.0) / (n + 1.0)
            scored.append((-float(row["rank"]) * coord**self.coordination, row))
        scored.sort(key=lambda item: -item[0])
        return scored

    def _trace(
        self,
        trace: list[dict[str, Any]],
        weights: str,
        scored: list[tuple[float, Any]],
        top: float,
        fetch: int,
        limit: int,
        plan: Mapping[str, Any],
        strict: bool,
    ) -> None:
        """Stages of this search, about visible records only: no hidden count, score, id or term frequency."""
        trace.append(
            {
                "stage": "scope_filter",
                "how": plan.get("visibility"),
                "note": "applied in SQL before ranking and the limit; this trace describes the caller's visible records only",
            }
        )
        scorer = (
            "bm25 over the caller's visible records (strict_visibility)"
            if strict
            else f"bm25(title, tags, body, context) weights=({weights})"
        )
        trace.append(
            {
                "stage": "rank",
                "scorer": scorer,
                "pool": fetch,
                "candidate_budget": None if strict else self.candidate_budget,
                "top": [{"id": r["id"], "bm25": round(-r["rank"], 4)} for _, r in sorted(scored, key=lambda x: x[1]["rank"])],
            }
        )
        trace.append(
            {
                "stage": "coordination",
                "exponent": self.coordination,
                "context_share": self.context_share,
                "top": [{"id": r["id"], "raw": round(s, 6), "score": readable_score(s, top)} for s, r in scored],
            }
        )
        trace.append({"stage": "cut", "limit": limit, "returned": len(scored)})

    def _hit(self, base: str, row: Any, score: float, found: Callable[[str], set[str]]) -> SearchHit:
        start, end, snippet = self._snippet(row["body"] or "", found)
        offset = (row["body_line"] or 1) - 1
        tags = row["tags"]
        meta = row["metadata"]
        return SearchHit(
            id=row["id"],
            path=f"{base}{os.sep}{row['file']}",
            line_start=offset + start,
            line_end=offset + end,
            snippet=snippet,
            score=score,
            title=row["title"] or "",
            kind=row["kind"] or "",
            scope=row["scope"],
            tags=tuple(json.loads(tags)) if tags and tags != "[]" else (),
            updated=row["updated"] or "",
            metadata=json.loads(meta) if meta and meta != "{}" else {},
            recorded_at=row["created"] or "",
            happened_at=row["happened_at"],
            valid_from=row["valid_from"],
            valid_to=row["valid_to"],
            superseded_by=row["superseded_by"],
        )


class _RankedRow(dict):  # type: ignore[type-arg]
    """A result row (column → value) with its BM25 rank attached."""


def _with_rank(row: Any, rank: float) -> Any:
    out = _RankedRow(zip(row.keys(), row, strict=True))
    out["rank"] = rank
    return out


class SearchEngine(Protocol):
    """Anything that can answer a :class:`SearchRequest` over an :class:`Index`."""

    def search(self, index: Index, request: SearchRequest) -> SearchResult: ...
