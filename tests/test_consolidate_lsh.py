"""Consolidation's candidate index at scale: MinHash LSH finds what prefix filtering finds, deterministically."""

from __future__ import annotations

import datetime as dt
import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_memory.consolidate import similar
from agent_memory.consolidate.plan import plan_changes
from agent_memory.consolidate.report import ConsolidateOptions
from agent_memory.model.records import MemoryRecord, Scope, content_hash

ROOT = Path(__file__).resolve().parents[1]


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_consolidate", ROOT / "benchmarks" / "bench_consolidate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_consolidate"] = module
    spec.loader.exec_module(module)
    return module


def _records(facts: int) -> list[MemoryRecord]:
    corpus = _bench().seed(facts, 7)
    out = []
    for n, d in enumerate(corpus.drafts):
        scope = Scope(d.scope or "project")
        out.append(
            MemoryRecord(
                id=f"r{n:05d}",
                content=d.content,
                title="t",
                scope=scope,
                user_id=d.user_id,
                created="2026-01-01T00:00:00Z",
                updated="2026-01-01T00:00:00Z",
                content_hash=content_hash(d.content),
            )
        )
    return out


def test_lsh_candidates_find_every_near_duplicate_pair_prefix_filtering_finds() -> None:
    recs = _records(300)
    sh = [similar.shingles(r.content) for r in recs]
    everyone = [list(range(len(recs)))]
    exact = similar.candidate_pairs(everyone, sh, 0.5)
    lsh = similar.candidate_pairs(everyone, sh, 0.5, lsh_min=1)
    assert lsh != exact  # a different index, not the same code path
    for floor in (0.6, 0.7, 0.8):  # every pair at or above the merge threshold, and above
        wanted = {p for p in exact if similar.jaccard(sh[p[0]], sh[p[1]]) >= floor}
        assert wanted and wanted <= lsh, floor


def test_lsh_is_deterministic_across_processes() -> None:
    code = (
        "from agent_memory.consolidate import similar; "
        "sh = [similar.shingles(t) for t in ['the deploy day is monday', 'The deploy day is Monday!', 'lunch is at noon',"
        " 'Lunch is at noon today', 'something else entirely']]; "
        "print(sorted(similar.lsh_pairs(range(5), sh.__getitem__)), similar.minhash(sh[0])[:4])"
    )
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout for _ in range(2)}
    assert len(outs) == 1  # str hashing is salted per process; the index must not depend on it
    pairs = eval(next(iter(outs)).split("]")[0] + "]")  # the pairs printed first
    assert (0, 1) in pairs and (2, 3) in pairs and not any(4 in p for p in pairs)


def test_minhash_agreement_tracks_jaccard_and_empty_text_has_none() -> None:
    a = similar.shingles("The staging cluster runs in eu-west-1 and is upgraded every Friday after the standup.")
    b = similar.shingles("the staging cluster runs in eu-west-1 and is upgraded every friday after standup")
    c = similar.shingles("Lena prefers green tea during long review sessions with the Osaka team.")
    sa, sb, sc = similar.minhash(a), similar.minhash(b), similar.minhash(c)
    assert sa and sb and sc and len(sa) == similar.LSH_BANDS * similar.LSH_ROWS
    agree = sum(x == y for x, y in zip(sa, sb, strict=True)) / len(sa)
    assert abs(agree - similar.jaccard(a, b)) < 0.2
    assert sum(x == y for x, y in zip(sa, sc, strict=True)) / len(sa) < 0.2
    assert similar.minhash(frozenset()) is None
    # records without shingles (only punctuation) are candidates of one another, as prefix filtering makes them
    empty = [similar.shingles("!!"), similar.shingles("??"), a]
    assert similar.lsh_pairs([0, 1, 2], empty.__getitem__) == {(0, 1)}


def test_plan_over_a_large_partition_merges_what_the_exact_plan_merges(monkeypatch: pytest.MonkeyPatch) -> None:
    recs = _records(400)
    opts = ConsolidateOptions(rules=("merge",), max_share=1.0)
    now = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
    exact, exact_findings, _ = plan_changes(recs, opts, now=now, root=None, recalled=None)
    monkeypatch.setattr(similar, "LSH_MIN_RECORDS", 10)  # every partition of this store through the LSH index
    lsh, lsh_findings, _ = plan_changes(recs, opts, now=now, root=None, recalled=None)
    assert exact and [(c.record_id, c.related) for c in lsh] == [(c.record_id, c.related) for c in exact]
    assert {tuple(f.record_ids) for f in lsh_findings} == {tuple(f.record_ids) for f in exact_findings}
    assert not any(c.scope == "user" for c in lsh)  # copies in another user's partition are never merged


def test_a_word_that_stems_to_a_negation_is_no_negation() -> None:
    """ "Note: …" stems to "not": a filler word made a copy look like the negation of its original (never merged)."""
    a, b = "Lena owns the Kafka runbook and reviews changes to it.", "Note: Lena owns the Kafka runbook and reviews changes to it."
    assert similar.conflicting(similar.words(a), similar.words(b)) == []
    assert similar.conflicting(similar.words(a), similar.words("Lena does not own the Kafka runbook and reviews changes to it.")) == ["not"]
    assert "note" in similar.words(b) and "not" not in similar.words(b)
