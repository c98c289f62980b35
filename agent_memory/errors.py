"""Typed errors raised by agent_memory. Every public failure is one of these."""

from __future__ import annotations


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
