"""One partition's lock on a files root, held across several calls of one logical write (a capped write).

A curated line is added only while its partition holds fewer than the cap (:mod:`agent_memory.agents.curated`):
counting the lines and writing the new one are two calls, each taking the root lock on its own, so two writers
could both count 49 and both write. :func:`partition_lock` makes the pair atomic across threads and processes:
an ``flock`` on ``.partition.lock`` (declared in :mod:`agent_memory.backends.files.layout`; it holds no data),
taken with its own open file description per holder (so two holders in one process exclude each other too), polled
without blocking the event loop, and never held by a root-lock holder (no lock-order inversion). One file serves
every partition: capped writes are rare and short.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

from agent_memory.errors import LockTimeoutError
from agent_memory.formats.atomic import FILE_MODE, storage_error

__all__ = ["LOCK_NAME", "partition_lock"]

LOCK_NAME = ".partition.lock"


def _open(path: Path) -> int:
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW
    try:
        return os.open(path, flags, FILE_MODE)
    except OSError as exc:
        if exc.errno != errno.ELOOP or not os.path.islink(path):
            raise storage_error(exc, "cannot take the partition lock") from exc
        os.unlink(path)  # a planted symlink: never follow it out of the root
        return os.open(path, flags, FILE_MODE)


@contextlib.asynccontextmanager
async def partition_lock(root: Path, timeout_s: float = 30.0) -> AsyncIterator[None]:
    """Hold the root's partition lock until the block ends (:class:`LockTimeoutError` after ``timeout_s``)."""
    fd = _open(Path(root) / LOCK_NAME)
    try:
        deadline, delay = time.monotonic() + timeout_s, 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise LockTimeoutError(f"could not take {Path(root) / LOCK_NAME} within {timeout_s:g}s") from None
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.05)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
