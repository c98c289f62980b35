"""The HNSW index over the vector cache (agent_memory/backends/files/ann.py): exact top-k on a small set, kept in step
with writes, stored with the snapshot and rebuilt when its file is gone, never a way around visibility, and purged."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("usearch")

from agent_memory import MemoryStore  # noqa: E402
from agent_memory.backends.files import ann as ann_mod  # noqa: E402
from agent_memory.backends.files import vectors as vectors_mod  # noqa: E402
from agent_memory.backends.files.vectors import VectorCache  # noqa: E402
from agent_memory.embeddings import CallableEmbedder  # noqa: E402
from agent_memory.model.records import content_hash  # noqa: E402

DIM = 24


@pytest.fixture(autouse=True)
def small_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors_mod, "ANN_MIN", 50)  # an index for a test-sized cache
    monkeypatch.setattr(vectors_mod, "ANN_AUTO", True)  # built by the backfill (off by default)
    monkeypatch.setattr(vectors_mod, "SNAPSHOT_MIN", 50)
    monkeypatch.setattr(vectors_mod, "COARSE_MIN", 50)


def clustered(rng: np.random.Generator, n: int, centres: int = 12) -> np.ndarray:
    base = rng.normal(size=(centres, DIM))
    m = base[rng.integers(0, centres, n)] + 0.35 * rng.normal(size=(n, DIM))
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


def exact(mat: np.ndarray, hashes: Sequence[str], q: np.ndarray, k: int) -> list[str]:
    order = np.argsort(-(mat @ q), kind="stable")[:k]
    return [hashes[i] for i in order]


def filled(root: Path, n: int = 600, seed: int = 3) -> tuple[VectorCache, list[str], np.ndarray]:
    hashes = [f"{i:064x}" for i in range(n)]
    mat = clustered(np.random.default_rng(seed), n)
    cache = VectorCache.for_root(root)
    cache.put("m", hashes, mat)
    return cache, hashes, mat


def counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(ann_mod.Ann, name)
    if name == "build":

        def build(cls: type[ann_mod.Ann], *a: object, **kw: object) -> ann_mod.Ann:
            calls.append(1)
            return real(*a, **kw)  # type: ignore[no-any-return]

        monkeypatch.setattr(ann_mod.Ann, "build", classmethod(build))
    else:

        def method(self: ann_mod.Ann, *a: object, **kw: object) -> object:
            calls.append(1)
            return real(self, *a, **kw)

        monkeypatch.setattr(ann_mod.Ann, name, method)
    return calls


def test_the_index_gives_the_exact_top_k_on_a_small_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache, hashes, mat = filled(tmp_path)
    assert not cache.indexed("m")
    assert cache.build_index("m") and cache.indexed("m")
    used = counting(monkeypatch, "candidates")
    queries = clustered(np.random.default_rng(9), 25)
    for q in queries:
        got = [h for h, _ in cache.nearest("m", q, 10)]
        assert got == exact(mat, hashes, q, 10)
    assert len(used) == len(queries)  # the index answered, not the exact pass
    stats: dict[str, float] = {}
    cache.nearest("m", queries[0], 10, stats=stats)
    assert abs(stats["mean"] - float((mat @ queries[0]).mean())) < 0.1  # fusion's statistics still come along


def test_writes_update_the_index_in_place_and_a_drop_removes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache, hashes, mat = filled(tmp_path)
    cache.build_index("m")
    builds = counting(monkeypatch, "build")
    new = clustered(np.random.default_rng(11), 5)
    cache.put("m", [f"new{i}" for i in range(5)], new)
    assert cache.indexed("m") and builds == []  # added to the index, not rebuilt
    assert cache.nearest("m", new[2], 1)[0][0] == "new2"
    moved = -mat[7]  # an existing hash with a new vector: the index follows it
    cache.put("m", [hashes[7]], moved[None, :])
    assert cache.nearest("m", moved, 1)[0][0] == hashes[7]
    assert cache.drop(["new2"]) == 1
    assert not cache.indexed("m")  # a drop deletes the derived index: nothing of new2 lingers
    assert not list((tmp_path / "vectors.db-snap").glob("*.usearch"))
    assert cache.build_index("m") and builds == [1]
    assert "new2" not in [h for h, _ in cache.nearest("m", new[2], 20)]


def test_the_index_is_stored_with_the_snapshot_and_rebuilt_when_its_file_is_gone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache, hashes, mat = filled(tmp_path)
    assert cache.build_index("m")
    cache.close()
    files = list((tmp_path / "vectors.db-snap").glob("*.usearch"))
    assert len(files) == 1
    builds = counting(monkeypatch, "build")
    fresh = VectorCache.for_root(tmp_path)
    assert fresh.indexed("m") and builds == []  # a new process maps the stored index
    q = clustered(np.random.default_rng(5), 1)[0]
    assert [h for h, _ in fresh.nearest("m", q, 10)] == exact(mat, hashes, q, 10)
    files[0].unlink()
    other = VectorCache.for_root(tmp_path)
    assert not other.indexed("m")
    assert [h for h, _ in other.nearest("m", q, 10)] == exact(mat, hashes, q, 10)  # the exact pass meanwhile
    assert other.build_index("m") and builds == [1]
    assert len(list((tmp_path / "vectors.db-snap").glob("*.usearch"))) == 1
    files[0].with_suffix(".usearch").write_bytes(b"not an index")  # damaged: searched without it, no error
    assert not VectorCache.for_root(tmp_path).indexed("m")


def test_a_backfill_builds_no_index_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors_mod, "ANN_AUTO", False)
    with MemoryStore(tmp_path, durable=False, embedder=words_embedder()) as s:
        for i in range(60):
            s.remember(f"garden note {i}")
        s.embed()
        assert not VectorCache.for_root(tmp_path).indexed("words")


def test_without_the_library_search_is_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors_mod, "ann_available", lambda: False)
    cache, hashes, mat = filled(tmp_path)
    assert not cache.build_index("m") and not cache.indexed("m")
    q = mat[4]
    assert [h for h, _ in cache.nearest("m", q, 5)] == exact(mat, hashes, q, 5)


def words_embedder() -> CallableEmbedder:
    """Bag of hashed words: texts sharing words are near."""

    def embed(texts: Sequence[str]) -> np.ndarray:
        out = np.full((len(texts), 512), 1e-3, dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, zlib.crc32(w.encode()) % 512] += 1.0
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    return CallableEmbedder(embed, name="words")


def test_a_hidden_record_is_never_returned_and_a_small_partition_gets_its_exact_top_k(tmp_path: Path) -> None:
    emb = words_embedder()
    topics = ["river", "garden", "engine", "violin", "pepper", "glacier", "ledger", "harbor"]
    with MemoryStore(tmp_path, durable=False, embedder=emb) as s:
        for i in range(120):
            s.remember(f"bob {topics[i % 8]} {topics[(i * 3) % 8]} note {i}", user_id="bob", scope="user")
        secret = s.remember("velvet orchid", user_id="bob", scope="user").id  # the nearest to the query below
        texts = {s.remember(t, user_id="alice", scope="user").id: t for t in (f"alice {topics[i % 8]} entry {i}" for i in range(6))}
        mine = list(texts)
        s.embed()
        cache = VectorCache.for_root(tmp_path)
        assert cache.indexed(emb.name)  # the backfill built the index (ANN_MIN is 50 here)
        for mode in ("dense", "hybrid"):
            hits = s.search("velvet orchid", user_id="alice", mode=mode, limit=10).hits
            assert secret not in [h.id for h in hits]
            assert {h.id for h in hits} <= set(mine)
        assert secret in [h.id for h in s.search("velvet orchid", user_id="bob", mode="dense", limit=3).hits]
        # alice sees 6 of 127 records: her dense answer is the exact ranking of her own records
        q = emb.embed(["glacier"])[0]
        want = sorted(mine, key=lambda i: -float(emb.embed([texts[i]])[0] @ q))[:3]
        got = [h.id for h in s.search("glacier", user_id="alice", mode="dense", limit=3).hits]
        assert got[0] == want[0] and set(got) <= set(mine)


def test_a_purge_removes_the_vector_from_the_index(tmp_path: Path) -> None:
    emb = words_embedder()
    with MemoryStore(tmp_path, durable=False, embedder=emb) as s:
        for i in range(80):
            s.remember(f"alice garden note {i}", user_id="alice", scope="user")
        carol = s.remember("carol violin secret", user_id="carol", scope="user")
        s.embed()
        assert list((tmp_path / "vectors.db-snap").glob("*.usearch"))
        q = emb.embed(["carol violin secret"])[0]
        assert VectorCache.for_root(tmp_path).nearest(emb.name, q, 1)[0][0] == content_hash("carol violin secret")
        s.purge(user_id="carol")
        assert not list((tmp_path / "vectors.db-snap").glob("*.usearch"))  # the derived file went with the vector
        s.remember("alice one more", user_id="alice", scope="user")
        s.embed()  # the next backfill indexes what is left
        cache = VectorCache.for_root(tmp_path)
        assert cache.indexed(emb.name) and cache.size(emb.name) == 81
        assert content_hash("carol violin secret") not in [h for h, _ in cache.nearest(emb.name, q, 81)]
        assert s.search("violin", user_id="carol", mode="dense").hits == [] and carol.id
