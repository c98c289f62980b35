"""The coarse pass's int8 refining step (coarse.py ``mid``; stored as ``.mid`` in the snapshot): its results, its
file kept up to date by appending, and damage to it rebuilding the snapshot."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import agent_memory.backends.files.vectors as vectors_mod
from agent_memory.backends.files.coarse import MID, Coarse
from agent_memory.backends.files.vectors import VectorCache

DIM = 160  # room for 64 + MID directions


@pytest.fixture(autouse=True)
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors_mod, "SNAPSHOT_MIN", 10)
    monkeypatch.setattr(vectors_mod, "COARSE_MIN", 20)


def clustered(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(12, DIM)).astype(np.float32)
    m = centres[rng.integers(0, 12, n)] + 0.6 * rng.normal(size=(n, DIM)).astype(np.float32)
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


def fill(root: Path, n: int, seed: int = 1, start: int = 0) -> tuple[list[str], np.ndarray]:
    hashes = [f"{i:064x}" for i in range(start, start + n)]
    mat = clustered(n, seed)
    cache = VectorCache.for_root(root)
    cache.put("m", hashes, mat)
    cache.close()
    return hashes, mat


def exact(mat: np.ndarray, hashes: list[str], q: np.ndarray, k: int) -> list[str]:
    return [hashes[i] for i in np.argsort(-(mat @ q), kind="stable")[:k]]


def test_a_small_set_is_answered_exactly(tmp_path: Path) -> None:
    """Below the refined list's size every row reaches the exact rerank: the same answer as an exact product."""
    hashes, mat = fill(tmp_path, 300)
    cache = VectorCache.for_root(tmp_path)
    loaded = cache._matrix("m")
    assert loaded.mapped and loaded.coarse is not None and loaded.coarse.mid is not None
    assert loaded.coarse.mid.shape == (300, MID) and loaded.coarse.mid.dtype == np.int8
    for i in range(0, 300, 37):
        q = mat[i] + 0.1 * clustered(1, i)[0]
        q /= np.linalg.norm(q)
        got = [h for h, _ in cache.nearest("m", q, 10)]
        assert got == exact(mat, hashes, q, 10)
    cache.close()


def test_the_refining_step_keeps_the_nearest(tmp_path: Path) -> None:
    """With the refined list far shorter than the first pass, the nearest rows still come through it."""
    mat = clustered(6_000, 2)
    coarse = Coarse.build(mat)
    assert coarse.mid is not None and coarse.proj_mid is not None
    hit = 0
    for i in range(0, 6_000, 300):
        q = mat[i]
        first = set(coarse.shortlist(q, 1_200).tolist())
        refined = coarse.shortlist(q, 300, first=1_200)
        assert len(refined) == 300 and set(refined.tolist()) <= first
        hit += len(set(np.argsort(-(mat @ q))[:10].tolist()) & set(refined.tolist()))
    assert hit / (10 * 20) >= 0.95


def test_appended_rows_get_their_refining_rows(tmp_path: Path) -> None:
    hashes, mat = fill(tmp_path, 200)
    VectorCache.for_root(tmp_path).size("m")  # the snapshot, built
    data = sorted(p.name for p in (tmp_path / "vectors.db-snap").glob("*.mid"))
    more, extra = fill(tmp_path, 50, seed=9, start=200)
    fresh = VectorCache.for_root(tmp_path)
    loaded = fresh._matrix("m")
    assert sorted(p.name for p in (tmp_path / "vectors.db-snap").glob("*.mid")) == data  # appended in place
    assert loaded.n == 250 and loaded.coarse is not None and loaded.coarse.mid is not None
    want = loaded.coarse.quantise(extra)
    assert want is not None
    assert np.abs(np.asarray(loaded.coarse.mid[200:], dtype=np.int16) - want.astype(np.int16)).max() <= 1
    q = extra[7]
    assert [h for h, _ in fresh.nearest("m", q, 5)] == exact(np.vstack([mat, extra]), hashes + more, q, 5)
    fresh.close()


@pytest.mark.parametrize("damage", ["truncate", "scramble"])
def test_a_damaged_refining_file_rebuilds_the_snapshot(tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture) -> None:
    hashes, mat = fill(tmp_path, 300)
    VectorCache.for_root(tmp_path).size("m")
    (mid,) = (tmp_path / "vectors.db-snap").glob("*.mid")
    if damage == "truncate":
        mid.write_bytes(mid.read_bytes()[:100])
    else:
        mid.write_bytes(np.random.default_rng(0).integers(-127, 127, mid.stat().st_size, dtype=np.int8).tobytes())
    fresh = VectorCache.for_root(tmp_path)
    loaded = fresh._matrix("m")
    assert "rebuilding" in caplog.text
    assert loaded.coarse is not None and loaded.coarse.mid is not None and loaded.coarse.mid.shape == (300, MID)
    want = loaded.coarse.quantise(mat)
    assert want is not None and np.abs(np.asarray(loaded.coarse.mid, dtype=np.int16) - want.astype(np.int16)).max() <= 1
    assert [h for h, _ in fresh.nearest("m", mat[5], 10)] == exact(mat, hashes, mat[5], 10)
    fresh.close()


def test_an_older_snapshot_without_the_refining_file_is_rebuilt(tmp_path: Path) -> None:
    import json

    fill(tmp_path, 300)
    VectorCache.for_root(tmp_path).size("m")
    (meta_path,) = (tmp_path / "vectors.db-snap").glob("*.json")
    meta = json.loads(meta_path.read_text())
    meta.pop("format")
    meta.pop("mid")
    meta_path.write_text(json.dumps(meta))
    loaded = VectorCache.for_root(tmp_path)._matrix("m")
    assert loaded.coarse is not None and loaded.coarse.mid is not None
    assert json.loads(meta_path.read_text())["format"] == 2
