"""Writes into a big files store: ``remember_many`` of new records into an existing 1,000,000-record root.

The root is built once and reused across runs (default ``/tmp/bench-1m-ingest/root``): ``_genroot.py`` writes the
record files (no ``remember``: what a long-lived store holds) and ``agent-memory reindex`` indexes them; both are
timed when they run (``--build``), and a root that is already there is used as it is. Each run then adds
``--records`` new drafts of the synthetic corpus (``_corpus.py``, a new seed per run, so none is a duplicate) through
``MemoryStore.remember_many`` (durable, ``source="import"``, batches of ``--batch-size``): the store grows by that
much per run, which at 1M changes nothing measurable.

Each code tree of ``--trees`` (default: this checkout; pass ``/work/main,.`` to compare against a baseline) runs in
its own process with ``PYTHONPATH`` set to it, the trees alternating for ``--rounds``; reported per run: wall
seconds, the child's CPU seconds (user + system, its draft worker's included: the machine's load does not inflate
them as it does wall time), records/s wall and per CPU-second. ``--draft-worker 0,1`` alternates the draft worker
off and on within each tree (``AGENT_MEMORY_DRAFT_WORKER``; a tree without one ignores it). ``--empty`` measures the same ingest into a new empty root instead.

    .venv/bin/python benchmarks/bench_ingest_1m.py [--build] [--records 20000] [--trees /work/main,.] [--rounds 1] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

# The tree's package is imported first: ``_corpus`` puts the benchmark's own checkout first on ``sys.path``, so
# without this every "tree" ran the code beside this script (the figures before 2026-11-27 20:40 UTC compared a tree
# with itself). The child reports the package it ran.
_CHILD = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[6])
import agent_memory
sys.path.insert(0, sys.argv[1])
from _corpus import Corpus
from agent_memory.backends.files.store import MemoryStore
assert agent_memory.__file__.startswith(sys.argv[6]), agent_memory.__file__
root, n, seed, batch = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
drafts = list(Corpus(seed=seed).drafts(n))
store = MemoryStore(root, rescan_interval=None)
store.open()
kids = lambda: (lambda u: u.ru_utime + u.ru_stime)(resource.getrusage(resource.RUSAGE_CHILDREN))
k, c, t = kids(), time.process_time(), time.perf_counter()
res = store.remember_many(drafts, source="import", batch_size=batch)
wall, cpu, worker = time.perf_counter() - t, time.process_time() - c, kids() - k
print(json.dumps({"created": sum(r.status == "created" for r in res), "wall_s": wall, "cpu_s": cpu + worker,
                  "worker_cpu_s": worker, "count": store.index.count(), "package": agent_memory.__file__}))
"""


def build(root: Path, size: int) -> dict[str, Any]:
    """Write and index a root of ``size`` records (timed); the corpus seed is ``size``, as ``bench_scale.py`` uses."""
    out: dict[str, Any] = {}
    for step, cmd in (
        ("generate", [sys.executable, str(HERE / "_genroot.py"), str(root), str(size)]),
        ("reindex", [sys.executable, "-m", "agent_memory.cli", "--root", str(root), "reindex", "--json"]),
    ):
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status):
            raise RuntimeError(f"{step} failed")
        out[f"{step}_s"] = round(time.perf_counter() - t, 1)
        out[f"{step}_cpu_s"] = round(usage.ru_utime + usage.ru_stime, 1)
    return out


def ingest(tree: Path, root: Path, n: int, seed: int, batch: int, worker: str = "") -> dict[str, Any]:
    """One run of ``remember_many`` by the code of ``tree``, in a child process; its figures (CPU: the child's and
    its draft worker's, which ``remember_many`` ends before it returns)."""
    env = {**ENV, "PYTHONPATH": str(tree)}
    if worker:
        env["AGENT_MEMORY_DRAFT_WORKER"] = worker
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(HERE), str(root), str(n), str(seed), str(batch), str(tree)],
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        raise RuntimeError(f"ingest with {tree} failed: {proc.stderr[-800:]}")
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    return {
        "tree": str(tree),
        "package": row["package"],
        "records": n,
        "created": row["created"],
        "store_after": row["count"],
        "wall_s": round(row["wall_s"], 1),
        "cpu_s": round(row["cpu_s"], 1),
        "worker_cpu_s": round(row.get("worker_cpu_s", 0.0), 1),
        "draft_worker": worker or "auto",
        "per_s": round(n / row["wall_s"]),
        "per_cpu_s": round(n / row["cpu_s"]),
        "load": [round(x, 1) for x in os.getloadavg()],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path("/tmp/bench-1m-ingest/root"))
    ap.add_argument("--size", type=int, default=1_000_000, help="records of the root when it is built")
    ap.add_argument("--build", action="store_true", help="build the root if it is not there (else it must be)")
    ap.add_argument("--records", type=int, default=20_000, help="new records per run")
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--trees", default=str(HERE.parent), help="comma-separated code trees (PYTHONPATH of each run)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--empty", action="store_true", help="ingest into a new empty root each run instead")
    ap.add_argument(
        "--draft-worker",
        default="",
        help="comma-separated AGENT_MEMORY_DRAFT_WORKER settings to alternate within each tree (0 off, 1 on; default: the tree's own rule)",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    result: dict[str, Any] = {"root": str(args.root), "runs": []}
    if not args.empty:
        if not (args.root / "index.db").exists():
            if not args.build:
                ap.error(f"{args.root} has no index: pass --build to write and index {args.size:,} records there")
            result["build"] = build(args.root, args.size)
            print(json.dumps(result["build"]), file=sys.stderr, flush=True)
    trees = [Path(t).resolve() for t in args.trees.split(",")]
    for tree in trees:  # a tree that is gone (an old worktree) would fail in the child with a bare AssertionError
        if not (tree / "agent_memory" / "__init__.py").is_file():
            ap.error(f"--trees: {tree} is not a code tree (no agent_memory/__init__.py there; a worktree that no longer exists?)")
    settings = args.draft_worker.split(",") if args.draft_worker else [""]
    plan = [(tree, setting) for tree in trees for setting in settings]
    for r in range(args.rounds):
        for k, (tree, setting) in enumerate(plan):
            seed = 10_000_000 + int(time.time()) % 100_000 * 10 + k + r  # new records every run
            if args.empty:
                tmp = Path(tempfile.mkdtemp(prefix="bench-ingest-empty-"))
                try:
                    row = ingest(tree, tmp / "root", args.records, seed, args.batch_size, setting)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
            else:
                row = ingest(tree, args.root, args.records, seed, args.batch_size, setting)
            result["runs"].append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        "| code | draft worker | into | records | wall | CPU (worker) | records/s wall | records per CPU-s | load |\n"
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"
    )
    for row in result["runs"]:
        before = row["store_after"] - row["created"]
        into = "a new empty root" if args.empty else f"{args.root} ({before:,} records)"
        print(
            f"| {row['tree']} | {row['draft_worker']} | {into} | {row['records']:,} | "
            f"{row['wall_s']} s | {row['cpu_s']} s ({row['worker_cpu_s']} s) | {row['per_s']:,} | {row['per_cpu_s']:,} | {row['load']} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
