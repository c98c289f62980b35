"""Vectors as derived data: a cache keyed by (model name, content hash) in ``<root>/vectors.db``.

Like the FTS index, the cache can be deleted at any time and is rebuilt by :meth:`VectorCache.backfill`.
A hand-edited record has a new content hash, so its old vector is simply unused (and pruned);
a new embedder name means new keys, so changing the model re-embeds. Embedding is never part
of a write: records are durable and lexically searchable at once and vectors catch up in batches.

Search is brute-force cosine over a float32 matrix held in memory (one dot product per query),
restricted to the ``{record id: content hash}`` map the caller passes in: the set of records the
caller may see. The dense side can never return an id outside that map. Above 20k vectors
:meth:`VectorCache.nearest` shortlists with a PCA projection (:mod:`~agent_memory.backends.files.coarse`);
above :data:`~agent_memory.backends.files.ann.ANN_MIN`, once :meth:`VectorCache.build_index` has run (a
backfill runs it), with an HNSW index (:mod:`~agent_memory.backends.files.ann`, optional ``usearch``).
Either way the shortlist's cosines are exact, and ids are checked against what the caller may see
afterwards (:func:`agent_memory.backends.files.hybrid`'s ``_dense`` widens or falls back to exact).
See ``docs/meaning.md``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agent_memory.backends.files.ann import ANN_MIN, Ann, ann_available
from agent_memory.backends.files.coarse import COARSE_MIN, Coarse, Loaded, one_thread, top_k
from agent_memory.backends.files.vector_meta import EMBEDDERS_SCHEMA
from agent_memory.backends.files.vector_seam import live_items, visible_for_hashes, visible_hashes
from agent_memory.backends.files.vector_snapshot import SNAPSHOT_SCHEMA, cache_state, drop_snapshots, sync_snapshot
from agent_memory.embeddings import Embedder, EmbeddingError, embedder_spec
from agent_memory.errors import InvalidInputError, StorageError
from agent_memory.formats.atomic import private_file
from agent_memory.model.reports import BackfillReport

log = logging.getLogger("agent_memory")

__all__ = ["VectorCache", "BackfillReport", "live_items", "visible_hashes", "visible_for_hashes", "VECTORS_FILE"]

VECTORS_FILE = "vectors.db"
_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, hash TEXT NOT NULL, dim INTEGER NOT NULL, vec BLOB NOT NULL,
                                    PRIMARY KEY (model, hash));
"""
    + EMBEDDERS_SCHEMA
    + SNAPSHOT_SCHEMA
)
# Whether a backfill builds the HNSW index by itself. Off: on the clustered 100k benchmark set its recall@10
# against exact was .47 to .72 (the coarse pass: .985), below the .98 required (docs/meaning.md); an index
# built explicitly with build_index is still used by searches.
ANN_AUTO = False
SNAPSHOT_MIN = 2_000  # below this, reading the rows from SQLite is as quick as the snapshot


def shortlist_size(n: int, limit: int) -> int:
    """Rows the coarse pass hands to the exact rerank without a refining pass: 10× the answer, at least 1,000,
    and at least 0.8% of the rows (recall@10 against exact on the benchmark's 1M set, 40 queries: 1,000 rows
    .9425, 2,000 .9625, 4,000 .975, 8,000 .9825; at 100k 1,000 rows gave .9825; docs/benchmarks.md "Vectors at
    a million"). With the refining pass (:meth:`Coarse.shortlist`) the 64 directions keep twice that share,
    :func:`first_pass_size`, and the refined list the exact rerank reads is ``max(10 × limit, 1,000)``."""
    return max(10 * limit, 1000, n // SHORTLIST_SHARE)


def first_pass_size(n: int, limit: int) -> int:
    """Rows the 64-direction pass keeps for the refining pass: 1.6% of the rows (16,000 at 1M: recall@10 .9975
    after refining to 1,000, against .9875 for 8,000), at least the refined list's size."""
    return max(10 * limit, 1000, 2 * (n // SHORTLIST_SHARE))


SHORTLIST_SHARE = 125
SAMPLES_KEPT = 8  # callers whose stats sample (up to 4,096 rows each) a cache keeps gathered


class VectorCache:
    """The vector cache file of one root. Thread-safe; one SQLite connection per thread."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._loaded: dict[str, Loaded] = {}
        self._generation = 0
        self._samples: dict[Hashable, npt.NDArray[np.float32]] = {}  # sample_stats: the rows of a few callers' samples

    @classmethod
    def for_root(cls, root: str | Path) -> VectorCache:
        return cls(Path(root) / VECTORS_FILE)

    # -- storage -------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        gen = getattr(self._local, "gen", -1)
        if conn is not None and gen == self._generation and self.path.exists():
            return conn
        if conn is not None:
            conn.close()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(private_file(self.path), timeout=30.0, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            log.warning("vector cache %s unreadable (%s); rebuilding it", self.path, exc)
            conn = self._recreate()
        self._local.conn, self._local.gen = conn, self._generation
        return conn

    def _recreate(self) -> sqlite3.Connection:
        drop_snapshots(self.path)
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                Path(str(self.path) + suffix).unlink()
        conn = sqlite3.connect(private_file(self.path), timeout=30.0, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(_SCHEMA)
        return conn

    def _guarded(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        try:
            return fn(self._conn())
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise StorageError(f"vector cache busy: {exc}") from exc
            log.warning("vector cache %s corrupt (%s); rebuilding it", self.path, exc)
            with self._lock:
                self._generation += 1
                self._loaded.clear()
                self._samples.clear()
                self._local.conn = self._recreate()
                self._local.gen = self._generation
            return fn(self._local.conn)

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def put(self, model: str, hashes: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        """Store one vector per content hash for ``model``."""
        if len(hashes) != len(vectors):
            raise InvalidInputError(f"{len(hashes)} hashes but {len(vectors)} vectors")
        if not len(hashes):
            return
        mat = np.ascontiguousarray(vectors, dtype=np.float32)
        if mat.ndim != 2 or not np.isfinite(mat).all():
            raise InvalidInputError("vectors must be a 2-d array of finite numbers (NaN or infinity is never stored)")
        dim = int(mat.shape[1])
        rows = [(model, h, dim, mat[i].tobytes()) for i, h in enumerate(hashes)]

        def write(conn: sqlite3.Connection) -> None:
            with conn:
                conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)

        before = self._stamp()
        self._guarded(write)
        with self._lock:
            loaded = self._loaded.get(model)
            if loaded is None:
                return
            if loaded.stamp != before or loaded.n == 0 or loaded.buf.shape[1] != dim or loaded.mapped:
                # someone else wrote too, or the rows are mapped from the snapshot: reload on next search (from
                # the snapshot, which appends just the new rows)
                self._loaded.pop(model, None)
                self._samples.clear()
                return
            loaded.add(list(hashes), mat)  # our own write: update in place, no reload of the whole matrix
            loaded.stamp = self._stamp()

    def note_embedder(self, embedder: Embedder) -> None:
        """Record which embedder makes ``embedder.name``'s vectors (the spec that rebuilds it, if any): what a
        search without an embedder uses (:mod:`agent_memory.backends.files.vector_meta`)."""
        spec = embedder_spec(embedder)

        def write(conn: sqlite3.Connection) -> None:
            row = conn.execute("SELECT spec FROM embedders WHERE model = ?", (embedder.name,)).fetchone()
            if row is not None and row[0] == spec:
                return  # unchanged: no commit, so a loaded matrix is not reloaded for nothing
            with conn:
                conn.execute("INSERT OR REPLACE INTO embedders (model, spec) VALUES (?, ?)", (embedder.name, spec))

        self._guarded(write)

    def known(self, model: str, hashes: Iterable[str]) -> set[str]:
        """Which of ``hashes`` already have a vector for ``model``."""
        wanted = set(hashes)
        have: set[str] = self._guarded(lambda c: {r[0] for r in c.execute("SELECT hash FROM vectors WHERE model = ?", (model,))})
        return wanted & have

    def with_vector(self, model: str, hashes: Iterable[str]) -> set[str]:
        """Which of ``hashes`` have a vector for ``model`` in the loaded matrix (no scan of the table)."""
        keys = list(dict.fromkeys(hashes))
        return {h for h, row in zip(keys, self._matrix(model).rows_of(keys), strict=True) if row >= 0}

    def count(self, model: str | None = None) -> int:
        sql, args = ("SELECT count(*) FROM vectors", ()) if model is None else ("SELECT count(*) FROM vectors WHERE model = ?", (model,))
        return int(self._guarded(lambda c: c.execute(sql, args).fetchone()[0]))

    def models(self) -> list[str]:
        return [r[0] for r in self._guarded(lambda c: c.execute("SELECT DISTINCT model FROM vectors").fetchall())]

    def prune(self, model: str, keep: Iterable[str]) -> int:
        """Drop vectors of other models and of content hashes no longer live; returns how many."""
        keep_set = set(keep)

        def run(conn: sqlite3.Connection) -> int:
            with conn:
                n = conn.execute("DELETE FROM vectors WHERE model != ?", (model,)).rowcount
                conn.execute("DELETE FROM embedders WHERE model != ?", (model,))
                stale = [(model, r[0]) for r in conn.execute("SELECT hash FROM vectors WHERE model = ?", (model,)) if r[0] not in keep_set]
                conn.executemany("DELETE FROM vectors WHERE model = ? AND hash = ?", stale)
                return int(n) + len(stale)

        removed: int = self._guarded(run)
        if removed:
            drop_snapshots(self.path)  # a dropped vector must not linger in a derived file
            with self._lock:
                self._loaded.clear()
                self._samples.clear()
        return removed

    def drop(self, hashes: Iterable[str]) -> int:
        """Delete the vectors of ``hashes`` under every model (purge); returns how many."""
        rows = [(h,) for h in set(hashes)]

        def run(conn: sqlite3.Connection) -> int:
            with conn:
                return sum(conn.execute("DELETE FROM vectors WHERE hash = ?", r).rowcount for r in rows)

        removed: int = self._guarded(run)
        if removed:
            drop_snapshots(self.path)  # a dropped vector must not linger in a derived file
            with self._lock:
                self._loaded.clear()
                self._samples.clear()
        return removed

    # -- filling -------------------------------------------------------------------------
    def backfill(
        self,
        items: Iterable[tuple[str, str]],
        embedder: Embedder,
        *,
        batch_size: int = 64,
        progress: Callable[[int, int], None] | None = None,
        prune: bool = False,
        stop: Callable[[], bool] | None = None,
    ) -> BackfillReport:
        """Embed every ``(content hash, text)`` not cached yet for ``embedder.name``, in batches.

        ``progress(done, todo)`` is called after each batch. An embedder failure stops the backfill
        and is reported in ``error`` (what was embedded so far stays); it never raises for that.
        ``prune=True`` also drops vectors whose hash is not among ``items`` and other models' vectors.
        ``stop()`` is asked before each batch; when true the backfill ends with ``error="stopped"``.
        """
        if batch_size < 1:
            raise InvalidInputError("batch_size must be at least 1")
        started = time.perf_counter()
        texts: dict[str, str] = {}
        for h, text in items:
            if h and h not in texts:
                texts[h] = text
        report = BackfillReport(model=embedder.name, total=len(texts))
        have = self.known(embedder.name, texts)
        todo = [h for h in texts if h not in have]
        report.cached = len(texts) - len(todo)
        if progress:
            progress(0, len(todo))
        if todo or report.cached:
            self.note_embedder(embedder)
        for i in range(0, len(todo), batch_size):
            if stop is not None and stop():  # abandoned between batches (what is embedded stays)
                report.error = "stopped"
                break
            batch = todo[i : i + batch_size]
            try:
                vecs = embedder.embed([texts[h] for h in batch])
            except (EmbeddingError, InvalidInputError) as exc:
                report.error = str(exc)
                break
            self.put(embedder.name, batch, vecs)
            report.embedded += len(batch)
            if progress:
                progress(report.embedded, len(todo))
        if prune and report.error is None:
            report.pruned = self.prune(embedder.name, texts)
        if ANN_AUTO and report.error is None and report.total >= ANN_MIN:
            self.build_index(embedder.name, stop=stop)
        report.seconds = round(time.perf_counter() - started, 3)
        return report

    # -- search --------------------------------------------------------------------------
    def _stamp(self) -> tuple[int, ...]:
        """The cache file's state (size and mtime of the database and its WAL): changes with every commit."""
        out: list[int] = []
        for suffix in ("", "-wal"):
            try:
                st = os.stat(str(self.path) + suffix)
                out += [st.st_size, st.st_mtime_ns]
            except OSError:
                out += [-1, -1]
        return tuple(out)

    def _matrix(self, model: str) -> Loaded:
        """The model's vectors, loaded once and kept until the cache file changes under us (another process).
        No cache file: none, and nothing is created (a search of a root without vectors writes nothing)."""
        stamp = self._stamp()
        with self._lock:
            loaded = self._loaded.get(model)
        if loaded is not None and loaded.stamp == stamp:
            return loaded
        if not self.path.exists():
            return Loaded(index={}, stamp=stamp)
        self._guarded(cache_state)  # makes the epoch once per file (a write): before the stamp is taken
        stamp = self._stamp()
        # above SNAPSHOT_MIN: mapped from the snapshot (appended to or rebuilt first when the vectors changed)
        snap = sync_snapshot(self.path, model, self._guarded, min_rows=SNAPSHOT_MIN, coarse_min=COARSE_MIN)
        if snap is not None:
            snap.stamp = stamp  # the state before the snapshot was read: it may be newer, never older
            with self._lock:
                self._loaded[model] = snap
            return snap
        rows = self._guarded(lambda c: c.execute("SELECT hash, dim, vec FROM vectors WHERE model = ?", (model,)).fetchall())
        dims = {r[1] for r in rows}
        if len(dims) > 1:
            raise EmbeddingError(f"vector cache holds mixed dimensions {sorted(dims)} for {model}")
        dim = dims.pop() if dims else 0
        mat = np.empty((len(rows), dim), dtype=np.float32)
        hashes: dict[str, int] = {}
        for i, (h, _, blob) in enumerate(rows):
            mat[i] = np.frombuffer(blob, dtype=np.float32)
            hashes[h] = i
        loaded = Loaded(index=hashes, order=list(hashes), buf=mat, n=len(rows), stamp=stamp)
        with self._lock:
            self._loaded[model] = loaded
        return loaded

    def search(
        self,
        model: str,
        query: npt.NDArray[np.float32],
        allowed: Mapping[str, str],
        *,
        limit: int = 100,
        min_score: float | None = None,
        stats: dict[str, float] | None = None,
    ) -> list[tuple[str, float]]:
        """The ``limit`` ids of ``allowed`` (``{record id: content hash}``) nearest ``query`` by cosine.

        ``stats`` (if given) receives the mean and std of the cosines over all of ``allowed``.

        Records without a vector yet are skipped (lexical search still covers them).
        """
        if limit < 1 or not allowed:
            return []
        loaded = self._matrix(model)
        if loaded.matrix.shape[0] == 0:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != loaded.matrix.shape[1]:
            raise EmbeddingError(f"query has dimension {q.shape[0]}, cached vectors have {loaded.matrix.shape[1]}")
        ids: list[str] = []
        rows: list[int] = []
        for rid, row in zip(allowed, loaded.rows_of(list(allowed.values())), strict=True):
            if row >= 0:
                ids.append(rid)
                rows.append(row)
        if not rows:
            return []
        with one_thread():
            sims = loaded.dot(q)[rows] if len(rows) * 4 >= loaded.matrix.shape[0] else loaded.take(rows) @ q
        sims = self._finite(model, sims)
        if stats is not None:
            stats.update(mean=float(sims.mean()), std=float(sims.std()))
        k = min(limit, len(rows))
        top = top_k(sims, k)
        top = top[np.argsort(-sims[top], kind="stable")]
        out = [(ids[j], float(sims[j])) for j in top if np.isfinite(sims[j])]
        if min_score is not None:
            out = [(r, s) for r, s in out if s >= min_score]
        return out

    def nearest(
        self, model: str, query: npt.NDArray[np.float32], limit: int, stats: dict[str, float] | None = None
    ) -> list[tuple[str, float]]:
        """The ``limit`` nearest content hashes over the whole cache (no ids: the caller maps hashes to
        the ids it may see, e.g. with :func:`visible_for_hashes`). ``stats`` receives the cosines' mean and std."""
        loaded = self._matrix(model)
        n = loaded.matrix.shape[0]
        if n == 0 or limit < 1:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != loaded.matrix.shape[1]:
            raise EmbeddingError(f"query has dimension {q.shape[0]}, cached vectors have {loaded.matrix.shape[1]}")
        ann = loaded.ann if loaded.ann is not None and loaded.ann.size == n else None
        with one_thread():
            if ann is not None:  # HNSW candidates (a margin over the answer), exact cosines (docs/meaning.md)
                rows = np.sort(ann.candidates(q, max(2 * limit, 100)))
                rows = rows[rows < n]  # a row being appended by another thread
                sims = loaded.take(rows) @ q
                if stats is not None:
                    mean, std = self._coarse(loaded).stats(q)
                    stats.update(mean=mean, std=std)
            elif n >= COARSE_MIN:  # projected pass, exact cosines on a shortlist 10× the answer (docs/meaning.md)
                coarse = self._coarse(loaded)
                if coarse.mid is not None:  # refined: 1.6% of the rows on 64 directions, the best 1,000 on 128
                    rows = np.sort(coarse.shortlist(q, min(n, max(10 * limit, 1000)), first=first_pass_size(n, limit)))
                else:
                    rows = np.sort(coarse.shortlist(q, min(n, shortlist_size(n, limit))))
                sims = loaded.take(rows) @ q
                if stats is not None:
                    mean, std = coarse.stats(q)
                    stats.update(mean=mean, std=std)
            else:
                rows = np.arange(n)
                sims = loaded.dot(q)
                if stats is not None:
                    stats.update(mean=float(sims.mean()), std=float(sims.std()))
        sims = self._finite(model, sims)
        k = min(limit, len(rows))
        top = np.argpartition(-sims, k - 1)[:k] if k < len(rows) else np.arange(len(rows))
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(loaded.order[int(rows[j])], float(sims[j])) for j in top if np.isfinite(sims[j])]

    def indexed(self, model: str) -> bool:
        """Whether ``model``'s vectors have a current ANN index (:meth:`build_index`)."""
        loaded = self._matrix(model)
        return loaded.ann is not None and loaded.ann.size == loaded.n

    def build_index(self, model: str, *, force: bool = False, stop: Callable[[], bool] | None = None) -> bool:
        """Build (or bring up to date) the ANN index of ``model``'s vectors and store it with the snapshot.

        Nothing to do below :data:`ANN_MIN` vectors or without ``usearch``; returns whether an index now serves
        searches. Best effort: a failure logs and leaves the exact/coarse pass in charge. ``force`` rebuilds."""
        if not ann_available():
            return False
        loaded = self._matrix(model)
        if loaded.n < ANN_MIN:
            return False
        ann = loaded.ann
        if force or ann is None or ann.size != loaded.n:
            if stop is not None and stop():
                return False
            try:
                ann = Ann.build(loaded.matrix[: loaded.n])
            except (RuntimeError, ValueError, MemoryError) as exc:
                log.warning("could not build the vector index of %s: %s", model, exc)
                return False
        with self._lock:  # rows our own writes appended while it was built join it (put holds this lock)
            if ann.size < loaded.n:
                ann.add(np.arange(ann.size, loaded.n, dtype=np.int64), loaded.matrix[ann.size :])
            loaded.ann = ann
        return True  # kept in this process only (experimental: not stored with the snapshot)

    def _coarse(self, loaded: Loaded) -> Coarse:
        with self._lock:
            coarse = loaded.coarse
            if coarse is None or coarse.stale(loaded.n):
                coarse = loaded.coarse = Coarse.build(loaded.matrix)
            return coarse

    def scores(self, model: str, query: npt.NDArray[np.float32], wanted: Mapping[str, str]) -> dict[str, float]:
        """Cosines of the records in ``wanted`` (``{id: content hash}``) that have a vector."""
        loaded = self._matrix(model)
        pairs = [(rid, row) for rid, row in zip(wanted, loaded.rows_of(list(wanted.values())), strict=True) if row >= 0]
        if not pairs:
            return {}
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        with one_thread():
            sims = self._finite(model, loaded.take([row for _, row in pairs]) @ q)
        return {rid: float(s) for (rid, _), s in zip(pairs, sims, strict=True) if np.isfinite(s)}

    def sample_stats(
        self, model: str, query: npt.NDArray[np.float32], key: Hashable, hashes: Callable[[], Sequence[str]]
    ) -> dict[str, float]:
        """Mean and std of ``query``'s cosines over the vectors of ``hashes()`` (those that have one and are finite;
        empty below two). ``key`` names that list (a caller and the index state it was read in): the rows are
        gathered once per key and matrix, so a caller's next query costs one small product. A few keys are kept."""
        loaded = self._matrix(model)
        full = (key, id(loaded), loaded.n)
        with self._lock:
            rows = self._samples.get(full)
        if rows is None:
            found = [r for r in loaded.rows_of(list(hashes())) if r >= 0]
            rows = loaded.take(found) if found else np.zeros((0, loaded.matrix.shape[1]), dtype=np.float32)
            rows = rows[np.isfinite(rows).all(axis=1)] if len(rows) else rows
            with self._lock:
                if len(self._samples) >= SAMPLES_KEPT:
                    self._samples.pop(next(iter(self._samples)))
                self._samples[full] = rows
        if len(rows) < 2:
            return {}
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != rows.shape[1]:
            raise EmbeddingError(f"query has dimension {q.shape[0]}, cached vectors have {rows.shape[1]}")
        with one_thread():
            sims = (rows @ q).astype(np.float64)
        return {"mean": float(sims.mean()), "std": float(sims.std())}

    def _finite(self, model: str, sims: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """``sims`` with any NaN or infinity (a damaged snapshot: :meth:`put` never stores one) set to -inf, which
        callers drop; the snapshot is then deleted and the next search rebuilds it from ``vectors.db``."""
        bad = ~np.isfinite(sims)
        if not bad.any():
            return sims
        log.warning("vector snapshot of %s holds %d non-finite cosines; dropped them and rebuilding it", model, int(bad.sum()))
        with self._lock:
            self._loaded.pop(model, None)
            self._samples.clear()
        drop_snapshots(self.path)
        out = np.array(sims, dtype=np.float64)
        out[bad] = -np.inf
        return out

    def size(self, model: str) -> int:
        """How many vectors of ``model`` are loaded for search."""
        return int(self._matrix(model).matrix.shape[0])

    def memory_bytes(self, model: str) -> int:
        """Bytes held in memory for ``model``'s matrix (after the first search)."""
        loaded = self._loaded.get(model)
        return int(loaded.matrix.nbytes) if loaded is not None else 0
