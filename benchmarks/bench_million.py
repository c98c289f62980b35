"""Vectors at 10k / 100k / 1M records: the files backend's HNSW index (and the PostgreSQL coarse filter) against exact.

Per size, on a files root of that many generated records (``_genroot.py``, indexed by ``reindex``; kept under
``--tmp`` and reused across runs) with one vector per record:

- ``build``: wall and CPU seconds of :meth:`VectorCache.build_index` (the HNSW index, stored with the snapshot);
- ``recall@10``: of :meth:`VectorCache.nearest` (the index's candidates, exact cosines) against an exact
  product over all vectors, for the query vectors;
- ``lexical p95`` and ``hybrid p50/p95`` of ``MemoryStore.search`` in one warm process, the two modes
  alternating per query (hybrid includes embedding the query with MiniLM); CPU ms per query beside them;
- ``rss``: peak RSS (MB) of a fresh process that opens the store and runs 20 hybrid searches, and its RSS
  after loading the embedder (what the vectors add is the difference);
- ``cli``: wall and CPU seconds of a cold ``agent-memory search --mode hybrid`` (median of 3).

The vector set: MiniLM (ONNX) embeddings of the first ``--real`` record texts of the 1M root, then, for every
further row, ``normalise(a + w·b + 0.015·g)`` with ``a`` and ``b`` two real vectors picked at random,
``w ~ U(0, 0.6)`` and ``g`` standard Gaussian noise (384 dims): mixtures of real embeddings, so the set stays
clustered like real ones (pure Gaussian vectors make an ANN look worse than it is on real data). Row ``i`` of
the set is the vector of the ``i``-th record of a root (index order), so the 10k and 100k roots use the set's
first rows. Query vectors are MiniLM embeddings of the first eight words of records sampled from the root.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_million.py --sizes 10000,100000,1000000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _genroot import write_root  # noqa: E402

from agent_memory import MemoryStore  # noqa: E402
from agent_memory.backends.files.index import live_sql  # noqa: E402
from agent_memory.backends.files.vectors import VectorCache  # noqa: E402
from agent_memory.embeddings import LocalEmbedder  # noqa: E402

DIM = 384
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
        write_root(root, size, seed=1_000_000)
    c0 = cpu_children()
    subprocess.run([PY, "-m", "agent_memory.cli", "--root", str(root), "reindex"], check=True, capture_output=True)
    done.write_text("ok")
    return {"generate_and_reindex_s": round(time.perf_counter() - t, 1), "reindex_cpu_s": round(cpu_children() - c0, 1)}


def items_of(root: Path) -> list[tuple[str, str]]:
    """``(content hash, body)`` of the root's live records, in index order (read-only, straight from index.db)."""
    conn = sqlite3.connect(f"file:{root / 'index.db'}?mode=ro", uri=True)
    try:
        sql = f"SELECT r.content_hash, f.body FROM records r JOIN fts f ON f.rowid = r.rowid WHERE {live_sql('r')} ORDER BY r.rowid"
        return [(h, b or "") for h, b in conn.execute(sql) if h]
    finally:
        conn.close()


def real_vectors(root: Path, emb: LocalEmbedder, count: int) -> np.ndarray:
    """MiniLM vectors of the first ``count`` record texts of ``root`` (the largest; cached beside it)."""
    cache = Path(f"{root}-real-{count}.npy")
    if cache.exists():
        return np.load(cache)
    texts = [body for _, body in items_of(root)[:count]]
    t = time.perf_counter()
    out = np.concatenate([emb.embed(texts[i : i + 256]) for i in range(0, len(texts), 256)]).astype(np.float32)
    print(f"embedded {len(texts)} texts in {time.perf_counter() - t:.0f}s", file=sys.stderr)
    np.save(cache, out)
    return out


def derived(real: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Rows ``start..stop`` of the vector set (deterministic per row block)."""
    out = np.empty((stop - start, DIM), dtype=np.float32)
    head = min(stop, len(real))
    if start < head:
        out[: head - start] = real[start:head]
    for block in range(max(start, len(real)), stop, 10_000):
        end = min(stop, block + 10_000)
        rng = np.random.default_rng(block)
        a = real[rng.integers(0, len(real), end - block)]
        b = real[rng.integers(0, len(real), end - block)]
        w = rng.uniform(0, 0.6, (end - block, 1)).astype(np.float32)
        m = a + w * b + 0.015 * rng.standard_normal((end - block, DIM), dtype=np.float32)
        out[block - start : end - start] = m / np.linalg.norm(m, axis=1, keepdims=True)
    return out


def ensure_vectors(root: Path, emb: LocalEmbedder, real: np.ndarray) -> dict[str, Any]:
    cache = VectorCache.for_root(root)
    hashes = list(dict.fromkeys(h for h, _ in items_of(root)))
    if cache.count(emb.name) == len(hashes):
        cache.close()
        return {}
    t = time.perf_counter()
    for i in range(0, len(hashes), 50_000):
        j = min(len(hashes), i + 50_000)
        cache.put(emb.name, hashes[i:j], derived(real, i, j))
    cache.note_embedder(emb)
    cache.close()
    return {"vectors_put_s": round(time.perf_counter() - t, 1), "vectors": len(hashes)}


def pct(xs: list[float], p: float) -> float:
    return round(float(np.percentile(xs, p)), 1)


def queries_of(root: Path, n: int) -> list[str]:
    items = items_of(root)
    rng = np.random.default_rng(7)
    return [" ".join(items[int(i)][1].split()[:8]) for i in rng.integers(0, len(items), n)]


RSS_SCRIPT = """
import json, resource, sys
from agent_memory import MemoryStore
from agent_memory.embeddings import LocalEmbedder
emb = LocalEmbedder(); emb.embed(["warm up"])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
s = MemoryStore(sys.argv[1], embedder=emb)
for q in json.loads(sys.argv[2]):
    s.search(q, mode="hybrid", limit=10)
print(json.dumps({"after_embedder_mb": base // 1024, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
"""


def files_row(size: int, tmp: Path, emb: LocalEmbedder, real: np.ndarray, args: argparse.Namespace) -> dict[str, Any]:
    root = root_for(tmp, size)
    row: dict[str, Any] = {"backend": "files", "records": size, **ensure_root(root, size)}
    row.update(ensure_vectors(root, emb, real))
    cache = VectorCache.for_root(root)
    t, c = time.perf_counter(), time.process_time()
    row["indexed"] = cache.build_index(emb.name, force=True)
    row["build_s"], row["build_cpu_s"] = round(time.perf_counter() - t, 1), round(time.process_time() - c, 1)
    queries = queries_of(root, args.queries)
    qv = emb.embed(queries)
    loaded = cache._matrix(emb.name)
    hit = 0
    for q in qv:
        got = {h for h, _ in cache.nearest(emb.name, q, 10)}
        want = {loaded.order[int(i)] for i in np.argsort(-(loaded.matrix @ q))[:10]}
        hit += len(got & want)
    row["recall_at_10"] = round(hit / (10 * len(qv)), 4)
    cache.close()
    del loaded
    store = MemoryStore(root, embedder=emb, rescan_interval=None)
    try:
        lex: list[float] = []
        hyb: list[float] = []
        lex_cpu: list[float] = []
        hyb_cpu: list[float] = []
        for mode in ("lexical", "hybrid"):  # warm both (loads the index and the vectors)
            store.search(queries[0], mode=mode, limit=10)
        for q in queries:
            for mode, wall, cpu in (("lexical", lex, lex_cpu), ("hybrid", hyb, hyb_cpu)):
                t, c = time.perf_counter(), time.process_time()
                store.search(q, mode=mode, limit=10)
                wall.append(1000 * (time.perf_counter() - t))
                cpu.append(1000 * (time.process_time() - c))
    finally:
        store.close()
    row["lexical_p50_ms"], row["lexical_p95_ms"] = pct(lex, 50), pct(lex, 95)
    row["hybrid_p50_ms"], row["hybrid_p95_ms"] = pct(hyb, 50), pct(hyb, 95)
    row["lexical_cpu_p50_ms"], row["hybrid_cpu_p50_ms"] = pct(lex_cpu, 50), pct(hyb_cpu, 50)
    row["hybrid_over_lexical_p95"] = round(row["hybrid_p95_ms"] / max(row["lexical_p95_ms"], 1e-9), 2)
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
    return row


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| backend | records | index | build s (CPU) | recall@10 | lexical p95 ms | hybrid p50 / p95 ms | hybrid/lexical p95 |"
        " search RSS MB (after embedder) | CLI cold hybrid s (CPU) |"
    )
    out = [head, "|---" * (head.count("|") - 1) + "|"]
    for r in rows:
        rss = r.get("rss", {})
        out.append(
            f"| {r['backend']} | {r['records']:,} | {r.get('index', 'hnsw' if r.get('indexed') else 'exact')} |"
            f" {r.get('build_s', '—')} ({r.get('build_cpu_s', '—')}) | {r.get('recall_at_10', '—')} | {r.get('lexical_p95_ms', '—')} |"
            f" {r.get('hybrid_p50_ms', '—')} / {r.get('hybrid_p95_ms', '—')} | {r.get('hybrid_over_lexical_p95', '—')} |"
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
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    emb = LocalEmbedder()
    biggest = root_for(args.tmp, max(sizes))
    ensure_root(biggest, max(sizes))
    real = real_vectors(biggest, emb, args.real)
    rows: list[dict[str, Any]] = []
    backends = args.backends.split(",")
    for size in sizes:
        if "files" in backends:
            rows.append(files_row(size, args.tmp, emb, real, args))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    if "postgres" in backends:
        from _pg_million import pg_rows

        rows += asyncio.run(pg_rows([s for s in sizes if s <= args.pg_max] if hasattr(args, "pg_max") else sizes, real, emb, args))
    print(json.dumps(rows, indent=1) if args.json else table(rows))


if __name__ == "__main__":
    main()
