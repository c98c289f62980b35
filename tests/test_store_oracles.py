"""Oracles: nothing a caller sees (hits, scores, trace, errors) says anything about records it cannot see.

Without ``strict_visibility`` BM25's index-wide statistics still let the order of a caller's own
hits move with hidden records (documented in :mod:`agent_memory.backends.files.fts`); with it they cannot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_memory.backends.files.store import MemoryDraft, MemoryStore
from agent_memory.search.types import SearchResult

GUESSES = [f"{n:04d}" for n in range(4810, 4830)]
PIN = "4821"


def build(root: Path, *, with_bob: bool, strict: bool) -> MemoryStore:
    """Ada plants one record per guess in her own partition; bob's PIN is (or is not) in his."""
    store = MemoryStore(root, durable=False, strict_visibility=strict)
    drafts = [MemoryDraft(f"guess {g}", scope="user", user_id="ada", title="guess") for g in GUESSES]
    if with_bob:
        drafts.append(MemoryDraft(f"My locker number is {PIN}", scope="user", user_id="bob"))  # a bare PIN is redacted
    store.remember_many(drafts)
    return store


def attack(store: MemoryStore) -> tuple[list[tuple[str, float]], str | None]:
    """Search every guess at once as ada; the guess whose record ranks strictly last is the oracle's answer."""
    result = store.search(" ".join(GUESSES), user_id="ada", limit=len(GUESSES))
    ranked = [(h.snippet.split()[-1], h.score) for h in result.hits]
    last, before = ranked[-1], ranked[-2]
    return ranked, last[0] if last[1] < before[1] else None


def test_pin_enumeration_through_scores_works_without_strict_visibility(tmp_path):
    """The documented leak: bob's hidden record lowers the IDF of his PIN, so ada's matching guess drops."""
    ranked, guess = attack(build(tmp_path / "lax", with_bob=True, strict=False))
    assert guess == PIN
    control, no_guess = attack(build(tmp_path / "lax-control", with_bob=False, strict=False))
    assert no_guess is None and {s for _, s in control} == {1.0}


def test_pin_enumeration_fails_with_strict_visibility(tmp_path):
    """With strict_visibility, ranks and scores are identical whether or not bob's record exists."""
    with_bob = build(tmp_path / "strict", with_bob=True, strict=True)
    without = build(tmp_path / "strict-control", with_bob=False, strict=True)
    ranked, guess = attack(with_bob)
    assert guess is None
    assert sorted(ranked) == sorted(attack(without)[0])
    for query in (PIN, f"pin {PIN}", "bank pin", " ".join(GUESSES[:5])):
        a = [(h.snippet, h.score) for h in with_bob.search(query, user_id="ada", limit=50).hits]
        b = [(h.snippet, h.score) for h in without.search(query, user_id="ada", limit=50).hits]
        assert sorted(a) == sorted(b) and [x[1] for x in a] == [x[1] for x in b], query  # equal scores tie by random id
    # the per-search flag does the same on a lax store
    lax = build(tmp_path / "lax", with_bob=True, strict=False)
    assert attack_flagged(lax) is None


def attack_flagged(store: MemoryStore) -> str | None:
    hits = store.search(" ".join(GUESSES), user_id="ada", limit=len(GUESSES), strict_visibility=True).hits
    return hits[-1].snippet.split()[-1] if hits[-1].score < hits[-2].score else None


def _ints(value: Any) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, dict):
        return [i for v in value.values() for i in _ints(v)]
    if isinstance(value, (list, tuple)):
        return [i for v in value for i in _ints(v)]
    return []


def _trace_facts(trace: list[dict[str, Any]]) -> list[tuple[str, tuple[str, ...]]]:
    return [(t["stage"], tuple(sorted(t))) for t in trace]


@pytest.mark.parametrize("strict", [False, True])
def test_trace_reports_nothing_about_hidden_records(tmp_path, strict):
    lonely = build(tmp_path / "a", with_bob=False, strict=strict)
    crowded = build(tmp_path / "b", with_bob=True, strict=strict)
    crowded.remember_many([MemoryDraft(f"bank pin note {i}", scope="user", user_id="bob") for i in range(40)])
    t1 = lonely.search(f"bank pin {PIN}", user_id="ada", trace=True)
    t2 = crowded.search(f"bank pin {PIN}", user_id="ada", trace=True)
    text = repr(t2.trace)
    assert "bob" not in text and "hidden" not in text
    assert not {40, 41, 42} & set(_ints(t2.trace))  # no count of bob's matching records
    bob_ids = {r.id for r in crowded.list(user_id="bob", limit=None)}
    assert not any(rid in text for rid in bob_ids)
    assert t1.trace is not None and t2.trace is not None
    assert _trace_facts(t1.trace) == _trace_facts(t2.trace)  # same stages, same fields
    if strict:  # identical apart from the (random) record ids
        assert [h.score for h in t1.hits] == [h.score for h in t2.hits]
        strip = lambda tr: [{k: v for k, v in t.items() if k != "top"} for t in tr]  # noqa: E731
        assert strip(t1.trace) == strip(t2.trace)
        assert [[{k: v for k, v in r.items() if k != "id"} for r in t.get("top", [])] for t in t1.trace] == [
            [{k: v for k, v in r.items() if k != "id"} for r in t.get("top", [])] for t in t2.trace
        ]


def test_scores_are_readable_ordered_and_never_zero(tmp_path):
    store = MemoryStore(tmp_path / "small", durable=False)
    # "project" is in every record: FTS5 floors its IDF, so raw BM25 is ~1e-6 and used to print 0.000
    store.remember_many([MemoryDraft(f"project note {i}: {'project ' * (i % 3)}tasks") for i in range(6)])
    hits = store.search("project").hits
    assert len(hits) == 6 and hits[0].score == 1.0
    assert all(0.001 <= h.score <= 1.0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert f"{hits[-1].score:.3f}" != "0.000"
    mixed = store.search("project tasks note 3").hits
    assert mixed[0].score == 1.0 and all(0 < h.score <= 1 for h in mixed)


def test_search_result_is_one_shape(tmp_path):
    store = MemoryStore(tmp_path / "shape", durable=False)
    rid = store.remember("the one shape of a search result").id
    result = store.search("search result shape", trace=True)
    assert isinstance(result, SearchResult) and len(result) == 1 and result[0].id == rid
    assert [h.id for h in result] == [rid]
    data = result.to_dict()
    assert data["hits"][0]["id"] == rid and data["hits"][0]["score"] == 1.0 and isinstance(data["trace"], list)
    assert "trace" not in store.search("shape").to_dict()
