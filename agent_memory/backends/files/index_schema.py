"""The index's schema and its SQL fragments: columns, visibility, the current/as-of filters, row ↔ record.

:mod:`agent_memory.backends.files.index` (the connection, sync and writes) re-exports every name here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_memory.model import scopes
from agent_memory.model.records import MemoryRecord, Scope, normalize_instant
from agent_memory.search.types import SearchRequest

if TYPE_CHECKING:  # pragma: no cover
    import sqlite3

# 4: instants stored as normalised UTC; 5: two clocks and supersession; 6: namespaces; 7: the file index holds only the
# files not named after their record (``<id>.md``, what the store writes: those are found by id)
SCHEMA_VERSION = "7"
#: The index of files named otherwise (hand-made files): a write of ``<id>.md`` adds no row to it (one B-tree fewer to
#: update at random places per write: a big store's writes are bound by the pages they dirty).
ODD_FILE_INDEX = "CREATE INDEX IF NOT EXISTS records_odd_file ON records(file) WHERE file <> id || '.md'"
#: The index row of a file by name (binds ``:name`` and ``:stem``, the name less ``.md``): by id, else by that index.
FILE_ROW_SQL = "SELECT {cols} FROM records WHERE id = :stem AND file = :name UNION ALL SELECT {cols} FROM records WHERE file = :name AND file <> id || '.md' LIMIT 1"
_V7 = ("DROP INDEX IF EXISTS records_file", ODD_FILE_INDEX)
#: Versions an index is migrated from in place (ALTER TABLE, indexes) instead of rebuilt from the files.
MIGRATIONS: dict[str, tuple[str, ...]] = {"5": ("ALTER TABLE records ADD COLUMN namespace TEXT NOT NULL DEFAULT ''", *_V7), "6": _V7}
DEFAULT_FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
FTS_COLUMNS = ("title", "tags", "body", "context")
_RECORD_COLS = (
    "id",
    "file",
    "mtime_ns",
    "size",
    "scope",
    "session_id",
    "user_id",
    "namespace",
    "kind",
    "title",
    "tags",
    "memory_key",
    "source",
    "created",
    "updated",
    "expires",
    "importance",
    "content_hash",
    "body_line",
    "summary",
    "metadata",
    "happened_at",
    "valid_from",
    "valid_to",
    "superseded_by",
    "supersedes",
)


# FTS5 secure-delete (SQLite 3.44+) removes a deleted row's terms at once; older versions need an 'optimize'
def live_sql(alias: str = "r") -> str:
    """Not expired: no ``expires``, or one still in the future (stored as normalised UTC text, which sorts as time)."""
    return f"({alias}.expires IS NULL OR {alias}.expires > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))"


def visibility_sql(alias: str = "r", *, include_expired: bool = False) -> str:
    """The scope rule (:func:`agent_memory.model.scopes.sqlite_sql`) and, unless ``include_expired``, "not expired";
    binds ``:sid``, ``:uid`` and ``:ns`` (:func:`visible_params`). Applied inside queries, so it acts before ranking and limits.
    """
    rule = scopes.sqlite_sql(alias)
    return rule if include_expired else f"({rule} AND {live_sql(alias)})"


def fts_secure_delete() -> bool:
    """Whether this SQLite's FTS5 can delete securely (3.44+); sqlite3 is imported only by who needs it."""
    import sqlite3

    return sqlite3.sqlite_version_info >= (3, 44, 0)


def current_sql(alias: str = "r") -> str:
    """Not superseded: the default of every read but ``get`` (``include_superseded`` or ``as_of`` lift it)."""
    return f"{alias}.superseded_by IS NULL"


def as_of_sql(alias: str = "r", param: str = ":as_of") -> str:
    """In force at the instant ``param``: started (``valid_from``, else ``happened_at``, else written) and not ended."""
    start = f"coalesce({alias}.valid_from, {alias}.happened_at, {alias}.created)"
    return f"({start} <= {param} AND ({alias}.valid_to IS NULL OR {alias}.valid_to > {param}))"


def time_sql(params: dict[str, Any], *, include_superseded: bool = False, as_of: str | None = None, alias: str = "r") -> str:
    """`` AND …``: the supersession and as-of part of a read's WHERE clause (``as_of`` already normalised)."""
    if as_of is not None:
        params["as_of"] = as_of
        return f" AND {as_of_sql(alias)}"
    return "" if include_superseded else f" AND {current_sql(alias)}"


def schema_sql(fts_tokenizer: str) -> str:
    cols = ", ".join(
        f"{c} {'INTEGER' if c in ('mtime_ns', 'size', 'body_line') else 'REAL' if c == 'importance' else 'TEXT'}"
        + (" NOT NULL DEFAULT ''" if c == "namespace" else "")
        for c in _RECORD_COLS
        if c != "id"
    )
    tok = fts_tokenizer.replace("'", "''")
    return f"""
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
    CREATE TABLE records (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, {cols});
    CREATE INDEX records_key ON records(memory_key) WHERE memory_key IS NOT NULL;
    CREATE INDEX records_hash ON records(content_hash);
    CREATE INDEX records_updated ON records(updated);
    {ODD_FILE_INDEX};
    CREATE INDEX records_supersedes ON records(supersedes) WHERE supersedes IS NOT NULL;
    CREATE TABLE record_tags (rid INTEGER NOT NULL, tag TEXT NOT NULL);
    CREATE INDEX record_tags_tag ON record_tags(tag, rid);
    CREATE INDEX record_tags_rid ON record_tags(rid);
    CREATE VIRTUAL TABLE fts USING fts5({", ".join(FTS_COLUMNS)}, tokenize = '{tok}');
    {"INSERT INTO fts(fts, rank) VALUES ('secure-delete', 1);" if fts_secure_delete() else ""}
    """


_CANONICAL_INSTANT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def _instant(value: str | None) -> str | None:
    """An instant as stored in the index: normalised UTC text, so SQL compares it as time."""
    if not value:
        return None
    if _CANONICAL_INSTANT.fullmatch(value):  # already normalised (what a write stamps): nothing to parse
        return value
    return normalize_instant(value) or value


def row_to_record(row: sqlite3.Row, records_dir: Path, content: str = "") -> MemoryRecord:
    """A record built from index metadata (content only if given)."""
    return MemoryRecord(
        id=row["id"],
        content=content,
        title=row["title"] or "",
        kind=row["kind"] or "fact",
        scope=Scope(row["scope"]),
        session_id=row["session_id"],
        user_id=row["user_id"],
        namespace=row["namespace"] or "",
        tags=tuple(json.loads(row["tags"] or "[]")),
        memory_key=row["memory_key"],
        source=row["source"] or "manual",
        created=row["created"] or "",
        updated=row["updated"] or "",
        expires=row["expires"],
        importance=row["importance"],
        content_hash=row["content_hash"] or "",
        metadata=json.loads(row["metadata"] or "{}"),
        path=str(records_dir / row["file"]),
        body_line=row["body_line"] or 1,
        happened_at=row["happened_at"],
        valid_from=row["valid_from"],
        valid_to=row["valid_to"],
        superseded_by=row["superseded_by"],
        supersedes=row["supersedes"],
    )


def visible_params(session_id: str | None, user_id: str | None) -> dict[str, Any]:
    """What :func:`visibility_sql` binds (:func:`agent_memory.model.scopes.sqlite_params`: the caller and its view)."""
    return scopes.sqlite_params(session_id, user_id)


def scope_filter_sql(scopes: Iterable[Scope] | None, alias: str = "r") -> str:
    if not scopes:
        return ""
    vals = ",".join(f"'{Scope(s).value}'" for s in scopes)
    return f" AND {alias}.scope IN ({vals})"


def date_filter_sql(req: SearchRequest, params: dict[str, Any], alias: str = "r") -> str:
    """Date, kind, supersession and as-of filters of a read (`` AND …``), binding their parameters."""
    sql = time_sql(params, include_superseded=req.include_superseded, as_of=req.as_of, alias=alias)
    for name, op in (("created_after", ">="), ("created_before", "<"), ("updated_after", ">="), ("updated_before", "<")):
        value = getattr(req, name)
        if value:
            params[name] = value
            sql += f" AND {alias}.{name.split('_')[0]} {op} :{name}"
    if req.kinds:
        kinds = ",".join(f":kind{i}" for i in range(len(req.kinds)))
        params.update({f"kind{i}": k for i, k in enumerate(req.kinds)})
        sql += f" AND {alias}.kind IN ({kinds})"
    return sql
