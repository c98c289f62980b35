"""Session logs and summaries on disk: append-only, redacted, scoped, quarantined when unreadable.

Layout under the memory root (separate from ``records/``)::

    sessions/<user>/<session>/meta.json       # {"session_id", "user_id", "created"}
    sessions/<user>/<session>/log.jsonl       # one message per line, append-only
    sessions/<user>/<session>/summary.json    # the current summary (version N)
    sessions/<user>/<session>/summaries.jsonl # every earlier version, append-only

``<user>`` is ``_`` for a session without a user. A directory name is the id itself when it is a
plain name (letters, digits, ``._@-``, starting with a letter or digit), else ``~`` + a hash of it,
so no id ever reaches a path outside the root. A message is numbered by its line in the log (1-based;
a malformed line keeps its number and is skipped), so message numbers never move.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._fs import atomic_write, ensure_dir, fsync_dir, storage_error
from ..drafts import _parse_when, utc_text
from ..errors import InvalidInputError
from ..redact import redact_text

__all__ = ["SessionFiles", "SessionDir", "SessionMessage", "SessionSummary", "SessionProblem", "MAX_LOG_BYTES",
           "MAX_MESSAGE_CHARS", "dir_name", "now_utc"]

MAX_LOG_BYTES = 64 * 1024 * 1024
MAX_MESSAGE_CHARS = 200_000
MAX_ID_CHARS = 200
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,99}")
NO_USER = "_"


def now_utc() -> str:
    return utc_text(dt.datetime.now(dt.UTC))


def dir_name(value: str | None) -> str:
    """The directory name of a session or user id (``_`` for no user)."""
    if value is None:
        return NO_USER
    if _PLAIN.fullmatch(value) and ".." not in value:
        return value
    return "~" + hashlib.sha256(value.encode("utf-8")).hexdigest()[:40]


def check_id(name: str, value: object, *, required: bool = False) -> str | None:
    """A session or user id: None (unless required) or a non-blank string without control characters."""
    if value is None:
        if required:
            raise InvalidInputError(f"{name} is required")
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{name} must be a non-empty string")
    if len(value) > MAX_ID_CHARS or any(ord(c) < 32 for c in value):
        raise InvalidInputError(f"{name} must be at most {MAX_ID_CHARS} characters without control characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(f"{name} is not valid Unicode (lone surrogate)") from None
    return value


@dataclass(frozen=True, slots=True)
class SessionMessage:
    """One logged message. ``n`` is its line in the session log; ``id`` is ``<session_id>#<n>``."""

    session_id: str
    user_id: str | None
    n: int
    role: str
    text: str
    at: str
    speaker: str | None = None
    turn_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.session_id}#{self.n}"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "session_id": self.session_id, "user_id": self.user_id, "n": self.n, "role": self.role,
                "speaker": self.speaker, "text": self.text, "at": self.at, "turn_id": self.turn_id,
                "metadata": dict(self.metadata)}


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One version of a session's summary, covering its first ``messages`` messages."""

    session_id: str
    user_id: str | None
    version: int
    text: str
    made_at: str
    messages: int
    source: str = "offline"
    fallback: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "user_id": self.user_id, "version": self.version, "text": self.text,
                "made_at": self.made_at, "messages": self.messages, "source": self.source, "fallback": self.fallback}


@dataclass(frozen=True, slots=True)
class SessionProblem:
    """A session file (or one line of it) no read serves, with the reason."""

    path: str
    reason: str
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class SessionDir:
    """A session directory and the ids it belongs to."""

    path: Path
    session_id: str
    user_id: str | None


def _check_file(path: Path) -> str | None:
    """Why a session file is refused whole (``None``: fine or absent)."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot stat: {exc.strerror}"
    if stat.S_ISLNK(st.st_mode):
        return "a symlink (never followed out of the root); fix: replace it with a regular file or remove it"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file; fix: remove it"
    if st.st_nlink > 1:
        return "hard-linked to another path; fix: copy it to a file of its own"
    if st.st_size > MAX_LOG_BYTES:
        return f"larger than {MAX_LOG_BYTES} bytes; fix: split or archive the log"
    return None


def parse_message(line: bytes, n: int, sdir: SessionDir) -> SessionMessage:
    """One log line as a message; ``ValueError`` with the reason when it is not one."""
    try:
        data = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"not a JSON line ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    role, text, at = data.get("role"), data.get("text"), data.get("at")
    if not isinstance(role, str) or not role or not isinstance(text, str):
        raise ValueError("needs 'role' and 'text' strings")
    if not isinstance(at, str) or _parse_when(at) is None:
        raise ValueError("needs 'at', an ISO instant")
    speaker, turn_id, meta = data.get("speaker"), data.get("turn_id"), data.get("meta") or {}
    if speaker is not None and not isinstance(speaker, str) or turn_id is not None and not isinstance(turn_id, str):
        raise ValueError("'speaker' and 'turn_id' must be strings")
    if not isinstance(meta, dict):
        raise ValueError("'meta' must be an object")
    return SessionMessage(sdir.session_id, sdir.user_id, n, role, text, at, speaker, turn_id, meta)


def message_line(message: Mapping[str, Any]) -> tuple[dict[str, Any], bytes]:
    """Validate and redact one message to append; returns the stored object and its line."""
    if not isinstance(message, Mapping):
        raise InvalidInputError("a message must be a mapping with 'role' and 'text'")
    role, text = message.get("role", "user"), message.get("text", message.get("content"))
    if not isinstance(role, str) or not role.strip() or len(role) > 40:
        raise InvalidInputError("a message's role must be a short non-empty string")
    if not isinstance(text, str):
        raise InvalidInputError("a message's text must be a string")
    if len(text) > MAX_MESSAGE_CHARS:
        raise InvalidInputError(f"a message is limited to {MAX_MESSAGE_CHARS} characters")
    at = message.get("at")
    when = _parse_when(at) if isinstance(at, str) else at if isinstance(at, dt.datetime) else None
    if at is not None and when is None:
        raise InvalidInputError(f"a message's 'at' must be an ISO date or datetime, not {at!r}")
    if isinstance(when, dt.datetime) and when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    obj: dict[str, Any] = {"role": role.strip(), "text": redact_text(text), "at": utc_text(when) if when else now_utc()}
    for key in ("speaker", "turn_id"):
        value = message.get(key)
        if value is not None:
            if not isinstance(value, (str, int)) or len(str(value)) > 200:
                raise InvalidInputError(f"a message's {key} must be a short string")
            obj[key] = redact_text(str(value))
    meta = message.get("metadata")
    if meta:
        if not isinstance(meta, Mapping):
            raise InvalidInputError("a message's metadata must be a mapping")
        try:
            obj["meta"] = json.loads(redact_text(json.dumps(dict(meta), ensure_ascii=False, default=str)))
        except (TypeError, ValueError, RecursionError):
            raise InvalidInputError("a message's metadata must be JSON-serialisable") from None
    try:
        line = json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        raise InvalidInputError("a message is not valid Unicode (lone surrogate)") from None
    return obj, line


class SessionFiles:
    """The files of every session under one root (no visibility here: see :class:`SessionStore`)."""

    def __init__(self, root: str | os.PathLike[str], *, durable: bool = True) -> None:
        self.root = Path(root).absolute()
        self.dir = self.root / "sessions"
        self.durable = durable
        self._cache: dict[Path, tuple[tuple[int, int, int], list[SessionMessage], list[SessionProblem]]] = {}

    # -- directories -------------------------------------------------------------------------
    def session_dir(self, session_id: str, user_id: str | None, *, create: bool = False) -> SessionDir:
        path = self.dir / dir_name(user_id) / dir_name(session_id)
        if create:
            ensure_dir(self.root, allow_symlink=True)
            for d in (self.dir, path.parent, path):
                ensure_dir(d)
            meta = path / "meta.json"
            if not meta.exists() and not meta.is_symlink():
                body = {"session_id": session_id, "user_id": user_id, "created": now_utc()}
                atomic_write(meta, json.dumps(body, ensure_ascii=False).encode("utf-8"), durable=self.durable)
        return SessionDir(path, session_id, user_id)

    def all_dirs(self, problems: list[SessionProblem] | None = None) -> Iterator[SessionDir]:
        """Every readable session directory (unreadable ones go to ``problems``)."""
        if not self.dir.is_dir() or self.dir.is_symlink():
            return
        for udir in sorted(self.dir.iterdir()):
            if udir.is_symlink() or not udir.is_dir():
                if problems is not None and not udir.name.startswith("."):
                    problems.append(SessionProblem(self._rel(udir), "not a real directory; fix: remove it"))
                continue
            for sdir in sorted(udir.iterdir()):
                found = self._read_dir(sdir, problems)
                if found is not None:
                    yield found

    def _read_dir(self, path: Path, problems: list[SessionProblem] | None) -> SessionDir | None:
        if path.is_symlink() or not path.is_dir():
            if problems is not None and not path.name.startswith("."):
                problems.append(SessionProblem(self._rel(path), "not a real directory; fix: remove it"))
            return None
        meta = path / "meta.json"
        reason = _check_file(meta)
        data: Any = None
        if reason is None:
            try:
                data = json.loads(meta.read_bytes())
            except FileNotFoundError:
                reason = "meta.json is missing; fix: restore it or remove the directory"
            except (OSError, ValueError, RecursionError) as exc:
                reason = f"meta.json is unreadable ({type(exc).__name__})"
        if reason is None:
            sid, uid = (data.get("session_id"), data.get("user_id")) if isinstance(data, dict) else (None, None)
            ok = isinstance(sid, str) and (uid is None or isinstance(uid, str))
            if not isinstance(sid, str) or not ok or dir_name(sid) != path.name or dir_name(uid) != path.parent.name:
                reason = "meta.json does not name this directory's session and user"
            else:
                return SessionDir(path, sid, uid)
        if problems is not None:
            problems.append(SessionProblem(self._rel(meta), reason))
        return None

    def user_dirs(self, user_id: str) -> list[SessionDir]:
        """Every readable session directory of ``user_id``."""
        udir = self.dir / dir_name(user_id)
        if not udir.is_dir() or udir.is_symlink() or self.dir.is_symlink():
            return []
        out = [d for p in sorted(udir.iterdir()) if (d := self._read_dir(p, None)) is not None]
        return [d for d in out if d.user_id == user_id]

    def find(self, session_id: str) -> list[SessionDir]:
        """Every directory of ``session_id`` (one per owner)."""
        name = dir_name(session_id)
        out = []
        if self.dir.is_dir() and not self.dir.is_symlink():
            for udir in sorted(self.dir.iterdir()):
                if udir.is_dir() and not udir.is_symlink() and (udir / name).is_dir():
                    found = self._read_dir(udir / name, None)
                    if found is not None and found.session_id == session_id:
                        out.append(found)
        return out

    def _rel(self, path: Path) -> str:
        with contextlib.suppress(ValueError):
            return str(path.relative_to(self.root))
        return str(path)

    # -- log -------------------------------------------------------------------------------
    def append(self, sdir: SessionDir, lines: Sequence[bytes]) -> int:
        """Append ``lines`` under an exclusive lock of the log; returns the number of the first."""
        log = sdir.path / "log.jsonl"
        reason = _check_file(log)
        if reason is not None:
            raise InvalidInputError(f"{self._rel(log)} is quarantined ({reason}); nothing was appended")
        try:
            fd = os.open(log, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            raise storage_error(exc, f"cannot open {self._rel(log)}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            prefix = b""
            if size and os.pread(fd, 1, size - 1) != b"\n":
                prefix = b"\n"  # a torn last line stays one (malformed) line of its own
            first = self._count_lines(fd, size) + (1 if prefix else 0) + 1
            data = memoryview(prefix + b"".join(lines))
            while data:
                data = data[os.write(fd, data):]
            if self.durable:
                os.fsync(fd)
        except OSError as exc:
            raise storage_error(exc, f"cannot append to {self._rel(log)}") from exc
        finally:
            os.close(fd)  # closing releases the lock
        if self.durable and size == 0:
            fsync_dir(sdir.path)
        return first

    @staticmethod
    def _count_lines(fd: int, size: int) -> int:
        count, offset = 0, 0
        while offset < size:
            chunk = os.pread(fd, min(1 << 20, size - offset), offset)
            if not chunk:
                break
            count += chunk.count(b"\n")
            offset += len(chunk)
        return count

    def read(self, sdir: SessionDir) -> tuple[list[SessionMessage], list[SessionProblem]]:
        """The messages of a session (malformed lines skipped and reported)."""
        log = sdir.path / "log.jsonl"
        reason = _check_file(log)
        if reason is not None:
            return [], [SessionProblem(self._rel(log), reason)]
        try:
            st = log.stat()
        except FileNotFoundError:
            return [], []
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        cached = self._cache.get(log)
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        try:
            fd = os.open(log, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as fh:
                data = fh.read(MAX_LOG_BYTES + 1)
        except OSError as exc:
            return [], [SessionProblem(self._rel(log), f"unreadable: {exc.strerror or exc}")]
        messages: list[SessionMessage] = []
        problems: list[SessionProblem] = []
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        for n, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                messages.append(parse_message(raw, n, sdir))
            except ValueError as exc:
                problems.append(SessionProblem(self._rel(log), str(exc), n))
        if len(self._cache) > 4096:
            self._cache.clear()
        self._cache[log] = (key, messages, problems)
        return messages, problems

    # -- summaries ---------------------------------------------------------------------------
    def summary(self, sdir: SessionDir) -> tuple[SessionSummary | None, SessionProblem | None]:
        path = sdir.path / "summary.json"
        reason = _check_file(path)
        if reason is None:
            try:
                return self._summary_from(json.loads(path.read_bytes()), sdir), None
            except FileNotFoundError:
                return None, None
            except (OSError, ValueError, TypeError, KeyError, RecursionError) as exc:
                reason = f"unreadable summary ({type(exc).__name__})"
        return None, SessionProblem(self._rel(path), reason)

    def history(self, sdir: SessionDir) -> list[SessionSummary]:
        """Earlier summary versions, oldest first (malformed lines skipped)."""
        path = sdir.path / "summaries.jsonl"
        if _check_file(path) is not None or not path.exists():
            return []
        out = []
        for raw in path.read_bytes().splitlines():
            with contextlib.suppress(ValueError, TypeError, KeyError, RecursionError):
                out.append(self._summary_from(json.loads(raw), sdir))
        return out

    @staticmethod
    def _summary_from(data: Any, sdir: SessionDir) -> SessionSummary:
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            raise ValueError("not a summary")
        return SessionSummary(sdir.session_id, sdir.user_id, int(data["version"]), data["text"], str(data["made_at"]),
                              int(data["messages"]), str(data.get("source") or "offline"), bool(data.get("fallback")))

    def write_summary(self, sdir: SessionDir, text: str, *, messages: int, source: str, fallback: bool,
                      made_at: str | None = None) -> SessionSummary:
        """Replace the current summary with the next version (the previous one goes to the history)."""
        lock = sdir.path / ".summary.lock"
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # two summarisers never write the same version number
            return self._write_summary(sdir, text, messages=messages, source=source, fallback=fallback, made_at=made_at)
        finally:
            os.close(fd)

    def _write_summary(self, sdir: SessionDir, text: str, *, messages: int, source: str, fallback: bool,
                       made_at: str | None) -> SessionSummary:
        current, _ = self.summary(sdir)
        version = (current.version if current else 0) + 1
        new = SessionSummary(sdir.session_id, sdir.user_id, version, redact_text(text), made_at or now_utc(), messages,
                             source, fallback)
        if current is not None:
            self.append_file(sdir.path / "summaries.jsonl", json.dumps(current.to_dict(), ensure_ascii=False).encode() + b"\n")
        atomic_write(sdir.path / "summary.json", json.dumps(new.to_dict(), ensure_ascii=False).encode("utf-8"),
                     durable=self.durable)
        return new

    def append_file(self, path: Path, data: bytes) -> None:
        if _check_file(path) is not None:
            raise InvalidInputError(f"{self._rel(path)} is quarantined; nothing was written")
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, data)
        finally:
            os.close(fd)

    # -- deletion ----------------------------------------------------------------------------
    def purge(self, *, user_id: str | None = None, session_id: str | None = None) -> int:
        """Delete the logs and summaries of a user's sessions, of a session, or of both given; returns how many."""
        if user_id is None and session_id is None:
            raise InvalidInputError("purge_sessions needs user_id or session_id")
        targets: list[Path] = []
        for sdir in self.all_dirs():
            if (user_id is None or sdir.user_id == user_id) and (session_id is None or sdir.session_id == session_id):
                targets.append(sdir.path)
        if user_id is not None and session_id is None:  # unreadable leftovers of the user go too
            udir = self.dir / dir_name(user_id)
            if udir.is_dir() and not udir.is_symlink():
                targets = [udir]
                count = sum(1 for p in udir.iterdir())
            else:
                count = len(targets)
        else:
            count = len(targets)
        for path in targets:
            try:
                shutil.rmtree(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                if exc.errno != errno.ENOENT:
                    raise storage_error(exc, f"cannot delete {self._rel(path)}") from exc
            fsync_dir(path.parent)
        self._cache.clear()
        return count
