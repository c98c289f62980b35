"""A derived, memory-mapped copy of one model's vectors beside ``vectors.db``, kept up to date by appending.

Reading 100k vectors row by row out of SQLite and projecting them for the coarse pass takes seconds, and at a
million the float32 matrix alone is 1.5 GB: a search process must not hold it. The snapshot
(``<root>/vectors.db-snap/``) holds, per model:

- ``<P>-<epoch>-<gen>.f32``: the float32 rows, raw, in SQLite rowid order (mapped read-only: a search touches
  only the rows it reranks);
- ``<P>-<epoch>-<gen>.low``: the rows projected for the coarse pass (float32, ``DIMS`` columns: a sixth of the
  bytes; mapped read-only and read whole by each coarse query);
- ``<P>-<epoch>-<gen>.mid``: the rows on the next ``MID`` principal directions, int8 (a sixth of ``.low``'s
  bytes), for the coarse pass's refining step (mapped read-only; a query reads the rows it refines);
- ``<P>-<epoch>-<gen>.hashes``: the content hashes in row order, one a line;
- ``<P>-<epoch>-<gen>.proj.npz``: the projections, the int8 scale, sample mean and covariance (a few hundred KB);
- ``<P>.json``: the meta, replaced atomically and written last: the cache's *epoch* and *version*
  (:func:`cache_state`; the version is bumped by SQLite triggers on every insert, update and delete of a
  vector), how many rows and hash bytes are valid, and the largest SQLite rowid they hold.

A reader maps the first ``n`` rows the meta names, so bytes a writer appends later never reach it. When the
version has moved on and the only change is new rows (SQLite rowids above the meta's, the row count grown by
exactly as many, no hash already present), the new rows are appended at the meta's offsets and a new meta is
written: a backfill of a thousand vectors into a million-row snapshot writes a thousand rows, not 1.5 GB.
Anything else (an overwritten or deleted row, another epoch, a projection built on fewer than two thirds of
the rows, a damaged or short file) rebuilds it, streaming the rows out of SQLite (never the whole table in
memory). A purge or prune deletes the folder outright (a purged vector must not linger in a derived file).
Writers hold an exclusive lock on ``<P>.lock``; readers take none.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from agent_memory.backends.files.coarse import MID, Coarse, Loaded
from agent_memory.formats.atomic import open_private

try:  # POSIX; elsewhere writers are not serialised across processes (the meta is still replaced atomically)
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = ["SNAPSHOT_SCHEMA", "SNAPSHOT_SUFFIX", "HashList", "cache_state", "drop_snapshots", "sync_snapshot"]

log = logging.getLogger("agent_memory")

SNAPSHOT_SUFFIX = "-snap"  # vectors.db-snap/: a sibling of the database in the root layout
SNAPSHOT_SCHEMA = """
CREATE TABLE IF NOT EXISTS vector_state (k TEXT PRIMARY KEY, v INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS vectors_state_ins AFTER INSERT ON vectors BEGIN
  INSERT INTO vector_state VALUES ('version', 1) ON CONFLICT(k) DO UPDATE SET v = v + 1; END;
CREATE TRIGGER IF NOT EXISTS vectors_state_upd AFTER UPDATE ON vectors BEGIN
  INSERT INTO vector_state VALUES ('version', 1) ON CONFLICT(k) DO UPDATE SET v = v + 1; END;
CREATE TRIGGER IF NOT EXISTS vectors_state_del AFTER DELETE ON vectors BEGIN
  INSERT INTO vector_state VALUES ('version', 1) ON CONFLICT(k) DO UPDATE SET v = v + 1; END;
"""
CHUNK = 65_536  # rows per block when streaming from SQLite or projecting
FORMAT = 2  # 2: a coarse snapshot carries the int8 refining rows (.mid); an older one is rebuilt


def cache_state(conn: sqlite3.Connection) -> tuple[int, int]:
    """``(epoch, version)`` of a vector cache; the epoch is made on first use, so a recreated file differs."""
    rows = dict(conn.execute("SELECT k, v FROM vector_state WHERE k IN ('epoch', 'version')").fetchall())
    if "epoch" not in rows:
        with conn:
            conn.execute("INSERT OR IGNORE INTO vector_state VALUES ('epoch', abs(random()))")
        rows = dict(conn.execute("SELECT k, v FROM vector_state WHERE k IN ('epoch', 'version')").fetchall())
    return int(rows["epoch"]), int(rows.get("version", 0))


class HashList(Sequence[str]):
    """Content hashes in row order, kept as the file's bytes and line offsets (a million 16-character hashes:
    ~25 MB, against ~75 MB as Python strings)."""

    def __init__(self, raw: bytes, n: int) -> None:
        ends = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8) == 10)
        if len(ends) < n:
            raise ValueError(f"hash list holds {len(ends)} lines, the meta {n}")
        self._raw = raw
        self._ends = ends[:n]
        self._sorted: tuple[npt.NDArray[Any], npt.NDArray[np.intp]] | dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        start = int(self._ends[i - 1]) + 1 if i else 0
        return self._raw[start : int(self._ends[i])].decode("ascii")

    def find(self, keys: Sequence[str]) -> list[int]:
        """The row of each of ``keys`` (-1 when absent): a binary search in a sorted copy made on first use
        (fixed-width bytes, 24 bytes a row at a million), or a dict when the hashes differ in length."""
        if self._sorted is None:
            n = len(self._ends)
            width = int(self._ends[0]) if n else 0
            if n and len(self._raw) >= n * (width + 1) and int(self._ends[-1]) == n * (width + 1) - 1:
                grid = np.frombuffer(self._raw, dtype=np.uint8, count=n * (width + 1)).reshape(n, width + 1)
                if (grid[:, width] == 10).all():
                    keys_arr = np.ascontiguousarray(grid[:, :width]).view(f"S{width}").reshape(n)
                    order = np.argsort(keys_arr, kind="stable")
                    self._sorted = (keys_arr[order], order)
            if self._sorted is None:
                self._sorted = {h: i for i, h in enumerate(self)}
        table = self._sorted
        if isinstance(table, dict):
            return [table.get(k, -1) for k in keys]
        sorted_keys, order = table
        if not len(keys):
            return []
        want = np.array([k.encode("ascii", "replace") for k in keys], dtype=sorted_keys.dtype)
        at = np.minimum(np.searchsorted(sorted_keys, want), len(sorted_keys) - 1)
        hit = sorted_keys[at] == want
        exact = np.array([len(k) == sorted_keys.dtype.itemsize for k in keys])  # longer keys were cut by the dtype
        return np.where(hit & exact, order[at], -1).tolist()  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[str]:
        start = 0
        for end in self._ends.tolist():
            yield self._raw[start:end].decode("ascii")
            start = end + 1


def _folder(db: Path) -> Path:
    return Path(str(db) + SNAPSHOT_SUFFIX)


def _prefix(model: str) -> str:
    return hashlib.sha256(model.encode("utf-8", "surrogateescape")).hexdigest()[:16]


@contextlib.contextmanager
def _writer_lock(folder: Path, prefix: str) -> Iterator[None]:
    folder.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(folder / f"{prefix}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _read_meta(folder: Path, model: str) -> dict[str, Any] | None:
    try:
        meta = json.loads((folder / f"{_prefix(model)}.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        log.warning("vector snapshot meta of %s is damaged (%s); rebuilding it", model, exc)
        return None
    return meta if isinstance(meta, dict) and meta.get("model") == model else None


def _write_meta(folder: Path, model: str, meta: dict[str, Any]) -> None:
    path = folder / f"{_prefix(model)}.json"
    tmp = folder / f".{_prefix(model)}.json.{secrets.token_hex(4)}"
    with open_private(tmp) as f:
        f.write(json.dumps(meta).encode("utf-8"))
    os.replace(tmp, path)


MASK = (1 << 64) - 1
SPOT_ROWS = 16  # rows of a mapped snapshot compared with vectors.db (with the first and the last)


def hash_sum(raw: bytes, offset: int = 0) -> int:
    """An order-dependent checksum of hash-list bytes starting at byte ``offset`` of the file: the sum of each
    byte times a weight made from its position (mod 2**64), so the sum of a file is the sum of its parts and an
    append extends it. Two lines swapped, or any byte changed, changes it."""
    total = 0
    for at in range(0, len(raw), 1 << 20):
        chunk = np.frombuffer(raw, dtype=np.uint8, count=min(1 << 20, len(raw) - at), offset=at).astype(np.uint64)
        pos = np.arange(offset + at, offset + at + len(chunk), dtype=np.uint64)
        with np.errstate(over="ignore"):
            weights = (pos + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15) | np.uint64(1)
            total = (total + int(((chunk + np.uint64(1)) * weights).sum(dtype=np.uint64))) & MASK
    return total


def _stem(folder: Path, meta: dict[str, Any]) -> Path:
    """The data files' stem the meta names: a plain name this model's builds use, inside ``folder`` (a meta
    pointing anywhere else is damaged: ValueError)."""
    data = meta["data"]
    prefix = _prefix(str(meta["model"]))
    if not isinstance(data, str) or not re.fullmatch(rf"{prefix}-[0-9]{{1,20}}-[0-9a-f]{{12}}", data):
        raise ValueError(f"the meta names data files {data!r}, not a snapshot of its own in this folder")
    return folder / data


def _map(folder: Path, meta: dict[str, Any]) -> Loaded:
    """The meta's rows, mapped read-only (raises ValueError/OSError/KeyError when the files do not match it:
    a data name that is not this model's own, short files, or a hash list whose checksum differs)."""
    stem = _stem(folder, meta)
    n, dim = int(meta["n"]), int(meta["dim"])
    if n < 1 or dim < 1:
        raise ValueError(f"snapshot of {n} rows × {dim}")
    if (stem.with_suffix(".f32")).stat().st_size < n * dim * 4:
        raise ValueError("the matrix file is shorter than the meta says")
    matrix = np.memmap(stem.with_suffix(".f32"), dtype=np.float32, mode="r", shape=(n, dim))
    with open(stem.with_suffix(".hashes"), "rb") as f:
        raw = f.read(int(meta["hbytes"]))
    if len(raw) != int(meta["hbytes"]):
        raise ValueError("the hash list is shorter than the meta says")
    if hash_sum(raw) != meta.get("hsum"):
        raise ValueError("the hash list's checksum differs from the meta's")
    order = HashList(raw, n)
    coarse = None
    if meta.get("coarse"):
        if meta.get("format") != FORMAT:
            raise ValueError(f"snapshot format {meta.get('format')}, not {FORMAT}")
        dims, mids = int(meta["dims"]), int(meta["mid"])
        if (stem.with_suffix(".low")).stat().st_size < n * dims * 4:
            raise ValueError("the projection file is shorter than the meta says")
        low = np.memmap(stem.with_suffix(".low"), dtype=np.float32, mode="r", shape=(n, dims))
        mid = None
        if mids:
            if (stem.with_suffix(".mid")).stat().st_size < n * mids:
                raise ValueError("the refining file is shorter than the meta says")
            mid = np.memmap(stem.with_suffix(".mid"), dtype=np.int8, mode="r", shape=(n, mids))
        with np.load(stem.with_suffix(".proj.npz"), allow_pickle=False) as z:
            coarse = Coarse(proj=z["proj"], low=low, mean=z["mean"], cov=z["cov"], built_at=int(z["built_at"]))
            if mids:
                coarse.proj_mid, coarse.mid_scale, coarse.mid = z["proj_mid"], z["mid_scale"], mid
        if coarse.proj.shape != (dim, dims):
            raise ValueError("the projection does not match the matrix")
        if mids and (
            coarse.proj_mid is None or coarse.proj_mid.shape != (dim, mids) or coarse.mid_scale is None or coarse.mid_scale.shape != (mids,)
        ):
            raise ValueError("the refining projection does not match the matrix")
    return Loaded(order=order, buf=matrix, n=n, coarse=coarse)


Run = Callable[[Callable[[sqlite3.Connection], Any]], Any]


def sync_snapshot(db: Path, model: str, run: Run, *, min_rows: int, coarse_min: int) -> Loaded | None:
    """The model's vectors mapped from a current snapshot, brought up to date (appended to, or rebuilt) first if
    needed; None below ``min_rows`` vectors, with mixed dimensions, or when the snapshot cannot be written
    (the caller then loads the rows into memory). ``run(fn)`` runs ``fn`` on the cache's connection."""
    folder = _folder(db)
    state: tuple[int, int] = run(cache_state)
    meta = _read_meta(folder, model)
    if meta is not None and (meta.get("epoch"), meta.get("version")) == state:
        try:
            return _checked(_map(folder, meta), model, run)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("vector snapshot of %s is damaged (%s); rebuilding it", model, exc)
    try:
        with _writer_lock(folder, _prefix(model)):
            meta = _read_meta(folder, model)  # another process may have brought it up to date meanwhile
            meta = _update(db, folder, model, run, meta, min_rows=min_rows, coarse_min=coarse_min)
            if meta is None:
                return None
            return _checked(_map(folder, meta), model, run)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("could not write the vector snapshot of %s: %s", model, exc)
        return None


def _checked(loaded: Loaded, model: str, run: Run) -> Loaded:
    """``loaded`` once a few of its rows (the first, the last and :data:`SPOT_ROWS` spread between) equal the
    rows of ``vectors.db`` under the same hash, and are finite; ValueError otherwise (the snapshot is rebuilt)."""
    n = loaded.n
    picks = sorted({0, n - 1, *np.linspace(0, n - 1, num=min(n, SPOT_ROWS)).astype(int).tolist()})
    want = {loaded.order[i]: i for i in picks}
    marks = ",".join("?" for _ in want)

    def spot_rows(conn: sqlite3.Connection) -> list[tuple[str, bytes]]:
        return conn.execute(f"SELECT hash, vec FROM vectors WHERE model = ? AND hash IN ({marks})", (model, *want)).fetchall()

    found = dict(run(spot_rows))
    coarse = loaded.coarse
    for h, i in want.items():
        row = loaded.buf[i]
        if h not in found or not np.isfinite(row).all() or bytes(np.ascontiguousarray(row, dtype=np.float32).data) != found[h]:
            raise ValueError(f"row {i} of the snapshot differs from vectors.db")
        if coarse is not None:  # its projected rows too (to rounding: the files were projected in blocks)
            exact = np.asarray(row, dtype=np.float32)
            if not np.allclose(coarse.low[i], exact @ coarse.proj, rtol=1e-3, atol=1e-4):
                raise ValueError(f"projected row {i} of the snapshot differs from vectors.db")
            want_mid = coarse.quantise(exact.reshape(1, -1))
            if coarse.mid is not None and (
                want_mid is None or np.abs(np.asarray(coarse.mid[i], dtype=np.int16) - want_mid[0].astype(np.int16)).max() > 1
            ):
                raise ValueError(f"refining row {i} of the snapshot differs from vectors.db")
    return loaded


def _update(
    db: Path, folder: Path, model: str, run: Run, meta: dict[str, Any] | None, *, min_rows: int, coarse_min: int
) -> dict[str, Any] | None:
    if meta is not None:
        try:
            _checked(_map(folder, meta), model, run)  # its files are whole and agree with vectors.db
            appended = run(lambda conn: _append(conn, folder, model, meta, coarse_min))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("vector snapshot of %s is damaged (%s); rebuilding it", model, exc)
            appended = None
        if appended is not None:
            return dict(appended)
    built: dict[str, Any] | None = run(lambda conn: _build(conn, folder, model, min_rows, coarse_min))
    return built


@contextlib.contextmanager
def _read_txn(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction: the version and the rows read inside it agree (WAL snapshot isolation)."""
    if conn.in_transaction:
        conn.commit()
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


def _version(conn: sqlite3.Connection) -> tuple[int, int]:
    rows = dict(conn.execute("SELECT k, v FROM vector_state WHERE k IN ('epoch', 'version')").fetchall())
    return int(rows["epoch"]), int(rows.get("version", 0))


def _append(conn: sqlite3.Connection, folder: Path, model: str, meta: dict[str, Any], coarse_min: int) -> dict[str, Any] | None:
    """Append the rows added since ``meta`` (None: only a rebuild will do)."""
    n, dim, top = int(meta["n"]), int(meta["dim"]), int(meta["rowid"])
    with _read_txn(conn):
        epoch, version = _version(conn)
        if epoch != meta.get("epoch"):
            return None
        if version == meta.get("version"):
            return meta
        count = int(conn.execute("SELECT count(*) FROM vectors WHERE model = ?", (model,)).fetchone()[0])
        new = conn.execute(
            "SELECT rowid, hash, dim, vec FROM vectors WHERE model = ? AND rowid > ? ORDER BY rowid", (model, top)
        ).fetchall()
    total = n + len(new)
    if count != total or any(r[2] != dim for r in new):
        return None  # a row was overwritten or deleted, or another dimension: rebuild
    stem = _stem(folder, meta)
    if meta.get("coarse"):
        with np.load(stem.with_suffix(".proj.npz"), allow_pickle=False) as z:
            proj, built_at = z["proj"], int(z["built_at"])
            fitted = Coarse(proj=proj, low=proj[:0], mean=z["mean"], cov=z["cov"], built_at=built_at)
            if int(meta.get("mid", 0)):
                fitted.proj_mid, fitted.mid_scale = z["proj_mid"], z["mid_scale"]
        if meta.get("format") != FORMAT:
            return None
        if total > 1.5 * built_at:
            return None  # the projection was fitted on too few of the rows: refit it
    elif total >= coarse_min:
        return None  # large enough for a projection now
    with open(stem.with_suffix(".hashes"), "rb") as f:
        old = set(f.read(int(meta["hbytes"])).split(b"\n"))
    if any(r[1].encode("ascii") in old for r in new) or len({r[1] for r in new}) != len(new):
        return None
    if not new:
        return {**meta, "version": version}
    mat = np.frombuffer(b"".join(r[3] for r in new), dtype=np.float32).reshape(len(new), dim)
    _write_at(stem.with_suffix(".f32"), n * dim * 4, mat.tobytes())
    if meta.get("coarse"):
        dims = int(meta["dims"])
        _write_at(stem.with_suffix(".low"), n * dims * 4, np.ascontiguousarray(mat @ proj, dtype=np.float32).tobytes())
        mids = int(meta.get("mid", 0))
        more = fitted.quantise(mat) if mids else None
        if more is not None:
            _write_at(stem.with_suffix(".mid"), n * mids, np.ascontiguousarray(more).tobytes())
    text = "".join(r[1] + "\n" for r in new).encode("ascii")
    _write_at(stem.with_suffix(".hashes"), int(meta["hbytes"]), text)
    hsum = (int(meta["hsum"]) + hash_sum(text, int(meta["hbytes"]))) & MASK
    out = {**meta, "version": version, "n": total, "rowid": int(new[-1][0]), "hbytes": int(meta["hbytes"]) + len(text), "hsum": hsum}
    _write_meta(folder, model, out)
    return out


def _write_at(path: Path, offset: int, data: bytes) -> None:
    """Write ``data`` at ``offset`` (past the rows the meta names: bytes a crashed writer left there are dropped)."""
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)
        f.truncate()
        f.flush()
        os.fsync(f.fileno())


def _build(conn: sqlite3.Connection, folder: Path, model: str, min_rows: int, coarse_min: int) -> dict[str, Any] | None:
    """Write the whole snapshot anew, streaming the rows (None below ``min_rows`` or with mixed dimensions)."""
    folder.mkdir(mode=0o700, exist_ok=True)
    prefix = _prefix(model)
    with _read_txn(conn):
        epoch, version = _version(conn)
        count, dims_seen = conn.execute("SELECT count(*), count(DISTINCT dim) FROM vectors WHERE model = ?", (model,)).fetchone()
        if count < max(1, min_rows) or dims_seen != 1:
            return None
        data = f"{prefix}-{epoch}-{secrets.token_hex(6)}"
        stem = folder / data
        n, top, hbytes, dim, hsum = 0, 0, 0, 0, 0
        with open_private(stem.with_suffix(".f32")) as fm, open_private(stem.with_suffix(".hashes")) as fh:
            cur = conn.execute("SELECT rowid, hash, dim, vec FROM vectors WHERE model = ? ORDER BY rowid", (model,))
            while rows := cur.fetchmany(CHUNK):
                dim = int(rows[0][2])
                fm.write(b"".join(r[3] for r in rows))
                text = "".join(r[1] + "\n" for r in rows).encode("ascii")
                fh.write(text)
                hsum = (hsum + hash_sum(text, hbytes)) & MASK
                n, top, hbytes = n + len(rows), int(rows[-1][0]), hbytes + len(text)
            for f in (fm, fh):
                f.flush()
                os.fsync(f.fileno())
    if os.path.getsize(stem.with_suffix(".f32")) != n * dim * 4:
        raise ValueError("a vector blob has the wrong size")
    meta: dict[str, Any] = {
        "model": model, "epoch": epoch, "version": version, "n": n, "dim": dim, "rowid": top, "hbytes": hbytes,
        "hsum": hsum, "data": data, "coarse": False,
    }  # fmt: skip
    if n >= coarse_min:
        matrix = np.memmap(stem.with_suffix(".f32"), dtype=np.float32, mode="r", shape=(n, dim))
        coarse = Coarse.fit(matrix)
        with contextlib.ExitStack() as files:
            fl = files.enter_context(open_private(stem.with_suffix(".low")))
            fd = None if coarse.proj_mid is None else files.enter_context(open_private(stem.with_suffix(".mid")))
            for i in range(0, n, CHUNK):
                block = np.asarray(matrix[i : i + CHUNK], dtype=np.float32)
                fl.write(np.ascontiguousarray(block @ coarse.proj, dtype=np.float32).tobytes())
                mid = coarse.quantise(block)
                if fd is not None and mid is not None:
                    fd.write(np.ascontiguousarray(mid).tobytes())
            for f in (fl, fd) if fd is not None else (fl,):
                f.flush()
                os.fsync(f.fileno())
        extra: dict[str, Any] = {} if coarse.proj_mid is None else {"proj_mid": coarse.proj_mid, "mid_scale": coarse.mid_scale}
        with open_private(stem.with_suffix(".proj.npz")) as fz:
            np.savez(fz, proj=coarse.proj, mean=coarse.mean, cov=coarse.cov, built_at=n, **extra)
        del matrix
        mids = 0 if coarse.proj_mid is None else MID
        meta.update(coarse=True, dims=int(coarse.proj.shape[1]), mid=mids, format=FORMAT)
    _write_meta(folder, model, meta)
    for old in folder.glob(prefix + "-*"):  # earlier builds of this model (a process mapping one keeps its inode)
        if not old.name.startswith(data + "."):
            old.unlink(missing_ok=True)
    return meta


def drop_snapshots(db: Path) -> None:
    """Delete every snapshot of this cache (after a purge or prune, or when the database is recreated)."""
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(_folder(db))


def snapshot_bytes(db: Path) -> int:
    """Bytes the snapshots of this cache take on disk."""
    folder = _folder(db)
    return sum(p.stat().st_size for p in folder.iterdir()) if folder.is_dir() else 0
