"""Frontmatter checks: every known field of a record file type-checked, or a :class:`RecordParseError`.

A file that fails a check is quarantined by the store (never read, never shared); ``doctor`` names it
with the reason and the fix.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from typing import Any

from agent_memory.errors import InvalidInputError
from agent_memory.formats.frontmatter import as_text
from agent_memory.model.values import (
    FIELDS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    Scope,
    normalize_instant,
    normalize_tags,
    validate_id,
)

_CAMEL = {
    "sessionId": "session_id",
    "userId": "user_id",
    "memoryKey": "memory_key",
    "contentHash": "content_hash",
    "happenedAt": "happened_at",
    "validFrom": "valid_from",
    "validTo": "valid_to",
    "supersededBy": "superseded_by",
    "recordedAt": "created",
}


class RecordParseError(InvalidInputError):
    """A record file the store cannot fully understand: it is quarantined (never read, never shared).

    ``reason`` says what is wrong and ``fix`` how to repair the file (shown by ``doctor``)."""

    def __init__(self, reason: str, fix: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.fix = fix


_OWNER_FIX = 'quote it as text, e.g. user_id: "bob"'


def _field_text(data: Mapping[str, Any], name: str, *, max_chars: int = 200, scalars: bool = False) -> str | None:
    """A one-line text field, or a typed refusal. ``scalars``: numbers and dates are accepted as text."""
    value = data.get(name)
    if value is None:
        return None
    ok = (str, int, float, dt.date, dt.time) if scalars else (str, dt.date, dt.datetime)
    if isinstance(value, bool) or not isinstance(value, ok) or (isinstance(value, float) and not math.isfinite(value)):
        raise RecordParseError(f"{name} must be text, not {type(value).__name__}", f"write {name} as quoted text")
    text = as_text(value) or ""
    if len(text) > max_chars or any(c in text for c in "\x00\r\n") or (scalars is False and not text.strip()):
        raise RecordParseError(f"{name} must be one non-empty line of at most {max_chars} characters", f"shorten {name}")
    return text


def _field_when(data: Mapping[str, Any], name: str) -> str | None:
    text = _field_text(data, name, max_chars=64)
    if text is not None and normalize_instant(text) is None:
        raise RecordParseError(f"{name} is not an ISO date or datetime", f"write {name} like 2026-11-22T10:00:00Z")
    return text


def _field_tags(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [t for t in re.split(r"[,\s]+", value) if t]
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise RecordParseError("tags must be a list of text tags", "write tags: [a, b] with words, quoting numbers")
    try:
        return normalize_tags(value)
    except InvalidInputError as exc:
        raise RecordParseError(f"tags: {exc}", f"at most {MAX_TAGS} one-line tags of {MAX_TAG_CHARS} characters") from None


def _field_importance(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, str) and len(value) <= 32:  # YAML 1.1 reads "1e-05" (as our writer renders it) as text
        try:
            value = float(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RecordParseError("importance must be a number", "write importance as a number from 0 to 1")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number) or not 0 <= number <= 1:
        raise RecordParseError("importance is not a number from 0 to 1", "write importance from 0 to 1")
    return number


def _field_scope(known: Mapping[str, Any]) -> tuple[Scope, str | None, str | None]:
    """Scope and owner; a file that names an owner but whose scope cannot be established is refused."""
    session_id = _field_text(known, "session_id")
    user_id = _field_text(known, "user_id")
    raw = known.get("scope")
    if raw is None:
        if session_id is not None or user_id is not None:
            raise RecordParseError(
                "names an owner (user_id/session_id) but no scope", "add scope: user (or session), or remove the owner fields"
            )
        return Scope.PROJECT, None, None
    if not isinstance(raw, str):
        raise RecordParseError(f"scope must be text, not {type(raw).__name__}", "write scope: project, user, session or global")
    try:
        scope = Scope(raw.strip().lower())
    except ValueError:
        raise RecordParseError("unknown scope", "write scope: project, user, session or global") from None
    if scope is Scope.USER and user_id is None:
        raise RecordParseError("scope user without a user_id", "add user_id: <the user>")
    if scope is Scope.SESSION and session_id is None:
        raise RecordParseError("scope session without a session_id", "add session_id: <the session>")
    return scope, session_id, user_id


def _known_fields(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split frontmatter into known fields (keys matched case-insensitively, camelCase accepted) and the rest."""
    metadata = data.pop("metadata", data.pop("Metadata", None))
    if metadata is not None and not isinstance(metadata, dict):
        raise RecordParseError("metadata must be a mapping", "write metadata as key: value lines")
    metadata = dict(metadata or {})
    for camel, snake in _CAMEL.items():  # camelCase metadata from JSON-frontmatter providers
        if camel in metadata and snake not in data:
            data[snake] = metadata.pop(camel)
    known: dict[str, Any] = {}
    for key in list(data):
        if not isinstance(key, str):
            raise RecordParseError("a frontmatter key is not text", "write keys as words")
        name = _CAMEL.get(key, key.strip().lower().replace("-", "_"))
        name = "created" if name == "recorded_at" else name  # recorded_at is created: when the record was written
        if name in FIELDS:
            if name in known and known[name] != data[key]:
                raise RecordParseError(f"field {name} is given twice with different values", f"keep one {name}")
            known[name] = data.pop(key)
    metadata.update(data)  # unknown top-level keys survive as metadata
    return known, _clean_metadata(metadata)


def _clean_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Metadata values must be JSON: text keys, finite numbers; dates become ISO text (iterative)."""
    todo: list[Any] = [metadata]
    while todo:
        item = todo.pop()
        pairs = list(item.items()) if isinstance(item, dict) else list(enumerate(item))
        for key, value in pairs:
            if isinstance(item, dict) and not isinstance(key, str):
                item.pop(key)
                item[str(key)] = value
            if isinstance(value, (dict, list)):
                todo.append(value)
            elif isinstance(value, float) and not math.isfinite(value):
                raise RecordParseError("metadata holds NaN or infinity", "write finite numbers")
            elif isinstance(value, (dt.date, dt.time)):
                item[str(key) if isinstance(item, dict) else key] = as_text(value)
    return metadata


def clock_fields(known: Mapping[str, Any], record_id: str) -> dict[str, str | None]:
    """``happened_at``, ``valid_from``, ``valid_to`` (instants) and ``superseded_by``/``supersedes`` (record ids).

    A validity interval that ends before it starts, or a record superseded by itself, is refused."""
    out: dict[str, str | None] = {name: _field_when(known, name) for name in ("happened_at", "valid_from", "valid_to")}
    for name in ("superseded_by", "supersedes"):
        value = _field_text(known, name, max_chars=240)
        if value is not None:
            try:
                validate_id(value)
            except InvalidInputError:
                raise RecordParseError(f"{name} is not a record id", f"write {name} as the id of another record") from None
            if value == record_id:
                raise RecordParseError(f"{name} names the record itself", f"remove {name} or name another record")
        out[name] = value
    start, end = out["valid_from"], out["valid_to"]
    if start and end and (normalize_instant(end) or "") < (normalize_instant(start) or ""):
        raise RecordParseError("valid_to is earlier than valid_from", "swap them or correct one of them")
    return out
