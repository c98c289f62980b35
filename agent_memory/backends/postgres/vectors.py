"""Vectors on PostgreSQL: embeddings in ``record_vectors`` and dense / hybrid search over them.

Like ``vectors.db`` beside a files root, the table is derived data: a row per (tenant, id, model) with the
content hash it was embedded from; a record whose content changed (new hash) or that a new model has not
embedded yet is picked up by :meth:`PgVectors.embed`, which a write schedules and never waits for. Deleting a
record deletes its vectors (foreign key, ``ON DELETE CASCADE``).

Search without extensions (Debian's PostgreSQL has no pgvector): up to :data:`EXACT_MAX` visible records, the
visible rows' vectors are read with the visibility predicate and the exact filters in the WHERE clause (before
any top-k), and the cosines are one matrix product in the client — exact. Above that, a server-side coarse
filter keeps the client from pulling every vector: each vector has a 2,048-bit random-hyperplane sketch in
``record_sketches`` (:mod:`agent_memory.backends.postgres.sketch`, migration 11; written with the vector, in the
same transaction). The server ranks the sketches of the caller's tenants by the Hamming distance
``bit_count(sketch # query sketch)`` to :data:`DEPTH` × the shortlist, tests those rows' visibility (the caller's
WHERE clause) by key and keeps the first :func:`shortlist_size` (:data:`SHORTLIST`, at least :data:`PER_POOL` × the
pool and one in :data:`ROWS_PER_SHORT` visible rows) — the same rows
as ranking only the visible ones, which it falls back to when too few are visible that deep — takes a
``TABLESAMPLE`` of ~:data:`SAMPLE` visible rows, and only then reads those rows' vectors by key; the client
computes their cosines exactly. The shortlist's recall@10 against the exact read is 1.0 on
``benchmarks/bench_million.py``'s 100k set (migration 10's 384 sign bits, ``sig``, dropped by migration 14, gave
.8775) and .993 at 1M (a 4,000-row shortlist; 2,000 rows gave .977). The mean and standard deviation that
standardise the cosines for fusion come from the sample, visible
rows only, so nothing hidden moves a score; lexical candidates outside the shortlist get their exact cosine too.
With pgvector installed in the database (:func:`agent_memory.backends.postgres.schema.pgvector_version`) an HNSW
index ranks instead of the sketches (:meth:`PgVectors.ann_sql`, :func:`hnsw_index_sql`; docs/meaning.md).

Hybrid fuses the lexical engine's candidates with the dense ones (:class:`agent_memory.search.fusion.Fuse`, z-scores).
The lexical weight follows term coverage (the IDF-weighted share of the query's terms the best lexical hits
hold, IDF from the caller's visible records): ``ts_rank`` is not BM25, so the files backend's BM25 strength
signal does not apply here. Rule: lexical weight 0.7 when coverage ≥ 0.25, else 0.2 (measured on LoCoMo with
the files engine: docs/meaning.md).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from agent_memory.backends.postgres.rows import COLUMNS, filters_sql, visibility
from agent_memory.backends.postgres.schema import pgvector_version
from agent_memory.backends.postgres.search import readable
from agent_memory.backends.postgres.sketch import BITS, hex_sketches
from agent_memory.backends.postgres.sketch import backfill as backfill_sketches
from agent_memory.backends.postgres.sketch import write as write_sketches
from agent_memory.backends.postgres.vector_meta import note as note_embedder
from agent_memory.embeddings import Embedder, EmbeddingError
from agent_memory.errors import MissingExtraError
from agent_memory.model.reports import BackfillReport
from agent_memory.search.floor import dense_floor_for, hybrid_scores
from agent_memory.search.focus import focus_query, query_words
from agent_memory.search.fusion import Fuse, Pipeline, QueryContext, lexical_confidence, to_embed
from agent_memory.search.stages import DenseFloor, ImportanceWeight, NoiseFloor
from agent_memory.search.text import term_key, term_matcher
from agent_memory.search.types import SearchHit, SearchResult

log = logging.getLogger("agent_memory")

__all__ = ["PgVectors", "pg_pipeline"]

_COLS = ", ".join(f"r.{c}" for c in COLUMNS)
EXACT_MAX = 2_000  # visible records up to which every visible vector is read (exact)
SHORTLIST = 2_000  # rows the sketch filter sends above that (at least PER_POOL × the dense pool, and a share of the rows)
PER_POOL = 20
ROWS_PER_SHORT = 250  # past 500k visible rows the shortlist grows with them (recall@10 at 1M: 2,000 rows .977, 4,000 .993)
SAMPLE = 500  # about how many visible rows give the cosines' mean and std above that
WORK_MEM = "64MB"  # the coarse query's rank of every visible row sorts in memory (this transaction only)
ANN_SHORTLIST = 200  # rows pgvector's HNSW ranking sends (at least 2 × the dense pool): its order is the cosine's
ANN_EF_SEARCH = 1000  # hnsw.ef_search (its maximum) for that ranking; pgvector ≥ 0.8 scans on past it when filtered
BLOCK_SAMPLE_FROM = 20_000  # visible rows from which the sample takes whole pages (SYSTEM), not single rows
DEPTH = 2  # the sketch ranking's depth, × the shortlist, within which the eligible rows are looked for first
PARALLEL = "0"  # parallel workers for the coarse statement: on two shared cores they cost more than they save


def shortlist_size(visible: int, pool: int) -> int:
    """How many rows the sketch filter sends for ``visible`` rows and a dense pool of ``pool``: at least
    :data:`SHORTLIST` and :data:`PER_POOL` × the pool, and one in :data:`ROWS_PER_SHORT` of the visible rows (a fixed
    shortlist holds fewer of the true nearest as the rows it ranks grow: ``benchmarks/bench_million.py``)."""
    return max(SHORTLIST, PER_POOL * pool, visible // ROWS_PER_SHORT)


def signature(q: npt.NDArray[np.float32]) -> str:
    """The query's sign bits as PostgreSQL ``bit varying`` text (the ``vector_signature`` SQL function's rule)."""
    return "".join("1" if x > 0 else "0" for x in q.tolist())


def _decode(rows: list[Any], dim: int) -> npt.NDArray[np.float32]:
    """Vectors from ``array_send`` bytes (one bytea per row: a 20-byte header, then a 4-byte length and a
    big-endian float4 per element), decoded by numpy in one pass instead of one Python float per element."""
    if not rows:
        return np.zeros((0, dim), dtype=np.float32)
    raw = np.frombuffer(b"".join(bytes(r["raw"]) for r in rows), dtype=np.uint8).reshape(len(rows), 20 + 8 * dim)
    return raw[:, 20:].copy().view(">f4").reshape(len(rows), -1, 2)[:, :, 1].astype(np.float32)


def hnsw_index_sql(schema: str, dims: int) -> str:
    """pgvector's HNSW index over the vectors of ``dims`` components (an expression index: the ``real[]`` column cast
    to ``vector(dims)``, cosine distance; partial on ``dims``, so vectors of other models' sizes are not cast)."""
    n = int(dims)
    return (
        f'CREATE INDEX IF NOT EXISTS record_vectors_hnsw_{n} ON "{schema}".record_vectors'
        f" USING hnsw ((embedding::vector({n})) vector_cosine_ops) WHERE dims = {n}"
    )


def _method(visible: int) -> str:
    """The sample's method for ``visible`` rows (:meth:`PgVectors._sample_and_vectors`)."""
    return "SYSTEM" if visible >= BLOCK_SAMPLE_FROM else "BERNOULLI"


def _shortlist(rows: list[Any], q: npt.NDArray[np.float32]) -> tuple[list[str], npt.NDArray[np.float32], float, float]:
    """``(shortlist ids, their cosines, the sample's mean, its std)`` from the coarse statement's rows."""
    rows = [r for r in rows if r["raw"] is not None]  # None: the vector changed meanwhile
    sims = _decode(rows, int(q.shape[0])) @ q
    picked = np.array([bool(r["short"]) for r in rows], dtype=bool)
    sample = sims[np.array([bool(r["sampled"]) for r in rows], dtype=bool)] if rows else sims
    if not len(sample):
        sample = sims[picked]
    ids = [r["id"] for r, keep in zip(rows, picked.tolist(), strict=True) if keep]
    return ids, sims[picked], float(sample.mean()) if len(sample) else 0.0, float(sample.std()) if len(sample) else 0.0


def pg_pipeline() -> Pipeline:
    """The PostgreSQL hybrid default: z-score fusion gated on term coverage, importance, then meaning's best three
    within the first ten (as on files)."""
    return Pipeline(Fuse(weight=0.7, weak_weight=0.2, ramp_from=0.25, confident_at=0.25), [ImportanceWeight(), DenseFloor()])


class PgVectors:
    """One backend's embedder and its ``record_vectors`` rows (``searcher``: the backend's lexical search)."""

    def __init__(self, schema: str, embedder: Embedder, searcher: Any, batch_size: int = 64) -> None:
        self.embedder = embedder
        self.searcher = searcher
        self.t = f'"{schema}".records'
        self.v = f'"{schema}".record_vectors'
        self.k = f'"{schema}".record_sketches'
        self.schema = schema
        self.batch_size = batch_size
        self._task: asyncio.Task[BackfillReport] | None = None
        self._pgvector_version: str | None = None  # "" when the database has no pgvector (asked once)
        self._again = False

    # -- embedding: deferred, in batches ------------------------------------------------------------
    async def embed(self, pool: Any, progress: Callable[[int, int], None] | None = None, *, sketches: bool = True) -> BackfillReport:
        """Embed every record without a current vector for this model; an embedder error stops it (reported).
        ``sketches``: first sketch the vectors stored without a current one (by another writer: a bulk ``COPY``)."""
        model = self.embedder.name
        rep = BackfillReport(model=model)
        started = time.perf_counter()
        if sketches:
            async with pool.connection() as conn, conn.transaction():
                await backfill_sketches(conn, self.schema)
        stale = (
            f"FROM {self.t} r LEFT JOIN {self.v} v ON v.tenant = r.tenant AND v.id = r.id AND v.model = %(m)s"
            " WHERE v.id IS NULL OR v.content_hash <> r.content_hash"
        )
        async with pool.connection() as conn:
            total = int((await (await conn.execute("SELECT count(*) AS n FROM " + self.t)).fetchone())["n"])
            todo = int((await (await conn.execute(f"SELECT count(*) AS n {stale}", {"m": model})).fetchone())["n"])
        rep.total, rep.cached = total, total - todo
        if total:  # the embedder is recorded with its vectors: a search without one uses it (vector_meta)
            from agent_memory.embeddings import embedder_spec

            async with pool.connection() as conn, conn.transaction():
                await note_embedder(conn, self.schema, model, embedder_spec(self.embedder))
        made = 0
        while True:
            async with pool.connection() as conn:
                cur = await conn.execute(
                    f"SELECT r.tenant, r.id, r.content_hash, r.content {stale} ORDER BY r.id LIMIT %(n)s",
                    {"m": model, "n": self.batch_size},
                )
                rows = await cur.fetchall()
            if not rows:
                break
            try:
                vecs = await self.embedder.aembed([r["content"] or "" for r in rows])
            except MissingExtraError:  # not an embedding failure: what to install (the CLI's one line)
                raise
            except EmbeddingError as exc:
                rep.error = str(exc)
                break
            dims = int(vecs.shape[1])
            async with pool.connection() as conn, conn.transaction():
                await self._store(conn, rows, vecs)
            rep.embedded += len(rows)
            made = dims
            if progress is not None:
                progress(rep.embedded, todo)
            if len(rows) < self.batch_size:
                break
        if made:  # pgvector installed: its HNSW index over vectors of this size (derived; built once, then kept up)
            async with pool.connection() as conn:
                if await pgvector_version(conn):
                    await conn.execute(hnsw_index_sql(self.schema, made))
        rep.seconds = round(time.perf_counter() - started, 3)
        return rep

    async def _store(self, conn: Any, rows: list[Any], vecs: Any) -> None:
        """Write the vectors of ``rows`` (tenant, id, content_hash) and their sketches, in the caller's transaction
        (the coarse filter never sees a vector with another's sketch); a record deleted meanwhile gets none."""
        model, dims = self.embedder.name, int(vecs.shape[1])
        cur = conn.cursor()
        await cur.executemany(
            f"INSERT INTO {self.v} (tenant, id, model, dims, embedding, content_hash)"
            f" SELECT %s, %s, %s, %s, %s, %s WHERE EXISTS (SELECT 1 FROM {self.t} WHERE tenant = %s AND id = %s)"
            " ON CONFLICT (tenant, id, model) DO UPDATE SET dims = excluded.dims, embedding = excluded.embedding,"
            " content_hash = excluded.content_hash",
            [
                (r["tenant"], r["id"], model, dims, [float(x) for x in vec], r["content_hash"], r["tenant"], r["id"])
                for r, vec in zip(rows, vecs, strict=True)
            ],
        )
        await write_sketches(
            conn, self.schema, [(r["tenant"], r["id"], model, r["content_hash"]) for r in rows], np.asarray(vecs, dtype=np.float32)
        )

    def kick(self, pool: Any) -> None:
        """Catch up in the background (after a write); kicks during a pass coalesce into one more pass."""
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.ensure_future(self._loop(pool))

    async def _loop(self, pool: Any) -> BackfillReport:
        while True:
            self._again = False
            try:
                rep = await self.embed(pool, sketches=False)
            except Exception as exc:  # fail open: a write already succeeded; the next kick retries
                log.warning("background embedding failed: %s", exc)
                return BackfillReport(model=self.embedder.name, error=str(exc))
            if not self._again:
                return rep

    async def drain(self) -> None:
        """Wait for the background catch-up, if any."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def stop(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    # -- search ---------------------------------------------------------------------------------------
    def _join(self) -> str:
        return (
            f"FROM {self.t} r JOIN {self.v} v ON v.tenant = r.tenant AND v.id = r.id AND v.model = %(model)s"
            " AND v.content_hash = r.content_hash AND v.dims = %(dims)s"
        )

    async def _dense(
        self, conn: Any, q: npt.NDArray[np.float32], params: dict[str, Any], where: str
    ) -> tuple[list[str], npt.NDArray[np.float32]]:
        """Ids and cosines of every visible record with a current vector (the filters in the WHERE clause)."""
        cur = await conn.execute(
            f"SELECT r.id, array_send(v.embedding) AS raw {self._join()} WHERE {where}", {**params, "dims": int(q.shape[0])}, binary=True
        )
        rows = await cur.fetchall()
        return [r["id"] for r in rows], _decode(rows, int(q.shape[0])) @ q

    async def _coarse(
        self, conn: Any, q: npt.NDArray[np.float32], params: dict[str, Any], where: str, visible: int, pool: int
    ) -> tuple[list[str], npt.NDArray[np.float32], float, float]:
        """The sketch shortlist's ids and exact cosines, and the cosines' mean and std over a sample of the visible rows.

        The shortlist is the ``short`` eligible rows (visible by the caller's WHERE clause, with a current sketch)
        nearest by Hamming distance, ties by id and tenant. The server finds them by ranking the sketches alone (no
        join with the records: the join was most of the cost) to a depth of :data:`DEPTH` × ``short``, then testing
        those rows' visibility by key: the eligible rows among the first ``depth`` of the whole ranking are exactly
        the first eligible rows of it, so when at least ``short`` of them are eligible (or the ranking had fewer rows
        than ``depth``) they are the shortlist, whatever the hidden rows are; otherwise (a caller who sees few of
        the rows) one statement ranks the eligible rows only (:meth:`_coarse_joined`). The sample is a fixed
        block sample of the records (``TABLESAMPLE SYSTEM … REPEATABLE``) of ~``SAMPLE`` visible rows, not a scan
        of every row. Only then are those rows' vectors read by key: the client gets ``short`` + ~``SAMPLE``
        vectors, never every one. A vector without a current sketch (written by something other than
        :meth:`embed`; ``agent-memory embed`` fills them) is not a candidate."""
        dim = int(q.shape[0])
        short = shortlist_size(visible, pool)
        depth = DEPTH * short
        bind = {
            **params,
            "dims": dim,
            "qs": hex_sketches(q.reshape(1, -1))[0],
            "short": short,
            "depth": depth,
            "pct": min(100.0, 100.0 * SAMPLE / max(1, visible)),
            "visible": visible,
        }
        await conn.execute(
            "SELECT set_config('work_mem', %s, true), set_config('max_parallel_workers_per_gather', %s, true)", (WORK_MEM, PARALLEL)
        )
        cur = await conn.execute(self.coarse_sql(where, visible), bind, binary=True)
        rows = await cur.fetchall()
        if rows and int(rows[0]["kept"]) < short and int(rows[0]["depth"]) >= depth:  # too few eligible this deep
            rows = await self._coarse_joined(conn, where, bind)
        return _shortlist(rows, q)

    def coarse_sql(self, where: str, visible: int = BLOCK_SAMPLE_FROM) -> str:
        """The coarse statement (module docstring; :meth:`_coarse`): ``top`` the sketch ranking to ``depth``, ``s`` its
        eligible rows (visibility by key), ``p`` the sample, then each kept row's vector by key; ``depth`` and
        ``kept`` say whether ``s`` is the shortlist."""
        key = "k.tenant = r.tenant AND k.id = r.id AND k.content_hash = r.content_hash"
        return (
            "WITH top AS MATERIALIZED (SELECT k.tenant, k.id, k.content_hash, bit_count(k.sketch # %(qs)s::bit varying) AS d"
            f" FROM {self.k} k WHERE k.model = %(model)s AND k.dims = %(dims)s AND k.tenant = ANY(%(tenants)s)"
            " ORDER BY d, k.id, k.tenant LIMIT %(depth)s),"
            f" s AS MATERIALIZED (SELECT k.tenant, k.id, k.content_hash FROM top k JOIN {self.t} r ON {key} WHERE {where}"
            " ORDER BY k.d, k.id, k.tenant LIMIT %(short)s),"
            + self._sample_and_vectors(where, _method(visible))
            + ", (SELECT count(*) FROM top) AS depth, (SELECT count(*) FROM s) AS kept FROM u ORDER BY u.id"
        )

    def _sample_and_vectors(self, where: str, method: str = "SYSTEM") -> str:
        """``p`` the sample of visible rows (``SYSTEM``: whole pages, reading ~``SAMPLE`` rows' pages of a big table;
        ``BERNOULLI``: single rows, reading every page: a small table's sample of whole pages would be lumpy), ``u`` the
        shortlist ``s`` and ``p`` together, and the select of their vectors."""
        return (
            f" p AS (SELECT r.tenant, r.id, r.content_hash FROM {self.t} r TABLESAMPLE {method} (%(pct)s) REPEATABLE (7) WHERE {where}),"
            " u AS (SELECT coalesce(s.tenant, p.tenant) AS tenant, coalesce(s.id, p.id) AS id,"
            " coalesce(s.content_hash, p.content_hash) AS content_hash, s.id IS NOT NULL AS short, p.id IS NOT NULL AS sampled"
            " FROM s FULL JOIN p ON p.tenant = s.tenant AND p.id = s.id)"
            " SELECT u.id, u.short, u.sampled,"
            f" (SELECT array_send(w.embedding) FROM {self.v} w WHERE w.tenant = u.tenant AND w.id = u.id AND w.model = %(model)s"
            " AND w.content_hash = u.content_hash AND w.dims = %(dims)s) AS raw"
        )

    async def _pgvector(self, conn: Any) -> bool:
        """Whether the database has pgvector installed (asked once per backend: installing it is an operator's step)."""
        if self._pgvector_version is None:
            self._pgvector_version = await pgvector_version(conn) or ""
        return bool(self._pgvector_version)

    def _coarse_said(self, shortlisted: int, visible: int) -> str:
        if self._pgvector_version:
            return f"pgvector {self._pgvector_version} HNSW shortlist of {shortlisted} among {visible} visible"
        return f"{BITS}-bit sketch shortlist of {shortlisted} among {visible} visible"

    async def _ann(
        self, conn: Any, q: npt.NDArray[np.float32], params: dict[str, Any], where: str, visible: int, pool: int
    ) -> tuple[list[str], npt.NDArray[np.float32], float, float]:
        """:meth:`_coarse` with pgvector: the ranking is the HNSW index's cosine order (:func:`hnsw_index_sql`,
        built by :meth:`embed`) instead of the sketches' Hamming order; the same depth rule, visibility by key,
        sample and exact cosines in the client. Fewer than ``short`` eligible rows that deep (hidden rows near the
        query, or a pgvector older than 0.8, whose filtered HNSW scan stops at ``ef_search`` rows): the sketch
        path, which is exact about visibility."""
        dim = int(q.shape[0])
        short = max(ANN_SHORTLIST, 2 * pool)
        depth = DEPTH * short
        bind = {
            **params,
            "dims": dim,
            "qv": "[" + ",".join(repr(float(x)) for x in q.tolist()) + "]",
            "short": short,
            "depth": depth,
            "pct": min(100.0, 100.0 * SAMPLE / max(1, visible)),
            "visible": visible,
        }
        await conn.execute(
            "SELECT set_config('work_mem', %s, true), set_config('hnsw.ef_search', %s, true),"
            " set_config('hnsw.iterative_scan', 'strict_order', true)",
            (WORK_MEM, str(min(ANN_EF_SEARCH, depth))),
        )
        cur = await conn.execute(self.ann_sql(where, dim, visible), bind, binary=True)
        rows = await cur.fetchall()
        if not rows or int(rows[0]["kept"]) < short:
            return await self._coarse(conn, q, params, where, visible, pool)
        return _shortlist(rows, q)

    def ann_sql(self, where: str, dims: int, visible: int = BLOCK_SAMPLE_FROM) -> str:
        """The pgvector statement (:meth:`_ann`): ``top`` the HNSW index's nearest rows by cosine distance (``<=>``)
        to ``depth``, ``s`` the first ``short`` of them the caller may see (its WHERE clause, by key), then the
        sample and the vectors as :meth:`coarse_sql`. ``dims`` is written into the text (an integer): the index is
        partial on it, and a parameter would not match its predicate."""
        n = int(dims)
        key = "k.tenant = r.tenant AND k.id = r.id AND k.content_hash = r.content_hash"
        return (
            "WITH top AS MATERIALIZED (SELECT w.tenant, w.id, w.content_hash,"
            f" (w.embedding::vector({n})) <=> %(qv)s::vector({n}) AS d"
            f" FROM {self.v} w WHERE w.dims = {n} AND w.model = %(model)s AND w.tenant = ANY(%(tenants)s)"
            f" ORDER BY (w.embedding::vector({n})) <=> %(qv)s::vector({n}) LIMIT %(depth)s),"
            f" s AS MATERIALIZED (SELECT k.tenant, k.id, k.content_hash FROM top k JOIN {self.t} r ON {key} WHERE {where}"
            " ORDER BY k.d, k.id, k.tenant LIMIT %(short)s),"
            + self._sample_and_vectors(where, _method(visible))
            + ", (SELECT count(*) FROM top) AS depth, (SELECT count(*) FROM s) AS kept FROM u ORDER BY u.id"
        )

    async def _coarse_joined(self, conn: Any, where: str, bind: dict[str, Any]) -> list[Any]:
        """The shortlist from a ranking of the eligible rows only (every visible row joined with its sketch)."""
        # the planner's row estimate for the visibility predicate is far too low (it multiplies the selectivities
        # of correlated columns), so it would look every visible row's sketch up by key: a hash join instead (this
        # transaction only; the vectors of the few rows kept are read by key in a subquery, which it does not touch)
        await conn.execute("SELECT set_config('enable_nestloop', 'off', true)")
        cur = await conn.execute(
            "WITH s AS MATERIALIZED (SELECT r.tenant, r.id, r.content_hash"
            f" FROM {self.t} r JOIN {self.k} k ON k.tenant = r.tenant AND k.id = r.id AND k.model = %(model)s"
            f" AND k.content_hash = r.content_hash AND k.dims = %(dims)s WHERE {where}"
            " ORDER BY bit_count(k.sketch # %(qs)s::bit varying), r.id, r.tenant LIMIT %(short)s),"
            + self._sample_and_vectors(where, _method(int(bind["visible"])))
            + ", 0 AS depth, 0 AS kept FROM u ORDER BY u.id",
            bind,
            binary=True,
        )
        rows = await cur.fetchall()
        await conn.execute("SELECT set_config('enable_nestloop', 'on', true)")
        return list(rows)

    async def _cosines(self, conn: Any, q: npt.NDArray[np.float32], ids: list[str], params: dict[str, Any], where: str) -> dict[str, float]:
        """Exact cosines of the visible records among ``ids``."""
        if not ids:
            return {}
        cur = await conn.execute(
            f"SELECT r.id, array_send(v.embedding) AS raw {self._join()} WHERE r.id = ANY(%(want)s) AND {where}",
            {**params, "dims": int(q.shape[0]), "want": ids},
            binary=True,
        )
        rows = await cur.fetchall()
        return dict(zip([r["id"] for r in rows], (_decode(rows, int(q.shape[0])) @ q).tolist(), strict=True))

    async def _embed_missing(
        self, conn: Any, q: npt.NDArray[np.float32], ids: list[str], cos: dict[str, float], params: dict[str, Any], where: str
    ) -> dict[str, float]:
        """Cosines of the lexical candidates ``ids`` (best first) with no current vector, embedded now
        (:func:`~agent_memory.search.fusion.to_embed`: at most 32) and stored (derived data, as :meth:`embed` would,
        in a savepoint: a failure to store keeps this search's cosines). An embedder failure leaves them without one."""
        want = to_embed(ids, lambda rid: rid in cos)
        if not want:
            return {}
        cur = await conn.execute(
            f"SELECT r.tenant, r.id, r.content_hash, r.content FROM {self.t} r WHERE r.id = ANY(%(want)s) AND {where}",
            {**params, "want": want},
        )
        order = {rid: i for i, rid in enumerate(want)}
        rows = sorted(await cur.fetchall(), key=lambda r: order.get(r["id"], len(order)))
        if not rows:
            return {}
        try:
            vecs = np.asarray(await self.embedder.aembed([r["content"] or "" for r in rows]), dtype=np.float32)
        except (EmbeddingError, MissingExtraError) as exc:
            log.warning("could not embed %d search candidates without a vector: %s", len(rows), exc)
            return {}
        read_only = await (await conn.execute("SELECT current_setting('transaction_read_only') = 'on' AS ro")).fetchone()
        if not (read_only and read_only["ro"]):  # a replica (or a read-only role) answers, stores nothing and warns not
            try:
                async with conn.transaction():
                    await self._store(conn, rows, vecs)
            except Exception as exc:  # fail open: derived data; the savepoint keeps the search's transaction usable
                log.warning("could not store the vectors of %d search candidates: %s", len(rows), exc)
        sims = (vecs @ q).tolist()
        return {r["id"]: float(s) for r, s in zip(rows, sims, strict=True) if math.isfinite(s)}

    async def search(
        self,
        conn: Any,
        query: str,
        mode: str,
        *,
        sid: str | None,
        uid: str | None,
        limit: int,
        tags: tuple[str, ...],
        trace: bool,
        pool: int | None = None,
        strict: bool = False,
        **filters: Any,
    ) -> SearchResult:
        """``dense`` or ``hybrid`` search for one caller; an embedder failure answers lexically (said in the trace).
        The dense side's statistics are the caller's visible rows' already; ``strict`` makes the lexical side's
        candidate selection so too."""
        pool = pool or max(50, 4 * limit)
        lexical = await self.searcher.run(
            conn,
            query,
            sid=sid,
            uid=uid,
            limit=pool if mode == "hybrid" else limit,
            tags=tags,
            trace=trace,
            raw=True,
            strict=strict,
            **filters,
        )
        steps = lexical.trace
        # the lexical search turned sequential scans off for its GIN match; the statements below read every
        # visible row (counts, the coarse rank) or a few by key, which the planner must be free to plan
        await conn.execute("SELECT set_config('enable_seqscan', 'on', true)")
        params: dict[str, Any] = {"sid": sid, "uid": uid, "model": self.embedder.name}
        where = visibility(params) + filters_sql(params, **filters)
        engine = self.searcher.engine
        words = query_words(query, engine.terms, engine.stop_words)
        stats = await self._counts(conn, [*engine.terms(query), *(t for ts in words.values() for t in ts)], params, where)
        text, common = focus_query(query, words, stats[1], stats[0])
        coarse = stats[0] > EXACT_MAX
        try:
            q = np.asarray((await self.embedder.aembed([text]))[0], dtype=np.float32).reshape(-1)
            if coarse and await self._pgvector(conn):
                ids, sims, mean, std = await self._ann(conn, q, params, where, stats[0], pool)
            elif coarse:
                ids, sims, mean, std = await self._coarse(conn, q, params, where, stats[0], pool)
            else:
                ids, sims = await self._dense(conn, q, params, where)
                mean, std = (float(sims.mean()), float(sims.std())) if len(ids) else (0.0, 0.0)
        except EmbeddingError as exc:  # fail open
            if steps is not None:
                steps.append({"stage": "dense", "error": str(exc), "fallback": "lexical"})
            return SearchResult(readable(lexical.hits[:limit]), steps)
        k = min(pool, len(ids))
        top = np.argpartition(-sims, k - 1)[:k] if 0 < k < len(ids) else np.arange(len(ids))
        top = top[np.argsort(-sims[top], kind="stable")]
        dense = [(ids[int(j)], float(sims[int(j)])) for j in top]
        cos = dict(zip(ids, sims.tolist(), strict=True))
        if coarse and mode != "dense":  # lexical candidates outside the shortlist: their exact cosines
            cos.update(await self._cosines(conn, q, [h.id for h in lexical.hits if h.id not in cos], params, where))
        fresh = {}
        if mode == "hybrid" and len(ids):  # written since the last backfill: embedded now (bounded), a keyword match gets a cosine
            fresh = await self._embed_missing(conn, q, [h.id for h in lexical.hits], cos, params, where)
            cos.update(fresh)
        if steps is not None:
            steps.append(
                {
                    "stage": "dense",
                    "model": self.embedder.name,
                    "visibility": f"in the WHERE clause ({len(ids)})",
                    **({"coarse": self._coarse_said(len(ids), stats[0])} if coarse else {}),
                    **({"focus": {"embedded": text, "left_out": common}} if common else {}),
                    "found": len(dense),
                    **({"embedded_now": len(fresh)} if fresh else {}),
                    "top": [{"id": r, "cosine": round(s, 4)} for r, s in dense[:10]],
                }
            )
        lex_pairs = [] if mode == "dense" else [(h.id, h.score) for h in lexical.hits]
        by_id = {h.id: h for h in lexical.hits}
        confidence = await self._coverage(conn, query, lexical.hits[:5], stats, params["tenants"]) if lex_pairs else None
        base = pg_pipeline()
        # dense-only hits below the embedder's measured floor are noise (a higher one when no visible record matched)
        floor = dense_floor_for(self.embedder, lexical_matched=bool(lexical.hits))
        chosen = replace(
            base,
            fuse=replace(base.fuse, dense_scores=lambda wanted: {i: cos[i] for i in wanted if i in cos}),
            stages=[*base.stages, *([NoiseFloor(floor)] if floor is not None else [])],
        )
        ctx = QueryContext(
            query=query,
            confidence=confidence,
            dense_mean=mean if len(ids) else None,
            dense_std=std if len(ids) else None,
        )
        ranked = chosen.run(
            lex_pairs,
            dense,
            ctx,
            info=await self._info(conn, [c for c, _ in lex_pairs + dense], params["tenants"]),
            limit=limit,
            trace=steps,
        )
        missing = [c.id for c in ranked if c.id not in by_id]
        rows: dict[str, Any] = {}
        if missing:  # rows for what only the dense side found (visibility re-checked)
            params["ids"] = missing
            cur = await conn.execute(f"SELECT {_COLS} FROM {self.t} r WHERE r.id = ANY(%(ids)s) AND {where}", params)
            rows = {r["id"]: r for r in await cur.fetchall()}
        found = term_matcher({term_key(t) for t in self.searcher.engine.terms(query)})
        hits: list[SearchHit] = []
        for c, score in zip(ranked, hybrid_scores(ranked, confidence, self.embedder), strict=True):
            if c.id in by_id:
                hits.append(replace(by_id[c.id], score=score))
            elif c.id in rows:
                hits.append(self.searcher._hit(rows[c.id], score, found))
        return SearchResult(hits, steps)

    async def _info(self, conn: Any, ids: list[str], tenants: list[str]) -> dict[str, dict[str, Any]]:
        """Dates and importance of candidates (all visible, so of the caller's tenants: the key's index serves it)."""
        if not ids:
            return {}
        cur = await conn.execute(
            f"SELECT id, updated, importance FROM {self.t} WHERE tenant = ANY(%s) AND id = ANY(%s)", (tenants, list(dict.fromkeys(ids)))
        )
        return {
            r["id"]: {"updated": r["updated"].isoformat() if r["updated"] else "", "importance": r["importance"]}
            for r in await cur.fetchall()
        }

    async def _counts(self, conn: Any, terms: list[str], params: dict[str, Any], where: str) -> tuple[int, dict[str, int]]:
        """``(N, {term: df})`` over the caller's visible records: one scan, a count per term."""
        terms = [t for t in dict.fromkeys(terms) if "'" not in t and "\\" not in t]
        counts = "".join(f", count(*) FILTER (WHERE r.tsv @@ to_tsquery(%(cfg)s::regconfig, %(t{i})s)) AS n{i}" for i in range(len(terms)))
        bind = {**params, "cfg": self.searcher.cfg, **{f"t{i}": f"'{t}'" for i, t in enumerate(terms)}}
        row = await (await conn.execute(f"SELECT count(*) AS total{counts} FROM {self.t} r WHERE {where}", bind)).fetchone()
        return int(row["total"]), {t: int(row[f"n{i}"]) for i, t in enumerate(terms)}

    async def _coverage(self, conn: Any, query: str, top: list[SearchHit], stats: tuple[int, dict[str, int]], tenants: list[str]) -> float:
        """IDF-weighted term coverage of the best lexical hits, IDF from the caller's visible records only."""
        terms = [t for t in self.searcher.engine.terms(query) if t in stats[1]]
        if not terms or not top:
            return 0.0
        total, df = stats
        idf: dict[str, float] = {}
        for t in terms:
            key = term_key(t)
            idf[key] = max(idf.get(key, 0.0), math.log((total + 1) / (df[t] + 0.5)))
        ids = [h.id for h in top]
        cur = await conn.execute(f"SELECT content FROM {self.t} WHERE tenant = ANY(%s) AND id = ANY(%s)", (tenants, ids))
        return lexical_confidence(terms, [r["content"] or "" for r in await cur.fetchall()], idf)
