"""Fusion that follows lexical strength: lexical leads when its best hit carries the query's rare words,
meaning leads when it does not; importance is a default stage; scores stay in (0, 1]."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from _doubles import concept_vectors_for

from agent_memory.backends.files.hybrid import hybrid_search, index_strength
from agent_memory.backends.files.store import MemoryStore
from agent_memory.backends.files.vectors import VectorCache, live_items
from agent_memory.embeddings import CallableEmbedder
from agent_memory.errors import InvalidInputError
from agent_memory.search.fusion import Fuse, QueryContext, default_pipeline, lexical_strength

# a toy "meaning": words map to concepts, so synonyms share a dimension; other words add a little noise
CONCEPTS = {
    "car": 0,
    "automobile": 0,
    "vehicle": 0,
    "bought": 1,
    "purchase": 1,
    "purchased": 1,
    "puppy": 2,
    "adopted": 2,
    "zeppelin": 3,
    "hangar": 3,
}


concept_vectors = concept_vectors_for(CONCEPTS)


def test_lexical_weight_ramps_between_its_bounds() -> None:
    fuse = Fuse(weight=0.7, weak_weight=0.0, ramp_from=0.05, confident_at=0.25)
    weights = [fuse.lexical_weight(QueryContext(confidence=c)) for c in (0.0, 0.05, 0.10, 0.15, 0.25, 0.9)]
    assert weights[0] == weights[1] == 0.0 and weights[-2] == weights[-1] == 0.7
    assert weights[2] == pytest.approx(0.175) and weights[3] == pytest.approx(0.35)
    assert fuse.lexical_weight(QueryContext(confidence=None)) == 0.7  # unknown strength: lexical leads
    gate = Fuse(weight=0.7, weak_weight=0.2, ramp_from=0.3, confident_at=0.3)  # equal bounds: a hard gate
    assert [gate.lexical_weight(QueryContext(confidence=c)) for c in (0.29, 0.3)] == [0.2, 0.7]
    with pytest.raises(InvalidInputError):
        Fuse(ramp_from=0.4, confident_at=0.3)
    with pytest.raises(InvalidInputError):
        Fuse(ramp_from=-0.1)


def test_lexical_strength_is_the_best_score_over_the_query_idf_mass() -> None:
    assert lexical_strength(2.0, [4.0, 4.0]) == pytest.approx(0.25)
    assert lexical_strength(50.0, [1.0]) == 1.0  # capped
    assert lexical_strength(0.0, [3.0]) == 0.0 and lexical_strength(1.0, []) == 0.0
    assert lexical_strength(1.0, [-1.0, 2.0]) == pytest.approx(0.5)  # negative IDF counts as 0


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[tuple[MemoryStore, VectorCache, CallableEmbedder]]:
    s = MemoryStore(tmp_path / "m", durable=False, rescan_interval=None)
    filler = [
        "the weather was mild today",
        "meeting notes about the quarterly plan",
        "lunch was at noon",
        "the printer on floor two is broken",
        "a reminder to water the plants",
        "music playlist for focus",
    ]
    for text in filler:
        s.remember(text)
    yield s, VectorCache.for_root(s.root), CallableEmbedder(concept_vectors, name="concepts")
    s.close()


def _fill(s: MemoryStore, cache: VectorCache, emb: CallableEmbedder) -> None:
    cache.backfill(live_items(s.index), emb)


def test_a_rare_exact_word_keeps_lexical_first(store: tuple[MemoryStore, VectorCache, CallableEmbedder]) -> None:
    s, cache, emb = store
    exact = s.remember("the zeppelin hangar code is kept by Ada").id
    s.remember("she purchased an automobile")  # close in meaning to nothing asked here
    _fill(s, cache, emb)
    res = hybrid_search(s, cache, emb, "zeppelin hangar", trace=True)
    assert res.hits[0].id == exact and res.hits[0].score == 1.0
    fuse = next(t for t in res.trace or [] if t["stage"] == "fuse")
    assert fuse["confidence"] >= 0.25  # strong lexical evidence: lexical leads


def test_weak_lexical_evidence_lets_meaning_lead(store: tuple[MemoryStore, VectorCache, CallableEmbedder]) -> None:
    s, cache, emb = store
    car = s.remember("I bought a car last week").id
    decoys = {s.remember(f"purchase order {n} for the office is in the blue folder").id for n in range(4)}
    _fill(s, cache, emb)
    q = "which vehicle did they purchase"  # its rare word matches nothing; its common one, unrelated records
    lexical = [h.id for h in s.search(q).hits]
    assert lexical and set(lexical) <= decoys and car not in lexical
    res = hybrid_search(s, cache, emb, q, trace=True)
    assert res.hits[0].id == car
    fuse = next(t for t in res.trace or [] if t["stage"] == "fuse")
    assert fuse["confidence"] < 0.25
    # the best hit's figure is the query's match quality (search/floor.py), no longer always 1
    assert all(0 < h.score <= res.hits[0].score <= 1 for h in res.hits) and res.hits[0].score > 0.5


def test_index_strength_uses_the_fts_document_frequencies(store: tuple[MemoryStore, VectorCache, CallableEmbedder]) -> None:
    s, _, _ = store
    s.remember("the zeppelin hangar code is kept by Ada")
    raw = s.engine.ranked(s.index, _req("zeppelin"))  # type: ignore[attr-defined]
    assert raw, "the engine ranks raw BM25 scores without building hits"
    n = s.index.count()
    expected = min(1.0, raw[0][0] / math.log((n + 1) / 1.5))
    assert index_strength(s.index, s.engine, "zeppelin", raw[0][0]) == pytest.approx(expected)  # type: ignore[arg-type]


def _req(q: str) -> object:
    from agent_memory.search.types import SearchRequest

    return SearchRequest(query=q, limit=10)


def test_importance_is_a_default_stage_and_breaks_ties(store: tuple[MemoryStore, VectorCache, CallableEmbedder]) -> None:
    s, cache, emb = store
    low = s.remember("we adopted a puppy named Rex", importance=0.1).id
    high = s.remember("we adopted a puppy named Max", importance=0.9).id
    _fill(s, cache, emb)
    assert [type(st).__name__ for st in default_pipeline().stages] == ["ImportanceWeight", "DenseFloor"]
    res = hybrid_search(s, cache, emb, "puppy adopted", trace=True)
    ids = [h.id for h in res.hits]
    assert ids.index(high) < ids.index(low)
    stage = next(t for t in res.trace or [] if t["stage"] == "importance")
    assert stage["changed"] >= 2 and stage["params"]["weight"] > 0
    plain = hybrid_search(s, cache, emb, "puppy adopted", pipeline=default_pipeline().__class__(Fuse()))
    assert {h.id for h in plain.hits[:2]} == {low, high}


def test_dense_candidates_obey_scopes_with_the_coarse_pass(
    store: tuple[MemoryStore, VectorCache, CallableEmbedder], monkeypatch: pytest.MonkeyPatch
) -> None:
    import agent_memory.backends.files.vectors as vectors
    import agent_memory.search.focus as focus
    from agent_memory import MemoryDraft

    monkeypatch.setattr(focus, "COMMON_SHARE", 2.0)  # the query embedded whole: this is about visibility, not focus
    s, cache, emb = store
    hidden = {
        r.id
        for r in s.remember_many(
            [MemoryDraft(f"she purchased an automobile, note {i}", scope="session", session_id="other") for i in range(300)]
        )
    }
    mine = s.remember("I bought a car last week", scope="session", session_id="mine").id
    _fill(s, cache, emb)
    monkeypatch.setattr(vectors, "COARSE_MIN", 50)  # the projected pass, over mostly hidden nearest vectors
    for mode in ("dense", "hybrid"):
        res = hybrid_search(s, cache, emb, "which vehicle did they purchase", mode=mode, session_id="mine", limit=20)  # type: ignore[arg-type]
        got = [h.id for h in res.hits]
        assert got[0] == mine and not hidden & set(got), mode
    other = hybrid_search(s, cache, emb, "which vehicle did they purchase", mode="dense", session_id="other", limit=5)
    assert {h.id for h in other.hits} <= hidden
