"""Session log data: messages, summaries, problems, ids and the validation of one line (no file access here)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from agent_memory.errors import InvalidInputError
from agent_memory.model import scopes
from agent_memory.model.drafts import MAX_MESSAGE_CHARS, _parse_when, check_ident, prepare_message, utc_text

__all__ = [
    "SessionDir",
    "SessionMessage",
    "SessionSummary",
    "SessionProblem",
    "MAX_LOG_BYTES",
    "MAX_MESSAGE_CHARS",
    "NO_USER",
    "check_file",
    "check_id",
    "cite_id",
    "dir_name",
    "message_line",
    "now_utc",
    "ns_dir_name",
    "owner_ids",
    "parse_message",
    "writer_namespace",
]

MAX_LOG_BYTES = 64 * 1024 * 1024
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


def ns_dir_name(namespace: str) -> str:
    """The directory of a namespace's session logs under ``sessions/`` (``''``, the root's, is ``sessions/`` itself):
    ``@`` and the path with ``+`` for ``/`` (neither occurs in a user's directory name), a hash when long."""
    if not namespace:
        return ""
    flat = "@" + namespace.replace("/", "+")
    return flat if len(flat) <= 200 else "@~" + hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:40]


def writer_namespace() -> str:
    """The namespace a write lands in: the caller's own, first of the view bound for the call
    (:func:`agent_memory.model.scopes.viewing`; the root without one)."""
    return scopes.current_view()[0]


def check_id(name: str, value: object, *, required: bool = False) -> str | None:
    """A session or user id a *read* names: None (unless required) or a non-blank string without control
    characters. A write checks its ids with the write gate (:func:`owner_ids`), which also refuses secrets."""
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


def owner_ids(session_id: object, user_id: object) -> tuple[str, str | None]:
    """The session and user a write goes to, through the write gate (:func:`agent_memory.model.drafts.check_ident`):
    one-line ids, never a secret (they are directory names and columns)."""
    sid = check_ident("session_id", session_id, required=True)
    assert sid is not None
    return sid, check_ident("user_id", user_id)


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
        return {
            "id": self.id,
            "session_id": self.session_id,
            "user_id": self.user_id,
            "n": self.n,
            "role": self.role,
            "speaker": self.speaker,
            "text": self.text,
            "at": self.at,
            "turn_id": self.turn_id,
            "metadata": dict(self.metadata),
        }


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
        return {
            "session_id": self.session_id,
            "user_id": self.user_id,
            "version": self.version,
            "text": self.text,
            "made_at": self.made_at,
            "messages": self.messages,
            "source": self.source,
            "fallback": self.fallback,
        }


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
    """A session directory (or, on a database, the rows' address) and the ids it belongs to."""

    path: PurePath
    session_id: str
    user_id: str | None
    namespace: str = ""  # the writer's namespace ('' the root; docs/namespaces.md)


def check_file(path: Path) -> str | None:
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


def cite_id(message: SessionMessage, sdir: SessionDir, user_id: str | None) -> str:
    """``message``'s id as a caller with ``user_id`` cites it: unique across every log that caller can see.

    In the caller's own log (its namespace, its user or, with no user, its session's log) it is the log's own id,
    ``<session_id>#<n>``. A log of the same session id elsewhere in its view gets the log's address after ``@``: its
    namespace as an absolute path (``/`` the root, ``/acme`` …) and, for a log with no user seen by a caller with
    one, ``/_`` (``chat#1@/``, ``chat#1@/acme/_``, ``chat#1@/_``). A caller only ever sees its own user's logs and
    logs with no user, and namespaces of its view, so the address names nothing it could not see; a namespace holds
    no ``#``, so no two logs' messages can share an id (an own id ends in ``#<n>``, an addressed one in its
    address). The namespace is the caller's own when it is the first of the view bound for the call."""
    no_user = sdir.user_id is None and user_id is not None
    if sdir.namespace == writer_namespace() and not no_user:
        return message.id
    where = "/" + sdir.namespace
    if no_user:
        where = where.rstrip("/") + "/_"
    return f"{message.id}@{where}"


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
    """One message to append through the write gate (:func:`agent_memory.model.drafts.prepare_message`: validated,
    redacted); returns the stored object and its line."""
    obj = prepare_message(message)
    try:
        line = json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        raise InvalidInputError("a message is not valid Unicode (lone surrogate)") from None
    return obj, line
