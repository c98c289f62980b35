"""Issue 27/32, attacker probe F4: a damaged vector snapshot is never used silently.

A snapshot whose hash list no longer matches its checksum (two lines swapped), whose rows differ from
``vectors.db`` on the spot check, whose meta names data files outside its folder, or whose rows give a
non-finite cosine is rebuilt from ``vectors.db``; a NaN never comes back as a score.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agent_memory.backends.files import vectors as vectors_mod
from agent_memory.backends.files.vector_snapshot import SPOT_ROWS
from agent_memory.backends.files.vectors import VectorCache
from agent_memory.errors import InvalidInputError

N = 40
ONE: Any = pytest.approx(1.0, abs=1e-5)  # a cosine of one (Any: mypy reads approx inside a tuple as no float)
W = 16  # hash width: every line the same length, as a swap needs


@pytest.fixture(autouse=True)
def small_snapshots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors_mod, "SNAPSHOT_MIN", 10)  # a snapshot for a test-sized cache


def fill(root: Path) -> tuple[list[str], np.ndarray]:
    hashes = [f"{i:0{W}x}" for i in range(N)]
    mat = np.random.default_rng(1).normal(size=(N, 8)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    cache = VectorCache.for_root(root)
    cache.put("m", hashes, mat)
    assert cache.size("m") == N  # writes the snapshot
    cache.close()
    return hashes, mat


def snap(root: Path, suffix: str) -> Path:
    (path,) = [p for p in (root / "vectors.db-snap").iterdir() if p.name.endswith(suffix) and not p.name.startswith(".")]
    return path


def meta(root: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads(snap(root, ".json").read_text())
    return data


def unchecked_row() -> int:
    """A row the load-time spot check does not compare (so only the query-time check can catch it)."""
    picked = {0, N - 1, *np.linspace(0, N - 1, num=min(N, SPOT_ROWS)).astype(int).tolist()}
    return min(set(range(N)) - picked)


def test_swapped_hash_lines_are_caught_and_the_snapshot_rebuilt(tmp_path: Path) -> None:
    hashes, mat = fill(tmp_path)
    before = meta(tmp_path)["data"]
    path = snap(tmp_path, ".hashes")
    raw = bytearray(path.read_bytes())
    w = W + 1
    raw[5 * w : 6 * w], raw[7 * w : 8 * w] = raw[7 * w : 8 * w], raw[5 * w : 6 * w]
    path.write_bytes(bytes(raw))
    fresh = VectorCache.for_root(tmp_path)
    ((rid, score),) = fresh.search("m", mat[5], {"alice-rec": hashes[5]}, limit=1)
    assert rid == "alice-rec" and score == pytest.approx(1.0, abs=1e-5)  # was -0.247: row 7's vector
    assert fresh.nearest("m", mat[5], 1)[0][0] == hashes[5]  # was hashes[7]
    assert meta(tmp_path)["data"] != before  # rebuilt from vectors.db
    fresh.close()


@pytest.mark.parametrize("row", ["spot-checked", "unchecked"])
def test_a_nan_in_the_snapshot_is_never_a_score_and_the_snapshot_is_rebuilt(tmp_path: Path, row: str) -> None:
    hashes, mat = fill(tmp_path)
    i = 0 if row == "spot-checked" else unchecked_row()
    f32 = np.memmap(snap(tmp_path, ".f32"), dtype=np.float32, mode="r+", shape=(N, 8))
    f32[i] = np.nan
    f32.flush()
    del f32
    fresh = VectorCache.for_root(tmp_path)
    allowed = {"alice-rec": hashes[i], "other": hashes[(i + 1) % N]}
    for _ in range(2):  # the first search drops the NaN (or the load rebuilt already); the second reads the rebuilt rows
        got = fresh.search("m", mat[i], allowed, limit=2)
        stats: dict[str, float] = {}
        near = fresh.nearest("m", mat[i], N, stats=stats)
        scored = fresh.scores("m", mat[i], allowed)
        assert all(math.isfinite(s) for _, s in [*got, *near, *scored.items()]), (got, near, scored)
        assert all(math.isfinite(v) for v in stats.values()), stats
    assert got[0] == ("alice-rec", ONE) and near[0][0] == hashes[i]
    assert not np.isnan(np.fromfile(snap(tmp_path, ".f32"), dtype=np.float32)).any()  # rebuilt
    fresh.close()


def test_meta_naming_data_outside_its_folder_is_not_followed(tmp_path: Path) -> None:
    hashes, mat = fill(tmp_path)
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    m = meta(tmp_path)
    data = str(m["data"])
    for suffix in (".f32", ".hashes"):  # a copy whose rows say something else, outside the snapshot folder
        (decoy / f"{data}{suffix}").write_bytes(snap(tmp_path, suffix).read_bytes())
    np.zeros((N, 8), dtype=np.float32).tofile(decoy / f"{data}.f32")
    snap(tmp_path, ".json").write_text(json.dumps({**m, "data": f"../decoy/{data}"}))
    fresh = VectorCache.for_root(tmp_path)
    assert fresh.search("m", mat[3], {"r": hashes[3]}, limit=1) == [("r", ONE)]
    assert meta(tmp_path)["data"] != f"../decoy/{data}" and "/" not in str(meta(tmp_path)["data"])
    assert sorted(p.name for p in decoy.iterdir()) == [f"{data}.f32", f"{data}.hashes"]  # read nothing, deleted nothing
    fresh.close()


def test_a_non_finite_vector_is_never_stored(tmp_path: Path) -> None:
    cache = VectorCache.for_root(tmp_path)
    bad = np.ones((2, 8), dtype=np.float32)
    bad[1, 3] = np.nan
    with pytest.raises(InvalidInputError):
        cache.put("m", ["a", "b"], bad)
    with pytest.raises(InvalidInputError):
        cache.put("m", ["c"], np.full((1, 8), np.inf, dtype=np.float32))
    assert cache.count("m") == 0  # nothing of the batch was written
    cache.close()
