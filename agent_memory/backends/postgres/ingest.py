"""COPY-based ingest of many unkeyed records: the same outcome as one ``remember`` each, at bulk cost.

Two paths, one result. **Direct** (the default): one indexed lookup finds the live rows already holding a
batch's contents (those drafts are duplicates) and expired unkeyed ones that would block a new row (archived),
then the new rows are copied straight into the table — each row is written once and its text vector computed
once. A writer racing on the same content makes the COPY fail on the unique index (the transaction is
retried whole). **Staged** (the retry path, and the one that always settles a race): COPY into a temporary
table, then one ``INSERT … SELECT … ON CONFLICT DO NOTHING``.
"""

from __future__ import annotations

import json
import os
import secrets
from typing import Any

from agent_memory.backends.postgres import links
from agent_memory.backends.postgres.rows import COLUMNS, record_params, tenant_part
from agent_memory.errors import BackendError
from agent_memory.model.drafts import RememberResult, Status
from agent_memory.model.records import MemoryRecord, slugify
from agent_memory.model.supersession import POINTER, UNDEDUPED_KINDS

_INSERT_COLS = ", ".join(COLUMNS)
_EXPIRED = "expires IS NOT NULL AND expires <= now()"
_DEDUPED = "NOT (r.kind = ANY(%(undeduped)s))"  # a memory-tool file or curated line never makes another text a duplicate
_META = COLUMNS.index("metadata")
Key = tuple[str, str, str]


def batch_ids(recs: list[MemoryRecord]) -> list[str]:
    """A new id for each record, as :func:`agent_memory.model.records.new_id` makes them (date, slug, 8 hex), drawing
    the randomness of the whole batch at once (one system call instead of one per record)."""
    noise = secrets.token_hex(4 * len(recs))
    slugs: dict[str, str] = {}
    out = []
    for i, rec in enumerate(recs):
        slug = slugs.get(rec.title)
        if slug is None:
            slug = slugs[rec.title] = slugify(rec.title)
        out.append(f"{rec.created[:10]}-{slug}-{noise[8 * i : 8 * i + 8]}")
    return out


def _copy_row(rec: MemoryRecord, rid: str, *lead: Any) -> list[Any]:
    p = record_params(rec)
    p["id"] = rid
    if POINTER in p["metadata"]:  # history pointers are the store's to set (as remember_one)
        del p["metadata"][POINTER]
    row = [*lead, *(p[c] for c in COLUMNS)]
    at = _META + len(lead)
    row[at] = json.dumps(row[at]) if row[at] else "{}"
    return row


async def copy_unkeyed(writer: Any, conn: Any, prepared: list[tuple[MemoryRecord, int]], *, direct: bool = True) -> list[RememberResult]:
    """Ingest unkeyed records in the caller's transaction (first of equal contents created, the rest duplicates)."""
    recs = [rec for rec, _ in prepared]
    keys: list[Key] = [(*tenant_part(rec), rec.content_hash) for rec in recs]
    ids = batch_ids(recs)
    if direct:
        holders = await _direct(writer, conn, recs, keys, ids)
    else:
        holders = await _staged(writer, conn, recs, keys, ids)
    created = [i for i, (_, status) in enumerate(holders) if status == "created"]
    await links.add(conn, writer.schema, [recs[i] for i in created], [holders[i][0] for i in created])
    out: list[RememberResult] = []
    for (rid, status), (_, redactions) in zip(holders, prepared, strict=True):
        out.append(RememberResult(rid, status, writer.path_of(rid), redactions))
    return out


async def _existing(writer: Any, conn: Any, keys: list[Key]) -> tuple[dict[Key, str], list[Key]]:
    """Per key: the live current row holding it (most recently updated); and keys blocked by expired unkeyed rows."""
    uniq = list(dict.fromkeys(keys))
    cur = await conn.execute(  # one index probe a content (records_hash_any), whatever the table's size
        f"SELECT k.tenant, k.part, k.h, x.id, x.expired FROM unnest(%(t)s::text[], %(p)s::text[], %(h)s::text[]) k(tenant, part, h)"
        f" CROSS JOIN LATERAL (SELECT r.id, (r.expires IS NOT NULL AND r.expires <= now()) AS expired FROM {writer.t} r WHERE r.tenant = k.tenant"
        f" AND r.part = k.part AND r.content_hash = k.h AND r.superseded_by IS NULL AND ({_DEDUPED} OR r.memory_key IS NULL AND r.expires <= now()) ORDER BY 2, r.updated DESC LIMIT 1) x",
        {"t": [k[0] for k in uniq], "p": [k[1] for k in uniq], "h": [k[2] for k in uniq], "undeduped": list(UNDEDUPED_KINDS)},
    )
    live: dict[Key, str] = {}
    blocked: list[Key] = []
    for row in await cur.fetchall():  # live rows sort first: an expired one is chosen only when none is live
        key = (row["tenant"], row["part"], row["h"])
        if row["expired"]:
            blocked.append(key)
        else:
            live[key] = row["id"]
    return live, blocked


async def _direct(writer: Any, conn: Any, recs: list[MemoryRecord], keys: list[Key], ids: list[str]) -> list[tuple[str, Status]]:
    live, blocked = await _existing(writer, conn, keys)
    if blocked:  # an expired unkeyed row would hold the unique (tenant, part, hash) slot: archive it first
        await writer._archive_where(
            conn,
            f"memory_key IS NULL AND superseded_by IS NULL AND {_EXPIRED} AND (tenant, part, content_hash) IN"
            " (SELECT * FROM unnest(%(t)s::text[], %(p)s::text[], %(h)s::text[]))",
            {"t": [k[0] for k in blocked], "p": [k[1] for k in blocked], "h": [k[2] for k in blocked]},
            "expired (replaced by a new write)",
        )
    out: list[tuple[str, Status]] = []
    new: list[int] = []
    for i, key in enumerate(keys):
        held = live.get(key)
        if held is None:
            live[key] = ids[i]
            new.append(i)
            out.append((ids[i], "created"))
        else:
            out.append((held, "duplicate"))
    if new:
        async with conn.cursor().copy(f"COPY {writer.t} ({_INSERT_COLS}) FROM STDIN") as copy:
            for i in new:
                await copy.write_row(_copy_row(recs[i], ids[i]))
    return out


async def _staged(writer: Any, conn: Any, recs: list[MemoryRecord], keys: list[Key], ids: list[str]) -> list[tuple[str, Status]]:
    stage = f"am_stage_{os.getpid()}"
    await conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {stage} (ord integer, LIKE {writer.t} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS")
    await conn.execute(f"TRUNCATE {stage}")
    async with conn.cursor().copy(f"COPY {stage} (ord, {_INSERT_COLS}) FROM STDIN") as copy:
        for i, rec in enumerate(recs):  # the row function every write uses; only the id is this batch's own
            await copy.write_row(_copy_row(rec, ids[i], i))
    await writer._archive_where(
        conn,
        f"memory_key IS NULL AND {_EXPIRED} AND (tenant, part, content_hash) IN (SELECT tenant, part, content_hash FROM {stage})",
        {},
        "expired (replaced by a new write)",
    )
    # live rows already holding a content (keyed or not) make the staged copies duplicates
    live = (
        "r.tenant = s.tenant AND r.part = s.part AND r.content_hash = s.content_hash"
        f" AND (r.expires IS NULL OR r.expires > now()) AND r.superseded_by IS NULL AND {_DEDUPED}"
    )
    undeduped = {"undeduped": list(UNDEDUPED_KINDS)}
    cur = await conn.execute(
        f"SELECT DISTINCT ON (s.ord) s.ord, r.id FROM {stage} s JOIN {writer.t} r ON {live} ORDER BY s.ord, r.updated DESC", undeduped
    )
    existing = {row["ord"]: row["id"] for row in await cur.fetchall()}
    cur = await conn.execute(
        f"INSERT INTO {writer.t} ({_INSERT_COLS}) SELECT {_INSERT_COLS} FROM {stage} s"
        f" WHERE NOT EXISTS (SELECT 1 FROM {writer.t} r WHERE {live}) ORDER BY s.ord ON CONFLICT DO NOTHING RETURNING id",
        undeduped,
    )
    created = {row["id"] for row in await cur.fetchall()}
    by_key: dict[Key, str] = {}
    out: list[tuple[str, Status]] = []
    for i, key in enumerate(keys):
        if i in existing:
            out.append((existing[i], "duplicate"))
        elif ids[i] in created:
            by_key[key] = ids[i]
            out.append((ids[i], "created"))
        else:
            other = by_key.get(key) or await _holder(writer, conn, key)
            out.append((other, "duplicate"))
    return out


async def _holder(writer: Any, conn: Any, key: Key) -> str:
    cur = await conn.execute(
        f"SELECT id FROM {writer.t} WHERE tenant = %s AND part = %s AND content_hash = %s"
        " AND superseded_by IS NULL ORDER BY updated DESC LIMIT 1",
        key,
    )
    row = await cur.fetchone()
    if row is None:  # pragma: no cover - the conflicting row is visible to this transaction by construction
        raise BackendError("a conflicting row vanished during ingest")
    return str(row["id"])
