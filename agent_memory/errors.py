"""Typed errors raised by agent_memory. Every public failure is one of these."""

from __future__ import annotations

from typing import Self


class AgentMemoryError(Exception):
    """Base class of every error agent_memory raises on purpose."""


class InvalidInputError(AgentMemoryError, ValueError):
    """An argument was rejected before anything was written."""


class InvalidIdError(InvalidInputError):
    """An id or memory key is malformed or would escape the memory root."""


class NotFoundError(AgentMemoryError, LookupError):
    """No record the caller may see has this id."""


class LockTimeoutError(AgentMemoryError, TimeoutError):
    """The root's write lock could not be taken in time."""


class ProfileError(AgentMemoryError, ValueError):
    """A model profile is missing, unreadable or invalid."""


class StorageError(AgentMemoryError, OSError):
    """The root cannot be read or written (disk full, permission denied, read-only file system, …)."""


class ReadOnlyError(StorageError):
    """A write was asked of a root opened (or mounted) read-only."""


class BackendError(AgentMemoryError):
    """A storage backend failed in a way that is not the caller's input (e.g. a database is unreachable)."""


class UnsupportedError(BackendError):
    """The backend does not offer this feature: it lacks the capability protocol (``backends/base.py``) it needs.

    Raise it with :meth:`of`, so every backend and surface says it the same way:
    ``"<feature>: not supported on the <Backend> backend"`` (and, after it, what to do instead)."""

    feature: str | None = None
    backend: str | None = None

    @classmethod
    def of(cls, feature: str, backend: object, hint: str | None = None) -> Self:
        """The error for ``feature`` on ``backend`` (an object, or its name), in the one wording."""
        name = backend if isinstance(backend, str) else type(backend).__name__
        err = cls(f"{feature}: not supported on the {name} backend" + (f" ({hint})" if hint else ""))
        err.feature, err.backend = feature, name
        return err
