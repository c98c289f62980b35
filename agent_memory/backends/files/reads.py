"""The read side of the files store: argument checks, visibility of one record, and list filters.

Every read answers only about records the caller may see: a record that is hidden, missing or
unreadable is "not found" with the same words (an unreadable file is never echoed; ``doctor``
names it), and only a caller who could see a record learns that it expired. ``get`` checks the partition
on the index row before it opens the file (then checks the file again), so a hidden id costs what a
missing one does: its timing does not tell that it exists.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from agent_memory.backends.files.index_schema import date_filter_sql, scope_filter_sql, visibility_sql
from agent_memory.errors import InvalidIdError, InvalidInputError, NotFoundError
from agent_memory.model import scopes
from agent_memory.model.queries import _parse_when, as_of_filter, check_strings, date_filters, kinds_of, scopes_of
from agent_memory.model.records import MemoryRecord, RecordParseError, Scope, normalize_tags, validate_id
from agent_memory.model.values import shown
from agent_memory.model.wording import record_not_found
from agent_memory.search.types import SearchRequest

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.files.parts import StoreParts


def not_found(record_id: str) -> NotFoundError:
    return record_not_found(record_id)


def _missing(store: StoreParts, record_id: str, session_id: str | None, user_id: str | None) -> NotFoundError:
    """No live record: archived (said only to a caller who may see the archived record), else not found."""
    from agent_memory.backends.files.history import read_archived

    rec = read_archived(store, record_id)
    return record_not_found(record_id, archived=rec is not None and in_partition_of(rec, session_id, user_id))


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
    """The scope rule (:mod:`agent_memory.model.scopes`) for one record, expiry aside."""
    return scopes.may_see(rec.scope.value, rec.session_id, rec.user_id, session_id=session_id, user_id=user_id, namespace=rec.namespace)


def may_see(rec: MemoryRecord, session_id: str | None, user_id: str | None) -> bool:
    """Visibility of one parsed record: its partition, and not expired."""
    return in_partition_of(rec, session_id, user_id) and not expired(rec)


def get(store: StoreParts, record_id: str, session_id: str | None, user_id: str | None) -> MemoryRecord:
    """One record, fresh from its file, if the caller may see it (see the module docstring)."""
    name = os.path.basename(path_for(store, record_id))
    check_strings(session_id=session_id, user_id=user_id)
    store.open()
    row = store.index.guarded(
        lambda c: c.execute("SELECT scope, session_id, user_id, namespace FROM records WHERE id = ?", (record_id,)).fetchone()
    )
    if row is not None and not scopes.may_see(
        row["scope"], row["session_id"], row["user_id"], session_id=session_id, user_id=user_id, namespace=row["namespace"]
    ):
        raise not_found(record_id)  # hidden: answered from the index, so it costs what a missing id costs
    try:  # the file is the truth, for the content and for who may see it (no lock, no rescan)
        rec: MemoryRecord | None = store.index.load_file(name)[0]
    except (OSError, RecordParseError):  # missing, a symlink, a name the OS refuses, or unreadable
        rec = None
    if rec is None and row is None:
        raise _missing(store, record_id, session_id, user_id)
    if rec is None or not in_partition_of(rec, session_id, user_id):
        raise not_found(record_id)
    if expired(rec):
        raise NotFoundError(f"record {shown(record_id)} expired at {rec.expires} (it is archived by the next sweep)")
    return rec


def path_for(store: StoreParts, record_id: str) -> str:
    """The record file path of a valid id (never outside ``records/``)."""
    name = f"{validate_id(record_id)}.md"
    path = store.records_dir / name
    if path.parent != store.records_dir:
        raise InvalidIdError(f"invalid record id: {shown(record_id)}")
    return str(path)


def list_where(
    session_id: str | None,
    user_id: str | None,
    tags: Iterable[str],
    scope: Scope | str | Sequence[Scope | str] | None,
    kind: str | Sequence[str] | None,
    dates: dict[str, str | None],
    *,
    include_superseded: bool = False,
    as_of: object = None,
) -> tuple[str, dict[str, Any]]:
    """The WHERE clause (visibility, scope, kind, dates, supersession, every tag) and its parameters for list/count."""
    check_strings(session_id=session_id, user_id=user_id)
    created_after, created_before, updated_after, updated_before = date_filters(**dates)
    req = SearchRequest(
        query="",
        kinds=kinds_of(kind),
        created_after=created_after,
        created_before=created_before,
        updated_after=updated_after,
        updated_before=updated_before,
        include_superseded=bool(include_superseded),
        as_of=as_of_filter(as_of),
    )
    params: dict[str, Any] = scopes.sqlite_params(session_id, user_id)
    where = visibility_sql("r") + scope_filter_sql(scopes_of(scope)) + date_filter_sql(req, params)
    for i, tag in enumerate(normalize_tags(tags)):
        params[f"tag{i}"] = tag
        where += f" AND EXISTS (SELECT 1 FROM record_tags t WHERE t.rid = r.rowid AND t.tag = :tag{i})"
    return where, params
