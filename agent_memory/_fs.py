"""Filesystem primitives: atomic writes and a cross-process, cross-thread lock."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from .errors import LockTimeoutError

TMP_PREFIX = ".tmp-"


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> os.stat_result:
    """Write ``data`` to ``path`` via temp file + fsync + rename; readers never see a partial file.

    Returns the written file's stat (a rename keeps mtime and size), saving the caller a ``stat``."""
    tmp = path.with_name(f"{TMP_PREFIX}{path.name}.{os.getpid()}.{threading.get_ident()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if durable:
            os.fsync(fd)
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.close(fd)
    os.replace(tmp, path)
    if durable:
        fsync_dir(path.parent)
    return st


def fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class RootLock:
    """An exclusive lock on one memory root, held across threads and processes.

    ``flock`` conflicts between separate open file descriptions, so every acquisition
    opens its own descriptor; a process-local re-entrant lock makes nested use cheap.
    """

    def __init__(self, path: Path, timeout_s: float = 30.0) -> None:
        self.path = path
        self.timeout_s = timeout_s
        self._local = threading.local()

    def _open(self) -> int:
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW
        try:
            return os.open(self.path, flags, 0o644)
        except OSError as exc:
            if exc.errno != errno.ELOOP or not os.path.islink(self.path):
                raise
            os.unlink(self.path)  # a planted symlink: never follow it out of the root
            return os.open(self.path, flags, 0o644)

    @contextlib.contextmanager
    def hold(self, *, blocking: bool = True) -> Iterator[bool]:
        """Hold the lock (yields True); with ``blocking=False`` yield False at once if it is taken."""
        depth = getattr(self._local, "depth", 0)
        if depth:
            self._local.depth = depth + 1
            try:
                yield True
            finally:
                self._local.depth -= 1
            return
        fd = self._open()
        try:
            deadline = time.monotonic() + self.timeout_s
            delay = 0.001
            acquired = False
            while not acquired:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    acquired = True
                except BlockingIOError:
                    if not blocking:
                        break
                    if time.monotonic() > deadline:
                        raise LockTimeoutError(f"could not lock {self.path} within {self.timeout_s}s") from None
                    time.sleep(delay)
                    delay = min(delay * 2, 0.05)
            if not acquired:
                yield False
                return
            self._local.depth = 1
            try:
                yield True
            finally:
                self._local.depth = 0
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def ensure_dir(path: Path, *, create: bool = True) -> Path:
    """Make ``path`` a private directory (0700) if missing; refuse a symlink where a directory should be."""
    if path.is_symlink():
        from .errors import StorageError

        raise StorageError(f"{path} is a symlink; memory directories must be real directories inside the root")
    if create and not path.exists():
        os.makedirs(path, mode=0o700, exist_ok=True)
    return path
