"""Import of our own JSONL export: the same ids, timestamps, keys, scopes and metadata, byte for byte.

Every line is validated (a bad line is skipped with its line number and reason, nothing else is lost) and its
text goes through the same redaction as every write. Our export holds only text the store already redacted,
so a re-import of it changes nothing and skips nothing. Re-running an import skips every record already there
(``exists``); a different record under the same id is never overwritten (``conflict``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from .. import redact as _redact
from ..drafts import normalize_when
from ..errors import InvalidIdError, InvalidInputError
from ..records import (
    MAX_TITLE_CHARS,
    MemoryRecord,
    Scope,
    check_content,
    check_text_field,
    content_hash,
    default_title,
    parse_scope,
    validate_id,
)
from ._write import Pending, Target, batch_size, write_records
from .export import HEADER
from .report import ImportReport

__all__ = ["record_from_dict", "restore_lines"]


def _opt_text(data: Mapping[str, Any], name: str, max_chars: int = 200) -> str | None:
    value = data.get(name)
    if value is None:
        return None
    return check_text_field(name, value, max_chars)


def _redact_value(value: Any, counter: list[int]) -> Any:
    if isinstance(value, str):
        res = _redact.redact(value)
        counter[0] += res.count
        return res.text
    if isinstance(value, Mapping):
        return {k: _redact_value(v, counter) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_value(v, counter) for v in value]
    return value


def record_from_dict(data: object) -> tuple[MemoryRecord, int]:
    """One exported object as a record (redacted) and the number of redactions; raises InvalidInputError."""
    if not isinstance(data, Mapping):
        raise InvalidInputError("a line must be a JSON object")
    unknown = set(data) - {"id", "title", "kind", "scope", "session_id", "user_id", "tags", "memory_key", "source",
                           "created", "updated", "expires", "importance", "content_hash", "metadata", "content", "path",
                           "happened_at", "valid_from", "valid_to", "superseded_by", "supersedes", "recorded_at"}
    if unknown:
        raise InvalidInputError(f"unknown field(s): {', '.join(sorted(map(str, unknown)))}")
    counter = [0]
    content = _redact_value(check_content(data.get("content")), counter)
    title = _opt_text(data, "title", MAX_TITLE_CHARS)
    scope = parse_scope(data.get("scope"))
    session_id, user_id = _opt_text(data, "session_id"), _opt_text(data, "user_id")
    if scope is Scope.SESSION and not session_id:
        raise InvalidInputError("scope 'session' needs a session_id")
    if scope is Scope.USER and not user_id:
        raise InvalidInputError("scope 'user' needs a user_id")
    tags = data.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise InvalidInputError("tags must be a list of strings")
    importance = data.get("importance")
    if importance is not None and (isinstance(importance, bool) or not isinstance(importance, (int, float))):
        raise InvalidInputError("importance must be a number or null")
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise InvalidInputError("metadata must be an object")
    created = _opt_text(data, "created", 64)
    if not created:
        raise InvalidInputError("created is missing (an export always has it)")
    rec = MemoryRecord(
        id=validate_id(data.get("id")),
        content=content,
        title=_redact_value(title, counter) if title else default_title(content),
        kind=_opt_text(data, "kind", 64) or "fact",
        scope=scope,
        session_id=session_id,
        user_id=user_id,
        tags=tuple(t.strip().lower() for t in tags if t.strip()),
        memory_key=_opt_text(data, "memory_key"),
        source=_opt_text(data, "source", 64) or "manual",
        created=created,
        updated=_opt_text(data, "updated", 64) or created,
        expires=_opt_text(data, "expires", 64),
        importance=None if importance is None else float(importance),
        content_hash=content_hash(content),
        metadata=_redact_value(dict(metadata), counter),
        **_clocks(data),  # type: ignore[arg-type]
    )
    return rec, counter[0]


def _clocks(data: Mapping[str, Any]) -> dict[str, str | None]:
    """The two clocks and supersession links of an exported record (docs/time.md), checked."""
    out: dict[str, str | None] = {}
    for name in ("happened_at", "valid_from", "valid_to"):
        value = _opt_text(data, name, 64)
        out[name] = None if value is None else normalize_when(name, value)
    for name in ("superseded_by", "supersedes"):
        value = data.get(name)
        out[name] = None if value is None else validate_id(value)
    return out


def restore_lines(target: Target, lines: Iterable[tuple[int, str]], report: ImportReport) -> ImportReport:
    """Import numbered JSONL lines of our export into ``target`` (see the module docstring)."""
    pending: list[Pending] = []
    size = batch_size(target)
    for n, line in lines:
        if not line.strip():
            continue
        where = f"line {n}"
        try:
            data = json.loads(line)
            if data == HEADER:
                continue
            rec, redactions = record_from_dict(data)
        except (InvalidInputError, InvalidIdError) as exc:
            report.skip(where, "invalid", str(exc), data.get("id") if isinstance(data, dict) else None)
            continue
        except (ValueError, RecursionError) as exc:
            report.skip(where, "invalid", f"not JSON: {' '.join(str(exc).split())[:200]}")
            continue
        pending.append((where, rec, redactions))
        if len(pending) >= size:
            write_records(target, pending, report, dedupe=False)
            pending.clear()
    write_records(target, pending, report, dedupe=False)
    return report
