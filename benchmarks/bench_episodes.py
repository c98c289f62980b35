"""Episodes at scale: list newest first and search by terms over thousands of episode files.

For each size N the root gets N episodes (deterministic goals, tools and failures; a quarter each for
four users). Timed, per query (median and p95 over the repeats):

* ``list``: the caller's 20 newest episodes (the index is in sync, so the cost is the mtime/size check of
  every file plus one SQL query);
* ``search``: a natural-language question ranked by BM25 over the caller's visible episodes;
* ``baseline``: the same question answered without an index, by reading and parsing every episode file
  and counting matching term keys (what a scan-only design pays on every query);
* ``cold``: the first read after the derived index was deleted (a full rebuild from the files);
* ``write``: episodes written per second through :meth:`EpisodeStore.write` (atomic, fsynced, locked).

    .venv/bin/python benchmarks/bench_episodes.py [--sizes 1000,5000] [--repeat 15] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_memory.episodes import EpisodeStore, build_episode, visible  # noqa: E402
from agent_memory.episodes._files import drop_index, read_episode, scan  # noqa: E402
from agent_memory.episodes._store import query_terms  # noqa: E402
from agent_memory.search.text import term_counts, term_key  # noqa: E402

USERS = ["ada", "bob", "cy", "dee"]
TOPICS = [
    "deploy the billing service",
    "rotate the tls certificates",
    "write the quarterly report",
    "tune the postgres vacuum",
    "plan the team offsite",
    "migrate the search cluster",
    "fix the flaky login test",
    "answer the customer about invoices",
    "upgrade the python runtime",
    "clean up the staging buckets",
]
TOOLS = ["search", "read_file", "run_tests", "deploy", "kubectl", "sql", "email", "calendar"]
QUESTION = "What happened last time we tried to migrate the search cluster?"


def fill(root: Path, n: int, seed: int = 7) -> None:
    """Write ``n`` episode files directly (rendered as the store renders them; not fsynced: setup, not timed)."""
    rng = random.Random(seed)
    for i in range(n):
        topic = rng.choice(TOPICS)
        calls = [
            {"name": rng.choice(TOOLS), "outcome": rng.choice(["success"] * 4 + ["failed", "retried"]), "detail": f"step {k} of {topic}"}
            for k in range(rng.randint(0, 6))
        ]
        day = 1 + i % 28
        ep = build_episode(
            f"Please {topic} for ticket {i}",
            output=f"Done: {topic}",
            error=None if rng.random() > 0.2 else "timeout talking to the api",
            tool_calls=calls,
            user_id=USERS[i % 4],
            started=f"2026-{1 + i % 12:02d}-{day:02d}T10:{i % 60:02d}:00Z",
            usage={"requests": 3, "input_tokens": 500, "output_tokens": 80},
        )
        path = root / "episodes" / ep.started[:7] / f"{ep.id}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(ep.render(), encoding="utf-8")


def baseline(root: Path, query: str, user_id: str, limit: int = 20) -> list[str]:
    """No index: parse every file, keep the visible ones, score by matching term keys."""
    keys = {term_key(t) for t in query_terms(query)}
    scored: list[tuple[int, str, str]] = []
    for file in scan(root / "episodes"):
        path = root / "episodes" / file
        episode, body = read_episode(path, path.name)
        if not visible(episode, None, user_id):
            continue
        counts, _ = term_counts(keys, f"{episode.goal}\n{body}")
        score = sum(1 for k in keys if counts.get(k))
        if score:
            scored.append((score, episode.started, episode.id))
    scored.sort(reverse=True)
    return [i for _, _, i in scored[:limit]]


def timed(fn: Any, repeat: int) -> dict[str, float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return {"p50_ms": round(statistics.median(times), 2), "p95_ms": round(times[int(0.95 * (len(times) - 1))], 2)}


def run(n: int, repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        fill(root, n)
        store = EpisodeStore(root)
        t0 = time.perf_counter()
        store.count()
        cold_ms = (time.perf_counter() - t0) * 1000
        out: dict[str, Any] = {"episodes": n, "cold_index_build_ms": round(cold_ms, 1)}
        out["list"] = timed(lambda: store.list(user_id="ada"), repeat)
        out["search"] = timed(lambda: store.list(QUESTION, user_id="ada"), repeat)
        out["baseline_scan"] = timed(lambda: baseline(root, QUESTION, "ada"), max(3, repeat // 5))
        out["search_vs_scan"] = round(out["baseline_scan"]["p50_ms"] / max(out["search"]["p50_ms"], 1e-6), 1)
        hits = store.list(QUESTION, user_id="ada")
        out["search_hits_on_topic"] = sum("migrate the search cluster" in e.goal for e in hits)
        writes = 100
        t0 = time.perf_counter()
        for i in range(writes):
            store.write(build_episode(f"bench write {i}", user_id="ada"))
        out["writes_per_s"] = round(writes / (time.perf_counter() - t0), 1)
        drop_index(store.index_path)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--sizes", default="1000,5000")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    results = [run(int(n), args.repeat) for n in args.sizes.split(",")]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print("| episodes | cold index build | list p50 / p95 | search p50 / p95 | scan (no index) p50 | ratio | writes/s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(
            f"| {r['episodes']} | {r['cold_index_build_ms']} ms | {r['list']['p50_ms']} / {r['list']['p95_ms']} ms | "
            f"{r['search']['p50_ms']} / {r['search']['p95_ms']} ms | {r['baseline_scan']['p50_ms']} ms | "
            f"{r['search_vs_scan']}× | {r['writes_per_s']} |"
        )


if __name__ == "__main__":
    main()
