"""The vectors' snapshot beside vectors.db: a fresh cache loads from it, any change to the vectors (from any
cache) makes it stale, a purge deletes it, a damaged one is rebuilt (agent_memory/backends/files/vector_snapshot.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    assert {p.suffix for p in snap_files(tmp_path)} == {".f32", ".low", ".hashes", ".npz", ".json", ".lock"}
    calls: list[str] = []
    real = VectorCache._guarded

    def spy(self: VectorCache, fn: object) -> object:
        calls.append(getattr(fn, "__name__", "?"))
        return real(self, fn)  # type: ignore[arg-type]

    monkeypatch.setattr(VectorCache, "_guarded", spy)
    second = VectorCache.for_root(tmp_path)
    assert second.search("m", mat[3], {f"id{i}": h for i, h in enumerate(hashes)}, limit=5) == want
    assert want[0][0] == "id3"
    assert set(calls) == {"cache_state", "spot_rows"}  # the matrix came from the snapshot (SQLite: a spot check of a few rows)
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
    assert snap_files(tmp_path) != old and len(snap_files(tmp_path)) == 6  # the stale state's files are gone
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
    npy = next(p for p in snap_files(tmp_path) if p.suffix == ".f32")
    npy.write_bytes(b"short")
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


def meta_of(root: Path) -> dict[str, object]:
    import json

    (meta,) = (p for p in snap_files(root) if p.suffix == ".json")
    return dict(json.loads(meta.read_text()))


def exact_top(mat: np.ndarray, hashes: list[str], q: np.ndarray, k: int) -> list[str]:
    return [hashes[i] for i in np.argsort(-(mat @ q), kind="stable")[:k]]


def test_new_rows_are_appended_to_the_mapped_snapshot_not_rebuilt(tmp_path: Path) -> None:
    hashes, mat = fill(tmp_path)
    VectorCache.for_root(tmp_path).size("m")
    before = meta_of(tmp_path)
    f32 = next(p for p in snap_files(tmp_path) if p.suffix == ".f32")
    inode = f32.stat().st_ino
    extra = unit(np.random.default_rng(9), 7)
    writer = VectorCache.for_root(tmp_path)  # another process's backfill
    writer.put("m", [f"e{i}" for i in range(7)], extra)
    writer.close()
    fresh = VectorCache.for_root(tmp_path)
    assert fresh.size("m") == N + 7
    after = meta_of(tmp_path)
    assert after["data"] == before["data"] and f32.stat().st_ino == inode  # the same files, appended to
    assert after["n"] == N + 7 and after["version"] != before["version"]
    loaded = fresh._loaded["m"]
    assert loaded.mapped and not loaded.buf.flags.writeable  # mapped read-only
    every, allm = hashes + [f"e{i}" for i in range(7)], np.vstack([mat, extra])
    for q in (extra[2], mat[5], extra[6]):
        assert [h for h, _ in fresh.nearest("m", q, 10)] == exact_top(allm, every, q, 10)
    fresh.close()


def test_own_write_on_a_mapped_snapshot_reloads_it_by_appending(tmp_path: Path) -> None:
    hashes, mat = fill(tmp_path)
    cache = VectorCache.for_root(tmp_path)
    assert cache.nearest("m", mat[1], 1)[0][0] == hashes[1]
    data = meta_of(tmp_path)["data"]
    new = unit(np.random.default_rng(4), 2)
    cache.put("m", ["n0", "n1"], new)  # the mapped rows are read-only: the write drops them, the search appends
    assert cache.nearest("m", new[1], 1)[0][0] == "n1"
    assert meta_of(tmp_path)["data"] == data and meta_of(tmp_path)["n"] == N + 2
    cache.put("m", [hashes[0]], -mat[:1])  # an overwritten row: rebuilt, never appended twice
    one: Any = pytest.approx(1.0, abs=1e-5)
    assert cache.nearest("m", -mat[0], 1) == [(hashes[0], one)]
    assert meta_of(tmp_path)["data"] != data and meta_of(tmp_path)["n"] == N + 2
    cache.close()


@pytest.mark.parametrize("damage", ["meta", "hashes", "low", "proj", "f32-tail"])
def test_a_damaged_snapshot_is_rebuilt_or_repaired(tmp_path: Path, damage: str) -> None:
    hashes, mat = fill(tmp_path)
    VectorCache.for_root(tmp_path).size("m")
    files = {p.suffix: p for p in snap_files(tmp_path)}
    late = unit(np.random.default_rng(5), 1)
    if damage == "meta":
        files[".json"].write_text("{not json")
    elif damage == "hashes":
        files[".hashes"].write_bytes(files[".hashes"].read_bytes()[:50])
    elif damage == "low":
        files[".low"].write_bytes(b"\0" * 12)
    elif damage == "proj":
        files[".npz"].write_bytes(b"garbage")
    else:  # a writer that crashed part way through an append left bytes past the rows the meta names
        with open(files[".f32"], "ab") as f:
            f.write(b"\x7f" * 100)
        writer = VectorCache.for_root(tmp_path)
        writer.put("m", ["late"], late)
        writer.close()
    fresh = VectorCache.for_root(tmp_path)
    every = hashes + (["late"] if damage == "f32-tail" else [])
    allm = np.vstack([mat, late]) if damage == "f32-tail" else mat
    assert fresh.size("m") == len(every)
    for q in (mat[0], mat[17], allm[-1]):
        assert [h for h, _ in fresh.nearest("m", q, 5)] == exact_top(allm, every, q, 5)
    fresh.close()


@pytest.mark.parametrize("width", ["fixed", "mixed"])
def test_the_hash_list_finds_rows_without_a_dict(width: str) -> None:
    from agent_memory.backends.files.vector_snapshot import HashList

    keys = [f"{i * 7919:016x}" for i in range(50)] if width == "fixed" else [f"h{i * 7919:x}" for i in range(50)]
    raw = "".join(k + "\n" for k in keys).encode() + b"partial-line-of-a-crashed-writ"
    hl = HashList(raw, 50)
    assert len(hl) == 50 and list(hl) == keys and hl[3] == keys[3] and hl[-1] == keys[-1] and hl[1:3] == keys[1:3]
    probe = [keys[10], "missing", keys[0], keys[49] + "0", keys[49][:-1], keys[49]]
    assert hl.find(probe) == [10, -1, 0, -1, -1, 49]
    with pytest.raises(ValueError):
        HashList(raw, 51)


def test_mapped_rows_are_read_without_the_mapping_and_equal_it(tmp_path: Path) -> None:
    hashes, mat = fill(tmp_path)
    cache = VectorCache.for_root(tmp_path)
    cache.size("m")
    loaded = cache._loaded["m"]
    assert loaded.mapped
    rows = [31, 2, 2, 17]
    assert np.array_equal(loaded.take(rows), mat[rows])  # pread, not a fault through the mapping
    assert np.allclose(loaded.dot(mat[4]), mat @ mat[4], atol=1e-6)
    with pytest.raises(IndexError):
        loaded.take([N])
    assert [r for r, _ in cache.search("m", mat[9], {f"id{i}": h for i, h in enumerate(hashes)}, limit=3)][0] == "id9"
    cache.close()
