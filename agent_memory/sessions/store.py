"""``SessionStore``: the visibility-checked API over session logs and their summaries.

A caller ``(session_id, user_id)`` sees a session when it *is* that session (and does not name a
different user than the session's own) or when the session belongs to the caller's user. Nothing
else is ever listed, counted, read, searched or summarised for it; a hidden session is "not found"
with the same words as a missing one.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Protocol

from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.model import scopes
from agent_memory.model.drafts import _parse_when
from agent_memory.model.values import shown
from agent_memory.sessions._files import (
    SessionDir,
    SessionFiles,
    SessionMessage,
    SessionProblem,
    SessionSummary,
    check_id,
    message_line,
    owner_ids,
)
from agent_memory.sessions._messages import writer_namespace

__all__ = ["SessionLog", "SessionStore", "SessionInfo", "SummaryPolicy", "purge_sessions", "visible"]


def visible(sdir: SessionDir, session_id: str | None, user_id: str | None) -> bool:
    """May a caller ``(session_id, user_id)`` see this session? A user's session log is that user's (naming only its
    session id is not enough, as for session records); a log with no user is its session's; and the log's namespace
    must be in the caller's view, bound for the call (:mod:`agent_memory.model.scopes`)."""
    scope = "user" if sdir.user_id is not None else "session"
    return scopes.may_see(scope, sdir.session_id, sdir.user_id, session_id=session_id, user_id=user_id, namespace=sdir.namespace)


@dataclass(frozen=True, slots=True)
class SummaryPolicy:
    """When a session is summarised again: idle for ``idle_s`` seconds, or ``every`` new messages since the last summary."""

    idle_s: float = 30 * 60
    every: int = 20

    def __post_init__(self) -> None:
        if not self.idle_s > 0 or not isinstance(self.every, int) or self.every < 1:
            raise InvalidInputError("summary policy: idle_s must be > 0 and every a positive integer")


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A session as listed: ids, message count, first/last message time and its summary (if any)."""

    session_id: str
    user_id: str | None
    messages: int
    first_at: str | None
    last_at: str | None
    summary: SessionSummary | None
    path: str
    namespace: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = {
            "session_id": self.session_id,
            "user_id": self.user_id,
            "messages": self.messages,
            "first_at": self.first_at,
            "last_at": self.last_at,
            "path": self.path,
            "summary": self.summary.to_dict() if self.summary else None,
        }
        return out | ({"namespace": self.namespace} if self.namespace else {})

    def due(self, policy: SummaryPolicy, now: dt.datetime | None = None) -> bool:
        """Does this session need a (new) summary under ``policy``?"""
        done = self.summary.messages if self.summary else 0
        new = self.messages - done
        if new <= 0:
            return False
        if new >= policy.every:
            return True
        last = _parse_when(self.last_at) if self.last_at else None
        when = now or dt.datetime.now(dt.UTC)
        return last is not None and (when - last).total_seconds() >= policy.idle_s


class SessionLog(Protocol):
    """Where session logs live, without visibility: :class:`SessionFiles` (files under a root) or the PostgreSQL
    rows of :class:`agent_memory.backends.postgres.sessions.PgSessionLog`. :class:`SessionStore` holds one.

    A log may also offer ``read_many(sdirs) -> [(messages, current summary), …]`` (in the order given): one round
    trip for many sessions instead of two per session, used by every read that lists sessions."""

    root: Any

    def session_dir(self, session_id: str, user_id: str | None, *, create: bool = False, namespace: str = "") -> SessionDir: ...
    def exists(self, sdir: SessionDir) -> bool: ...
    def all_dirs(self, problems: list[SessionProblem] | None = None) -> Iterator[SessionDir]: ...
    def user_dirs(self, user_id: str) -> list[SessionDir]: ...
    def find(self, session_id: str) -> list[SessionDir]: ...
    def _rel(self, path: PurePath) -> str: ...
    def rel(self, sdir: SessionDir, name: str = "log.jsonl") -> str: ...
    def append(self, sdir: SessionDir, lines: Sequence[bytes]) -> int: ...
    def read(self, sdir: SessionDir) -> tuple[list[SessionMessage], list[SessionProblem]]: ...
    def summary(self, sdir: SessionDir) -> tuple[SessionSummary | None, SessionProblem | None]: ...
    def history(self, sdir: SessionDir) -> list[SessionSummary]: ...
    def write_summary(
        self, sdir: SessionDir, text: str, *, messages: int, source: str, fallback: bool, made_at: str | None = None
    ) -> SessionSummary: ...
    def purge(self, *, user_id: str | None = None, session_id: str | None = None, namespace: str | None = None) -> int: ...


class SessionStore:
    """Session logs and summaries; every read takes the caller's ``session_id``/``user_id``.

    ``SessionStore(root)`` keeps them under ``root/sessions/``; ``SessionStore(log=...)`` over another
    :class:`SessionLog` (the PostgreSQL backend's ``backend.sessions`` is one over its rows)."""

    def __init__(self, root: str | os.PathLike[str] | None = None, *, durable: bool = True, log: SessionLog | None = None) -> None:
        if (root is None) == (log is None):
            raise InvalidInputError("SessionStore needs a root directory or a log, not both")
        self.files: SessionLog = log if log is not None else SessionFiles(root, durable=durable)  # type: ignore[arg-type]

    @property
    def root(self) -> Any:
        return self.files.root

    # -- writes ------------------------------------------------------------------------------
    def append(self, session_id: str, messages: Iterable[Mapping[str, Any]], *, user_id: str | None = None) -> list[SessionMessage]:
        """Append messages (``{"role", "text", "at"?, "speaker"?, "turn_id"?, "metadata"?}``) to a session's log.

        Every message passes the write gate (:func:`agent_memory.model.drafts.prepare_message`: validated and
        redacted) before anything is written; the log is the one of the caller's own namespace (the view bound
        for the call, :func:`agent_memory.model.scopes.viewing`); all of them are written
        in one locked append, so concurrent appenders never interleave or lose a line."""
        sid, uid = owner_ids(session_id, user_id)  # the write gate: never a secret in a directory name or column
        prepared = [message_line(m) for m in messages]
        if not prepared:
            return []
        sdir = self.files.session_dir(sid, uid, create=True, namespace=writer_namespace())
        first = self.files.append(sdir, [line for _, line in prepared])
        return [
            SessionMessage(
                sid, uid, first + i, obj["role"], obj["text"], obj["at"], obj.get("speaker"), obj.get("turn_id"), obj.get("meta") or {}
            )
            for i, (obj, _) in enumerate(prepared)
        ]

    def write_summary(
        self,
        session_id: str,
        text: str,
        *,
        user_id: str | None = None,
        messages: int | None = None,
        source: str = "offline",
        fallback: bool = False,
        made_at: str | None = None,
    ) -> SessionSummary:
        """Store a new summary version of the caller's own session (``user_id`` names its owner); the log passes
        its fields through the write gate (:func:`agent_memory.model.drafts.prepare_summary`)."""
        sdir = self._own(session_id, user_id)
        count = len(self.files.read(sdir)[0]) if messages is None else messages
        return self.files.write_summary(sdir, text, messages=count, source=source, fallback=fallback, made_at=made_at)

    def _own(self, session_id: str, user_id: str | None) -> SessionDir:
        sid = check_id("session_id", session_id, required=True)
        uid = check_id("user_id", user_id)
        assert sid is not None
        sdir = self.files.session_dir(sid, uid, namespace=writer_namespace())
        if not self.files.exists(sdir):
            raise NotFoundError(f"no session {shown(session_id)} visible to this caller")
        return sdir

    # -- reads -------------------------------------------------------------------------------
    def _visible_dirs(self, session_id: str | None, user_id: str | None) -> list[SessionDir]:
        check_id("session_id", session_id)
        check_id("user_id", user_id)
        if session_id is None and user_id is None:
            return []
        found: dict[Any, SessionDir] = {}  # only the caller's user directory and its session's directories are read
        if user_id is not None:
            for d in self.files.user_dirs(user_id):
                found[d.path] = d
        if session_id is not None:
            for d in self.files.find(session_id):
                found.setdefault(d.path, d)
        return [d for d in found.values() if visible(d, session_id, user_id)]

    def _logs(self, dirs: Sequence[SessionDir]) -> list[tuple[list[SessionMessage], SessionSummary | None]]:
        """Each session's messages and current summary: in one call when the log can (``read_many``)."""
        many = getattr(self.files, "read_many", None)
        if many is not None and dirs:
            return list(many(dirs))
        return [(self.files.read(d)[0], self.files.summary(d)[0]) for d in dirs]

    def info(self, sdir: SessionDir) -> SessionInfo:
        messages, _ = self.files.read(sdir)
        summary, _ = self.files.summary(sdir)
        return self._info(sdir, messages, summary)

    def _info(self, sdir: SessionDir, messages: Sequence[SessionMessage], summary: SessionSummary | None) -> SessionInfo:
        return SessionInfo(
            sdir.session_id,
            sdir.user_id,
            len(messages),
            messages[0].at if messages else None,
            messages[-1].at if messages else None,
            summary,
            self.files.rel(sdir, ""),
            sdir.namespace,
        )

    def sessions(self, *, session_id: str | None = None, user_id: str | None = None, limit: int | None = None) -> list[SessionInfo]:
        """The caller's visible sessions, most recently active first."""
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise InvalidInputError("limit must be a positive integer or None")
        dirs = self._visible_dirs(session_id, user_id)
        infos = [self._info(d, messages, summary) for d, (messages, summary) in zip(dirs, self._logs(dirs), strict=True)]
        infos.sort(key=lambda i: (i.last_at or "", i.session_id), reverse=True)
        return infos[:limit] if limit is not None else infos

    def resolve(self, target: str, *, session_id: str | None = None, user_id: str | None = None) -> SessionDir:
        """The directory of session ``target`` as this caller sees it, else :class:`NotFoundError`."""
        check_id("session", target, required=True)
        check_id("session_id", session_id)
        check_id("user_id", user_id)
        found = [d for d in self.files.find(target) if visible(d, session_id, user_id)]
        if not found:
            raise NotFoundError(f"no session {shown(target)} visible to this caller")
        view = scopes.current_view()  # the caller's own namespace first, then its nearest ancestor's …
        found.sort(key=lambda d: (d.user_id != user_id, d.user_id is not None, view.index(d.namespace)))
        return found[0]

    def session(self, target: str, *, session_id: str | None = None, user_id: str | None = None) -> SessionInfo:
        return self.info(self.resolve(target, session_id=session_id, user_id=user_id))

    def messages(
        self, target: str, *, session_id: str | None = None, user_id: str | None = None, limit: int | None = None
    ) -> list[SessionMessage]:
        """A visible session's messages in order (``limit``: the last N)."""
        messages, _ = self.files.read(self.resolve(target, session_id=session_id, user_id=user_id))
        return messages[-limit:] if limit else list(messages)

    def summary(self, target: str, *, session_id: str | None = None, user_id: str | None = None) -> SessionSummary | None:
        summary, _ = self.files.summary(self.resolve(target, session_id=session_id, user_id=user_id))
        return summary

    def summaries(self, target: str, *, session_id: str | None = None, user_id: str | None = None) -> list[SessionSummary]:
        """Every version of a visible session's summary, oldest first (the current one last)."""
        sdir = self.resolve(target, session_id=session_id, user_id=user_id)
        current, _ = self.files.summary(sdir)
        return self.files.history(sdir) + ([current] if current else [])

    def visible_logs(
        self, *, session_id: str | None, user_id: str | None
    ) -> list[tuple[SessionDir, list[SessionMessage], SessionSummary | None]]:
        """Every visible session with its messages and current summary (the input of contextual search)."""
        dirs = self._visible_dirs(session_id, user_id)
        return [(sdir, messages, summary) for sdir, (messages, summary) in zip(dirs, self._logs(dirs), strict=True)]

    # -- maintenance -------------------------------------------------------------------------
    def problems(self) -> list[SessionProblem]:
        """Every session file or line no read serves, with the reason (for ``doctor``)."""
        problems: list[SessionProblem] = []
        for sdir in self.files.all_dirs(problems):
            problems.extend(self.files.read(sdir)[1])
            bad = self.files.summary(sdir)[1]
            if bad is not None:
                problems.append(bad)
        return problems

    def purge(self, *, user_id: str | None = None, session_id: str | None = None, namespace: str | None = None) -> int:
        """Delete a user's, a session's or a namespace's logs (``namespace``: with its descendants; composes with
        the others); returns how many sessions."""
        check_id("user_id", user_id)
        check_id("session_id", session_id)
        if namespace is None:
            return self.files.purge(user_id=user_id, session_id=session_id)
        return self.files.purge(user_id=user_id, session_id=session_id, namespace=scopes.check_namespace(namespace))


def purge_sessions(
    root: str | os.PathLike[str],
    *,
    user_id: str | None = None,
    session_id: str | None = None,
    anonymous: bool = False,
    namespace: str | None = None,
) -> int:
    """Delete every byte of a user's (or a session's) logs and summaries under ``root``; returns how many sessions.

    Both given: that user's session. A session alone: that session id under every user, or with ``anonymous=True``
    only the session without a user (what a store's ``purge(session_id=...)`` takes: one owner, never another's).
    ``namespace``: only sessions in that namespace and its descendants (alone: every session there).
    Message vectors this process holds in memory are forgotten too (their files go with the directories)."""
    check_id("user_id", user_id)
    check_id("session_id", session_id)
    ns = None if namespace is None else scopes.check_namespace(namespace)
    removed = SessionFiles(root).purge(user_id=user_id, session_id=session_id, anonymous=anonymous, namespace=ns)
    dense = sys.modules.get(f"{__name__.rpartition('.')[0]}._dense")  # loaded only if vectors were ever made here
    if dense is not None:
        dense.clear_memory()
    return removed
