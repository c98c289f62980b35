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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_memory.backends.files.store import MemoryDraft, MemoryStore, RememberResult
from agent_memory.model.dates import date_words, parse_when, resolve_relative_dates, spoken_day
from agent_memory.model.records import Scope

__all__ = [
    "Turn",
    "Session",
    "transcript_drafts",
    "import_transcript",
    "parse_when",
    "date_words",
    "resolve_relative_dates",
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
    def from_messages(
        cls,
        messages: Iterable[Mapping[str, Any]],
        *,
        date: str | None = None,
        id: str | None = None,
        names: Mapping[str, str] | None = None,
    ) -> "Session":
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
            before = _side(turns[max(0, i - context_turns) : i][::-1], context_chars)
            after = _side(turns[i + 1 : i + 1 + context_turns], context_chars)
            meta: dict[str, Any] = {
                **base_meta,
                **dict(turn.metadata),
                "thread": thread,
                "session": sess_name,
                "seq": seq,
                "speaker": turn.speaker,
            }
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
                title += f", {spoken_day(when)}"
            elif session.date:
                title += f", {_one_line(session.date)[:60]}"
            content = render(turn, when, session.date)
            if content in seen:  # the same words said twice ("Thanks!") are two turns, not a duplicate memory
                content += f"\n(turn {turn.id if turn.id is not None else seq})"
            seen.add(content)
            drafts.append(
                MemoryDraft(
                    content=content,
                    title=title[:200],
                    kind=kind,
                    scope=scope,
                    session_id=session_id,
                    user_id=user_id,
                    tags=tuple(tags),
                    metadata=meta,
                )
            )
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
