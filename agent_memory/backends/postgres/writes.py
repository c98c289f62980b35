"""Writes: one remember per transaction with row locks, and COPY-based ingest of large batches.

The policy is the files backend's (drafts are prepared by :func:`agent_memory.model.drafts.prepare_draft` before
any SQL): a ``memory_key`` finds its record (``SELECT … FOR UPDATE``) and appends, replaces or skips; otherwise
a live record with the same content in the same partition is a duplicate; otherwise a row is inserted.
Unique indexes on (tenant, partition, content hash) and (tenant, partition, key) settle races between
app servers: the loser of an insert race sees the winner's row and retries the decision, so a replayed
write is a ``duplicate`` and never doubles a row or a line.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

from psycopg.types.json import Jsonb

from agent_memory.backends.postgres import links
from agent_memory.backends.postgres.ingest import batch_ids as batch_ids  # re-exported
from agent_memory.backends.postgres.ingest import copy_unkeyed
from agent_memory.backends.postgres.rows import COLUMNS, SELECT, record_params, row_to_record, tenant_part
from agent_memory.backends.postgres.supersede import current_of, keep_version, supersede_one
from agent_memory.errors import BackendError
from agent_memory.model.drafts import RememberResult, Status
from agent_memory.model.records import MemoryRecord, content_hash, default_title, new_id, now_iso
from agent_memory.model.supersession import CAPTURE_SOURCES, POINTER, UNDEDUPED_KINDS, holds_lines

_INSERT_COLS = ", ".join(COLUMNS)
_INSERT_VALS = ", ".join(f"%({c})s" for c in COLUMNS)
_EXPIRED = "expires IS NOT NULL AND expires <= now()"
_LIVE = "(expires IS NULL OR expires > now())"


def _bind(rec: MemoryRecord) -> dict[str, Any]:
    params = record_params(rec)
    params["metadata"] = Jsonb(params["metadata"])
    return params


def chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """``items`` in lists of ``size`` (the last one shorter), consumed lazily."""
    it = iter(items)
    while batch := list(itertools.islice(it, size)):
        yield batch


class Writer:
    """Write operations over one schema; ``path_of(id)`` names a row for results."""

    def __init__(self, schema: str, path_of: Any) -> None:
        self.schema = schema
        self.t = f'"{schema}".records'
        self.archive = f'"{schema}".archive'
        self.path_of = path_of

    # -- one draft ---------------------------------------------------------------------------
    async def remember_one(
        self,
        conn: Any,
        rec: MemoryRecord,
        redactions: int,
        mode: str,
        fields: frozenset[str] = frozenset(),
        note: dict[str, Any] | None = None,
    ) -> RememberResult:
        """Apply one prepared record in the caller's transaction (retries the decision after a lost race).

        ``fields`` are the optional fields the draft set (:func:`agent_memory.model.drafts.explicit_fields`): a keyed
        replace applies exactly these, as in the files backend. ``note`` receives what the write's event needs
        that the rows no longer say: for an append, the hash before it, after it and how much text it kept
        (an append keeps no version row, so the event is the only record of the state before it).
        """
        tenant, part = tenant_part(rec)
        if POINTER in rec.metadata:  # history pointers are the store's to set
            rec = rec.replace(metadata={k: v for k, v in rec.metadata.items() if k != POINTER})
        if rec.supersedes is not None:
            return await supersede_one(self, conn, rec, redactions)
        for _ in range(8):
            if rec.memory_key is not None:
                row = await self._find_keyed(conn, rec, tenant, part, mode)
                if row is not None:  # (capture never rewrites a person's or a tool's record: it keeps its own)
                    return await self._apply_keyed(conn, row, rec, mode, fields, redactions, note)
            dup = None
            if rec.kind not in UNDEDUPED_KINDS:  # files of the memory tool may repeat each other's (or a memory's) text
                cur = await conn.execute(
                    f"SELECT id FROM {self.t} WHERE tenant = %s AND part = %s AND content_hash = %s AND (expires IS NULL"
                    " OR expires > now()) AND superseded_by IS NULL AND NOT (kind = ANY(%s)) LIMIT 1",
                    (tenant, part, rec.content_hash, list(UNDEDUPED_KINDS)),
                )
                dup = await cur.fetchone()
            if dup is not None:
                return RememberResult(dup["id"], "duplicate", self.path_of(dup["id"]), redactions)
            await self._archive_where(
                conn,
                f"tenant = %(tenant)s AND part = %(part)s AND {_EXPIRED} AND (content_hash = %(h)s AND memory_key IS NULL"
                " OR memory_key = %(k)s)",  # an expired keyed record is gone for writes as for reads
                {"tenant": tenant, "part": part, "h": rec.content_hash, "k": rec.memory_key},
                "expired (replaced by a new write)",
            )
            fresh = rec.replace(id=new_id(rec.memory_key or rec.title, rec.created))
            cur = await conn.execute(
                f"INSERT INTO {self.t} ({_INSERT_COLS}) VALUES ({_INSERT_VALS}) ON CONFLICT DO NOTHING RETURNING id", _bind(fresh)
            )
            if await cur.fetchone() is not None:
                await links.add(conn, self.schema, [fresh])
                return RememberResult(fresh.id, "created", self.path_of(fresh.id), redactions)
        raise BackendError("could not settle a concurrent write after 8 attempts")  # pragma: no cover

    async def _find_keyed(self, conn: Any, rec: MemoryRecord, tenant: str, part: str, mode: str) -> Any:
        """The live record of ``rec``'s own partition that its key names (by id first, then by key), locked."""
        where = f"tenant = %(tenant)s AND part = %(part)s AND {_LIVE}"
        if rec.source in CAPTURE_SOURCES and mode != "skip":  # capture extends or corrects only what capture wrote
            where += " AND source IN ('turn_capture', 'compaction_capture')"
        params = {"tenant": tenant, "part": part, "k": rec.memory_key}
        cur = await conn.execute(f"SELECT {SELECT} FROM {self.t} r WHERE id = %(k)s AND {where} FOR UPDATE", params)
        row = await cur.fetchone()
        if row is not None and row["superseded_by"]:  # a superseded id names the record that superseded it
            row = await current_of(self, conn, row)
        if row is not None:
            return row
        cur = await conn.execute(
            f"SELECT {SELECT} FROM {self.t} r WHERE memory_key = %(k)s AND {where}"
            " AND superseded_by IS NULL ORDER BY updated DESC, id LIMIT 1 FOR UPDATE",
            params,
        )
        return await cur.fetchone()

    async def _apply_keyed(
        self, conn: Any, row: Any, rec: MemoryRecord, mode: str, fields: frozenset[str], redactions: int, note: dict[str, Any] | None = None
    ) -> RememberResult:
        rid = row["id"]
        path = self.path_of(rid)
        if mode == "skip":
            return RememberResult(rid, "skipped", path, redactions)
        current = row_to_record(row, path)
        status: Status
        if mode == "append":
            if holds_lines(current.content, rec.content):
                return RememberResult(rid, "duplicate", path, redactions)  # a replayed append never doubles a line
            body, status = current.content.rstrip("\n") + "\n" + rec.content.strip("\n"), "appended"
            tags = tuple(dict.fromkeys(current.tags + rec.tags))
        else:
            body, status = rec.content, "replaced"
            tags = rec.tags if "tags" in fields else current.tags
        derived = current.title == default_title(current.content)  # a title made from the text follows the text
        updated = current.replace(
            content=body,
            content_hash=content_hash(body),
            tags=tags,
            memory_key=current.memory_key or (rec.memory_key if rec.memory_key != rid else None),
            title=rec.title if "title" in fields else default_title(body) if derived else current.title,
            kind=rec.kind if "kind" in fields else current.kind,
            expires=rec.expires if "expires" in fields else current.expires,
            importance=rec.importance if "importance" in fields else current.importance,
            metadata={**current.metadata, **rec.metadata},
            **{
                name: getattr(rec, name) or (None if status == "replaced" else getattr(current, name))
                for name in ("happened_at", "valid_from", "valid_to")
            },
        )
        if updated.frontmatter() == current.frontmatter() and body == current.content:
            return RememberResult(rid, "duplicate", path, redactions)  # nothing would change
        updated = updated.replace(updated=now_iso())
        if status == "replaced":  # a supersession that keeps the id: the replaced state stays as a superseded row
            updated = await keep_version(self, conn, current, updated)
        params = _bind(updated)
        sets = ", ".join(f"{c} = %({c})s" for c in COLUMNS if c not in ("tenant", "id", "part"))
        await conn.execute(f"UPDATE {self.t} SET {sets} WHERE tenant = %(tenant)s AND id = %(id)s", params)
        await links.sync(conn, self.schema, [(params["tenant"], rid)])  # the kept version's rows: keep_version's
        if status == "appended" and note is not None:  # as the files backend's event: undo cuts the text back to `kept`
            note.update(before=current.content_hash, after=updated.content_hash, kept=len(current.content.rstrip("\n")))
        return RememberResult(rid, status, path, redactions)

    # -- archive --------------------------------------------------------------------------------
    async def _archive_where(self, conn: Any, where: str, params: dict[str, Any], reason: str) -> list[str]:
        """Move matching rows to the archive table (same transaction); returns their ids."""
        cur = await conn.execute(
            f"WITH gone AS (DELETE FROM {self.t} WHERE {where} RETURNING *)"
            f" INSERT INTO {self.archive} (tenant, id, reason, record)"
            " SELECT tenant, id, %(reason)s, to_jsonb(gone) - 'tsv' FROM gone RETURNING id",
            {**params, "reason": reason},
        )
        return [r["id"] for r in await cur.fetchall()]

    # -- many drafts via COPY -----------------------------------------------------------------
    async def copy_unkeyed(self, conn: Any, prepared: list[tuple[MemoryRecord, int]], *, direct: bool = True) -> list[RememberResult]:
        """Ingest unkeyed records via COPY in the caller's transaction (see :mod:`.ingest`)."""
        return await copy_unkeyed(self, conn, prepared, direct=direct)
