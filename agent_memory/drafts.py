"""Drafts and their verification: what a write asks for, checked and redacted before any backend stores it.

Every backend calls :func:`prepare_draft`, so validation, redaction and defaults are one policy everywhere:

- **Default scope** (no ``scope`` given): a write that names a user goes to that user's partition (``user``,
  also when it names a session too: private to the person and still there next conversation); one that names
  only a session goes to that session; one that names neither goes to ``project``. Only an explicit
  ``scope="project"|"global"`` (or a store opened with an explicit ``default_scope``) shares a record.
- **Expiry** is one UTC instant (``YYYY-MM-DDTHH:MM:SS.ffffffZ``) from the moment of writing; an ``expires``
  already past is refused ("already expired").
- **Clocks**: ``happened_at`` (when it happened or was said) and ``valid_from``/``valid_to`` (when it was true) are
  kept as a day (``2023-05-07``) when given as one, else as one UTC instant; an interval that ends before it starts
  is refused. ``supersedes`` names the record this draft replaces as the current fact (see ``docs/time.md``).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from . import redact as _redact
from .errors import InvalidInputError
from .records import (
    MAX_TITLE_CHARS,
    SOURCES,
    MemoryRecord,
    Scope,
    check_content,
    check_text_field,
    content_hash,
    default_title,
    normalize_kind,
    normalize_tags,
    now_iso,
    parse_scope,
    validate_id,
    validate_key,
)

OnExisting = Literal["append", "replace", "skip"]
Status = Literal["created", "duplicate", "appended", "replaced", "skipped", "superseded"]


@dataclass(frozen=True, slots=True)
class RememberResult:
    """Outcome of one ``remember``: the record id and what happened."""

    id: str
    status: Status
    path: str
    redactions: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "path": self.path, "redactions": self.redactions}


@dataclass(frozen=True, slots=True)
class MemoryDraft:
    """A memory proposed for writing (by an extractor, an import file or a tool call)."""

    content: str
    title: str | None = None
    kind: str | None = None
    scope: Scope | str | None = None
    session_id: str | None = None
    user_id: str | None = None
    tags: tuple[str, ...] | list[str] = ()
    memory_key: str | None = None
    on_existing: OnExisting = "append"
    expires: str | None = None
    importance: float | None = None
    metadata: Mapping[str, Any] | None = None
    happened_at: str | None = None
    valid_from: str | None = None
    valid_to: str | None = None
    supersedes: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryDraft:
        if not isinstance(data, Mapping):
            raise InvalidInputError("a memory draft must be a JSON object")
        allowed = set(cls.__dataclass_fields__)
        unknown = set(data) - allowed
        if unknown:
            raise InvalidInputError(f"unknown field(s): {', '.join(sorted(map(str, unknown)))}")
        if "content" not in data:
            raise InvalidInputError("a memory draft needs 'content'")
        return cls(**dict(data))


MAX_METADATA_DEPTH = 16


def _parse_when(value: str) -> dt.datetime | None:
    """An ISO date or datetime as an aware UTC datetime (naive means UTC), or None if it is not one."""
    try:
        when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        when = when if when.tzinfo else when.replace(tzinfo=dt.UTC)
        return when.astimezone(dt.UTC)  # an offset at the edge of the calendar overflows here
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None


def utc_text(when: dt.datetime) -> str:
    """The stored form of an instant: UTC with microseconds and ``Z`` (sorts as text in time order)."""
    return when.astimezone(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def normalize_expires(value: object, *, now: dt.datetime | None = None) -> str:
    """``expires`` as one UTC instant; refuse text that is not a date and instants already past."""
    when = _parse_when(value) if isinstance(value, str) else None
    if when is None:
        raise InvalidInputError(f"expires must be an ISO date or datetime (e.g. 2026-12-31 or 2026-12-31T18:00:00Z), not {value!r}")
    if when <= (now or dt.datetime.now(dt.UTC)):
        raise InvalidInputError(f"expires {value!r} is already expired; give a future date or datetime")
    return utc_text(when)


_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def normalize_when(name: str, value: object) -> str:
    """A clock value as stored: ``YYYY-MM-DD`` for a day, else one UTC instant; a typed error for anything else."""
    if isinstance(value, dt.datetime):
        value = value.isoformat()
    elif isinstance(value, dt.date):
        value = value.isoformat()
    if not isinstance(value, str) or len(value) > 64:
        raise InvalidInputError(f"{name} must be an ISO date or datetime (e.g. 2023-05-07 or 2023-05-07T18:00:00Z)")
    text = value.strip()
    when = _parse_when(text)
    if when is None:
        raise InvalidInputError(f"{name} must be an ISO date or datetime (e.g. 2023-05-07 or 2023-05-07T18:00:00Z), "
                                f"not {value!r}")
    return text if _DAY.fullmatch(text) else utc_text(when)


def clock_values(draft: MemoryDraft) -> dict[str, str | None]:
    """The draft's ``happened_at``/``valid_from``/``valid_to`` checked and normalised, and ``supersedes``."""
    out = {name: None if getattr(draft, name) is None else normalize_when(name, getattr(draft, name))
           for name in ("happened_at", "valid_from", "valid_to")}
    start = _parse_when(out["valid_from"] or "")
    end = _parse_when(out["valid_to"] or "")
    if start is not None and end is not None and end < start:
        raise InvalidInputError(f"valid_to {out['valid_to']} is earlier than valid_from {out['valid_from']}")
    return {**out, "supersedes": None if draft.supersedes is None else validate_id(draft.supersedes)}


def default_scope_for(session_id: str | None, user_id: str | None, default: Scope | None) -> Scope:
    """The scope of a write that names none (see the module docstring)."""
    if default is not None:
        return default
    if user_id:
        return Scope.USER
    if session_id:
        return Scope.SESSION
    return Scope.PROJECT


def explicit_fields(draft: MemoryDraft) -> frozenset[str]:
    """The optional fields a draft actually sets: a keyed replace or append applies exactly these."""
    names = ("title", "kind", "expires", "importance", "happened_at", "valid_from", "valid_to")
    out = {n for n in names if getattr(draft, n) is not None}
    if draft.tags:
        out.add("tags")
    return frozenset(out)


def _clean_metadata(value: Any, depth: int = 0) -> Any:
    if depth > MAX_METADATA_DEPTH:
        raise InvalidInputError(f"metadata is nested more than {MAX_METADATA_DEPTH} levels deep")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInputError("metadata is not valid Unicode (lone surrogate)") from None
        return _redact.redact(value).text
    if isinstance(value, Mapping):
        return {_clean_metadata(str(k), depth + 1): _clean_metadata(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean_metadata(v, depth + 1) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return json.dumps(value)  # NaN/Infinity are not JSON: kept as their text
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return str(value)


def _owner(scope: Scope, session_id: str | None, user_id: str | None) -> tuple[str | None, str | None]:
    for name, value in (("session_id", session_id), ("user_id", user_id)):
        if value is not None:
            check_text_field(name, value, 200)
            if not value.strip():
                raise InvalidInputError(f"{name} is empty")
            if _redact.contains_secret(value):  # ids are written to disk and shown in listings: never a secret
                raise InvalidInputError(f"{name} looks like a secret; refusing to store it")
    if scope is Scope.SESSION and not session_id:
        raise InvalidInputError("scope 'session' needs a session_id")
    if scope is Scope.USER and not user_id:
        raise InvalidInputError("scope 'user' needs a user_id")
    return session_id, user_id


def prepare_draft(draft: MemoryDraft, source: str, default_scope: Scope | None = None) -> tuple[MemoryRecord, int]:
    """Validate and redact one draft into a record without an id (the backend allocates it)."""
    content = check_content(draft.content)
    red = _redact.redact(content)
    title_in = draft.title if draft.title is not None else None
    if title_in is not None:
        title_in = check_text_field("title", title_in, MAX_TITLE_CHARS).strip()
    # a title derived from the already-redacted content needs no second pass
    title_red = _redact.redact(title_in) if title_in else _redact.RedactionResult(default_title(red.text), 0, ())
    if draft.scope is None or draft.scope == "":
        scope = default_scope_for(draft.session_id, draft.user_id, default_scope)
    else:
        scope = parse_scope(draft.scope)
    session_id, user_id = _owner(scope, draft.session_id, draft.user_id)
    tags = normalize_tags(draft.tags)
    key = validate_key(draft.memory_key) if draft.memory_key is not None else None
    raw_tags = [draft.tags] if isinstance(draft.tags, str) else list(draft.tags or ())
    raw = [(label, v) for label, v in (("kind", draft.kind), *(("tag", t) for t in raw_tags)) if isinstance(v, str)]
    for label, value in (("memory_key", key), *(("tag", t) for t in tags), *raw):
        if value and _redact.contains_secret(value):
            raise InvalidInputError(f"{label} looks like a secret; refusing to store it")
    if source not in SOURCES:
        raise InvalidInputError(f"unknown source {source!r}")
    if draft.on_existing not in ("append", "replace", "skip"):
        raise InvalidInputError(f"on_existing must be append, replace or skip, not {draft.on_existing!r}")
    expires = None if draft.expires is None else normalize_expires(draft.expires)
    importance = draft.importance
    if importance is not None:
        try:
            ok = not isinstance(importance, bool) and isinstance(importance, (int, float)) and 0 <= float(importance) <= 1
        except OverflowError:  # a huge int
            ok = False
        if not ok:
            raise InvalidInputError("importance must be a number between 0 and 1")
    if draft.metadata is not None and not isinstance(draft.metadata, Mapping):
        raise InvalidInputError("metadata must be a mapping")
    metadata = _clean_metadata(dict(draft.metadata or {}))
    clocks = clock_values(draft)
    now = now_iso()
    rec = MemoryRecord(
        id="", content=red.text, title=title_red.text or "memory", kind=normalize_kind(draft.kind), scope=scope,
        session_id=session_id, user_id=user_id, tags=tags, memory_key=key, source=source, created=now, updated=now,
        expires=expires, importance=None if importance is None else float(importance),
        content_hash=content_hash(red.text), metadata=metadata, **clocks,  # type: ignore[arg-type]
    )
    return rec, red.count + title_red.count


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, MemoryDraft | str]]:
    """Yield ``(line_number, draft or error message)`` for each non-empty line of a JSONL file."""
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield n, MemoryDraft.from_dict(json.loads(line))
            except (ValueError, TypeError) as exc:
                yield n, f"line {n}: {exc}"
            except RecursionError:  # JSON nested thousands deep
                yield n, f"line {n}: JSON nested too deeply"
