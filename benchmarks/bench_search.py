"""Search and ingest: agent_memory against a naive file scan, in-memory BM25 and the raw FTS5 query.

For each corpus size (default 1k, 10k, 100k synthetic Zipf records) one root is built through
the bulk import path (``MemoryStore.remember_many``, durable: one ``os.sync`` per batch), the
import rate is measured, and the same questions are then timed, warm, against:

- ``store.search``: what the CLI and tools call (parse → FTS5 MATCH with visibility and BM25 →
  coordination → snippets and line ranges);
- ``provider.search``: the async façade (the same, through a worker thread);
- naive scan: read every record file per query and count query-term occurrences (the seed
  filesystem provider's default path);
- ``rank-bm25``: ``BM25Okapi`` over the tokenised records, in memory (build time reported apart);
- raw FTS5: the bare ``SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT k`` on the
  same index with the same match expression, no join, no visibility, no snippets (the floor).

Stores are opened with ``rescan_interval=None``: a periodic full rescan of 100k files every
10 s would land inside the timed loop and measure the rescan, not the search. Every store query
still does its cheap freshness check (one ``stat`` of the records directory).

    .venv/bin/python benchmarks/bench_search.py [--sizes 1000,10000,100000] [--queries 200] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import heapq
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _corpus import Corpus, percentile  # noqa: E402

from agent_memory.backends.files.fts import Fts5Engine  # noqa: E402
from agent_memory.backends.files.store import MemoryStore  # noqa: E402
from agent_memory.provider import MemoryProvider  # noqa: E402
from agent_memory.search.text import default_tokenizer  # noqa: E402

LIMIT = 10


def _stats(samples_ms: list[float]) -> dict[str, float]:
    return {
        "p50": round(percentile(samples_ms, 0.50), 3),
        "p95": round(percentile(samples_ms, 0.95), 3),
        "mean": round(statistics.fmean(samples_ms), 3),
        "n": len(samples_ms),
    }


def _time_each(fn: Callable[[str], Any], queries: list[str], warmup: int = 1) -> list[float]:
    for q in queries[:warmup]:
        fn(q)
    out = []
    gc.disable()
    try:
        for q in queries:
            t0 = time.perf_counter()
            fn(q)
            out.append((time.perf_counter() - t0) * 1000)
    finally:
        gc.enable()
    return out


# -- baselines ---------------------------------------------------------------------------------
def naive_scan(records_dir: Path, engine: Fts5Engine) -> Callable[[str], list[str]]:
    """Read every record file, count occurrences of the query's content words, keep the top k."""

    def search(query: str) -> list[str]:
        terms = engine.terms(query)
        scored: list[tuple[int, str]] = []
        with os.scandir(records_dir) as it:
            for entry in it:
                if not entry.name.endswith(".md"):
                    continue
                with open(entry.path, encoding="utf-8") as fh:
                    text = fh.read().lower()
                score = sum(text.count(t) for t in terms)
                if score:
                    scored.append((score, entry.name))
        return [name for _, name in heapq.nlargest(LIMIT, scored)]

    return search


def bm25_baseline(store: MemoryStore, engine: Fts5Engine) -> tuple[Callable[[str], list[int]], float]:
    """rank-bm25's BM25Okapi over title + tags + body (stop words dropped), built in memory."""
    from rank_bm25 import BM25Okapi

    t0 = time.perf_counter()
    rows = store.index.guarded(lambda c: c.execute("SELECT title, tags, body FROM fts ORDER BY rowid").fetchall())
    docs = [[t for t in default_tokenizer(f"{r[0]} {r[1]} {r[2]}") if t not in engine.stop_words] for r in rows]
    bm25 = BM25Okapi(docs)
    build_s = time.perf_counter() - t0

    def search(query: str) -> list[int]:
        scores = bm25.get_scores(engine.terms(query))
        return heapq.nlargest(LIMIT, range(len(scores)), key=scores.__getitem__)

    return search, build_s


def raw_fts(index_path: Path, engine: Fts5Engine) -> Callable[[str], list[int]]:
    """The floor: the bare MATCH + bm25 ORDER BY + LIMIT on the same FTS5 table."""
    conn = sqlite3.connect(index_path)
    weights = ", ".join(str(float(w)) for w in engine.weights)
    sql = f"SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY bm25(fts, {weights}) LIMIT {LIMIT}"

    def search(query: str) -> list[int]:
        return [r[0] for r in conn.execute(sql, (engine.match_expression(engine.terms(query)),))]

    return search


# -- one size ------------------------------------------------------------------------------------
def build(root: Path, n: int, seed: int) -> tuple[MemoryStore, dict[str, Any], Corpus]:
    corpus = Corpus(seed=seed)
    drafts = list(corpus.drafts(n))
    store = MemoryStore(root, rescan_interval=None)  # durable (the default): one os.sync per batch
    t0, c0 = time.perf_counter(), time.process_time()
    results = store.remember_many(drafts, source="import", batch_size=5000)  # the CLI import default
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    created = sum(r.status == "created" for r in results)
    ingest = {
        "records": n,
        "created": created,
        "seconds": round(elapsed, 2),
        "records_per_s": round(n / elapsed),
        "cpu_s": round(cpu, 2),
        "records_per_cpu_s": round(n / cpu) if cpu else None,
    }
    return store, ingest, corpus


def measure_size(n: int, queries_n: int, workdir: Path, *, naive_queries: int, bm25_max: int, log: Callable[[str], None]) -> dict[str, Any]:
    root = workdir / f"root-{n}"
    if root.exists():
        shutil.rmtree(root)
    log(f"[{n:>7}] building through remember_many …")
    store, ingest, corpus = build(root, n, seed=n)
    log(f"[{n:>7}] import: {ingest['records_per_s']:,} records/s ({ingest['seconds']} s)")
    engine = store.engine if isinstance(store.engine, Fts5Engine) else Fts5Engine()
    known = [r["body"] for r in store.index.guarded(lambda c: c.execute("SELECT body FROM fts ORDER BY random() LIMIT 500").fetchall())]
    queries = corpus.queries(queries_n, known)
    out: dict[str, Any] = {"records": n, "queries": len(queries), "ingest": ingest}

    def ours(q: str) -> Any:
        return store.search(q, limit=LIMIT)

    hits = [len(store.search(q, limit=LIMIT).hits) for q in queries]
    out["mean_hits"] = round(statistics.fmean(hits), 2)
    out["store_search_ms"] = _stats(_time_each(ours, queries, warmup=20))
    log(f"[{n:>7}] store.search p50 {out['store_search_ms']['p50']} ms p95 {out['store_search_ms']['p95']} ms")

    provider = MemoryProvider(root, rescan_interval=None)

    async def provider_loop() -> list[float]:
        for q in queries[:20]:
            await provider.search(q, limit=LIMIT)
        samples = []
        for q in queries:
            t0 = time.perf_counter()
            await provider.search(q, limit=LIMIT)
            samples.append((time.perf_counter() - t0) * 1000)
        return samples

    out["provider_search_ms"] = _stats(asyncio.run(provider_loop()))
    provider.close()
    log(f"[{n:>7}] provider.search p50 {out['provider_search_ms']['p50']} ms p95 {out['provider_search_ms']['p95']} ms")

    raw = raw_fts(store.index.path, engine)
    out["raw_fts5_ms"] = _stats(_time_each(raw, queries, warmup=20))
    log(f"[{n:>7}] raw FTS5 p50 {out['raw_fts5_ms']['p50']} ms p95 {out['raw_fts5_ms']['p95']} ms")

    naive_qs = queries[: max(3, min(len(queries), naive_queries * 10_000 // max(n, 10_000)))]
    out["naive_scan_ms"] = _stats(_time_each(naive_scan(store.records_dir, engine), naive_qs, warmup=1))
    log(f"[{n:>7}] naive scan p50 {out['naive_scan_ms']['p50']} ms ({len(naive_qs)} queries)")

    if n <= bm25_max:
        bm25_search, build_s = bm25_baseline(store, engine)
        bm25_qs = queries[: max(10, min(len(queries), 50 * 10_000 // max(n, 10_000)))]
        out["rank_bm25_ms"] = _stats(_time_each(bm25_search, bm25_qs, warmup=2))
        out["rank_bm25_build_s"] = round(build_s, 2)
        log(f"[{n:>7}] rank-bm25 p50 {out['rank_bm25_ms']['p50']} ms (built in {build_s:.1f} s)")
        del bm25_search
    gc.collect()
    ours_p50, ours_p95 = out["store_search_ms"]["p50"], out["store_search_ms"]["p95"]
    out["ratios"] = {
        "naive_over_ours_p50": round(out["naive_scan_ms"]["p50"] / ours_p50, 1),
        "ours_over_raw_p50": round(ours_p50 / out["raw_fts5_ms"]["p50"], 2),
        "ours_over_raw_p95": round(ours_p95 / out["raw_fts5_ms"]["p95"], 2),
    }
    if "rank_bm25_ms" in out:
        out["ratios"]["rank_bm25_over_ours_p50"] = round(out["rank_bm25_ms"]["p50"] / ours_p50, 1)
    out["_store"] = store
    return out


# -- ingest extras ---------------------------------------------------------------------------------
def single_remember(store: MemoryStore, count: int = 60) -> dict[str, Any]:
    """p50/p95 of one durable ``remember`` (fsync of the file and the directory, index, MEMORY.md)."""
    corpus = Corpus(seed=99)
    samples = []
    for i in range(count):
        d = corpus.draft(10_000_000 + i)
        t0 = time.perf_counter()
        store.remember(d.content, title=d.title, tags=d.tags)
        samples.append((time.perf_counter() - t0) * 1000)
    return {"durable": store.durable, **_stats(samples)}


def cold_first_search(root: Path, query: str, runs: int = 5) -> dict[str, Any]:
    """A fresh process: open the root and answer one search (CLI if installed, else python -c)."""
    exe = Path(sys.executable).with_name("agent-memory")
    if exe.exists():
        cmd = [str(exe), "--root", str(root), "--json", "search", query, "--limit", str(LIMIT)]
        how = "agent-memory search (subprocess)"
    else:
        code = (
            "import sys; from agent_memory.backends.files.store import MemoryStore; "
            f"print(len(MemoryStore(sys.argv[1]).search(sys.argv[2], limit={LIMIT}).hits))"
        )
        cmd = [sys.executable, "-c", code, str(root), query]
        how = "python -c MemoryStore(...).search (subprocess)"
    baseline_cmd = [sys.executable, "-c", "pass"]
    import subprocess

    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

    def run(c: list[str]) -> float:
        t0 = time.perf_counter()
        subprocess.run(c, check=True, stdout=subprocess.DEVNULL, env=env)
        return (time.perf_counter() - t0) * 1000

    run(cmd)
    warm_index = [run(cmd) for _ in range(runs)]
    python_only = [run(baseline_cmd) for _ in range(runs)]
    rebuild = []
    for _ in range(2):  # index.db deleted: the first search rebuilds it from the files
        for suffix in ("", "-wal", "-shm"):
            Path(f"{root / 'index.db'}{suffix}").unlink(missing_ok=True)
        rebuild.append(run(cmd))
    return {
        "how": how,
        "with_index_ms": round(statistics.median(warm_index)),
        "python_startup_ms": round(statistics.median(python_only)),
        "index_deleted_ms": round(statistics.median(rebuild)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--naive-queries", type=int, default=30, help="naive-scan queries at 10k (scaled by size)")
    parser.add_argument("--bm25-max", type=int, default=100_000, help="largest size for the rank-bm25 baseline")
    parser.add_argument("--workdir", type=Path, help="where to build roots (default: a temporary directory)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    def log(m: str) -> None:
        print(m, file=sys.stderr, flush=True)

    report = run(sizes, args.queries, args.workdir, naive_queries=args.naive_queries, bm25_max=args.bm25_max, log=log)
    if args.json:
        print(json.dumps(report))
    else:
        print(render_markdown(report))
    return 0


def run(
    sizes: list[int],
    queries: int,
    workdir: Path | None = None,
    *,
    naive_queries: int = 30,
    bm25_max: int = 100_000,
    log: Callable[[str], None] = lambda m: None,
) -> dict[str, Any]:
    tmp = tempfile.TemporaryDirectory(prefix="agent-memory-bench-", dir=workdir)
    try:
        base = Path(tmp.name)
        results = []
        extras: dict[str, Any] = {"single_remember_ms": []}
        for n in sizes:
            res = measure_size(n, queries, base, naive_queries=naive_queries, bm25_max=bm25_max, log=log)
            store = res.pop("_store")
            if n >= 10_000 or n == sizes[-1]:
                extras["single_remember_ms"].append({"records": n, **single_remember(store)})
                log(f"[{n:>7}] single durable remember p50 {extras['single_remember_ms'][-1]['p50']} ms")
            store.close()
            if n == 10_000:
                extras["cold_open_first_search"] = {
                    "records": n,
                    **cold_first_search(base / f"root-{n}", "What did we decide about the release?"),
                }
                log(f"[{n:>7}] cold open + first search {extras['cold_open_first_search']}")
            shutil.rmtree(base / f"root-{n}", ignore_errors=True)
            results.append(res)
        return {"sizes": results, **extras}
    finally:
        tmp.cleanup()


def render_markdown(report: dict[str, Any]) -> str:
    lines = [
        "| records | store.search p50 / p95 | provider.search p50 / p95 | raw FTS5 p50 / p95 | naive scan p50 | rank-bm25 p50 (build) | naive ÷ ours | rank-bm25 ÷ ours | ours ÷ raw (p50 / p95) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in report["sizes"]:
        bm = f"{r['rank_bm25_ms']['p50']:.1f} ms ({r['rank_bm25_build_s']:.1f} s)" if "rank_bm25_ms" in r else "—"
        ratios = r["ratios"]
        lines.append(
            f"| {r['records']:,} | {r['store_search_ms']['p50']:.2f} / {r['store_search_ms']['p95']:.2f} ms "
            f"| {r['provider_search_ms']['p50']:.2f} / {r['provider_search_ms']['p95']:.2f} ms "
            f"| {r['raw_fts5_ms']['p50']:.2f} / {r['raw_fts5_ms']['p95']:.2f} ms "
            f"| {r['naive_scan_ms']['p50']:.0f} ms | {bm} | {ratios['naive_over_ours_p50']}× "
            f"| {str(ratios.get('rank_bm25_over_ours_p50', '—')) + ('×' if 'rank_bm25_over_ours_p50' in ratios else '')} "
            f"| {ratios['ours_over_raw_p50']}× / {ratios['ours_over_raw_p95']}× |"
        )
    lines += [
        "",
        "| records | bulk import (remember_many, durable: one os.sync per 5,000) | the same per second of the importing process's CPU (user + system) | single durable remember p50 / p95 |",
        "| ---: | ---: | ---: | ---: |",
    ]
    singles = {s["records"]: s for s in report.get("single_remember_ms", [])}
    for r in report["sizes"]:
        one = singles.get(r["records"])
        one_text = f"{one['p50']:.1f} / {one['p95']:.1f} ms" if one else "—"
        per_cpu = r["ingest"].get("records_per_cpu_s")
        cpu_text = f"{per_cpu:,} records/s" if per_cpu else "—"
        lines.append(
            f"| {r['records']:,} | {r['ingest']['records_per_s']:,} records/s ({r['ingest']['seconds']} s) | {cpu_text} | {one_text} |"
        )
    if "cold_open_first_search" in report:
        c = report["cold_open_first_search"]
        lines += [
            "",
            f"Cold open + first search at {c['records']:,} records ({c['how']}): {c['with_index_ms']} ms "
            f"(Python start-up alone {c['python_startup_ms']} ms); with `index.db` deleted (rebuilt from the files): "
            f"{c['index_deleted_ms']} ms.",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
