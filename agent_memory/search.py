"""Lexical search: natural-language queries → FTS5 MATCH → BM25 → bounded snippets.

A question works as a query as it stands: punctuation is stripped, stop words dropped
(unless nothing else is left), digits and dates kept, the terms OR-ed and ranked by BM25
with field weights (title and tags are hints; the body is primary; neighbour context is
a weak signal). Scope visibility is part of the SQL, so it applies before ranking and limits.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Protocol, Sequence

from .index import Index, scope_filter_sql, visibility_sql
from .records import Scope

Tokenizer = Callable[[str], list[str]]

STOP_WORDS: frozenset[str] = frozenset("""
a about above after again against all am an and any are aren as at be because been before being below
between both but by can cannot could couldn did didn do does doesn doing don down during each else ever
few for from further had hadn has hasn have haven having he her here hers herself him himself his how
i if in into is isn it its itself just let me might more most must mustn my myself no nor not now of
off on once only or other ought our ours ourselves out over own same shall shan she should shouldn so
some such than that the their theirs them themselves then there these they this those through to too
under until up upon us very was wasn we were weren what whatever when where whether which while who
whom whose why will with won would wouldn you your yours yourself yourselves s t d ll m re ve y
also yet tell told say said know think thing things get got really like kind sort much many one ones
""".split())

_WORD = re.compile(r"\w+", re.UNICODE)


def default_tokenizer(text: str) -> list[str]:
    """Lower-cased word tokens; punctuation dropped, digits kept (``5:30pm`` → ``5``, ``30pm``)."""
    return _WORD.findall(text.lower().replace("_", " "))


def light_stem(token: str) -> str:
    """A small suffix stripper used only to locate snippet lines (the index uses porter)."""
    for suffix in ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "ly", "s"):
        if len(token) > len(suffix) + 2 and token.endswith(suffix):
            return token[: -len(suffix)]
    return token


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One search, as the engine receives it. ``session_id``/``user_id`` decide visibility."""

    query: str
    session_id: str | None = None
    user_id: str | None = None
    tags: tuple[str, ...] = ()
    scopes: tuple[Scope, ...] = ()
    kinds: tuple[str, ...] = ()
    limit: int = 10
    created_after: str | None = None
    created_before: str | None = None
    updated_after: str | None = None
    updated_before: str | None = None
    trace: bool = False


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A ranked match: where it is (path, line range) and a bounded snippet."""

    id: str
    path: str
    line_start: int
    line_end: int
    snippet: str
    score: float
    title: str = ""
    kind: str = ""
    scope: str = ""
    tags: tuple[str, ...] = ()
    updated: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tags"] = list(self.tags)
        return data


@dataclass(slots=True)
class SearchResult:
    hits: list[SearchHit]
    trace: list[dict[str, Any]] | None = None


class SearchEngine(Protocol):
    """Anything that can answer a :class:`SearchRequest` over an :class:`Index`."""

    def search(self, index: Index, request: SearchRequest) -> SearchResult: ...


def date_filter_sql(req: SearchRequest, params: dict[str, Any], alias: str = "r") -> str:
    sql = ""
    for name, op in (("created_after", ">="), ("created_before", "<"), ("updated_after", ">="), ("updated_before", "<")):
        value = getattr(req, name)
        if value:
            params[name] = value
            sql += f" AND {alias}.{name.split('_')[0]} {op} :{name}"
    if req.kinds:
        kinds = ",".join(f":kind{i}" for i in range(len(req.kinds)))
        params.update({f"kind{i}": k for i, k in enumerate(req.kinds)})
        sql += f" AND {alias}.kind IN ({kinds})"
    return sql


class Fts5Engine:
    """The default engine: SQLite FTS5 + BM25 with field weights and line-aware snippets."""

    def __init__(
        self,
        *,
        tokenizer: Tokenizer = default_tokenizer,
        stop_words: Iterable[str] | None = None,
        weights: Sequence[float] = (2.0, 1.5, 1.0, 0.25),
        snippet_lines: int = 3,
        snippet_chars: int = 320,
    ) -> None:
        self.tokenizer = tokenizer
        self.stop_words = frozenset(STOP_WORDS if stop_words is None else stop_words)
        self.weights = tuple(weights)
        self.snippet_lines = max(1, snippet_lines)
        self.snippet_chars = max(40, snippet_chars)

    # -- query ----------------------------------------------------------------------------
    def terms(self, query: str) -> list[str]:
        tokens = list(dict.fromkeys(self.tokenizer(query)))
        content = [t for t in tokens if t not in self.stop_words]
        return content or tokens

    def match_expression(self, terms: Sequence[str], tags: Sequence[str] = ()) -> str:
        parts = [f'"{t}"' for t in terms]
        for tag in tags:
            tag_terms = [t for t in self.tokenizer(tag)]
            if tag_terms:
                parts.append("tags : (" + " ".join(f'"{t}"' for t in tag_terms) + ")")
        return " OR ".join(parts)

    # -- search ---------------------------------------------------------------------------
    def search(self, index: Index, request: SearchRequest) -> SearchResult:
        terms = self.terms(request.query)
        trace: list[dict[str, Any]] | None = [] if request.trace else None
        match = self.match_expression(terms, request.tags)
        if trace is not None:
            trace.append({"stage": "parse", "query": request.query, "terms": terms, "match": match})
        if not match:
            return SearchResult([], trace)
        params: dict[str, Any] = {"q": match, "sid": request.session_id, "uid": request.user_id,
                                  "limit": max(1, int(request.limit))}
        extra = scope_filter_sql(request.scopes) + date_filter_sql(request, params)
        weights = ", ".join(str(float(w)) for w in self.weights)
        sql = (
            f"SELECT r.*, fts.body AS body, bm25(fts, {weights}) AS rank FROM fts JOIN records r ON r.rowid = fts.rowid"
            f" WHERE fts MATCH :q AND {visibility_sql('r')}{extra} ORDER BY rank LIMIT :limit"
        )

        def run(conn: Any) -> list[Any]:
            return conn.execute(sql, params).fetchall()

        rows = index.guarded(run)
        if index.refresh_rows(index.conn, rows):  # a hit's file changed by hand: answer from the new text
            rows = index.guarded(run)
        if trace is not None:
            self._trace(index, trace, params, weights, extra, rows)
        stems = {light_stem(t) for t in terms}
        hits = [self._hit(index, row, stems) for row in rows]
        return SearchResult(hits, trace)

    def _trace(self, index: Index, trace: list[dict[str, Any]], params: dict[str, Any], weights: str, extra: str, rows: list[Any]) -> None:
        def q(sql: str) -> list[Any]:
            return index.guarded(lambda c: c.execute(sql, params).fetchall())

        base = f"FROM fts JOIN records r ON r.rowid = fts.rowid WHERE fts MATCH :q"
        allc = q(f"SELECT r.id, r.scope, bm25(fts, {weights}) AS rank {base} ORDER BY rank LIMIT 20")
        total = q(f"SELECT count(*) {base}")[0][0]
        visible = q(f"SELECT count(*) {base} AND {visibility_sql('r')}{extra}")[0][0]
        trace.append({"stage": "match", "candidates": total,
                      "top": [{"id": r["id"], "scope": r["scope"], "score": round(-r["rank"], 4)} for r in allc]})
        trace.append({"stage": "scope_filter", "visible": visible, "hidden": total - visible,
                      "note": "applied inside the SQL query, before ranking and the limit"})
        trace.append({"stage": "rank", "scorer": f"bm25(title, tags, body, context) weights=({weights})",
                      "top": [{"id": r["id"], "score": round(-r["rank"], 4)} for r in rows]})
        trace.append({"stage": "cut", "limit": params["limit"], "returned": len(rows)})

    def _hit(self, index: Index, row: Any, stems: set[str]) -> SearchHit:
        start, end, snippet = self.snippet(row["body"] or "", stems)
        offset = (row["body_line"] or 1) - 1
        return SearchHit(
            id=row["id"], path=str(index.records_dir / row["file"]), line_start=offset + start, line_end=offset + end,
            snippet=snippet, score=round(-float(row["rank"]), 6), title=row["title"] or "", kind=row["kind"] or "",
            scope=row["scope"], tags=tuple(json.loads(row["tags"] or "[]")), updated=row["updated"] or "",
            metadata=json.loads(row["metadata"] or "{}"),
        )

    def snippet(self, body: str, stems: set[str]) -> tuple[int, int, str]:
        """Best window of ``snippet_lines`` lines (1-based, inclusive, relative to the body)."""
        lines = body.split("\n") or [""]
        scores = []
        for line in lines:
            words = {light_stem(w) for w in self.tokenizer(line)}
            scores.append(len(words & stems))
        n = min(self.snippet_lines, len(lines))
        best, best_i = -1, 0
        for i in range(len(lines) - n + 1):
            s = sum(scores[i:i + n])
            if s > best:
                best, best_i = s, i
        # shrink the window to the lines that matter when the match is on one line
        window = list(range(best_i, best_i + n))
        while len(window) > 1 and scores[window[-1]] == 0:
            window.pop()
        while len(window) > 1 and scores[window[0]] == 0:
            window.pop(0)
        text = "\n".join(lines[window[0]:window[-1] + 1])
        if len(text) > self.snippet_chars:
            text = self._clip(text, stems)
        return window[0] + 1, window[-1] + 1, text

    def _clip(self, text: str, stems: set[str]) -> str:
        lower = text.lower()
        pos = min((lower.find(s) for s in stems if s and lower.find(s) >= 0), default=0)
        start = max(0, pos - self.snippet_chars // 3)
        if start:
            space = text.find(" ", start)
            start = space + 1 if 0 <= space < pos else start
        clipped = text[start:start + self.snippet_chars]
        return ("…" if start else "") + clipped.rstrip() + ("…" if start + self.snippet_chars < len(text) else "")
