"""The scoring pipeline: fusion methods, each stage's effect, the trace, and the paraphrase fixture."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agent_memory.backends.files.fts import Fts5Engine
from agent_memory.backends.files.hybrid import index_confidence
from agent_memory.embeddings import local_model_available
from agent_memory.errors import InvalidInputError
from agent_memory.search.fusion import (
    EMBED_AT_QUERY,
    MMR,
    CosineRerank,
    Fuse,
    ImportanceWeight,
    LengthNorm,
    MinScore,
    Pipeline,
    QueryContext,
    RecencyBoost,
    TimeDecay,
    default_pipeline,
    lexical_confidence,
    to_embed,
)
from agent_memory.search.text import STOP_WORDS, term_key

FIXTURE = Path(__file__).parent / "fixtures" / "paraphrase_pairs.json"
NOW = dt.datetime(2026, 11, 23, tzinfo=dt.UTC)

LEX = [("a", 9.0), ("b", 6.0), ("c", 5.5), ("d", 5.0)]
DENSE = [("z", 0.80), ("c", 0.55), ("a", 0.30), ("y", 0.25)]


def order(cands: list[Any]) -> list[str]:
    return [c.id for c in cands]


def test_zscore_fusion_follows_lexical_when_confident_and_meaning_when_not() -> None:
    fuse = Pipeline(Fuse())
    confident = order(fuse.run(LEX, DENSE, QueryContext(confidence=0.9)))
    weak = order(fuse.run(LEX, DENSE, QueryContext(confidence=0.05)))
    assert confident[0] == "a" and set(confident) == {"a", "b", "c", "d", "y", "z"}
    assert weak[0] == "z"  # the record only meaning finds wins when the words barely match
    assert weak[:3] == ["z", "c", "a"] and confident[:3] == ["a", "z", "c"]


def test_lexical_only_when_no_dense_hits() -> None:
    assert order(Pipeline(Fuse()).run(LEX, [])) == ["a", "b", "c", "d"]
    assert order(Pipeline(Fuse()).run([], DENSE)) == ["z", "c", "a", "y"]


def test_rrf_and_convex() -> None:
    rrf = Pipeline(Fuse(method="rrf", k=60)).run(LEX, DENSE)
    scores = {c.id: c.score for c in rrf}
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 63) and scores["z"] == pytest.approx(1 / 61)
    assert order(rrf)[:2] == ["a", "c"]
    convex = {c.id: c.score for c in Pipeline(Fuse(method="convex", weight=0.5)).run(LEX, DENSE)}
    assert convex["a"] == pytest.approx(0.5 * 1.0 + 0.5 * 0.30)
    assert convex["z"] == pytest.approx(0.5 * 0.80)


def test_dense_scores_fill_in_cosines_for_lexical_only_hits() -> None:
    asked: list[list[str]] = []

    def lookup(ids: Any) -> dict[str, float]:
        asked.append(sorted(ids))
        return {"b": 0.9, "d": 0.1}

    out = Pipeline(Fuse(dense_scores=lookup)).run(LEX, DENSE, QueryContext(confidence=0.9))
    assert asked == [["b", "d"]]
    b = next(c for c in out if c.id == "b")
    assert b.dense == 0.9 and order(out).index("b") < order(out).index("d")


def test_a_lexical_hit_without_a_vector_is_neutral_on_the_dense_side_not_the_worst() -> None:
    """No vector is no dense evidence: its dense z is never below 0 (the mean), not the lowest candidate's (a bad
    cosine); when the candidates' lowest z is above the mean (test_zscore_uses_…) it keeps that."""
    lex = [("kw", 2.0), ("other", 1.0)]
    dense = [("near", 0.9), ("other", 0.5), ("far", 0.1)]
    fuse = Fuse(weight=0.5, dense_scores=lambda ids: {})  # "kw" has no vector
    ctx = QueryContext(confidence=0.9, dense_mean=0.5, dense_std=0.2)
    kw = next(c for c in fuse.fuse(lex, dense, ctx) if c.id == "kw")
    assert kw.dense is None and kw.score == pytest.approx(0.5 * 1.0 + 0.5 * 0.0)
    # without a lookup, missing from the dense top list still means far: that side's lowest z
    kw = next(c for c in Fuse(weight=0.5).fuse(lex, dense, ctx) if c.id == "kw")
    assert kw.score == pytest.approx(0.5 * 1.0 + 0.5 * (0.1 - 0.5) / 0.2)


def test_to_embed_takes_the_best_lexical_candidates_without_a_vector_bounded() -> None:
    ids = [f"r{i}" for i in range(100)]
    assert to_embed(ids, lambda rid: rid in {"r0", "r2"})[:2] == ["r1", "r3"]
    assert len(to_embed(ids, lambda rid: False)) == EMBED_AT_QUERY == 32


def test_trace_records_each_stage_in_out_and_changes() -> None:
    trace: list[dict[str, Any]] = []
    pipe = Pipeline(Fuse(), [CosineRerank(weight=0.5), MinScore(threshold=0.28, signal="dense", keep_if_both=False)])
    out = pipe.run(LEX, DENSE, QueryContext(confidence=0.9), trace=trace)
    assert [t["stage"] for t in trace] == ["fuse", "cosine_rerank", "min_score"]
    assert trace[0]["in"] == {"lexical": 4, "dense": 4} and trace[0]["out"] == 6 and trace[0]["confidence"] == 0.9
    assert trace[0]["params"]["method"] == "zscore"
    assert trace[1]["changed"] == 4 and trace[1]["dropped"] == []  # only candidates with a cosine move
    assert sorted(trace[2]["dropped"]) == ["y"] and trace[2]["out"] == 5 and trace[2]["in"] == 6
    assert "y" not in order(out)
    top = trace[1]["top"][0]
    assert {"id", "score", "before"} <= set(top)


def test_min_score_keeps_records_both_sides_found() -> None:
    out = Pipeline(Fuse(), [MinScore(threshold=0.5)]).run(LEX, DENSE, QueryContext(confidence=0.9))
    assert set(order(out)) == {"a", "b", "c", "d", "z"}  # y dropped (dense only, 0.25); a kept (found by both)


def _flat(n: int) -> list[tuple[str, float]]:
    return [(f"r{i}", 1.0) for i in range(n)]


def test_recency_boost_and_time_decay_prefer_newer() -> None:
    info = {"r0": {"updated": "2020-01-01T00:00:00Z"}, "r1": {"updated": "2026-11-20T00:00:00Z"}, "r2": {"updated": "2026-06-01T00:00:00Z"}}
    lex = [("r0", 5.0), ("r1", 4.9), ("r2", 4.8)]
    ctx = QueryContext(now=NOW)
    boosted = Pipeline(Fuse(), [RecencyBoost(weight=1.0, half_life_days=30)]).run(lex, [], ctx, info=info)
    assert order(boosted)[0] == "r1"
    decayed = Pipeline(Fuse(), [TimeDecay(half_life_days=90, floor=0.0)]).run(lex, [], ctx, info=info)
    assert order(decayed) == ["r1", "r2", "r0"]
    plain = Pipeline(Fuse()).run(lex, [], ctx, info=info)
    assert order(plain) == ["r0", "r1", "r2"]


def test_importance_and_length_norm() -> None:
    lex = [("r0", 5.0), ("r1", 4.95), ("r2", 4.9)]
    info: dict[str, dict[str, Any]] = {
        "r0": {"importance": 0.1, "length": 3000},
        "r1": {"importance": 0.9, "length": 200},
        "r2": {"length": 100},
    }
    imp = Pipeline(Fuse(), [ImportanceWeight(weight=4.0)]).run(lex, [], info=info)
    assert order(imp) == ["r1", "r2", "r0"]
    short = Pipeline(Fuse(), [LengthNorm(pivot=400, strength=0.5)]).run(lex, [], info=info)
    assert order(short)[-1] == "r0" and order(short)[:2] == ["r1", "r2"]


def test_mmr_pushes_near_duplicates_down() -> None:
    v = {"a": [1.0, 0.0], "b": [0.999, 0.045], "c": [0.0, 1.0]}
    info = {k: {"vector": np.asarray(x, dtype=np.float32)} for k, x in v.items()}
    lex = [("a", 3.0), ("b", 2.9), ("c", 2.5)]
    assert order(Pipeline(Fuse()).run(lex, [], info=info)) == ["a", "b", "c"]
    assert order(Pipeline(Fuse(), [MMR(lambda_=0.5)]).run(lex, [], info=info)) == ["a", "c", "b"]
    no_vec = Pipeline(Fuse(), [MMR(lambda_=0.5)]).run(lex, [])
    assert order(no_vec) == ["a", "b", "c"]  # without vectors MMR leaves the order alone


@pytest.mark.parametrize(
    "make",
    [
        lambda: Fuse(method="nope"),  # type: ignore[arg-type]
        lambda: Fuse(weight=1.5),
        lambda: Fuse(method="rrf", k=0),
        lambda: TimeDecay(half_life_days=0),
        lambda: TimeDecay(floor=2.0),
        lambda: RecencyBoost(half_life_days=-1),
        lambda: MMR(lambda_=1.2),
        lambda: LengthNorm(pivot=0),
    ],
)
def test_bad_parameters_are_typed_errors(make: Any) -> None:
    with pytest.raises(InvalidInputError):
        make()


def test_lexical_confidence_is_idf_weighted_coverage() -> None:
    idf = {term_key("caroline"): 0.5, term_key("adoption"): 3.0, term_key("agency"): 2.5}
    q = ["caroline", "adoption", "agency"]
    assert lexical_confidence(q, ["caroline went to the adoption agency"], idf) == pytest.approx(1.0)
    assert lexical_confidence(q, ["caroline had lunch", "nothing"], idf) == pytest.approx(0.5 / 6.0)
    assert lexical_confidence(q, [], idf) == 0.0 and lexical_confidence([], ["x"], idf) == 0.0


def test_index_confidence_reads_idf_and_bodies_from_the_index(tmp_path: Path) -> None:
    from agent_memory.backends.files.store import MemoryStore

    store = MemoryStore(tmp_path / "m", durable=False, rescan_interval=None)
    for i in range(20):
        store.remember(f"caroline said hello number {i}")
    rare = store.remember("caroline visited the adoption agency").id
    common = store.remember("caroline said hello again").id
    engine = Fts5Engine()
    q = "When did Caroline visit the adoption agency?"
    full = index_confidence(store.index, engine, q, [rare])
    weak = index_confidence(store.index, engine, q, [common])
    store.close()
    assert full == pytest.approx(1.0)
    assert 0.0 < weak < 0.15  # the common name carries little weight next to the rare words


# -- the paraphrase fixture --------------------------------------------------------------
def _pairs() -> list[dict[str, str]]:
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return list(data["pairs"])


def _content_keys(text: str) -> set[str]:
    return {term_key(t) for t in Fts5Engine().terms(text) if t not in STOP_WORDS}


def test_paraphrase_fixture_pairs_share_no_content_word() -> None:
    pairs = _pairs()
    assert len(pairs) >= 200
    assert len({p["fact"] for p in pairs}) == len(pairs) and len({p["question"] for p in pairs}) == len(pairs)
    shared = [(p["fact"], p["question"], _content_keys(p["fact"]) & _content_keys(p["question"])) for p in pairs]
    assert [s for s in shared if s[2]] == []


@pytest.mark.skipif(not local_model_available(), reason="local embedding model not installed")
def test_hybrid_finds_paraphrases_lexical_misses(tmp_path: Path) -> None:
    """On the fixture, hybrid recall@5 beats lexical by far and never trails dense by much."""
    from agent_memory.backends.files.store import MemoryStore
    from agent_memory.backends.files.vectors import VectorCache, live_items, visible_hashes
    from agent_memory.embeddings import LocalEmbedder

    pairs = _pairs()
    store = MemoryStore(tmp_path / "m", durable=False, rescan_interval=None)
    ids = [store.remember(p["fact"]).id for p in pairs]
    emb = LocalEmbedder()
    cache = VectorCache.for_root(store.root)
    assert cache.backfill(live_items(store.index), emb).embedded == len(pairs)
    allowed = visible_hashes(store.index)
    Q = emb.embed([p["question"] for p in pairs])
    hits = {"lexical": 0, "dense": 0, "hybrid": 0}
    pipe = default_pipeline()
    engine = Fts5Engine()
    for i, p in enumerate(pairs):
        lex = [(h.id, h.score) for h in store.search(p["question"], limit=50).hits]
        dense = cache.search(emb.name, Q[i], allowed, limit=50)
        conf = index_confidence(store.index, engine, p["question"], [r for r, _ in lex[:5]])
        hyb = pipe.run(lex, dense, QueryContext(confidence=conf), limit=5)
        hits["lexical"] += ids[i] in [r for r, _ in lex[:5]]
        hits["dense"] += ids[i] in [r for r, _ in dense[:5]]
        hits["hybrid"] += ids[i] in order(hyb)
    store.close()
    n = len(pairs)
    assert hits["lexical"] / n < 0.2
    assert hits["dense"] / n > 0.6
    assert hits["hybrid"] / n >= 2 * hits["lexical"] / n and hits["hybrid"] >= 0.8 * hits["dense"]


def test_zscore_uses_the_query_cosine_distribution_when_given() -> None:
    """With the cosine mean/std over all records, a lexical-only hit is scored by its own cosine, not the floor."""
    ctx = QueryContext(confidence=0.9, dense_mean=0.1, dense_std=0.1)
    fuse = Fuse(dense_scores=lambda ids: {"b": 0.6})
    out = {c.id: c for c in Pipeline(fuse).run(LEX, DENSE, ctx)}
    a = fuse.weight
    assert out["z"].score == pytest.approx(a * min(_lz().values()) + (1 - a) * (0.80 - 0.1) / 0.1)
    assert out["b"].score == pytest.approx(a * _lz()["b"] + (1 - a) * (0.6 - 0.1) / 0.1)
    assert out["d"].score == pytest.approx(a * _lz()["d"] + (1 - a) * (0.25 - 0.1) / 0.1)  # floor: lowest cosine z


def _lz() -> dict[str, float]:
    vals = np.array([s for _, s in LEX])
    return {r: float((s - vals.mean()) / vals.std()) for r, s in LEX}
