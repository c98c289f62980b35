"""Server-side full-text search with the files backend's query semantics.

The query is cut into terms exactly as :class:`agent_memory.search.lexical.LexicalEngine` does (as the files backend does) (punctuation stripped,
stop words dropped unless nothing else is left, digits kept); PostgreSQL's ``english`` configuration stems
them; the terms are OR-ed and ranked with ``ts_rank`` over a weighted vector (title A, tags B, body C,
neighbour context D). Visibility and the exact filters are in the WHERE clause, before the LIMIT.

Coverage re-scoring: the best ``pool`` candidates are re-scored by the share of distinct query terms the
record holds (the files engine's coordination), so a record holding most words outranks one repeating one.
On a large table an OR of common words matches many rows and ranking them all costs; when the terms
together match more rows than ``candidate_budget``, the rarest terms select the candidates and every term
still scores them (a common-terms query), as the files engine does.

``strict`` (``strict_visibility``): ``ts_rank`` already scores each row on its own, but which terms are "rare"
was counted over the whole table — another user's hidden rows holding a query word could make it common, so
it stopped selecting candidates and the caller's own record holding only that word dropped out (a ranking
oracle). Strict counts take the caller's visible rows only (no planner statistics, cached per caller), so
nothing hidden moves a caller's candidates, order or scores; the price is a count that may read past
hidden matches of a common word.

Scores are shown as the files engine shows them: relative to the best hit, in (0, 1], 1 for the best
(:func:`agent_memory.backends.files.fts.readable_score`); hybrid search fuses the raw ones (``run(…, raw=True)``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from agent_memory.backends.postgres.rows import COLUMNS, filters_sql, row_to_record, visibility
from agent_memory.errors import InvalidInputError
from agent_memory.search.lexical import LexicalEngine
from agent_memory.search.text import term_key, term_matcher
from agent_memory.search.types import SearchHit, SearchResult, readable_score

# ts_rank weights are {D, C, B, A}: context, body, tags, title — the files engine's (0.4, 1.0, 1.5, 2.0) / 2
WEIGHTS = "{0.2, 0.5, 0.75, 1.0}"
STATS_FROM = 20  # tables of at least 20 × the candidate budget estimate common terms' counts from statistics
DF_TTL_S = 60.0  # document counts only steer candidate selection: a minute-old count is good enough
_COLS = ", ".join(f"r.{c}" for c in COLUMNS)  # not the stored tsvector: ranking needs it, the client does not


def checked_query(query: object, limit: object) -> str:
    """The query as it is searched, or a typed error: as in the files backend, a NUL or a lone surrogate only
    separates words (neither can be sent); ``limit`` is 1–1000."""
    if not isinstance(query, str):
        raise InvalidInputError("query must be a string")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
        raise InvalidInputError("limit must be an integer between 1 and 1000")
    return query.encode("utf-8", "replace").decode("utf-8").replace("\x00", " ")


def tsquery_text(terms: list[str], tags: tuple[str, ...], tokenizer: Callable[[str], list[str]]) -> str:
    """An OR tsquery over the terms (lexemes quoted: a term can never be tsquery syntax); tag words hint at B."""
    parts = [f"'{t}'" for t in terms if t and "'" not in t and "\\" not in t]
    for tag in tags:
        parts.extend(f"'{t}':B" for t in tokenizer(tag) if t and "'" not in t and "\\" not in t)
    return " | ".join(dict.fromkeys(parts))


class PgSearch:
    """Builds and runs one search; ``engine`` supplies tokenizer, stop words, snippets and tuning."""

    def __init__(self, table: str, engine: LexicalEngine, text_config: str, path_of: Callable[[str], str]) -> None:
        self.t = table
        self.engine = engine
        self.cfg = text_config
        self.path_of = path_of
        # (term, None | the caller's (session, user) when strict) -> (documents, capped at the budget; when counted)
        self._df: dict[tuple[str, tuple[Any, ...] | None], tuple[int, float]] = {}

    async def run(
        self,
        conn: Any,
        query: str,
        *,
        sid: str | None,
        uid: str | None,
        limit: int,
        tags: tuple[str, ...],
        trace: bool,
        raw: bool = False,
        strict: bool = False,
        **filters: Any,
    ) -> SearchResult:
        """Rank visible records; scores relative to the best hit unless ``raw`` (``ts_rank`` × coverage);
        ``strict``: candidate selection from the caller's visible records only (module docstring)."""
        engine = self.engine
        terms = engine.terms(query)
        text = tsquery_text(terms, tags, engine.tokenizer)
        steps: list[dict[str, Any]] | None = [] if trace else None
        if steps is not None:
            steps.append({"stage": "parse", "query": query, "terms": terms, "tsquery": text})
        if not text:
            return SearchResult([], steps)
        fetch = max(engine.pool, 2 * limit) if engine.coordination else limit
        params: dict[str, Any] = {"sid": sid, "uid": uid, "q": text, "cfg": self.cfg, "fetch": fetch}
        where = visibility(params) + filters_sql(params, **filters)
        # the GIN index always serves the match; the planner's cost model (random_page_cost 4) often prefers
        # a sequential scan that tests every row instead: not for this transaction
        await conn.execute("SELECT set_config('enable_seqscan', 'off', true)")
        narrow = await self._narrow(conn, terms, params, fetch, steps, strict)
        cur = await conn.execute(
            f"SELECT {_COLS}, ts_rank('{WEIGHTS}'::float4[], r.tsv, q.q, 1) AS rank FROM {self.t} r,"
            " to_tsquery(%(cfg)s::regconfig, %(q)s) q(q)"
            f" WHERE r.tsv @@ {narrow} AND {where} ORDER BY rank DESC, r.updated DESC LIMIT %(fetch)s",
            params,
        )
        rows = await cur.fetchall()
        keys = {term_key(t) for t in terms}
        found = term_matcher(keys)
        scored = self._rescore(rows, keys, found)[:limit]
        if steps is not None:
            steps.append(
                {
                    "stage": "rank",
                    "scorer": f"ts_rank weights {WEIGHTS} (D,C,B,A), length-normalised",
                    "pool": fetch,
                    "visibility": "in the WHERE clause, before the LIMIT",
                    "top": [{"id": r["id"], "rank": round(float(r["rank"]), 6)} for r in rows],
                }
            )
            steps.append(
                {
                    "stage": "coordination",
                    "exponent": engine.coordination,
                    "top": [{"id": r["id"], "raw": round(s, 6), "score": readable_score(s, scored[0][0])} for s, r in scored],
                }
            )
            steps.append({"stage": "cut", "limit": limit, "returned": len(scored)})
        top = scored[0][0] if scored else 0.0
        return SearchResult([self._hit(row, score if raw else readable_score(score, top), found) for score, row in scored], steps)

    async def _narrow(
        self, conn: Any, terms: list[str], params: dict[str, Any], fetch: int, steps: list[dict[str, Any]] | None, strict: bool = False
    ) -> str:
        """The tsquery that selects candidates: every term, or the rarest ones when all together match too many
        (counted over the caller's visible rows when ``strict``, whose counts are cached per caller)."""
        budget = self.engine.candidate_budget
        if budget is None or len(terms) < 2:
            return "q.q"
        probe = budget + 1
        usable = [t for t in terms if "'" not in t and "\\" not in t]
        if not usable:
            return "q.q"
        now = time.monotonic()
        if len(self._df) > 20_000:
            self._df.clear()
        owner = (params.get("sid"), params.get("uid"), tuple(params.get("ns") or ())) if strict else None
        counts = {t: hit[0] for t in usable if (hit := self._df.get((t, owner))) is not None and now - hit[1] < DF_TTL_S}
        missing = [t for t in usable if t not in counts]
        if missing:  # one round trip: each term's document count, bounded by the budget
            cur = await conn.execute(
                self._counts_sql(len(missing), visibility(params) if strict else None),
                {
                    **({k: params[k] for k in ("sid", "uid", "tenants", "ns")} if strict else {}),
                    "cfg": self.cfg,
                    "probe": probe,
                    "rel": self.t,
                    "schema": self.t.split(".")[0].strip('"'),
                    "big": STATS_FROM * budget,
                    **{f"t{i}": f"'{t}'" for i, t in enumerate(missing)},
                    **{f"w{i}": t for i, t in enumerate(missing)},
                },
            )
            row = await cur.fetchone()
            for i, t in enumerate(missing):
                counts[t] = int(row[f"n{i}"])
                if counts[t]:  # a term not found yet may be written any moment: never cache a zero
                    self._df[(t, owner)] = (counts[t], now)
        counts = {t: counts[t] for t in usable}
        if sum(counts.values()) <= budget:
            return "q.q"
        chosen: list[str] = []
        total = 0
        for term in sorted((t for t in counts if counts[t] > 0), key=lambda t: counts[t]):
            if chosen and total >= fetch and total + counts[term] > budget:
                break
            chosen.append(term)
            total += counts[term]
        if steps is not None:  # counts over the whole table (not strict) would tell this caller how many rows it cannot see
            steps.append(
                {
                    "stage": "candidates",
                    **({"documents_per_term": counts} if strict else {}),
                    "selecting": chosen,
                    "budget": budget,
                    "visible_only": strict,
                }
            )
        if not chosen or len(chosen) == sum(1 for t in counts if counts[t] > 0):
            return "q.q"
        params["sel"] = " | ".join(f"'{t}'" for t in chosen)
        return "to_tsquery(%(cfg)s::regconfig, %(sel)s)"

    def _counts_sql(self, n: int, visible: str | None = None) -> str:
        """Each term's document count, capped at ``probe``: a capped bitmap scan per term, except on a table of
        ``STATS_FROM`` × budget rows or more, where a term the planner's statistics list as common
        (``pg_stats.most_common_elems`` of the ``tsv`` column, kept by ANALYZE / autovacuum) takes its estimate
        from them — the scan of a common term is the slow one (tens of ms at 1M rows), a rare term's is cheap.
        With ``visible`` (the caller's visibility predicate over ``r``: strict) only those rows count, always by
        a scan: the planner's statistics are the whole table's."""
        if visible is not None:
            return "SELECT " + ", ".join(
                f"(SELECT count(*) FROM (SELECT 1 FROM {self.t} r WHERE r.tsv @@ to_tsquery(%(cfg)s::regconfig, %(t{i})s)"
                f" AND {visible} LIMIT %(probe)s) c) AS n{i}"
                for i in range(n)
            )
        stats = (
            "WITH st AS (SELECT s.most_common_elems::text::text[] AS e, s.most_common_elem_freqs AS f,"
            " c.reltuples AS n FROM pg_stats s, pg_class c WHERE s.schemaname = %(schema)s"
            " AND s.tablename = 'records' AND s.attname = 'tsv' AND c.oid = %(rel)s::regclass"
            " AND c.reltuples >= %(big)s) "
        )
        cols = ", ".join(
            f"coalesce((SELECT least(%(probe)s, round(st.f[array_position(st.e, x.l)] * st.n))::bigint FROM st,"
            f" (SELECT (tsvector_to_array(to_tsvector(%(cfg)s::regconfig, %(w{i})s)))[1] AS l) x WHERE x.l = ANY(st.e)),"
            f" (SELECT count(*) FROM (SELECT 1 FROM {self.t} WHERE tsv @@ to_tsquery(%(cfg)s::regconfig, %(t{i})s)"
            f" LIMIT %(probe)s) c)) AS n{i}"
            for i in range(n)
        )
        return f"{stats}SELECT {cols}"

    def _rescore(self, rows: list[Any], keys: set[str], found: Callable[[str], set[str]]) -> list[tuple[float, Any]]:
        engine = self.engine
        if not engine.coordination or len(keys) < 2:
            return [(float(row["rank"]), row) for row in rows]
        n = len(keys)
        scored = []
        for row in rows:
            own = found(f"{row['title']} {row['tag_text']} {row['content']}")
            matched = float(len(own))
            context = (row["metadata"] or {}).get("context")
            if engine.context_share and isinstance(context, str) and context:
                matched += engine.context_share * len(found(context) - own)
            coord = (matched + 1.0) / (n + 1.0)
            scored.append((float(row["rank"]) * coord**engine.coordination, row))
        scored.sort(key=lambda item: -item[0])
        return scored

    def _hit(self, row: Any, score: float, found: Callable[[str], set[str]]) -> SearchHit:
        rec = row_to_record(row, self.path_of(row["id"]))
        start, end, snippet = self.engine._snippet(rec.content, found)
        return SearchHit(
            id=rec.id,
            path=rec.path or "",
            line_start=start,
            line_end=end,
            snippet=snippet,
            score=round(score, 6),
            title=rec.title,
            kind=rec.kind,
            scope=rec.scope.value,
            tags=rec.tags,
            updated=rec.updated,
            metadata=dict(rec.metadata),
            recorded_at=rec.created,
            happened_at=rec.happened_at,
            valid_from=rec.valid_from,
            valid_to=rec.valid_to,
            superseded_by=rec.superseded_by,
        )


def readable(hits: list[SearchHit]) -> list[SearchHit]:
    """Raw-scored hits (best first) with their scores relative to the best one, as :meth:`PgSearch.run` shows them."""
    import dataclasses

    top = hits[0].score if hits else 0.0
    return [dataclasses.replace(h, score=readable_score(h.score, top)) for h in hits]
