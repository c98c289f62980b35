"""Maintenance of the PostgreSQL backend: sweep (TTL and duplicates), reindex and doctor.

Rows edited by hand in SQL are what can drift: a ``content`` whose ``content_hash`` or ``summary`` no longer
matches. ``doctor`` reports them (and a schema behind the code); ``reindex`` repairs them and rebuilds the
text-search index. The hash is compared in SQL first and confirmed in Python (the definition of record).
"""

from __future__ import annotations

from typing import Any

from agent_memory.backends.base import Caller
from agent_memory.backends.postgres import links
from agent_memory.backends.postgres.events import record_event
from agent_memory.backends.postgres.schema import LATEST
from agent_memory.backends.postgres.writes import Writer
from agent_memory.model.lines import summary_line
from agent_memory.model.records import content_hash
from agent_memory.model.reports import DoctorReport, SweepReport, SyncReport
from agent_memory.model.supersession import UNDEDUPED_KINDS

_SQL_HASH = "left(encode(sha256(convert_to(btrim(replace(content, E'\\r\\n', E'\\n'), E' \\t\\n\\r\\x0b\\x0c'), 'UTF8')), 'hex'), 16)"


class Maintenance:
    def __init__(self, schema: str, writer: Writer) -> None:
        self.schema = schema
        self.t = f'"{schema}".records'
        self.writer = writer

    async def sweep(self, conn: Any) -> SweepReport:
        """Archive expired records, then exact duplicates in a partition and namespace (the newest is kept), in one
        transaction; each archived record gets a ``swept`` event (undo and restore bring it back), as on files."""
        report = SweepReport()
        async with conn.transaction():
            report.expired = sorted(await self.writer._archive_where(conn, "expires IS NOT NULL AND expires <= now()", {}, "expired"))
            # a superseded record is history, never a duplicate of the current fact that repeats its words
            report.duplicates = sorted(
                await self.writer._archive_where(
                    conn,
                    f"(tenant, id) IN (SELECT tenant, id FROM (SELECT tenant, id, row_number() OVER"
                    f" (PARTITION BY tenant, part, namespace, content_hash ORDER BY updated DESC, id) AS n FROM {self.t}"
                    " WHERE superseded_by IS NULL AND NOT (kind = ANY(%(undeduped)s))) d WHERE n > 1)",
                    {"undeduped": list(UNDEDUPED_KINDS)},
                    "duplicate",
                )
            )
            await self._swept_events(conn, [*report.expired, *report.duplicates])
        return report

    async def _swept_events(self, conn: Any, ids: list[str]) -> None:
        """One ``swept`` event per record the sweep just archived (its newest archived copy gives owner and hash)."""
        if not ids:
            return
        cur = await conn.execute(
            f'SELECT DISTINCT ON (tenant, id) tenant, id, reason, record FROM "{self.schema}".archive'
            " WHERE id = ANY(%(ids)s) ORDER BY tenant, id, archived DESC",
            {"ids": ids},
        )
        for got in await cur.fetchall():
            rec = got["record"]
            row = {
                "tenant": got["tenant"],
                "id": got["id"],
                "scope": rec.get("scope"),
                "session_id": rec.get("session_id"),
                "user_id": rec.get("user_id"),
                "namespace": rec.get("namespace") or "",
            }
            owner = Caller(row["session_id"], row["user_id"], row["namespace"] or None)  # the owner's undo reverses it, as on files
            await record_event(self.writer, conn, "swept", row, owner, before=rec.get("content_hash"), source="sweep", reason=got["reason"])

    async def _drifted(self, conn: Any) -> list[dict[str, Any]]:
        cur = await conn.execute(f"SELECT tenant, id, content, content_hash FROM {self.t} WHERE content_hash <> {_SQL_HASH}")
        rows = await cur.fetchall()
        return [r for r in rows if r["content_hash"] != content_hash(r["content"])]

    async def reindex(self, conn: Any) -> SyncReport:
        """Repair hand-edited rows (hash, summary) and rebuild the text-search index."""
        report = SyncReport(rebuilt=True)
        async with conn.transaction():
            for row in await self._drifted(conn):
                await conn.execute(
                    f"UPDATE {self.t} SET content_hash = %s, summary = %s WHERE tenant = %s AND id = %s",
                    (content_hash(row["content"]), summary_line(row["content"]), row["tenant"], row["id"]),
                )
                report.updated += 1
            cur = await conn.execute(f"SELECT count(*) AS n FROM {self.t}")
            report.scanned = int((await cur.fetchone())["n"])
            report.added = report.scanned - report.updated  # REINDEX below rebuilds every row's entry
            await links.rebuild(conn, self.schema)  # derived from the bodies, as the text index is
        await conn.execute(f'REINDEX INDEX "{self.schema}".records_tsv')
        return report

    async def doctor(self, conn: Any, version: int) -> DoctorReport:
        """Count rows, report drifted rows and a schema behind (or ahead of) this code."""
        cur = await conn.execute(f"SELECT count(*) AS n, count(*) FILTER (WHERE tsv IS NOT NULL) AS i FROM {self.t}")
        counts = await cur.fetchone()
        problems = {r["id"]: "content changed outside agent_memory (content hash stale; run reindex)" for r in await self._drifted(conn)}
        cur = await conn.execute(f'SELECT coalesce(max(version), 0) AS v FROM "{self.schema}".schema_version')
        stored = int((await cur.fetchone())["v"])
        if stored != LATEST:
            problems["schema_version"] = f"schema is at version {stored}, this code expects {LATEST}"
        drift = {
            "stale_in_index": sum(1 for k in problems if k != "schema_version"),
            "missing_from_index": int(counts["n"]) - int(counts["i"]),
            "orphaned_in_index": 0,
        }
        return DoctorReport(int(counts["n"]), int(counts["i"]), problems, drift, ok=not problems and not any(drift.values()))
