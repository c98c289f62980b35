"""Helpers the provider, the CLI and the tools share: finding a backend's session store, reading one session."""

from __future__ import annotations

from typing import Any

from agent_memory.errors import BackendError
from agent_memory.sessions._files import SessionMessage
from agent_memory.sessions.store import SessionInfo, SessionStore

__all__ = ["SessionsNotSupportedError", "session_store", "read_session"]


class SessionsNotSupportedError(BackendError):
    """The backend keeps no session logs (a custom backend without a ``sessions`` store)."""


def session_store(backend: Any) -> SessionStore:
    """The backend's :class:`SessionStore` (files or PostgreSQL rows), or :class:`SessionsNotSupportedError` naming the backend."""
    store = getattr(backend, "sessions", None)
    if not isinstance(store, SessionStore):
        raise SessionsNotSupportedError(f"session logs are not supported on the {type(backend).__name__} backend")
    return store


def read_session(store: SessionStore, target: str, session_id: str | None, user_id: str | None,
                 limit: int | None = None) -> tuple[SessionInfo, list[SessionMessage]]:
    """A visible session's info and messages (``limit``: the last N)."""
    sdir = store.resolve(target, session_id=session_id, user_id=user_id)
    messages, _ = store.files.read(sdir)
    return store.info(sdir), (messages[-limit:] if limit else list(messages))
