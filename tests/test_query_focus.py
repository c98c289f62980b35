"""Dense query focus (words half the records share are not embedded) and the dense floor stage."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_memory import MemoryDraft
from agent_memory.backends.files.fts import Fts5Engine
from agent_memory.backends.files.hybrid import hybrid_search
from agent_memory.backends.files.store import MemoryStore
from agent_memory.backends.files.vectors import VectorCache, live_items
from agent_memory.embeddings import CallableEmbedder
from agent_memory.errors import InvalidInputError
from agent_memory.search.focus import focus_query, query_words, without_words
from agent_memory.search.fusion import Candidate, QueryContext, default_pipeline
from agent_memory.search.stages import DenseFloor
from agent_memory.search.text import STOP_WORDS

ENGINE = Fts5Engine()


def test_query_words_skip_stop_words_and_keep_their_terms() -> None:
    words = query_words("What did Caroline buy for Melanie's party?", ENGINE.terms, STOP_WORDS)
    assert set(words) == {"Caroline", "buy", "Melanie's", "party"}
    assert words["Caroline"] == ENGINE.terms("Caroline")


def test_focus_drops_words_half_the_records_share_and_nothing_else() -> None:
    q = "What did Caroline buy for the party?"
    words = query_words(q, ENGINE.terms, STOP_WORDS)
    df = {"caroline": 60, "buy": 49, "party": 3}
    assert focus_query(q, words, df, 100) == ("What did buy for the party?", ["Caroline"])
    assert focus_query(q, words, {**df, "buy": 50}, 100) == ("What did for the party?", ["Caroline", "buy"])
    assert focus_query(q, words, df, 19) == (q, [])  # too few records to say what is common
    assert focus_query(q, words, {"caroline": 90, "buy": 90, "party": 90}, 100) == (q, [])  # nothing else left
    assert focus_query(q, words, df, 100, share=0.7) == (q, [])


def test_without_words_keeps_punctuation_and_spacing_sane() -> None:
    words = {"Jon's": ["jon"], "dance": ["danc"]}
    assert without_words("Where is Jon's dance studio?", {**words, "studio": ["studio"]}, {"Jon's"}) == (
        "Where is dance studio?",
        ["Jon's"],
    )
    assert without_words("Jon's dance", words, set()) == ("Jon's dance", [])


def _cand(rid: str, score: float, dense: float | None) -> Candidate:
    return Candidate(rid, score=score, dense=dense)


def test_dense_floor_puts_meanings_best_within_the_first_page() -> None:
    cands = [_cand(f"l{i}", 10.0 - i, 0.1) for i in range(12)] + [
        _cand("d1", 0.5, 0.9),
        _cand("d2", 0.4, 0.8),
        _cand("d3", 0.3, 0.7),
        _cand("d4", 0.2, 0.6),
    ]
    out = DenseFloor(top=3, within=10).apply(cands, QueryContext())
    ids = [c.id for c in out]
    assert ids[:7] == [f"l{i}" for i in range(7)] and ids[7:10] == ["d1", "d2", "d3"]  # in meaning's order
    assert ids[10:13] == ["l7", "l8", "l9"] and "d4" in ids[13:]  # the rest keeps its order, below them
    scores = [c.score for c in out]
    assert scores == sorted(scores, reverse=True) and len(set(scores[:11])) == 11  # strictly ordered
    assert {c.id: c.score for c in out}["l0"] == 10.0  # those already in place keep their score


def test_dense_floor_is_a_no_op_when_in_place_or_without_dense_scores() -> None:
    cands = [_cand("d1", 3.0, 0.9), _cand("a", 2.0, 0.1), _cand("d2", 1.0, 0.8)]
    assert [c.id for c in DenseFloor(top=2, within=3).apply(list(cands), QueryContext())] == ["d1", "a", "d2"]
    lexical_only = [_cand(f"x{i}", float(-i), None) for i in range(20)]
    assert [c.id for c in DenseFloor().apply(list(lexical_only), QueryContext())] == [f"x{i}" for i in range(20)]
    with pytest.raises(InvalidInputError):
        DenseFloor(within=0)


def test_dense_floor_when_the_page_is_smaller_than_top() -> None:
    cands = [_cand("a", 5.0, 0.0), _cand("b", 4.0, 0.0), _cand("d1", 1.0, 0.9), _cand("d2", 0.5, 0.8)]
    ids = [c.id for c in DenseFloor(top=3, within=2).apply(cands, QueryContext())]
    assert ids[:2] == ["d1", "d2"] and set(ids[2:]) == {"a", "b"}


# a toy model in which a name dominates short questions: each word is its own axis, names weigh 3
NAMES = {"caroline", "melanie"}


def _vectors(texts: list[str]) -> list[list[float]]:
    vocab = ["caroline", "melanie", "pottery", "painting", "camping", "adoption", "vase", "lake"]
    out = []
    for t in texts:
        toks = t.lower().replace("?", " ").replace(":", " ").replace(".", " ").split()
        out.append([(3.0 if w in NAMES else 1.0) * toks.count(w) + 0.01 for w in vocab])
    return out


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[tuple[MemoryStore, VectorCache, CallableEmbedder]]:
    s = MemoryStore(tmp_path / "m", durable=False, rescan_interval=None)
    cache = VectorCache(tmp_path / "m" / "vectors.db")
    emb = CallableEmbedder(_vectors, name="toy-names", dim=8)
    yield s, cache, emb
    cache.close()
    s.close()


def test_a_name_every_record_carries_does_not_steer_meaning(store: tuple[MemoryStore, VectorCache, CallableEmbedder]) -> None:
    s, cache, emb = store
    s.remember_many([MemoryDraft(f"Melanie: status update {i}") for i in range(30)])
    s.remember_many([MemoryDraft(f"Caroline: weather note {i}") for i in range(10)])
    vase = s.remember("I made a vase in my pottery class").id
    cache.backfill(live_items(s.index), emb)
    q = "What did Caroline's friend Melanie make in pottery?"
    res = hybrid_search(s, cache, emb, q, mode="dense", limit=3, trace=True)
    assert res.hits[0].id == vase  # embedded whole, "Melanie" (weight 3) ranks her 30 status updates first
    dense = next(t for t in res.trace or [] if t["stage"] == "dense")
    assert dense["focus"] == {"embedded": "What did Caroline's friend make in pottery?", "left_out": ["Melanie"]}
    whole = hybrid_search(s, cache, emb, q, mode="dense", limit=3, query_vector=emb.embed([q])[0])
    assert vase not in [h.id for h in whole.hits]  # the same search with the query embedded whole


def test_focus_counts_only_what_a_strict_caller_may_see(store: tuple[MemoryStore, VectorCache, CallableEmbedder]) -> None:
    s, cache, emb = store
    s.remember_many([MemoryDraft(f"Melanie: private note {i}", scope="session", session_id="other") for i in range(40)])
    vase = s.remember("Melanie: I made a vase in my pottery class", scope="session", session_id="mine").id
    s.remember_many([MemoryDraft(f"camping by the lake, trip {i}", scope="session", session_id="mine") for i in range(30)])
    cache.backfill(live_items(s.index), emb)
    q = "What did Melanie make in pottery?"
    loose = hybrid_search(s, cache, emb, q, mode="dense", session_id="mine", limit=3, trace=True)
    strict = hybrid_search(s, cache, emb, q, mode="dense", session_id="mine", limit=3, trace=True, strict_visibility=True)
    assert loose.hits[0].id == strict.hits[0].id == vase
    focus = [next(t for t in r.trace or [] if t["stage"] == "dense").get("focus") for r in (loose, strict)]
    assert focus[0] and focus[0]["left_out"] == ["Melanie"]  # 41 of 71 records say it
    assert focus[1] is None  # the caller sees 1 of 31 saying it: other sessions' records cannot move its query


def test_default_pipeline_ends_with_the_floor() -> None:
    p = default_pipeline()
    assert (p.fuse.weight, p.fuse.confident_at) == (0.55, 0.3) and isinstance(p.stages[-1], DenseFloor)
    assert (p.stages[-1].top, p.stages[-1].within) == (3, 10)  # type: ignore[attr-defined]
