"""The vectors' snapshot beside vectors.db: a fresh cache loads from it, any change to the vectors (from any
cache) makes it stale, a purge deletes it, a damaged one is rebuilt (agent_memory/backends/files/vector_snapshot.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agent_memory import MemoryStore
from agent_memory.backends.files import vectors as vectors_mod
from agent_memory.backends.files.layout import entry
from agent_memory.backends.files.vectors import VectorCache

N = 40


@pytest.fixture(autouse=True)
def small_snapshots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors_mod, "SNAPSHOT_MIN", 10)  # a snapshot for a test-sized cache
    monkeypatch.setattr(vectors_mod, "COARSE_MIN", 20)  # and its coarse projection


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.normal(size=(n, 8)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def fill(root: Path) -> tuple[list[str], np.ndarray]:
    hashes = [f"{i:064x}" for i in range(N)]
    mat = unit(np.random.default_rng(1), N)
    cache = VectorCache.for_root(root)
    cache.put("m", hashes, mat)
    cache.close()
    return hashes, mat


def snap_files(root: Path) -> list[Path]:
    folder = root / "vectors.db-snap"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def test_a_fresh_cache_loads_the_snapshot_and_finds_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hashes, mat = fill(tmp_path)
    first = VectorCache.for_root(tmp_path)
    want = first.search("m", mat[3], {f"id{i}": h for i, h in enumerate(hashes)}, limit=5)
    first.close()
    assert {p.suffix for p in snap_files(tmp_path)} == {".npy", ".hashes", ".npz", ".json"}
    calls: list[str] = []
    real = VectorCache._guarded

    def spy(self: VectorCache, fn: object) -> object:
        calls.append(getattr(fn, "__name__", "?"))
        return real(self, fn)  # type: ignore[arg-type]

    monkeypatch.setattr(VectorCache, "_guarded", spy)
    second = VectorCache.for_root(tmp_path)
    assert second.search("m", mat[3], {f"id{i}": h for i, h in enumerate(hashes)}, limit=5) == want
    assert want[0][0] == "id3"
    assert calls == ["cache_state"]  # no row read from SQLite: the matrix came from the snapshot
    loaded = second._loaded["m"]
    assert isinstance(loaded.buf, np.memmap) and loaded.coarse is not None
    second.close()


def test_another_caches_write_makes_the_snapshot_stale(tmp_path: Path) -> None:
    hashes, mat = fill(tmp_path)
    reader = VectorCache.for_root(tmp_path)
    reader.size("m")
    old = snap_files(tmp_path)
    writer = VectorCache.for_root(tmp_path)
    flipped = -mat[:1]
    writer.put("m", hashes[:1], flipped)  # same count, same hashes: only the version tells
    writer.close()
    fresh = VectorCache.for_root(tmp_path)
    got = fresh.search("m", flipped[0], {"a": hashes[0]}, limit=1)
    assert got[0][1] == pytest.approx(1.0, abs=1e-5)
    assert snap_files(tmp_path) != old and len(snap_files(tmp_path)) == 4  # the stale state's files are gone
    reader.close()
    fresh.close()


def test_purge_drops_the_snapshot_and_a_damaged_one_is_rebuilt(tmp_path: Path) -> None:
    hashes, mat = fill(tmp_path)
    cache = VectorCache.for_root(tmp_path)
    cache.size("m")
    assert snap_files(tmp_path)
    assert cache.drop(hashes[:2]) == 2
    assert snap_files(tmp_path) == []  # a purged vector never lingers in a derived file
    cache.close()
    again = VectorCache.for_root(tmp_path)
    assert again.size("m") == N - 2
    again.close()
    npy = next(p for p in snap_files(tmp_path) if p.suffix == ".npy")
    npy.write_bytes(b"not a numpy file")
    third = VectorCache.for_root(tmp_path)
    assert third.size("m") == N - 2 and third.search("m", mat[5], {"x": hashes[5]}, limit=1)[0][0] == "x"
    third.close()


def test_the_root_layout_names_the_snapshot(tmp_path: Path) -> None:
    assert "-snap" in entry("vectors").siblings
    fill(tmp_path)
    VectorCache.for_root(tmp_path).size("m")
    assert Path(f"{tmp_path / 'vectors.db'}-snap") in entry("vectors").files(tmp_path)


def test_a_store_purge_removes_the_snapshot(tmp_path: Path) -> None:
    from agent_memory.embeddings import CallableEmbedder

    emb = CallableEmbedder(lambda ts: unit(np.random.default_rng(len(ts)), len(ts)), name="toy")
    with MemoryStore(tmp_path, durable=False, embedder=emb) as s:
        for i in range(N):
            s.remember(f"alice note {i} about gardens", user_id="alice", scope="user")
        s.remember("bob's only note", user_id="bob", scope="user")
        s.embed()
        assert s.search("gardens", user_id="alice", mode="hybrid").hits
        assert snap_files(tmp_path)
        s.purge(user_id="alice")
        assert snap_files(tmp_path) == []
        assert [h.id for h in s.search("note", user_id="alice", mode="hybrid").hits] == []
