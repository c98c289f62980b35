"""Near-duplicate detection: character shingles, Jaccard similarity, candidate pairs from an index, and a conflict guard.

Two records are merge candidates when the index pairs them (:func:`candidate_pairs`: exact prefix filtering on
the rarest shingles in a partition of fewer than :data:`LSH_MIN_RECORDS` records, MinHash LSH buckets in a larger
one), their character 4-gram shingle sets have Jaccard similarity ≥ the threshold (default
:data:`MERGE_THRESHOLD`, measured by ``benchmarks/bench_consolidate.py``), and neither says something the other
does not: the words one adds must not replace a value of the other. "Deploy day is Monday" / "Deploy day is
Friday" are similar but *conflicting* (each has a content word the other lacks) and are never merged.
"""

from __future__ import annotations

import contextlib
import difflib
import gc
import math
import random
import re
import unicodedata
import zlib
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from agent_memory.search.text import STOP_WORDS, default_tokenizer, term_key

__all__ = [
    "MERGE_THRESHOLD",
    "Pair",
    "shingles",
    "jaccard",
    "words",
    "word_counts",
    "compare",
    "candidate_pairs",
    "lsh_pairs",
    "minhash",
    "paused_gc",
    "Indexed",
    "Lazy",
    "frame",
    "group_versions",
    "contradictions",
    "MAX_VERSIONS",
]

MERGE_THRESHOLD = 0.6
CONFLICT_THRESHOLD = 0.5  # similar enough to be two versions of one statement
CONFLICT_WORDS = 2  # ... when one span of at most this many words was replaced
SHINGLE = 4
MAX_VERSIONS = 4  # more records on one frame ("notes on _ from the sync") are a pattern, not versions of one fact
MAX_BUCKET = 300  # a shingle (or LSH band) shared by more records is skipped as a key (bounds the work on large stores)
#: A partition with at least this many records finds its candidate pairs by MinHash LSH (:func:`lsh_pairs`): time
#: and memory linear in its size. Smaller ones use exact prefix filtering (no pair above the threshold missed).
LSH_MIN_RECORDS = 2_000
LSH_BANDS = 64  # bands of LSH_ROWS MinHash values: a pair at Jaccard J shares a band with probability 1-(1-J^4)^64
LSH_ROWS = 4  # ... 0.984 at 0.5, 0.99986 at 0.6; 0.098 at 0.2, 0.0064 at 0.1, 0.0004 at 0.05
_MIX = 0x9E3779B1  # a fixed odd multiplier (deterministic hashing: crc32 of each shingle, mixed; no per-process seed)
_M32 = 0xFFFFFFFF
_NEGATIONS = frozenset(
    {
        "not",
        "no",
        "never",
        "none",
        "nobody",
        "nothing",
        "neither",
        "nor",
        "without",
        "cannot",
        "dont",
        "doesnt",
        "didnt",
        "isnt",
        "arent",
        "wasnt",
        "werent",
        "wont",
        "cant",
        "shouldnt",
    }
)
_PUNCT = re.compile(r"[^\w\s]+")


def normal_text(text: str) -> str:
    """Lowercase, NFKC, punctuation dropped, whitespace collapsed."""
    if not text.isascii():  # NFKC changes nothing in ASCII
        text = unicodedata.normalize("NFKC", text)
    text = text.lower().replace("'", "").replace("\u2019", "")
    return " ".join(_PUNCT.sub(" ", text).split())


def shingles(text: str, k: int = SHINGLE) -> frozenset[str]:
    """Character ``k``-grams of :func:`normal_text` (the whole text when shorter than ``k``)."""
    norm = normal_text(text)
    if len(norm) <= k:
        return frozenset({norm}) if norm else frozenset()
    return frozenset(norm[i : i + k] for i in range(len(norm) - k + 1))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def _content_words(text: str) -> list[str]:
    out = []
    for t in default_tokenizer(text):
        if t not in STOP_WORDS:
            key = term_key(t)
            out.append(t if key in _NEGATIONS and t not in _NEGATIONS else key)  # "note" stems to "not": no negation
    return out


def words(text: str) -> frozenset[str]:
    """Stemmed content words (stop words dropped), plus negations, which change meaning."""
    raw = set(normal_text(text).split())
    return frozenset(set(_content_words(text)) | (raw & _NEGATIONS))


def word_counts(text: str) -> Counter[str]:
    """:func:`words` with how often each occurs: what :func:`conflicting` needs to see one occurrence of a repeated
    word replaced ("Sajisaze zabuguki sajisaze" → "Sajisaze zabuguki nocit" keeps the *set* of the first plus one
    word: an addition, merged, though a value was replaced)."""
    counts = Counter(_content_words(text))
    for w in set(normal_text(text).split()) & _NEGATIONS:
        counts[w] = max(counts[w], 1)
    return counts


def _close(a: str, b: str) -> bool:
    """A typo, not another value: no digits, and one edit or one swap of neighbours apart (words of 4+ letters)."""
    if min(len(a), len(b)) < 4 or abs(len(a) - len(b)) > 1 or any(c.isdigit() for c in a + b):
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    i = 0
    while i < len(short) and short[i] == long_[i]:
        i += 1
    return short[i:] == long_[i + 1 :]


def conflicting(wa: Collection[str], wb: Collection[str]) -> list[str]:
    """The words that make two similar texts disagree (empty when one only adds to the other).

    ``wa``/``wb``: :func:`words` (sets), or :func:`word_counts`, which also count a replaced occurrence of a repeated
    word as a disagreement."""
    ka, kb = set(wa), set(wb)
    neg = sorted((ka ^ kb) & _NEGATIONS)
    if neg:
        return neg
    if isinstance(wa, Counter) and isinstance(wb, Counter):
        only_a, only_b = sorted(wa - wb), sorted(wb - wa)
    else:
        only_a, only_b = sorted(ka - kb), sorted(kb - ka)
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


def is_contradiction(pair: "Pair", text_a: str, text_b: str) -> bool:
    """Two versions of one statement with one value changed (a lint finding, never an automatic change).

    Similar (≥ :data:`CONFLICT_THRESHOLD`), and the word sequences differ in one replaced span of at most
    :data:`CONFLICT_WORDS` words (the same replacement wherever it occurs), or by a negation."""
    if not pair.conflict or pair.similarity < CONFLICT_THRESHOLD:
        return False
    if set(pair.conflict) <= _NEGATIONS:
        return True
    a, b = normal_text(text_a).split(), normal_text(text_b).split()
    spans = {
        (tuple(a[i1:i2]), tuple(b[j1:j2]))
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
        if op != "equal"
    }
    return len(spans) == 1 and all(0 < len(x) <= CONFLICT_WORDS for x in next(iter(spans)))


@dataclass(frozen=True)
class Pair:
    """Two records compared: their similarity and, if they disagree, the words that differ."""

    a: int
    b: int
    similarity: float
    conflict: tuple[str, ...] = ()


def compare(
    i: int,
    j: int,
    sh: Indexed[frozenset[str]],
    ws: Indexed[Collection[str]],
    floor: float = CONFLICT_THRESHOLD,
) -> Pair:
    """Similarity of records ``i`` and ``j``; their conflicting words too when the similarity reaches ``floor``."""
    sim = jaccard(sh[i], sh[j])
    if sim < floor:
        return Pair(i, j, sim)
    return Pair(i, j, sim, tuple(conflicting(ws[i], ws[j])))


T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Indexed(Protocol[T_co]):
    """What the comparisons read per record: a list, or a :class:`Lazy` one."""

    def __len__(self) -> int: ...

    def __getitem__(self, i: int, /) -> T_co: ...


class Lazy(Generic[T]):
    """``make(i)`` for each index ``i``, computed on first use and kept (a plan compares few of a large store's records)."""

    def __init__(self, make: Callable[[int], T], size: int) -> None:
        self._make = make
        self._size = size
        self._done: dict[int, T] = {}

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, i: int) -> T:
        value = self._done.get(i)
        if value is None:
            value = self._done[i] = self._make(i)
        return value

    def peek(self, i: int) -> T:
        """The value for ``i`` without keeping it (what an index reads once of every record)."""
        value = self._done.get(i)
        return self._make(i) if value is None else value


def _probes(bins: int) -> tuple[tuple[int, ...], ...]:
    """For each bin, the fixed order in which an empty bin looks at the others for a value to borrow (seeded)."""
    got = _PROBE_ORDERS.get(bins)
    if got is None:
        got = _PROBE_ORDERS[bins] = tuple(
            tuple(k for k in random.Random(f"minhash-probe-{bins}-{j}").sample(range(bins), bins) if k != j) for j in range(bins)
        )
    return got


_PROBE_ORDERS: dict[int, tuple[tuple[int, ...], ...]] = {}


def minhash(sh: frozenset[str], bins: int = LSH_BANDS * LSH_ROWS) -> list[int] | None:
    """A one-permutation MinHash of a shingle set: each shingle hashed once (:func:`shingle_hash`) into one of
    ``bins`` bins, the least value kept per bin. An empty bin borrows the value of the first non-empty bin in its
    own seeded probe order (the same order for every set: "optimal densification"), so two sets agree on each bin
    with probability ≈ their Jaccard, *independently* from bin to bin. (Borrowing from the next bin to the right
    made runs of empty bins copy one value: two short records sharing one common shingle agreed on whole bands at
    Jaccard ≈ 0, 50 times more candidate pairs at 20k records.) None for an empty set."""
    if not sh:
        return None
    crc, mix, m32 = zlib.crc32, _MIX, _M32
    hashes = sorted([(crc(g.encode("utf-8")) * mix) & m32 for g in sh], reverse=True)
    least = {h % bins: h for h in hashes}  # the last value written to a bin is its least
    get = least.get
    if len(least) == bins:
        return [least[j] for j in range(bins)]
    out = [get(j) for j in range(bins)]
    probes = _probes(bins)
    for j in range(bins):
        if out[j] is None:
            for k in probes[j]:
                value = get(k)
                if value is not None:
                    out[j] = value
                    break
    return out  # type: ignore[return-value]  # every bin filled: at least one bin holds a value


def lsh_pairs(members: Sequence[int], shingle_of: Callable[[int], frozenset[str]], threshold: float | None = None) -> set[tuple[int, int]]:
    """Candidate pairs of one (large) partition by MinHash LSH: records sharing all :data:`LSH_ROWS` values of one
    of :data:`LSH_BANDS` bands (band ``b`` is bins ``b``, ``b + LSH_BANDS``, ...). Linear in the partition (one
    MinHash per record, kept as band keys only; the shingles are not held), bounded per bucket (a band key shared
    by more than :data:`MAX_BUCKET` records is skipped); probabilistic, but seeded (the same store gives the same
    pairs). Records with no shingles are candidates of one another. With ``threshold``, a pair whose shingle counts
    alone rule it out (Jaccard ≤ smaller/larger count) is no candidate."""
    keys: list[list[int]] = []
    who: list[int] = []
    empty: list[int] = []
    size: dict[int, int] = {}
    out: set[tuple[int, int]] = set()
    with paused_gc():
        for i in members:
            sh = shingle_of(i)
            sig = minhash(sh)
            if sig is None:
                empty.append(i)
                continue
            who.append(i)
            size[i] = len(sh)
            # band b: bins b, b + LSH_BANDS, ... (one key per band, hashed: the signature itself is not kept)
            keys.append(list(map(hash, zip(*(sig[r * LSH_BANDS : (r + 1) * LSH_BANDS] for r in range(LSH_ROWS)), strict=True))))
        _pairs_of([empty], out)
        for b in range(LSH_BANDS):  # one band at a time: the index never holds more than one band's buckets
            band: dict[int, list[int]] = {}
            for n, i in enumerate(who):
                band.setdefault(keys[n][b], []).append(i)
            _pairs_of((v for v in band.values() if len(v) > 1), out, size if threshold else None, threshold or 0.0)
    return out


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector off while a large index is built (reference counting still frees everything).

    Building the index makes millions of small lists and tuples; each collection of the oldest generation walks
    every object the process holds (a 100k-record store's snapshots among them), so the collections alone grew with
    the square of the store: 25 of the 34 CPU seconds of the LSH index at 50k records. Restored on exit."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _pairs_of(buckets: Iterable[list[int]], out: set[tuple[int, int]], size: dict[int, int] | None = None, threshold: float = 0.0) -> None:
    for bucket in buckets:
        if len(bucket) > MAX_BUCKET:
            continue
        for x, i in enumerate(bucket):
            for j in bucket[x + 1 :]:
                if size is not None and min(size[i], size[j]) < threshold * max(size[i], size[j]):
                    continue  # |A ∩ B| / |A ∪ B| ≤ min/max: these two cannot reach the threshold
                out.add((min(i, j), max(i, j)))


def candidate_pairs(
    groups: Iterable[Sequence[int]], sh: Indexed[frozenset[str]], threshold: float, *, lsh_min: int | None = None
) -> set[tuple[int, int]]:
    """Index pairs that may reach ``threshold`` Jaccard, within each group (a partition).

    A group of fewer than ``lsh_min`` (default :data:`LSH_MIN_RECORDS`) records by prefix filtering: shingles are
    ordered rarest first; two sets with Jaccard ≥ t share at least one of the first ``|x| - ceil(t·|x|) + 1``
    shingles of each, so only records sharing a prefix shingle are compared (exact: no pair above the threshold is
    missed; a shingle shared by more than ``MAX_BUCKET`` records is skipped). A larger group by MinHash LSH
    (:func:`lsh_pairs`), whose cost stays linear where prefix filtering's grows with the square of the group."""
    out: set[tuple[int, int]] = set()
    floor = LSH_MIN_RECORDS if lsh_min is None else lsh_min
    for members in groups:
        if len(members) >= floor:
            out |= lsh_pairs(members, sh.__getitem__ if not isinstance(sh, Lazy) else sh.peek, threshold)
            continue
        df: Counter[str] = Counter()
        for i in members:
            df.update(sh[i])
        buckets: dict[str, list[int]] = {}
        for i in members:
            ordered = sorted(sh[i], key=lambda g: (df[g], g))
            keep = len(ordered) - math.ceil(threshold * len(ordered)) + 1
            for g in ordered[: max(1, keep)]:
                buckets.setdefault(g, []).append(i)
        _pairs_of(buckets.values(), out)
    return out


def frame(text_a: str, text_b: str) -> tuple[str, ...]:
    """The word sequence two texts share, each differing span replaced by ``_`` ("deploy day is _").

    Symmetric: the same for ``(a, b)`` and ``(b, a)``; two versions of one statement share it with every other
    version that changes the same span."""
    a, b = normal_text(text_a).split(), normal_text(text_b).split()
    out: list[str] = []
    for op, i1, i2, _j1, _j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.extend(a[i1:i2])
        elif not out or out[-1] != "_":
            out.append("_")
    return tuple(out)


def group_versions(
    found: Iterable[tuple[int, int, Sequence[str]]], texts: Sequence[str], max_versions: int = MAX_VERSIONS
) -> tuple[list[tuple[list[int], list[str]]], list[tuple[str, int]]]:
    """Group contradicting pairs ``(i, j, conflict words)`` into versions of one statement, by their :func:`frame`.

    Pairs are never chained through a third record: "A is 1"/"A is 2" and "A is 2"/"B is 2" are two statements.
    A frame shared by more than ``max_versions`` records is a *pattern* (many unrelated records written from one
    template, "Notes on X: to be filled in later"), not versions: it is returned apart as ``(frame text, size)``.
    Returns ``(groups, patterns)``; each group is ``(sorted member indexes, words that differ as written)``."""
    members: dict[tuple[str, ...], set[int]] = {}
    differ: dict[tuple[str, ...], set[str]] = {}
    for i, j, conflict in found:
        key = frame(texts[i], texts[j])
        members.setdefault(key, set()).update((i, j))
        differ.setdefault(key, set()).update(surface(conflict, texts[i], texts[j]))
    groups: list[tuple[list[int], list[str]]] = []
    patterns: list[tuple[str, int]] = []
    for key, idx in members.items():
        if len(idx) > max_versions:
            patterns.append((" ".join(key), len(idx)))
        else:
            groups.append((sorted(idx), sorted(differ[key])))
    # a pair inside a larger group of the same records says nothing new
    groups = [g for g in groups if not any(set(g[0]) < set(h[0]) for h in groups)]
    return groups, sorted(patterns, key=lambda p: (-p[1], p[0]))


def contradictions(texts: Sequence[str], max_versions: int = MAX_VERSIONS) -> list[tuple[list[int], list[str]]]:
    """Groups of ``texts`` (a small set, all pairs compared) that are versions of one statement with a value changed."""
    sh = [shingles(t) for t in texts]
    ws = [word_counts(t) for t in texts]
    found: list[tuple[int, int, Sequence[str]]] = []
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            pair = compare(i, j, sh, ws, CONFLICT_THRESHOLD)
            if pair.conflict and is_contradiction(pair, texts[i], texts[j]):
                found.append((i, j, pair.conflict))
    return group_versions(found, texts, max_versions)[0]
