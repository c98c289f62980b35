"""Vectors as derived data: cache keyed by (model, content hash), backfill, rebuild, visibility-restricted search."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from agent_memory.backends.files.store import MemoryStore
from agent_memory.backends.files.vectors import VectorCache, live_items, visible_hashes
from agent_memory.embeddings import CallableEmbedder, EmbeddingError
from agent_memory.errors import InvalidInputError

DIM = 32


def bow(texts: list[str]) -> list[list[float]]:
    out = []
    for t in texts:
        v = [0.0] * DIM
        for w in t.lower().split():
            v[int(hashlib.md5(w.encode()).hexdigest(), 16) % DIM] += 1.0
        out.append(v)
    return out


class Counting:
    """A bag-of-words embedder that counts the texts it was asked to embed."""

    def __init__(self, name: str = "bow-v1", fail_after: int | None = None) -> None:
        self.texts: list[str] = []
        self.fail_after = fail_after
        self.emb = CallableEmbedder(self._fn, name=name)
        self.name = name

    def _fn(self, texts: list[str]) -> list[list[float]]:
        if self.fail_after is not None and len(self.texts) >= self.fail_after:
            raise RuntimeError("embedding service down")
        self.texts.extend(texts)
        return bow(texts)


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    s = MemoryStore(tmp_path / "mem", durable=False, rescan_interval=0)
    yield s
    s.close()


def test_backfill_embeds_only_missing_with_progress(store: MemoryStore) -> None:
    for i in range(7):
        store.remember(f"note number {i} about gardening and tomatoes")
    cache = VectorCache.for_root(store.root)
    emb = Counting()
    calls: list[tuple[int, int]] = []
    r = cache.backfill(live_items(store.index), emb.emb, batch_size=3, progress=lambda d, t: calls.append((d, t)))
    assert (r.total, r.embedded, r.cached, r.error) == (7, 7, 0, None)
    assert calls == [(0, 7), (3, 7), (6, 7), (7, 7)]
    assert (store.root / "vectors.db").is_file() and cache.count("bow-v1") == 7
    store.remember("a brand new note about bicycles")
    r2 = cache.backfill(live_items(store.index), emb.emb)
    assert (r2.embedded, r2.cached) == (1, 7)
    assert emb.texts[-1] == "a brand new note about bicycles"


def test_hand_edit_is_reembedded_and_stale_vector_pruned(store: MemoryStore) -> None:
    res = store.remember("the meeting is on tuesday")
    store.remember("lunch at the thai place")
    cache = VectorCache.for_root(store.root)
    emb = Counting()
    cache.backfill(live_items(store.index), emb.emb)
    path = Path(str(store.get(res.id).path))
    path.write_text(path.read_text(encoding="utf-8").replace("tuesday", "friday afternoon"), encoding="utf-8")
    store.index.refresh(force=True)
    r = cache.backfill(live_items(store.index), emb.emb, prune=True)
    assert r.embedded == 1 and emb.texts[-1].strip() == "the meeting is on friday afternoon"
    assert r.pruned == 1 and cache.count() == 2
    allowed = visible_hashes(store.index)
    q = CallableEmbedder(bow, name="bow-v1").embed(["friday afternoon"])[0]
    assert cache.search("bow-v1", q, allowed, limit=1)[0][0] == res.id


def test_model_change_reembeds_and_drops_old_model(store: MemoryStore) -> None:
    for text in ("alpha", "beta", "gamma"):
        store.remember(f"word {text}")
    cache = VectorCache.for_root(store.root)
    cache.backfill(live_items(store.index), Counting("bow-v1").emb)
    v2 = Counting("bow-v2")
    r = cache.backfill(live_items(store.index), v2.emb, prune=True)
    assert r.embedded == 3 and len(v2.texts) == 3
    assert cache.models() == ["bow-v2"] and r.pruned == 3


def test_deleted_or_corrupt_cache_is_rebuilt(store: MemoryStore) -> None:
    store.remember("first memory")
    store.remember("second memory")
    cache = VectorCache.for_root(store.root)
    cache.backfill(live_items(store.index), Counting().emb)
    cache.close()
    path = store.root / "vectors.db"
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    path.write_bytes(b"this is not a database" * 100)
    fresh = VectorCache.for_root(store.root)
    r = fresh.backfill(live_items(store.index), Counting().emb)
    assert r.embedded == 2 and fresh.count() == 2
    path.unlink()
    fresh.close()
    again = VectorCache.for_root(store.root)
    assert again.backfill(live_items(store.index), Counting().emb).embedded == 2


def test_embedder_failure_stops_backfill_keeps_progress_never_raises(store: MemoryStore) -> None:
    for i in range(6):
        store.remember(f"record {i}")
    cache = VectorCache.for_root(store.root)
    r = cache.backfill(live_items(store.index), Counting(fail_after=2).emb, batch_size=2)
    assert r.embedded == 2 and r.error and "embedding service down" in r.error
    assert cache.count() == 2
    assert store.search("record").hits  # lexical search is unaffected


def test_search_never_returns_ids_outside_allowed(store: MemoryStore) -> None:
    mine = store.remember("secret plan about the orchard", scope="session", session_id="s1").id
    theirs = store.remember("secret plan about the orchard exactly", scope="session", session_id="s2").id
    shared = store.remember("public note on apples", scope="project").id
    cache = VectorCache.for_root(store.root)
    cache.backfill(live_items(store.index), Counting().emb)
    q = CallableEmbedder(bow, name="bow-v1").embed(["secret plan about the orchard exactly"])[0]
    seen = visible_hashes(store.index, session_id="s1")
    assert set(seen) == {mine, shared}
    hits = cache.search("bow-v1", q, seen, limit=10)
    assert {h for h, _ in hits} == {mine, shared} and theirs not in {h for h, _ in hits}
    assert hits[0][0] == mine and hits[0][1] >= hits[1][1]
    assert cache.search("bow-v1", q, {}, limit=10) == []
    # a map naming an id the index does not know cannot smuggle in another record's vector under its own id
    assert cache.search("bow-v1", q, {"nope": "no-such-hash"}) == []


def test_search_restricts_large_candidate_sets_exactly(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    mat = rng.normal(size=(500, 8)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    cache = VectorCache(tmp_path / "v.db")
    cache.put("m", [f"h{i}" for i in range(500)], mat)
    q = mat[0]
    for subset in (range(0, 500, 2), range(1, 500, 7)):  # the full-matrix path and the gather path
        allowed = {f"r{i}": f"h{i}" for i in subset}
        got = cache.search("m", q, allowed, limit=5)
        sims = {f"r{i}": float(mat[i] @ q) for i in subset}
        want = sorted(sims, key=lambda r: -sims[r])[:5]
        assert [r for r, _ in got] == want
    assert cache.memory_bytes("m") == 500 * 8 * 4
    best = cache.search("m", q, {"r0": "h0", "r1": "h1"}, limit=3, min_score=0.99)
    assert [r for r, _ in best] == ["r0"] and abs(best[0][1] - 1.0) < 1e-5
    with pytest.raises(EmbeddingError, match="dimension"):
        cache.search("m", np.ones(3, dtype=np.float32), {"r0": "h0"})
    with pytest.raises(InvalidInputError):
        cache.put("m", ["a", "b"], mat[:1])


def test_writes_do_not_wait_for_embedding(store: MemoryStore) -> None:
    """A write needs no embedder: it is searchable lexically at once and only later backfilled."""
    rid = store.remember("the bike needs new brakes").id
    assert [h.id for h in store.search("brakes").hits] == [rid]
    cache = VectorCache.for_root(store.root)
    q = CallableEmbedder(bow, name="bow-v1").embed(["bike brakes"])[0]
    assert cache.search("bow-v1", q, visible_hashes(store.index)) == []  # not embedded yet: dense side is empty
    cache.backfill(live_items(store.index), Counting().emb)
    assert cache.search("bow-v1", q, visible_hashes(store.index))[0][0] == rid


def test_scores_and_nearest_stats(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path / "v.db")
    mat = np.eye(4, dtype=np.float32)
    cache.put("m", ["h0", "h1", "h2", "h3"], mat)
    q = np.array([0.6, 0.8, 0.0, 0.0], dtype=np.float32)
    assert cache.scores("m", q, {"a": "h1", "b": "h3", "c": "missing"}) == {"a": pytest.approx(0.8), "b": 0.0}
    stats: dict[str, float] = {}
    assert [h for h, _ in cache.nearest("m", q, 2, stats=stats)] == ["h1", "h0"]
    assert stats["mean"] == pytest.approx(0.35) and stats["std"] == pytest.approx(float(np.std([0.6, 0.8, 0, 0])))
    sub: dict[str, float] = {}
    cache.search("m", q, {"x": "h0", "y": "h2"}, stats=sub)
    assert sub["mean"] == pytest.approx(0.3)
