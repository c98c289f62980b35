"""Consolidation on a large store: few chance candidates from the MinHash index, the secret lint once per text."""

from __future__ import annotations

import datetime as dt
import random

import pytest

import agent_memory.redaction.api as redact_api
from agent_memory.consolidate import similar
from agent_memory.consolidate.plan import plan_changes
from agent_memory.consolidate.report import ConsolidateOptions
from agent_memory.errors import InvalidInputError
from agent_memory.model.records import MemoryRecord, Scope, content_hash

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)


def _short_texts(n: int, seed: int = 5) -> list[str]:
    """Short unrelated texts that share function words (and so common shingles), as a large store's notes do."""
    rng = random.Random(seed)
    common = ["the", "and", "of", "to", "is", "in", "for", "on"]
    vocab = common + [f"w{i:03d}x" for i in range(400)]
    return [" ".join(rng.choice(common) if rng.random() < 0.4 else rng.choice(vocab) for _ in range(rng.randint(3, 12))) for _ in range(n)]


def test_minhash_bands_do_not_pair_unrelated_short_records() -> None:
    """Empty bins borrowed from the next bin to the right: a run of empty bins copied one value, so two short records
    sharing one common shingle agreed on a whole band (21% of all pairs of these 3,000 texts were candidates at
    Jaccard < 0.2; the comparisons grew with the square of the store)."""
    texts = _short_texts(3000)
    sh = [similar.shingles(t) for t in texts]
    pairs = similar.lsh_pairs(range(len(texts)), sh.__getitem__)
    low = sum(1 for i, j in pairs if similar.jaccard(sh[i], sh[j]) < 0.2)
    everyone = len(texts) * (len(texts) - 1) // 2
    assert low < 0.01 * everyone, (low, everyone)
    # and what is similar is still found: a copy with a typo of each of 50 texts
    copies = [t + " " for t in texts[:50]]
    sh2 = sh + [similar.shingles(c.replace("the", "teh", 1) if "the" in c else c + "!") for c in copies]
    found = similar.lsh_pairs(range(len(sh2)), sh2.__getitem__, 0.6)
    wanted = {(i, len(texts) + i) for i in range(50) if similar.jaccard(sh2[i], sh2[len(texts) + i]) >= 0.6}
    assert wanted and wanted <= found


def test_lsh_skips_pairs_whose_sizes_rule_out_the_threshold() -> None:
    """Jaccard ≤ |smaller| / |larger|: a short text and a long one that contains it are no candidate at 0.9."""
    short = "the deploy day is monday for the payments team"
    texts = [short, short + " and the search team, after the weekly standup", short + "!"]
    sh = [similar.shingles(t) for t in texts]
    assert (0, 1) in similar.lsh_pairs(range(3), sh.__getitem__)  # the index alone pairs them
    assert similar.jaccard(sh[0], sh[1]) < 0.9
    found = similar.lsh_pairs(range(3), sh.__getitem__, 0.9)
    assert (0, 1) not in found and (0, 2) in found


def test_minhash_is_dense_and_deterministic_for_a_tiny_set() -> None:
    one = similar.minhash(frozenset({"abcd"}))
    assert one is not None and len(set(one)) == 1 and len(one) == similar.LSH_BANDS * similar.LSH_ROWS
    two = similar.minhash(frozenset({"abcd", "bcde"}))
    assert two == similar.minhash(frozenset({"bcde", "abcd"})) and two is not None and len(set(two)) == 2


def _record(n: int, text: str, title: str) -> MemoryRecord:
    return MemoryRecord(
        id=f"r{n:05d}",
        content=text,
        title=title,
        scope=Scope.PROJECT,
        created="2026-01-01T00:00:00Z",
        updated="2026-01-01T00:00:00Z",
        content_hash=content_hash(text),
    )


def test_secret_lint_reads_each_distinct_text_once_and_can_be_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    recs = [_record(n, f"note {n % 5} about the deploy", "deploy notes") for n in range(40)]
    recs.append(_record(40, "aws key AKIAQ3EGUL5TNV7XW2PD for the build", "deploy notes"))
    seen: list[str] = []
    real = redact_api.contains_secret

    def counting(text: str, *, general: bool = True) -> bool:
        seen.append(text)
        return real(text, general=general)

    monkeypatch.setattr(redact_api, "contains_secret", counting)
    _, findings, _ = plan_changes(recs, ConsolidateOptions(rules=()), now=NOW, root=None, recalled=None)
    assert [f.record_ids for f in findings if f.kind == "secret"] == [["r00040"]]
    assert sorted(seen) == sorted({r.content for r in recs} | {"deploy notes"})  # 7 texts, not 82
    seen.clear()
    _, findings, _ = plan_changes(recs, ConsolidateOptions(rules=(), lint_secrets=False), now=NOW, root=None, recalled=None)
    assert not seen and not [f for f in findings if f.kind == "secret"]
    with pytest.raises(InvalidInputError, match="lint_secrets"):
        ConsolidateOptions(lint_secrets="no")  # type: ignore[arg-type]


def test_one_occurrence_of_a_repeated_word_replaced_is_a_contradiction_not_a_duplicate() -> None:
    """The 22–25 planted contradictions merged at 100k records: the word replaced occurred twice (once capitalised or
    with punctuation), so the word *set* of the original stayed whole and the copy looked like an addition."""
    a = "Kofi reviews the Kafka runbook. Then kofi merges the changes on Friday."
    b = "Kofi reviews the Kafka runbook. Then Lena merges the changes on Friday."
    assert similar.words(b) > similar.words(a)  # as sets, b only adds "lena"
    assert similar.conflicting(similar.word_counts(a), similar.word_counts(b)) == ["kofi", "lena"]
    assert similar.conflicting(similar.word_counts(a), similar.word_counts(a + " Kofi")) == []  # a repeat adds, replaces nothing
    recs = [_record(0, a, "t"), _record(1, b, "t"), _record(2, a.replace("Friday", "friday!"), "t")]
    changes, findings, _ = plan_changes(recs, ConsolidateOptions(rules=("merge",), max_share=1.0), now=NOW, root=None, recalled=None)
    assert [(c.record_id, c.related) for c in changes] == [("r00000", ["r00002"])]  # the true copy merges, b stays
    assert [sorted(f.record_ids) for f in findings if f.kind == "contradiction"] == [["r00000", "r00001", "r00002"]]
    assert similar.contradictions([a, b]) == [([0, 1], ["kofi", "lena"])]
