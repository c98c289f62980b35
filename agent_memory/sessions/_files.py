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
import errno
import fcntl
import json
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePath
from typing import Any

from agent_memory.errors import InvalidInputError
from agent_memory.formats.atomic import atomic_write, ensure_dir, fsync_dir, storage_error
from agent_memory.model.drafts import prepare_summary
from agent_memory.model.scopes import check_namespace
from agent_memory.sessions._messages import (
    MAX_LOG_BYTES,
    MAX_MESSAGE_CHARS,
    SessionDir,
    SessionMessage,
    SessionProblem,
    SessionSummary,
    check_file,
    check_id,
    dir_name,
    message_line,
    now_utc,
    ns_dir_name,
    owner_ids,
    parse_message,
)

__all__ = [
    "SessionFiles",
    "SessionDir",
    "SessionMessage",
    "SessionSummary",
    "SessionProblem",
    "MAX_LOG_BYTES",
    "MAX_MESSAGE_CHARS",
    "check_id",
    "dir_name",
    "message_line",
    "now_utc",
    "owner_ids",
]


def in_namespace(namespace: str, under: str | None) -> bool:
    """Whether ``namespace`` is ``under`` or one of its descendants (``under`` None: any)."""
    return under is None or namespace == under or namespace.startswith(under + "/")


class SessionFiles:
    """The files of every session under one root (no visibility here: see :class:`SessionStore`)."""

    def __init__(self, root: str | os.PathLike[str], *, durable: bool = True) -> None:
        self.root = Path(root).absolute()
        self.dir = self.root / "sessions"
        self.durable = durable
        self._cache: dict[Path, tuple[tuple[int, int, int], list[SessionMessage], list[SessionProblem]]] = {}

    # -- directories -------------------------------------------------------------------------
    def _ns_dir(self, namespace: str) -> Path:
        return self.dir / ns_dir_name(namespace) if namespace else self.dir

    def session_dir(self, session_id: str, user_id: str | None, *, create: bool = False, namespace: str = "") -> SessionDir:
        """The directory of a session of ``user_id`` in ``namespace`` (the root's: ``sessions/<user>/<session>``)."""
        path = self._ns_dir(namespace) / dir_name(user_id) / dir_name(session_id)
        if create:
            ensure_dir(self.root, allow_symlink=True)
            dirs = (self.dir, path.parent.parent, path.parent, path) if namespace else (self.dir, path.parent, path)
            for d in dirs:
                ensure_dir(d)
            meta = path / "meta.json"
            if not meta.exists() and not meta.is_symlink():
                body: dict[str, Any] = {"session_id": session_id, "user_id": user_id, "created": now_utc()}
                if namespace:  # a root session's meta.json is what it was before namespaces
                    body["namespace"] = namespace
                atomic_write(meta, json.dumps(body, ensure_ascii=False).encode("utf-8"), durable=self.durable)
        return SessionDir(path, session_id, user_id, namespace)

    def _user_parents(self, problems: list[SessionProblem] | None = None) -> Iterator[Path]:
        """The directories holding user directories: ``sessions/`` (the root's) and each ``sessions/@<namespace>/``."""
        if not self.dir.is_dir() or self.dir.is_symlink():
            return
        yield self.dir
        for nsdir in sorted(self.dir.iterdir()):
            if nsdir.name.startswith("@"):
                if nsdir.is_symlink() or not nsdir.is_dir():
                    if problems is not None:
                        problems.append(SessionProblem(self._rel(nsdir), "not a real directory; fix: remove it"))
                    continue
                yield nsdir

    def all_dirs(self, problems: list[SessionProblem] | None = None) -> Iterator[SessionDir]:
        """Every readable session directory of every namespace (unreadable ones go to ``problems``)."""
        for parent in self._user_parents(problems):
            for udir in sorted(parent.iterdir()):
                if parent == self.dir and udir.name.startswith("@"):
                    continue  # a namespace's directory, walked as a parent of its own
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
        reason = check_file(meta)
        data: Any = None
        if reason is None:
            try:
                data = json.loads(meta.read_bytes())
            except FileNotFoundError:
                reason = "meta.json is missing; fix: restore it or remove the directory"
            except (OSError, ValueError, RecursionError) as exc:
                reason = f"meta.json is unreadable ({type(exc).__name__})"
        if reason is None:
            sid, uid, ns = (
                (data.get("session_id"), data.get("user_id"), data.get("namespace")) if isinstance(data, dict) else (None, None, None)
            )
            ok = isinstance(sid, str) and (uid is None or isinstance(uid, str)) and (ns is None or isinstance(ns, str))
            namespace = ""
            try:
                namespace = check_namespace(ns) if ok else ""
            except InvalidInputError:
                ok = False
            if not isinstance(sid, str) or not ok or dir_name(sid) != path.name or dir_name(uid) != path.parent.name:
                reason = "meta.json does not name this directory's session and user"
            elif self._ns_dir(namespace) != path.parent.parent:
                reason = "meta.json does not name this directory's namespace"
            else:
                return SessionDir(path, sid, uid, namespace)
        if problems is not None:
            problems.append(SessionProblem(self._rel(meta), reason))
        return None

    def exists(self, sdir: SessionDir) -> bool:
        """Is there a readable session at ``sdir``?"""
        return self._read_dir(Path(sdir.path), None) is not None

    def rel(self, sdir: SessionDir, name: str = "log.jsonl") -> str:
        """Where a session's file is, relative to the root (for hits and messages)."""
        return self._rel(Path(sdir.path) / name)

    def user_dirs(self, user_id: str) -> list[SessionDir]:
        """Every readable session directory of ``user_id``, in every namespace."""
        out: list[SessionDir] = []
        for parent in self._user_parents():
            udir = parent / dir_name(user_id)
            if udir.is_dir() and not udir.is_symlink():
                out.extend(d for p in sorted(udir.iterdir()) if (d := self._read_dir(p, None)) is not None)
        return [d for d in out if d.user_id == user_id]

    def find(self, session_id: str) -> list[SessionDir]:
        """Every directory of ``session_id`` (one per owner and namespace)."""
        name = dir_name(session_id)
        out = []
        for parent in self._user_parents():
            for udir in sorted(parent.iterdir()):
                if parent == self.dir and udir.name.startswith("@"):
                    continue
                if udir.is_dir() and not udir.is_symlink() and (udir / name).is_dir():
                    found = self._read_dir(udir / name, None)
                    if found is not None and found.session_id == session_id:
                        out.append(found)
        return out

    def _rel(self, path: PurePath) -> str:
        with contextlib.suppress(ValueError):
            return str(path.relative_to(self.root))
        return str(path)

    # -- log -------------------------------------------------------------------------------
    def append(self, sdir: SessionDir, lines: Sequence[bytes]) -> int:
        """Append ``lines`` under an exclusive lock of the log; returns the number of the first."""
        log = Path(sdir.path) / "log.jsonl"
        reason = check_file(log)
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
                data = data[os.write(fd, data) :]
            if self.durable:
                os.fsync(fd)
        except OSError as exc:
            raise storage_error(exc, f"cannot append to {self._rel(log)}") from exc
        finally:
            os.close(fd)  # closing releases the lock
        if self.durable and size == 0:
            fsync_dir(Path(sdir.path))
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
        log = Path(sdir.path) / "log.jsonl"
        reason = check_file(log)
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
        path = Path(sdir.path) / "summary.json"
        reason = check_file(path)
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
        path = Path(sdir.path) / "summaries.jsonl"
        if check_file(path) is not None or not path.exists():
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
        return SessionSummary(
            sdir.session_id,
            sdir.user_id,
            int(data["version"]),
            data["text"],
            str(data["made_at"]),
            int(data["messages"]),
            str(data.get("source") or "offline"),
            bool(data.get("fallback")),
        )

    def write_summary(
        self, sdir: SessionDir, text: str, *, messages: int, source: str, fallback: bool, made_at: str | None = None
    ) -> SessionSummary:
        """Replace the current summary with the next version (the previous one goes to the history); its fields
        pass the write gate first (:func:`agent_memory.model.drafts.prepare_summary`)."""
        fields = prepare_summary(text, messages=messages, source=source, fallback=fallback, made_at=made_at)
        lock = Path(sdir.path) / ".summary.lock"
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # two summarisers never write the same version number
            return self._write_summary(sdir, fields)
        finally:
            os.close(fd)

    def _write_summary(self, sdir: SessionDir, fields: dict[str, Any]) -> SessionSummary:
        current, _ = self.summary(sdir)
        version = (current.version if current else 0) + 1
        new = SessionSummary(
            sdir.session_id,
            sdir.user_id,
            version,
            fields["text"],
            fields["made_at"],
            fields["messages"],
            fields["source"],
            fields["fallback"],
        )
        if current is not None:
            self.append_file(Path(sdir.path) / "summaries.jsonl", json.dumps(current.to_dict(), ensure_ascii=False).encode() + b"\n")
        atomic_write(Path(sdir.path) / "summary.json", json.dumps(new.to_dict(), ensure_ascii=False).encode("utf-8"), durable=self.durable)
        return new

    def append_file(self, path: Path, data: bytes) -> None:
        if check_file(path) is not None:
            raise InvalidInputError(f"{self._rel(path)} is quarantined; nothing was written")
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, data)
        finally:
            os.close(fd)

    # -- deletion ----------------------------------------------------------------------------
    def purge(
        self, *, user_id: str | None = None, session_id: str | None = None, anonymous: bool = False, namespace: str | None = None
    ) -> int:
        """Delete the logs and summaries of a user's sessions, of a session, or of both given; returns how many.

        ``anonymous=True`` (with a session and no user): only the session without a user, never another user's
        session of the same id. ``namespace``: only sessions in that namespace and its descendants (alone: every
        session there)."""
        if user_id is None and session_id is None and not namespace:
            raise InvalidInputError("purge_sessions needs user_id, session_id or namespace")
        if anonymous and (user_id is not None or session_id is None):
            raise InvalidInputError("purge_sessions: anonymous=True takes a session_id and no user_id")
        targets: list[Path] = []
        for sdir in self.all_dirs():
            if anonymous and sdir.user_id is not None or not in_namespace(sdir.namespace, namespace):
                continue
            if (user_id is None or sdir.user_id == user_id) and (session_id is None or sdir.session_id == session_id):
                targets.append(Path(sdir.path))
        count = len(targets)
        if user_id is not None and session_id is None and namespace is None:  # unreadable leftovers of the user go too
            targets, count = [], 0
            for parent in self._user_parents():
                udir = parent / dir_name(user_id)
                if udir.is_dir() and not udir.is_symlink():
                    targets.append(udir)
                    count += sum(1 for p in udir.iterdir())
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
