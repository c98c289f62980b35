"""One model's vectors in memory (:class:`Loaded`), and a coarse pass that keeps brute-force cosine search cheap at scale.

Exact search reads the whole float32 matrix per query (100k × 384 = 154 MB): memory-bandwidth bound, and
slow on a busy machine. Above :data:`COARSE_MIN` vectors, the matrix is also kept projected onto its top
:data:`DIMS` principal directions (a sixth of the bytes); a query scores that projection, keeps a generous
shortlist, and ranks the shortlist with exact cosines. The cosine distribution a query needs for fusion
(mean and standard deviation over all vectors) comes from the sample mean and covariance: ``mean = μ·q``,
``var = qᵀΣq``, no pass over the matrix at all.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["COARSE_MIN", "DIMS", "INT8_MIN", "MID", "Coarse", "Loaded", "Low8", "one_thread", "top_k"]

COARSE_MIN = 20_000  # below this an exact pass is as cheap as the coarse one
DIMS = 64
MID = 64  # the next principal directions, int8, for the refining pass
SAMPLE = 4096
INT8_MIN = 250_000  # from here the refined first pass reads an int8 copy of ``low`` (see :class:`Low8`)


@dataclass(slots=True)
class Coarse:
    """The projection (``proj``: dim × DIMS), the projected rows (``low``: n × DIMS), sample mean and covariance;
    ``proj_mid`` (dim × MID) the next principal directions and ``mid`` (n × MID, int8: ``round(x @ proj_mid /
    mid_scale)`` clipped to ±127) the rows on them, for the refining pass (see :meth:`shortlist`)."""

    proj: npt.NDArray[np.float32]
    low: npt.NDArray[np.float32]
    mean: npt.NDArray[np.float64]
    cov: npt.NDArray[np.float64]
    built_at: int
    proj_mid: npt.NDArray[np.float32] | None = None
    mid_scale: npt.NDArray[np.float32] | None = None
    mid: npt.NDArray[np.int8] | None = None
    low8: Low8 | None = None
    searched: bool = False  # a first search ran: the int8 copy pays off from the second (a one-shot process never makes it)

    @classmethod
    def build(cls, matrix: npt.NDArray[np.float32], dims: int | None = None, sample: int = SAMPLE) -> Coarse:
        fitted = cls.fit(matrix, dims, sample)
        fitted.low = np.ascontiguousarray(matrix @ fitted.proj)
        fitted.mid = fitted.quantise(matrix)
        return fitted

    def quantise(self, rows: npt.NDArray[np.float32]) -> npt.NDArray[np.int8] | None:
        """``rows`` on the refining directions, int8 (None without them)."""
        if self.proj_mid is None or self.mid_scale is None:
            return None
        out: npt.NDArray[np.int8] = np.clip(np.rint((rows @ self.proj_mid) / self.mid_scale), -127, 127).astype(np.int8)
        return out

    @classmethod
    def fit(cls, matrix: npt.NDArray[np.float32], dims: int | None = None, sample: int = SAMPLE) -> Coarse:
        """The projection, mean and covariance from a sample of the rows (``low`` left empty: the caller
        projects the rows, in blocks when they are mapped from disk)."""
        n, dim = matrix.shape
        dims = DIMS if dims is None else dims
        rng = np.random.default_rng(0)
        rows = matrix[np.sort(rng.choice(n, size=min(n, sample), replace=False))].astype(np.float64)
        mean = rows.mean(axis=0)
        cov = np.cov(rows, rowvar=False, bias=True) if len(rows) > 1 else np.zeros((dim, dim))
        # principal directions of the uncentred vectors (top eigenvectors of the dim × dim Gram matrix):
        # what dot products with unit queries depend on most
        _, vecs = np.linalg.eigh(rows.T @ rows)
        ordered = vecs[:, ::-1]
        proj = np.ascontiguousarray(ordered[:, : min(dims, dim)], dtype=np.float32)
        proj_mid = scale = None
        if dim >= proj.shape[1] + MID:  # the next MID directions, scaled so the sample's rows fill ±127 (×1.1)
            proj_mid = np.ascontiguousarray(ordered[:, proj.shape[1] : proj.shape[1] + MID], dtype=np.float32)
            spread = np.abs(rows.astype(np.float32) @ proj_mid).max(axis=0) if len(rows) else np.ones(MID, dtype=np.float32)
            scale = np.maximum(spread * 1.1 / 127, 1e-12).astype(np.float32)
        return cls(
            proj=proj,
            low=np.zeros((0, proj.shape[1]), dtype=np.float32),
            mean=mean,
            cov=cov,
            built_at=n,
            proj_mid=proj_mid,
            mid_scale=scale,
        )

    def extend(self, rows: npt.NDArray[np.float32]) -> None:
        """Project appended rows (the projection itself is rebuilt once the matrix grows by half)."""
        if len(rows):
            projected = rows @ self.proj
            self.low = np.concatenate([self.low, projected])
            if self.low8 is not None:
                self.low8 = self.low8.extended(projected)
            if self.mid is not None:
                more = self.quantise(rows)
                self.mid = None if more is None else np.concatenate([self.mid, more])

    def stale(self, n: int) -> bool:
        return n != len(self.low) or n > 1.5 * self.built_at

    def stats(self, q: npt.NDArray[np.float32]) -> tuple[float, float]:
        """Mean and standard deviation of ``q``'s cosines over all rows (from the sample)."""
        qd = q.astype(np.float64)
        return float(self.mean @ qd), float(np.sqrt(max(0.0, float(qd @ self.cov @ qd))))

    def shortlist(self, q: npt.NDArray[np.float32], k: int, first: int | None = None) -> npt.NDArray[np.intp]:
        """Row numbers of the ``k`` best rows by projected score (unordered).

        With the refining directions (``mid``) and ``first`` > ``k``: the ``first`` best rows on the DIMS
        directions, of which the ``k`` best on DIMS + MID directions (the MID from int8). Measured on the
        benchmark's 1M set (40 queries, recall@10 after the exact rerank against exact search): 8,000 rows
        straight from the 64 directions .9875; 8,000 refined to 1,000 .9875; 16,000 refined to 1,000 .9975 —
        the exact rerank reads 1,000 rows instead of 8,000."""
        qp = q @ self.proj
        n = len(self.low)
        if self.mid is None or self.proj_mid is None or self.mid_scale is None or first is None or first <= k or k >= n:
            return top_k(self.low @ qp, k)
        # The copy costs ~0.4 s of CPU and a read of ``low`` at 1M rows, more than one float pass: a process's first
        # search (all a cold CLI call makes) takes the float pass; every later one the int8 copy.
        low8 = self.int8() if n >= INT8_MIN and self.searched else None
        self.searched = True
        qm = (q @ self.proj_mid) * self.mid_scale
        if low8 is None:
            scores = self.low @ qp
            wide = np.sort(top_k(scores, min(n, first)))
            refined = scores[wide] + np.asarray(self.mid[wide], dtype=np.float32) @ qm
        else:  # ranked on the exact int32 sums; only the kept rows dequantised, and refined in int8 too
            raw, step = low8.raw(qp)
            wide = np.sort(top_k(raw, min(n, first)))
            refined = raw[wide].astype(np.float32) * np.float32(step) + refine8(self.mid[wide], qm)
        return wide[top_k(refined, k)]

    def int8(self) -> Low8 | None:
        """The int8 copy of ``low`` the first pass reads (made on first use; None without ONNX Runtime)."""
        if self.low8 is None or self.low8.n != len(self.low):
            if _matmul8t() is None:
                return None
            self.low8 = Low8.of(self.low)
        return self.low8


@dataclass(slots=True)
class Low8:
    """``low`` quantised for the first pass at scale, stored **transposed**: ``cols`` (DIMS × n, int8: ``round(low /
    scale)`` clipped to ±127, one row per direction), ``bias`` (n, int32: 128 × each row's sum of its int8 values) and
    the per-column ``scale`` (the largest magnitude of each column when made, / 127; rows appended later are clipped
    to it). A query's projection is quantised to int8 on one scale and shifted to uint8 (+128); ONNX Runtime's
    ``MatMulInteger`` multiplies that 1 × DIMS row by ``cols`` (int32 sums over the whole row at once), and
    subtracting ``bias`` undoes the shift: the exact int8 dot product of every row. In this layout the product
    runs along the rows: at 1M rows ~3 ms of CPU on this machine, against ~7 for the n × DIMS matrix times a
    DIMS × 1 vector (docs/meaning.md "Round 3"), with the same sums. The scores are dequantised, so the refining
    pass adds the ``mid`` directions to them; the exact rerank then ranks the refined list, as before.

    Made in memory from ``low`` (nothing on disk changes); a mapped ``low`` is read in blocks with ``pread``, so
    the 256 MB of float rows at 1M never become part of the process's RSS (the copy is 64 MB, ``bias`` 4 MB)."""

    cols: npt.NDArray[np.int8]
    bias: npt.NDArray[np.int32]
    scale: npt.NDArray[np.float32]

    @property
    def n(self) -> int:
        return int(self.cols.shape[1])

    @classmethod
    def of(cls, low: npt.NDArray[np.float32]) -> Low8:
        n, dims = low.shape
        peak = np.zeros(dims, dtype=np.float32)
        for block in _blocks(low):
            np.maximum(peak, np.abs(block).max(axis=0), out=peak)
        scale = np.maximum(peak / 127, 1e-12).astype(np.float32)
        cols = np.empty((dims, n), dtype=np.int8)
        bias = np.empty(n, dtype=np.int32)
        at = 0
        for block in _blocks(low):
            rows = _quantise8(block, scale)
            cols[:, at : at + len(block)] = rows.T
            bias[at : at + len(block)] = _bias(rows)
            at += len(block)
        return cls(cols=cols, bias=bias, scale=scale)

    def extended(self, projected: npt.NDArray[np.float32]) -> Low8:
        rows = _quantise8(projected, self.scale)
        return Low8(
            cols=np.ascontiguousarray(np.concatenate([self.cols, rows.T], axis=1)),
            bias=np.concatenate([self.bias, _bias(rows)]),
            scale=self.scale,
        )

    def scores(self, qp: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """About ``low @ qp`` for every row (float32; the error is the two roundings')."""
        raw, step = self.raw(qp)
        out: npt.NDArray[np.float32] = raw.astype(np.float32) * np.float32(step)
        return out

    def raw(self, qp: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.int32], float]:
        """Every row's int32 dot product with the quantised ``qp`` (ordered as the scores are) and the step that
        turns a sum into a score."""
        run = _matmul8t()
        scaled = qp.astype(np.float32) * self.scale
        top = float(np.abs(scaled).max()) if len(scaled) else 0.0
        step = top / 127 if top > 0 else 1.0
        q8 = np.clip(np.rint(scaled / step), -127, 127).astype(np.int8)
        assert run is not None  # int8() made this only with ONNX Runtime there
        raw: npt.NDArray[np.int32] = run(_shifted(q8).reshape(1, -1), self.cols).reshape(-1)
        raw -= self.bias  # the +128 of the shifted query
        return raw, step


def refine8(mid: npt.NDArray[np.int8], qm: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """About ``mid @ qm`` (``mid``: the kept rows on the refining directions, int8) with ``qm`` quantised to int8
    on one scale and the product on ``MatMulInteger``: ~0.4 ms for 16,000 rows against ~3 for converting them to
    float first. Its rounding is a half step of ``qm``'s largest term per direction, on directions that carry a
    small share of a cosine (recall@10 on the benchmark's 1M set unchanged: docs/meaning.md "Round 3")."""
    run = _matmul8()
    top = float(np.abs(qm).max()) if len(qm) else 0.0
    if run is None or top == 0.0 or not len(mid):
        return np.asarray(np.asarray(mid, dtype=np.float32) @ qm, dtype=np.float32)
    step = top / 127
    q8 = np.clip(np.rint(qm / step), -127, 127).astype(np.int8)
    sums = run(_shifted(np.ascontiguousarray(mid)), q8.reshape(-1, 1)).reshape(-1).astype(np.int64)
    sums -= 128 * int(q8.astype(np.int64).sum())  # the +128 of the shifted rows
    out: npt.NDArray[np.float32] = sums.astype(np.float32) * np.float32(step)
    return out


def _shifted(values: npt.NDArray[np.int8]) -> npt.NDArray[np.uint8]:
    """int8 values + 128 as uint8 (flipping the sign bit: no arithmetic, no copy of the int8 array's type)."""
    out: npt.NDArray[np.uint8] = values.view(np.uint8) ^ np.uint8(0x80)
    return out


def _quantise8(block: npt.NDArray[np.float32], scale: npt.NDArray[np.float32]) -> npt.NDArray[np.int8]:
    out: npt.NDArray[np.int8] = np.clip(np.rint(block / scale), -127, 127).astype(np.int8)
    return out


def _bias(rows: npt.NDArray[np.int8]) -> npt.NDArray[np.int32]:
    out: npt.NDArray[np.int32] = (128 * rows.astype(np.int32).sum(axis=1)).astype(np.int32)
    return out


def _blocks(low: npt.NDArray[np.float32], block: int = 65_536) -> Any:
    """``low`` in blocks of rows; a mapped one read with ``pread`` (its pages never enter the process's RSS)."""
    n, dims = low.shape
    if not isinstance(low, np.memmap) or n == 0:
        for i in range(0, n, block):
            yield np.asarray(low[i : i + block], dtype=np.float32)
        return
    buf = np.empty((block, dims), dtype=np.float32)
    view = buf.data.cast("B")
    fd = os.open(str(low.filename), os.O_RDONLY)
    try:
        for i in range(0, n, block):
            j = min(n, i + block)
            want = (j - i) * dims * 4
            if os.preadv(fd, [view[:want]], int(low.offset) + i * dims * 4) != want:
                raise OSError(f"short read of rows {i}..{j} from {low.filename}")
            yield buf[: j - i]
    finally:
        os.close(fd)


# ONNX (opset 13) graphs of one MatMulInteger node (made with onnx.helper: make_node("MatMulInteger", ["A", "B"], ["Y"]),
# ir_version 8, serialised; tests/test_coarse_int8.py rebuilds both with onnx and compares the bytes).
# MATMUL8: Y (n × 1, int32) = A (n × d, uint8) · B (d × 1, int8): the refining pass (rows shifted to uint8).
MATMUL8 = (
    b'\x08\x08:`\n\x18\n\x01A\n\x01B\x12\x01Y"\rMatMulInteger\x12\x01gZ\x15\n\x01A\x12\x10\n\x0e\x08\x02'
    b"\x12\n\n\x03\x12\x01n\n\x03\x12\x01dZ\x14\n\x01B\x12\x0f\n\r\x08\x03\x12\t\n\x03\x12\x01d\n\x02\x08"
    b"\x01b\x14\n\x01Y\x12\x0f\n\r\x08\x06\x12\t\n\x03\x12\x01n\n\x02\x08\x01B\x04\n\x00\x10\r"
)
# MATMUL8T: Y (1 × n, int32) = A (1 × d, uint8) · B (d × n, int8): the first pass over the transposed copy.
MATMUL8T = (
    b'\x08\x08:`\n\x18\n\x01A\n\x01B\x12\x01Y"\rMatMulInteger\x12\x01gZ\x14\n\x01A\x12\x0f\n\r\x08\x02'
    b"\x12\t\n\x02\x08\x01\n\x03\x12\x01dZ\x15\n\x01B\x12\x10\n\x0e\x08\x03\x12\n\n\x03\x12\x01d\n\x03\x12"
    b"\x01nb\x14\n\x01Y\x12\x0f\n\r\x08\x06\x12\t\n\x02\x08\x01\n\x03\x12\x01nB\x04\n\x00\x10\r"
)
_MatMul8 = Callable[[npt.NDArray[np.uint8], npt.NDArray[np.int8]], npt.NDArray[np.int32]]
_session: list[_MatMul8 | None] = []  # [run] once tried: a callable, or None when ONNX Runtime is missing or fails
_session_t: list[_MatMul8 | None] = []  # the same for MATMUL8T


def _open8(graph: bytes) -> _MatMul8 | None:
    """A ``MatMulInteger`` graph on one ONNX Runtime thread (None without ONNX Runtime)."""
    try:
        ort = importlib.import_module("onnxruntime")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        sess = ort.InferenceSession(graph, opts, providers=["CPUExecutionProvider"])
    except Exception:  # pragma: no cover - optional
        return None
    return lambda a, b: sess.run(None, {"A": a, "B": b})[0]  # type: ignore[no-any-return]


def _matmul8() -> _MatMul8 | None:
    """``MATMUL8`` on one ONNX Runtime thread (None without ONNX Runtime: the refining pass stays float)."""
    if not _session:
        _session.append(_open8(MATMUL8))
    return _session[0]


def _matmul8t() -> _MatMul8 | None:
    """``MATMUL8T`` on one ONNX Runtime thread (None without ONNX Runtime, or when ``_matmul8`` says so: the first
    pass stays float)."""
    if _matmul8() is None:
        return None
    if not _session_t:
        _session_t.append(_open8(MATMUL8T))
    return _session_t[0]


SELECT_MIN = 50_000  # below this a plain argpartition is as quick as the threshold pass
SELECT_SAMPLE = 16_384


def top_k(scores: npt.NDArray[Any], k: int) -> npt.NDArray[np.intp]:
    """Positions of the ``k`` largest of ``scores`` (unordered; NaN never beats a number): the set
    ``np.argpartition(-scores, k - 1)[:k]`` gives, up to ties at the k-th value.

    At a million scores a full argpartition costs ~20 ms of CPU (measured at 1M, load 9); instead a threshold
    is read off an evenly spaced sample (set for about 1.5× the ``k`` needed), one vectorised comparison keeps the
    scores above it, and only those are partitioned. Should the sample have over-estimated the threshold (fewer
    than ``k`` above it), the full argpartition runs: the result never depends on the sample."""
    n = len(scores)
    if k >= n:
        return np.arange(n)
    if k < 1:
        return np.zeros(0, dtype=np.intp)
    if n >= SELECT_MIN and k * 8 <= n:
        step = max(1, n // SELECT_SAMPLE)
        sample = scores[::step]
        m = len(sample)
        want = min(m, int(1.5 * k * m / n) + 16)
        cut = np.partition(sample, m - want)[m - want]
        if np.isfinite(cut):
            keep = np.flatnonzero(scores >= cut)
            if len(keep) >= k:
                return keep[np.argpartition(-scores[keep], k - 1)[:k]]
    return np.argpartition(-scores, k - 1)[:k]


_limit: Callable[[], Any] | None = None


def one_thread() -> Any:
    """A context in which BLAS runs single-threaded (when ``threadpoolctl`` is installed, as it is with the
    embeddings extra). Vector search is memory-bound: extra BLAS threads add nothing but, on a busy machine,
    stall on scheduling (measured: a 2,000-row product 0.5 ms single-threaded, 56 ms with two threads under load)."""
    global _limit
    if _limit is None:
        try:
            controller = importlib.import_module("threadpoolctl").ThreadpoolController()
            _limit = lambda: controller.limit(limits=1, user_api="blas")  # noqa: E731
        except Exception:  # pragma: no cover - optional
            _limit = contextlib.nullcontext
    return _limit()


@dataclass(slots=True)
class Loaded:
    """One model's vectors: ``buf[:n]`` rows (in memory, or mapped read-only from the snapshot), ``order`` the
    content hash of each row, ``hashes`` maps a content hash to its row (made on first use: a coarse search
    needs only ``order``). ``stamp`` is the cache file's state when loaded: another process's write changes it
    and forces a reload."""

    index: dict[str, int] | None = None
    order: Sequence[str] = field(default_factory=list)
    buf: npt.NDArray[np.float32] = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    n: int = 0
    stamp: tuple[int, ...] = ()
    coarse: Coarse | None = None
    ann: Any = None  # an :class:`agent_memory.backends.files.ann.Ann` over the rows, once built (kept in step by :meth:`add`)

    @property
    def matrix(self) -> npt.NDArray[np.float32]:
        return self.buf[: self.n]

    @property
    def hashes(self) -> dict[str, int]:
        if self.index is None:
            self.index = {h: i for i, h in enumerate(self.order)}
        return self.index

    def rows_of(self, keys: Sequence[str]) -> list[int]:
        """The row of each content hash in ``keys`` (-1 when it has no vector)."""
        find = getattr(self.order, "find", None)
        if self.index is None and find is not None:
            return list(find(keys))
        index = self.hashes
        return [index.get(k, -1) for k in keys]

    def take(self, rows: npt.NDArray[np.intp] | Sequence[int]) -> npt.NDArray[np.float32]:
        """The rows ``rows`` as a new array (read-only when read from the snapshot). From a mapped snapshot they are read with ``pread``, not through the
        mapping: faulting a few scattered rows in maps whole large folios of the file (measured at 1M rows: 1,100
        rows through the mapping added 358 MB to the process's RSS, read with pread none, in 4.5 ms CPU)."""
        idx = np.asarray(rows, dtype=np.intp).reshape(-1)
        if not self.mapped or not len(idx):
            return np.asarray(self.buf[idx], dtype=np.float32)
        mm: Any = self.buf
        dim = int(self.buf.shape[1])
        width = dim * 4
        bad = (idx < 0) | (idx >= self.n)
        if bad.any():
            raise IndexError(int(idx[bad][0]))
        offsets = (idx.astype(np.int64) * width + int(mm.offset)).tolist()
        fd = os.open(mm.filename, os.O_RDONLY)
        try:  # one pread a row, joined once (a third less CPU than reading into slices of the result)
            data = b"".join([os.pread(fd, width, at) for at in offsets])
        finally:
            os.close(fd)
        if len(data) != len(idx) * width:
            raise OSError(f"short read of {len(idx)} rows from {mm.filename}")
        return np.frombuffer(data, dtype=np.float32).reshape(len(idx), dim)

    def dot(self, q: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """``matrix @ q`` over every row (a mapped snapshot is read in blocks with ``pread``, for the same reason
        as :meth:`take`: the process's RSS stays a block, not the file)."""
        if not self.mapped:
            return np.asarray(self.matrix @ q, dtype=np.float32)
        mm: Any = self.buf
        dim = int(self.buf.shape[1])
        out = np.empty(self.n, dtype=np.float32)
        block = 16_384
        buf = np.empty((block, dim), dtype=np.float32)
        view = buf.data.cast("B")
        fd = os.open(mm.filename, os.O_RDONLY)
        try:
            for i in range(0, self.n, block):  # one read per block of consecutive rows
                j = min(self.n, i + block)
                want = (j - i) * dim * 4
                if os.preadv(fd, [view[:want]], int(mm.offset) + i * dim * 4) != want:
                    raise OSError(f"short read of rows {i}..{j} from {mm.filename}")
                out[i:j] = buf[: j - i] @ q
        finally:
            os.close(fd)
        return out

    @property
    def mapped(self) -> bool:
        """Whether the rows are mapped from the snapshot (read-only: a write reloads instead of updating them)."""
        return isinstance(self.buf, np.memmap)

    def add(self, hashes: Sequence[str], mat: npt.NDArray[np.float32]) -> None:
        """Put rows in place (a known hash is overwritten; new ones appended, the buffer growing ×1.5)."""
        new = [i for i, h in enumerate(hashes) if h not in self.hashes]
        changed: list[tuple[int, int]] = []
        for i, h in enumerate(hashes):
            row = self.hashes.get(h)
            if row is not None:
                self.buf[row] = mat[i]
                self.coarse = None  # a projected row changed: rebuild on next use
                changed.append((row, i))
        if self.ann is not None and changed:
            self.ann.add(np.array([r for r, _ in changed], dtype=np.int64), mat[[i for _, i in changed]])
        if self.coarse is not None:
            self.coarse.extend(mat[new])
        if not new:
            return
        need = self.n + len(new)
        if need > self.buf.shape[0]:
            grown = np.empty((max(need, int(self.buf.shape[0] * 1.5) + 64), mat.shape[1]), dtype=np.float32)
            grown[: self.n] = self.buf[: self.n]
            self.buf = grown
        self.buf[self.n : need] = mat[new]
        if self.ann is not None:
            self.ann.add(np.arange(self.n, need, dtype=np.int64), mat[new])
        if not isinstance(self.order, list):
            self.order = list(self.order)
        index = self.hashes
        for j, i in enumerate(new):
            index[hashes[i]] = self.n + j
            self.order.append(hashes[i])
        self.n = need
