"""What only the PostgreSQL backend has: migrations, options, server failures, archive, vectors, maintenance."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from _pg import fresh_schema, pg_url, require_psycopg  # noqa: F401  (pytest fixture)

require_psycopg()

import psycopg  # noqa: E402

from agent_memory.backends import open_backend  # noqa: E402
from agent_memory.backends.base import Caller  # noqa: E402
from agent_memory.backends.files.fts import Fts5Engine  # noqa: E402
from agent_memory.backends.postgres import PostgresBackend  # noqa: E402
from agent_memory.backends.postgres.schema import LATEST, migrations  # noqa: E402
from agent_memory.errors import BackendError, InvalidInputError  # noqa: E402
from agent_memory.model.drafts import MemoryDraft  # noqa: E402

ANYONE = Caller()


@pytest.fixture
async def pg(pg_url: str) -> AsyncIterator[PostgresBackend]:  # noqa: F811
    b = PostgresBackend(pg_url, schema=fresh_schema())
    yield b
    await b.close()


async def _sql(url: str, sql: str, *params: object) -> list[tuple[object, ...]]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(sql, params or None)
        return await cur.fetchall() if cur.description else []


async def test_migrations_are_versioned_and_run_once_under_concurrent_opens(pg_url: str) -> None:  # noqa: F811
    schema = fresh_schema()
    backends = [PostgresBackend(pg_url, schema=schema) for _ in range(6)]
    try:
        await asyncio.gather(*(b.count(ANYONE) for b in backends))  # six app servers start at once
        rows = await _sql(pg_url, f'SELECT version FROM "{schema}".schema_version ORDER BY version')
        assert [r[0] for r in rows] == [v for v, _, _ in migrations(schema)]  # every version, once, in order
        assert {b.pool.version for b in backends} == {LATEST}
    finally:
        for b in backends:
            await b.close()


async def test_open_backend_and_options(pg_url: str) -> None:  # noqa: F811
    b = open_backend(pg_url, schema=fresh_schema(), default_scope="global", durable=True)
    assert isinstance(b, PostgresBackend)
    res = await b.remember(MemoryDraft("scoped by default"))
    assert (await b.get(res.id, ANYONE)).scope.value == "global"
    await b.close()
    for bad in (
        {"schema": "Robert'); DROP TABLE x;--"},
        {"nonsense": 1},
        {"text_config": "english; x"},
        {"max_size": 0},
        {"engine": object()},
        {"batch_size": 0},
    ):
        with pytest.raises(InvalidInputError):
            PostgresBackend(pg_url, **bad)  # type: ignore[arg-type]


async def test_unreachable_server_is_a_backend_error_without_the_password() -> None:
    b = PostgresBackend("postgresql://someone:hunter2secret@127.0.0.1:1/none", timeout_s=2)
    with pytest.raises(BackendError) as info:
        await b.count(ANYONE)
    assert "hunter2secret" not in str(info.value) and "127.0.0.1:1" in str(info.value)
    await b.close()


async def test_forget_archives_and_cascades_vectors(pg: PostgresBackend, pg_url: str) -> None:  # noqa: F811
    res = await pg.remember(MemoryDraft("an embedded note"))
    await _sql(
        pg_url,
        f'INSERT INTO "{pg.schema}".record_vectors (tenant, id, model, dims, embedding, content_hash)'
        " VALUES ('', %s, 'test', 3, '{0.1,0.2,0.3}', 'h')",
        res.id,
    )
    assert await pg.forget(res.id, ANYONE)
    assert await _sql(pg_url, f'SELECT count(*) FROM "{pg.schema}".record_vectors') == [(0,)]
    archived = await _sql(pg_url, f"SELECT id, reason, record->>'content' FROM \"{pg.schema}\".archive")
    assert archived == [(res.id, "forgotten", "an embedded note")]


async def test_doctor_reports_and_reindex_repairs_hand_edits(pg: PostgresBackend, pg_url: str) -> None:  # noqa: F811
    res = await pg.remember(MemoryDraft("original text"))
    await pg.remember(MemoryDraft("untouched"))
    assert (await pg.doctor()).ok
    await _sql(pg_url, f'UPDATE "{pg.schema}".records SET content = %s WHERE id = %s', "edited by hand in psql", res.id)
    rep = await pg.doctor()
    assert not rep.ok and list(rep.problems) == [res.id] and rep.drift["stale_in_index"] == 1
    fixed = await pg.reindex()
    assert fixed.updated == 1 and fixed.scanned == 2
    assert (await pg.doctor()).ok
    assert (await pg.search("edited by hand", ANYONE)).hits[0].id == res.id  # the generated text vector follows
    assert (await pg.remember(MemoryDraft("edited by hand in psql"))).status == "duplicate"


async def test_sweep_archives_keyed_duplicates_keeping_newest(pg: PostgresBackend) -> None:
    a = await pg.remember(MemoryDraft("same words", memory_key="k1"))
    b = await pg.remember(MemoryDraft("other words", memory_key="k2"))
    assert (await pg.remember(MemoryDraft("same words", memory_key="k2", on_existing="replace"))).status == "replaced"
    rep = await pg.sweep()
    assert rep.duplicates == [a.id] and rep.expired == []
    assert [r.id for r in await pg.list(ANYONE)] == [b.id]


async def test_user_md_round_trip(pg: PostgresBackend) -> None:
    assert await pg.user_md() == ""
    await pg.set_user_md("# USER\nprefers metric units\n")
    await pg.set_user_md("# USER\nprefers metric units, tea\n")
    assert await pg.user_md() == "# USER\nprefers metric units, tea\n"


async def test_search_trace_and_candidate_budget(pg_url: str) -> None:  # noqa: F811
    """When common words match more rows than the budget, the rare word selects; the best answer is unchanged."""
    engine = Fts5Engine(candidate_budget=50)
    b = PostgresBackend(pg_url, schema=fresh_schema(), engine=engine)
    try:
        await b.remember_many([MemoryDraft(f"weekly status meeting notes {i}") for i in range(200)])
        want = await b.remember(MemoryDraft("status of the zeppelin project meeting"))
        res = await b.search("zeppelin status meeting", ANYONE, limit=3, trace=True)
        assert res.hits[0].id == want.id
        assert res.trace is not None
        stages = {s["stage"]: s for s in res.trace}
        assert stages["candidates"]["selecting"] == ["zeppelin", "status"]  # rarest first, up to the pool
        assert stages["parse"]["terms"] == ["zeppelin", "status", "meeting"]
        again = await b.search("meeting zeppelin status", ANYONE, limit=3, trace=True)  # counts now cached
        assert again.trace is not None and again.hits[0].id == want.id
        assert {s["stage"]: s for s in again.trace}["candidates"]["selecting"][0] == "zeppelin"
        assert {t for t, owner in b.searcher._df if owner is None} >= {"zeppelin", "status", "meeting"}  # the counts cached
        wide = PostgresBackend(pg_url, schema=b.schema, engine=Fts5Engine(candidate_budget=None))
        assert (await wide.search("zeppelin status meeting", ANYONE, limit=1)).hits[0].id == want.id
        await wide.close()
    finally:
        await b.close()


async def test_query_text_cannot_inject_tsquery_or_sql(pg: PostgresBackend) -> None:
    await pg.remember(MemoryDraft("plain words about apples"))
    for query in ("apples' | '", "apples & !(x", "'; DROP TABLE records; --", "a:* | b <-> c", "\\\\ apples \\'"):
        hits = (await pg.search(query, ANYONE)).hits
        assert all("apples" in h.snippet for h in hits)
    assert len((await pg.search("apples' | '", ANYONE)).hits) == 1
    # a NUL in a query separates words, as in the files backend (test_contract_tools.py checks both)
    assert [h.snippet for h in (await pg.search("nul\x00apples", ANYONE)).hits] == ["plain words about apples"]
    with pytest.raises(InvalidInputError):
        await pg.get("x", Caller(session_id="\udc80"))


async def test_pipelined_ingest_across_batches_and_connections(pg_url: str) -> None:  # noqa: F811
    """Many COPY batches on 3 connections: positions of errors, duplicates across batches, progress, counts."""
    b = PostgresBackend(pg_url, schema=fresh_schema(), batch_size=100, copy_threshold=10, ingest_connections=3)
    try:
        drafts = [MemoryDraft(f"pipelined row {i % 700}") for i in range(1000)]  # rows 700.. repeat earlier batches
        drafts[250] = MemoryDraft("")  # invalid: reported with its position, the rest written
        seen: list[int] = []
        errors: list[tuple[int, str]] = []
        results = await b.remember_many(drafts, on_error="skip", errors=errors, progress=seen.append)
        assert [pos for pos, _ in errors] == [250] and sum(seen) == 1000 and len(results) == 999
        assert sum(r.status == "created" for r in results) == 700  # row 250 comes again at 950
        assert await b.count(ANYONE) == 700
        by_content: dict[str, set[str]] = {}
        for draft, res in zip([dr for i, dr in enumerate(drafts) if i != 250], results, strict=True):
            by_content.setdefault(draft.content, set()).add(res.id)
        assert all(len(ids) == 1 for ids in by_content.values())  # a duplicate names the one row holding it
        with pytest.raises(InvalidInputError):
            await b.remember_many([MemoryDraft(f"late batch {i}") for i in range(150)] + [MemoryDraft("")])
        assert await b.count(ANYONE) == 800  # the first batch (100) was written before the bad one was seen
    finally:
        await b.close()


async def test_pgvector_detection_matches_the_server_install(pg_url: str) -> None:  # noqa: F811
    import subprocess
    from pathlib import Path

    from _pg import PG_BIN

    from agent_memory.backends.postgres.schema import has_pgvector

    share = subprocess.run([str(PG_BIN / "pg_config"), "--sharedir"], capture_output=True, text=True, check=True).stdout.strip()
    installed = (Path(share) / "extension" / "vector.control").exists()
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        assert await has_pgvector(conn) is installed


async def test_content_lookups_of_writes_are_served_by_an_index(pg_url: str) -> None:  # noqa: F811
    """The duplicate check of every write (keyed or not) and of COPY ingest probes an index, never the whole table
    (before migration 6 only partial indexes existed, and neither could serve them: a sequential scan per write)."""
    schema = fresh_schema()
    b = PostgresBackend(pg_url, schema=schema)
    try:
        await b.remember(MemoryDraft("indexed lookup"))
        async with b.pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT set_config('enable_seqscan', 'off', true)")  # a seq scan now only if nothing else can
            for sql in (
                f'SELECT id FROM "{schema}".records WHERE tenant = %s AND part = %s AND content_hash = %s'
                " AND (expires IS NULL OR expires > now()) AND superseded_by IS NULL LIMIT 1",
                f'SELECT id FROM "{schema}".records WHERE tenant = %s AND part = %s AND content_hash = %s'
                " AND superseded_by IS NULL ORDER BY updated DESC LIMIT 1",
            ):
                cur = await conn.execute("EXPLAIN " + sql, ("", "project", "abc"))
                plan = " ".join(r["QUERY PLAN"] for r in await cur.fetchall())
                assert "records_hash_any" in plan and "Seq Scan" not in plan, plan
    finally:
        await b.close()


async def test_migration_6_upgrades_a_version_3_schema_with_its_rows(pg_url: str) -> None:  # noqa: F811
    from agent_memory.backends.postgres.schema import migrations

    schema = fresh_schema()
    await _sql(pg_url, f'CREATE SCHEMA "{schema}"')
    await _sql(
        pg_url,
        f'CREATE TABLE "{schema}".schema_version (version integer PRIMARY KEY, description text NOT NULL,'
        " applied timestamptz NOT NULL DEFAULT now())",
    )
    for version, description, statements in migrations(schema):
        if version <= 3:
            for stmt in statements:
                await _sql(pg_url, stmt)
            await _sql(pg_url, f'INSERT INTO "{schema}".schema_version VALUES (%s, %s)', version, description)
    b = None
    try:
        # a row written under version 3's indexes (simulated: the version-3 code path is gone, the row is the same)
        await _sql(
            pg_url,
            f'INSERT INTO "{schema}".records (tenant, id, part, scope, kind, title, memory_key, source, created,'
            " updated, content_hash, content, summary) VALUES ('', '2026-01-01-editor-00000000', 'project',"
            " 'project', 'fact', 'Editor', 'editor', 'tool', now(), now(), 'h', 'editor: vim', 'editor: vim')",
        )
        b = PostgresBackend(pg_url, schema=schema)
        typed = await b.remember(MemoryDraft("editor: emacs", memory_key="editor"))
        assert (typed.id, typed.status) == ("2026-01-01-editor-00000000", "appended")
        captured = await b.remember(MemoryDraft("editor: helix", memory_key="editor"), source="turn_capture")
        assert captured.status == "created" and captured.id != typed.id
        assert b.pool.version >= 6
        rows = await _sql(pg_url, "SELECT indexname FROM pg_indexes WHERE schemaname = %s ORDER BY 1", schema)
        names = {r[0] for r in rows}
        assert {"records_key_writer", "records_hash_any"} <= names
        assert not {"records_key_current", "records_keyed_hash"} & names
    finally:
        if b is not None:
            await b.close()
