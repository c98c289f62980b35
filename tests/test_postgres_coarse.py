"""PostgreSQL's server-side coarse filter (sign-bit signatures, migration 10; 2,048-bit sketches, migration 11): the
same top-k as the exact read, visibility in the WHERE clause, few vectors sent to the client, and the migrations
filling the signatures and sketches of rows already there."""

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
from agent_memory.backends.postgres import sketch as pg_sketch  # noqa: E402
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
    assert any("sketch shortlist of 60 among 240" in str(s.get("coarse")) for s in res.trace or [])
    assert (await pg.search(query, BOB, mode="dense", limit=1)).hits[0].id == secret.id
    hybrid = await pg.search(query, ALICE, mode="hybrid", limit=10)
    assert hybrid.hits and secret.id not in [h.id for h in hybrid.hits]


async def test_the_shortlist_grows_with_the_visible_rows(pg: PostgresBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past SHORTLIST, one row in ROWS_PER_SHORT of the visible ones is sent (a fixed shortlist loses recall at 1M)."""
    for i in range(200):
        await pg.remember(MemoryDraft(f"topic{i % 9} topic{(i * 4) % 9} detail{i}", scope="user", user_id="alice"))
    await pg.embed()
    monkeypatch.setattr(pg_vectors, "EXACT_MAX", 0)
    monkeypatch.setattr(pg_vectors, "SHORTLIST", 10)
    monkeypatch.setattr(pg_vectors, "PER_POOL", 0)
    monkeypatch.setattr(pg_vectors, "ROWS_PER_SHORT", 4)  # 200 visible rows: a shortlist of 50
    res = await pg.search("topic3 topic4", ALICE, mode="dense", limit=5, trace=True)
    assert any("sketch shortlist of 50 among 200" in str(s.get("coarse")) for s in res.trace or [])
    assert pg_vectors.shortlist_size(200, 0) == 50 and pg_vectors.shortlist_size(20, 0) == 10
    monkeypatch.undo()
    assert pg_vectors.shortlist_size(100_000, 50) == 2_000 and pg_vectors.shortlist_size(1_000_000, 50) == 4_000


OLD_MIGRATION_10 = (  # what migration 10 did until migration 14 (a generated column nothing reads)
    'CREATE OR REPLACE FUNCTION "{s}".vector_signature(v real[]) RETURNS bit varying'
    " LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$"
    " SELECT coalesce(string_agg(CASE WHEN x > 0 THEN '1' ELSE '0' END, '' ORDER BY i), '')::bit varying"
    " FROM unnest(v) WITH ORDINALITY AS u(x, i) $$",
    'ALTER TABLE "{s}".record_vectors ADD COLUMN IF NOT EXISTS sig bit varying GENERATED ALWAYS AS ("{s}".vector_signature(embedding)) STORED',
)


@pytest.mark.parametrize("before", [8, 13])
async def test_the_unread_signature_column_is_dropped_or_never_added(pg_url: str, before: int) -> None:  # noqa: F811
    """A schema of version 13 made by the old migration 10 loses ``sig`` and its function (migration 14); one of
    version 8 is never given them (migration 10 no longer rewrites the table). Vectors stay and are written as before."""
    schema = fresh_schema()
    await _sql(pg_url, f'CREATE SCHEMA "{schema}"')
    await _sql(
        pg_url,
        f'CREATE TABLE "{schema}".schema_version (version integer PRIMARY KEY, description text NOT NULL,'
        " applied timestamptz NOT NULL DEFAULT now())",
    )
    for version, description, statements in migrations(schema):
        if version <= before:
            for stmt in [*statements, *(s.format(s=schema) for s in OLD_MIGRATION_10 if version == 10)]:
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
    if before >= 10:
        assert await _sql(pg_url, f'SELECT sig::text FROM "{schema}".record_vectors') == [("1001",)]  # the old schema had it
    b = PostgresBackend(pg_url, schema=schema)
    try:
        await b.count(Caller())  # opening migrates
        assert b.pool.version >= 14
        columns = await _sql(
            pg_url, "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = 'record_vectors'", schema
        )
        assert "sig" not in {c[0] for c in columns} and "embedding" in {c[0] for c in columns}
        assert (
            await _sql(
                pg_url,
                "SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = %s AND p.proname = 'vector_signature'",
                schema,
            )
            == []
        )
        assert await _sql(pg_url, f'SELECT id, embedding FROM "{schema}".record_vectors') == [("r1", [0.5, -0.1, 0.0, 2.0])]
    finally:
        await b.close()


def clustered(n: int, dim: int, seed: int) -> np.ndarray:
    """Mixtures of a few centres plus a little noise: clustered like real embeddings (the bench's construction)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((12, dim)).astype(np.float32)
    a, b = centres[rng.integers(0, 12, n)], centres[rng.integers(0, 12, n)]
    m = a + rng.uniform(0, 0.6, (n, 1)).astype(np.float32) * b + 0.3 * rng.standard_normal((n, dim)).astype(np.float32)
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


async def test_the_sketch_shortlist_recalls_the_exact_top_10_on_clustered_vectors(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """A 5% shortlist on 600 clustered 64-dimension vectors: the 64 sign bits of migration 10 held recall@10 .87 here,
    the 2,048-bit sketches hold ≥ .98 (the bench's bar, on its 100k set: docs/benchmarks.md)."""
    n, dim = 600, 64
    vecs = clustered(n + 20, dim, seed=5)
    table = {f"note{i}": vecs[i] for i in range(n)} | {f"ask{j}": vecs[n + j] for j in range(20)}
    emb = CallableEmbedder(lambda texts: np.stack([table.get(t, vecs[0]) for t in texts]), name="mix")
    b = PostgresBackend(pg_url, schema=fresh_schema(), embedder=emb)
    try:
        await b.remember_many([MemoryDraft(f"note{i}") for i in range(n)], source="import")
        await b.embed()
        exact = {j: [h.id for h in (await b.search(f"ask{j}", Caller(), mode="dense", limit=10)).hits] for j in range(20)}
        monkeypatch.setattr(pg_vectors, "EXACT_MAX", 0)
        monkeypatch.setattr(pg_vectors, "SHORTLIST", 30)
        monkeypatch.setattr(pg_vectors, "PER_POOL", 0)
        got = {j: [h.id for h in (await b.search(f"ask{j}", Caller(), mode="dense", limit=10)).hits] for j in range(20)}
    finally:
        await b.close()
    assert all(len(exact[j]) == 10 for j in exact)
    recall = sum(len(set(got[j]) & set(exact[j])) for j in exact) / 200
    assert recall >= 0.98, recall


async def test_above_a_small_size_the_client_gets_the_shortlist_and_a_sample_not_every_vector(
    pg: PostgresBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default threshold: a store past EXACT_MAX visible rows takes the coarse path (it was 20,000: every vector of
    a 10k store went to the client), and the vectors decoded are the shortlist and the sample only."""
    assert pg_vectors.EXACT_MAX <= 2_000
    await pg.remember_many([MemoryDraft(f"topic{i % 9} detail{i} item{i % 13}") for i in range(400)], source="import")
    await pg.embed()
    decoded: list[int] = []
    real = pg_vectors._decode

    def counting(rows: list[object], dim: int) -> np.ndarray:
        decoded.append(len(rows))
        return real(rows, dim)

    monkeypatch.setattr(pg_vectors, "_decode", counting)
    monkeypatch.setattr(pg_vectors, "EXACT_MAX", 100)  # 400 visible rows: as a 10k store against the default
    monkeypatch.setattr(pg_vectors, "SHORTLIST", 50)
    monkeypatch.setattr(pg_vectors, "PER_POOL", 0)
    monkeypatch.setattr(pg_vectors, "SAMPLE", 40)
    res = await pg.search("topic3 item5", Caller(), mode="dense", limit=10, trace=True)
    assert len(res.hits) == 10
    assert sum(decoded) <= 50 + 60, decoded  # the shortlist + a sample of ~1/10 of 400, never all 400
    assert any("sketch shortlist of 50 among 400" in str(s.get("coarse")) for s in res.trace or [])


def test_the_sketch_hyperplanes_are_fixed() -> None:
    """Stored sketches outlive the process: the hyperplanes must never change (a SHAKE-256 stream, not a NumPy seed)."""
    r = pg_sketch.projection(4)
    assert r.shape == (4, pg_sketch.BITS) and set(np.unique(r).tolist()) == {-1.0, 1.0}
    v = np.array([[0.5, -0.1, 0.0, 2.0]], dtype=np.float32)
    [sk] = pg_sketch.hex_sketches(v)
    assert len(sk) == 1 + pg_sketch.BITS // 4
    assert sk[:17] == "x" + np.packbits(v @ r > 0, axis=1)[0].tobytes().hex()[:16]
    assert pg_sketch.hex_sketches(v) == [sk]  # deterministic
    assert sk[:17] == GOLDEN_SKETCH_PREFIX


GOLDEN_SKETCH_PREFIX = "xe7bd3ec8531dc595"  # the first 64 bits of that sketch, as shipped in migration 11


async def test_migration_11_sketches_the_vectors_already_there_and_embed_sketches_copied_ones(pg_url: str) -> None:  # noqa: F811
    schema = fresh_schema()
    await _sql(pg_url, f'CREATE SCHEMA "{schema}"')
    await _sql(
        pg_url,
        f'CREATE TABLE "{schema}".schema_version (version integer PRIMARY KEY, description text NOT NULL,'
        " applied timestamptz NOT NULL DEFAULT now())",
    )
    for version, description, statements in migrations(schema):
        if version <= 10:
            for stmt in statements:
                await _sql(pg_url, stmt)
            await _sql(pg_url, f'INSERT INTO "{schema}".schema_version VALUES (%s, %s)', version, description)
    vecs = np.random.default_rng(3).standard_normal((3, 8)).astype(np.float32)
    for i in range(3):
        await _sql(
            pg_url,
            f'INSERT INTO "{schema}".records (tenant, id, part, scope, kind, title, source, created,'
            " updated, content_hash, content, summary) VALUES ('', %s, 'project', 'project', 'fact', 'T', 'tool', now(), now(),"
            " %s, 'old note', 'old note')",
            f"r{i}",
            f"h{i}",
        )
    await _sql(
        pg_url,
        f'INSERT INTO "{schema}".record_vectors (tenant, id, model, dims, embedding, content_hash) VALUES'
        " ('', 'r0', 'm', 8, %s::real[], 'h0'), ('', 'r1', 'm', 8, %s::real[], 'h1')",
        vecs[0].tolist(),
        vecs[1].tolist(),
    )
    emb = CallableEmbedder(lambda texts: np.ones((len(texts), 8), dtype=np.float32), name="m")
    b = PostgresBackend(pg_url, schema=schema, embedder=emb)
    try:
        await b.count(Caller())  # opening migrates: the two vectors there get their sketches
        assert b.pool.version >= 11
        rows = await _sql(pg_url, f'SELECT id, sketch::text, content_hash FROM "{schema}".record_sketches ORDER BY id')
        want = pg_sketch.hex_sketches(vecs[:2])
        assert [(r[0], r[2]) for r in rows] == [("r0", "h0"), ("r1", "h1")]
        assert [r[1] for r in rows] == [bin(int(w[1:], 16))[2:].zfill(pg_sketch.BITS) for w in want]
        # a vector written without a sketch (a bulk COPY by another tool): embed() sketches it, search finds it
        await _sql(
            pg_url,
            f'INSERT INTO "{schema}".record_vectors (tenant, id, model, dims, embedding, content_hash) VALUES'
            " ('', 'r2', 'm', 8, %s::real[], 'h2')",
            vecs[2].tolist(),
        )
        await b.embed()
        assert len(await _sql(pg_url, f'SELECT 1 FROM "{schema}".record_sketches')) == 3
        await _sql(pg_url, f"DELETE FROM \"{schema}\".records WHERE id = 'r1'")
        assert [r[0] for r in await _sql(pg_url, f'SELECT id FROM "{schema}".record_sketches ORDER BY id')] == ["r0", "r2"]  # cascade
    finally:
        await b.close()


async def test_a_purge_vacuums_the_sketches_too(pg: PostgresBackend, pg_url: str) -> None:  # noqa: F811
    """A purged record's sketch row goes by cascade; like its vector's, the dead row (its id: a slug of the title)
    is vacuumed by the purge, not left on disk until autovacuum."""
    rec = await pg.remember(MemoryDraft("carol's private topic1 note", scope="user", user_id="carol"))
    await pg.embed()
    schema = pg.schema
    assert await _sql(pg_url, f'SELECT 1 FROM "{schema}".record_sketches WHERE id = %s', rec.id)
    await pg.purge(user_id="carol")
    assert not await _sql(pg_url, f'SELECT 1 FROM "{schema}".record_sketches WHERE id = %s', rec.id)
    await _sql(pg_url, "SELECT pg_stat_force_next_flush()")
    rows = await _sql(
        pg_url, "SELECT last_vacuum IS NOT NULL FROM pg_stat_user_tables WHERE schemaname = %s AND relname = 'record_sketches'", schema
    )
    assert rows == [(True,)]


async def test_the_sketch_ranking_alone_gives_the_shortlist_when_the_caller_sees_most_rows(
    pg: PostgresBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sketches are ranked without joining every record (the join was most of a query's cost at 100k); the
    eligible rows among the ranking's first DEPTH × shortlist are the shortlist, the same top-k as the exact read."""
    await pg.remember_many([MemoryDraft(f"topic{i % 9} detail{i} item{i % 13}") for i in range(300)], source="import")
    await pg.remember(MemoryDraft("topic3 item5 topic3 item5", scope="user", user_id="bob"))
    await pg.embed()
    exact = [h.id for h in (await pg.search("topic3 item5", ALICE, mode="dense", limit=10)).hits]

    async def no_join(*args: object, **kwargs: object) -> list[object]:
        raise AssertionError("the ranking of every visible row joined with its sketch was not needed")

    monkeypatch.setattr(pg_vectors.PgVectors, "_coarse_joined", no_join)
    monkeypatch.setattr(pg_vectors, "EXACT_MAX", 100)
    monkeypatch.setattr(pg_vectors, "SHORTLIST", 60)
    monkeypatch.setattr(pg_vectors, "PER_POOL", 0)
    assert [h.id for h in (await pg.search("topic3 item5", ALICE, mode="dense", limit=10)).hits] == exact


async def test_a_caller_who_sees_few_of_the_nearest_rows_gets_the_exact_shortlist_all_the_same(
    pg: PostgresBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hidden rows of a tenant the caller reads (another session's, no user) fill the sketch ranking's first DEPTH ×
    shortlist places: the shortlist then comes from a ranking of the caller's eligible rows only, so what is hidden
    never changes the caller's candidates."""
    await pg.remember_many(
        [MemoryDraft(f"topic3 item5 other{i}", scope="session", session_id="other") for i in range(200)], source="import"
    )
    await pg.remember_many(
        [MemoryDraft(f"topic{i % 9} detail{i} item{i % 13}", scope="user", user_id="alice") for i in range(150)], source="import"
    )
    await pg.embed()
    exact = [h.id for h in (await pg.search("topic3 item5", ALICE, mode="dense", limit=10)).hits]
    joined: list[int] = []
    real = pg_vectors.PgVectors._coarse_joined

    async def counting(self: pg_vectors.PgVectors, *args: object) -> list[object]:
        joined.append(1)
        return await real(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(pg_vectors.PgVectors, "_coarse_joined", counting)
    monkeypatch.setattr(pg_vectors, "EXACT_MAX", 100)
    monkeypatch.setattr(pg_vectors, "SHORTLIST", 40)
    monkeypatch.setattr(pg_vectors, "PER_POOL", 0)
    res = await pg.search("topic3 item5", ALICE, mode="dense", limit=10)
    assert [h.id for h in res.hits] == exact and joined == [1]
    assert not any("other" in h.snippet for h in res.hits)


class _Answer:
    def __init__(self, row: object) -> None:
        self.row, self.sql = row, ""

    async def execute(self, sql: str, *args: object) -> "_Answer":
        self.sql = sql
        return self

    async def fetchone(self) -> object:
        return self.row


async def test_pgvector_is_detected_in_the_database_and_absent_here(pg: PostgresBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    """pgvector is used when the database has the extension installed (pg_extension), whatever the server offers;
    this machine's PostgreSQL has none, so dense search says it ranked with the sketches."""
    from agent_memory.backends.postgres.schema import pgvector_version

    answer = _Answer({"extversion": "0.8.0"})
    assert await pgvector_version(answer) == "0.8.0"
    assert "pg_extension" in answer.sql and "'vector'" in answer.sql
    assert await pgvector_version(_Answer(None)) is None
    async with pg.pool.connection() as conn:
        assert await pgvector_version(conn) is None
    await pg.remember_many([MemoryDraft(f"topic{i % 9} detail{i}") for i in range(30)], source="import")
    await pg.embed()
    monkeypatch.setattr(pg_vectors, "EXACT_MAX", 10)  # the coarse path: pgvector's or the sketches'
    res = await pg.search("topic3", Caller(), mode="dense", limit=5, trace=True)
    assert res.hits
    assert [str(s.get("coarse")) for s in res.trace or [] if s.get("stage") == "dense"] == [
        "2048-bit sketch shortlist of 30 among 30 visible"
    ]


def test_the_pgvector_statement_ranks_in_the_hnsw_index_and_tests_visibility_before_the_shortlist() -> None:
    """The SQL the pgvector path would run (it cannot run here): the HNSW index's cosine order (``<=>`` over the
    vectors cast to ``vector(dims)``, the index's expression and partial predicate), the caller's WHERE clause on
    those rows before the shortlist's LIMIT, and the index itself."""
    from agent_memory.backends.postgres.rows import filters_sql, visibility

    v = pg_vectors.PgVectors("s1", CallableEmbedder(word_vectors, name="words"), None)
    params: dict[str, object] = {"sid": None, "uid": "alice", "model": "words"}
    where = visibility(params) + filters_sql(params)
    sql = v.ann_sql(where, 384)
    rank = "ORDER BY (w.embedding::vector(384)) <=> %(qv)s::vector(384) LIMIT %(depth)s"
    assert rank in sql and 'FROM "s1".record_vectors w WHERE w.dims = 384 AND w.model = %(model)s' in sql
    shortlist = sql.index("s AS MATERIALIZED")
    assert sql.index(where, shortlist) < sql.index("LIMIT %(short)s", shortlist)  # visibility before the top-k
    assert sql.count(where) == 2  # the shortlist and the sample: nothing unfiltered reaches the client
    index = pg_vectors.hnsw_index_sql("s1", 384)
    assert index == (
        'CREATE INDEX IF NOT EXISTS record_vectors_hnsw_384 ON "s1".record_vectors'
        " USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE dims = 384"
    )
