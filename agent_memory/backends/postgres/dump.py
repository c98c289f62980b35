"""Read-only accessors for a whole-store export (the operator's, no caller): every row of every user.

Used only by :mod:`agent_memory.portable.export` when no caller is given; every read path of a caller goes through
the visibility rule instead (:mod:`agent_memory.model.scopes`). Nothing here writes.
"""

from __future__ import annotations

import builtins
from typing import Any

from agent_memory.backends.postgres.events import _event
from agent_memory.backends.postgres.rows import SELECT, row_to_record
from agent_memory.episodes import Episode
from agent_memory.model.events import Event
from agent_memory.model.records import MemoryRecord

__all__ = ["all_archived", "all_episodes", "all_events", "all_records"]


async def all_records(b: Any) -> builtins.list[MemoryRecord]:
    """Every record row (live, superseded and expired) of every user, by ``(created, id)``."""
    async with b.pool.connection() as conn:
        rows = await (await conn.execute(f"SELECT {SELECT} FROM {b.table} r ORDER BY r.created, r.id")).fetchall()
    return [row_to_record(r, b.path_of(r["id"])) for r in rows]


async def all_archived(b: Any) -> builtins.list[tuple[MemoryRecord, str]]:
    """Every archived record (forgotten, swept, consolidated) with why it was archived, oldest archive first."""
    sql = (
        f"SELECT archive_reason, {SELECT} FROM (SELECT r.*, a.reason AS archive_reason, a.archived AS archived_at"
        f' FROM "{b.schema}".archive a, jsonb_populate_record(NULL::{b.table}, a.record) r) x'
        " ORDER BY archived_at, id"
    )
    async with b.pool.connection() as conn:
        rows = await (await conn.execute(sql)).fetchall()
    return [(row_to_record(r, b.path_of(r["id"])), str(r["archive_reason"])) for r in rows]


async def all_events(b: Any) -> builtins.list[Event]:
    """Every event row, oldest first."""
    sql = (
        f"SELECT eid, ts, event, id, actor, session_id, user_id, run_id, tool_call_id, before, after, scope,"
        f' owner_session, owner_user, detail, owner_namespace FROM "{b.schema}".events ORDER BY ts, seq'
    )
    async with b.pool.connection() as conn:
        rows = await (await conn.execute(sql)).fetchall()
    return [_event(r) for r in rows]


def all_episodes(store: Any) -> builtins.list[Episode]:
    """Every episode row of a :class:`~agent_memory.backends.postgres.episodes.PgEpisodeStore`, oldest first."""
    with store.pool.connection() as conn:
        rows = conn.execute(
            f"SELECT data FROM {store.table} WHERE NOT (data ? 'deleted') ORDER BY started, id"
        ).fetchall()  # deleted: not exported
    return [store._episode(r["data"]) for r in rows]
