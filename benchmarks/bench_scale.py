"""How costs grow with the store: both backends, same records, same queries, at each size.

For each size (default 1k, 10k, 100k; ``--sizes 1000,10000,100000,1000000``) the same synthetic Zipf records
(``_corpus.py``) are put in each backend:

- files: written directly with the record renderer (``_genroot.py``, no ``remember``), then indexed by
  ``agent-memory reindex`` (timed: that is the reindex figure);
- PostgreSQL: ingested with ``remember_many`` (COPY in batches of 5,000; timed: the ingest figure, also
  per CPU-second of client + server, which the machine's load does not inflate).

Then, per backend: ``agent-memory search`` cold (a new process each time: start-up, imports, the open-time
check, the query; median of ``--cold`` runs, with its CPU time and peak memory), warm search p50/p95 through
``backend.search`` (half anonymous, half a caller with a session and a user), ``agent-memory doctor``,
ingest of 2,000 more records into the store of that size (``remember_many``), and the disk used. For the
files backend it also edits one record in place by hand and counts the cold searches until it is found.

PostgreSQL is a throwaway server (``tests/_pg.py``, durable: fsync on), one database per size, so the CLI
reaches it by URL with the default schema. After the bulk load the table is settled with ``VACUUM (ANALYZE)``
(what autovacuum does to a table that size soon after a load; its time is reported as ``vacuum_s``), so the
reads measure a steady table rather than one autovacuum is still working on; the files root is measured after
its ``reindex`` in the same spirit.

    .venv/bin/python benchmarks/bench_scale.py [--sizes 1000,10000,100000] [--backends files,postgres] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))

from _corpus import Corpus, percentile  # noqa: E402
from _genroot import write_root  # noqa: E402
from _proc import server_cpu_s  # noqa: E402

from agent_memory.backends.base import Caller, MemoryBackend  # noqa: E402
from agent_memory.backends.files.backend import FilesBackend  # noqa: E402
from agent_memory.backends.files.store import MemoryStore  # noqa: E402

CLI = [sys.executable, "-m", "agent_memory.cli"]
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
CALLERS = [Caller(), Caller(session_id="s7", user_id="u3")]


def run_cli(*args: str) -> dict[str, Any]:
    """One ``agent-memory`` process: wall time, its own CPU time (user + system) and peak RSS, its JSON output."""
    # The peak RSS comes from GNU time when it is there: a child forked from this (large) benchmark process
    # reports the parent's memory as its own peak, whatever the command line itself uses.
    gnu_time = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r") as rss:
        wrap = [gnu_time, "-f", "%M", "-o", rss.name] if gnu_time else []
        started = time.perf_counter()
        proc = subprocess.Popen([*wrap, *CLI, *args, "--json"], stdout=out, stderr=err, env=ENV)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, problem = out.read(), err.read().decode(errors="replace")
        peak_kb = float(rss.read().strip().splitlines()[-1]) if gnu_time and not proc.returncode else usage.ru_maxrss
    if proc.returncode:
        raise RuntimeError(f"agent-memory {' '.join(args)} failed: {problem[-500:]}")
    return {
        "wall_ms": wall * 1000,
        "cpu_ms": (usage.ru_utime + usage.ru_stime) * 1000,
        "rss_mb": peak_kb / 1024,
        "out": json.loads(text or b"{}"),
    }


timed_cli = run_cli


def cold(root: str, queries: list[str], runs: int) -> dict[str, Any]:
    rows = [timed_cli("--root", root, "search", q, "--limit", "10") for q in queries[:runs]]
    return {
        "wall_ms": round(statistics.median(r["wall_ms"] for r in rows)),
        "cpu_ms": round(statistics.median(r["cpu_ms"] for r in rows)),
        "max_wall_ms": round(max(r["wall_ms"] for r in rows)),
        "rss_mb": round(max(r["rss_mb"] for r in rows)),
    }


async def warm(backend: MemoryBackend, queries: list[str]) -> dict[str, Any]:
    for q in queries[:5]:
        await backend.search(q, CALLERS[0], limit=10)
    ms = []
    for i, q in enumerate(queries):
        t = time.perf_counter()
        await backend.search(q, CALLERS[i % 2], limit=10)
        ms.append((time.perf_counter() - t) * 1000)
    return {"p50_ms": round(percentile(ms, 0.5), 2), "p95_ms": round(percentile(ms, 0.95), 2)}


async def more_ingest(backend: MemoryBackend, size: int, extra: int) -> float:
    drafts = list(Corpus(seed=size + 7).drafts(extra))
    t = time.perf_counter()
    await backend.remember_many(drafts, source="import")
    return round(extra / (time.perf_counter() - t))


def du_mb(path: Path) -> float:
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_blocks * 512
            except OSError:
                pass
    return round(total / 2**20, 1)


_OPEN = """
import sys, time
from agent_memory.backends.files.store import MemoryStore
s = MemoryStore(sys.argv[1])
c = time.process_time()
r = s.index.refresh(force=True, wait=False, bounded=sys.argv[2] == "bounded")
print((time.process_time() - c) * 1000, r.scanned)
"""


def open_check_ab(root: Path, runs: int = 3) -> dict[str, Any]:
    """CPU ms of the open-time check in a new process: the full stat scan earlier versions did on every open
    vs the bounded check, alternating, same root (median of ``runs`` each), and how many files each stat-ed."""
    out: dict[str, list[tuple[float, int]]] = {"full": [], "bounded": []}
    for i in range(2 * runs):
        mode = ("full", "bounded")[i % 2]
        text = subprocess.run(
            [sys.executable, "-c", _OPEN, str(root), mode], capture_output=True, text=True, check=True, env=ENV
        ).stdout.split()
        out[mode].append((float(text[0]), int(text[1])))
    return {f"{m}_cpu_ms": round(statistics.median(r[0] for r in rows)) for m, rows in out.items()} | {
        f"{m}_files": rows[0][1] for m, rows in out.items()
    }


def edit_found_after(root: Path, runs_max: int) -> int | None:
    """Edit the newest-indexed project record in place (the last one the open-time check's cursor reaches);
    how many cold CLI searches until its new word is found."""
    import sqlite3

    conn = sqlite3.connect(root / "index.db")
    [(name,)] = conn.execute("SELECT file FROM records WHERE scope = 'project' ORDER BY rowid DESC LIMIT 1").fetchall()
    conn.close()
    path = root / "records" / name
    text = path.read_text()
    with open(path, "r+") as fh:
        fh.write(text.rstrip("\n") + " zzqhandedit\n")
    for n in range(1, runs_max + 1):
        if run_cli("--root", str(root), "search", "zzqhandedit")["out"].get("hits"):
            return n
    return None


async def files_row(size: int, queries: list[str], args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    root = tmp / f"files-{size}"
    t = time.perf_counter()
    write_root(root, size)
    gen_s = time.perf_counter() - t
    reindex = timed_cli("--root", str(root), "reindex")
    row: dict[str, Any] = {
        "backend": "files",
        "records": size,
        "generate_s": round(gen_s, 1),
        "reindex_s": round(reindex["wall_ms"] / 1000, 1),
        "reindex_cpu_s": round(reindex["cpu_ms"] / 1000, 1),
    }
    row["cli_search"] = cold(str(root), queries, args.cold)
    doctor = timed_cli("--root", str(root), "doctor")
    row["doctor_s"], row["doctor_cpu_s"] = round(doctor["wall_ms"] / 1000, 2), round(doctor["cpu_ms"] / 1000, 2)
    backend = FilesBackend(MemoryStore(root, rescan_interval=None))
    try:
        row["search"] = await warm(backend, queries)
        row["disk_mb"] = du_mb(root)
        row["ingest_more_per_s"] = await more_ingest(backend, size, args.extra)
        row["extra"] = args.extra
    finally:
        await backend.close()
    row["open_check"] = open_check_ab(root)
    row["hand_edit_found_after_searches"] = edit_found_after(root, args.edit_runs)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return row


async def pg_row(size: int, drafts: list[Any], queries: list[str], args: argparse.Namespace, server: Any) -> dict[str, Any]:
    import psycopg

    from agent_memory.backends.postgres import PostgresBackend

    db = f"bench_{size}_{int(time.time())}"
    async with await psycopg.AsyncConnection.connect(server.url, autocommit=True) as conn:
        await conn.execute(f"CREATE DATABASE {db}")
    url = server.url.rsplit("/", 1)[0] + f"/{db}"
    backend = PostgresBackend(url)
    row: dict[str, Any] = {"backend": "postgres", "records": size}
    try:
        cpu0, srv0 = time.process_time(), server_cpu_s(server.data)
        t = time.perf_counter()
        await backend.remember_many(drafts, source="import")
        wall = time.perf_counter() - t
        cpu = time.process_time() - cpu0 + server_cpu_s(server.data) - srv0
        row.update(ingest_per_s=round(size / wall), ingest_per_cpu_s=round(size / cpu) if cpu else None, ingest_s=round(wall, 1))
        t = time.perf_counter()  # settle the table as autovacuum would (visibility map, statistics) before reads
        async with backend.pool.connection() as conn:
            await conn.execute(f'VACUUM (ANALYZE) "{backend.schema}".records')
        row["vacuum_s"] = round(time.perf_counter() - t, 1)
        row["search"] = await warm(backend, queries)
        async with backend.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT sum(pg_total_relation_size(c.oid)) AS s FROM pg_class c JOIN pg_namespace n"
                " ON n.oid = c.relnamespace WHERE n.nspname = 'agent_memory' AND c.relkind = 'r'"
            )
            row["disk_mb"] = round(int((await cur.fetchone())["s"] or 0) / 2**20, 1)
        row["ingest_more_per_s"] = await more_ingest(backend, size, args.extra)
        row["extra"] = args.extra
    finally:
        await backend.close()
    row["cli_search"] = cold(url, queries, args.cold)
    for name in ("doctor", "reindex"):
        try:
            res = timed_cli("--root", url, name)
            row[f"{name}_s"], row[f"{name}_cpu_s"] = round(res["wall_ms"] / 1000, 2), round(res["cpu_ms"] / 1000, 2)
        except RuntimeError as exc:
            row[f"{name}_s"] = f"error: {str(exc)[-120:]}"
    return row


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    backends = args.backends.split(",")
    server = None
    if "postgres" in backends:
        from _pg import PgServer

        server = PgServer(durable=True)
        server.start()
    tmp = Path(tempfile.mkdtemp(prefix="bench-scale-", dir=args.tmp))
    out: list[dict[str, Any]] = []
    try:
        for size in [int(s) for s in args.sizes.split(",")]:
            corpus = Corpus(seed=size)
            drafts = list(corpus.drafts(size))
            queries = corpus.queries(args.queries, [d.content for d in drafts[:: max(1, size // 500)]])
            for kind in backends:
                if kind == "files":
                    row = await files_row(size, queries, args, tmp)
                else:
                    row = await pg_row(size, drafts, queries, args, server)
                row["load"] = [round(x, 1) for x in os.getloadavg()]
                out.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        if server is not None:
            server.stop()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| backend | records | CLI search cold (median wall / CPU, peak RSS) | warm search p50 / p95 | ingest | "
        "reindex | doctor | disk | hand edit found after (cold searches) |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    lines = [head]
    for r in rows:
        c, s = r["cli_search"], r["search"]
        more = f"+{r.get('extra', 0):,}: {r['ingest_more_per_s']:,}/s"
        ingest = f"{r['ingest_per_s']:,}/s ({r['ingest_per_cpu_s']:,} per CPU-s); {more}" if r["backend"] == "postgres" else more
        reindex = f"{r['reindex_s']} s (CPU {r['reindex_cpu_s']} s)" if isinstance(r.get("reindex_s"), float) else r.get("reindex_s", "—")
        doctor = f"{r['doctor_s']} s (CPU {r['doctor_cpu_s']} s)" if isinstance(r.get("doctor_s"), float) else r.get("doctor_s", "—")
        edit = r.get("hand_edit_found_after_searches", "—")
        if "open_check" in r:
            o = r["open_check"]
            edit = f"{edit} (open check CPU: {o['bounded_cpu_ms']} ms for {o['bounded_files']:,} stats; full scan {o['full_cpu_ms']} ms)"
        lines.append(
            f"| {r['backend']} | {r['records']:,} | {c['wall_ms']} / {c['cpu_ms']} ms, {c['rss_mb']} MB | "
            f"{s['p50_ms']} / {s['p95_ms']} ms | {ingest} | {reindex} | {doctor} | {r['disk_mb']} MB | "
            f"{edit} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--backends", default="files,postgres")
    ap.add_argument("--queries", type=int, default=200, help="warm search questions")
    ap.add_argument("--cold", type=int, default=5, help="cold CLI searches per size")
    ap.add_argument("--extra", type=int, default=2000, help="records ingested into the store of each size")
    ap.add_argument("--edit-runs", type=int, default=25, help="cold searches at most while waiting for a hand edit")
    ap.add_argument("--tmp", default=None, help="where the roots are written (default: the system temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the generated roots")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a terminated run still stops its server
    rows = asyncio.run(run(args))
    print(json.dumps(rows, indent=2) if args.json else table(rows))


if __name__ == "__main__":
    main()
