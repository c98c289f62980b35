"""MemoryStore(embedder=…): search modes, derived vectors that never delay a write, scopes on the dense side."""

from __future__ import annotations

import numpy as np
import pytest

from agent_memory import InvalidInputError, MemoryStore
from agent_memory.embeddings import CallableEmbedder

CONCEPTS = {"car": 0, "automobile": 0, "vehicle": 0, "plant": 1, "water": 1, "garden": 1, "flight": 2, "airport": 2}


def concept_vectors(texts: list[str]) -> np.ndarray:
    """A toy embedder that knows synonyms: each text is the sum of its words' concept axes (plus a small bias)."""
    out = np.full((len(texts), 4), 0.01, dtype=np.float32)
    for i, text in enumerate(texts):
        for word in text.lower().replace(".", " ").split():
            if word in CONCEPTS:
                out[i, CONCEPTS[word]] += 1.0
    return out


@pytest.fixture
def store(tmp_path):
    s = MemoryStore(tmp_path / "m", durable=False, embedder=CallableEmbedder(concept_vectors, name="toy-concepts"))
    yield s
    s.close()


def test_hybrid_finds_other_words_lexical_cannot(store):
    car = store.remember("Ada bought a new car last week.", user_id="ada")
    store.remember("The office plant needs water on Mondays.")
    assert store.search("automobile", user_id="ada", mode="lexical").hits == []
    report = store.embed()
    assert report.embedded == 2 and report.error is None
    assert [h.id for h in store.search("automobile", user_id="ada").hits][:1] == [car.id]  # hybrid is the default
    assert [h.id for h in store.search("automobile", user_id="ada", mode="dense").hits][:1] == [car.id]


def test_dense_side_obeys_scopes(store):
    car = store.remember("Ada bought a new car last week.", user_id="ada")
    store.embed()
    for mode in ("dense", "hybrid"):
        assert car.id not in [h.id for h in store.search("automobile vehicle", user_id="bob", mode=mode).hits]


def test_a_write_never_waits_for_vectors_and_stays_searchable_lexically(store):
    rec = store.remember("Flight to Lisbon leaves from terminal two.")
    assert [h.id for h in store.search("Lisbon terminal", mode="lexical").hits] == [rec.id]
    assert [h.id for h in store.search("Lisbon terminal").hits][:1] == [rec.id]  # not embedded yet: lexical still finds it
    assert store.embed().embedded == 1 and store.embed().embedded == 0  # caught up once, then nothing to do


def test_modes_need_an_embedder(tmp_path):
    plain = MemoryStore(tmp_path / "p", durable=False)
    with pytest.raises(InvalidInputError, match="needs an embedder"):
        plain.search("anything", mode="hybrid")
    with pytest.raises(InvalidInputError, match="mode must be one of"):
        plain.search("anything", mode="semantic")
    with pytest.raises(InvalidInputError):
        plain.embed()
    assert plain.search("anything").hits == []  # the default stays lexical without an embedder


def test_eval_locomo_search_modes(tmp_path):
    """`eval locomo --search hybrid` embeds the turns and finds evidence asked for in other words."""
    import json

    from agent_memory.eval.locomo import evaluate

    sample = {
        "sample_id": "toy",
        "conversation": {
            "session_1": [
                {"speaker": "Ada", "dia_id": "D1:1", "text": "I finally bought a car yesterday."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Our garden plant needs water daily."},
                {"speaker": "Ada", "dia_id": "D1:3", "text": "My flight leaves from the airport at noon."},
            ]
        },
        "qa": [{"question": "Which automobile news?", "evidence": ["D1:1"], "category": 4}],
    }
    path = tmp_path / "toy.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    embedder = CallableEmbedder(concept_vectors, name="toy-concepts")
    lexical = evaluate(path, ks=(1,))
    hybrid = evaluate(path, ks=(1,), search="hybrid", embedder=embedder)
    assert lexical["overall"]["recall@1"] == 0.0 and hybrid["overall"]["recall@1"] == 1.0
    with pytest.raises(ValueError):
        evaluate(path, ks=(1,), search="semantic")


def test_a_search_of_a_store_without_vectors_creates_no_vector_cache(store):
    """A read writes nothing: hybrid and dense search of a store that has no vectors made ``vectors.db`` and
    ``vectors.db-snap/`` (new-user probe); the vector cache now reads an absent file as empty."""
    rec = store.remember("we adopted a puppy")
    before = sorted(p.name for p in store.root.iterdir())
    assert [h.id for h in store.search("puppy", mode="hybrid").hits] == [rec.id]
    assert store.search("puppy", mode="dense").hits == []
    assert sorted(p.name for p in store.root.iterdir()) == before
    assert store.embed().embedded == 1 and (store.root / "vectors.db").is_file()  # the first write makes it
