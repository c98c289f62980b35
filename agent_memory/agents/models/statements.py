"""Rule-based capture: the durable statements in the user's lines of a transcript (no LLM).

:func:`extract_statements` reads ``role: text`` lines (optionally stamped ``[2023-05-08 13:56] user: …``
or preceded by a ``Date: …`` line), keeps the user's messages, splits them into sentences and
clauses, drops what must never be stored (questions, hypotheticals, hedges, reported speech,
instructions, secrets), and applies the rules of :mod:`.statement_rules`. Relative dates in a
statement are resolved against the message's own timestamp, or ``now`` when given; with neither
they are left as said. ``docs/capture.md`` is the user-facing description.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from agent_memory.agents.models.statement_rules import (
    Fact,
    clause_facts,
    generic_my_fact,
    my_fact,
    name_fact,
    sentence,
    third_person,
    trim_value,
)
from agent_memory.errors import InvalidInputError
from agent_memory.model.dates import parse_when, resolve_relative_dates
from agent_memory.redaction.api import MARKER_RE, contains_secret

__all__ = ["Statement", "extract_statements"]


@dataclass(frozen=True)
class Statement:
    """One durable statement found in a transcript.

    ``memory_key`` names the attribute (``user.home``, ``user.allergy.peanuts``): a later statement
    with the same key replaces the earlier one, and different attributes never share a key.
    ``personal`` marks a statement about the user (or their household), which belongs in the user's
    partition. ``said_at`` is the message's timestamp when the transcript (or ``now``) gave one;
    ``happened_at`` the day the statement is about: the day a relative date in it names ("yesterday",
    "3 days ago", "last Monday", resolved against ``said_at``), else the day it was said.
    """

    content: str
    kind: str = "fact"
    memory_key: str | None = None
    tags: tuple[str, ...] = ()
    personal: bool = False
    said_at: dt.datetime | None = None
    happened_at: dt.date | None = None

    @property
    def on_existing(self) -> str:
        return "replace" if self.memory_key else "append"


@dataclass(frozen=True)
class _Message:
    role: str
    text: str
    when: dt.datetime | None


MAX_STATEMENT_CHARS = 1000  # a longer "statement" is a pasted document, not a fact
_TRANSCRIPT_RE = re.compile(r"<transcript>\n?(.*)</transcript>", re.DOTALL)
_ROLE_LINE = re.compile(r"^(user|assistant|system|tool|summary|message)\s*:\s?(.*)$|^([A-Z][\w.-]{0,30}):\s(.*)$", re.I)
_STAMP = re.compile(r"^\s*\[([^\]]{4,40})\]\s*(.*)$")
_DATE_LINE = re.compile(r"^\s*\[?\s*(?:date|time|timestamp|session date|date ?time)\s*:\s*([^\]]+?)\]?\s*$", re.I)
_YOUR_FACT = re.compile(r"\byour\s+([\w' -]{1,60}?)\s+(?:is|are|was)\s+", re.I)

_FILLER = re.compile(
    r"^(?:(?:ok(?:ay)?|oh|so|and|also|btw|by the way|hey|hi|hello|well|great|thanks|thank you|please|"
    r"fyi|just so you know|for the record|for context|fun fact|yes|yeah|yep|heads up|quick note|note to self)\b[,!.:]?\s+)+",
    re.I,
)
_SAID = re.compile(
    r"^(?:(?:like|as)\s+i\s+(?:said|mentioned)(?:\s+before|\s+earlier)?|i\s+told\s+you(?:\s+that)?|"
    r"(?:just\s+)?to\s+be\s+clear)\b[,:]?\s+",
    re.I,
)
_GREETING_NAME = re.compile(
    r"^(?i:hi|hello|hey)(?i:\s+there)?[,!.]?\s+(?i:i'm|i am|this is|it's)\s+([A-Z][\w'-]+)"
    r"(?i:\s+here)?[.!]?$"
)
_CORRECTION = re.compile(r"^(?:actually|correction|sorry|wait|oops|update)\b[,:!]?\s+(?:no[,!.]?\s+)?(.+)$", re.I)
_NO = re.compile(r"^no[,!.]?\s+(.+)$", re.I)
_PRONOUN = re.compile(r"^(?:it'?s|it is|that'?s|that is|it was|its)\s+(.+)$", re.I)
_REMEMBER = re.compile(
    r"^(?:please\s+)?(?:remember|note|keep in mind|don'?t forget|do not forget|make a note)"
    r"(?:\s+(?:that|this))?\s*[:,]?\s+(.+)$",
    re.I,
)
_REMEMBER_TAIL = re.compile(r"^(.+?)[,;]?\s+(?:please\s+)?(?:remember|note) (?:that|this)[.!]?$", re.I)
_THE_FACT = re.compile(r"^(?:the|our)\s+([\w' -]{1,60}?)\s+(is|are|will be)\s+(.+)$", re.I)
_QUESTION = re.compile(
    r"^(?:what|when|where|who|whom|whose|which|why|how|do|does|did|is|are|was|were|can|could|"
    r"would|should|will|shall|have|has|am|any idea|guess what)\b",
    re.I,
)
_HYPOTHETICAL = re.compile(
    r"\b(?:if|suppose|supposing|imagine|imagining|pretend|hypothetically|assuming|unless|whether|wish|wonder|"
    r"maybe|perhaps|possibly|probably|in case|as if|let'?s say|i think|i guess|i believe|i suspect|not sure|"
    r"no idea|i feel like|i doubt)\b",
    re.I,
)
_REPORTED = re.compile(
    r"\b(?:said|says|say|told|tells|claims?|claimed|mentioned|according to|asked|asks|heard|"
    r"thinks|thought|reckons?)\b",
    re.I,
)
_MODAL = re.compile(
    r"\b(?:would(?!\s+(?:rather|prefer))|could|should|might|will|shall|gonna|going to|want to|"
    r"wanna|hope to|plan to|planning to|used to|thinking about|thinking of|considering)\b|"
    r"'ll\b|'d(?!\s+(?:rather|prefer))\b",
    re.I,
)
_ALWAYS = re.compile(r"^(?:please\s+)?(always|never)\s+(?!mind\b)(.+)$", re.I)
_DECIDED = re.compile(r"^(we|i|the team)(?:\s+have|\s*'ve)?\s+(?:decided|agreed|chose|settled)\s*(?:to|that|on)?\s+(.+)$", re.I)
_LETS = re.compile(
    r"^(?:let'?s|let us|we(?:'ll| will| are going to|'re going to))\s+"
    r"(use|go with|stick with|switch to|adopt|keep|pick|choose|move to|standardi[sz]e on)\s+(.+)$",
    re.I,
)
_DECISION_IS = re.compile(r"^the decision is\s+(?:to\s+|that\s+)?(.+)$", re.I)
_CLAUSE_SPLIT = re.compile(
    r"\s*;\s*|(?:\s*,\s*(?:(?:and|but|plus|also|while|although|though)\s+)?|"
    r"\s+(?:and|but|plus|while|although|though)\s+)(?=(?:also\s+)?(?:i|i'm|i've|i'd|my|we)\b)",
    re.I,
)
_SECRET_WORDS = re.compile(
    r"\b(?:passwords?|passcodes?|passphrases?|pass phrase|pins?|pin (?:code|number)|tokens?|api[ _-]?keys?|secret|"
    r"secrets|credentials?|cvv|cvc|security code|access code|alarm code|door code|gate code|entry code|garage code|"
    r"(?:safe|lock) combination|social security|ssn|card number|credit card|debit card|account number|"
    r"routing number|iban|sort code|recovery (?:code|phrase|key)|seed phrase|private key|2fa|otp|one-time code)\b",
    re.I,
)


def _split_transcript(text: str) -> list[_Message]:
    """Messages from ``role: text`` lines (another ``Name:`` is a speaker ``other``), with their timestamps.

    Text before any label counts as the user's; ``message:`` (author unknown) counts as the user's too.
    A line may start with ``[<date>]``; a ``Date: <date>`` line dates the messages after it.
    """
    match = _TRANSCRIPT_RE.search(text)
    body = match.group(1) if match else text
    messages: list[_Message] = []
    current: dt.datetime | None = None
    for line in body.split("\n"):
        when = None
        if (header := _DATE_LINE.match(line)) and (parsed := parse_when(header.group(1))):
            current = parsed
            continue
        if (stamp := _STAMP.match(line)) and (parsed := parse_when(stamp.group(1))):
            when, line = parsed, stamp.group(2)
        role_line = _ROLE_LINE.match(line)
        if role_line and role_line.group(1):
            role = role_line.group(1).lower()
            messages.append(_Message("user" if role == "message" else role, role_line.group(2), when or current))
        elif role_line and role_line.group(3)[0].isupper():
            messages.append(_Message("other", role_line.group(4), when or current))
        elif messages:
            last = messages[-1]
            messages[-1] = _Message(last.role, last.text + "\n" + line, last.when)
        elif line.strip():
            messages.append(_Message("user", line, when or current))
    return messages


def _is_secret(text: str) -> bool:
    """A secret, a word naming one, or a redaction marker (capture shows models the transcript redacted)."""
    return contains_secret(text) or bool(_SECRET_WORDS.search(text)) or bool(MARKER_RE.search(text))


def _clauses(text: str) -> list[str]:
    """Clauses that each start a new first-person statement ("…orange and I'm allergic…" → two)."""
    return [c.strip(" ,;") for c in _CLAUSE_SPLIT.split(text) if c and c.strip(" ,;")]


_LEADING_WHEN = re.compile(
    r"^((?:last|this|next)\s+(?:year|month|week|weekend|spring|summer|autumn|fall|winter)|"
    r"yesterday|today|recently|in\s+\d{4}|(?:a|one|two|three|\d+)\s+(?:days?|weeks?|months?|"
    r"years?)\s+ago),?\s+(?=i\b|i'|my\b)",
    re.I,
)


def _plain(clause: str, *, explicit: bool) -> list[Fact]:
    """Facts of one clause; ``explicit`` when the user asked to remember it (modal verbs are then fine)."""
    clause = trim_value(clause)
    if when := _LEADING_WHEN.match(clause):  # "Last year I moved to Bergen" → "I moved to Bergen last year"
        clause = f"{clause[when.end() :]} {when.group(1).lower()}"
    if fact := name_fact(clause):
        return [fact]
    if m := _DECIDED.match(clause) or _DECISION_IS.match(clause):
        personal = bool(m.re is _DECIDED and m.group(1).lower() == "i")
        return [Fact(sentence(f"Decision: {trim_value(m.group(m.lastindex or 1))}"), "decision", None, ("decision",), personal)]
    if m := _LETS.match(clause):
        return [Fact(sentence(f"Decision: {m.group(1).lower()} {trim_value(m.group(2))}"), "decision", None, ("decision",), False)]
    if m := _ALWAYS.match(clause):
        return [
            Fact(sentence(f"User asks to {m.group(1).lower()} {third_person(trim_value(m.group(2)))}"), "preference", None, ("preference",))
        ]
    if not explicit and _MODAL.search(clause):
        return []  # plans, wishes and conditionals are not facts yet
    return clause_facts(clause)


def _sentence_facts(raw: str, last_subject: str | None) -> tuple[list[Fact], str | None]:
    """One sentence → its facts and the subject it makes current (for a later "no, it's …")."""
    s = re.sub(r"^(?:[-*•]|\d{1,2}[.)])\s+", "", raw.strip()).replace("’", "'").replace("‘", "'")  # list bullets
    if m := _GREETING_NAME.match(s):
        return [Fact(f"User's name is {m.group(1)}.", key="user.name")], "name"
    s = _SAID.sub("", _FILLER.sub("", s).strip()).strip()
    correction = _CORRECTION.match(s) or _NO.match(s)
    if correction:
        s = correction.group(1).strip()
        pronoun = _PRONOUN.match(s)
        if pronoun and last_subject:
            fact = my_fact(last_subject, "is", pronoun.group(1))
            return ([fact] if fact else []), last_subject
    if s.endswith("?") or _QUESTION.match(s):
        return [], last_subject
    remember = _REMEMBER.match(s) or _REMEMBER_TAIL.match(s)
    if remember:
        inner = remember.group(1).strip()
        inner_facts, subject = _sentence_facts(inner, last_subject)
        if inner_facts:
            return inner_facts, subject
        if m := _THE_FACT.match(inner):
            fact = my_fact(m.group(1), m.group(2), m.group(3), mine=False)
            return ([fact] if fact else []), last_subject
        explicit = [f for c in _clauses(inner) for f in _plain(c, explicit=True)]
        if explicit:
            return explicit, last_subject
        personal = bool(re.match(r"^(?:i|i'm|i've|my)\b", inner, re.I))
        return [Fact(sentence(third_person(inner)), "fact", None, (), personal)], last_subject
    if _HYPOTHETICAL.search(s) or _REPORTED.search(s):
        return [], last_subject
    if correction and (m := _THE_FACT.match(s)):
        fact = my_fact(m.group(1), m.group(2), m.group(3), mine=False)
        return ([fact] if fact else []), last_subject
    facts: list[Fact] = []
    for clause in _clauses(s):
        found = _plain(clause, explicit=False)
        if not found and not _MODAL.search(clause):
            generic, subject = generic_my_fact(trim_value(clause))
            if generic is not None:
                found, last_subject = [generic], subject
        facts.extend(found)
    return facts, last_subject


_PREPOSITIONS = ("since", "from", "until", "till", "by", "before", "after", "on", "in", "of", "during", "as of")


_DAY_VALUE = re.compile(r"\d{1,2} [A-Z][a-z]+ \d{4}")


def _event_day(text: str, when: dt.datetime) -> dt.date:
    """The day a relative date in ``text`` names (the first one naming a single day), else ``when``'s day."""
    for _, value in resolve_relative_dates(text, when.date()):
        if _DAY_VALUE.fullmatch(value) and (day := parse_when(value)) is not None:
            return day.date()
    return when.date()


def _resolve_dates(text: str, when: dt.datetime) -> str:
    """``moved to Munich last month`` → ``moved to Munich in October 2026`` (relative to ``when``)."""
    for phrase, value in resolve_relative_dates(text, when.date()):
        pattern = re.compile(r"(\b\w+\s+)?\b" + re.escape(phrase) + r"\b", re.I)

        def swap(m: re.Match[str], value: str = value) -> str:
            before = m.group(1) or ""
            if before.strip().lower() in _PREPOSITIONS:
                return before + value
            prep = "in" if re.match(r"^(?:the week|[A-Z][a-z]+ \d{4}$|\d{4}$)", value) else "on"
            return f"{before}{prep} {value}"

        text = pattern.sub(swap, text, count=1)
    return text


def extract_statements(transcript: str, *, limit: int | None = None, now: dt.datetime | None = None) -> list[Statement]:
    """Durable statements in the user's lines of ``transcript`` (rules, no LLM); see ``docs/capture.md``.

    Later statements win: one statement per memory key (or per content, unkeyed), the most recent
    ``limit`` kept. Relative dates are resolved against each message's timestamp, else ``now``;
    never against the wall clock. Sentences holding a secret are dropped whole.
    Raises :class:`~agent_memory.errors.InvalidInputError` for a non-str transcript, a non-datetime
    ``now`` or a negative ``limit``.
    """
    if not isinstance(transcript, str):
        raise InvalidInputError(f"transcript must be a str, not {type(transcript).__name__}")
    if now is not None and not isinstance(now, dt.datetime):
        raise InvalidInputError(f"now must be a datetime or None, not {type(now).__name__}")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise InvalidInputError(f"limit must be a non-negative int or None, not {limit!r}")
    found: list[Statement] = []
    last_subject: str | None = None
    for msg in _split_transcript(transcript):
        if msg.role == "assistant":
            for m in _YOUR_FACT.finditer(msg.text):
                last_subject = m.group(1)
            continue
        if msg.role != "user":
            continue
        when = msg.when or now
        for raw in re.split(r"(?<=[.!?])\s+|\n+", msg.text):
            if not raw.strip() or _is_secret(raw):  # checked on the raw words, before any rewording
                continue
            facts, last_subject = _sentence_facts(raw, last_subject)
            for fact in facts:
                content = _resolve_dates(fact.content, when) if when else fact.content
                if 8 < len(content) <= MAX_STATEMENT_CHARS and not _is_secret(content):
                    day = _event_day(fact.content, when) if when else None
                    found.append(Statement(content, fact.kind, fact.key, fact.tags, fact.personal, when, day))
    latest: dict[str, Statement] = {}
    for st in found:
        ident = st.memory_key or st.content.lower()
        latest.pop(ident, None)
        latest[ident] = st
    out = list(latest.values())
    return out[-limit:] if limit else out
