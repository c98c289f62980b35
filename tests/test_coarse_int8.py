"""The coarse pass's int8 first pass at scale (coarse.py ``Low8``, ``INT8_MIN``): ONNX Runtime's MatMulInteger over
an in-memory int8 copy of ``low`` (stored transposed, a query row times DIMS × n), and the int8 refining pass
(``refine8``); their scores, their use by the refined shortlist, appends, a mapped ``low`` read with pread, and
the float fallback without ONNX Runtime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import agent_memory.backends.files.coarse as coarse_mod
import agent_memory.backends.files.vectors as vectors_mod
from agent_memory.backends.files.coarse import Coarse, Low8
from agent_memory.backends.files.vectors import VectorCache

pytest.importorskip("onnxruntime")
DIM = 160  # room for 64 + MID directions


@pytest.fixture(autouse=True)
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors_mod, "SNAPSHOT_MIN", 10)
    monkeypatch.setattr(vectors_mod, "COARSE_MIN", 20)
    monkeypatch.setattr(coarse_mod, "INT8_MIN", 100)


def clustered(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(12, DIM)).astype(np.float32)
    m = centres[rng.integers(0, 12, n)] + 0.6 * rng.normal(size=(n, DIM)).astype(np.float32)
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize(
    ("a", "b", "y", "stored"),
    [((["n", "d"]), (["d", 1]), (["n", 1]), "MATMUL8"), (([1, "d"]), (["d", "n"]), ([1, "n"]), "MATMUL8T")],
)
def test_the_stored_graphs_are_the_ones_onnx_makes(a: list[object], b: list[object], y: list[object], stored: str) -> None:
    onnx = pytest.importorskip("onnx")
    h, tp = onnx.helper, onnx.TensorProto
    graph = h.make_graph(
        [h.make_node("MatMulInteger", ["A", "B"], ["Y"])],
        "g",
        [h.make_tensor_value_info("A", tp.UINT8, a), h.make_tensor_value_info("B", tp.INT8, b)],
        [h.make_tensor_value_info("Y", tp.INT32, y)],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    model.ir_version = 8
    assert model.SerializeToString() == getattr(coarse_mod, stored)


def test_the_transposed_copy_gives_the_exact_int8_dot_products() -> None:
    """``cols`` is DIMS × n and ``raw`` is exactly the int8 rows times the int8 query (the shift undone by ``bias``)."""
    mat = clustered(3000, 11)
    fitted = Coarse.build(mat)
    low8 = fitted.int8()
    assert low8 is not None and low8.cols.dtype == np.int8 and low8.cols.shape == (fitted.low.shape[1], 3000) and low8.n == 3000
    rows = coarse_mod._quantise8(fitted.low, low8.scale).astype(np.int64)
    assert np.array_equal(low8.cols.T.astype(np.int64), rows)
    for i in range(3):
        qp = clustered(1, 50 + i)[0] @ fitted.proj
        raw, step = low8.raw(qp)
        scaled = qp * low8.scale
        q8 = np.clip(np.rint(scaled / (np.abs(scaled).max() / 127)), -127, 127).astype(np.int64)
        assert raw.dtype == np.int32 and np.array_equal(raw.astype(np.int64), rows @ q8)
        assert step == pytest.approx(float(np.abs(scaled).max()) / 127)


def test_the_int8_refining_product_tracks_the_float_one() -> None:
    """``refine8`` (int8 query on MatMulInteger) is the float product of the int8 rows to within half a step per
    direction, and without ONNX Runtime it is the float product itself."""
    rng = np.random.default_rng(3)
    mid = rng.integers(-127, 128, size=(5000, 64)).astype(np.int8)
    qm = rng.normal(size=64).astype(np.float32)
    want = mid.astype(np.float32) @ qm
    got = coarse_mod.refine8(mid, qm)
    assert got.dtype == np.float32 and got.shape == want.shape
    step = float(np.abs(qm).max()) / 127
    assert np.abs(got - want).max() <= 127 * 64 * step / 2 + 1e-3
    assert np.corrcoef(got, want)[0, 1] > 0.999
    assert not np.array_equal(got, want)  # it did run on int8
    assert np.array_equal(coarse_mod.refine8(mid[:0], qm), np.zeros(0, dtype=np.float32))


def test_int8_scores_track_the_float_product() -> None:
    """The dequantised scores are the float product to within the two roundings, and rank alike."""
    mat = clustered(3000, 1)
    fitted = Coarse.build(mat)
    low8 = fitted.int8()
    assert low8 is not None and low8.cols.dtype == np.int8 and low8.cols.shape == fitted.low.shape[::-1]
    for i in range(5):
        q = clustered(1, 100 + i)[0]
        qp = q @ fitted.proj
        want = fitted.low @ qp
        got = low8.scores(qp)
        assert got.dtype == np.float32 and got.shape == want.shape
        bound = float(np.abs(fitted.low).max(axis=0) @ np.abs(qp)) / 127  # ~ the two half-step errors, summed loosely
        assert np.abs(got - want).max() <= bound
        assert np.corrcoef(got, want)[0, 1] > 0.99


def test_the_refined_shortlist_reads_the_int8_copy_and_keeps_the_nearest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From INT8_MIN rows the first pass is the int8 one; the exact top 10 still comes through the shortlist."""
    monkeypatch.setattr(vectors_mod, "first_pass_size", lambda n, limit: 2500)  # refined to 1,000 of 6,000 rows
    n = 6000
    mat = clustered(n, 2)
    hashes = [f"{i:064x}" for i in range(n)]
    cache = VectorCache.for_root(tmp_path)
    cache.put("m", hashes, mat)
    hit = 0
    for i in range(0, n, 600):
        q = mat[i] + 0.2 * clustered(1, 7 + i)[0]
        q /= np.linalg.norm(q)
        got = {h for h, _ in cache.nearest("m", q, 10)}
        hit += len(got & {hashes[j] for j in np.argsort(-(mat @ q))[:10]})
    coarse = cache._matrix("m").coarse
    assert coarse is not None and coarse.low8 is not None and coarse.low8.n == n
    assert hit >= 98  # of 100
    cache.close()


def test_appended_rows_are_quantised_with_the_same_scale() -> None:
    mat = clustered(2000, 3)
    fitted = Coarse.build(mat[:1500])
    first = fitted.int8()
    assert first is not None
    fitted.extend(mat[1500:])
    assert fitted.low8 is not None and fitted.low8.n == 2000 and fitted.int8() is fitted.low8
    assert np.array_equal(fitted.low8.scale, first.scale)
    whole = Low8(cols=first.cols[:, :0], bias=first.bias[:0], scale=first.scale).extended(fitted.low)
    assert np.array_equal(fitted.low8.cols, whole.cols) and np.array_equal(fitted.low8.bias, whole.bias)
    assert np.array_equal(fitted.low8.cols[:, :1500], first.cols) and fitted.low8.cols.flags["C_CONTIGUOUS"]


def test_a_mapped_low_is_read_in_blocks_to_the_same_copy(tmp_path: Path) -> None:
    mat = clustered(1000, 4)
    fitted = Coarse.build(mat)
    path = tmp_path / "x.low"
    path.write_bytes(b"\0" * 64 + fitted.low.tobytes())
    mapped = np.memmap(path, dtype=np.float32, mode="r", offset=64, shape=fitted.low.shape)
    in_memory, from_file = Low8.of(fitted.low), Low8.of(mapped)
    small_blocks = list(coarse_mod._blocks(mapped, block=300))
    assert [len(b) for b in small_blocks] == [300, 300, 300, 100]
    assert np.array_equal(in_memory.cols, from_file.cols) and np.array_equal(in_memory.bias, from_file.bias)
    assert np.array_equal(in_memory.scale, from_file.scale)


def test_without_onnx_runtime_the_first_pass_stays_float(monkeypatch: pytest.MonkeyPatch) -> None:
    mat = clustered(2000, 5)
    fitted = Coarse.build(mat)
    q = clustered(1, 9)[0]
    monkeypatch.setattr(coarse_mod, "_session", [None])
    assert fitted.int8() is None
    got = np.sort(fitted.shortlist(q, 100, first=400))
    monkeypatch.setattr(coarse_mod, "INT8_MIN", 10**9)  # the float path, as before INT8_MIN existed
    assert np.array_equal(got, np.sort(fitted.shortlist(q, 100, first=400))) and fitted.low8 is None


def test_a_processs_first_search_takes_the_float_pass_and_the_copy_comes_with_the_second(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cold CLI call searches once: making the int8 copy (~0.4 s CPU at 1M rows) would cost it more than it saves."""
    monkeypatch.setattr(coarse_mod, "INT8_MIN", 1000)
    mat = clustered(3000, 4)
    fitted = Coarse.build(mat)
    q = mat[5]
    first = np.sort(fitted.shortlist(q, 100, first=400))
    assert fitted.low8 is None  # the first search did not make the copy
    second = np.sort(fitted.shortlist(q, 100, first=400))
    assert fitted.low8 is not None and fitted.low8.n == 3000
    assert len(np.intersect1d(first, second)) >= 95  # the two passes agree on the shortlist (int8 rounding aside)
