"""Both backends, same corpus, same queries: ingest rate and search p50/p95 at each size.

For each size (default 10k and 100k synthetic Zipf records from ``_corpus.py``) the same drafts are
ingested through ``remember_many`` of each backend (files: durable, one ``os.sync`` per batch;
PostgreSQL: COPY in batches of 5,000, one transaction each), then the same questions are timed,
warm, through ``backend.search`` (parse → ranked query with visibility in the WHERE clause → coverage
re-scoring → snippets), half as an anonymous caller and half as a caller with a session and a user.

PostgreSQL is a throwaway server started like the tests' (``tests/_pg.py``), with durable settings
(fsync on) unless ``--fast``; or pass ``--url`` to use a server of your own (a fresh schema is used).

    .venv/bin/python benchmarks/bench_backends.py [--sizes 10000,100000] [--queries 200] [--backends files,postgres] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _corpus import Corpus, percentile  # noqa: E402

from agent_memory.backends.base import Caller, MemoryBackend  # noqa: E402
from agent_memory.backends.files.backend import FilesBackend  # noqa: E402
from agent_memory.backends.files.store import MemoryStore  # noqa: E402
from agent_memory.model.drafts import MemoryDraft  # noqa: E402

LIMIT = 10


def _stats(ms: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(ms, 0.5), 2), "p95": round(percentile(ms, 0.95), 2), "mean": round(statistics.fmean(ms), 2)}


async def _measure(backend: MemoryBackend, drafts: list[MemoryDraft], queries: list[str]) -> dict[str, Any]:
    started = time.perf_counter()
    results = await backend.remember_many(drafts, source="import")
    ingest_s = time.perf_counter() - started
    created = sum(1 for r in results if r.status == "created")
    callers = [Caller(), Caller(session_id="s7", user_id="u3")]
    for q in queries[:5]:  # warm caches and the pool
        await backend.search(q, callers[0], limit=LIMIT)
    samples: list[float] = []
    found = 0
    for i, q in enumerate(queries):
        t = time.perf_counter()
        res = await backend.search(q, callers[i % 2], limit=LIMIT)
        samples.append((time.perf_counter() - t) * 1000)
        found += bool(res.hits)
    t = time.perf_counter()
    count = await backend.count(Caller())
    count_ms = (time.perf_counter() - t) * 1000
    return {
        "ingest_s": round(ingest_s, 2),
        "ingest_per_s": round(len(drafts) / ingest_s),
        "created": created,
        "search_ms": _stats(samples),
        "queries_with_hits": found,
        "count_ms": round(count_ms, 2),
        "visible": count,
    }


async def run(sizes: list[int], n_queries: int, backends: list[str], url: str | None, fast: bool) -> list[dict[str, Any]]:
    server = None
    if "postgres" in backends and url is None:
        from _pg import PgServer

        server = PgServer(durable=not fast)
        server.start()
        url = server.url
    out: list[dict[str, Any]] = []
    try:
        for size in sizes:
            corpus = Corpus(seed=size)
            drafts = list(corpus.drafts(size))
            queries = corpus.queries(n_queries, [dr.content for dr in drafts[:: max(1, size // 500)]])
            for kind in backends:
                tmp = Path(tempfile.mkdtemp(prefix="bench-backends-"))
                backend: MemoryBackend
                if kind == "files":
                    backend = FilesBackend(MemoryStore(tmp / "root", rescan_interval=None))
                else:
                    from agent_memory.backends.postgres import PostgresBackend

                    assert url is not None
                    backend = PostgresBackend(url, schema=f"bench_{size}_{int(time.time())}")
                try:
                    row = {"backend": kind, "records": size, **await _measure(backend, drafts, queries)}
                finally:
                    await backend.close()
                    shutil.rmtree(tmp, ignore_errors=True)
                out.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        if server is not None:
            server.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--backends", default="files,postgres")
    ap.add_argument("--url", default=None, help="an existing postgresql:// server (default: start a throwaway one)")
    ap.add_argument("--fast", action="store_true", help="throwaway server with fsync off")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a terminated run still stops its server
    rows = asyncio.run(run([int(s) for s in args.sizes.split(",")], args.queries, args.backends.split(","), args.url, args.fast))
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'backend':<9} {'records':>8} {'ingest/s':>9} {'search p50':>11} {'p95':>8} {'count':>8}")
    for r in rows:
        s = r["search_ms"]
        print(f"{r['backend']:<9} {r['records']:>8} {r['ingest_per_s']:>9} {s['p50']:>9}ms {s['p95']:>6}ms {r['count_ms']:>6}ms")


if __name__ == "__main__":
    main()
