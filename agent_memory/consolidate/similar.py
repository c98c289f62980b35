"""Near-duplicate detection: character shingles, Jaccard similarity, rare-token blocking, and a conflict guard.

Two records are merge candidates when they share one of their rarest words (blocking keeps the pass close
to linear), their character 4-gram shingle sets have Jaccard similarity ≥ the threshold (default
:data:`MERGE_THRESHOLD`, measured by ``benchmarks/bench_consolidate.py``), and neither says something the other
does not: the words one adds must not replace a value of the other. "Deploy day is Monday" / "Deploy day is
Friday" are similar but *conflicting* (each has a content word the other lacks) and are never merged.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .._text import STOP_WORDS, default_tokenizer, term_key

__all__ = ["MERGE_THRESHOLD", "Pair", "shingles", "jaccard", "words", "compare", "candidate_pairs"]

MERGE_THRESHOLD = 0.6
CONFLICT_THRESHOLD = 0.5  # similar enough to be two versions of one statement
CONFLICT_WORDS = 2  # ... when each side has at most this many words the other lacks
SHINGLE = 4
BLOCK_WORDS = 3  # each record is bucketed under its rarest words
MAX_BUCKET = 200  # a word shared by more records than this is too common to block on
_NEGATIONS = frozenset({"not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "without", "cannot",
                        "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "wont", "cant", "shouldnt"})
_PUNCT = re.compile(r"[^\w\s]+")


def normal_text(text: str) -> str:
    """Lowercase, NFKC, punctuation dropped, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).lower().replace("'", "").replace("\u2019", "")
    return " ".join(_PUNCT.sub(" ", text).split())


def shingles(text: str, k: int = SHINGLE) -> frozenset[str]:
    """Character ``k``-grams of :func:`normal_text` (the whole text when shorter than ``k``)."""
    norm = normal_text(text)
    if len(norm) <= k:
        return frozenset({norm}) if norm else frozenset()
    return frozenset(norm[i:i + k] for i in range(len(norm) - k + 1))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def words(text: str) -> frozenset[str]:
    """Stemmed content words (stop words dropped), plus negations, which change meaning."""
    raw = set(normal_text(text).split())
    content = {term_key(t) for t in default_tokenizer(text) if t not in STOP_WORDS}
    return frozenset(content | (raw & _NEGATIONS))


def _close(a: str, b: str) -> bool:
    """A typo, not another value: same digits, and most character bigrams shared."""
    if any(c.isdigit() for c in a + b):
        return False
    ga = {a[i:i + 2] for i in range(len(a) - 1)}
    gb = {b[i:i + 2] for i in range(len(b) - 1)}
    return bool(ga and gb) and len(ga & gb) / len(ga | gb) >= 0.5


def conflicting(wa: frozenset[str], wb: frozenset[str]) -> list[str]:
    """The words that make two similar texts disagree (empty when one only adds to the other)."""
    only_a, only_b = sorted(wa - wb), sorted(wb - wa)
    neg = sorted((wa ^ wb) & _NEGATIONS)
    if neg:
        return neg
    if not only_a or not only_b:
        return []  # one says everything the other says, and perhaps more
    unmatched_a = [w for w in only_a if not any(_close(w, v) for v in only_b)]
    unmatched_b = [w for w in only_b if not any(_close(w, v) for v in only_a)]
    if unmatched_a and unmatched_b:
        return unmatched_a + unmatched_b
    return []


def surface(keys: Sequence[str], *texts: str) -> list[str]:
    """The words as written for matching keys (``thursda`` → ``thursday``), for reports."""
    seen: dict[str, str] = {}
    for text in texts:
        for token in default_tokenizer(text):
            seen.setdefault(term_key(token), token)
    return [seen.get(k, k) for k in keys]


def is_contradiction(pair: "Pair") -> bool:
    """Two versions of one statement with a different value (a lint finding, never an automatic change)."""
    return bool(pair.conflict) and pair.similarity >= CONFLICT_THRESHOLD and 0 < len(pair.conflict) <= 2 * CONFLICT_WORDS


@dataclass(frozen=True)
class Pair:
    """Two records compared: their similarity and, if they disagree, the words that differ."""

    a: int
    b: int
    similarity: float
    conflict: tuple[str, ...] = ()


def compare(i: int, j: int, sh: Sequence[frozenset[str]], ws: Sequence[frozenset[str]]) -> Pair:
    return Pair(i, j, jaccard(sh[i], sh[j]), tuple(conflicting(ws[i], ws[j])))


def candidate_pairs(groups: Iterable[Sequence[int]], ws: Sequence[frozenset[str]]) -> set[tuple[int, int]]:
    """Index pairs worth comparing: within each group (a partition), records sharing one of their rarest words."""
    out: set[tuple[int, int]] = set()
    for members in groups:
        df: Counter[str] = Counter()
        for i in members:
            df.update(ws[i])
        buckets: dict[str, list[int]] = {}
        for i in members:
            for w in sorted(ws[i], key=lambda w: (df[w], w))[:BLOCK_WORDS]:
                buckets.setdefault(w, []).append(i)
        for bucket in buckets.values():
            if len(bucket) > MAX_BUCKET:
                continue
            for x, i in enumerate(bucket):
                for j in bucket[x + 1:]:
                    out.add((min(i, j), max(i, j)))
    return out
