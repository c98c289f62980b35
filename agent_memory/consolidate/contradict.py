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
   The relation must match with its preposition ("is on the Pro plan" / "is in Berlin", "lives in" / "lives near":
   another relation, not another value). "Prefers" holds one value per *slot* only: "prefers email for updates" /
   "prefers Slack for updates" conflict, "prefers tea" / "prefers dark mode" do not. A copula and an adjective
   ("is slow" / "is green") are two attributes, not two values, unless they are opposite states of one attribute
   ("fast"/"slow", "enabled"/"disabled", "paid"/"unpaid", two colours) or the subject names the attribute
   ("favourite colour is", "status is"). The reason says what changed, quoting both values.

``benchmarks/bench_contradict.py`` measures precision and recall on ``tests/fixtures/contradictions.jsonl`` and a
two held-out sets (``docs/benchmarks.md``).
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
from agent_memory.model.supersession import tool_refusal

__all__ = [
    "Contradiction",
    "Verdict",
    "judge",
    "find_contradictions",
    "supersedable",
    "supersede_obstacle",
    "tool_may_supersede",
    "contradiction_notes",
    "MAX_VALUE_WORDS",
    "CANDIDATES",
]

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
# relations whose object is one of many unless a slot follows it ("prefers email for updates")
_PREFER = frozenset({"prefer", "preferred"})
_COPULAS = frozenset({"is", "are", "wa", "was", "be", "been", "become"})
# prepositions and particles: a relation ends with one ("is on", "lives in"); a different one is another relation
_PREPOSITIONS = frozenset(
    "in on at near by with from under over for of into onto inside outside behind above below around between across through "
    "off out up down within without beside next toward towards via after before during until since per against".split()
)
# nouns naming an attribute: "the build status is green" states its value, "the build is green" one attribute of many
_ATTRIBUTES = frozenset(
    "favourite favorite preferred colour color status state mode theme plan tier level role title diet stage phase priority "
    "format currency timezone language size version type kind shell editor browser os method channel".split()
)
_ANTONYMS = frozenset(
    frozenset(pair.split("/"))
    for pair in (
        "fast/slow quick/slow on/off up/down online/offline open/closed open/shut public/private passing/failing pass/fail "
        "active/inactive true/false yes/no hot/cold full/empty enabled/disabled allowed/forbidden allowed/blocked "
        "required/optional mandatory/optional present/absent single/married alive/dead new/old early/late locked/unlocked "
        "visible/hidden internal/external remote/onsite remote/on-site permanent/temporary cheap/expensive high/low light/dark "
        "green/red paid/free free/busy available/busy healthy/unhealthy stable/flaky done/pending approved/rejected "
        "accepted/rejected open/resolved started/stopped running/stopped"
    ).split()
)
_CLASSES = (
    frozenset("red green blue yellow black white orange purple pink grey gray brown".split()),
    frozenset("vegetarian vegan pescatarian omnivore carnivore".split()),
    frozenset("small medium large tiny huge".split()),
)
_NEG_PREFIXES = ("un", "in", "im", "il", "ir", "non", "non-", "dis")
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
    return _marked(text)[0]


def _marked(text: str) -> tuple[list[tuple[str, str]], frozenset[int]]:
    """:func:`_tokens` and the positions of the tokens an article ("a", "an", "the") stood before."""
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
    kept: list[tuple[str, str]] = []
    articled: set[int] = set()
    after_article = False
    for c, w in out:
        if c in _FILLERS:
            after_article = after_article or c in ("a", "an", "the")
            continue
        if after_article:
            articled.add(len(kept))
        after_article = False
        kept.append((c, w))
    return kept, frozenset(articled)


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
    (old, art_a), (new, art_b) = _marked(old_text), _marked(new_text)
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
    verdict = _one_span(old, new, a, b, spans, (art_a, art_b))
    if verdict is None and old_key is not None and old_key == new_key and not set(b) <= set(a) and not set(a) <= set(b):
        return Verdict(old_key, old_text.strip(), new_text.strip(), 0.8, f"the same memory_key {old_key!r} with a different text")
    return verdict


def _one_span(
    old: list[tuple[str, str]],
    new: list[tuple[str, str]],
    a: list[str],
    b: list[str],
    spans: list[Any],
    articled: tuple[frozenset[int], frozenset[int]],
) -> Verdict | None:
    if len(spans) != 1 or spans[0][0] != "replace":
        return None  # two things differ (another subject too), or one text only adds to the other
    _, i1, i2, j1, j2 = spans[0]
    va, vb = a[i1:i2], b[j1:j2]
    if not (0 < len(va) <= MAX_VALUE_WORDS and 0 < len(vb) <= MAX_VALUE_WORDS):
        return None
    if len(va) == len(vb) and all(x == y or _close(x, y) for x, y in zip(va, vb, strict=True)):
        return None  # a spelling variant ("colour"/"color"), not another value
    prefix, suffix = a[:i1], a[i2:]
    raw_a, raw_b = [w for _, w in old[i1:i2]], [w for _, w in new[j1:j2]]
    kind_a, kind_b = _kind(va, raw_a), _kind(vb, raw_b)
    opposite = _opposite(va, vb)
    if not opposite and (va[0] in _PREPOSITIONS or vb[0] in _PREPOSITIONS):
        return None  # "is on the Pro plan" / "is in Berlin", "lives in X" / "lives near Y": another relation, not another value
    slot = bool(prefix) and prefix[-1] in _PREFER and bool(suffix)
    if kind_a != kind_b and not (slot and {kind_a, kind_b} <= {"name", "word"}):
        return None  # "lives in Berlin" / "lives in a flat": not values of one kind
    numeric = kind_a in ("number", "date") and kind_b == kind_a
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
    if prefix[-1] in _PREFER and not suffix and not numeric:
        return None  # "prefers email" / "prefers dark mode": preferences about different things, both hold
    relation = " ".join(w for _, w in old[anchors[-1] : i1]) if anchors else ""
    if prefix[-1] in _COPULAS and kind_a == "word" and not numeric and not opposite:
        if i1 not in articled[0] and j1 not in articled[1] and not any(w in _ATTRIBUTES for w in prefix):
            return None  # "is slow" / "is green": two attributes of one thing, not two values of one
    context = len(prefix) + len(suffix)
    score = min(1.0, 0.5 + 0.1 * context)
    subject = " ".join(w for _, w in old[:i1]) + (" … " + " ".join(w for _, w in old[i2:]) if i2 < len(old) else "")
    old_value, new_value = " ".join(raw_a), " ".join(raw_b)
    change = f"from {old_value!r} to {new_value!r}"
    if opposite and not any(va[0] in group and vb[0] in group for group in _CLASSES):
        reason = f"the state after {relation!r} flipped {change}"
    elif slot:
        reason = f"the preference for {' '.join(w for _, w in old[i2:])!r} changed {change}"
    else:
        what = f"the {kind_a}" if kind_a == kind_b and kind_a != "word" else "the value"
        reason = f"{what} after {relation!r} changed {change}"
    return Verdict(subject.strip(), old_value, new_value, score, reason)


def _opposite(va: Sequence[str], vb: Sequence[str]) -> bool:
    """Two states of one attribute: an antonym pair ("fast"/"slow"), "paid"/"unpaid", "enabled"/"disabled", or two
    members of one closed class (colours, diets)."""
    if len(va) != 1 or len(vb) != 1 or va[0] == vb[0]:
        return False
    x, y = va[0], vb[0]
    if frozenset((x, y)) in _ANTONYMS or any(x in group and y in group for group in _CLASSES):
        return True
    for p in _NEG_PREFIXES:
        if x == p + y or y == p + x:
            return True
    return any(x.startswith(p) and y.startswith(q) and x[len(p) :] == y[len(q) :] for p in ("en", "dis") for q in ("en", "dis") if p != q)


def _redacted(text: str) -> str:
    """``text`` as the write gate stores it (:func:`agent_memory.redaction.api.redact`, as ``prepare_record`` does)."""
    from agent_memory.redaction.api import redact

    return redact(text).text if isinstance(text, str) else text


Search = Callable[[str, int], Awaitable[Sequence[Any]]]
Get = Callable[[str], Awaitable[MemoryRecord]]


def supersedable(rec: MemoryRecord, *, scope: str, session_id: str | None, user_id: str | None, namespace: str | None) -> bool:
    """Whether a write to the partition ``scope``/``session_id``/``user_id`` in ``namespace`` may supersede ``rec``
    (both backends' rule: a current record of the same scope and owner, in the same namespace). A visible record of
    another partition (an ancestor namespace's, a shared one seen from a user's write) contradicts, but a
    ``supersede`` of it is refused; so is one of a memory-tool file or a curated line (:func:`tool_refusal`)."""
    return supersede_obstacle(rec, scope=scope, session_id=session_id, user_id=user_id, namespace=namespace) is None


def supersede_obstacle(rec: MemoryRecord, *, scope: str, session_id: str | None, user_id: str | None, namespace: str | None) -> str | None:
    """Why a write to that partition may not supersede ``rec``, in words (None: it may; :func:`supersedable`)."""
    if (refused := tool_refusal(rec.kind)) is not None:
        return refused
    if rec.superseded_by:
        return f"it is already superseded by {rec.superseded_by}"
    elsewhere = rec.scope.value != scope or (rec.namespace or "") != (namespace or "")
    if scope == "session":
        elsewhere = elsewhere or (rec.session_id, rec.user_id) != (session_id, user_id)
    elif scope == "user":
        elsewhere = elsewhere or rec.user_id != user_id
    return "it is in another partition or namespace" if elsewhere else None


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
    written, its own versions). Best first. ``text`` is judged as the write gate stores it (redacted): a notice never
    quotes a secret the write removed, and a text is no contradiction of its own redacted copy."""
    text = _redacted(text)
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
    """:func:`find_contradictions` over a :class:`~agent_memory.backends.base.MemoryBackend` as ``caller`` (``text`` and
    ``key`` redacted first, as the write gate stores them: the searches never carry a secret either)."""
    text = _redacted(text)
    key = _redacted(key) if key else key

    async def search(query: str, n: int) -> Sequence[Any]:
        hits = list((await backend.search(query, caller, limit=n)).hits)
        if key:  # the record holding the key may word it so differently that search misses it
            hits += list((await backend.search(key, caller, limit=2)).hits)
        return hits

    async def get(record_id: str) -> MemoryRecord:
        rec: MemoryRecord = await backend.get(record_id, caller)
        return rec

    return await find_contradictions(text, search=search, get=get, key=key, exclude=exclude, limit=limit)


SUPERSEDE_HINT = "memory_supersede with this id replaces it (the old one is kept as history)"
CANNOT_SUPERSEDE_HINT = (
    "you cannot supersede it: it is in another partition or namespace, or shared and this caller may not change it;"
    " leave it, or tell the user"
)


def _cannot(rec: MemoryRecord) -> str:
    """The ``action`` of a contradiction note the caller may not supersede: what the record is when its kind says why."""
    refused = tool_refusal(rec.kind)
    return CANNOT_SUPERSEDE_HINT if refused is None else f"you cannot supersede it: {refused}; leave it, or tell the user"


def tool_may_supersede(rec: MemoryRecord, caller: Any, may_write: Callable[[str], bool] | None = None) -> bool:
    """Whether ``caller``'s ``memory_supersede`` of ``rec`` would be accepted: that tool writes the new fact to the old
    record's scope as the caller (its owner and namespace), so it is :func:`supersedable` for that partition — the one
    rule the CLI's ``--supersede`` notice uses too — and ``may_write(scope)`` (a connection's own limits on what it
    may write, e.g. an MCP identity's access) when given."""
    scope = rec.scope.value
    if not supersedable(
        rec,
        scope=scope,
        session_id=getattr(caller, "session_id", None),
        user_id=getattr(caller, "user_id", None),
        namespace=getattr(caller, "namespace", None),
    ):
        return False
    return may_write is None or may_write(scope)


async def contradiction_notes(
    backend: Any, text: str, caller: Any, *, key: str | None, written: str, may_write: Callable[[str], bool] | None = None
) -> list[dict[str, Any]]:
    """What a tool's ``remember`` result says about contradictions: ``{id, title, old_value, new_value, may_supersede,
    action}`` per visible record ``text`` contradicts (the record just ``written`` aside). ``may_supersede``
    (:func:`tool_may_supersede`) says whether this caller's ``memory_supersede`` of it would be accepted, ``action``
    what to do, in words. ``may_write(scope)``: whether the caller may write a record of that scope at all (an MCP
    identity's access; a toolset without ``memory_supersede`` passes ``lambda scope: False``). Never raises: the
    write has happened."""
    try:
        found = await backend_contradictions(backend, text, caller, key=key, exclude=(written,), limit=5)
    except Exception:
        return []
    notes: list[dict[str, Any]] = []
    for c in found:
        ok = tool_may_supersede(c.record, caller, may_write)
        notes.append(
            {
                "id": c.id,
                "title": c.title,
                "old_value": c.old_value,
                "new_value": c.new_value,
                "may_supersede": ok,
                "action": SUPERSEDE_HINT if ok else _cannot(c.record),
            }
        )
    return notes
