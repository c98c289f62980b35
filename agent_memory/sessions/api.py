"""Helpers the provider, the CLI and the tools share: finding a backend's session store, reading one session."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from agent_memory.errors import UnsupportedError
from agent_memory.model import scopes
from agent_memory.sessions._files import SessionMessage
from agent_memory.sessions.store import SessionInfo, SessionStore

__all__ = ["SessionsNotSupportedError", "caller_view", "session_store", "read_session"]


class SessionsNotSupportedError(UnsupportedError):
    """The backend keeps no session logs (it is no ``SessionsBackend``). Kept for one release: catch
    :class:`~agent_memory.errors.UnsupportedError`."""


@runtime_checkable
class _OffersSessions(Protocol):  # backends.base.SessionsBackend, seen from this layer
    @property
    def sessions(self) -> SessionStore: ...


def session_store(backend: Any) -> SessionStore:
    """The :class:`SessionStore` (files or PostgreSQL rows) of a backend offering session logs, or of the backend an
    extension wrapper wraps; else :class:`SessionsNotSupportedError` naming the backend."""
    seen: Any = backend
    for _ in range(16):
        store = seen.sessions if isinstance(seen, _OffersSessions) else None
        if isinstance(store, SessionStore):
            return store
        inner = vars(seen).get("inner") if hasattr(seen, "__dict__") else None
        if inner is None:
            break
        seen = inner
    raise SessionsNotSupportedError.of("session logs", seen)


def read_session(
    store: SessionStore, target: str, session_id: str | None, user_id: str | None, limit: int | None = None
) -> tuple[SessionInfo, list[SessionMessage]]:
    """A visible session's info and messages (``limit``: the last N)."""
    sdir = store.resolve(target, session_id=session_id, user_id=user_id)
    messages, _ = store.files.read(sdir)
    return store.info(sdir), (messages[-limit:] if limit else list(messages))


async def caller_view(backend: Any, caller: Any) -> tuple[str, ...]:
    """The namespaces ``caller`` (a :class:`~agent_memory.backends.base.Caller`) reads on ``backend``: what to bind
    with :func:`agent_memory.model.scopes.viewing` around a read of session logs or episodes (the registry is asked
    only for a namespaced caller; a backend, or the one an extension wraps, offers it as ``namespaces()``)."""
    if not getattr(caller, "namespace", None):
        return scopes.ROOT_VIEW
    seen: Any = backend
    for _ in range(16):
        registry = getattr(seen, "namespaces", None)
        if callable(registry):
            return tuple(caller.view(await registry()))
        seen = vars(seen).get("inner") if hasattr(seen, "__dict__") else None
        if seen is None:
            break
    return tuple(caller.view(None))
