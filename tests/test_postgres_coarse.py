"""PostgreSQL's server-side coarse filter (sign-bit signatures, migration 10): the same top-k as the exact read on a
small set, visibility in the WHERE clause, and the migration filling the signatures of rows already there."""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator

import numpy as np
import pytest
from _pg import fresh_schema, pg_url, require_psycopg  # noqa: F401  (pytest fixture)

require_psycopg()

import psycopg  # noqa: E402

from agent_memory.backends.base import Caller  # noqa: E402
from agent_memory.backends.postgres import PostgresBackend  # noqa: E402
from agent_memory.backends.postgres import vectors as pg_vectors  # noqa: E402
from agent_memory.backends.postgres.schema import migrations  # noqa: E402
from agent_memory.embeddings import CallableEmbedder  # noqa: E402
from agent_memory.model.drafts import MemoryDraft  # noqa: E402

DIM = 128
ALICE, BOB = Caller(user_id="alice"), Caller(user_id="bob")


def word_vectors(texts: list[str]) -> np.ndarray:
    """Each word a fixed random direction; a text the normalised sum of its words'."""
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for i, t in enumerate(texts):
        for w in t.lower().split():
            out[i] += np.random.default_rng(zlib.crc32(w.encode())).standard_normal(DIM).astype(np.float32)
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


@pytest.fixture
async def pg(pg_url: str) -> AsyncIterator[PostgresBackend]:  # noqa: F811
    b = PostgresBackend(pg_url, schema=fresh_schema(), embedder=CallableEmbedder(word_vectors, name="words"))
    yield b
    await b.close()


async def _sql(url: str, sql: str, *params: object) -> list[tuple[object, ...]]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(sql, params or None)
        return await cur.fetchall() if cur.description else []


async def test_the_coarse_filter_gives_the_exact_top_k_and_keeps_visibility(pg: PostgresBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    topics = [f"topic{i}" for i in range(12)]
    for i in range(240):
        text = f"{topics[i % 12]} {topics[(i * 5) % 12]} {topics[(i * 7) % 12]} detail{i}"
        await pg.remember(MemoryDraft(text, scope="user", user_id="alice"))
    secret = await pg.remember(MemoryDraft("topic3 topic7 topic3 topic7", scope="user", user_id="bob"))
    await pg.embed()
    query = "topic3 topic7"
    exact = [h.id for h in (await pg.search(query, ALICE, mode="dense", limit=10)).hits]
    monkeypatch.setattr(pg_vectors, "EXACT_MAX", 0)  # every search takes the coarse path
    monkeypatch.setattr(pg_vectors, "SHORTLIST", 60)  # a shortlist of a quarter of the visible rows
    monkeypatch.setattr(pg_vectors, "PER_POOL", 0)
    res = await pg.search(query, ALICE, mode="dense", limit=10, trace=True)
    assert [h.id for h in res.hits] == exact
    assert secret.id not in [h.id for h in res.hits]  # bob's record is the nearest, and hidden from alice
    assert any("Hamming shortlist of 60 among 240" in str(s.get("coarse")) for s in res.trace or [])
    assert (await pg.search(query, BOB, mode="dense", limit=1)).hits[0].id == secret.id
    hybrid = await pg.search(query, ALICE, mode="hybrid", limit=10)
    assert hybrid.hits and secret.id not in [h.id for h in hybrid.hits]


async def test_migration_10_adds_signatures_to_the_vectors_already_there(pg_url: str) -> None:  # noqa: F811
    schema = fresh_schema()
    await _sql(pg_url, f'CREATE SCHEMA "{schema}"')
    await _sql(
        pg_url,
        f'CREATE TABLE "{schema}".schema_version (version integer PRIMARY KEY, description text NOT NULL,'
        " applied timestamptz NOT NULL DEFAULT now())",
    )
    for version, description, statements in migrations(schema):
        if version <= 8:
            for stmt in statements:
                await _sql(pg_url, stmt)
            await _sql(pg_url, f'INSERT INTO "{schema}".schema_version VALUES (%s, %s)', version, description)
    await _sql(
        pg_url,
        f'INSERT INTO "{schema}".records (tenant, id, part, scope, kind, title, source, created,'
        " updated, content_hash, content, summary) VALUES ('', 'r1', 'project', 'project', 'fact', 'T', 'tool', now(), now(),"
        " 'h', 'old note', 'old note')",
    )
    await _sql(
        pg_url,
        f'INSERT INTO "{schema}".record_vectors (tenant, id, model, dims, embedding, content_hash)'
        " VALUES ('', 'r1', 'm', 4, ARRAY[0.5, -0.1, 0, 2]::real[], 'h')",
    )
    b = PostgresBackend(pg_url, schema=schema)
    try:
        await b.count(Caller())  # opening migrates
        assert b.pool.version >= 10
        assert await _sql(pg_url, f'SELECT sig::text FROM "{schema}".record_vectors') == [("1001",)]
        await _sql(pg_url, f'UPDATE "{schema}".record_vectors SET embedding = ARRAY[-1, 1, 1, -1]::real[]')
        assert await _sql(pg_url, f'SELECT sig::text FROM "{schema}".record_vectors') == [("0110",)]  # follows the vector
        assert pg_vectors.signature(np.array([0.5, -0.1, 0, 2], dtype=np.float32)) == "1001"  # the client's rule is the server's
    finally:
        await b.close()
