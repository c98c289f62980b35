"""Filesystem primitives: atomic private writes, a cross-process lock, typed storage errors."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from agent_memory.errors import LockTimeoutError, ReadOnlyError, StorageError

TMP_PREFIX = ".tmp-"
FILE_MODE = 0o600
DIR_MODE = 0o700
_READ_ONLY = {errno.EROFS, errno.EACCES, errno.EPERM}
_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def storage_error(exc: BaseException, what: str) -> StorageError:
    """The typed error for an OS or SQLite failure: :class:`ReadOnlyError` when writing is refused,
    else :class:`StorageError` (disk full, I/O error, …)."""
    if isinstance(exc, StorageError):
        return exc
    msg = str(exc).lower()
    code = getattr(exc, "errno", None)
    if code in _READ_ONLY or "readonly" in msg or "read-only" in msg or "permission denied" in msg:
        return ReadOnlyError(f"{what}: the memory root is read-only or not writable ({exc})")
    if code in _FULL or "disk is full" in msg or "database or disk is full" in msg:
        return StorageError(f"{what}: the disk is full ({exc})")
    return StorageError(f"{what}: {exc}")


@contextlib.contextmanager
def storage_errors(what: str) -> Iterator[None]:
    """Re-raise OS and SQLite operational failures as typed :class:`StorageError`/:class:`ReadOnlyError`."""
    import sqlite3

    try:
        yield
    except (StorageError, LockTimeoutError, FileNotFoundError):
        raise
    except (OSError, sqlite3.OperationalError) as exc:
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            raise
        raise storage_error(exc, what) from exc


_writing = threading.local()  # the root lock this thread holds (fd), and whether it is marked as writing


def _mark_writing() -> None:
    """Mark the root lock this thread holds (if any) as held by a writer: see :class:`RootLock`."""
    fd = getattr(_writing, "fd", None)
    if fd is not None and not _writing.marked:
        _writing.marked = True
        with contextlib.suppress(OSError):
            os.pwrite(fd, b"1", 0)


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> os.stat_result:
    """Write ``data`` to ``path`` via temp file + fsync + rename; readers never see a partial file.

    Returns the written file's stat (a rename keeps mtime and size), saving the caller a ``stat``."""
    _mark_writing()
    tmp = path.with_name(f"{TMP_PREFIX}{path.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    except OSError as exc:
        raise storage_error(exc, f"cannot write {path.name}") from exc
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if durable:
            os.fsync(fd)
        st = os.fstat(fd)
    except BaseException as exc:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise storage_error(exc, f"cannot write {path.name}") from exc
        raise
    os.close(fd)
    try:
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise storage_error(exc, f"cannot write {path.name}") from exc
    if durable:
        fsync_dir(path.parent)
    return st


_LINKABLE: list[bool] = []  # [False] once this platform refused an unnamed file (O_TMPFILE) or its linking in


def create_new(path: Path, data: bytes, *, durable: bool = True) -> os.stat_result:
    """Write ``data`` to ``path``, which must not exist (else :class:`FileExistsError`, and nothing is written);
    readers never see a partial file.

    Where the platform has them, an unnamed file in ``path``'s directory (``O_TMPFILE``) is written (and fsynced if
    ``durable``) and then linked in under its name (``linkat`` through ``/proc/self/fd``): one directory insert, no
    probe of the name first, no temp name, and the link itself refuses a name that exists. Elsewhere: a probe, then
    :func:`atomic_write`. Returns the written file's stat."""
    tmpfile = getattr(os, "O_TMPFILE", 0)
    if tmpfile and not _LINKABLE:
        _mark_writing()
        try:
            fd = os.open(path.parent, tmpfile | os.O_WRONLY, FILE_MODE)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                raise storage_error(exc, f"cannot write {path.name}") from exc
            _LINKABLE.append(False)  # no unnamed files on this file system: the probe and atomic_write below
        else:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                if durable:
                    os.fsync(fd)
                st = os.fstat(fd)
                # linkat(AT_SYMLINK_FOLLOW): a dir fd makes Python call linkat, not link (which would link the /proc
                # symlink itself); the path is absolute, so the fd is never read. EEXIST if the name is taken.
                os.link(f"/proc/self/fd/{fd}", path, src_dir_fd=fd, follow_symlinks=True)
            except FileExistsError:
                raise
            except OSError as exc:
                if not (exc.errno == errno.ENOENT and not os.path.isdir("/proc/self/fd")):
                    raise storage_error(exc, f"cannot write {path.name}") from exc
                _LINKABLE.append(False)  # no /proc to link through: the probe and atomic_write below
            else:
                if durable:
                    fsync_dir(path.parent)
                return st
            finally:
                os.close(fd)
    if os.path.lexists(path):
        raise FileExistsError(errno.EEXIST, "File exists", str(path))
    return atomic_write(path, data, durable=durable)


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

    The lock file's first byte tells whether its last writing holder let go cleanly: ``1`` once a holder
    writes a file (:func:`atomic_write` marks it), ``0`` after a clean release, ``2`` after a release that
    left :attr:`unclean` set. A holder that finds ``1`` or ``2`` sets :attr:`unclean`: a holder died
    mid-write (e.g. killed between writing a file and indexing it), so the next synchronisation must be a
    full scan, which clears it. A holder that writes nothing leaves the lock file as it was.
    """

    def __init__(self, path: Path, timeout_s: float = 30.0) -> None:
        self.path = path
        self.timeout_s = timeout_s
        self._local = threading.local()
        self.unclean = False

    def _open(self) -> int:
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW
        try:
            return os.open(self.path, flags, FILE_MODE)
        except OSError as exc:
            if exc.errno != errno.ELOOP or not os.path.islink(self.path):
                raise storage_error(exc, "cannot take the root lock") from exc
            os.unlink(self.path)  # a planted symlink: never follow it out of the root
            return os.open(self.path, flags, FILE_MODE)

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
            self._local.depth, self._local.fd = 1, fd
            state = b""
            with contextlib.suppress(OSError):
                state = os.pread(fd, 1, 0)
            if state in (b"1", b"2"):
                self.unclean = True
            outer = (getattr(_writing, "fd", None), getattr(_writing, "marked", False))  # another root's lock, if any
            _writing.fd, _writing.marked = fd, False
            try:
                yield True
            finally:
                self._local.depth, self._local.fd = 0, None
                marked = _writing.marked
                _writing.fd, _writing.marked = outer
                if marked or (state in (b"1", b"2") and not self.unclean):
                    with contextlib.suppress(OSError):
                        os.pwrite(fd, b"2" if self.unclean else b"0", 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    NOTE_AT, NOTE_SIZE = 8, 24  # bytes of the lock file after the state byte: a small note kept beside the lock

    def note(self) -> bytes:
        """The note kept in the lock file (read while holding the lock; empty if none or not held)."""
        fd = getattr(self._local, "fd", None)
        if fd is None:
            return b""
        with contextlib.suppress(OSError):
            return os.pread(fd, self.NOTE_SIZE, self.NOTE_AT).strip(b"\0 ")
        return b""

    def set_note(self, data: bytes) -> None:
        """Keep ``data`` (at most :attr:`NOTE_SIZE` bytes) in the lock file while holding it; not fsync-ed:
        a note is a hint (the open-time check's cursor) that may be lost, never state."""
        fd = getattr(self._local, "fd", None)
        if fd is not None and len(data) <= self.NOTE_SIZE:
            with contextlib.suppress(OSError):
                os.pwrite(fd, data.ljust(self.NOTE_SIZE), self.NOTE_AT)


def private_file(path: Path) -> Path:
    """Make ``path`` exist as a private file (0600) before another library opens it: SQLite creates a missing
    database with the umask's mode (often 0644) and gives its ``-wal``/``-shm`` the database's mode. A missing file
    is created empty; an existing one loses its group and other bits (when the caller owns it: else left as is)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE))
    except FileExistsError:
        with contextlib.suppress(OSError):
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode) and mode & 0o077:
                os.chmod(path, stat.S_IMODE(mode) & ~0o077)
    except OSError:
        pass  # a read-only root, a missing folder: the opener reports it as it always did
    return path


def open_private(path: Path) -> BinaryIO:
    """``open(path, "wb")`` creating the file 0600 (never following a symlink at ``path``)."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE), "wb")


def ensure_dir(path: Path, *, create: bool = True, allow_symlink: bool = False) -> Path:
    """Make ``path`` a private directory (0700) if missing; refuse a symlink where a directory should be.

    ``allow_symlink``: the root itself may be a link the user made (e.g. ``~/.agent-memory``); the
    directories inside it may not. A root that cannot be created raises a typed :class:`StorageError`."""
    if not allow_symlink and path.is_symlink():
        raise StorageError(f"{path} is a symlink; memory directories must be real directories inside the root")
    if path.exists() and not path.is_dir():
        raise StorageError(f"{path} exists and is not a directory")
    if create and not path.exists():
        try:
            os.makedirs(path, mode=DIR_MODE, exist_ok=True)
        except OSError as exc:
            raise storage_error(exc, f"cannot create {path}") from exc
    return path
