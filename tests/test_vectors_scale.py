"""The in-memory matrix: loaded once, updated in place by our writes, reloaded after another process's;
the projected coarse pass above COARSE_MIN; backfill stops between batches."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import agent_memory.backends.files.coarse as _coarse
import agent_memory.backends.files.vectors as vectors
from agent_memory.backends.files.vectors import VectorCache
from agent_memory.embeddings import CallableEmbedder


def _unit(rng: np.random.Generator, n: int, dim: int = 16) -> np.ndarray:
    m = rng.normal(size=(n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_own_writes_update_the_loaded_matrix_in_place(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    cache = VectorCache(tmp_path / "vectors.db")
    mat = _unit(rng, 50)
    cache.put("m", [f"h{i}" for i in range(50)], mat)
    assert cache.nearest("m", mat[7], 1)[0][0] == "h7"
    loaded = cache._loaded["m"]
    new = _unit(rng, 3)
    cache.put("m", ["h50", "h51", "h7"], new)  # two appended, one overwritten
    assert cache._loaded["m"] is loaded and loaded.n == 51 + 1  # no reload from SQLite
    assert cache.nearest("m", new[1], 1)[0][0] == "h51"
    assert cache.nearest("m", new[2], 1)[0][0] == "h7"
    fresh = VectorCache(tmp_path / "vectors.db")  # what is on disk agrees with what is in memory
    assert np.allclose(fresh.scores("m", new[2], {"x": "h7"})["x"], 1.0, atol=1e-5)


def test_another_writer_forces_a_reload(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    a, b = VectorCache(tmp_path / "vectors.db"), VectorCache(tmp_path / "vectors.db")
    mat = _unit(rng, 20)
    a.put("m", [f"h{i}" for i in range(20)], mat)
    assert a.size("m") == 20
    extra = _unit(rng, 1)
    b.put("m", ["other"], extra)  # a second cache object (another process, for all `a` knows)
    assert a.nearest("m", extra[0], 1)[0][0] == "other" and a.size("m") == 21


def test_coarse_pass_finds_the_exact_nearest_on_clustered_vectors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    centres = _unit(rng, 12, dim=48)
    mat = centres[rng.integers(0, 12, size=3000)] + 0.35 * rng.normal(size=(3000, 48)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    queries = mat[rng.integers(0, 3000, size=40)] + 0.2 * rng.normal(size=(40, 48)).astype(np.float32)
    cache = VectorCache(tmp_path / "vectors.db")
    cache.put("m", [f"h{i}" for i in range(3000)], mat)
    exact = [cache.nearest("m", q, 10) for q in queries]
    monkeypatch.setattr(vectors, "COARSE_MIN", 1000)
    monkeypatch.setattr(_coarse, "DIMS", 24)
    found = 0
    for q, want in zip(queries, exact, strict=True):
        stats: dict[str, float] = {}
        got = cache.nearest("m", q, 10, stats=stats)
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
        found += len({h for h, _ in got} & {h for h, _ in want})
        sims = mat @ (q / 1.0)
        assert stats["mean"] == pytest.approx(float(sims.mean()), abs=0.02)
        assert stats["std"] == pytest.approx(float(sims.std()), rel=0.1)
    assert cache._loaded["m"].coarse is not None
    assert found / (10 * len(queries)) >= 0.99


def test_backfill_stops_between_batches_and_keeps_what_it_embedded(tmp_path: Path) -> None:
    calls: list[int] = []

    def fn(texts: list[str]) -> list[list[float]]:
        calls.append(len(texts))
        return [[float(len(t)), 1.0] for t in texts]

    cache = VectorCache(tmp_path / "vectors.db")
    items = [(f"h{i}", f"text {i}") for i in range(10)]
    rep = cache.backfill(items, CallableEmbedder(fn, name="toy"), batch_size=3, stop=lambda: len(calls) >= 2)
    assert rep.error == "stopped" and rep.embedded == 6 and cache.count("toy") == 6
    rep = cache.backfill(items, CallableEmbedder(fn, name="toy"), batch_size=3)
    assert rep.error is None and rep.cached == 6 and rep.embedded == 4 and cache.count("toy") == 10
