"""Contradictions caught on write: the visible records that state a different value for the same subject.

Two steps, both offline:

1. **Candidates**: the store's own search for the new text (lexical or hybrid, whatever the backend runs), as the
   caller — so only records the caller may see, current ones only (a superseded version is history, never a
   contradiction) — plus the records holding the same ``memory_key``.
2. **Judgement** (:func:`judge`, no I/O): both texts are normalised ("I"/"my"/"the user" are one subject, plural and
   third-person endings dropped, fillers like "now"/"currently" ignored) and aligned word by word. A contradiction
   is one replaced span of at most :data:`MAX_VALUE_WORDS` words on each side, after a shared subject and a relation
   that holds one value ("is", "lives in", "works at", "prefers", "is called", …), where both values are of one type
   (numbers, dates, names, plain words) and are not a typo of each other — or the same statement with its polarity
   flipped ("eats meat" / "does not eat meat") — or the same ``memory_key`` with a different text.
   Relations that hold many values at once ("is allergic to", "likes", "speaks", "has a", "visited") are not
   contradictions unless the value is a number; "Notes on otters" / "Notes on kelp" have no relation at all.

``benchmarks/bench_contradict.py`` measures precision and recall on ``tests/fixtures/contradictions.jsonl`` and a
held-out set (``docs/benchmarks.md``).
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory.consolidate.similar import _close
from agent_memory.model.records import MemoryRecord

__all__ = ["Contradiction", "Verdict", "judge", "find_contradictions", "MAX_VALUE_WORDS", "CANDIDATES"]

MAX_VALUE_WORDS = 4
CANDIDATES = 8  # search hits judged per check: a contradiction shares most of its words with the new text

_NEGATIONS = frozenset({"not", "no", "never", "cannot", "cant", "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "wont"})
_AUXILIARIES = frozenset({"do", "doe", "does", "did", "longer", "anymore", "any", "more"})
_FILLERS = frozenset(
    {"the", "a", "an", "now", "currently", "actually", "still", "today", "recently", "really", "set", "to", "every", "day"}
)
_SUBJECT = {"i": ["user"], "me": ["user"], "my": ["user"], "mine": ["user"], "im": ["user", "is"], "ive": ["user", "have"]}
_SUBJECT |= {"users": ["user"], "user": ["user"], "our": ["we"], "were": ["we", "are"]}
# relations that hold one value at a time (stemmed)
_ANCHORS = frozenset(
    {
        "is",
        "are",
        "wa",
        "was",
        "be",
        "been",
        "become",
        "live",
        "work",
        "prefer",
        "favourite",
        "favorite",
        "moved",
        "move",
        "born",
        "use",
        "called",
        "named",
        "name",
        "drive",
        "start",
        "begin",
        "end",
        "due",
        "happen",
        "run",
        "cost",
        "earn",
        "married",
        "engaged",
        "report",
        "located",
        "stored",
        "hosted",
        "commute",
        "retained",
        "leave",
        "take",
        "total",
        "can",
        "eat",
        "drink",
        "smoke",
    }
)
# relations that hold many values at once: a different value there adds, it does not replace (unless a number)
_MANY = frozenset(
    {
        "allergic",
        "like",
        "love",
        "enjoy",
        "speak",
        "visit",
        "visited",
        "own",
        "play",
        "know",
        "friend",
        "also",
        "and",
        "collect",
        "read",
        "watch",
        "listen",
        "tried",
        "want",
        "need",
        "interested",
        "hobby",
        "fan",
        "member",
        "dislike",
        "hate",
        "fix",
        "ha",
        "has",
        "have",
    }
)
# words that make a text a label or a note about something, not a statement of a value
_LABELS = frozenset({"note", "notes", "idea", "todo", "about", "agenda", "draft", "checklist", "minute"})
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december")
_NUMBER_WORDS = frozenset("zero one two three four five six seven eight nine ten eleven twelve twenty thirty hundred thousand".split())
_TOKEN = re.compile(r"[\w$€£%.:/-]+")


@dataclass(frozen=True)
class Verdict:
    """Why two statements contradict: the subject they share, each one's value, a score in (0, 1] and the rule."""

    subject: str
    old_value: str
    new_value: str
    score: float
    reason: str


@dataclass(frozen=True)
class Contradiction:
    """A visible record the new text contradicts, and how."""

    record: MemoryRecord
    subject: str
    old_value: str
    new_value: str
    score: float
    reason: str

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def title(self) -> str:
        return self.record.title

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``id, title, subject, old_value, new_value, score, reason``."""
        return {
            "id": self.record.id,
            "title": self.record.title,
            "subject": self.subject,
            "old_value": self.old_value,
            "new_value": self.new_value,
            "score": round(self.score, 3),
            "reason": self.reason,
        }


def _stem(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss") and not word[:-1].isdigit():
        return word[:-1]
    return word


def _tokens(text: str) -> list[tuple[str, str]]:
    """(canonical, as written) tokens: lower case, apostrophes and trailing punctuation dropped, subjects unified."""
    text = unicodedata.normalize("NFKC", text).replace("\u2019", "'")
    out: list[tuple[str, str]] = []
    for raw in _TOKEN.findall(text.replace("'s ", " ").replace("'", "")):
        word = raw.strip(".:/-").lower()
        if not word:
            continue
        if word == "cannot":
            out += [("can", raw), ("not", raw)]
            continue
        for canon in _SUBJECT.get(word, [word]):
            out.append((_stem(canon), raw.strip(".,")))
    # "the user" / "user" / "I": one subject; fillers never decide anything
    return [(c, w) for c, w in out if c not in _FILLERS]


_NUMERIC = re.compile(r"[$€£]?\d[\d.,:/-]*(?:k|m|bn|st|nd|rd|th|am|pm|%)?")


def _kind(words: Sequence[str], raw: Sequence[str]) -> str:
    if any(_NUMERIC.fullmatch(w) or w in _NUMBER_WORDS for w in words):
        return "number"
    if any(w.rstrip("s") in _WEEKDAYS or w in _MONTHS or w in ("tomorrow", "yesterday", "noon", "midnight") for w in words):
        return "date"
    if raw and all(r[:1].isupper() or any(ch.isupper() or ch.isdigit() for ch in r[1:]) for r in raw):
        return "name"
    return "word"


def _polarity(words: Sequence[str]) -> tuple[bool, tuple[str, ...]]:
    negative = any(w in _NEGATIONS for w in words)
    rest = tuple(w for w in words if w not in _NEGATIONS and w not in _AUXILIARIES)
    return negative, rest


def judge(old_text: str, new_text: str, *, old_key: str | None = None, new_key: str | None = None) -> Verdict | None:
    """Whether ``new_text`` states a different value than ``old_text`` for the same subject (None: it does not)."""
    old, new = _tokens(old_text), _tokens(new_text)
    a, b = [c for c, _ in old], [c for c, _ in new]
    if not a or not b or a == b:
        return None  # the same statement (restated) is no contradiction
    neg_a, rest_a = _polarity(a)
    neg_b, rest_b = _polarity(b)
    if rest_a == rest_b:
        if neg_a != neg_b and len(rest_a) >= 2:
            subject = " ".join(w for _, w in new if w.lower() not in _NEGATIONS)
            return Verdict(subject, "no" if neg_a else "yes", "no" if neg_b else "yes", 0.9, "negation: the same statement, negated")
        return None
    spans = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    verdict = _one_span(old, new, a, b, spans)
    if verdict is None and old_key is not None and old_key == new_key and not set(b) <= set(a) and not set(a) <= set(b):
        return Verdict(old_key, old_text.strip(), new_text.strip(), 0.8, f"the same memory_key {old_key!r} with a different text")
    return verdict


def _one_span(old: list[tuple[str, str]], new: list[tuple[str, str]], a: list[str], b: list[str], spans: list[Any]) -> Verdict | None:
    if len(spans) != 1 or spans[0][0] != "replace":
        return None  # two things differ (another subject too), or one text only adds to the other
    _, i1, i2, j1, j2 = spans[0]
    va, vb = a[i1:i2], b[j1:j2]
    if not (0 < len(va) <= MAX_VALUE_WORDS and 0 < len(vb) <= MAX_VALUE_WORDS):
        return None
    if len(va) == len(vb) and all(x == y or _close(x, y) for x, y in zip(va, vb, strict=True)):
        return None  # a spelling variant ("colour"/"color"), not another value
    prefix, suffix = a[:i1], a[i2:]
    kind_a, kind_b = _kind(va, [w for _, w in old[i1:i2]]), _kind(vb, [w for _, w in new[j1:j2]])
    if kind_a != kind_b:
        return None  # "lives in Berlin" / "lives in a flat": not values of one kind
    numeric = kind_a in ("number", "date")
    anchors = [i for i, w in enumerate(prefix) if w in _ANCHORS or w in _MANY]
    if not anchors and not (numeric and any(w in _ANCHORS or w in _MANY for w in suffix)):
        return None  # no relation before the value: a label ("Notes on otters"), not a statement of one
    if anchors and anchors[0] == 0 and not numeric:
        return None  # a relation with no subject before it
    if any(w in _LABELS for w in prefix):
        return None  # "Notes from the Monday sync" / "Notes from the Friday retro": two notes, not two values
    many = [w for w in prefix if w in _MANY]
    if many and not numeric:
        return None  # "is allergic to X" / "is allergic to Y": both can hold
    if any(w in _NEGATIONS for w in va + vb):
        return None
    context = len(prefix) + len(suffix)
    score = min(1.0, 0.5 + 0.1 * context)
    subject = " ".join(w for _, w in old[:i1]) + (" … " + " ".join(w for _, w in old[i2:]) if i2 < len(old) else "")
    old_value = " ".join(w for _, w in old[i1:i2])
    new_value = " ".join(w for _, w in new[j1:j2])
    return Verdict(subject.strip(), old_value, new_value, score, f"one {kind_a} value changed")


Search = Callable[[str, int], Awaitable[Sequence[Any]]]
Get = Callable[[str], Awaitable[MemoryRecord]]


async def find_contradictions(
    text: str,
    *,
    search: Search,
    get: Get,
    key: str | None = None,
    exclude: Iterable[str] = (),
    limit: int = CANDIDATES,
) -> list[Contradiction]:
    """The records ``search`` (the caller's own search: hits it may see) finds for ``text`` that ``text`` contradicts.

    ``get`` loads a hit's full record (as the same caller); ``exclude``: ids never reported (the record being
    written, its own versions). Best first."""
    skip = set(exclude)
    found: list[Contradiction] = []
    for hit in await search(text, limit):
        rid = getattr(hit, "id", None)
        if not isinstance(rid, str) or rid in skip or getattr(hit, "superseded_by", None):
            continue
        skip.add(rid)
        try:
            rec = await get(rid)
        except Exception:  # gone or invisible meanwhile: nothing to contradict
            continue
        if rec.superseded_by or rec.supersedes in skip:
            continue
        verdict = judge(rec.content, text, old_key=rec.memory_key, new_key=key)
        if verdict is not None:
            found.append(Contradiction(rec, verdict.subject, verdict.old_value, verdict.new_value, verdict.score, verdict.reason))
    return sorted(found, key=lambda c: -c.score)


async def backend_contradictions(
    backend: Any, text: str, caller: Any, *, key: str | None = None, exclude: Iterable[str] = (), limit: int = CANDIDATES
) -> list[Contradiction]:
    """:func:`find_contradictions` over a :class:`~agent_memory.backends.base.MemoryBackend` as ``caller``."""

    async def search(query: str, n: int) -> Sequence[Any]:
        hits = list((await backend.search(query, caller, limit=n)).hits)
        if key:  # the record holding the key may word it so differently that search misses it
            hits += list((await backend.search(key, caller, limit=2)).hits)
        return hits

    async def get(record_id: str) -> MemoryRecord:
        rec: MemoryRecord = await backend.get(record_id, caller)
        return rec

    return await find_contradictions(text, search=search, get=get, key=key, exclude=exclude, limit=limit)


async def contradiction_notes(backend: Any, text: str, caller: Any, *, key: str | None, written: str) -> list[dict[str, Any]]:
    """What a tool's ``remember`` result says about contradictions: ``{id, title, old_value, new_value}`` per visible
    record ``text`` contradicts (the record just ``written`` aside). Never raises: the write has happened."""
    try:
        found = await backend_contradictions(backend, text, caller, key=key, exclude=(written,), limit=5)
    except Exception:
        return []
    return [{"id": c.id, "title": c.title, "old_value": c.old_value, "new_value": c.new_value} for c in found]
