"""Writes: one remember per transaction with row locks, and COPY-based ingest of large batches.

The policy is the files backend's (drafts are prepared by :func:`agent_memory.drafts.prepare_draft` before
any SQL): a ``memory_key`` finds its record (``SELECT … FOR UPDATE``) and appends, replaces or skips; otherwise
a live record with the same content in the same partition is a duplicate; otherwise a row is inserted.
Unique indexes on (tenant, partition, content hash) and (tenant, partition, key) settle races between
app servers: the loser of an insert race sees the winner's row and retries the decision, so a replayed
write is a ``duplicate`` and never doubles a row or a line.
"""

from __future__ import annotations

import json
import os
import secrets
from typing import Any

from psycopg.types.json import Jsonb

from ...drafts import RememberResult, Status
from ...errors import BackendError
from ...records import MemoryRecord, content_hash, new_id, now_iso, slugify
from .rows import COLUMNS, SELECT, record_params, row_to_record, tenant_part, visibility

_INSERT_COLS = ", ".join(COLUMNS)
_INSERT_VALS = ", ".join(f"%({c})s" for c in COLUMNS)
_EXPIRED = "expires IS NOT NULL AND expires <= now()"


def batch_ids(recs: list[MemoryRecord]) -> list[str]:
    """A new id for each record, as :func:`agent_memory.records.new_id` makes them (date, slug, 8 hex), drawing
    the randomness of the whole batch at once (one system call instead of one per record)."""
    noise = secrets.token_hex(4 * len(recs))
    slugs: dict[str, str] = {}
    out = []
    for i, rec in enumerate(recs):
        slug = slugs.get(rec.title)
        if slug is None:
            slug = slugs[rec.title] = slugify(rec.title)
        out.append(f"{rec.created[:10]}-{slug}-{noise[8 * i:8 * i + 8]}")
    return out


def _bind(rec: MemoryRecord) -> dict[str, Any]:
    params = record_params(rec)
    params["metadata"] = Jsonb(params["metadata"])
    return params


class Writer:
    """Write operations over one schema; ``path_of(id)`` names a row for results."""

    def __init__(self, schema: str, path_of: Any) -> None:
        self.t = f'"{schema}".records'
        self.archive = f'"{schema}".archive'
        self.path_of = path_of

    # -- one draft ---------------------------------------------------------------------------
    async def remember_one(self, conn: Any, rec: MemoryRecord, redactions: int, mode: str) -> RememberResult:
        """Apply one prepared record in the caller's transaction (retries the decision after a lost race)."""
        tenant, part = tenant_part(rec)
        for _ in range(8):
            if rec.memory_key is not None:
                row = await self._find_keyed(conn, rec, tenant, part)
                if row is not None:
                    return await self._apply_keyed(conn, row, rec, mode, redactions)
            cur = await conn.execute(
                f"SELECT id FROM {self.t} WHERE tenant = %s AND part = %s AND content_hash = %s"
                " AND (expires IS NULL OR expires > now()) LIMIT 1", (tenant, part, rec.content_hash))
            dup = await cur.fetchone()
            if dup is not None:
                return RememberResult(dup["id"], "duplicate", self.path_of(dup["id"]), redactions)
            await self._archive_where(
                conn, f"tenant = %(tenant)s AND part = %(part)s AND content_hash = %(h)s AND memory_key IS NULL AND {_EXPIRED}",
                {"tenant": tenant, "part": part, "h": rec.content_hash}, "expired (replaced by a new write)")
            fresh = rec.replace(id=new_id(rec.title, rec.created))
            cur = await conn.execute(
                f"INSERT INTO {self.t} ({_INSERT_COLS}) VALUES ({_INSERT_VALS}) ON CONFLICT DO NOTHING RETURNING id", _bind(fresh))
            if await cur.fetchone() is not None:
                return RememberResult(fresh.id, "created", self.path_of(fresh.id), redactions)
        raise BackendError("could not settle a concurrent write after 8 attempts")  # pragma: no cover

    async def _find_keyed(self, conn: Any, rec: MemoryRecord, tenant: str, part: str) -> Any:
        params: dict[str, Any] = {"id": rec.memory_key, "sid": rec.session_id, "uid": rec.user_id}
        cur = await conn.execute(f"SELECT {SELECT} FROM {self.t} r WHERE r.id = %(id)s AND {visibility(params)} FOR UPDATE",
                                 params)
        row = await cur.fetchone()
        if row is not None:
            return row
        cur = await conn.execute(
            f"SELECT {SELECT} FROM {self.t} WHERE tenant = %s AND part = %s AND memory_key = %s"
            " ORDER BY updated DESC LIMIT 1 FOR UPDATE", (tenant, part, rec.memory_key))
        return await cur.fetchone()

    async def _apply_keyed(self, conn: Any, row: Any, rec: MemoryRecord, mode: str, redactions: int) -> RememberResult:
        rid = row["id"]
        path = self.path_of(rid)
        if mode == "skip":
            return RememberResult(rid, "skipped", path, redactions)
        current = row_to_record(row, path)
        new_text = rec.content.replace("\r\n", "\n").strip()
        status: Status
        if mode == "append":
            if new_text in current.content.replace("\r\n", "\n"):  # a replayed append never doubles a line
                return RememberResult(rid, "duplicate", path, redactions)
            body, status = current.content.rstrip("\n") + "\n" + rec.content.strip("\n"), "appended"
        else:
            if content_hash(rec.content) == current.content_hash:
                return RememberResult(rid, "duplicate", path, redactions)
            body, status = rec.content, "replaced"
        updated = current.replace(
            content=body, content_hash=content_hash(body), updated=now_iso(), tags=tuple(dict.fromkeys(current.tags + rec.tags)),
            memory_key=current.memory_key or rec.memory_key,
            title=rec.title if status == "replaced" and rec.title else current.title,
            metadata={**current.metadata, **rec.metadata},
        )
        params = _bind(updated)
        sets = ", ".join(f"{c} = %({c})s" for c in COLUMNS if c not in ("tenant", "id", "part"))
        await conn.execute(f"UPDATE {self.t} SET {sets} WHERE tenant = %(tenant)s AND id = %(id)s", params)
        return RememberResult(rid, status, path, redactions)

    # -- archive --------------------------------------------------------------------------------
    async def _archive_where(self, conn: Any, where: str, params: dict[str, Any], reason: str) -> list[str]:
        """Move matching rows to the archive table (same transaction); returns their ids."""
        cur = await conn.execute(
            f"WITH gone AS (DELETE FROM {self.t} WHERE {where} RETURNING *)"
            f" INSERT INTO {self.archive} (tenant, id, reason, record)"
            " SELECT tenant, id, %(reason)s, to_jsonb(gone) - 'tsv' FROM gone RETURNING id",
            {**params, "reason": reason})
        return [r["id"] for r in await cur.fetchall()]

    # -- many drafts via COPY -----------------------------------------------------------------
    async def copy_unkeyed(self, conn: Any, prepared: list[tuple[MemoryRecord, int]]) -> list[RememberResult]:
        """Ingest unkeyed records in one statement pipeline: COPY into a staging table, then one INSERT.

        Same outcome as one ``remember`` each (first of equal contents is created, the rest duplicates),
        in the caller's transaction; expired rows that would block a new one are archived first.
        """
        stage = f"am_stage_{os.getpid()}"
        await conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {stage} (ord integer, LIKE {self.t} INCLUDING DEFAULTS)"
                           " ON COMMIT DELETE ROWS")
        await conn.execute(f"TRUNCATE {stage}")
        recs = [rec for rec, _ in prepared]
        ids = batch_ids(recs)
        cols = ("ord", *COLUMNS)
        meta_at = COLUMNS.index("metadata")
        async with conn.cursor().copy(f"COPY {stage} ({', '.join(cols)}) FROM STDIN") as copy:
            for i, rec in enumerate(recs):  # the row function every write uses; only the id is this batch's own
                p = record_params(rec)
                p["id"] = ids[i]
                row = [i, *(p[c] for c in COLUMNS)]
                row[meta_at + 1] = json.dumps(row[meta_at + 1]) if row[meta_at + 1] else "{}"
                await copy.write_row(row)
        await self._archive_where(
            conn, f"memory_key IS NULL AND {_EXPIRED} AND (tenant, part, content_hash) IN"
                  f" (SELECT tenant, part, content_hash FROM {stage})", {}, "expired (replaced by a new write)")
        # live rows already holding a content (keyed or not) make the staged copies duplicates
        cur = await conn.execute(
            f"SELECT DISTINCT ON (s.ord) s.ord, r.id FROM {stage} s JOIN {self.t} r ON r.tenant = s.tenant AND r.part = s.part"
            " AND r.content_hash = s.content_hash AND (r.expires IS NULL OR r.expires > now()) ORDER BY s.ord, r.updated DESC")
        existing = {row["ord"]: row["id"] for row in await cur.fetchall()}
        cur = await conn.execute(
            f"INSERT INTO {self.t} ({_INSERT_COLS}) SELECT {_INSERT_COLS} FROM {stage} s"
            f" WHERE NOT EXISTS (SELECT 1 FROM {self.t} r WHERE r.tenant = s.tenant AND r.part = s.part"
            " AND r.content_hash = s.content_hash AND (r.expires IS NULL OR r.expires > now())) ORDER BY s.ord ON CONFLICT DO NOTHING RETURNING id")
        created = {row["id"] for row in await cur.fetchall()}
        by_key: dict[tuple[str, str, str], str] = {}
        out: list[RememberResult] = []
        for i, (rec, (_, redactions)) in enumerate(zip(recs, prepared, strict=True)):
            tenant, part = tenant_part(rec)
            key = (tenant, part, rec.content_hash)
            rid = ids[i]
            if i in existing:
                out.append(RememberResult(existing[i], "duplicate", self.path_of(existing[i]), redactions))
            elif rid in created:
                by_key[key] = rid
                out.append(RememberResult(rid, "created", self.path_of(rid), redactions))
            else:
                other = by_key.get(key) or await self._holder(conn, key)
                out.append(RememberResult(other, "duplicate", self.path_of(other), redactions))
        return out

    async def _holder(self, conn: Any, key: tuple[str, str, str]) -> str:
        cur = await conn.execute(f"SELECT id FROM {self.t} WHERE tenant = %s AND part = %s AND content_hash = %s"
                                 " ORDER BY updated DESC LIMIT 1", key)
        row = await cur.fetchone()
        if row is None:  # pragma: no cover - the conflicting row is visible to this transaction by construction
            raise BackendError("a conflicting row vanished during ingest")
        return str(row["id"])
