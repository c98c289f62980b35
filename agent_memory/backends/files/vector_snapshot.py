"""A derived snapshot of one model's vectors beside ``vectors.db``, so a fresh process loads them in milliseconds.

Reading 100k vectors row by row out of SQLite and projecting them for the coarse pass takes seconds; a CLI
search pays that on every call. The snapshot (``<root>/vectors.db-snap/``) holds, per model, the float32
matrix as a ``.npy`` file (memory-mapped copy-on-write: nothing is read until a row is used, and nothing is
written back), the content hashes in row order, and the coarse projection. It is keyed by the cache's
*epoch* (a random number made with the database) and *version* (bumped by SQLite triggers on every insert,
update and delete of a vector), so any change to the vectors — from any process — makes it stale; a stale or
damaged snapshot is simply rebuilt from ``vectors.db``. A purge or prune deletes it outright (a purged
vector must not linger in a derived file). Files are written to a temporary name and renamed.

Above :data:`~agent_memory.backends.files.ann.ANN_MIN` vectors the snapshot may also hold an HNSW index of the
rows (``.usearch``, :mod:`agent_memory.backends.files.ann`), memory-mapped read-only by a search process. A
damaged or unreadable index file (or no ``usearch`` installed) only drops the index: the matrix still serves.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

import numpy as np

from agent_memory.backends.files.ann import Ann, ann_available
from agent_memory.backends.files.coarse import Coarse, Loaded

__all__ = ["SNAPSHOT_SCHEMA", "SNAPSHOT_SUFFIX", "add_index", "cache_state", "drop_snapshots", "read_snapshot", "write_snapshot"]

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


def cache_state(conn: sqlite3.Connection) -> tuple[int, int]:
    """``(epoch, version)`` of a vector cache; the epoch is made on first use, so a recreated file differs."""
    rows = dict(conn.execute("SELECT k, v FROM vector_state WHERE k IN ('epoch', 'version')").fetchall())
    if "epoch" not in rows:
        with conn:
            conn.execute("INSERT OR IGNORE INTO vector_state VALUES ('epoch', abs(random()))")
        rows = dict(conn.execute("SELECT k, v FROM vector_state WHERE k IN ('epoch', 'version')").fetchall())
    return int(rows["epoch"]), int(rows.get("version", 0))


def _folder(db: Path) -> Path:
    return Path(str(db) + SNAPSHOT_SUFFIX)


def _prefix(model: str) -> str:
    return hashlib.sha256(model.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _stem(db: Path, model: str, state: tuple[int, int]) -> Path:
    """Files of one state have their own names: once complete they never change (a reader never sees a mix)."""
    return _folder(db) / f"{_prefix(model)}-{state[0]}-{state[1]}"


def read_snapshot(db: Path, model: str, state: tuple[int, int]) -> Loaded | None:
    """The model's vectors from a current snapshot, or None (missing, stale or damaged: rebuild)."""
    stem = _stem(db, model, state)
    try:
        meta = json.loads(stem.with_suffix(".json").read_text(encoding="utf-8"))  # written last: the files are complete
        if meta.get("model") != model:
            return None
        matrix = np.load(stem.with_suffix(".npy"), mmap_mode="c", allow_pickle=False)
        hashes = stem.with_suffix(".hashes").read_text(encoding="ascii").split("\n") if meta["n"] else []
        if matrix.dtype != np.float32 or matrix.ndim != 2 or matrix.shape[0] != meta["n"] or len(hashes) != meta["n"]:
            raise ValueError(f"snapshot shape {matrix.shape} does not match {meta['n']} rows")
        coarse = None
        if meta.get("coarse"):
            with np.load(stem.with_suffix(".coarse.npz"), allow_pickle=False) as z:
                coarse = Coarse(proj=z["proj"], low=z["low"], mean=z["mean"], cov=z["cov"], built_at=int(z["built_at"]))
            if len(coarse.low) != meta["n"]:
                raise ValueError("coarse projection does not match the matrix")
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        log.warning("vector snapshot %s is damaged (%s); rebuilding it", stem, exc)
        return None
    order = list(hashes)
    loaded = Loaded(hashes={h: i for i, h in enumerate(order)}, order=order, buf=matrix, n=len(order), coarse=coarse)
    if meta.get("ann") and ann_available():
        try:
            ann = Ann.view(stem.with_suffix(".usearch"))
            if ann.size != loaded.n:
                raise ValueError(f"index holds {ann.size} rows, the matrix {loaded.n}")
            loaded.ann = ann
        except (OSError, ValueError, RuntimeError) as exc:
            log.warning("vector index %s is unreadable (%s); searching without it", stem, exc)
    return loaded


def write_snapshot(db: Path, model: str, state: tuple[int, int], loaded: Loaded, coarse: Coarse | None) -> None:
    """Write the snapshot of ``loaded`` for ``state`` (best effort: a failure only logs; the cache is unchanged)."""
    stem = _stem(db, model, state)
    try:
        stem.parent.mkdir(mode=0o700, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=stem.parent, prefix=".tmp-") as tmp:
            part = Path(tmp) / "s"
            np.save(part.with_suffix(".npy"), np.ascontiguousarray(loaded.matrix, dtype=np.float32), allow_pickle=False)
            part.with_suffix(".hashes").write_text("\n".join(loaded.order), encoding="ascii")
            if coarse is not None:
                np.savez(
                    part.with_suffix(".coarse.npz"),
                    proj=coarse.proj,
                    low=coarse.low,
                    mean=coarse.mean,
                    cov=coarse.cov,
                    built_at=coarse.built_at,
                )
            ann = loaded.ann is not None and loaded.ann.size == loaded.n
            if ann:
                loaded.ann.save(part.with_suffix(".usearch"))
            meta = {"model": model, "epoch": state[0], "version": state[1], "n": loaded.n, "coarse": coarse is not None, "ann": ann}
            part.with_suffix(".json").write_text(json.dumps(meta), encoding="utf-8")
            for suffix in (".npy", ".hashes", ".coarse.npz", ".usearch", ".json"):  # the meta last: it marks the set complete
                src = part.with_suffix(suffix)
                if src.exists():
                    os.replace(src, stem.with_suffix(suffix))
        for old in stem.parent.glob(_prefix(model) + "-*"):  # earlier states of this model: stale now
            if not old.name.startswith(stem.name + "."):
                old.unlink(missing_ok=True)
    except (OSError, ValueError, RuntimeError) as exc:
        log.warning("could not write the vector snapshot %s: %s", stem, exc)


def drop_snapshots(db: Path) -> None:
    """Delete every snapshot of this cache (after a purge or prune, or when the database is recreated)."""
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(_folder(db))


def add_index(db: Path, model: str, state: tuple[int, int], ann: Ann) -> bool:
    """Add ``ann`` to the existing snapshot of ``state`` (its matrix unchanged: only the index and the meta are
    written; nothing when it holds an index of as many rows already); False when there is no such snapshot
    (write the whole one with :func:`write_snapshot`)."""
    stem = _stem(db, model, state)
    try:
        meta = json.loads(stem.with_suffix(".json").read_text(encoding="utf-8"))
        if meta.get("model") != model or meta.get("n") != ann.size:
            return False
        if meta.get("ann") and stem.with_suffix(".usearch").exists():
            return True
        with tempfile.TemporaryDirectory(dir=stem.parent, prefix=".tmp-") as tmp:
            part = Path(tmp) / "s"
            ann.save(part.with_suffix(".usearch"))
            part.with_suffix(".json").write_text(json.dumps({**meta, "ann": True}), encoding="utf-8")
            os.replace(part.with_suffix(".usearch"), stem.with_suffix(".usearch"))
            os.replace(part.with_suffix(".json"), stem.with_suffix(".json"))
        return True
    except FileNotFoundError:
        return False
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
        log.warning("could not add the vector index to %s: %s", stem, exc)
        return False
