"""The read side of the files store: argument checks, visibility of one record, and list filters.

Every read answers only about records the caller may see: a record that is hidden, missing or
unreadable is "not found" with the same words (an unreadable file is never echoed; ``doctor``
names it), and only a caller who could see a record learns that it expired.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from agent_memory.backends.files.index_schema import date_filter_sql, scope_filter_sql, visibility_sql
from agent_memory.errors import InvalidIdError, InvalidInputError, NotFoundError
from agent_memory.model.records import MemoryRecord, RecordParseError, Scope, normalize_kind, normalize_tags, parse_scope, validate_id
from agent_memory.search.types import SearchRequest

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.files.store import MemoryStore


def not_found(record_id: str) -> NotFoundError:
    return NotFoundError(f"no record {record_id!r} visible to this caller")


def check_strings(**values: Any) -> None:
    """Caller ids and filters reach SQL: each must be None or a valid Unicode string (typed error otherwise)."""
    for name, value in values.items():
        if value is None:
            continue
        if not isinstance(value, str):
            raise InvalidInputError(f"{name} must be a string")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInputError(f"{name} is not valid Unicode (lone surrogate)") from None


_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _parse_when(value: str) -> dt.datetime | None:
    from agent_memory.model.drafts import _parse_when as parse  # drafts import the redaction package: only when a date is given

    return parse(value)


def utc_text(when: dt.datetime) -> str:
    from agent_memory.model.drafts import utc_text as text

    return text(when)


def date_filters(**values: str | None) -> list[str | None]:
    """Validate ISO date/datetime filters and normalise them to the stored UTC form (``…Z``)."""
    out: list[str | None] = []
    for name, value in values.items():
        if value is None:
            out.append(None)
            continue
        when = _parse_when(value) if isinstance(value, str) and len(value) <= 64 else None
        if when is None:
            raise InvalidInputError(f"{name} must be an ISO date or datetime (e.g. 2026-11-22 or 2026-11-22T10:00:00Z), not {value!r}")
        if name.endswith("_before") and _DATE_ONLY.fullmatch(value.strip()):
            try:  # a day given as an end date includes that whole day
                when = when + dt.timedelta(days=1)
            except OverflowError:
                raise InvalidInputError(f"{name} is out of range: {value!r}") from None
        out.append(utc_text(when))
    return out


def as_of_filter(value: object) -> str | None:
    """``as_of`` as the stored UTC form; a day means the end of that day ("what did we hold on 2023-06-30?")."""
    if value is None:
        return None
    if isinstance(value, (dt.date, dt.datetime)):
        value = value.isoformat()
    [when] = date_filters(as_of=value if isinstance(value, str) else repr(value))
    if when is not None and isinstance(value, str) and _DATE_ONLY.fullmatch(value.strip()):
        parsed = _parse_when(when)
        if parsed is not None:
            try:
                when = utc_text(parsed + dt.timedelta(days=1) - dt.timedelta(microseconds=1))
            except OverflowError:
                raise InvalidInputError(f"as_of is out of range: {value!r}") from None
    return when


def check_options(**options: Any) -> None:
    """Fail at construction, with a clear message, on options that would only break on first use."""
    engine, stop_words = options["engine"], options["stop_words"]
    if engine is not None and not callable(getattr(engine, "search", None)):
        raise InvalidInputError("engine must be a SearchEngine (an object with a search(index, request) method)")
    for name in ("tokenizer", "context_of"):
        if options[name] is not None and not callable(options[name]):
            raise InvalidInputError(f"{name} must be a callable")
    if stop_words is not None and (isinstance(stop_words, str) or not all(isinstance(w, str) for w in stop_words)):
        raise InvalidInputError("stop_words must be an iterable of strings (not one string)")
    for name in ("snippet_lines", "snippet_chars"):
        if not isinstance(options[name], int) or options[name] < 1:
            raise InvalidInputError(f"{name} must be a positive integer")


def expired(rec: MemoryRecord, now: dt.datetime | None = None) -> bool:
    if rec.expires is None:
        return False
    when = _parse_when(rec.expires)
    return when is not None and when <= (now or dt.datetime.now(dt.UTC))


def in_partition_of(rec: MemoryRecord, session_id: str | None, user_id: str | None) -> bool:
    """The scope half of the visibility table (:func:`agent_memory.backends.files.index.visibility_sql`) for one record."""
    if rec.scope in (Scope.PROJECT, Scope.GLOBAL):
        return True
    if rec.scope is Scope.SESSION:
        # a session record belongs to its session and, when it names one, to its user
        return session_id is not None and rec.session_id == session_id and (rec.user_id is None or rec.user_id == user_id)
    return user_id is not None and rec.user_id == user_id


def may_see(rec: MemoryRecord, session_id: str | None, user_id: str | None) -> bool:
    """Visibility of one parsed record: its partition, and not expired."""
    return in_partition_of(rec, session_id, user_id) and not expired(rec)


def get(store: MemoryStore, record_id: str, session_id: str | None, user_id: str | None) -> MemoryRecord:
    """One record, fresh from its file, if the caller may see it (see the module docstring)."""
    name = os.path.basename(path_for(store, record_id))
    check_strings(session_id=session_id, user_id=user_id)
    store.open()
    try:  # the file is the truth, for the content and for who may see it (no lock, no rescan)
        rec: MemoryRecord | None = store.index.load_file(name)[0]
    except (OSError, RecordParseError):  # missing, a symlink, a name the OS refuses, or unreadable
        rec = None
    if rec is None or not in_partition_of(rec, session_id, user_id):
        raise not_found(record_id)
    if expired(rec):
        raise NotFoundError(f"record {record_id!r} expired at {rec.expires} (it is archived by the next sweep)")
    return rec


def path_for(store: MemoryStore, record_id: str) -> str:
    """The record file path of a valid id (never outside ``records/``)."""
    name = f"{validate_id(record_id)}.md"
    path = store.records_dir / name
    if path.parent != store.records_dir:
        raise InvalidIdError(f"invalid record id: {record_id!r}")
    return str(path)


def scopes_of(scope: Scope | str | Sequence[Scope | str] | None) -> tuple[Scope, ...]:
    if scope is None or scope == "":
        return ()
    if isinstance(scope, (str, Scope)):
        return (parse_scope(scope),)
    return tuple(parse_scope(s) for s in scope)


def kinds_of(kind: str | Sequence[str] | None) -> tuple[str, ...]:
    if not kind:
        return ()
    if isinstance(kind, str):
        return (normalize_kind(kind),)
    return tuple(normalize_kind(k) for k in kind)


def list_where(session_id: str | None, user_id: str | None, tags: Iterable[str], scope: Scope | str | Sequence[Scope | str] | None,
               kind: str | Sequence[str] | None, dates: dict[str, str | None], *, include_superseded: bool = False,
               as_of: object = None) -> tuple[str, dict[str, Any]]:
    """The WHERE clause (visibility, scope, kind, dates, supersession, every tag) and its parameters for list/count."""
    check_strings(session_id=session_id, user_id=user_id)
    created_after, created_before, updated_after, updated_before = date_filters(**dates)
    req = SearchRequest(query="", kinds=kinds_of(kind), created_after=created_after, created_before=created_before,
                        updated_after=updated_after, updated_before=updated_before,
                        include_superseded=bool(include_superseded), as_of=as_of_filter(as_of))
    params: dict[str, Any] = {"sid": session_id, "uid": user_id}
    where = visibility_sql("r") + scope_filter_sql(scopes_of(scope)) + date_filter_sql(req, params)
    for i, tag in enumerate(normalize_tags(tags)):
        params[f"tag{i}"] = tag
        where += f" AND EXISTS (SELECT 1 FROM record_tags t WHERE t.rid = r.rowid AND t.tag = :tag{i})"
    return where, params
