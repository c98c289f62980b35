"""An approximate nearest-neighbour index (HNSW, from the optional ``usearch`` library) over one model's vectors.

Derived data like the FTS index and the snapshot it sits beside (:mod:`agent_memory.backends.files.vector_snapshot`):
the keys are the row numbers of the loaded matrix, the file is written with the snapshot of one cache state and
deleted with it (a purge or prune deletes every snapshot, so a purged vector never lingers here), and a missing,
stale or damaged file only means the exact/coarse pass answers until the index is built again
(:meth:`agent_memory.backends.files.vectors.VectorCache.build_index`, which a backfill calls).

Vectors are stored quantised to int8 (a quarter of the float32 bytes) and a search process memory-maps the file
(``view``): only the graph nodes a query visits are read. The index proposes candidates; their cosines are then
computed exactly from the float32 matrix, so the index's quantisation changes which rows are considered, never a score.
Without ``usearch`` everything works as before (exact search, the PCA coarse pass above 20k vectors).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["ANN_MIN", "Ann", "ann_available"]

log = logging.getLogger("agent_memory")

ANN_MIN = 50_000  # below this the exact pass (or the coarse one) is as quick: no index is built
DTYPE = "i8"  # quantised vectors in the graph; exact float32 cosines rank the candidates
CONNECTIVITY = 16
EXPANSION_ADD = 40
EXPANSION_SEARCH = 128


def ann_available() -> bool:
    """Whether ``usearch`` is installed (the ``embeddings`` extra)."""
    return importlib.util.find_spec("usearch") is not None


def _index_class() -> Any:
    return importlib.import_module("usearch.index").Index


class Ann:
    """One HNSW index whose keys are matrix row numbers. ``path`` is set while it is a read-only memory map."""

    def __init__(self, index: Any, path: Path | None = None) -> None:
        self.index = index
        self.path = path

    @classmethod
    def build(cls, matrix: npt.NDArray[np.float32], threads: int = 0) -> Ann:
        """Index every row of ``matrix`` (``threads=0``: all cores)."""
        index = _index_class()(
            ndim=int(matrix.shape[1]),
            metric="cos",
            dtype=DTYPE,
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=EXPANSION_SEARCH,
        )
        if len(matrix):
            index.add(np.arange(len(matrix), dtype=np.uint64), np.ascontiguousarray(matrix, dtype=np.float32), threads=threads)
        return cls(index)

    @classmethod
    def view(cls, path: Path) -> Ann:
        """Memory-map a saved index (read-only; :meth:`add` loads it into memory first)."""
        index = _index_class().restore(str(path), view=True)
        if index is None:
            raise ValueError(f"{path} is not a usearch index")
        return cls(index, path)

    @property
    def size(self) -> int:
        return int(len(self.index))

    def save(self, path: Path) -> None:
        self.index.save(str(path))

    def _writable(self) -> None:
        if self.path is not None:  # a memory map cannot grow: read the whole file into memory
            index = _index_class().restore(str(self.path), view=False)
            if index is None:
                raise ValueError(f"{self.path} is not a usearch index")
            self.index, self.path = index, None

    def add(self, rows: npt.NDArray[np.int64], matrix: npt.NDArray[np.float32]) -> None:
        """Index ``matrix[i]`` under row number ``rows[i]`` (a row already indexed is replaced)."""
        if not len(rows):
            return
        self._writable()
        keys = np.asarray(rows, dtype=np.uint64)
        present = np.asarray([bool(self.index.contains(int(k))) for k in keys]) if self.size else np.zeros(len(keys), bool)
        if present.any():
            self.index.remove(keys[present])
        self.index.add(keys, np.ascontiguousarray(matrix, dtype=np.float32))

    def candidates(self, q: npt.NDArray[np.float32], count: int) -> npt.NDArray[np.intp]:
        """Row numbers of (about) the ``count`` nearest rows, unordered."""
        count = min(count, self.size)
        if count < 1:
            return np.zeros(0, dtype=np.intp)
        matches = self.index.search(np.asarray(q, dtype=np.float32), count, threads=1)
        return np.asarray(matches.keys, dtype=np.intp)
