"""Supersession on PostgreSQL: the files backend's rules (:mod:`agent_memory.backends.files.supersede`) over rows.

The old row stays, with ``superseded_by`` and ``valid_to``; unique keys and content hashes are unique among
current rows only, so the old row keeps both. Everything runs in the caller's transaction, rows locked.
"""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

from agent_memory.backends.postgres import links
from agent_memory.backends.postgres.rows import COLUMNS, SELECT, record_params, row_to_record, tenant_part
from agent_memory.errors import NotFoundError
from agent_memory.model.drafts import RememberResult
from agent_memory.model.records import MemoryRecord, new_id
from agent_memory.model.supersession import MAX_CHAIN, check_supersede, ended

_INSERT = f"({', '.join(COLUMNS)}) VALUES ({', '.join(f'%({c})s' for c in COLUMNS)})"
_SETS = ", ".join(f"{c} = %({c})s" for c in COLUMNS if c not in ("tenant", "id", "part"))


def _bind(rec: MemoryRecord) -> dict[str, Any]:
    params = record_params(rec)
    params["metadata"] = Jsonb(params["metadata"])
    return params


async def current_of(w: Any, conn: Any, row: Any) -> Any:
    """The current row that ``row`` was (eventually) superseded by, in the same partition; None if there is none."""
    seen: set[str] = set()
    while row is not None and row["superseded_by"] and row["id"] not in seen and len(seen) < MAX_CHAIN:
        seen.add(row["id"])
        cur = await conn.execute(
            f"SELECT {SELECT} FROM {w.t} WHERE tenant = %s AND part = %s AND id = %s AND (expires IS NULL OR expires > now()) FOR UPDATE",
            (row["tenant"], row["part"], row["superseded_by"]),
        )
        row = await cur.fetchone()
    return None if row is None or row["superseded_by"] else row


async def keep_version(w: Any, conn: Any, current: MemoryRecord, new: MemoryRecord) -> MemoryRecord:
    """Store ``current`` as a superseded row of its own; return ``new`` (same id) pointing at it.

    ``new`` starts when it is written (``created`` = ``updated``) *before* the old state's end is computed from
    it, as on the files backend: else the old state would end when it began and ``as_of`` would never find it."""
    new = new.replace(created=new.updated)
    version = current.replace(superseded_by=current.id, valid_to=ended(current, new))
    version = version.replace(id=new_id(current.memory_key or current.title, current.created))
    await conn.execute(f"INSERT INTO {w.t} {_INSERT}", _bind(version))
    await links.add(conn, w.schema, [version])
    return new.replace(supersedes=version.id)


async def supersede_one(w: Any, conn: Any, rec: MemoryRecord, redactions: int) -> RememberResult:
    """Insert ``rec`` as the successor of ``rec.supersedes`` (a live, current row of its own partition)."""
    tenant, part = tenant_part(rec)
    old_id = rec.supersedes or ""
    cur = await conn.execute(
        f"SELECT {SELECT} FROM {w.t} WHERE tenant = %s AND part = %s AND id = %s AND (expires IS NULL OR expires > now()) FOR UPDATE",
        (tenant, part, old_id),
    )
    row = await cur.fetchone()
    if row is None:
        raise NotFoundError(f"no live record {old_id!r} in this partition to supersede")
    check_supersede(
        old_id, kind=row["kind"], source=row["source"], superseded_by=row["superseded_by"], by_kind=rec.kind, by_source=rec.source
    )
    old = row_to_record(row, w.path_of(old_id))
    if old.content_hash == rec.content_hash:
        return RememberResult(old.id, "duplicate", w.path_of(old.id), redactions)
    new = rec.replace(memory_key=rec.memory_key or old.memory_key)
    new = new.replace(id=new_id(new.memory_key or new.title, new.created))
    # the old row leaves the current set first, so the new one may take its key
    await conn.execute(
        f"UPDATE {w.t} SET {_SETS} WHERE tenant = %(tenant)s AND id = %(id)s",
        _bind(old.replace(superseded_by=new.id, valid_to=ended(old, new))),
    )
    await conn.execute(f"INSERT INTO {w.t} {_INSERT}", _bind(new))
    await links.add(conn, w.schema, [new])
    return RememberResult(new.id, "superseded", w.path_of(new.id), redactions)
