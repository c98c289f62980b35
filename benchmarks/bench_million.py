"""Vectors at 10k / 100k / 1M records: the files backend's HNSW index (and the PostgreSQL coarse filter) against exact.

Per size, on a files root of that many generated records (``_genroot.py``, indexed by ``reindex``; kept under
``--tmp`` and reused across runs) with one vector per record:

- ``build``: wall and CPU seconds of :meth:`VectorCache.build_index` (the HNSW index, stored with the snapshot);
- ``recall@10``: of :meth:`VectorCache.nearest` (the index's candidates, exact cosines) against an exact
  product over all vectors, for the query vectors;
- ``lexical p95`` and ``hybrid p50/p95`` of ``MemoryStore.search`` in one warm process, the two modes
  alternating per query and which of them goes first alternating too, since the first warms pages the second
  reads (hybrid includes embedding the query with MiniLM); CPU ms per query beside them
  (p50 and p95 of ``time.process_time``: the whole process, the embedding thread included) and the ratios of
  the CPU percentiles, which a loaded machine leaves comparable when it inflates wall times;
- ``rss``: peak RSS (MB) of a fresh process that opens the store and runs 20 hybrid searches, and its RSS
  after loading the embedder (what the vectors add is the difference);
- ``cli``: wall and CPU seconds of a cold ``agent-memory search --mode hybrid`` (median of 3).

The vector set: MiniLM (ONNX) embeddings of the first ``--real`` generated record texts, then, for every
further row, ``normalise(a + w·b + 0.015·g)`` with ``a`` and ``b`` two real vectors picked at random,
``w ~ U(0, 0.6)`` and ``g`` standard Gaussian noise (384 dims): mixtures of real embeddings, so the set stays
clustered like real ones (pure Gaussian vectors make an ANN look worse than it is on real data). Row ``i`` of
the set is the vector of the ``i``-th generated record (the roots share a seed, so the 10k and 100k roots are
the 1M root's first records and use the set's first rows). Query vectors are MiniLM embeddings of the first eight words of records sampled from the root.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_million.py --sizes 10000,100000,1000000
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import resource
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _corpus import Corpus  # noqa: E402
from _genroot import write_root  # noqa: E402

from agent_memory import MemoryStore  # noqa: E402
from agent_memory.backends.files.vector_snapshot import drop_snapshots, snapshot_bytes  # noqa: E402
from agent_memory.backends.files.vectors import VectorCache  # noqa: E402
from agent_memory.embeddings import LocalEmbedder  # noqa: E402
from agent_memory.model.records import content_hash  # noqa: E402

DIM = 384
SEED = 1_000_000  # _genroot's default seed for the 1M root: the smaller roots are its prefixes
PY = sys.executable


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def root_for(tmp: Path, size: int) -> Path:
    return tmp if size == 1_000_000 else Path(f"{tmp}-{size}")


def ensure_root(root: Path, size: int) -> dict[str, Any]:
    """Generate and index the root unless a finished one is there."""
    done = root / ".bench-ready"
    if done.exists():
        return {}
    t = time.perf_counter()
    if not (root / "records").is_dir() or len(os.listdir(root / "records")) < size:
        write_root(root, size, seed=SEED)
    c0 = cpu_children()
    subprocess.run([PY, "-m", "agent_memory.cli", "--root", str(root), "reindex"], check=True, capture_output=True)
    done.write_text("ok")
    return {"generate_and_reindex_s": round(time.perf_counter() - t, 1), "reindex_cpu_s": round(cpu_children() - c0, 1)}


def corpus_items(size: int) -> list[tuple[str, str]]:
    """``(content hash, text)`` of the first ``size`` generated records, in generation order (every root is a
    prefix of the 1M one: same seed)."""
    return [(content_hash(d.content), d.content) for d in Corpus(seed=SEED).drafts(size)]


def real_vectors(tmp: Path, emb: LocalEmbedder, count: int) -> np.ndarray:
    """MiniLM vectors of the first ``count`` generated record texts (cached beside the 1M root)."""
    cache = Path(f"{tmp}-real-{count}.npy")
    if cache.exists():
        return np.load(cache)
    texts = [body for _, body in corpus_items(count)]
    t = time.perf_counter()
    out = np.concatenate([emb.embed(texts[i : i + 256]) for i in range(0, len(texts), 256)]).astype(np.float32)
    print(f"embedded {len(texts)} texts in {time.perf_counter() - t:.0f}s", file=sys.stderr)
    np.save(cache, out)
    return out


def _block(real: np.ndarray, b: int) -> np.ndarray:
    """Derived rows ``b..b+10,000`` (seeded by ``b``: the same however the set is read)."""
    rng = np.random.default_rng(b)
    x = real[rng.integers(0, len(real), 10_000)]
    y = real[rng.integers(0, len(real), 10_000)]
    w = rng.uniform(0, 0.6, (10_000, 1)).astype(np.float32)
    m = x + w * y + 0.015 * rng.standard_normal((10_000, DIM), dtype=np.float32)
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


def derived(real: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Rows ``start..stop`` of the vector set: the real vectors first, then derived ones."""
    out = np.empty((stop - start, DIM), dtype=np.float32)
    i = start
    while i < stop:
        if i < len(real):
            j = min(stop, len(real))
            out[i - start : j - start] = real[i:j]
        else:
            b = i // 10_000 * 10_000
            j = min(stop, b + 10_000)
            out[i - start : j - start] = _block(real, b)[i - b : j - b]
        i = j
    return out


def ensure_vectors(root: Path, size: int, emb: LocalEmbedder, real: np.ndarray) -> dict[str, Any]:
    cache = VectorCache.for_root(root)
    hashes = list(dict.fromkeys(h for h, _ in corpus_items(size)))
    if cache.count(emb.name) == len(hashes):
        cache.close()
        return {}
    have = cache.known(emb.name, hashes)  # a run stopped part way resumes where it stopped
    t = time.perf_counter()
    for i in range(0, len(hashes), 50_000):
        j = min(len(hashes), i + 50_000)
        if not have.issuperset(hashes[i:j]):
            cache.put(emb.name, hashes[i:j], derived(real, i, j))
    cache.note_embedder(emb)
    cache.close()
    return {"vectors_put_s": round(time.perf_counter() - t, 1), "vectors": len(hashes)}


def pct(xs: list[float], p: float) -> float:
    return round(float(np.percentile(xs, p)), 1)


RSS_SCRIPT = """
import json, sys
def hwm():  # this process's peak RSS in MB (VmHWM: unlike ru_maxrss, not inherited from the parent across fork+exec)
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1]) // 1024
from agent_memory import MemoryStore
from agent_memory.embeddings import LocalEmbedder
emb = LocalEmbedder(); emb.embed(["warm up"])
base = hwm()
s = MemoryStore(sys.argv[1], embedder=emb)
for q in json.loads(sys.argv[2]):
    s.search(q, mode="hybrid", limit=10)
print(json.dumps({"after_embedder_mb": base, "peak_mb": hwm()}))
"""


RSS_VECTORS = """
import json, sys, time
def hwm():  # this process's peak RSS in MB (VmHWM: unlike ru_maxrss, not inherited from the parent across fork+exec)
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1]) // 1024
import numpy as np
from agent_memory.backends.files.vectors import VectorCache
base = hwm()
qs = np.load(sys.argv[3])
t = time.perf_counter()
c = VectorCache.for_root(sys.argv[1])
for q in qs:
    c.nearest(sys.argv[2], q, 110)
print(json.dumps({"after_embedder_mb": base, "peak_mb": hwm(),
                  "indexed": c.indexed(sys.argv[2]), "cold_s": round(time.perf_counter() - t, 2)}))
"""


def files_row(size: int, tmp: Path, emb: LocalEmbedder, real: np.ndarray, args: argparse.Namespace) -> dict[str, Any]:
    root = root_for(tmp, size)
    only = size in args.vectors_only
    row: dict[str, Any] = {"backend": "files", "records": size, **({"vectors_only": True} if only else ensure_root(root, size))}
    root.mkdir(parents=True, exist_ok=True)
    row.update(ensure_vectors(root, size, emb, real))
    cache = VectorCache.for_root(root)
    drop_snapshots(cache.path)  # the snapshot is derived: time building it from vectors.db
    t, c = time.perf_counter(), time.process_time()
    cache.size(emb.name)
    row["build_s"], row["build_cpu_s"] = round(time.perf_counter() - t, 1), round(time.process_time() - c, 1)
    row["snapshot_mb"] = round(snapshot_bytes(cache.path) / 2**20)
    if args.hnsw:
        t, c = time.perf_counter(), time.process_time()
        row["indexed"] = cache.build_index(emb.name, force=True)
        row["hnsw_build_s"], row["hnsw_build_cpu_s"] = round(time.perf_counter() - t, 1), round(time.process_time() - c, 1)
    queries = queries_of_corpus(size, args.queries)
    qv = emb.embed(queries)
    loaded = cache._matrix(emb.name)
    hit, dense = 0, []
    for q in qv:
        t = time.perf_counter()
        got = {h for h, _ in cache.nearest(emb.name, q, 10)}
        dense.append(1000 * (time.perf_counter() - t))
        want = {loaded.order[int(i)] for i in np.argsort(-(loaded.matrix @ q))[:10]}
        hit += len(got & want)
    row["recall_at_10"] = round(hit / (10 * len(qv)), 4)
    row["nearest_p50_ms"], row["nearest_p95_ms"] = pct(dense, 50), pct(dense, 95)
    cache.close()
    del loaded
    if only:  # no lexical index at this size: the vector side alone, and a search process's RSS
        np.save(Path(f"{root}-queries.npy"), qv[:20])
        out = subprocess.run(
            [PY, "-c", RSS_VECTORS, str(root), emb.name, f"{root}-queries.npy"], check=True, capture_output=True, text=True
        )
        row["rss"] = json.loads(out.stdout.strip().splitlines()[-1])
        return row
    store = MemoryStore(root, embedder=emb, rescan_interval=None)
    try:
        lex: list[float] = []
        hyb: list[float] = []
        lex_cpu: list[float] = []
        hyb_cpu: list[float] = []
        for mode in ("lexical", "hybrid"):  # warm both (loads the index and the vectors)
            store.search(queries[0], mode=mode, limit=10)
        for i, q in enumerate(queries):
            # the first search of a query warms pages the second reads: which mode goes first alternates
            pair = [("lexical", lex, lex_cpu), ("hybrid", hyb, hyb_cpu)]
            for mode, wall, cpu in pair if i % 2 == 0 else pair[::-1]:
                t, c = time.perf_counter(), time.process_time()
                store.search(q, mode=mode, limit=10)
                wall.append(1000 * (time.perf_counter() - t))
                cpu.append(1000 * (time.process_time() - c))
    finally:
        store.close()
    row["lexical_p50_ms"], row["lexical_p95_ms"] = pct(lex, 50), pct(lex, 95)
    row["hybrid_p50_ms"], row["hybrid_p95_ms"] = pct(hyb, 50), pct(hyb, 95)
    row["lexical_cpu_p50_ms"], row["hybrid_cpu_p50_ms"] = pct(lex_cpu, 50), pct(hyb_cpu, 50)
    row["lexical_cpu_p95_ms"], row["hybrid_cpu_p95_ms"] = pct(lex_cpu, 95), pct(hyb_cpu, 95)
    row["hybrid_over_lexical_p95"] = round(row["hybrid_p95_ms"] / max(row["lexical_p95_ms"], 1e-9), 2)
    # CPU of the whole process (the embedding thread included): the ratios a loaded machine leaves comparable
    row["hybrid_over_lexical_cpu_p50"] = round(row["hybrid_cpu_p50_ms"] / max(row["lexical_cpu_p50_ms"], 1e-9), 2)
    row["hybrid_over_lexical_cpu_p95"] = round(row["hybrid_cpu_p95_ms"] / max(row["lexical_cpu_p95_ms"], 1e-9), 2)
    out = subprocess.run([PY, "-c", RSS_SCRIPT, str(root), json.dumps(queries[:20])], check=True, capture_output=True, text=True)
    row["rss"] = json.loads(out.stdout.strip().splitlines()[-1])
    walls, cpus = [], []
    for q in queries[:3]:
        c0, t = cpu_children(), time.perf_counter()
        subprocess.run(
            [PY, "-m", "agent_memory.cli", "--root", str(root), "search", q, "--mode", "hybrid", "--json"], check=True, capture_output=True
        )
        walls.append(time.perf_counter() - t)
        cpus.append(cpu_children() - c0)
    row["cli_hybrid_s"], row["cli_hybrid_cpu_s"] = round(statistics.median(walls), 2), round(statistics.median(cpus), 2)
    row.update(append_row(root, emb.name))
    return row


def append_row(root: Path, model: str, count: int = 1_000) -> dict[str, Any]:
    """A backfill of ``count`` new vectors (hashes of no record), then a fresh cache's first search: the
    snapshot is appended to, not rebuilt (seconds and whether the data file stayed the same)."""
    cache = VectorCache.for_root(root)
    before = {p.name for p in Path(f"{cache.path}-snap").glob("*.f32")}
    tag = os.urandom(4).hex()
    rng = np.random.default_rng(int(tag, 16))
    m = rng.standard_normal((count, DIM)).astype(np.float32)
    cache.put(model, [f"bench-extra-{tag}-{i}" for i in range(count)], m / np.linalg.norm(m, axis=1, keepdims=True))
    cache.close()
    fresh = VectorCache.for_root(root)
    t, c = time.perf_counter(), time.process_time()
    n = fresh.size(model)
    out = {"append_s": round(time.perf_counter() - t, 2), "append_cpu_s": round(time.process_time() - c, 2), "after_append": n}
    out["appended_in_place"] = before == {p.name for p in Path(f"{fresh.path}-snap").glob("*.f32")}
    fresh.close()
    return out


def pg_server_cpu(server: Any) -> float:
    """CPU seconds the PostgreSQL server has used so far: the postmaster with its reaped children (parallel workers
    that ended) and its live children (backends, autovacuum): a per-query figure that the machine's load does not
    inflate, beside the wall time."""
    pid = int((server.data / "postmaster.pid").read_text().split()[0])
    tick = os.sysconf("SC_CLK_TCK")

    def fields(p: str) -> list[str]:
        return Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()

    total = sum(int(x) for x in fields(str(pid))[11:15])  # utime, stime, cutime, cstime
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                f = fields(p)
            except OSError:
                continue
            if f[1] == str(pid):
                total += int(f[11]) + int(f[12])
    return total / tick


def _copy_binary(rows: list[tuple[bytes, ...]]) -> bytes:
    """A binary ``COPY`` stream of ``rows`` (each field already in its binary send form)."""
    out = [b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)]
    for fields in rows:
        out.append(struct.pack(">h", len(fields)))
        for f in fields:
            out.append(struct.pack(">i", len(f)) + f)
    out.append(struct.pack(">h", -1))
    return b"".join(out)


def _float4_arrays(m: np.ndarray) -> list[bytes]:
    """Each row of ``m`` in ``float4[]``'s binary form (``array_send``: a 20-byte header, then length 4 and a
    big-endian float per element), built by numpy in one pass."""
    n, dim = m.shape
    head = struct.pack(">iiiii", 1, 0, 700, dim, 1)
    body = np.empty((n, dim, 2), dtype=">i4")
    body[:, :, 0] = 4
    body[:, :, 1] = np.ascontiguousarray(m, dtype=">f4").view(">i4")
    raw = body.tobytes()
    step = dim * 8
    return [head + raw[i * step : (i + 1) * step] for i in range(n)]


async def pg_load(url: str, size: int, model: str, real: np.ndarray, server: Any = None) -> dict[str, Any]:
    """The records through ``remember_many`` (COPY), then the benchmark's own vectors and their sketches by binary
    ``COPY`` (the data is the benchmark's: it writes what ``PgVectors.embed`` would, sketches computed from the
    vectors it holds, instead of reading every vector back for migration 11's backfill)."""
    from agent_memory.backends.postgres import PostgresBackend
    from agent_memory.backends.postgres import sketch as pg_sketch

    out: dict[str, Any] = {}
    loader = PostgresBackend(url)
    t = time.perf_counter()
    gen = Corpus(seed=SEED).drafts(size)
    done, cpu0, srv0 = 0, time.process_time(), pg_server_cpu(server) if server else 0.0
    while batch := list(itertools.islice(gen, 100_000)):  # in slices: a million drafts at once is gigabytes of objects
        await loader.remember_many(batch, source="import")
        done += len(batch)
        wall = time.perf_counter() - t
        srv = pg_server_cpu(server) - srv0 if server else 0.0
        print(  # progress: a run stopped part way still says how far it got and at what rate
            json.dumps(
                {
                    "pg_ingest": done,
                    "of": size,
                    "wall_s": round(wall, 1),
                    "per_s": round(done / wall),
                    "client_cpu_s": round(time.process_time() - cpu0, 1),
                    "server_cpu_s": round(srv, 1),
                    "load": [round(x, 1) for x in os.getloadavg()],
                }
            ),
            file=sys.stderr,
            flush=True,
        )
    out["ingest_s"] = round(time.perf_counter() - t, 1)
    out["ingest_per_s"] = round(size / max(out["ingest_s"], 1e-9))
    out["ingest_client_cpu_s"] = round(time.process_time() - cpu0, 1)
    if server is not None:
        out["ingest_server_cpu_s"] = round(pg_server_cpu(server) - srv0, 1)
    order = {h: i for i, (h, _) in reversed(list(enumerate(corpus_items(size))))}
    s = loader.schema
    t = time.perf_counter()
    sketch_s = 0.0
    async with loader.pool.connection() as conn:
        cur = await conn.execute(f'SELECT tenant, id, content_hash FROM "{s}".records')
        rows = await cur.fetchall()
        # the write gate redacts a few generated texts (a pseudo-word that looks like a secret: at 1M some do), so
        # their stored hash is no draft's; they take the generation positions no stored hash claimed
        taken = {order[r["content_hash"]] for r in rows if r["content_hash"] in order}
        free = iter(sorted(set(range(size)) - taken))
        pos = {(r["tenant"], r["id"]): order[r["content_hash"]] if r["content_hash"] in order else next(free) for r in rows}
        out["redacted_texts"] = sum(r["content_hash"] not in order for r in rows)
        recs = sorted(rows, key=lambda r: pos[(r["tenant"], r["id"])])  # generation order: contiguous slices
        for i in range(0, len(recs), 20_000):
            part = recs[i : i + 20_000]
            idx = np.array([pos[(r["tenant"], r["id"])] for r in part])
            vecs = derived(real, int(idx[0]), int(idx[-1]) + 1)[idx - idx[0]]
            keys = [(r["tenant"].encode(), r["id"].encode(), r["content_hash"].encode()) for r in part]
            dims = struct.pack(">i", DIM)
            async with conn.transaction():
                async with conn.cursor().copy(
                    f'COPY "{s}".record_vectors (tenant, id, model, dims, embedding, content_hash) FROM STDIN (FORMAT BINARY)'
                ) as copy:
                    await copy.write(
                        _copy_binary([(k[0], k[1], model.encode(), dims, a, k[2]) for k, a in zip(keys, _float4_arrays(vecs), strict=True)])
                    )
                c = time.perf_counter()
                async with conn.cursor().copy(
                    f'COPY "{s}".record_sketches (tenant, id, model, dims, content_hash, sketch) FROM STDIN'
                ) as copy:
                    for k, sk in zip(part, pg_sketch.hex_sketches(vecs), strict=True):
                        await copy.write_row((k["tenant"], k["id"], model, DIM, k["content_hash"], sk))
                sketch_s += time.perf_counter() - c
        out["vectors_copy_s"] = round(time.perf_counter() - t - sketch_s, 1)
        out["sketches_s"] = round(sketch_s, 1)
        out["sketched"] = len(recs)
        out["_ids"] = {pos[(r["tenant"], r["id"])]: r["id"] for r in recs}  # vector-set row -> id (pg_row's exact product)
        for table in ("records", "record_vectors", "record_sketches"):
            await conn.execute(f'VACUUM (ANALYZE) "{s}".{table}')
    await loader.close()
    return out


async def pg_row(size: int, server: Any, emb: LocalEmbedder, real: np.ndarray, args: argparse.Namespace) -> dict[str, Any]:
    """One database of ``size`` records, vectors copied in (the same set as the files roots'), then searches."""
    import psycopg

    from agent_memory.backends.base import Caller
    from agent_memory.backends.postgres import PostgresBackend
    from agent_memory.backends.postgres import vectors as pg_vectors

    db = f"million_{size}_{int(time.time())}"
    async with await psycopg.AsyncConnection.connect(server.url, autocommit=True) as conn:
        await conn.execute(f"CREATE DATABASE {db}")
    url = server.url.rsplit("/", 1)[0] + f"/{db}"
    row: dict[str, Any] = {"backend": "postgres", "records": size, "index": "sketch" if size > pg_vectors.EXACT_MAX else "exact"}
    loaded = await pg_load(url, size, emb.name, real, server)
    held = loaded.pop("_ids")  # a duplicate text is stored once: its other rows of the vector set hold no record
    ids = np.array([held.get(i) for i in range(size)], dtype=object)
    row.update(loaded)
    queries = queries_of_corpus(size, args.queries)
    asked: list[np.ndarray] = []  # the query vector each search embedded (for the exact product below)

    inner = emb.aembed

    async def spy(texts: list[str]) -> Any:
        out = await inner(texts)
        asked.append(np.asarray(out[0], dtype=np.float32))
        return out

    emb.aembed = spy  # type: ignore[method-assign]
    backend = PostgresBackend(url, embedder=emb)
    anyone = Caller()
    try:
        lex: list[float] = []
        hyb: list[float] = []
        cpu: dict[str, list[float]] = {"lexical": [], "hybrid": []}  # client + server CPU ms per query
        for mode in ("lexical", "hybrid"):
            await backend.search(queries[0], anyone, mode=mode, limit=10)
        for q in queries:
            for mode, wall in (("lexical", lex), ("hybrid", hyb)):
                t, c, s = time.perf_counter(), time.process_time(), pg_server_cpu(server)
                await backend.search(q, anyone, mode=mode, limit=10)
                wall.append(1000 * (time.perf_counter() - t))
                cpu[mode].append(1000 * (time.process_time() - c + pg_server_cpu(server) - s))
        row["lexical_p50_ms"], row["lexical_p95_ms"] = pct(lex, 50), pct(lex, 95)
        row["hybrid_p50_ms"], row["hybrid_p95_ms"] = pct(hyb, 50), pct(hyb, 95)
        row["lexical_cpu_p50_ms"], row["hybrid_cpu_p50_ms"] = pct(cpu["lexical"], 50), pct(cpu["hybrid"], 50)
        row["hybrid_over_lexical_p95"] = round(row["hybrid_p95_ms"] / max(row["lexical_p95_ms"], 1e-9), 2)
        if size > pg_vectors.EXACT_MAX:  # the coarse filter's top 10 against the exact top 10
            from agent_memory.backends.postgres.rows import filters_sql, visibility

            async with backend.pool.connection() as conn:  # the rows a dense search of this caller ranks
                params = backend._caller(anyone)
                cur = await conn.execute(f"SELECT r.id FROM {backend.table} r WHERE {visibility(params)}{filters_sql(params)}", params)
                seen = {r["id"] for r in await cur.fetchall()}
            matrix = derived(real, 0, size)  # every vector, in the order of ``ids``
            hidden = np.array([i not in seen for i in ids])
            hit = 0
            for q in queries:
                asked.clear()
                got = {h.id for h in (await backend.search(q, anyone, mode="dense", limit=10)).hits}
                sims = matrix @ asked[-1]
                sims[hidden] = -np.inf  # not this caller's, superseded, or no record (a duplicate text)
                hit += len(got & set(ids[np.argpartition(-sims, 10)[:10]]))
            row["recall_at_10"], row["recall_queries"] = round(hit / (10 * len(queries)), 4), len(queries)
            del matrix
            hit, exact_ms = 0, []
            for q in queries[: args.pg_recall_queries or None]:  # the server's exact read takes every vector: ~40 s at 1M
                got = {h.id for h in (await backend.search(q, anyone, mode="dense", limit=10)).hits}
                saved, pg_vectors.EXACT_MAX = pg_vectors.EXACT_MAX, 10**9
                t = time.perf_counter()
                want = {h.id for h in (await backend.search(q, anyone, mode="dense", limit=10)).hits}
                exact_ms.append(1000 * (time.perf_counter() - t))
                pg_vectors.EXACT_MAX = saved
                hit += len(got & want)
            checked = len(queries[: args.pg_recall_queries or None])
            row["recall_vs_server_exact"], row["server_exact_queries"] = round(hit / (10 * checked), 4), checked
            row["exact_dense_p50_ms"] = pct(exact_ms, 50)
    finally:
        emb.aembed = inner  # type: ignore[method-assign]
        await backend.close()
    return row


def queries_of_corpus(size: int, n: int) -> list[str]:
    items = corpus_items(size)
    rng = np.random.default_rng(7)
    return [" ".join(items[int(i)][1].split()[:8]) for i in rng.integers(0, len(items), n)]


async def pg_rows(sizes: list[int], emb: LocalEmbedder, real: np.ndarray, args: argparse.Namespace) -> list[dict[str, Any]]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from _pg import PgServer

    server = PgServer(durable=True)
    server.start()
    rows = []
    try:
        for size in sizes:
            rows.append(await pg_row(size, server, emb, real, args))
            rows[-1]["load"] = [round(x, 1) for x in os.getloadavg()]
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    finally:
        server.stop()
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| backend | records | index | build s (CPU) | recall@10 | dense-side p50 / p95 ms | lexical p95 ms | hybrid p50 / p95 ms |"
        " hybrid/lexical p95 | CPU p50 / p95 ms lexical; hybrid | CPU ratio p50 / p95 | search RSS MB (after embedder) |"
        " CLI cold hybrid s (CPU) |"
    )
    out = [head, "|---" * (head.count("|") - 1) + "|"]
    for r in rows:
        rss = r.get("rss", {})
        out.append(
            f"| {r['backend']} | {r['records']:,} | {r.get('index', 'hnsw' if r.get('indexed') else 'pca+rerank' if r['records'] >= 20_000 else 'exact')} |"
            f" {r.get('build_s', '—')} ({r.get('build_cpu_s', '—')}) | {r.get('recall_at_10', '—')} |"
            f" {r.get('nearest_p50_ms', '—')} / {r.get('nearest_p95_ms', '—')} | {r.get('lexical_p95_ms', '—')} |"
            f" {r.get('hybrid_p50_ms', '—')} / {r.get('hybrid_p95_ms', '—')} | {r.get('hybrid_over_lexical_p95', '—')} |"
            f" {r.get('lexical_cpu_p50_ms', '—')} / {r.get('lexical_cpu_p95_ms', '—')}; {r.get('hybrid_cpu_p50_ms', '—')} /"
            f" {r.get('hybrid_cpu_p95_ms', '—')} | {r.get('hybrid_over_lexical_cpu_p50', '—')} / {r.get('hybrid_over_lexical_cpu_p95', '—')} |"
            f" {rss.get('peak_mb', '—')} ({rss.get('after_embedder_mb', '—')}) | {r.get('cli_hybrid_s', '—')} ({r.get('cli_hybrid_cpu_s', '—')}) |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--backends", default="files,postgres")
    ap.add_argument("--real", type=int, default=20_000, help="records embedded for real (the rest derived)")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--tmp", type=Path, default=Path("/tmp/bench-1m-ann"), help="the 1M root; smaller ones beside it")
    ap.add_argument("--vectors-only", default="", help="sizes measured without a lexical root (vector side only)")
    ap.add_argument("--pg-max", type=int, default=100_000, help="largest PostgreSQL size")
    ap.add_argument(
        "--pg-recall-queries",
        type=int,
        default=0,
        help="PostgreSQL: queries also run through the server's exact read, for its time (0: all)",
    )
    ap.add_argument("--hnsw", action="store_true", help="also build and time the HNSW index (needs the 'ann' extra)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    args.vectors_only = {int(s) for s in args.vectors_only.split(",") if s}
    emb = LocalEmbedder()
    real = real_vectors(args.tmp, emb, args.real)
    rows: list[dict[str, Any]] = []
    backends = args.backends.split(",")
    for size in sizes:
        if "files" in backends:
            rows.append(files_row(size, args.tmp, emb, real, args))
            rows[-1]["load"] = [round(x, 1) for x in os.getloadavg()]
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    if "postgres" in backends:
        rows += asyncio.run(pg_rows([s for s in sizes if s <= args.pg_max], emb, real, args))
    print(json.dumps(rows, indent=1) if args.json else table(rows))


if __name__ == "__main__":
    main()
