"""The redaction engine: run every rule, merge what they find, replace it with markers."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass

from agent_memory.redaction import (
    anchored,
    causes,
    contextual,
    cues,
    families,
    general,
    generic,
    heuristics,
    ids,
    keyvalue,
    prefilter,
    structured,
    views,
)
from agent_memory.redaction.base import MARKER_RE, Lazy, Rule, accepted, accepted_at, marker, starts_near, token_like
from agent_memory.redaction.providers import PROVIDERS

Span = tuple[int, int, str]


@dataclass(frozen=True, slots=True)
class RedactionResult:
    """Outcome of :func:`redact`.

    ``text``  — the redacted text (identical to the input when nothing matched)
    ``count`` — how many secrets were replaced
    ``kinds`` — sorted, de-duplicated kinds that were replaced
    """

    text: str
    count: int
    kinds: tuple[str, ...]


# Rules gated on the lower-cased text, in priority order (an earlier rule's span wins an overlap).
_LOW_RULES: tuple[Rule, ...] = structured.SHAPE_RULES + structured.LATE_RULES + keyvalue.RULES
_PROSE_TRIGGERS = ("pass", "pin", "pw", "code", "combination")
# (trigger, index of its provider rule), longest triggers first.
_PROVIDER_TRIGGERS = tuple(sorted(((t, i) for i, (_, ts, _) in enumerate(PROVIDERS) for t in ts), key=lambda x: -len(x[0])))
# Every provider token lies in a run of token characters at least this long that holds its trigger
# (except Okta's "SSWS <token>", which is checked apart): texts without such a run skip them all.
_TOKENISH = Lazy(r"[A-Za-z0-9+/_\-=.~:%]{14,}+")


def _provider_hits(text: str) -> tuple[int, ...]:
    """Indexes of the provider rules whose triggers occur in ``text``'s token runs."""
    runs = _TOKENISH.get().findall(text)
    hits: set[int] = set()
    if runs:
        hay = " ".join(runs)
        hits = {i for t, i in _PROVIDER_TRIGGERS if t in hay}
    if "SSWS" in text:
        hits.add(_OKTA)
    return tuple(sorted(hits))


_SPACED = Lazy(r"(?<![\w-])[\w.-]{4,}+(?:[ \t]++[\w.-]{4,}+){2,8}")


# a chunk of a spaced-out token: a capital and a digit in one word ("I3hLFqP7")
_MIXED_CHUNK = Lazy(r"[A-Z][A-Za-z_]{0,12}\d|\d[0-9a-z_]{0,12}[A-Z]")  # bounded: linear on "AAAA…"


def _spaced_hits(text: str) -> tuple[int, ...]:
    """Provider rules whose token may be spaced out in ``text`` (runs of several random-looking chunks)."""
    hits: set[int] = set()
    if _MIXED_CHUNK.get().search(text) is None:
        return ()
    for m in _SPACED.get().finditer(text):
        chunks = m.group().split()
        if sum(token_like(c) for c in chunks) >= 2:
            hits.update(_provider_hits("".join(chunks)))
    return tuple(hits)


# a token spelt out one character at a time, perhaps after its prefix kept whole: "g h p _ 4 x …", "xoxp- 0 8 9 …"
_SPACED_CHARS = Lazy(r"(?<!\S)(?:\S|[A-Za-z0-9]{2,5}[-_])(?: \S){15,}(?!\S)")
_OKTA = next(i for i, row in enumerate(PROVIDERS) if row[0] == "okta_token")

KINDS: tuple[str, ...] = tuple(
    dict.fromkeys(
        ["private_key", "jwt"]
        + [row[0] for row in PROVIDERS]
        + [
            "slack_webhook",
            "url_password",
            "bearer_token",
            "basic_auth",
            "azure_sas",
            "password",
            "secret",
            "api_key",
            "token",
            "aws_secret_key",
            "pin",
            "card_number",
            "high_entropy_secret",
            "encoded_secret",
            "iban",
            "national_id",
            "seed_phrase",
        ]
    )
)


def _overlaps(starts: list[int], spans: list[Span] | list[tuple[int, int]], start: int, end: int) -> bool:
    """Does [start, end) overlap one of ``spans`` (disjoint, sorted; ``starts`` their starts)?"""
    i = bisect_left(starts, start)
    return (i < len(spans) and spans[i][0] < end) or (i > 0 and spans[i - 1][1] > start)


class _Spans:
    """Accepted spans, disjoint and sorted; a candidate overlapping one of them (or a marker) is dropped.

    Protected regions are never replaced: markers, encrypted-at-rest envelopes and public key members (a candidate
    touching one is dropped), and ``links`` (:func:`ids.link_spans`: a candidate is cut around one, so a value glued
    to a link still goes). Lookups are binary searches, so a text with tens of thousands of secrets stays linear-ish.
    """

    __slots__ = ("blocked", "blocked_starts", "found", "links", "links_starts", "starts")

    def __init__(self, text: str, low: str, links: list[tuple[int, int]] | None = None) -> None:
        self.found: list[Span] = []
        self.starts: list[int] = []
        self.blocked: list[tuple[int, int]] = [(m.start(), m.end()) for m in MARKER_RE.finditer(text)] if "[redacted:" in low else []
        public = contextual.public_spans(text)
        if public:  # encrypted-at-rest envelopes and public key members: never redacted
            self.blocked = sorted(self.blocked + public)
        self.blocked_starts = [s for s, _ in self.blocked]
        self.links = links or []
        self.links_starts = [s for s, _ in self.links]

    def _outside_links(self, start: int, end: int) -> list[tuple[int, int]]:
        """[start, end) less the links to our ids it overlaps (usually itself, whole)."""
        if not self.links or not _overlaps(self.links_starts, self.links, start, end):
            return [(start, end)]
        pieces = []
        for s, e in self.links:
            if e <= start or s >= end:
                continue
            if s > start:
                pieces.append((start, s))
            start = max(start, e)
        if start < end:
            pieces.append((start, end))
        return pieces

    def add(self, start: int, end: int, kind: str) -> None:
        for lo, hi in self._outside_links(start, end):
            if lo >= hi or _overlaps(self.blocked_starts, self.blocked, lo, hi):
                continue
            if not _overlaps(self.starts, self.found, lo, hi):
                i = bisect_left(self.starts, lo)
                self.starts.insert(i, lo)
                self.found.insert(i, (lo, hi, kind))

    def merge(self, start: int, end: int, kind: str) -> None:
        """Add a span found in a view: it absorbs the spans it overlaps (never a marker)."""
        for lo, hi in self._outside_links(start, end):
            if lo >= hi or _overlaps(self.blocked_starts, self.blocked, lo, hi):
                continue
            i = bisect_left(self.starts, lo)
            while i > 0 and self.found[i - 1][1] > lo:
                i -= 1
            j = i
            while j < len(self.found) and self.found[j][0] < hi:
                j += 1
            new = (lo, hi, kind)
            if i < j:
                new = (min(lo, self.found[i][0]), max(hi, self.found[j - 1][1]), self.found[i][2])
            self.found[i:j] = [new]
            self.starts[i:j] = [new[0]]


def _collect(text: str, decode: bool, gated: bool = True, hits: tuple[int, ...] | None = None) -> list[Span]:
    """Spans of ``text`` that hold a secret (without looking through disguises).

    ``gated=False`` runs every rule whether or not its triggers occur (tests check that the
    gating never changes the answer).
    """
    low = text.lower()
    spans = _Spans(text, low)
    for pattern, decide, triggers in structured.SHAPE_RULES:
        if not gated or any(t in low for t in triggers):
            for kind, start, end, _ in accepted(pattern, decide, text):
                spans.add(start, end, kind)
    if not gated:
        hits = tuple(range(len(structured.PROVIDER_RULES)))
    elif hits is None:
        hits = _provider_hits(text)
    for i in hits:
        pattern, decide, _ = structured.PROVIDER_RULES[i]
        for kind, start, end, _ in accepted(pattern, decide, text):
            spans.add(start, end, kind)
    for pattern, decide, triggers in structured.LATE_RULES + keyvalue.RULES:
        if not gated or any(t in low for t in triggers):
            if gated and pattern is keyvalue.KV and len(low) == len(text):
                # a key core starts at most KEY_REACH characters before the trigger it contains
                found = accepted_at(pattern, decide, text, starts_near(low, triggers, keyvalue.KEY_REACH))
            else:
                found = accepted(pattern, decide, text)
            for kind, start, end, _ in found:
                spans.add(start, end, kind)
    if not gated or any(t in low for t in _PROSE_TRIGGERS):
        for start, end, kind in heuristics.prose_spans(text, low):
            spans.add(start, end, kind)
    for start, end, kind in heuristics.card_spans(text):
        spans.add(start, end, kind)
    for start, end, kind in families.family_spans(text, low):
        spans.add(start, end, kind)
    for start, end, kind in families.block_scalar_spans(text):
        spans.add(start, end, kind)
    for start, end, kind in general.general_spans(text, low, _has_secret, decode):
        spans.add(start, end, kind)
    if decode:
        for start, end, kind in contextual.context_spans(text, low, _command_spans):
            spans.add(start, end, kind)
        for start, end, kind in families.split_spans(text, _has_secret, _spans_of):
            spans.add(start, end, kind)
    for start, end, kind in heuristics.run_spans(text, _has_secret, decode):
        spans.add(start, end, kind)
    return spans.found


def _has_secret(text: str) -> bool:
    return bool(_collect(text, decode=False))


def _command_spans(text: str, low: str) -> Iterator[Span]:
    """Passwords on a command line (for commands written as argument lists)."""
    yield from general.cli_spans(text, low)
    for pattern, decide in ((keyvalue.COMMAND, keyvalue.decide_command), (keyvalue.CLI, keyvalue.decide_kv)):
        for kind, start, end, _ in accepted(pattern, decide, text):
            yield start, end, kind


def _spans_of(text: str) -> list[Span]:
    return _collect(text, decode=False)


def _despaced_spans(view: views.View, hits: tuple[int, ...]) -> list[Span]:
    """Provider tokens split by spaces; kept only if they cross a removed gap and look random."""
    split = views.despaced(view, tuple({t for t, i in _PROVIDER_TRIGGERS if i in hits}))
    if split is None:
        return []
    out = []
    for i in hits:
        pattern, decide, _ = structured.PROVIDER_RULES[i]
        for kind, start, end, _ in accepted(pattern, decide, split.text):
            lo, hi = split.original(start, end)
            if hi - lo > end - start and sum(c.isdigit() for c in split.text[start:end]) >= 3:
                out.append((lo, hi, kind))
    return out


def find_spans(text: str, *, gated: bool = True, general: bool = True) -> list[Span]:
    """Every secret span of ``text`` (sorted, disjoint), including disguised and split ones. ``general=False`` leaves
    out the general mechanisms (labels in any language, tables, random-looking tokens): the token rules alone."""
    links = ids.link_spans(text, contains_secret)
    if links:  # a link to one of our ids reads as nothing: no rule takes its slug words for a label ("…-key-policy-…")
        text = ids.masked(text, links)
    spans = _Spans(text, text.lower(), links)
    hits = _provider_hits(text) if gated else tuple(range(len(structured.PROVIDER_RULES)))
    for span in _collect(text, True, gated, hits):
        spans.add(*span)
    view = views.normalized(text)
    if view is not None:
        if gated:
            hits = _provider_hits(view.text)
        for start, end, kind in _collect(view.text, True, gated, hits):
            spans.merge(*view.original(start, end), kind)
    base = view or views.View(text)
    if gated:
        # a token spaced out in chunks too short to hold its prefix in one run: "ghp_vYvU I3hLFqP7 GugwZSqo …"
        hits = tuple(sorted(set(hits) | set(_spaced_hits(base.text))))
    if hits:
        for start, end, kind in _despaced_spans(base, hits):
            spans.add(start, end, kind)  # never extends a token already found whole
    # a token spelt out one character at a time: "g h p _ 4 x …"
    if " " in text:
        for m in _SPACED_CHARS.get().finditer(text):
            joined = m.group().replace(" ", "")
            if any(e - s >= 12 for s, e, _ in _collect(joined, decode=False)):
                spans.add(m.start(), m.end(), "token")
    # last: a prefixed token cut short that nothing above found whole (half of "ghp_…" split over two messages)
    for start, end, kind in contextual.partial_spans(text, lambda s, e: _overlaps(spans.starts, spans.found, s, e)):
        spans.add(start, end, kind)
    if not general:
        return sorted(s for s in spans.found if not generic.spared(text, s[0], s[1]))
    # then the general mechanisms: labels in any language, tables, structure, random-looking tokens
    for spans_of in (
        generic.structure_spans(text, text.lower()),
        generic.label_spans(text),
        generic.table_spans(text),
        generic.list_spans(text),
        generic.url_spans(text),
        generic.random_spans(text),
        anchored.qa_spans(text),
        anchored.comment_spans(text),
        anchored.protocol_spans(text),
        anchored.row_spans(text),
        causes.spans(text),
        cues.cue_spans(text),
    ):
        for start, end, kind in spans_of:
            spans.add(start, end, kind)
    for spans_of in (anchored.name_spans(text), causes.merge_spans(text), cues.extend_spans(text)):
        for start, end, kind in spans_of:
            spans.merge(start, end, kind)  # a value bound to its name absorbs a part of it found alone
    return sorted(s for s in spans.found if not generic.spared(text, s[0], s[1]))


def _spans_beside_markers(text: str, general: bool = True) -> list[Span]:
    """:func:`find_spans`, less a key's name left before its value's marker: it is no value of an earlier label
    ("key 42:password=[REDACTED:password]" — "42:password=" is not the value of "key")."""
    found = find_spans(text, general=general)
    if "[REDACTED:" not in text:
        return found
    return [(s, e, k) for s, e, k in found if not (text[e - 1 : e] in ("=", ":") and text.startswith("[REDACTED:", e))]


def redact(text: str) -> RedactionResult:
    """Replace every secret in ``text`` with ``[REDACTED:<kind>]``."""
    if not isinstance(text, str):
        raise TypeError(f"redact() expects str, not {type(text).__name__}")
    if prefilter.enabled() and prefilter.plain(text, _PROSE_TRIGGERS, _SPACED_CHARS):
        return RedactionResult(text, 0, ())
    found = _spans_beside_markers(text)
    if not found:
        return RedactionResult(text, 0, ())
    count = 0
    kinds: set[str] = set()
    out = text
    for _ in range(4):  # a marker can expose a neighbour ("-----BEGIN…-----eyJ…"): redact to a fixed point
        pieces: list[str] = []
        last = 0
        for start, end, kind in found:
            pieces.append(out[last:start])
            pieces.append(marker(kind))
            last = end
        pieces.append(out[last:])
        out = "".join(pieces)
        count += len(found)
        kinds.update(k for _, _, k in found)
        found = _spans_beside_markers(out)
        if not found:
            break
    return RedactionResult(out, count, tuple(sorted(kinds)))


def contains_secret(text: str, *, general: bool = True) -> bool:
    """True if :func:`redact` would change ``text`` (use it to refuse ids, keys and tags); ``general=False``: by the
    token rules alone (see :func:`find_spans`)."""
    if not isinstance(text, str):
        raise TypeError(f"contains_secret() expects str, not {type(text).__name__}")
    if prefilter.enabled() and prefilter.plain(text, _PROSE_TRIGGERS, _SPACED_CHARS):
        return False
    return bool(_spans_beside_markers(text, general))


def redact_text(text: str) -> str:
    """The redacted text alone: for text on its way into a prompt (``USER.md`` in the core block)."""
    return redact(text).text
