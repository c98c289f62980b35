"""Every file a memory root holds is private: 0600 files, 0700 folders, whatever the umask (fixH 3).

``vectors.db`` (and its -wal/-shm), the vector snapshot's files (vectors.db-snap/*.f32, .hashes, .low, .mid,
.proj.npz, .json) and ``episodes/.index.db`` were created with the umask's mode (0644 under the usual 022) while
every other file of the root was 0600: one more user on the machine could read the embeddings of private records
and the episode index's text. They are now made by ``formats.atomic.private_file``/``open_private``.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from _matrix import cli_env

from agent_memory import MemoryStore
from agent_memory.backends.files import vectors as vectors_mod
from agent_memory.backends.files.vectors import VectorCache
from agent_memory.episodes import EpisodeStore, build_episode

N = 40


@pytest.fixture
def open_umask(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(vectors_mod, "SNAPSHOT_MIN", 10)  # a snapshot for a test-sized cache
    monkeypatch.setattr(vectors_mod, "COARSE_MIN", 20)  # with its coarse projection
    old = os.umask(0o022)  # the common default: what a file made without an explicit mode gets 0644 from
    try:
        yield
    finally:
        os.umask(old)


def too_open(root: Path) -> list[str]:
    out = []
    for p in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(p.lstat().st_mode)
        want = 0o700 if p.is_dir() else 0o600
        if mode & 0o077 or (p.is_dir() and mode != want):
            out.append(f"{oct(mode)} {p.relative_to(root)}")
    return out


def test_every_file_of_a_used_root_is_private(tmp_path: Path, open_umask: None) -> None:
    root = tmp_path / "m"
    subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "init", str(root)], check=True, capture_output=True, timeout=120, env=cli_env()
    )
    with MemoryStore(root) as store:
        store.remember("Alice private: diagnosis is migraine.", user_id="alice")
    rng = np.random.default_rng(1)
    mat = rng.normal(size=(N, 8)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    hashes = [f"{i:064x}" for i in range(N)]
    cache = VectorCache.for_root(root)
    cache.put("m", hashes, mat)
    cache.search("m", mat[3], {f"id{i}": h for i, h in enumerate(hashes)}, limit=5)  # builds the snapshot
    cache.close()
    snap = root / "vectors.db-snap"
    assert {p.suffix for p in snap.iterdir()} >= {".f32", ".hashes", ".low", ".npz", ".json"}
    episodes = EpisodeStore(root)
    episodes.write(build_episode("alice deploys billing", user_id="alice"))
    assert episodes.list("billing", user_id="alice")  # the episode index exists
    assert (root / "episodes" / ".index.db").is_file() and (root / "vectors.db").is_file()
    assert too_open(root) == []


def test_an_existing_world_readable_vectors_db_is_made_private(tmp_path: Path, open_umask: None) -> None:
    cache = VectorCache.for_root(tmp_path)
    cache.put("m", ["0" * 64], np.ones((1, 8), dtype=np.float32))
    cache.close()
    os.chmod(tmp_path / "vectors.db", 0o644)  # a root written by an older version
    cache = VectorCache.for_root(tmp_path)
    cache.put("m", ["1" * 64], np.ones((1, 8), dtype=np.float32))
    cache.close()
    assert stat.S_IMODE((tmp_path / "vectors.db").stat().st_mode) == 0o600
