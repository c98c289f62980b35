"""The event log on PostgreSQL (table ``events``, migration 5): the files backend's events over rows.

An event row says what changed, which record, who did it (``actor``, the caller's session/user, run and
tool-call ids from :func:`agent_memory.backends.files.events.acting`) and the content hashes before and after — never
text. Writes append theirs right after their transaction; ``events()`` lists what the caller may see
(the records' visibility table over the record's partition), oldest first. A purge deletes the events
of what it removes and leaves one tombstone per record (its id hashed).
"""

from __future__ import annotations

import builtins
import contextlib
import contextvars
import datetime
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from psycopg.types.json import Jsonb

from agent_memory.backends.base import Caller
from agent_memory.model.drafts import RememberResult, prepare_event
from agent_memory.model.events import Event, current_acting, part_of_another, session_event_shape, story, tombstone_id, visible

__all__ = ["events_for", "purge_events", "quiet", "record_archive_event", "record_event", "record_writes", "undoable", "WRITE_EVENTS"]

WRITE_EVENTS = {"created": "created", "appended": "appended", "replaced": "replaced", "superseded": "superseded"}
UNDOABLE = frozenset({"created", "imported", "appended", "replaced", "superseded", "forgotten", "archived", "swept", "restored"})
_FIELDS = (
    "eid",
    "event",
    "id",
    "actor",
    "session_id",
    "user_id",
    "run_id",
    "tool_call_id",
    "before",
    "after",
    "scope",
    "owner_session",
    "owner_user",
    "detail",
    "owner_namespace",
)


_QUIET: contextvars.ContextVar[bool] = contextvars.ContextVar("agent_memory_pg_quiet", default=False)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Writes in this block append no write events (restore and undo append their own instead)."""
    token = _QUIET.set(True)
    try:
        yield
    finally:
        _QUIET.reset(token)


def _who(source: str) -> dict[str, Any]:
    a = current_acting()
    return {"actor": a.actor or source, "sid": a.session_id, "uid": a.user_id, "run": a.run_id, "call": a.tool_call_id, "step": a.step}


async def record_writes(
    b: Any,
    results: Sequence[RememberResult],
    source: str,
    notes: Sequence[dict[str, Any] | None] = (),
    conn: Any = None,
    at: datetime.datetime | None = None,
) -> None:
    """One event per created/appended/replaced/superseded result (one statement for the whole batch), in the order
    of ``results``.

    ``notes`` (per result, from :meth:`.writes.Writer.remember_one`) give what the rows cannot: an append's hashes
    before and after it and the length of text it kept (its ``detail.kept``, as on the files backend). ``conn``: the
    write's own transaction (``remember_many`` passes it, so a batch's rows and their events commit together).
    ``at``: the events' time, when the batch's place in a larger write decides it (events list by time, then
    ``seq``: batches written at once take their times in input order, so their events do not interleave)."""
    if _QUIET.get():
        return
    chosen = [
        (
            r.id,
            "imported" if r.status == "created" and source == "import" else WRITE_EVENTS[r.status],
            (notes[i] if i < len(notes) else None) or {},
        )
        for i, r in enumerate(results)
        if r.status in WRITE_EVENTS
    ]
    if not chosen:
        return
    who = _who(source)
    params = {
        **who,
        "ids": [c[0] for c in chosen],
        "evs": [c[1] for c in chosen],
        "eids": [uuid.uuid4().hex[:16] for _ in chosen],
        "befores": [c[2].get("before") for c in chosen],
        "afters": [c[2].get("after") for c in chosen],
        "kepts": [c[2].get("kept") for c in chosen],
        "tenants": [c[2].get("tenant") for c in chosen],
        "at": at,
    }
    if conn is None:
        async with b.pool.connection() as own:
            await _insert_writes(b, own, params)
    else:
        await _insert_writes(b, conn, params)


async def _insert_writes(b: Any, conn: Any, params: dict[str, Any]) -> None:
    await conn.execute(writes_sql(b.schema, b.table, by_key=None not in params["tenants"]), params)


def writes_sql(schema: str, table: str, *, by_key: bool = True) -> str:
    """The events of a write batch in one statement, each joining its current row. ``by_key``: every result names
    its tenant (``remember_many``'s do), so the join is on the primary key ``(tenant, id)``, an index probe per
    event; without a tenant only ``id`` is known, and a batch's events read the whole table (a sequential scan per
    batch: at a million rows, most of a batch's cost)."""
    match = "r.tenant = x.tenant AND r.id = x.id" if by_key else "r.id = x.id AND (x.tenant IS NULL OR r.tenant = x.tenant)"
    return (
        f'INSERT INTO "{schema}".events (tenant, ts, eid, event, id, actor, session_id, user_id, run_id, tool_call_id,'
        " before, after, scope, owner_session, owner_user, detail, owner_namespace)"
        " SELECT r.tenant, coalesce(%(at)s::timestamptz, clock_timestamp()), x.eid, x.ev, r.id, %(actor)s, coalesce(%(sid)s, r.session_id), coalesce(%(uid)s, r.user_id),"
        " %(run)s, %(call)s, CASE WHEN x.ev = 'created' OR x.ev = 'imported' THEN NULL"
        " ELSE coalesce(x.before, p.content_hash) END, coalesce(x.after, r.content_hash), r.scope, r.session_id,"
        " r.user_id, jsonb_strip_nulls(jsonb_build_object('kept', x.kept, 'step', %(step)s::text, 'links', (SELECT nullif(count(*), 0)"
        f' FROM "{schema}".record_links l WHERE l.tenant = r.tenant AND l.src = r.id))), r.namespace'
        " FROM unnest(%(ids)s::text[], %(evs)s::text[], %(eids)s::text[], %(befores)s::text[], %(afters)s::text[],"
        " %(kepts)s::int[], %(tenants)s::text[]) WITH ORDINALITY AS x(id, ev, eid, before, after, kept, tenant, n)"
        f" JOIN {table} r ON {match} AND r.superseded_by IS NULL"
        f" LEFT JOIN {table} p ON p.tenant = r.tenant AND p.id = r.supersedes"
        " ORDER BY x.n"  # seq follows the results' order, whatever order the join yields rows in
    )


async def record_event(
    b: Any,
    conn: Any,
    event: str,
    row: dict[str, Any],
    caller: Caller,
    *,
    before: str | None = None,
    after: str | None = None,
    source: str = "tool",
    **detail: Any,
) -> None:
    """Append one event about ``row`` (a records row or an archived copy) in the caller's transaction.

    Its fields pass the write gate (:func:`agent_memory.model.drafts.prepare_event`, as the files backend's
    event lines do): every string redacted, ``detail`` keys and values too."""
    who = _who(source)
    ev = prepare_event(
        {
            "eid": uuid.uuid4().hex[:16],
            "event": event,
            "id": row["id"],
            "actor": who["actor"],
            "session_id": who["sid"] or caller.session_id,
            "user_id": who["uid"] or caller.user_id,
            "run_id": who["run"],
            "tool_call_id": who["call"],
            "before": before,
            "after": after,
            "scope": row["scope"],
            "owner_session": row["session_id"],
            "owner_user": row["user_id"],
            "detail": detail | ({"step": who["step"]} if who["step"] and "step" not in detail else {}),
            "owner_namespace": row.get("namespace") or "",
        }
    )
    await conn.execute(
        f'INSERT INTO "{b.schema}".events (tenant, {", ".join(_FIELDS)}) VALUES (%s, {", ".join(["%s"] * len(_FIELDS))})',
        (row["tenant"], *(Jsonb(ev["detail"]) if f == "detail" else ev[f] for f in _FIELDS)),
    )


async def record_archive_event(
    b: Any, conn: Any, record_id: str, caller: Caller, event: str = "forgotten", *, tenant: str | None = None, **detail: Any
) -> None:
    """The event of a record just archived (its latest archived copy, in ``tenant`` when given, gives partition and
    hash), in the caller's transaction: as the files backend writes it, actor ``api`` unless a caller is acting
    (``acting``), ``detail.reason`` the event unless ``detail`` says otherwise."""
    who = _who("api")
    await conn.execute(
        f'INSERT INTO "{b.schema}".events (tenant, eid, event, id, actor, session_id, user_id, run_id, tool_call_id,'
        " before, after, scope, owner_session, owner_user, detail, owner_namespace)"
        " SELECT a.tenant, %(eid)s, %(ev)s, a.id, %(actor)s, %(sid)s, %(uid)s, %(run)s, %(call)s,"
        " a.record->>'content_hash', NULL, a.record->>'scope', a.record->>'session_id', a.record->>'user_id',"
        " %(detail)s, coalesce(a.record->>'namespace', '')"
        f' FROM "{b.schema}".archive a WHERE a.id = %(id)s AND (%(tenant)s::text IS NULL OR a.tenant = %(tenant)s)'
        " ORDER BY a.archived DESC LIMIT 1",
        {
            **who,
            "sid": who["sid"] or caller.session_id,
            "uid": who["uid"] or caller.user_id,
            "eid": uuid.uuid4().hex[:16],
            "ev": event,
            "id": record_id,
            "tenant": tenant,
            "detail": Jsonb({"reason": event, **detail} | ({"step": who["step"]} if who["step"] else {})),
        },
    )


def _event(row: dict[str, Any]) -> Event:
    data = {k: row[k] for k in _FIELDS}
    data["ts"] = row["ts"].isoformat().replace("+00:00", "Z")
    data["detail"] = dict(row["detail"] or {})
    data["owner_namespace"] = row["owner_namespace"] or None
    return Event(**session_event_shape(data))  # an older session event named its namespace in its id


async def events_for(
    b: Any, caller: Caller, *, record_id: str | None = None, limit: int | None = None, conn: Any = None
) -> builtins.list[Event]:
    """Events of records the caller may see, oldest first (``limit``: the last N). With ``record_id``: that record's
    whole story (:func:`agent_memory.model.events.story`), with each supersession that replaced it and its undo,
    which are logged under the record that replaced it (every event still filtered by the caller's visibility)."""
    if conn is None:
        async with b.pool.connection() as c:
            return await events_for(b, caller, record_id=record_id, limit=limit, conn=c)
    params = b._caller(caller)
    tenants = ["", params["uid"]] if params["uid"] else [""]
    successors = await _successors(b, conn, tenants, record_id) if record_id else []
    sql = (
        f'SELECT eid, ts, {", ".join(f for f in _FIELDS if f not in ("eid",))} FROM "{b.schema}".events'
        " WHERE tenant = ANY(%(t)s)" + (" AND id = ANY(%(ids)s)" if record_id else "") + " ORDER BY ts, seq"
    )
    rows = await (await conn.execute(sql, {"t": tenants, "ids": [record_id, *successors]})).fetchall()
    events = [_event(r) for r in rows]
    if record_id:
        events = story(events, record_id, successors)
    out = [e for e in events if visible(e, caller.session_id, caller.user_id)]
    return out[-limit:] if limit else out


async def _successors(b: Any, conn: Any, tenants: list[str], record_id: str) -> list[str]:
    """The ids of the records that superseded ``record_id`` in ``tenants``: the one its row names, live rows that
    name it in ``supersedes`` and archived ones (a supersession undone archives its successor). Their events say
    which of them replaced it (a superseded event on this backend names no record in its detail)."""
    cur = await conn.execute(
        f"SELECT superseded_by AS id FROM {b.table} WHERE tenant = ANY(%(t)s) AND id = %(id)s AND superseded_by IS NOT NULL"
        f" UNION SELECT id FROM {b.table} WHERE tenant = ANY(%(t)s) AND supersedes = %(id)s"
        f" UNION SELECT id FROM \"{b.schema}\".archive WHERE tenant = ANY(%(t)s) AND record->>'supersedes' = %(id)s",
        {"t": tenants, "id": record_id},
    )
    return sorted(str(r["id"]) for r in await cur.fetchall())


def undoable(events: Sequence[Event], caller: Caller) -> Event | None:
    """The caller's latest change that is not undone yet (as on the files backend)."""
    undone = {e.detail.get("undo_of") for e in events if e.detail.get("undo_of")}
    sid, uid = caller.session_id, caller.user_id
    for ev in reversed(events):
        if ev.detail.get("undo_of") or ev.eid in undone or ev.event not in UNDOABLE or part_of_another(ev):
            continue
        mine = (
            (ev.user_id == uid and (sid is None or ev.session_id in (sid, None)))
            if uid is not None
            else (ev.user_id is None and ev.session_id == sid)
        )
        if mine:
            return ev
    return None


async def purge_events(
    b: Any, conn: Any, ids: Sequence[str], session_id: str | None, user_id: str | None, *, also: Sequence[str] = ()
) -> int:
    """Delete the events of purged records (and of a purged user/session); one tombstone per record stays, and one
    per id in ``also`` (the ids the records were imported under: a re-import of them stays purged)."""
    cur = await conn.execute(
        f'DELETE FROM "{b.schema}".events WHERE id = ANY(%(ids)s) OR session_id = %(s)s OR user_id = %(u)s'
        " OR owner_session = %(s)s OR owner_user = %(u)s OR tenant = %(u)s",
        {"ids": list(ids), "s": session_id, "u": user_id},
    )
    gone = int(cur.rowcount)
    for rid in dict.fromkeys([*ids, *also]):
        await conn.execute(
            f"INSERT INTO \"{b.schema}\".events (tenant, eid, event, id, actor, detail) VALUES ('', %s, 'purged', %s, %s, %s)",
            (uuid.uuid4().hex[:16], tombstone_id(rid), _who("tool")["actor"], Jsonb({"purged": True})),
        )
    return gone
