"""Consolidation quality on a seeded store: merge precision/recall, contradictions kept, unrelated records untouched.

The store (deterministic, ``--seed``) holds templated facts (the hard case: unrelated records share most of their
words), planted near-duplicates (case, punctuation, whitespace, an added filler phrase, a typo, plural forms),
planted contradictions (one value changed: a day, a number, a city, a name) and copies of facts in another
user's partition (never to be merged). For each threshold the deterministic plan is scored:

- merge precision = planted duplicates archived / all records the merge rule archives
- merge recall    = planted duplicates archived / planted duplicates
- contradictions touched (must be 0) and contradictions flagged by lint
- unrelated touched = records archived that are neither planted duplicates (must be 0)

Then one real run at the default threshold (``max_share`` 1.0) checks the same on disk.

    .venv/bin/python benchmarks/bench_consolidate.py [--facts 400] [--seed 7] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_memory.backends.files.store import MemoryStore  # noqa: E402
from agent_memory.consolidate import MERGE_THRESHOLD, consolidate, similar  # noqa: E402
from agent_memory.model.drafts import MemoryDraft  # noqa: E402

PEOPLE = ["Ada", "Bruno", "Chen", "Dara", "Emil", "Farah", "Goran", "Hana", "Ivo", "Jun", "Kofi", "Lena", "Mateo", "Nia"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
CITIES = ["Lisbon", "Munich", "Osaka", "Nairobi", "Toronto", "Oslo", "Lima", "Hanoi"]
TOOLS = ["Postgres", "Redis", "Kafka", "Grafana", "Terraform", "Airflow", "Sentry", "Vault"]
DRINKS = ["green tea", "espresso", "oat latte", "sparkling water", "chai"]
TEMPLATES = [
    "{p} prefers {d} during long review sessions.",
    "The {t} cluster for the {c} office is upgraded every {day}.",
    "{p} moved to {c} and now works from the {c} office.",
    "Deploys of the {t} service happen on {day} after the standup.",
    "{p} owns the {t} runbook and reviews changes to it.",
    "The on-call rotation for {t} starts on {day} at {n}:00 UTC.",
    "Invoices for the {c} team are approved by {p} within {n} days.",
    "The {t} dashboard alerts when latency exceeds {n}0 ms.",
    "{p} asked that meeting notes about {t} are kept under {n} lines.",
    "Budget for the {c} offsite was capped at {n} thousand euros by {p}.",
]
FILLERS = ["Note: ", "As discussed, ", "Reminder: ", "FYI "]


@dataclass
class Seeded:
    drafts: list[MemoryDraft] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # per draft: base, dup, contradiction, other_user
    origin: list[int | None] = field(default_factory=list)  # per draft: the base draft it derives from


def _typo(text: str, rng: random.Random) -> str:
    words = text.split()
    longs = [i for i, w in enumerate(words) if len(w) > 6 and w.isalpha()]
    if not longs:
        return text
    i = rng.choice(longs)
    w = words[i]
    j = rng.randrange(1, len(w) - 2)
    words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
    return " ".join(words)


def _duplicate(text: str, rng: random.Random) -> str:
    kind = rng.randrange(5)
    if kind == 0:
        return text.lower()
    if kind == 1:
        return text.rstrip(".") + "!"
    if kind == 2:
        return rng.choice(FILLERS) + text[0].lower() + text[1:]
    if kind == 3:
        return _typo(text, rng)
    return "  " + text.replace(" ", "  ", 2) + "\n"


def _contradict(slots: dict[str, Any], template: str, rng: random.Random) -> str | None:
    for name, pool in (("day", DAYS), ("c", CITIES), ("n", list(range(2, 10))), ("d", DRINKS), ("t", TOOLS)):
        if "{" + name + "}" in template:
            other = dict(slots)
            other[name] = rng.choice([v for v in pool if v != slots[name]])
            return template.format(**other)
    return None


def seed(
    facts: int = 400, seed_value: int = 7, *, dup_share: float = 0.15, conflict_share: float = 0.08, other_user_share: float = 0.05
) -> Seeded:
    """A deterministic corpus (project scope, plus copies in user ``zoe``'s partition)."""
    rng = random.Random(seed_value)
    out = Seeded()
    seen: set[str] = set()
    while len(out.drafts) < facts * 2 and sum(k == "base" for k in out.kinds) < facts:
        template = rng.choice(TEMPLATES)
        slots = {
            "p": rng.choice(PEOPLE),
            "d": rng.choice(DRINKS),
            "t": rng.choice(TOOLS),
            "c": rng.choice(CITIES),
            "day": rng.choice(DAYS),
            "n": rng.randrange(2, 10),
        }
        text = template.format(**slots)
        if text in seen:
            continue
        seen.add(text)
        base = len(out.drafts)
        out.drafts.append(MemoryDraft(text, scope="project"))
        out.kinds.append("base")
        out.origin.append(None)
        roll = rng.random()
        if roll < dup_share:
            out.drafts.append(MemoryDraft(_duplicate(text, rng), scope="project"))
            out.kinds.append("dup")
            out.origin.append(base)
        elif roll < dup_share + conflict_share:
            other = _contradict(slots, template, rng)
            if other and other not in seen:
                seen.add(other)
                out.drafts.append(MemoryDraft(other, scope="project"))
                out.kinds.append("contradiction")
                out.origin.append(base)
        elif roll < dup_share + conflict_share + other_user_share:
            out.drafts.append(MemoryDraft(text, scope="user", user_id="zoe"))
            out.kinds.append("other_user")
            out.origin.append(base)
    return out


@dataclass
class Truth:
    kinds: dict[str, str]  # record id -> kind
    pairs: set[frozenset[str]]  # planted duplicate pairs (the copy and its original)


def build(root: Path, corpus: Seeded) -> tuple[MemoryStore, Truth]:
    store = MemoryStore(root, durable=False)
    results = store.remember_many(corpus.drafts, source="import")
    ids = [r.id for r in results]
    # a copy equal to its original once trimmed is an exact duplicate: the store never wrote it
    written = [i for i, r in enumerate(results) if r.status == "created"]
    pairs = {frozenset((ids[i], ids[o])) for i in written if (o := corpus.origin[i]) is not None and corpus.kinds[i] == "dup"}
    return store, Truth({ids[i]: corpus.kinds[i] for i in written}, pairs)


def score(truth: Truth, report: Any) -> dict[str, Any]:
    kinds = truth.kinds
    merged = [c for c in report.changes if c.rule == "merge"]
    archived = {c.record_id for c in merged}
    planted = truth.pairs
    # a planted copy or its original may be the one archived: both say the same thing
    dup_pairs = {c.record_id for c in merged if frozenset((c.record_id, c.related[0])) in truth.pairs}
    hits = len(dup_pairs)
    flagged = {i for f in report.findings if f.kind == "contradiction" for i in f.record_ids}
    contradictions = {i for i, k in kinds.items() if k == "contradiction"}
    return {
        "merges": len(archived),
        "planted_duplicates": len(planted),
        "precision": round(hits / len(archived), 3) if archived else 1.0,
        "recall": round(min(hits, len(planted)) / len(planted), 3) if planted else 1.0,
        "contradictions_touched": len(archived & contradictions),
        "other_user_touched": sum(1 for i in archived if kinds.get(i) == "other_user"),
        "contradictions_flagged": round(len(flagged & contradictions) / len(contradictions), 3) if contradictions else 1.0,
        "unrelated_touched": len(archived - dup_pairs),
        "contradiction_findings": sum(1 for f in report.findings if f.kind == "contradiction"),
    }


def run(facts: int, seed_value: int, thresholds: list[float]) -> dict[str, Any]:
    corpus = seed(facts, seed_value)
    with tempfile.TemporaryDirectory() as tmp:
        store, truth = build(Path(tmp) / "mem", corpus)
        sweep = {}
        for t in thresholds:
            started = time.perf_counter()
            rep = consolidate(store, dry_run=True, max_share=1.0, merge_threshold=t, rules=("merge",))
            sweep[f"{t:.2f}"] = {**score(truth, rep), "plan_ms": round((time.perf_counter() - started) * 1000, 1)}
        before = {p.name for p in (Path(tmp) / "mem" / "records").iterdir()}
        rep = consolidate(store, max_share=1.0)
        after = {p.name for p in (Path(tmp) / "mem" / "records").iterdir()}
        archive = {p.name for p in (Path(tmp) / "mem" / "archive").iterdir()}
        applied = score(truth, rep)
        applied["records_before"], applied["records_after"] = len(before), len(after)
        applied["lost"] = len(before - after - archive)  # a record neither live nor archived (must be 0)
        store.close()
    shingled = [similar.shingles(d.content) for d in corpus.drafts]
    n = len(shingled)
    compared = len(similar.candidate_pairs([list(range(n))], shingled, min(MERGE_THRESHOLD, similar.CONFLICT_THRESHOLD)))
    return {
        "records": len(corpus.drafts),
        "default_threshold": MERGE_THRESHOLD,
        "thresholds": sweep,
        "applied": applied,
        "compared_pairs": compared,
        "all_pairs": n * (n - 1) // 2,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--facts", type=int, default=400)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    result = run(args.facts, args.seed, [0.4, 0.5, 0.6, 0.7, 0.8, 0.9])
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{result['records']} records; default threshold {result['default_threshold']}")
    print("threshold  merges  precision  recall  contradictions touched/flagged  unrelated touched  plan ms")
    for t, r in result["thresholds"].items():
        print(
            f"{t:>9}  {r['merges']:>6}  {r['precision']:>9}  {r['recall']:>6}  "
            f"{r['contradictions_touched']:>14}/{r['contradictions_flagged']:<16}  {r['unrelated_touched']:>17}  {r['plan_ms']:>7}"
        )
    print(
        f"pairs compared: {result['compared_pairs']} of {result['all_pairs']} "
        f"({result['compared_pairs'] / max(1, result['all_pairs']):.1%}; templated facts are the worst case)"
    )
    a = result["applied"]
    print(
        f"applied at default: {a['merges']} merged, precision {a['precision']}, recall {a['recall']}, "
        f"unrelated touched {a['unrelated_touched']}, lost {a['lost']} ({a['records_before']} → {a['records_after']} live)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
