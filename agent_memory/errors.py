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
