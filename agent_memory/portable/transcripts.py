"""Transcript import: a conversation becomes one record per turn.

A dialog turn means little on its own ("Yes, last Friday!"), so every record carries:

- the speaker and the text, plus the caption of a shared image when there is one;
- the session's date, written out in words ("Monday, 8 May 2023") in the record's
  title and body, and relative phrases in the turn ("yesterday", "last week") resolved
  against it, so date words in a question can match;
- metadata: ``thread``, ``session``, ``seq`` (position in the whole transcript),
  ``turn_id`` (e.g. a LoCoMo ``dia_id``), ``speaker``, ``date`` (ISO);
- the neighbouring turns of the same session as ``metadata["context"]``, which the index
  puts in its low-weight ``context`` column: a question and its answer find each other.

Use :func:`transcript_drafts` to build :class:`~agent_memory.backends.files.store.MemoryDraft` objects and
:func:`import_transcript` to write them through the bulk path (``remember_many``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_memory.backends.files.store import MemoryDraft, MemoryStore, RememberResult
from agent_memory.model.records import Scope

__all__ = [
    "Turn", "Session", "transcript_drafts", "import_transcript", "parse_when", "date_words", "resolve_relative_dates",
    "render_turn",
]

DEFAULT_CONTEXT_TURNS = 2
DEFAULT_CONTEXT_CHARS = 600


@dataclass(frozen=True, slots=True)
class Turn:
    """One utterance. ``id`` is the source's turn id (kept as ``metadata["turn_id"]``)."""

    speaker: str
    text: str
    id: str | None = None
    caption: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Session:
    """Consecutive turns sharing one date. ``date`` is free text ("1:56 pm on 8 May, 2023") or ISO."""

    turns: Sequence[Turn]
    date: str | None = None
    id: str | None = None

    @classmethod
    def from_messages(cls, messages: Iterable[Mapping[str, Any]], *, date: str | None = None, id: str | None = None,
                      names: Mapping[str, str] | None = None) -> "Session":
        """A session from chat messages (``{"role": …, "content": …}``); ``names`` maps roles to speakers."""
        names = dict(names or {})
        turns = []
        for i, msg in enumerate(messages, 1):
            content = msg.get("content")
            if not isinstance(content, str) or not content.strip():
                continue
            role = str(msg.get("name") or msg.get("role") or "speaker")
            turns.append(Turn(speaker=names.get(role, role), text=content, id=msg.get("id") or str(i)))
        return cls(turns=turns, date=date, id=id)


# -- dates -------------------------------------------------------------------------------------
_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}
_MONTH_NAMES = ["", "January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                "November", "December"]
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_MON = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_DMY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MON},?\s+(\d{{4}})\b", re.I)
_MDY = re.compile(rf"\b{_MON}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_TIME = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\.?\b", re.I)


def _month_num(name: str) -> int:
    return _MONTHS[name.lower().rstrip(".")[:3]]


def parse_when(text: str | None) -> dt.datetime | None:
    """Parse a session date: ISO (``2023-05-08``, ``2023-05-08T13:56``) or prose such as
    ``"1:56 pm on 8 May, 2023"`` / ``"May 8, 2023, 1:56 PM"``. None when no date is found."""
    if not text or not isinstance(text, str):
        return None
    raw = text.strip()
    try:
        when = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
        return when.replace(tzinfo=None)
    except ValueError:
        pass
    m = _DMY.search(raw)
    if m:
        day, mon, year = int(m.group(1)), _month_num(m.group(2)), int(m.group(3))
    else:
        m = _MDY.search(raw)
        if not m:
            return None
        mon, day, year = _month_num(m.group(1)), int(m.group(2)), int(m.group(3))
    hour = minute = 0
    t = _TIME.search(raw)
    if t:
        hour = int(t.group(1)) % 12 + (12 if t.group(3).lower() == "p" else 0)
        minute = int(t.group(2) or 0)
    try:
        return dt.datetime(year, mon, day, hour, minute)
    except ValueError:
        return None


def date_words(when: dt.date) -> str:
    """``Monday, 8 May 2023``: the form that matches date words in questions."""
    return f"{_WEEKDAYS[when.weekday()].capitalize()}, {when.day} {_MONTH_NAMES[when.month]} {when.year}"


def _day(when: dt.date) -> str:
    return f"{when.day} {_MONTH_NAMES[when.month]} {when.year}"


def _month(year: int, month: int) -> str:
    while month < 1:
        year, month = year - 1, month + 12
    while month > 12:
        year, month = year + 1, month - 12
    return f"{_MONTH_NAMES[month]} {year}"


def _week_of(when: dt.date) -> str:
    return f"the week of {_day(when - dt.timedelta(days=when.weekday()))}"


_NUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
        "nine": 9, "ten": 10, "a couple of": 2, "a few": 3, "couple of": 2, "few": 3}
_REL = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|last night|this morning|"
    r"(?:last|this|next) (?:week(?:end)?|month|year|" + "|".join(_WEEKDAYS) + r")|"
    r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few) (day|week|month|year)s? ago)\b",
    re.I)


def resolve_relative_dates(text: str, when: dt.date) -> list[tuple[str, str]]:
    """``[(phrase, absolute date text)]`` for relative date phrases in ``text`` ("yesterday" → "7 May 2023")."""
    out: list[tuple[str, str]] = []
    for m in _REL.finditer(text):
        phrase = m.group(0).lower()
        value: str | None = None
        if phrase in ("yesterday", "last night"):
            value = _day(when - dt.timedelta(days=1))
        elif phrase in ("today", "tonight", "this morning"):
            value = _day(when)
        elif phrase == "tomorrow":
            value = _day(when + dt.timedelta(days=1))
        elif m.group(2):
            n = int(m.group(2)) if m.group(2).isdigit() else _NUM.get(m.group(2).lower(), 1)
            unit = m.group(3).lower()
            if unit == "day":
                value = _day(when - dt.timedelta(days=n))
            elif unit == "week":
                value = _week_of(when - dt.timedelta(weeks=n))
            elif unit == "month":
                value = _month(when.year, when.month - n)
            else:
                value = str(when.year - n)
        else:
            which, unit = phrase.split(" ", 1)
            step = {"last": -1, "this": 0, "next": 1}[which]
            if unit == "week":
                value = _week_of(when + dt.timedelta(weeks=step))
            elif unit == "weekend":
                # "this weekend" is the coming Saturday (or the one just past, said on a Sunday)
                saturday = when + dt.timedelta(days=-1 if when.weekday() == 6 else 5 - when.weekday())
                value = f"the weekend of {_day(saturday + dt.timedelta(weeks=step))}"
            elif unit == "month":
                value = _month(when.year, when.month + step)
            elif unit == "year":
                value = str(when.year + step)
            else:
                target = _WEEKDAYS.index(unit)
                delta = (target - when.weekday()) % 7
                if step < 0:
                    delta = delta - 7 if delta else -7
                elif step > 0:
                    delta = delta or 7
                value = _day(when + dt.timedelta(days=delta))
        if value and (phrase, value) not in out:
            out.append((phrase, value))
    return out


# -- records ------------------------------------------------------------------------------------
def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def render_turn(turn: Turn, when: dt.datetime | None = None, date_text: str | None = None) -> str:
    """The record body: ``Speaker: text``, the image caption, and a date line."""
    lines = [f"{_one_line(turn.speaker)}: {_one_line(turn.text)}"]
    if turn.caption and turn.caption.strip():
        lines.append(f"[shared an image: {_one_line(turn.caption)}]")
    if when is not None:
        date_line = f"Date: {date_words(when)}"
        if when.hour or when.minute:
            date_line += f", {when.strftime('%I:%M %p').lstrip('0').lower()}"
        rel = resolve_relative_dates(turn.text, when)
        if rel:
            date_line += "; " + "; ".join(f'"{p}" = {v}' for p, v in rel)
        lines.append(date_line)
    elif date_text:
        lines.append(f"Date: {_one_line(date_text)}")
    return "\n".join(lines)


def _context_text(turn: Turn) -> str:
    text = _one_line(turn.text)
    if turn.caption and turn.caption.strip():
        text += f" [image: {_one_line(turn.caption)}]"
    return text


def transcript_drafts(
    sessions: Sequence[Session],
    *,
    thread: str,
    context_turns: int = DEFAULT_CONTEXT_TURNS,
    context_chars: int = DEFAULT_CONTEXT_CHARS,
    kind: str = "turn",
    scope: Scope | str | None = None,
    session_id: str | None = None,
    user_id: str | None = None,
    tags: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None,
    render: Callable[[Turn, dt.datetime | None, str | None], str] = render_turn,
) -> list[MemoryDraft]:
    """One :class:`MemoryDraft` per non-empty turn, in transcript order.

    ``context_turns`` neighbours on each side (same session only) go into ``metadata["context"]``
    (at most ``context_chars`` characters per side, nearest turns first), which the index
    stores in its low-weight ``context`` column. Empty turns are skipped (no record) but
    still count for ``seq``. A turn repeating an earlier turn's words and date gets its turn
    id appended, so the store keeps both (re-importing the same transcript still dedupes).
    """
    drafts: list[MemoryDraft] = []
    seq = 0
    base_meta = dict(metadata or {})
    seen: set[str] = set()
    for s_index, session in enumerate(sessions, 1):
        when = parse_when(session.date)
        sess_name = session.id or str(s_index)
        turns = list(session.turns)
        for i, turn in enumerate(turns):
            seq += 1
            if not (turn.text and turn.text.strip()) and not (turn.caption and turn.caption.strip()):
                continue
            before = _side(turns[max(0, i - context_turns):i][::-1], context_chars)
            after = _side(turns[i + 1:i + 1 + context_turns], context_chars)
            meta: dict[str, Any] = {**base_meta, **dict(turn.metadata), "thread": thread, "session": sess_name, "seq": seq,
                                    "speaker": turn.speaker}
            if turn.id is not None:
                meta["turn_id"] = turn.id
            if when is not None:
                meta["date"] = when.date().isoformat()
            elif session.date:
                meta["date"] = session.date
            context = " … ".join(x for x in (before, after) if x)
            if context:
                meta["context"] = context
            title = _one_line(turn.speaker)[:80]
            if when is not None:
                title += f", {_day(when)}"
            elif session.date:
                title += f", {_one_line(session.date)[:60]}"
            content = render(turn, when, session.date)
            if content in seen:  # the same words said twice ("Thanks!") are two turns, not a duplicate memory
                content += f"\n(turn {turn.id if turn.id is not None else seq})"
            seen.add(content)
            drafts.append(MemoryDraft(
                content=content, title=title[:200], kind=kind, scope=scope,
                session_id=session_id, user_id=user_id, tags=tuple(tags), metadata=meta,
            ))
    return drafts


def _side(turns: Sequence[Turn], limit: int) -> str:
    """Neighbour texts, nearest first, within ``limit`` characters (cut on a word boundary)."""
    parts: list[str] = []
    room = limit
    for turn in turns:
        if room < 20:
            break
        text = _context_text(turn)
        if len(text) > room:
            text = text[:room].rsplit(" ", 1)[0]
        parts.append(text)
        room -= len(text) + 3
    return " … ".join(parts)


def import_transcript(
    store: MemoryStore,
    sessions: Sequence[Session],
    *,
    thread: str,
    batch_size: int = 500,
    progress: Callable[[int], None] | None = None,
    **options: Any,
) -> list[RememberResult]:
    """Write a transcript through the bulk import path; returns one result per written turn."""
    drafts = transcript_drafts(sessions, thread=thread, **options)
    return store.remember_many(drafts, source="import", batch_size=batch_size, progress=progress)
