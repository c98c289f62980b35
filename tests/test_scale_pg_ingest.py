"""The COPY ingest path of the PostgreSQL backend: same rows as one ``remember`` each, fresh ids, idempotent."""

from __future__ import annotations

import re

import pytest
from _pg import fresh_schema, pg_url, require_psycopg  # noqa: F401  (pytest fixture)

require_psycopg()

from agent_memory.backends.base import Caller  # noqa: E402
from agent_memory.backends.postgres import PostgresBackend  # noqa: E402
from agent_memory.backends.postgres.writes import batch_ids  # noqa: E402
from agent_memory.model.drafts import MemoryDraft, prepare_draft  # noqa: E402
from agent_memory.model.records import validate_id  # noqa: E402

OWNER = Caller(session_id="s1", user_id="u1")
FIELDS = (
    "content",
    "title",
    "kind",
    "scope",
    "session_id",
    "user_id",
    "tags",
    "memory_key",
    "source",
    "expires",
    "importance",
    "content_hash",
    "metadata",
)


def _drafts() -> list[MemoryDraft]:
    out = []
    for i in range(40):
        out.append(
            MemoryDraft(
                f"Ingested fact {i}: the ferry leaves at {i % 12} o'clock\twith a tab, a \\ backslash and ünïcode",
                title=f"Ferry {i % 5}",
                kind="decision" if i % 3 else "fact",
                scope=("project", "user", "session")[i % 3],
                session_id="s1" if i % 3 == 2 else None,
                user_id="u1" if i % 3 else None,
                tags=(f"t{i % 4}", "ferry"),
                expires="2099-01-01T00:00:00Z" if i % 7 == 0 else None,
                importance=(i % 10) / 10 if i % 2 else None,
                metadata={"n": i, "nested": {"list": [1, "two", None]}, "text": 'line\nbreak "quoted"'} if i % 4 else None,
            )
        )
    return out


async def test_copy_rows_equal_one_remember_each(pg_url: str) -> None:  # noqa: F811
    bulk = PostgresBackend(pg_url, schema=fresh_schema(), copy_threshold=2)
    single = PostgresBackend(pg_url, schema=fresh_schema(), copy_threshold=10_000)
    try:
        drafts = _drafts()
        via_copy = await bulk.remember_many(drafts)
        one_by_one = [await single.remember(d, source="import") for d in drafts]
        assert [r.status for r in via_copy] == [r.status for r in one_by_one] == ["created"] * len(drafts)
        for a, b in zip(via_copy, one_by_one, strict=True):
            ra, rb = await bulk.get(a.id, OWNER), await single.get(b.id, OWNER)
            assert {f: getattr(ra, f) for f in FIELDS} == {f: getattr(rb, f) for f in FIELDS}
        hits = await bulk.search("ferry leaves backslash", OWNER, limit=50)
        assert {h.id for h in hits.hits} == {r.id for r in via_copy}
    finally:
        await bulk.close()
        await single.close()


def test_batch_ids_are_valid_distinct_and_shaped_like_new_id() -> None:
    recs = [prepare_draft(MemoryDraft(f"same title {i}", title="Same title!"), "import")[0] for i in range(500)]
    ids = batch_ids(recs)
    assert len(set(ids)) == len(ids) == 500
    for rid, rec in zip(ids, recs, strict=True):
        assert validate_id(rid) == rid
        assert re.fullmatch(rf"{rec.created[:10]}-same-title-[0-9a-f]{{8}}", rid), rid


async def test_retried_bulk_ingest_with_keyed_drafts_never_doubles(pg_url: str) -> None:  # noqa: F811
    b = PostgresBackend(pg_url, schema=fresh_schema(), copy_threshold=5, batch_size=50)
    try:
        drafts = [MemoryDraft(f"retried fact {i % 90}") for i in range(120)]  # 30 repeats inside the run
        drafts[10] = MemoryDraft("first line of the log", memory_key="log")
        drafts[70] = MemoryDraft("second line of the log", memory_key="log")
        first = await b.remember_many(drafts)
        # 89 unkeyed contents (70 only ever came as position 70, now keyed) and the keyed record
        assert sum(r.status == "created" for r in first) == 90
        assert [first[10].status, first[70].status] == ["created", "appended"]
        again = await b.remember_many(drafts)  # a client retrying the whole import
        assert {r.status for r in again} == {"duplicate"}
        assert [r.id for r in again] == [r.id for r in first]
        assert await b.count(Caller()) == 90
        log = await b.get(first[10].id, Caller())
        assert log.content.splitlines() == ["first line of the log", "second line of the log"]
    finally:
        await b.close()


@pytest.mark.parametrize("metadata", [{}, {"k": "v"}, {"deep": {"a": [1, 2, {"b": "ç"}]}}])
async def test_metadata_survives_the_copy_path(pg_url: str, metadata: dict) -> None:  # noqa: F811
    b = PostgresBackend(pg_url, schema=fresh_schema(), copy_threshold=2)
    try:
        res = await b.remember_many([MemoryDraft(f"meta row {i}", metadata=metadata or None) for i in range(3)])
        assert [dict((await b.get(r.id, Caller())).metadata) for r in res] == [metadata] * 3
    finally:
        await b.close()


async def _mixed_batch(b: PostgresBackend, direct: bool) -> tuple[list[str], list[str], int, list[str]]:
    """Statuses, ids named, visible count and archive reasons for one batch holding every case COPY meets."""
    import asyncio
    import datetime as dt

    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)).isoformat()
    expired = await b.remember(MemoryDraft("mixed: expired text", expires=soon))
    keyed = await b.remember(MemoryDraft("mixed: held by a keyed record", memory_key="held"))
    stored = await b.remember(MemoryDraft("mixed: stored before"))
    await asyncio.sleep(1.2)
    texts = [
        "mixed: new 1",
        "mixed: stored before",
        "mixed: new 1",
        "mixed: held by a keyed record",
        "mixed: expired text",
        "mixed: new 2",
        "mixed: expired text",
    ]
    prepared = [prepare_draft(MemoryDraft(t), "import")[:2] for t in texts]
    async with b.pool.connection() as conn, conn.transaction():
        res = await b.writer.copy_unkeyed(conn, prepared, direct=direct)
    named = {expired.id: "expired", keyed.id: "keyed", stored.id: "stored"}
    ids = [
        named.get(r.id, "first" if r.id == res[0].id else "new2" if r.id == res[5].id else "expired-new" if r.id == res[4].id else r.id)
        for r in res
    ]
    async with b.pool.connection() as conn:
        cur = await conn.execute(f'SELECT reason FROM "{b.schema}".archive ORDER BY reason')
        reasons = [r["reason"] for r in await cur.fetchall()]
    return [r.status for r in res], ids, await b.count(Caller()), reasons


async def test_direct_copy_settles_every_case_as_the_staged_path(pg_url: str) -> None:  # noqa: F811
    direct = PostgresBackend(pg_url, schema=fresh_schema())
    staged = PostgresBackend(pg_url, schema=fresh_schema())
    try:
        got = await _mixed_batch(direct, True)
        assert got == await _mixed_batch(staged, False)
        statuses, ids, count, reasons = got
        assert statuses == ["created", "duplicate", "duplicate", "duplicate", "created", "created", "duplicate"]
        assert ids == ["first", "stored", "first", "keyed", "expired-new", "new2", "expired-new"]
        assert count == 5 and reasons == ["expired (replaced by a new write)"]
    finally:
        await direct.close()
        await staged.close()


async def test_a_lost_race_on_the_direct_copy_is_retried_staged(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    from agent_memory.backends.postgres import ingest

    b = PostgresBackend(pg_url, schema=fresh_schema(), copy_threshold=2)
    try:
        other = await b.remember(MemoryDraft("raced text"))
        real = ingest._existing
        calls = []

        async def stale(*args: object) -> object:  # as if the other writer committed just after the lookup
            live, blocked = await real(*args)  # type: ignore[arg-type]
            calls.append(len(live))
            return {}, blocked

        monkeypatch.setattr(ingest, "_existing", stale)
        res = await b.remember_many([MemoryDraft("raced text"), MemoryDraft("new text"), MemoryDraft("new text")])
        assert calls == [1]  # the direct COPY ran once, hit the unique index, and the staged retry settled it
        assert [r.status for r in res] == ["duplicate", "created", "duplicate"]
        assert res[0].id == other.id and res[1].id == res[2].id
        assert await b.count(Caller()) == 2
    finally:
        await b.close()
