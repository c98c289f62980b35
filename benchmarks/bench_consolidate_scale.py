"""How consolidation's plan scales: near-duplicate merges over 10k and 100k records with planted duplicates.

The records are the synthetic Zipf corpus of the other benchmarks (``_corpus.py``: unrelated records share their
function words and common shingles, as text does), in memory (no store: the plan is a pure function of record
snapshots, and building a 100k store is the ingest benchmark's job). Planted, for a share of the base records:

- near-duplicates made as ``bench_consolidate.py`` makes them (case, punctuation, a filler phrase, a typo, spacing);
- contradictions: one content word (said once, not a function word) replaced by another (must never be merged).

Timed: :func:`agent_memory.consolidate.plan.plan_changes` with the ``merge`` rule (candidate pairs, comparison, the
contradiction lint of the same pairs) and the secret lint off, then the secret lint alone (``rules=()``: every
record's text and title through the redaction engine), wall and CPU seconds each; a whole plan is their sum.
Scored: merge precision and recall against the planted pairs, contradictions merged (must be 0), unrelated records
merged (must be 0).

    .venv/bin/python benchmarks/bench_consolidate_scale.py [--sizes 10000,100000] [--seed 7] [--exact] [--json]

``--exact`` finds candidates by prefix filtering at every size (what the plan did before MinHash LSH), to compare.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _corpus import FUNCTION_WORDS, Corpus  # noqa: E402
from bench_consolidate import _duplicate  # noqa: E402

from agent_memory.consolidate import similar  # noqa: E402
from agent_memory.consolidate.plan import plan_changes  # noqa: E402
from agent_memory.consolidate.report import ConsolidateOptions  # noqa: E402
from agent_memory.model.records import MemoryRecord, Scope, content_hash  # noqa: E402

DUP_SHARE = 0.08
CONFLICT_SHARE = 0.04


def corpus(size: int, seed: int) -> tuple[list[MemoryRecord], set[frozenset[str]], set[str]]:
    """``size`` records (bases and plants), the planted duplicate pairs and the ids of planted contradictions."""
    rng = random.Random(seed)
    words = Corpus(seed=seed)
    recs: list[MemoryRecord] = []
    pairs: set[frozenset[str]] = set()
    conflicts: set[str] = set()

    def add(text: str, kind: str) -> str:
        rid = f"2026-01-01-{kind}-{len(recs):08x}"
        created = f"2026-01-{1 + len(recs) % 28:02d}T00:00:00Z"
        recs.append(
            MemoryRecord(
                id=rid, content=text, title=kind, scope=Scope.PROJECT, created=created, updated=created, content_hash=content_hash(text)
            )
        )
        return rid

    drafts = words.drafts(size)
    while len(recs) < size:
        text = next(drafts).content
        base = add(text, "base")
        roll = rng.random()
        if roll < DUP_SHARE:
            copy = _duplicate(text, rng)
            if copy.strip() != text.strip():
                pairs.add(frozenset((base, add(copy, "dup"))))
        elif roll < DUP_SHARE + CONFLICT_SHARE:
            tokens = text.split()
            # a content word said once: replaced, the two texts disagree (a repeated or function word would not)
            spots = [
                i for i, w in enumerate(tokens) if w.isalpha() and len(w) > 4 and tokens.count(w) == 1 and w.lower() not in FUNCTION_WORDS
            ]
            if spots:
                i = rng.choice(spots)
                was, tokens[i] = tokens[i], words.content_words(1)[0]
                rid = add(" ".join(tokens), "conflict")
                if tokens[i].lower() == was.lower():
                    pairs.add(frozenset((base, rid)))  # the word drawn was the word replaced: a copy, not a contradiction
                else:
                    conflicts.add(rid)
    return recs[:size], pairs, conflicts


def run(size: int, seed: int) -> dict[str, Any]:
    recs, pairs, conflicts = corpus(size, seed)
    now = dt.datetime.now(dt.UTC)
    opts = ConsolidateOptions(rules=("merge",), max_share=1.0, lint_secrets=False)
    cpu, wall = time.process_time(), time.perf_counter()
    changes, findings, _ = plan_changes(recs, opts, now=now, root=None, recalled=None)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    lint_cpu, lint_wall = time.process_time(), time.perf_counter()
    plan_changes(recs, ConsolidateOptions(rules=(), max_share=1.0), now=now, root=None, recalled=None)
    lint_wall, lint_cpu = time.perf_counter() - lint_wall, time.process_time() - lint_cpu
    merged = [c for c in changes if c.rule == "merge"]
    hits = sum(1 for c in merged if frozenset((c.record_id, c.related[0])) in pairs)
    archived = {c.record_id for c in merged}
    return {
        "records": len(recs),
        "planted_duplicates": len(pairs),
        "merges": len(merged),
        "precision": round(hits / len(merged), 4) if merged else 1.0,
        "recall": round(hits / len(pairs), 4) if pairs else 1.0,
        "contradictions_merged": len(archived & conflicts),
        "unrelated_merged": len(merged) - hits,
        "plan_s": round(wall, 2),
        "plan_cpu_s": round(cpu, 2),
        "secret_lint_s": round(lint_wall, 2),
        "secret_lint_cpu_s": round(lint_cpu, 2),
        "findings": len(findings),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--exact", action="store_true", help="prefix filtering at every size (the candidates before LSH)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.exact:
        similar.LSH_MIN_RECORDS = 2**62
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        row = run(size, args.seed) | {
            "candidates": "prefix filtering" if args.exact else f"MinHash LSH from {similar.LSH_MIN_RECORDS:,} records"
        }
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(
        "| records | planted duplicates | merges | precision | recall | contradictions merged | unrelated merged "
        "| merge plan wall / CPU | secret lint wall / CPU | whole plan CPU |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['records']:,} | {r['planted_duplicates']:,} | {r['merges']:,} | {r['precision']} | {r['recall']} | "
            f"{r['contradictions_merged']} | {r['unrelated_merged']} | {r['plan_s']} s / {r['plan_cpu_s']} s | "
            f"{r['secret_lint_s']} s / {r['secret_lint_cpu_s']} s | {r['plan_cpu_s'] + r['secret_lint_cpu_s']:.2f} s |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
