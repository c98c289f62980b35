"""Contextual search with meaning: message vectors beside the logs, hybrid fusion, scope, invalidation, fail-open."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from agent_memory.embeddings import CallableEmbedder, EmbeddingError, local_model_available
from agent_memory.sessions import SessionStore, contextual_search, purge_sessions, search_sessions
from agent_memory.sessions._dense import SessionVectors, clear_memory

# a toy "meaning": words map to concepts, so "cities" and "Porto" share a dimension and no word
CONCEPTS = {
    "cities": 0,
    "city": 0,
    "porto": 0,
    "kyoto": 0,
    "town": 0,
    "visit": 1,
    "visited": 1,
    "trip": 1,
    "flew": 1,
    "went": 1,
    "holiday": 1,
    "pottery": 2,
    "clay": 2,
    "bowl": 2,
    "painting": 3,
    "canvas": 3,
    "dentist": 4,
    "tooth": 4,
}


def concepts(texts: list[str]) -> list[list[float]]:
    """Concept counts; the context a message is embedded with (after "(replying to") counts a fifth."""
    out = []
    for t in texts:
        v = [0.0] * 10
        own, _, context = t.partition("(replying to")
        for part, weight in ((own, 1.0), (context, 0.2)):
            for w in part.lower().replace("?", " ").replace(".", " ").replace(",", " ").replace(":", " ").split():
                if w in CONCEPTS:
                    v[CONCEPTS[w]] += weight
                else:
                    v[5 + int(hashlib.md5(w.encode()).hexdigest(), 16) % 5] += 0.05 * weight
        out.append(v)
    return out


class Counting:
    """A concept embedder that counts the texts it embeds (and can be made to fail)."""

    def __init__(self, name: str = "concepts") -> None:
        self.calls: list[list[str]] = []
        self.fail = False
        self.inner = CallableEmbedder(self._embed, name=name)
        self.name = name

    def _embed(self, texts: list[str]) -> list[list[float]]:
        if self.fail:
            raise RuntimeError("model down")
        self.calls.append(list(texts))
        return concepts(texts)

    @property
    def dim(self) -> int:
        return 10

    def embed(self, texts: Any) -> Any:
        return self.inner.embed(texts)

    async def aembed(self, texts: Any) -> Any:
        return await self.inner.aembed(texts)

    @property
    def texts(self) -> int:
        return sum(len(c) for c in self.calls)


QUESTION = "Which cities has Ada been to?"


def _fill(store: SessionStore) -> None:
    store.append(
        "s1",
        [
            {"role": "user", "speaker": "Ada", "text": "Back from Porto, the tiles are lovely.", "at": "2024-03-02T10:00:00Z"},
            {"role": "user", "speaker": "Ben", "text": "Nice, did you eat well?", "at": "2024-03-02T10:00:05Z"},
            {"role": "user", "speaker": "Ada", "text": "I started a pottery class, my first bowl cracked.", "at": "2024-03-02T10:00:09Z"},
        ],
        user_id="ada",
    )
    store.append(
        "s2",
        [
            {
                "role": "user",
                "speaker": "Ada",
                "text": "Has anyone been to the dentist lately? My tooth hurts.",
                "at": "2024-05-10T09:00:00Z",
            },
            {"role": "user", "speaker": "Ben", "text": "Been busy with painting on canvas.", "at": "2024-05-10T09:00:03Z"},
            {"role": "user", "speaker": "Ada", "text": "Kyoto in spring was magical.", "at": "2024-05-10T09:00:07Z"},
        ],
        user_id="ada",
    )
    store.append(
        "s3",
        [
            {"role": "user", "speaker": "Ada", "text": "Who has been to the new bakery? Ada has been twice.", "at": "2024-06-01T08:00:00Z"},
        ],
        user_id="ada",
    )


@pytest.fixture()
def store(tmp_path: Path) -> SessionStore:
    clear_memory()
    s = SessionStore(tmp_path / "m", durable=False)
    _fill(s)
    return s


def _ids(result: Any) -> list[str]:
    return [h.id for h in result.hits]


def test_hybrid_finds_a_paraphrased_answer_spread_over_two_sessions(store: SessionStore) -> None:
    emb = Counting()
    lexical = _ids(contextual_search(store, QUESTION, user_id="ada", limit=3))
    hybrid = contextual_search(store, QUESTION, user_id="ada", limit=3, embedder=emb, trace=True)
    # the answers share no word with the question: lexical search ranks the "been to" messages instead
    assert "s1#1" not in lexical[:2] and "s2#3" not in lexical[:2]
    assert {"s1#1", "s2#3"} <= set(_ids(hybrid)[:2])
    stages = [step["stage"] for step in hybrid.trace or []]
    assert "dense" in stages and "fuse" in stages
    dense = contextual_search(store, QUESTION, user_id="ada", limit=2, embedder=emb, search="dense")
    assert set(_ids(dense)) == {"s1#1", "s2#3"}


def test_lexical_path_is_unchanged_without_an_embedder(store: SessionStore) -> None:
    emb = Counting()
    plain = contextual_search(store, QUESTION, user_id="ada", limit=5, trace=True)
    asked = contextual_search(store, QUESTION, user_id="ada", limit=5, embedder=emb, search="lexical", trace=True)
    assert [(h.id, h.score) for h in plain.hits] == [(h.id, h.score) for h in asked.hits]
    assert emb.texts == 0  # lexical never embeds
    assert [s["stage"] for s in plain.trace or []] == ["sessions", "messages"]


def test_embedder_failure_falls_back_to_the_lexical_ranking(store: SessionStore) -> None:
    emb = Counting()
    emb.fail = True
    plain = contextual_search(store, QUESTION, user_id="ada", limit=5)
    failed = contextual_search(store, QUESTION, user_id="ada", limit=5, embedder=emb, trace=True)
    assert _ids(failed) == _ids(plain)
    assert any(s.get("fallback") == "lexical" for s in failed.trace or [])
    assert search_sessions(store, QUESTION, user_id="ada", embedder=emb)  # the tool's path fails open too


def test_vectors_are_cached_beside_the_log_and_invalidated_when_it_changes(store: SessionStore, tmp_path: Path) -> None:
    emb = Counting()
    contextual_search(store, QUESTION, user_id="ada", embedder=emb)
    first = emb.texts
    assert first == 7 + 4 + 1  # seven messages, the sentences of the two with two each, the query (no summaries yet)
    files = sorted((tmp_path / "m").rglob("vectors-*.npz"))
    assert len(files) == 3 and all(f.parent.name in ("s1", "s2", "s3") for f in files)
    clear_memory()  # a new process: vectors come from the files, only the query is embedded
    contextual_search(store, QUESTION, user_id="ada", embedder=emb)
    assert emb.texts == first + 1
    store.append("s1", [{"role": "user", "speaker": "Ben", "text": "Porto is a fine town.", "at": "2024-03-02T10:01:00Z"}], user_id="ada")
    contextual_search(store, QUESTION, user_id="ada", embedder=emb)
    assert emb.calls[-2] == ["Ben: Porto is a fine town.\n(replying to Ada: I started a pottery class, my first bowl cracked.)"]
    log = tmp_path / "m" / "sessions" / "ada" / "s2" / "log.jsonl"  # a hand edit of one message
    lines = log.read_text().splitlines()
    row = json.loads(lines[2])
    row["text"] = "Kyoto and Porto, both magical."
    lines[2] = json.dumps(row)
    log.write_text("\n".join(lines) + "\n")
    clear_memory()
    contextual_search(store, QUESTION, user_id="ada", embedder=emb)
    assert [t.split("\n")[0] for t in emb.calls[-2]] == ["Ada: Kyoto and Porto, both magical."]
    with __import__("numpy").load(next(f for f in files if f.parent.name == "s2")) as data:
        assert len(data["keys"]) == 3 + 2  # the old text's vector was dropped, not kept beside the new one
    other = Counting("other-model")  # a new model embeds everything again, into its own file
    contextual_search(store, QUESTION, user_id="ada", embedder=other)
    assert other.texts == 8 + 4 + 1
    assert len(sorted((tmp_path / "m").rglob("vectors-*.npz"))) == 6


def test_one_sentence_of_a_long_message_is_found_by_its_own_meaning(tmp_path: Path) -> None:
    clear_memory()
    store = SessionStore(tmp_path / "m", durable=False)
    store.append(
        "s1",
        [
            {
                "role": "user",
                "speaker": "Ada",
                "text": "The dentist fixed my tooth, the canvas painting dried, the clay bowl cracked. I flew to Porto.",
                "at": "2024-03-02T10:00:00Z",
            },
            {"role": "user", "speaker": "Ben", "text": "Painting on canvas, a town trip maybe.", "at": "2024-03-02T10:00:05Z"},
        ],
        user_id="ada",
    )
    emb = Counting()
    found = contextual_search(store, "Which cities?", user_id="ada", limit=2, embedder=emb, search="dense", trace=True)
    # as a whole the first message is mostly about other things; its second sentence is all about a city
    assert _ids(found)[0] == "s1#1"
    assert next(s for s in found.trace or [] if s["stage"] == "dense")["sentences"] == 2
    embedded = {t for c in emb.calls for t in c}
    assert {"Ada: The dentist fixed my tooth, the canvas painting dried, the clay bowl cracked.", "Ada: I flew to Porto."} <= embedded
    assert not any(t.startswith("Ben: Painting") and "\n" not in t for t in embedded)  # one sentence: no extra vector
    whole = concepts(
        [
            "Ada: The dentist fixed my tooth, the canvas painting dried, the clay bowl cracked. I flew to Porto.",
            "Ben: Painting on canvas, a town trip maybe.",
        ]
    )
    cos = [v[0] / sum(x * x for x in v) ** 0.5 for v in whole]
    assert cos[0] < cos[1]  # by whole messages alone the other one would have come first


def test_an_append_never_embeds_or_waits_for_vectors(tmp_path: Path) -> None:
    emb = Counting()
    emb.fail = True
    store = SessionStore(tmp_path / "m", durable=False)
    _fill(store)  # appends work with the embedder down: vectors are made at search time only
    assert not list((tmp_path / "m").rglob("vectors-*.npz")) and emb.calls == []


def test_dense_path_never_shows_another_users_session(store: SessionStore) -> None:
    store.append(
        "s9",
        [{"role": "user", "speaker": "Bob", "text": "Which cities? Porto Kyoto cities town", "at": "2024-01-01T00:00:00Z"}],
        user_id="bob",
    )
    store.append("s8", [{"role": "user", "text": "cities cities Porto", "at": "2024-01-01T00:00:00Z"}])  # no user
    emb = Counting()
    for search in ("dense", "hybrid"):
        got = contextual_search(store, QUESTION, user_id="ada", limit=20, embedder=emb, search=search)  # type: ignore[arg-type]
        assert got.hits and all(h.metadata["session_id"] in ("s1", "s2", "s3") for h in got.hits)
        bob = contextual_search(store, QUESTION, user_id="bob", limit=20, embedder=emb, search=search)  # type: ignore[arg-type]
        assert {h.metadata["session_id"] for h in bob.hits} == {"s9"}
    assert [s["session_id"] for s in search_sessions(store, QUESTION, user_id="ada", embedder=emb)] != []
    assert "s9" not in {s["session_id"] for s in search_sessions(store, QUESTION, user_id="ada", embedder=emb)}
    assert contextual_search(store, QUESTION, embedder=emb).hits == []  # no caller: nothing


def test_session_vectors_go_with_a_purge(store: SessionStore, tmp_path: Path) -> None:
    emb = Counting()
    contextual_search(store, QUESTION, user_id="ada", embedder=emb)
    assert list((tmp_path / "m").rglob("vectors-*.npz"))
    purge_sessions(tmp_path / "m", user_id="ada")
    assert not list((tmp_path / "m").rglob("vectors-*.npz"))


def test_search_sessions_ranks_by_summary_meaning(store: SessionStore) -> None:
    store.write_summary("s2", "Ada talked about: Kyoto holiday, dentist", user_id="ada")
    emb = Counting()
    found = search_sessions(store, "holiday trip", user_id="ada", limit=3, messages=1, embedder=emb)
    assert found[0]["session_id"] == "s2"
    lexical = search_sessions(store, "trip", user_id="ada", limit=3, messages=1)
    assert lexical == []  # no session holds the word: only meaning finds one


def test_session_vectors_reject_a_wrong_count(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "m", durable=False)
    _fill(store)
    short = CallableEmbedder(lambda texts: [[1.0, 0.0]] * max(1, len(texts) - 1), name="short")
    with pytest.raises(EmbeddingError):
        SessionVectors(short).vectors(store.visible_logs(session_id=None, user_id="ada"))


async def test_provider_contextual_search_and_tool_use_the_configured_embedder(tmp_path: Path) -> None:
    from agent_memory import MemoryProvider

    emb = Counting()
    async with MemoryProvider(tmp_path / "p", embedder=emb.inner) as memory:
        _fill(memory.session_store)
        res = await memory.search(QUESTION, user_id="ada", mode="contextual", limit=2, trace=True)
        assert {"s1#1", "s2#3"} <= {h.id for h in res.hits}
        assert any(s.get("stage") == "dense" for s in res.trace or [])
        found = await memory.search_sessions(QUESTION, user_id="ada", limit=2)
        assert {f["session_id"] for f in found} == {"s1", "s2"}
        assert found[0]["messages"][0]["id"] in ("s1#1", "s2#3")
    async with MemoryProvider(tmp_path / "p") as plain:  # no embedder: the lexical ranking, no vectors made
        res = await plain.search(QUESTION, user_id="ada", mode="contextual", limit=2, trace=True)
        assert not any(s.get("stage") == "dense" for s in res.trace or [])


@pytest.mark.skipif(not local_model_available(), reason="the local embedding model is not installed")
def test_local_model_bridges_a_paraphrase(tmp_path: Path) -> None:
    from agent_memory.embeddings import LocalEmbedder

    store = SessionStore(tmp_path / "m", durable=False)
    store.append(
        "a",
        [
            {"role": "user", "speaker": "Ada", "text": "We spent a week in Rome and saw the Colosseum.", "at": "2024-03-02T10:00:00Z"},
            {"role": "user", "speaker": "Ada", "text": "My sourdough starter finally works.", "at": "2024-03-02T10:01:00Z"},
        ],
        user_id="ada",
    )
    store.append(
        "b",
        [
            {"role": "user", "speaker": "Ada", "text": "Our flight to Tokyo lands on Friday.", "at": "2024-06-02T10:00:00Z"},
            {"role": "user", "speaker": "Ada", "text": "The printer is jammed again.", "at": "2024-06-02T10:01:00Z"},
        ],
        user_id="ada",
    )
    got = contextual_search(store, "Which cities did Ada travel to?", user_id="ada", limit=2, embedder=LocalEmbedder())
    assert {h.id for h in got.hits} == {"a#1", "b#1"}
