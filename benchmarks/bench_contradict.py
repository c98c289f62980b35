"""Contradiction precision and recall on labelled pairs (shipped + two held-out sets), through ``provider.contradict``.

Each pair ``{"old", "new", "label", "case"}`` gets its own user partition: ``old`` is stored, then
``provider.contradict(new)`` is asked as that user; a pair counts as found when the old record is returned.
Special cases: ``superseded`` stores ``new`` as the successor of ``old`` first (a record and its own superseded
version are no contradiction); ``invisible`` stores ``old`` in another user's partition (never reported);
a ``key`` is the memory_key of both. For comparison, the consolidation lint's rule
(:func:`agent_memory.consolidate.similar.is_contradiction`) is scored on the same pairs as text.

    .venv/bin/python benchmarks/bench_contradict.py [--set tests/fixtures/contradictions.jsonl] [--target DIR|URL] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_memory import MemoryProvider  # noqa: E402
from agent_memory.consolidate import similar  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SETS = [
    ROOT / "tests" / "fixtures" / "contradictions.jsonl",
    ROOT / "tests" / "fixtures" / "contradictions_holdout.jsonl",
    ROOT / "tests" / "fixtures" / "contradictions_holdout2.jsonl",
]


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def scores(rows: list[tuple[bool, bool]]) -> dict[str, Any]:
    tp = sum(1 for label, found in rows if label and found)
    fp = sum(1 for label, found in rows if found and not label)
    fn = sum(1 for label, found in rows if label and not found)
    return {
        "pairs": len(rows),
        "conflicting": tp + fn,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": round(tp / (tp + fp), 3) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 3) if tp + fn else 1.0,
    }


async def evaluate(provider: MemoryProvider, pairs: list[dict[str, Any]], tag: str = "p") -> dict[str, Any]:
    """Score ``provider.contradict`` on ``pairs`` (each in its own user partition); returns scores and the misses."""
    rows: list[tuple[bool, bool]] = []
    misses: list[dict[str, Any]] = []
    for i, pair in enumerate(pairs):
        user = f"{tag}{i}"
        owner = f"{tag}{i}-other" if pair["case"] == "invisible" else user
        key = pair.get("key")
        old = await provider.remember(pair["old"], user_id=owner, scope="user", memory_key=key)
        exclude: list[str] = []
        if pair["case"] == "superseded":
            from agent_memory.model.drafts import MemoryDraft

            new = await provider.supersede(old.id, MemoryDraft(pair["new"], scope="user", user_id=user))
            exclude.append(new.id)
        found = await provider.contradict(pair["new"], key=key, user_id=user, exclude=exclude)
        hit = any(c.record.id == old.id for c in found) or (pair["case"] in ("invisible", "superseded") and bool(found))
        rows.append((bool(pair["label"]), hit))
        if hit != bool(pair["label"]):
            misses.append({**pair, "found": [c.to_dict() for c in found]})
    return {**scores(rows), "misses": misses}


def lint_baseline(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """The consolidation lint's contradiction rule on the pairs as plain text (no store, no visibility)."""
    rows = []
    for pair in pairs:
        groups = similar.contradictions([pair["old"], pair["new"]])
        found = bool(groups) and pair["case"] not in ("invisible", "superseded")
        rows.append((bool(pair["label"]), found))
    return scores(rows)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path in [Path(p) for p in args.set] if args.set else SETS:
        pairs = load(path)
        with tempfile.TemporaryDirectory() as tmp:
            target = args.target or str(Path(tmp) / "root")
            started = time.perf_counter()
            async with MemoryProvider(target) as provider:
                result = await evaluate(provider, pairs, tag=f"b{int(time.time())}-")
            result["seconds"] = round(time.perf_counter() - started, 2)
        out[path.name] = {"contradict": result, "lint_rule": lint_baseline(pairs)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", action="append", help="a labelled JSONL file (repeatable; default: the shipped set and both held-out sets)")
    ap.add_argument("--target", help="a memory root or postgresql:// URL (default: a fresh temporary files root)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = asyncio.run(main_async(args))
    if args.json:
        print(json.dumps(out, indent=2))
        return
    for name, res in out.items():
        c, lint = res["contradict"], res["lint_rule"]
        print(f"{name}: {c['pairs']} pairs ({c['conflicting']} conflicting), {c['seconds']}s")
        print(f"  contradict  precision {c['precision']:.3f}  recall {c['recall']:.3f}  (tp {c['tp']}, fp {c['fp']}, fn {c['fn']})")
        print(
            f"  lint rule   precision {lint['precision']:.3f}  recall {lint['recall']:.3f}  (tp {lint['tp']}, fp {lint['fp']}, fn {lint['fn']})"
        )
        for miss in c["misses"]:
            what = "missed" if miss["label"] else "false alarm"
            print(f"    {what} [{miss['case']}]: {miss['old']!r} / {miss['new']!r}")


if __name__ == "__main__":
    main()
