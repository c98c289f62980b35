"""A small in-memory BM25 over weighted term counts (session summaries and messages are few per caller)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from agent_memory.search.text import STOP_WORDS, default_tokenizer, split_cjk, term_key

__all__ = ["keys", "query_keys", "Bm25", "weighted"]


def keys(text: str) -> list[str]:
    """Matching keys of the content words of ``text`` (stop words dropped)."""
    return [term_key(t) for t in split_cjk(default_tokenizer(text)) if t not in STOP_WORDS]


def query_keys(query: str) -> list[str]:
    """Distinct keys of a query (all of its words when it has only stop words)."""
    tokens = list(dict.fromkeys(split_cjk(default_tokenizer(query))))
    content = [t for t in tokens if t not in STOP_WORDS] or tokens
    return list(dict.fromkeys(term_key(t) for t in content))


def weighted(*parts: tuple[Iterable[str], float]) -> Counter[str]:
    """Term counts of several fields, each scaled by its weight."""
    out: Counter[str] = Counter()
    for terms, weight in parts:
        for t in terms:
            out[t] += weight  # type: ignore[assignment]
    return out


class Bm25:
    """BM25 (k1, b) over documents given as weighted term counts; ``scores(query)`` for every document."""

    def __init__(self, docs: Sequence[Mapping[str, float]], *, k1: float = 1.2, b: float = 0.75) -> None:
        self.docs = docs
        self.k1, self.b = k1, b
        self.lengths = [sum(d.values()) for d in docs]
        self.avg = (sum(self.lengths) / len(docs)) if docs else 0.0
        self.postings: dict[str, list[int]] = {}
        for i, d in enumerate(docs):
            for t in d:
                self.postings.setdefault(t, []).append(i)

    def idf(self, term: str) -> float:
        n = len(self.postings.get(term, ()))
        return math.log(1 + (len(self.docs) - n + 0.5) / (n + 0.5))

    def scores(self, query: Iterable[str], weights: Mapping[str, float] | None = None) -> dict[int, float]:
        """Document index → score, for documents holding at least one query term (``weights``: per term, default 1)."""
        out: dict[int, float] = {}
        avg = self.avg or 1.0
        for term in dict.fromkeys(query):
            w = 1.0 if weights is None else weights.get(term, 1.0)
            docs = self.postings.get(term)
            if not docs:
                continue
            idf = self.idf(term)
            for i in docs:
                tf = self.docs[i][term]
                norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / avg)
                out[i] = out.get(i, 0.0) + w * idf * tf * (self.k1 + 1) / (tf + norm)
        return out

    def matched(self, i: int, query: Iterable[str]) -> int:
        """How many distinct query terms document ``i`` holds."""
        doc = self.docs[i]
        return sum(1 for t in dict.fromkeys(query) if doc.get(t, 0) >= 1)
