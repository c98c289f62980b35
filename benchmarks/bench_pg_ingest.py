"""PostgreSQL ingest through ``remember_many`` (COPY): records per second of wall clock and per CPU-second.

A throwaway durable server (fsync on) is started; each run loads ``--size`` synthetic records into a fresh
database, timing the wall clock, the client process's CPU and the server processes' CPU (from ``/proc``),
so a loaded machine still gives a comparable CPU cost per record. ``--profile`` splits the client's part.

    .venv/bin/python benchmarks/bench_pg_ingest.py [--size 20000] [--runs 3] [--ab] [--json]
    .venv/bin/python benchmarks/bench_pg_ingest.py --url postgresql://…/db --data PGDATA --size 5000 --runs 1 --ab
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))

from _corpus import Corpus  # noqa: E402
from _proc import server_cpu_s  # noqa: E402


async def one_run(server: Any, drafts: list[Any], n: int, mode: str = "direct", url: str | None = None) -> dict[str, Any]:
    import psycopg

    from agent_memory.backends.postgres import PostgresBackend

    if url is None:
        db = f"ingest_{mode}_{n}_{os.getpid()}"
        async with await psycopg.AsyncConnection.connect(server.url, autocommit=True) as conn:
            await conn.execute(f"CREATE DATABASE {db}")
        url = server.url.rsplit("/", 1)[0] + f"/{db}"
    backend = PostgresBackend(url)
    if mode == "staged":  # the previous algorithm: COPY into a temporary table, then INSERT … SELECT
        copy = backend.writer.copy_unkeyed
        backend.writer.copy_unkeyed = lambda conn, prepared, direct=True: copy(conn, prepared, direct=False)  # type: ignore[method-assign]
    try:
        await backend.count(__import__("agent_memory.backends.base", fromlist=["Caller"]).Caller())  # open + migrate first
        cpu0, srv0, t0 = time.process_time(), server_cpu_s(server.data), time.perf_counter()
        results = await backend.remember_many(drafts, source="import")
        wall = time.perf_counter() - t0
        client, srv = time.process_time() - cpu0, server_cpu_s(server.data) - srv0
    finally:
        await backend.close()
    created = sum(r.status == "created" for r in results)
    return {
        "mode": mode,
        "records": len(drafts),
        "created": created,
        "wall_s": round(wall, 3),
        "client_cpu_s": round(client, 3),
        "server_cpu_s": round(srv, 3),
        "per_s": round(len(drafts) / wall),
        "per_cpu_s": round(len(drafts) / (client + srv)),
        "client_us": round(1e6 * client / len(drafts)),
        "server_us": round(1e6 * srv / len(drafts)),
    }


def profile_client(drafts: list[Any]) -> dict[str, float]:
    """Client CPU per record of each step, outside the database (µs)."""
    from agent_memory.backends.postgres.rows import record_params
    from agent_memory.model.drafts import prepare_draft

    t0 = time.process_time()
    recs = [prepare_draft(d, "import")[0] for d in drafts]
    t1 = time.process_time()
    for r in recs:
        record_params(r)
    t2 = time.process_time()
    return {"prepare_draft_us": round(1e6 * (t1 - t0) / len(drafts), 1), "record_params_us": round(1e6 * (t2 - t1) / len(drafts), 1)}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    from _pg import PgServer

    corpus = Corpus(seed=args.size + int(time.time()) if args.url else args.size)
    drafts = list(corpus.drafts(args.size * (2 * args.runs if args.url else 1)))
    modes = ["direct", "staged"] if args.ab else ["direct"]
    server = None
    if args.url is None:
        server = PgServer(durable=True)
        server.start()
    else:  # an existing server (a store of some size): only the CPU of this client process is known
        server = type("Existing", (), {"data": Path(args.data or "/nonexistent")})()
    try:
        runs = []
        for i in range(args.runs):
            for mode in modes:
                batch = drafts[len(runs) * args.size : (len(runs) + 1) * args.size] if args.url else drafts
                runs.append(await one_run(server, batch, i, mode, args.url))
                print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    finally:
        if args.url is None:
            server.stop()
    out: dict[str, Any] = {"size": args.size, "runs": runs, "load": [round(x, 1) for x in os.getloadavg()]}
    for mode in modes:
        mine = [r for r in runs if r["mode"] == mode]
        out[mode] = {
            "median_per_s": statistics.median(r["per_s"] for r in mine),
            "median_per_cpu_s": statistics.median(r["per_cpu_s"] for r in mine),
            "median_client_us": statistics.median(r["client_us"] for r in mine),
            "median_server_us": statistics.median(r["server_us"] for r in mine),
        }
    if args.profile:
        out["client_steps"] = profile_client(drafts)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="also time the client's steps alone")
    ap.add_argument("--ab", action="store_true", help="alternate the direct COPY with the previous staged path")
    ap.add_argument("--url", help="ingest into this existing database instead (a different batch each run)")
    ap.add_argument("--data", help="with --url: the server's data directory, to count its CPU")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = asyncio.run(main_async(args))
    if args.json:
        print(json.dumps(out, indent=2))
    for mode in ("direct", "staged"):
        if mode in out:
            m = out[mode]
            print(
                f"{mode}: {m['median_per_s']:,}/s wall, {m['median_per_cpu_s']:,} per CPU-s (client {m['median_client_us']}"
                f" + server {m['median_server_us']} µs a record), load {out['load']}"
            )


if __name__ == "__main__":
    main()
