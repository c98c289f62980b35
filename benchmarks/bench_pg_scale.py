"""Costs of an existing PostgreSQL store (e.g. 1M records loaded by ``bench_pg_ingest.py``/``bench_scale.py``).

Measures, against the database at ``--url``: warm search p50/p95 over the same synthetic questions as
``bench_scale.py`` (both callers), cold ``agent-memory search`` processes (median wall / CPU, peak RSS),
``doctor`` and ``reindex`` (CLI process), the on-disk size of the schema, and the server's resident memory.

    .venv/bin/python benchmarks/bench_pg_scale.py --url postgresql://…/db [--data PGDATA] [--seed 1000000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _corpus import Corpus  # noqa: E402
from bench_scale import cold, timed_cli, warm  # noqa: E402


def server_rss_mb(data: Path) -> float | None:
    """Resident memory of the server's processes (postmaster and children), shared pages counted once per process."""
    try:
        master = int((data / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError):
        return None
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            if int(pid) != master and int(stat[1]) != master:
                continue
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            continue
    return round(total / 2**20, 1)


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    from agent_memory.backends.base import Caller
    from agent_memory.backends.postgres import PostgresBackend

    corpus = Corpus(seed=args.seed)
    known = [d.content for d in corpus.drafts(2000)]  # the first records of the loaded store (same seed)
    queries = corpus.queries(args.queries, known)
    backend = PostgresBackend(args.url)
    row: dict[str, Any] = {"backend": "postgres", "url_db": args.url.rsplit("/", 1)[1]}
    try:
        row["records"] = await backend.count(Caller(), include_superseded=True)
        row["search"] = await warm(backend, queries)
        async with backend.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT sum(pg_total_relation_size(c.oid)) AS s FROM pg_class c JOIN pg_namespace n"
                " ON n.oid = c.relnamespace WHERE n.nspname = 'agent_memory' AND c.relkind = 'r'"
            )
            row["disk_mb"] = round(int((await cur.fetchone())["s"] or 0) / 2**20, 1)
    finally:
        await backend.close()
    row["cli_search"] = cold(args.url, queries, args.cold)
    for name in ("doctor", "reindex"):
        res = timed_cli("--root", args.url, name)
        row[f"{name}_s"], row[f"{name}_cpu_s"] = round(res["wall_ms"] / 1000, 2), round(res["cpu_ms"] / 1000, 2)
    if args.data:
        row["server_rss_mb"] = server_rss_mb(Path(args.data))
    row["load"] = [round(x, 1) for x in os.getloadavg()]
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--data", help="the server's data directory (for its memory)")
    ap.add_argument("--seed", type=int, default=1_000_000, help="the Corpus seed the store was loaded with")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--cold", type=int, default=5)
    args = ap.parse_args()
    print(json.dumps(asyncio.run(measure(args))))


if __name__ == "__main__":
    main()
