"""Every failure as one line: ``(type, message, exit code)``; never a traceback.

Exit codes: 0 success, 1 runtime error, 2 usage error, 3 a worker fell back (recall/capture),
130 interrupted (Ctrl-C), 141 stdout closed early (``| head``).
"""

from __future__ import annotations

import errno
import sys

from agent_memory.cli._base import UsageError
from agent_memory.errors import AgentMemoryError, MissingExtraError, missing_extra

EXIT_ERROR, EXIT_USAGE, EXIT_FALLBACK, EXIT_INTERRUPTED = 1, 2, 3, 130
MAX_MESSAGE = 600


class Interrupted(Exception):
    """Ctrl-C, with what had been done by then."""


_STORAGE = {
    errno.ENOSPC: ("StorageError", "no space left on device"),
    errno.EDQUOT: ("StorageError", "disk quota exceeded"),
    errno.EROFS: ("ReadOnlyError", "read-only file system"),
    errno.EACCES: ("StorageError", "permission denied"),
    errno.EPERM: ("StorageError", "operation not permitted"),
    errno.EIO: ("StorageError", "input/output error"),
}


def _os_error(exc: OSError) -> tuple[str, str]:
    where = exc.filename if exc.filename is not None else ""
    if exc.errno in _STORAGE:
        kind, text = _STORAGE[exc.errno]
        return kind, f"{text}: {where}".rstrip(": ")
    if exc.errno == errno.ENOENT:
        return "NotFoundError", f"no such file or directory: {where}".rstrip(": ")
    if exc.errno == errno.EISDIR:
        return "InvalidInputError", f"is a directory: {where}".rstrip(": ")
    if exc.errno == errno.ENOTDIR:
        return "InvalidInputError", f"not a directory: {where}".rstrip(": ")
    return "StorageError", f"{exc.strerror or exc}: {where}".rstrip(": ")


def _sqlite_error(exc: Exception) -> tuple[str, str]:
    text = str(exc)
    low = text.lower()
    if "disk is full" in low or "database or disk is full" in low:
        return "StorageError", f"no space left on device (index.db: {text})"
    if "readonly" in low or "read-only" in low:
        return "ReadOnlyError", f"the root is read-only (index.db: {text})"
    if "locked" in low or "busy" in low:
        return "LockTimeoutError", f"the index is busy (another writer?): {text}"
    if "not a database" in low or "malformed" in low:
        return "StorageError", f"index.db is damaged ({text}); delete it or run `agent-memory reindex` (files are the truth)"
    return "StorageError", f"SQLite: {text}"


def classify(exc: BaseException) -> tuple[str, str, int]:
    """The error type name, one-line message and exit code for any exception."""
    sqlite3 = sys.modules.get("sqlite3")
    if isinstance(exc, UsageError):
        return "UsageError", str(exc), EXIT_USAGE
    if isinstance(exc, Interrupted):
        return "Interrupted", str(exc), EXIT_INTERRUPTED
    if isinstance(exc, KeyboardInterrupt):
        return "Interrupted", "interrupted", EXIT_INTERRUPTED
    if isinstance(exc, MissingExtraError):  # one type for every missing extra (e.g. EmbedderNotInstalledError)
        return "MissingExtraError", str(exc) or "MissingExtraError", EXIT_ERROR
    if isinstance(exc, AgentMemoryError):
        return type(exc).__name__, str(exc) or type(exc).__name__, EXIT_ERROR
    if sqlite3 is not None and isinstance(exc, sqlite3.Error):
        kind, text = _sqlite_error(exc)
        return kind, text, EXIT_ERROR
    if isinstance(exc, OSError):
        kind, text = _os_error(exc)
        return kind, text, EXIT_ERROR
    if isinstance(exc, ImportError) and (missing := missing_extra(exc)) is not None:
        return "MissingExtraError", str(missing), EXIT_ERROR  # an optional extra not installed: say which
    if isinstance(exc, RecursionError):
        return "InvalidInputError", "input nested too deeply to process (recursion limit)", EXIT_ERROR
    if isinstance(exc, OverflowError):
        return "InvalidInputError", f"a number is out of range: {exc}", EXIT_ERROR
    if isinstance(exc, MemoryError):
        return "ResourceError", "out of memory", EXIT_ERROR
    if isinstance(exc, (ValueError, UnicodeError)):
        return "InvalidInputError", str(exc), EXIT_ERROR
    return "InternalError", f"{type(exc).__name__}: {exc} (unexpected; please report it)", EXIT_ERROR


def one_line(message: str) -> str:
    text = " ".join(message.split())
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"
