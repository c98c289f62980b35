"""Purge, history and restore on PostgreSQL, over ``records`` (supersession chains) and ``archive`` rows.

* :func:`purge` deletes for good: one record the caller may see (live or archived) with every version it
  superseded, or every row of a user or of a session in every table (records, their vectors by
  ``ON DELETE CASCADE``, archive, session logs and summaries, episodes); then ``VACUUM`` so the index
  entries and free space of the deleted rows are reclaimed.
* :func:`history` lists the versions of a record (its supersession chain), oldest first, with its events; the
  record may be archived (forgotten, swept).
* :func:`restore` brings an archived record back (with the superseded versions archived with it), or makes an
  earlier version current again (a keyed replace of the record by its id, so the current state is kept as a
  version in turn).

Events (:mod:`.events`) make ``undo`` possible: the caller's last change not undone yet is reversed (a
creation archived, a forget restored, a replace rolled back to the version before it, an append cut back to
the text it kept — its event's ``detail.kept``, as on the files backend).
``provenance`` and consolidation raise :class:`agent_memory.backends.files.events.NotSupportedError` on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from agent_memory.backends.base import Caller
from agent_memory.backends.postgres import links
from agent_memory.backends.postgres.events import events_for, purge_events, quiet, record_event, undoable
from agent_memory.backends.postgres.rows import COLUMNS, SELECT, row_to_record, visibility
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.model import scopes
from agent_memory.model.curated import restored_metadata
from agent_memory.model.drafts import MemoryDraft
from agent_memory.model.events import Event, acting, tombstone_provenance
from agent_memory.model.records import MemoryRecord, content_hash, validate_id
from agent_memory.model.reports import History, PurgeReport
from agent_memory.model.supersession import MAX_CHAIN
from agent_memory.model.wording import record_not_found

__all__ = ["history", "purge", "forget_purge", "restore", "undo"]

_COLS = ", ".join(COLUMNS)


def _archived_visible(alias: str = "r") -> str:
    """Visibility of an archived row (:func:`agent_memory.model.scopes.postgres_sql`; being archived, expiry is moot)."""
    return scopes.postgres_sql(alias)


# An imported record remembers the ids it was imported under (portable's ``imported_id``, ``imported_owner_id``): this
# backend mints its own ids, so a purge tombstones those too, and a re-import of the same line stays purged.
_IMPORTED = "metadata->>'imported_id' AS imported_id, metadata->>'imported_owner_id' AS imported_owner_id"
_IMPORTED_ARCHIVE = "record->'metadata'->>'imported_id' AS imported_id, record->'metadata'->>'imported_owner_id' AS imported_owner_id"


def _import_ids(rows: Sequence[Any]) -> list[str]:
    """The ids purged rows were imported under (each once)."""
    return sorted({str(v) for r in rows for v in (r["imported_id"], r["imported_owner_id"]) if isinstance(v, str) and v})


async def _find(b: Any, conn: Any, record_id: str, caller: Caller) -> tuple[dict[str, Any], str]:
    """The visible live row of ``record_id`` (``"live"``) or its latest archived copy (``"archived"``)."""
    params = {**b._caller(caller), "id": validate_id(record_id)}
    cur = await conn.execute(f"SELECT {SELECT} FROM {b.table} r WHERE r.id = %(id)s AND {visibility(params)}", params)
    row = await cur.fetchone()
    if row is not None:
        return row, "live"
    cur = await conn.execute(
        f'SELECT {", ".join("r." + c for c in COLUMNS)} FROM "{b.schema}".archive a,'
        f" jsonb_populate_record(NULL::{b.table}, a.record) r WHERE a.id = %(id)s AND {_archived_visible()}"
        " ORDER BY a.archived DESC LIMIT 1",
        params,
    )
    row = await cur.fetchone()
    if row is None:
        raise record_not_found(record_id, what="(live or archived) ")
    return row, "archived"


async def _predecessors(b: Any, conn: Any, row: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows ``row`` superseded, newest first (live rows, else archived copies), within its tenant."""
    out: list[dict[str, Any]] = []
    seen = {row["id"]}
    prev = row.get("supersedes")
    while prev and prev not in seen and len(out) < MAX_CHAIN:
        seen.add(prev)
        cur = await conn.execute(f"SELECT {SELECT} FROM {b.table} WHERE tenant = %s AND id = %s", (row["tenant"], prev))
        found = await cur.fetchone()
        if found is None:
            cur = await conn.execute(
                f'SELECT {", ".join("r." + c for c in COLUMNS)} FROM "{b.schema}".archive a,'
                f" jsonb_populate_record(NULL::{b.table}, a.record) r WHERE a.tenant = %s AND a.id = %s"
                " ORDER BY a.archived DESC LIMIT 1",
                (row["tenant"], prev),
            )
            found = await cur.fetchone()
        if found is None:
            break
        out.append(found)
        prev = found.get("supersedes")
    return out


async def history(b: Any, record_id: str, caller: Caller) -> History:
    """Every version of a visible record (live or archived), oldest first, with its whole story of events (its
    own, each supersession that replaced it and the undo of one: :func:`.events.events_for`)."""
    async with b.pool.connection() as conn:
        row, state = await _find(b, conn, record_id, caller)
        older = await _predecessors(b, conn, row)
        events = await events_for(b, caller, record_id=record_id, conn=conn)
    return History(record_id, state, [row_to_record(r, b.path_of(r["id"])) for r in [*reversed(older), row]], events)


async def _unarchive(b: Any, conn: Any, tenant: str, record_id: str) -> dict[str, Any] | None:
    """Move the latest archived copy of ``record_id`` back into ``records`` (the caller's transaction); its row."""
    cur = await conn.execute(
        f"INSERT INTO {b.table} ({_COLS}) SELECT {', '.join('r.' + c for c in COLUMNS)}"
        f' FROM (SELECT record FROM "{b.schema}".archive WHERE tenant = %(t)s AND id = %(id)s'
        f" ORDER BY archived DESC LIMIT 1) a, jsonb_populate_record(NULL::{b.table}, a.record) r RETURNING {SELECT}",
        {"t": tenant, "id": record_id},
    )
    back: dict[str, Any] | None = await cur.fetchone()
    if back is not None:
        await links.sync(conn, b.schema, [(tenant, record_id)])
    await conn.execute(f'DELETE FROM "{b.schema}".archive WHERE tenant = %s AND id = %s', (tenant, record_id))
    return back


async def _unarchive_versions(b: Any, conn: Any, row: dict[str, Any]) -> None:
    """Bring back the superseded versions archived with ``row`` (by ``forget``), following ``supersedes``, as the
    files backend does: a version of another owner, or one live already, ends the walk."""
    pointer, seen = row.get("supersedes"), {row["id"]}
    owner = (row["scope"], row["session_id"], row["user_id"])
    while pointer and pointer not in seen and len(seen) <= MAX_CHAIN:
        seen.add(pointer)
        cur = await conn.execute(f"SELECT 1 FROM {b.table} WHERE tenant = %s AND id = %s", (row["tenant"], pointer))
        if await cur.fetchone() is not None:
            return
        cur = await conn.execute(
            f'SELECT r.supersedes, r.scope, r.session_id, r.user_id FROM "{b.schema}".archive a,'
            f" jsonb_populate_record(NULL::{b.table}, a.record) r WHERE a.tenant = %s AND a.id = %s"
            " ORDER BY a.archived DESC LIMIT 1",
            (row["tenant"], pointer),
        )
        old = await cur.fetchone()
        if old is None or (old["scope"], old["session_id"], old["user_id"]) != owner:
            return
        await _unarchive(b, conn, row["tenant"], pointer)
        pointer = old["supersedes"]


async def restore(
    b: Any, record_id: str, caller: Caller, *, version: int | None = None, event: str = "restored", **detail: Any
) -> MemoryRecord:
    """Unarchive a forgotten/swept record (with the versions it superseded that were archived with it), or make
    ``version`` (default: the previous one) current."""
    async with b.pool.connection() as conn:
        row, state = await _find(b, conn, record_id, caller)
        if state == "archived":
            if version is not None:
                raise InvalidInputError(f"record {record_id} is archived: restore it first (without --version)")
            try:
                async with conn.transaction():
                    await _unarchive(b, conn, row["tenant"], record_id)
                    # an expired record comes back without its expiry (or it would vanish again), as on files
                    await conn.execute(
                        f"UPDATE {b.table} SET expires = NULL, expires_text = NULL, updated = now()"
                        " WHERE tenant = %s AND id = %s AND expires <= now()",
                        (row["tenant"], record_id),
                    )
                    await _unarchive_versions(b, conn, row)
                    await record_event(b, conn, event, row, caller, after=row["content_hash"], **{"from": "archive", **detail})
            except psycopg.errors.UniqueViolation:
                raise InvalidInputError(f"record {record_id} cannot come back: a live record holds its key or the same text now") from None
            try:
                back: MemoryRecord = await b.get(record_id, caller)
            except NotFoundError:  # back, but expired (an expired record the tidy pass archived): readers skip it, as on files
                back = row_to_record(row, b.path_of(record_id))
            return back
        older = await _predecessors(b, conn, row)
    versions = [*reversed(older), row]
    if len(versions) == 1:
        raise InvalidInputError(f"record {record_id} has no earlier version to restore")
    n = len(versions) - 1 if version is None else version
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n < len(versions):
        raise InvalidInputError(f"version must be between 1 and {len(versions) - 1} (version {len(versions)} is current)")
    return await _make_current(b, caller, row, versions[n - 1]["content"], versions[n - 1], event, version=n, **detail)


async def _make_current(
    b: Any, caller: Caller, row: dict[str, Any], content: str, old: dict[str, Any] | None, event: str, **detail: Any
) -> MemoryRecord:
    """Make ``content`` (and ``old``'s title, kind and tags) the current state of ``row``'s record, by a keyed
    replace that keeps the state it replaces as a version; then append ``event`` for it."""
    record_id, cur_rec = row["id"], row_to_record(row, b.path_of(row["id"]))
    draft = MemoryDraft(
        content,
        title=old["title"] if old else None,
        kind=old["kind"] if old else None,
        scope=cur_rec.scope,
        session_id=cur_rec.session_id,
        user_id=cur_rec.user_id,
        namespace=cur_rec.namespace or None,  # the record's own namespace: else the replace lands in the root
        tags=tuple(old["tags"] or ()) if old else (),
        memory_key=record_id,
        on_existing="replace",
        metadata=restored_metadata(old["kind"], old["metadata"]) if old else None,  # a curated line's priority
    )
    with acting(session_id=caller.session_id, user_id=caller.user_id), quiet():  # its own event follows
        result = await b.remember_many([draft], source="tool")
    new: MemoryRecord = await b.get(result[0].id, caller)
    async with b.pool.connection() as conn:
        cur = await conn.execute(f"SELECT {SELECT} FROM {b.table} WHERE tenant = %s AND id = %s", (row["tenant"], new.id))
        now = await cur.fetchone()
        if now is not None:
            await record_event(b, conn, event, now, caller, before=row["content_hash"], after=now["content_hash"], **detail)
    return new


async def undo(b: Any, caller: Caller) -> Event:
    """Reverse the caller's last change not undone yet (as on the files backend), with the rest of its step (events
    sharing its ``detail.step``: ``acting(step=…)``); returns the event it reversed."""
    ev = await _undo_one(b, caller)
    step = ev.detail.get("step")
    while step:
        nxt = undoable(await events_for(b, caller), caller)
        if nxt is None or nxt.detail.get("step") != step:
            break
        await _undo_one(b, caller)
    return ev


async def _undo_one(b: Any, caller: Caller) -> Event:
    ev = undoable(await events_for(b, caller), caller)
    if ev is None:
        raise NotFoundError("nothing to undo for this caller (no change of theirs that is not undone yet)")
    tag: dict[str, Any] = {"undo_of": ev.eid}
    if ev.event in ("forgotten", "archived", "swept"):  # archived: a tidy pass's change (agent_memory.consolidate.tidy)
        await restore(b, ev.id, caller, event="undone", **tag)
        return ev
    async with b.pool.connection() as conn:
        try:
            row, state = await _find(b, conn, ev.id, caller)
        except NotFoundError:
            raise NotFoundError(f"record {ev.id} is gone since that change ({ev.event}); see `history`") from None
        if state != "live":
            raise NotFoundError(f"record {ev.id} is gone since that change ({ev.event}); see `history`")
        if row["content_hash"] != ev.after:
            raise InvalidInputError(f"record {ev.id} changed after that {ev.event}; pick a version with `restore --version`")
        if ev.event == "superseded" and row.get("supersedes"):
            await _undo_supersede(b, conn, row, ev, caller)
            return ev
        if ev.event in ("created", "imported") or ev.detail.get("from") == "archive":
            async with conn.transaction():
                await b.writer._archive_where(
                    conn, "tenant = %(t)s AND id = %(id)s", {"t": row["tenant"], "id": ev.id}, f"undo of {ev.event}"
                )
                await record_event(b, conn, "undone", row, caller, before=row["content_hash"], **tag)
            return ev
        older = await _predecessors(b, conn, row)
    kept = ev.detail.get("kept")
    if ev.event == "appended" and isinstance(kept, int) and not isinstance(kept, bool):
        # an append keeps no version: cut the text back to what it kept (as the files backend does)
        head = str(row["content"])[:kept]
        for body in (head, head + "\n", head + "\n\n"):
            if content_hash(body) == ev.before:
                await _make_current(b, caller, row, body, None, "undone", **tag)
                return ev
        raise InvalidInputError(f"cannot rebuild {ev.id} as it was before that append; use `restore --version`")
    versions = [*reversed(older), row]
    for n, old in enumerate(versions[:-1], 1):
        if old["content_hash"] == ev.before:
            await restore(b, ev.id, caller, version=n, event="undone", **tag)
            return ev
    raise InvalidInputError(f"the version of {ev.id} before that {ev.event} is not kept; see `history`")


async def _undo_supersede(b: Any, conn: Any, row: dict[str, Any], ev: Event, caller: Caller) -> None:
    """Undo a supersession: the new row goes to the archive, the row it superseded is current again (its
    ``valid_to`` cleared when the supersession set it)."""
    from agent_memory.model.supersession import start_of

    async with conn.transaction():
        cur = await conn.execute(
            f"SELECT {SELECT} FROM {b.table} WHERE tenant = %s AND id = %s FOR UPDATE", (row["tenant"], row["supersedes"])
        )
        old = await cur.fetchone()
        if old is None or old["superseded_by"] != row["id"]:
            raise InvalidInputError(f"record {row['supersedes']} is no longer the one {row['id']} superseded; see `history`")
        new_rec, old_rec = row_to_record(row, ""), row_to_record(old, "")
        valid_to = None if old_rec.valid_to and old_rec.valid_to == start_of(new_rec) else old["valid_to"]
        await b.writer._archive_where(conn, "tenant = %(t)s AND id = %(id)s", {"t": row["tenant"], "id": row["id"]}, "undo of superseded")
        await conn.execute(
            f"UPDATE {b.table} SET superseded_by = NULL, valid_to = %s WHERE tenant = %s AND id = %s",
            (valid_to, row["tenant"], old["id"]),
        )
        await record_event(b, conn, "undone", row, caller, before=row["content_hash"], undo_of=ev.eid)


async def _chain_ids(b: Any, conn: Any, row: dict[str, Any]) -> set[str]:
    return {row["id"], *(r["id"] for r in await _predecessors(b, conn, row))}


def _under(column: str) -> str:
    """A namespace purge's rows: ``column`` is ``%(pns)s`` or one of its descendants (fill with :func:`_under_params`)."""
    return f"(coalesce({column}, '') = %(pns)s OR starts_with(coalesce({column}, ''), %(punder)s))"


def _under_params(namespace: str) -> dict[str, Any]:
    return {"pns": namespace, "punder": namespace + "/"}


async def purge(
    b: Any, record_id: str | None = None, *, session_id: str | None = None, user_id: str | None = None, namespace: str | None = None
) -> PurgeReport:
    """Delete content for good (see the module docstring); returns what went. ``namespace`` (no record id): only
    what is in that namespace and its descendants, of the owner when one is given (as the files backend does)."""
    if namespace is not None:
        namespace = scopes.check_namespace(namespace)
        if not namespace:
            raise InvalidInputError("purge by namespace needs a namespace: the root ('') would be the whole memory")
        if record_id is not None:
            raise InvalidInputError("purge takes a record id or a namespace, not both")
    report = PurgeReport()
    a = f'"{b.schema}".archive'
    if record_id is not None:
        caller = Caller(session_id, user_id)
        async with b.pool.connection() as conn, conn.transaction():
            row, _ = await _find(b, conn, record_id, caller)
            ids = sorted(await _chain_ids(b, conn, row))
            params = {"t": row["tenant"], "ids": ids}
            report.vectors = await _vector_rows(b, conn, "tenant = %(t)s AND id = ANY(%(ids)s)", params)
            cur = await conn.execute(f"DELETE FROM {b.table} WHERE tenant = %(t)s AND id = ANY(%(ids)s) RETURNING {_IMPORTED}", params)
            imported = await cur.fetchall()
            cur = await conn.execute(f"DELETE FROM {a} WHERE tenant = %(t)s AND id = ANY(%(ids)s) RETURNING {_IMPORTED_ARCHIVE}", params)
            imported += await cur.fetchall()
            report.files = len(imported)
            report.events = await purge_events(b, conn, ids, None, None, also=_import_ids(imported))
        report.records = ids
    else:
        b._caller(Caller(session_id, user_id))  # the same string checks as every read
        person = bool(session_id or user_id)
        if not person and namespace is None:
            raise InvalidInputError("purge needs a record id, a user, a session or a namespace")
        params = scopes.owner_params(session_id, user_id)
        mine = scopes.owner_sql("session_id", "user_id", session_id=session_id, user_id=user_id, dialect="postgres") if person else "true"
        archived_mine = (
            scopes.owner_sql("record->>'session_id'", "record->>'user_id'", session_id=session_id, user_id=user_id, dialect="postgres")
            if person
            else "true"
        )
        if namespace is not None:
            mine += " AND " + _under("namespace")
            archived_mine += " AND " + _under("record->>'namespace'")
            params.update(_under_params(namespace))
        async with b.pool.connection() as conn, conn.transaction():
            report.vectors = await _vector_rows(b, conn, mine, params)
            cur = await conn.execute(f"DELETE FROM {b.table} WHERE {mine} RETURNING id, {_IMPORTED}", params)
            live_rows = await cur.fetchall()
            gone = {str(r["id"]) for r in live_rows}
            cur = await conn.execute(f"DELETE FROM {a} WHERE {archived_mine} RETURNING id, {_IMPORTED_ARCHIVE}", params)
            archived_rows = await cur.fetchall()
            archived = [r["id"] for r in archived_rows]
            report.files = len(gone) + len(archived)
            report.records = sorted(gone | set(archived))
            report.events = await purge_events(b, conn, report.records, None, None, also=_import_ids([*live_rows, *archived_rows]))
            report.events += await _purge_owner_events(b, conn, session_id, user_id, namespace)
            if person:
                await _scrub_provenance(b, conn, session_id, user_id, namespace)
        sessions, episodes = await asyncio.to_thread(b.time_layers.purge, user_id=user_id, session_id=session_id, namespace=namespace)
        report.stores = {
            "records": len(gone),
            "archive": len(archived),
            "events": report.events,
            "sessions": sessions,
            "episodes": episodes,
        }
    await _vacuum(b)
    return report


async def _purge_owner_events(b: Any, conn: Any, session_id: str | None, user_id: str | None, namespace: str | None = None) -> int:
    """Delete the events the purged owner made or that are about the owner's records (one owner:
    :func:`agent_memory.model.scopes.owns`, never another owner's events); with ``namespace``, only events about
    records in that namespace and its descendants (a namespace alone: every such event)."""
    params = scopes.owner_params(session_id, user_id)
    if session_id or user_id:
        by = scopes.owner_sql("session_id", "user_id", session_id=session_id, user_id=user_id, dialect="postgres")
        about = scopes.owner_sql("owner_session", "owner_user", session_id=session_id, user_id=user_id, dialect="postgres")
        if user_id and not session_id:  # the user's whole partition: events of records in their tenant too
            about += " OR tenant = %(ouid)s"
        where = f"({by} OR {about})"
    else:
        where = "true"
    if namespace is not None:  # an older session event (summarized/distilled) named its namespace in its id
        legacy = _under("substr(id, length('session:' || owner_session || '@') + 1)")
        older = f"(owner_namespace = '' AND event IN ('summarized', 'distilled') AND starts_with(id, 'session:' || owner_session || '@') AND {legacy})"
        where += f" AND ({_under('owner_namespace')} OR {older})"
        params.update(_under_params(namespace))
    cur = await conn.execute(f'DELETE FROM "{b.schema}".events WHERE {where}', params)
    return int(cur.rowcount)


async def _scrub_provenance(b: Any, conn: Any, session_id: str | None, user_id: str | None, namespace: str | None = None) -> int:
    """Records and archived copies that stay but whose ``metadata.provenance`` names the purged owner: those
    entries' session and user become hashes (their text is the record owner's and stays); with ``namespace``, only
    those in that namespace and its descendants. Returns how many rows."""
    n = 0
    params = scopes.owner_params(session_id, user_id)
    if namespace is not None:
        params.update(_under_params(namespace))
    for table, column in ((b.table, "metadata"), (f'"{b.schema}".archive', "record->'metadata'")):
        entries = [
            scopes.owner_sql(
                f"{column}->'provenance'->'{e}'->>'session_id'",
                f"{column}->'provenance'->'{e}'->>'user_id'",
                session_id=session_id,
                user_id=user_id,
                dialect="postgres",
            )
            for e in ("created", "updated")
        ]
        inside = "" if namespace is None else " AND " + _under("namespace" if column == "metadata" else "record->>'namespace'")
        cur = await conn.execute(f"SELECT ctid, {column} AS metadata FROM {table} WHERE ({' OR '.join(entries)}){inside}", params)
        for row in await cur.fetchall():
            metadata = tombstone_provenance(row["metadata"] or {}, session_id=session_id, user_id=user_id)
            if metadata is None:
                continue
            target = "metadata = %(m)s" if column == "metadata" else "record = jsonb_set(record, '{metadata}', %(m)s)"
            await conn.execute(f"UPDATE {table} SET {target} WHERE ctid = %(ctid)s", {"m": Jsonb(metadata), "ctid": row["ctid"]})
            n += 1
    return n


async def _vector_rows(b: Any, conn: Any, where: str, params: dict[str, Any]) -> int:
    """The vector rows of the records ``where`` selects (deleted with them by ``ON DELETE CASCADE``, their sketch
    rows too): the purge report's ``vectors``."""
    cur = await conn.execute(
        f'SELECT count(*) AS n FROM "{b.schema}".record_vectors WHERE (tenant, id) IN (SELECT tenant, id FROM {b.table} WHERE {where})',
        params,
    )
    row = await cur.fetchone()
    return int(row["n"]) if row else 0


async def forget_purge(b: Any, record_id: str, caller: Caller) -> bool:
    """``forget --purge``: delete a visible record (and the versions it superseded) for good; NotFoundError if absent
    (as on the files backend)."""
    await purge(b, record_id, session_id=caller.session_id, user_id=caller.user_id)
    return True


async def _vacuum(b: Any) -> None:
    """Reclaim the deleted rows' index entries and space (plain VACUUM: no exclusive lock; best effort)."""
    tables = (
        "records",
        "archive",
        "record_vectors",
        "record_sketches",
        "sessions",
        "session_messages",
        "session_summaries",
        "episodes",
        "events",
    )
    with contextlib.suppress(Exception):
        async with b.pool.connection() as conn:
            for t in tables:
                with contextlib.suppress(psycopg.errors.UndefinedTable):
                    await conn.execute(f'VACUUM "{b.schema}"."{t}"')
