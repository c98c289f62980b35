"""The PostgreSQL bulk write path (COPY, ``remember_many``) against the row-at-a-time path, and its atomicity.

One mixed batch goes through a backend that ingests unkeyed drafts with COPY (``copy_threshold=1``) and through one
that writes every draft with ``remember_one`` (``copy_threshold`` above the batch): the statuses, the rows, the
supersession links and the events must be the same, and no secret may reach the server by either path. A batch
that fails part way leaves nothing of itself: no row, no link row, no event.
"""

from __future__ import annotations

import pytest
from _pg import fresh_schema, pg_url, require_psycopg  # noqa: F401  (pytest fixture)

require_psycopg()

import psycopg  # noqa: E402

from agent_memory.backends.base import Caller  # noqa: E402
from agent_memory.backends.postgres import PostgresBackend  # noqa: E402
from agent_memory.errors import BackendError  # noqa: E402
from agent_memory.model.drafts import MemoryDraft  # noqa: E402

SECRET = "sk-abcdefghijklmnopqrstuvwxyz1234567890"
U1 = Caller(session_id="s1", user_id="u1")
U2 = Caller(session_id="s2", user_id="u2")
FIELDS = ("content", "title", "kind", "scope", "session_id", "user_id", "tags", "memory_key", "source", "expires", "importance", "metadata")


async def _setup(b: PostgresBackend) -> dict[str, str]:
    """Rows already there before the batch (written one at a time on both stores)."""
    old = await b.remember(MemoryDraft("the ferry leaves at nine", title="Ferry time"))
    later = await b.remember(MemoryDraft("the bridge opens in May", title="Bridge"))
    curated = await b.remember(MemoryDraft("shared words of a curated line", kind="curated", memory_key="curated-notes"))
    stored = await b.remember(MemoryDraft("a fact stored before the batch"))
    return {old.id: "old", later.id: "later", curated.id: "curated", stored.id: "stored"}


def _batch(names: dict[str, str]) -> list[MemoryDraft]:
    ids = {v: k for k, v in names.items()}
    secret_everywhere = MemoryDraft(
        f"the deploy key is {SECRET}",
        title=f"Key {SECRET}",
        tags=("deploy",),  # a secret in a tag is refused, not redacted (tests/test_write_gate.py)
        metadata={"note": f"use {SECRET}", SECRET: "as a key", "deep": {"list": [SECRET]}},
    )
    return [
        MemoryDraft("batch fact one"),
        MemoryDraft("a fact stored before the batch"),  # a duplicate of a row already there
        MemoryDraft("batch fact one"),  # a duplicate inside the batch
        MemoryDraft("the ferry leaves at ten", title="Ferry time", supersedes=ids["old"]),  # a supersession
        MemoryDraft("shared words of a curated line"),  # the text of a curated record is no duplicate of it
        MemoryDraft("a line of the memory tool", kind="memory_file", metadata={"previous_version": "forged"}),
        MemoryDraft("the same private note", scope="user", user_id="u1"),  # two users, one text: two rows
        MemoryDraft("the same private note", scope="user", user_id="u2"),
        MemoryDraft("the same private note", scope="user", user_id="u2"),
        MemoryDraft("a session note", scope="session", session_id="s1", user_id="u1"),
        MemoryDraft("the bridge opens in June", supersedes=ids["later"]),  # another supersession, same batch
        MemoryDraft("a keyed log line", memory_key="log"),
        MemoryDraft("a second keyed log line", memory_key="log"),
        secret_everywhere,
        MemoryDraft("batch fact two", metadata={"previous_version": "forged"}),  # a pointer is the store's to set
    ]


async def _run(b: PostgresBackend) -> tuple[list[str], list[str], list[dict[str, object]], list[tuple[str, str]], list[str]]:
    names = await _setup(b)
    results = await b.remember_many(_batch(names))
    for i, r in enumerate(results):
        names.setdefault(r.id, f"new{i}")
    statuses: list[str] = [r.status for r in results]
    named = [names[r.id] for r in results]
    rows = []
    for caller in (U1, U2):
        for rec in await b.list(caller, limit=None, include_superseded=True):
            row: dict[str, object] = {f: getattr(rec, f) for f in FIELDS}
            row["name"] = names.get(rec.id, "?")
            row["superseded_by"] = names.get(rec.superseded_by or "", rec.superseded_by)
            row["supersedes"] = names.get(rec.supersedes or "", rec.supersedes)
            if row not in rows:
                rows.append(row)
    rows.sort(key=repr)
    events = []
    for caller in (U1, U2):
        events += [(e.event, names.get(e.id, "?")) for e in await b.events(caller)]
    async with b.pool.connection() as conn:
        cur = await conn.execute(f'SELECT to_jsonb(r)::text AS j FROM "{b.schema}".records r')
        dump = [row["j"] for row in await cur.fetchall()]
        cur = await conn.execute(f'SELECT to_jsonb(e)::text AS j FROM "{b.schema}".events e')
        dump += [row["j"] for row in await cur.fetchall()]
    return statuses, named, rows, sorted(set(events)), dump


async def test_a_mixed_batch_by_copy_equals_one_row_at_a_time(pg_url: str) -> None:  # noqa: F811
    bulk = PostgresBackend(pg_url, schema=fresh_schema(), copy_threshold=1)
    single = PostgresBackend(pg_url, schema=fresh_schema(), copy_threshold=10_000)
    try:
        b_status, b_named, b_rows, b_events, b_dump = await _run(bulk)
        s_status, s_named, s_rows, s_events, s_dump = await _run(single)
        assert b_status == s_status
        assert b_status[:4] == ["created", "duplicate", "duplicate", "superseded"]
        assert b_status[6:9] == ["created", "created", "duplicate"]
        assert b_named == s_named
        assert b_rows == s_rows
        assert b_events == s_events
        assert ("superseded", "new3") in b_events and ("superseded", "new10") in b_events
        superseded = {r["name"]: r["superseded_by"] for r in b_rows if r["superseded_by"]}
        assert superseded == {"old": "new3", "later": "new10"}
        assert not any("previous_version" in dict(r["metadata"]) for r in b_rows)  # type: ignore[call-overload]
        for dump in (b_dump, s_dump):  # nothing of the secret reached the server, whatever the path
            assert dump and not any(SECRET in j for j in dump)
    finally:
        await bulk.close()
        await single.close()


async def _leftovers(b: PostgresBackend) -> dict[str, int]:
    async with b.pool.connection() as conn:
        out = {}
        for table in ("records", "events", "record_titles", "record_links", "archive"):
            cur = await conn.execute(f'SELECT count(*) AS n FROM "{b.schema}".{table}')
            out[table] = int((await cur.fetchone())["n"])
        return out


@pytest.mark.parametrize("threshold", [1, 10_000])
async def test_a_batch_that_fails_part_way_leaves_nothing_of_itself(
    pg_url: str,  # noqa: F811
    threshold: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The third batch fails at its last statement (its events): the first two stay whole with their events, the
    third leaves no record, link, title or event, and the error reaches the caller."""
    from agent_memory.backends.postgres import backend as pg_backend

    b = PostgresBackend(pg_url, schema=fresh_schema(), copy_threshold=threshold, batch_size=4, ingest_connections=1)
    try:
        real = pg_backend.record_writes
        calls: list[int] = []

        async def failing(*args: object, **kw: object) -> None:
            calls.append(1)
            if len(calls) == 3:
                raise psycopg.errors.QueryCanceled("canceled during the third batch's events")
            await real(*args, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(pg_backend, "record_writes", failing)
        drafts = [MemoryDraft(f"fact {i} links to [[fact {i + 1}]]") for i in range(12)]
        with pytest.raises(BackendError, match="third batch"):  # the pool's typed error
            await b.remember_many(drafts)
        left = await _leftovers(b)
        assert left == {"records": 8, "events": 8, "record_titles": 8, "record_links": 8, "archive": 0}
        listed = {r.content for r in await b.list(Caller(), limit=None)}
        assert listed == {d.content for d in drafts[:8]}
        assert len(await b.events(Caller())) == 8
    finally:
        await b.close()


async def test_a_small_import_into_a_large_store_keeps_its_statistics(pg_url: str) -> None:  # noqa: F811
    """``ANALYZE`` follows a bulk write only when it changed what the planner knows: never analyzed, or a tenth of
    the rows counted added. (The store is made "large" by its counted rows: a test cannot load a million.)"""
    b = PostgresBackend(pg_url, schema=fresh_schema(), copy_threshold=1)

    async def counted() -> float:
        async with b.pool.connection() as conn:
            cur = await conn.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", (b.table,))
            return float((await cur.fetchone())["reltuples"])

    try:
        await b.remember_many([MemoryDraft(f"first import {i}") for i in range(1000)])
        assert await counted() == 1000  # never analyzed before: analyzed now
        async with b.pool.connection() as conn:  # as if the store held a million rows when last analyzed
            await conn.execute("UPDATE pg_class SET reltuples = 1000000 WHERE oid = %s::regclass", (b.table,))
        await b.remember_many([MemoryDraft(f"second import {i}") for i in range(1000)])
        assert await counted() == 1_000_000  # 1,000 rows are no tenth of a million: no ANALYZE
    finally:
        await b.close()


async def test_a_batch_finds_the_rows_of_its_events_by_primary_key(pg_url: str) -> None:  # noqa: F811
    """The events statement joins each result's row on ``(tenant, id)``: an index probe, where the join on ``id``
    alone could only scan the whole table (once per batch: 200 scans of up to a million rows in a 1M load)."""
    from agent_memory.backends.postgres.events import writes_sql

    b = PostgresBackend(pg_url, schema=fresh_schema(), copy_threshold=1)
    try:
        res = await b.remember_many([MemoryDraft(f"planned fact {i}") for i in range(3)])
        params = {
            "actor": "a", "sid": None, "uid": None, "run": None, "call": None, "step": None, "ids": [r.id for r in res], "evs": ["created"] * 3,
            "eids": ["e1", "e2", "e3"], "befores": [None] * 3, "afters": [None] * 3, "kepts": [None] * 3, "tenants": [""] * 3, "at": None,
        }  # fmt: skip
        async with b.pool.connection() as conn, conn.transaction():
            await conn.execute(  # a table of some size (plain rows: what they hold does not matter to a plan)
                f"INSERT INTO {b.table} (tenant, id, part, scope, kind, title, source, created, updated, content_hash,"
                " content, summary) SELECT '', 'filler-' || i, 'project', 'project', 'fact', 't', 'import', now(), now(),"
                " md5(i::text), 'filler ' || i, 'filler' FROM generate_series(1, 20000) i"
            )
            await conn.execute(f"ANALYZE {b.table}")
            plans = {}
            for by_key in (True, False):
                cur = await conn.execute("EXPLAIN " + writes_sql(b.schema, b.table, by_key=by_key), params)
                plans[by_key] = "\n".join(str(row["QUERY PLAN"]) for row in await cur.fetchall())

        def probes(plan: str) -> bool:  # some index is searched by the result's id (not read whole)
            return any("Index Cond" in line and "x.id" in line for line in plan.splitlines())

        assert probes(plans[True]) and "Seq Scan on records r" not in plans[True], plans[True]
        assert not probes(plans[False]), plans[False]  # what the statement was before: every row read
    finally:
        await b.close()
