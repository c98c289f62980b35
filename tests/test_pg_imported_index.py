"""PostgreSQL finds a record by the id it was imported under with an index (migration 13), not a scan of the table.

An ``[[id]]`` that names no visible record looks for a record imported under that id (``metadata.imported_id``,
:meth:`agent_memory.backends.postgres.links._Reader.by_id`). Migration 13 adds a partial expression index for it; the
lookup repeats the index's predicate so the planner may use it. The migration runs on a schema made by version 12,
with its rows, and again without harm.
"""

from __future__ import annotations

import json
from typing import Any

from _pg import fresh_schema, pg_url, require_psycopg  # noqa: F401  (pytest fixture)

require_psycopg()

import psycopg  # noqa: E402

from agent_memory.backends.base import Caller  # noqa: E402
from agent_memory.backends.postgres import PostgresBackend  # noqa: E402
from agent_memory.backends.postgres.links import _Reader  # noqa: E402
from agent_memory.backends.postgres.schema import migrations  # noqa: E402
from agent_memory.model.drafts import MemoryDraft  # noqa: E402

ROWS = 20_000  # enough that a scan costs more than the index probe: the planner picks the index of its own accord


async def _sql(url: str, sql: str, *params: object) -> list[tuple[Any, ...]]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(sql, params or None)
        return await cur.fetchall() if cur.description else []


async def _schema_of_version_12(url: str) -> str:
    """A schema as the previous version left it (migrations 1-12), with ``ROWS`` project rows, a few imported."""
    schema = fresh_schema()
    await _sql(url, f'CREATE SCHEMA "{schema}"')
    await _sql(
        url,
        f'CREATE TABLE "{schema}".schema_version (version integer PRIMARY KEY, description text NOT NULL,'
        " applied timestamptz NOT NULL DEFAULT now())",
    )
    for version, description, statements in migrations(schema):
        if version <= 12:
            for stmt in statements:
                await _sql(url, stmt)
            await _sql(url, f'INSERT INTO "{schema}".schema_version VALUES (%s, %s)', version, description)
    await _sql(
        url,
        f'INSERT INTO "{schema}".records (tenant, id, part, scope, kind, title, source, created, updated, content_hash,'
        " content, summary, metadata) SELECT '', 'r' || g, 'project', 'project', 'fact', 'note ' || g, 'tool', now(), now(),"
        " 'h' || g, 'note ' || g, 'note ' || g,"
        " CASE WHEN g %% 5000 = 0 THEN jsonb_build_object('imported_id', 'old-' || g) ELSE '{}'::jsonb END"
        " FROM generate_series(1, %s) g",
        ROWS,
    )
    await _sql(url, f'ANALYZE "{schema}".records')
    return schema


class _Explaining:
    """A connection that also EXPLAINs each statement it runs (its plans, in order)."""

    def __init__(self, conn: Any) -> None:
        self.conn, self.plans = conn, []  # type: ignore[var-annotated]

    async def execute(self, sql: str, params: Any = None) -> Any:
        cur = await self.conn.execute("EXPLAIN (FORMAT JSON) " + sql, params)
        row = await cur.fetchone()
        plan = row["QUERY PLAN"] if isinstance(row, dict) else row[0]
        self.plans.append(json.dumps(plan if not isinstance(plan, str) else json.loads(plan)))
        return await self.conn.execute(sql, params)


async def test_migration_13_indexes_imported_ids_and_the_link_lookup_uses_the_index(pg_url: str) -> None:  # noqa: F811
    schema = await _schema_of_version_12(pg_url)
    b = PostgresBackend(pg_url, schema=schema)
    try:
        await b.count(Caller())  # opening migrates the version-12 schema
        assert b.pool.version >= 13
        [[indexdef]] = await _sql(
            pg_url, "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = 'records_imported_id'", schema
        )
        assert "imported_id" in indexdef and "WHERE" in indexdef  # partial: over the imported rows only
        # a link to the id a record was imported under resolves to that record
        linker = await b.remember(MemoryDraft("see [[old-5000]]", scope="project"))
        links = await b.links(linker.id, Caller())
        assert [link.record_id for link in links.outgoing] == ["r5000"]
        async with b.pool.connection() as conn:
            spy = _Explaining(conn)
            found = await _Reader(spy, b.table, schema, b._caller(Caller())).by_id(["old-5000", "old-10000", "nowhere"])
        assert {k: [r.id for r in v] for k, v in found.items() if v} == {"old-5000": ["r5000"], "old-10000": ["r10000"]}
        imported_plan = spy.plans[-1]  # the lookup by imported id (the one by id found none of them)
        assert "records_imported_id" in imported_plan, imported_plan  # an index probe, not a scan of 20k rows
        assert '"Seq Scan"' not in imported_plan
        # idempotent: the step runs again on a schema that has it
        [(version, description, statements)] = [m for m in migrations(schema) if m[0] == 13]
        for stmt in statements:
            await _sql(pg_url, stmt)
    finally:
        await b.close()
