"""Curated ("hot") memory: short lines with a priority, always first in a caller's core block.

A curated line is an ordinary record (kind :data:`KIND`, scope ``user`` — or ``project`` for a line shared by
everyone —, its priority 1–10 in ``metadata["priority"]``, a ``memory_key`` of its own so its id stays the same
through replaces). Search, history, undo, purge, export and visibility are those of every record; this module
holds only the rules of a line: one line, at most :data:`MAX_CHARS` characters, a priority from 1 to 10, at most
:data:`MAX_LINES` lines per partition, and the order of the block (highest priority first, then newest).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agent_memory.errors import CuratedLimitError, InvalidInputError
from agent_memory.model.lines import summary_line
from agent_memory.model.records import MemoryRecord, Scope
from agent_memory.model.values import shown

__all__ = [
    "CURATED_SCOPES",
    "DEFAULT_PRIORITY",
    "KIND",
    "MAX_CHARS",
    "MAX_LINES",
    "PRIORITY_KEY",
    "CuratedLine",
    "CuratedLimitError",
    "check_line",
    "check_priority",
    "check_scope",
    "curated_order",
    "is_curated",
    "new_key",
    "priority_of",
    "restored_metadata",
]

KIND = "curated"
PRIORITY_KEY = "priority"
DEFAULT_PRIORITY = 5
MAX_CHARS = 300  # one line, characters
MAX_LINES = 50  # per partition: one user's lines, or the project's shared lines
CURATED_SCOPES = (Scope.USER, Scope.PROJECT)


def check_priority(value: object) -> int:
    """A priority as stored: an integer from 1 (low) to 10 (high); anything else is an :class:`InvalidInputError`."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10:
        raise InvalidInputError(f"priority must be an integer from 1 to 10, not {shown(value)}")
    return value


def check_line(text: object) -> str:
    """One curated line: text on one line, not empty, at most :data:`MAX_CHARS` characters (surrounding space trimmed)."""
    if not isinstance(text, str):
        raise InvalidInputError("a curated line must be a string")
    line = text.strip()
    if not line:
        raise InvalidInputError("a curated line must not be empty")
    if "\n" in line or "\r" in line or "\u2028" in line or "\u2029" in line:
        raise InvalidInputError("a curated line must be one line (no line breaks); curate several lines instead")
    if len(line) > MAX_CHARS:
        raise InvalidInputError(f"a curated line is at most {MAX_CHARS} characters (this one has {len(line)}); shorten it")
    return line


def check_scope(scope: Scope | str) -> Scope:
    """``user`` (the caller's own line) or ``project`` (a line shared by every caller)."""
    try:
        parsed = Scope(scope) if not isinstance(scope, Scope) else scope
    except ValueError:
        parsed = None
    if parsed not in CURATED_SCOPES:
        raise InvalidInputError(f"a curated line's scope is user or project, not {shown(scope)}")
    return parsed


def new_key() -> str:
    """The ``memory_key`` of a new line: its id is made from it and stays the same through replaces."""
    return f"curated-{secrets.token_hex(4)}"


def is_curated(kind: str) -> bool:
    return kind == KIND


def priority_of(metadata: Mapping[str, Any] | None) -> int:
    """The priority a record's metadata holds; a missing or hand-edited bad value reads as :data:`DEFAULT_PRIORITY`."""
    value = (metadata or {}).get(PRIORITY_KEY)
    try:
        return check_priority(value)
    except InvalidInputError:
        return DEFAULT_PRIORITY


def restored_metadata(kind: object, metadata: object) -> dict[str, Any]:
    """What making an earlier version of a curated line current brings back besides its text: its priority
    (``restore``/``undo`` on both backends); nothing for other kinds."""
    if kind != KIND or not isinstance(metadata, Mapping) or PRIORITY_KEY not in metadata:
        return {}
    return {PRIORITY_KEY: metadata[PRIORITY_KEY]}


def curated_order(records: Iterable[MemoryRecord]) -> list[MemoryRecord]:
    """Curated records in block order: highest priority first, then newest (``updated``), then id."""
    recs = [r for r in records if r.kind == KIND]
    recs.sort(key=lambda r: r.id)
    recs.sort(key=lambda r: r.updated or r.created, reverse=True)
    recs.sort(key=lambda r: priority_of(r.metadata), reverse=True)
    return recs


@dataclass(frozen=True, slots=True)
class CuratedLine:
    """One curated line as callers see it: id, text, priority, scope, owner and when it last changed."""

    id: str
    text: str
    priority: int
    scope: str
    user_id: str | None = None
    updated: str = ""

    @classmethod
    def of(cls, rec: MemoryRecord) -> "CuratedLine":
        text = summary_line(rec.content, MAX_CHARS)  # one plain line, even for a hand-edited record file
        return cls(rec.id, text, priority_of(rec.metadata), rec.scope.value, rec.user_id, rec.updated or rec.created)

    def line(self) -> str:
        """The line in the core block: ``- [id] (priority N) text``."""
        return f"- [{self.id}] (priority {self.priority}) {self.text}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "priority": self.priority,
            "scope": self.scope,
            "user_id": self.user_id,
            "updated": self.updated,
            "curated": True,
        }
