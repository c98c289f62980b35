"""Recall overhead with the offline profile: p50/p95 of ``provider.recall`` at N records (default 10k).

The offline worker model does no model work, so the measured time is all overhead: the
pydantic-ai agent loop, the memory tools, search and reads, packing and token counting.

    .venv/bin/python benchmarks/bench_recall.py [--records 10000] [--queries 200] [--json]

The corpus is synthetic and deterministic: conversational sentences over a Zipf-distributed
vocabulary, plus planted facts whose questions are part of the query mix (their answer rate is
printed too, as a sanity check that recall finds what it should).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_memory.backends.files.store import MemoryDraft, MemoryStore  # noqa: E402
from agent_memory.provider import MemoryProvider  # noqa: E402

FUNCTION_WORDS = "the a to and of in on with for at my we it was is that this about from".split()
NAMES = ["Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Jonas", "Kemi", "Luis"]


def vocabulary(rng: random.Random, size: int = 20000) -> list[str]:
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["an", "er", "on", "is", "or", "el"]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def corpus(n: int, seed: int = 7) -> tuple[list[MemoryDraft], list[tuple[str, str]]]:
    rng = random.Random(seed)
    vocab = vocabulary(rng)
    cum, total = [], 0.0
    for rank in range(len(vocab)):  # Zipf weights, accumulated once
        total += 1 / (rank + 1)
        cum.append(total)
    drafts: list[MemoryDraft] = []
    facts: list[tuple[str, str]] = []
    for i in range(n):
        if i % 200 == 0:  # a planted fact every 200 records
            project, answer = rng.choice(vocab[2000:]), rng.choice(vocab[2000:])
            drafts.append(MemoryDraft(f"{rng.choice(NAMES)}: the release codename for project {project} is {answer}."))
            facts.append((f"What is the release codename for project {project}?", answer))
            continue
        lines = []
        for _ in range(rng.randint(1, 3)):
            words = rng.choices(vocab, cum_weights=cum, k=rng.randint(6, 24))
            for k in range(0, len(words), 4):
                words.insert(k, rng.choice(FUNCTION_WORDS))
            lines.append(f"{rng.choice(NAMES)}: " + " ".join(words).capitalize() + ".")
        drafts.append(MemoryDraft("\n".join(lines), tags=(rng.choice(vocab[:50]),)))
    return drafts, facts


def queries(facts: list[tuple[str, str]], count: int, seed: int = 11) -> list[tuple[str, str | None]]:
    rng = random.Random(seed)
    vocab = vocabulary(random.Random(7))
    out: list[tuple[str, str | None]] = []
    for i in range(count):
        if i % 2 == 0 and facts:
            out.append(rng.choice(facts))
        else:
            words = rng.sample(vocab[:5000], 3)
            out.append((f"What did {rng.choice(NAMES)} say about {words[0]} and the {words[1]} {words[2]}?", None))
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def measure(root: Path, qs: list[tuple[str, str | None]], warmup: int) -> dict[str, object]:
    provider = MemoryProvider(root, profile="offline")
    for message, _ in qs[:warmup]:
        await provider.recall(message)
    recall_ms: list[float] = []
    cpu_ms: list[float] = []
    search_ms: list[float] = []
    answered = asked = fallbacks = 0
    for message, answer in qs:
        t0, c0 = time.perf_counter(), time.process_time()
        result = await provider.recall(message)
        recall_ms.append((time.perf_counter() - t0) * 1000)
        cpu_ms.append((time.process_time() - c0) * 1000)
        fallbacks += result.fallback
        if answer is not None:
            asked += 1
            answered += answer in result.summary
        t0 = time.perf_counter()
        await provider.search(message, limit=8)
        search_ms.append((time.perf_counter() - t0) * 1000)
    provider.close()
    return {
        "queries": len(qs),
        "recall_ms": {
            "p50": round(pct(recall_ms, 0.5), 2),
            "p95": round(pct(recall_ms, 0.95), 2),
            "mean": round(statistics.fmean(recall_ms), 2),
        },
        "recall_cpu_ms": {"p50": round(pct(cpu_ms, 0.5), 2), "p95": round(pct(cpu_ms, 0.95), 2)},
        "one_search_ms": {"p50": round(pct(search_ms, 0.5), 2), "p95": round(pct(search_ms, 0.95), 2)},
        "planted_facts_answered": f"{answered}/{asked}",
        "fallbacks": fallbacks,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--root", type=Path, help="build the root here (default: a temporary directory)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.root or Path(tmp) / "root"
        drafts, facts = corpus(args.records)
        t0 = time.perf_counter()
        store = MemoryStore(root, durable=False)
        store.remember_many(drafts, source="import")
        store.close()
        build_s = time.perf_counter() - t0
        report = {
            "records": args.records,
            "build_s": round(build_s, 1),
            **asyncio.run(measure(root, queries(facts, args.queries), args.warmup)),
        }
    if args.json:
        print(json.dumps(report))
    else:
        r = report
        print(f"records={r['records']} (built in {r['build_s']}s)  queries={r['queries']}")
        print(
            f"provider.recall (offline profile): p50 {r['recall_ms']['p50']} ms  p95 {r['recall_ms']['p95']} ms  "
            f"mean {r['recall_ms']['mean']} ms"
        )
        print(
            f"  process CPU per recall (all threads; insensitive to other load): p50 {r['recall_cpu_ms']['p50']} ms  "
            f"p95 {r['recall_cpu_ms']['p95']} ms"
        )
        print(f"one provider.search for comparison: p50 {r['one_search_ms']['p50']} ms  p95 {r['one_search_ms']['p95']} ms")
        print(f"planted facts answered: {r['planted_facts_answered']}  fallbacks: {r['fallbacks']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
