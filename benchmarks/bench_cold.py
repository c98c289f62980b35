"""CLI cold hybrid search at 100k records: a fresh ``agent-memory search`` process per query, against lexical.

Builds a files root of ``--size`` synthetic records once (kept at ``--root`` and reused by later runs), gives
it one vector per record under the packaged MiniLM's name with the embedder recorded (``local``), so a plain
``agent-memory search`` is hybrid by default, then times whole processes, hybrid and lexical in turn, and prints
the medians and their ratio. The vectors are random unit vectors unless ``--embed`` (embedding 100k records
takes long on a small machine): a cold query costs the same either way (the query's embedding, the matrix
load, the fusion); recall is measured by ``agent-memory eval locomo`` instead (docs/benchmarks.md).

    .venv/bin/python benchmarks/bench_cold.py [--root DIR] [--size 100000] [--runs 7] [--embed] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QUERIES = [
    "what did we decide about the release plan",
    "who reviewed the database migration",
    "where is the deploy checklist",
    "which team owns the billing service",
    "when is the next planning meeting",
    "why did the cache fail last week",
    "how do we rotate the api keys",
]


def build(root: Path, size: int, embed: bool) -> dict[str, Any]:
    """The root with ``size`` records and their vectors (made once; a finished root is reused)."""
    import numpy as np
    from _genroot import write_root

    from agent_memory.backends.files.store import MemoryStore
    from agent_memory.backends.files.vector_meta import recorded
    from agent_memory.backends.files.vectors import VectorCache, live_items
    from agent_memory.embeddings import LocalEmbedder

    done = root / ".bench-cold-done"
    if done.exists() and recorded(root) is not None:
        return dict(json.loads(done.read_text()))
    t0 = time.perf_counter()
    if not done.exists():  # the records and their index (the slow part), once
        if root.exists():
            shutil.rmtree(root)
        write_root(root, size)
    store = MemoryStore(root, durable=False, rescan_interval=None)
    store.open()
    items = list(live_items(store.index))
    cache = VectorCache.for_root(root)
    emb = LocalEmbedder()
    if embed:
        cache.backfill(items, emb, prune=True)
    else:
        rng = np.random.default_rng(0)
        cache.note_embedder(emb)
        for i in range(0, len(items), 10_000):
            part = items[i : i + 10_000]
            mat = rng.normal(size=(len(part), 384)).astype(np.float32)
            cache.put(emb.name, [h for h, _ in part], mat / np.linalg.norm(mat, axis=1, keepdims=True))
    cache.close()
    store.close()
    info = {"records": len(items), "vectors": "embedded" if embed else "random unit", "build_s": round(time.perf_counter() - t0, 1)}
    done.write_text(json.dumps(info))
    return info


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.strip()}")
    return took


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "agent-memory-bench-cold")
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--embed", action="store_true", help="embed every record with the local model (slow) instead of random vectors")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    out: dict[str, Any] = {"root": build(args.root, args.size, args.embed)}
    cli = [str(Path(sys.executable).with_name("agent-memory")), "search"]
    first = timed([*cli, QUERIES[0], "--root", str(args.root), "--json"])  # the first ever may export the model
    out["first_hybrid_s"] = round(first, 3)
    hybrid: list[float] = []
    lexical: list[float] = []
    for i in range(args.runs):
        q = QUERIES[i % len(QUERIES)]
        hybrid.append(timed([*cli, q, "--root", str(args.root), "--json"]))
        lexical.append(timed([*cli, q, "--root", str(args.root), "--json", "--mode", "lexical"]))
    check = subprocess.run([*cli, QUERIES[0], "--root", str(args.root), "--json", "--trace"], capture_output=True, text=True)
    trace = json.loads(check.stdout).get("trace", []) if check.returncode == 0 else []
    out["hybrid_by_default"] = any(s.get("stage") == "dense" and s.get("model") for s in trace)  # a dense side that ran
    out["cold_hybrid_s"] = {"median": round(statistics.median(hybrid), 3), "min": round(min(hybrid), 3), "max": round(max(hybrid), 3)}
    out["cold_lexical_s"] = {"median": round(statistics.median(lexical), 3), "min": round(min(lexical), 3), "max": round(max(lexical), 3)}
    out["hybrid_over_lexical"] = round(statistics.median(h / lx for h, lx in zip(hybrid, lexical, strict=True)), 2)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for k, v in out.items():
            print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
