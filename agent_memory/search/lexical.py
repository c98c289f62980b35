"""Lexical query handling that knows no backend: a natural-language query cut into terms, coordination, snippets.

A question works as a query as it stands: punctuation is stripped, stop words dropped (unless nothing else is
left), digits and dates kept, CJK runs cut into bigrams. Each backend turns :meth:`LexicalEngine.terms` into its own
full-text query (FTS5 ``MATCH`` in :mod:`agent_memory.backends.files.fts`, ``tsquery`` on PostgreSQL) and re-scores
its BM25-like candidates with :meth:`LexicalEngine.coordinate`, so both backends rank the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from agent_memory.search.text import (
    STOP_WORDS,
    Tokenizer,
    best_window,
    default_tokenizer,
    split_cjk,
    term_key,
    term_matcher,
)

__all__ = ["LexicalEngine"]


class LexicalEngine:
    """Query terms, coordination and snippets, with the tuning every lexical engine shares.

    ``weights`` are the field weights (title, tags, body, context) of the backend's ranking function.
    ``coordination`` is the exponent of the coordination factor (0 turns re-scoring off);
    ``context_share`` is how much a query term found only in the neighbour context counts;
    ``pool`` is the minimum number of candidates re-scored (at least twice the limit);
    ``max_terms`` bounds the OR expression built from a very long query;
    ``candidate_budget`` bounds the work of one query on a large index (see the backend's engine).
    """

    def __init__(
        self,
        *,
        tokenizer: Tokenizer = default_tokenizer,
        stop_words: Iterable[str] | None = None,
        weights: Sequence[float] = (2.0, 1.5, 1.0, 0.4),
        snippet_lines: int = 3,
        snippet_chars: int = 320,
        coordination: float = 1.0,
        context_share: float = 0.5,
        pool: int = 30,
        max_terms: int = 64,
        candidate_budget: int | None = 2000,
    ) -> None:
        self.tokenizer = tokenizer
        self.stop_words = frozenset(STOP_WORDS if stop_words is None else stop_words)
        self.weights = tuple(weights)
        self.snippet_lines = max(1, snippet_lines)
        self.snippet_chars = max(40, snippet_chars)
        self.coordination = max(0.0, float(coordination))
        self.context_share = min(1.0, max(0.0, float(context_share)))
        self.pool = max(1, int(pool))
        self.max_terms = max(1, int(max_terms))
        self.candidate_budget = None if candidate_budget is None else max(1, int(candidate_budget))

    def terms(self, query: str) -> list[str]:
        """Distinct query terms in order: stop words dropped unless nothing else is left; CJK runs as bigrams."""
        tokens = list(dict.fromkeys(split_cjk(self.tokenizer(query))))
        content = [t for t in tokens if t not in self.stop_words]
        return (content or tokens)[: self.max_terms]

    def coordinate(self, score: float, own: int, context_only: int, terms: int) -> float:
        """``score`` times the smoothed share of the query's ``terms`` a record holds (``own`` in the record itself,
        ``context_only`` only in its neighbour context, counted ``context_share``)."""
        if not self.coordination or terms < 2:
            return score
        matched = own + (self.context_share * context_only if self.context_share else 0.0)
        factor: float = ((matched + 1.0) / (terms + 1.0)) ** self.coordination
        return score * factor

    def snippet(self, body: str, stems: set[str]) -> tuple[int, int, str]:
        """Best window of ``snippet_lines`` lines for query ``stems`` (1-based, inclusive, relative to the body)."""
        return self._snippet(body, term_matcher({term_key(s) for s in stems}))

    def _snippet(self, body: str, found: Callable[[str], set[str]]) -> tuple[int, int, str]:
        return best_window(body, found, self.snippet_lines, self.snippet_chars)
