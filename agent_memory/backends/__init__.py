"""Storage backends: :func:`open_backend` picks one for a root directory, a URL or a ready-made backend.

The files backend lives in :mod:`agent_memory.backends.base`; others are optional extras with their own
dependencies (PostgreSQL: ``pip install 'agent-memory[postgres]'``), imported only when asked for.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - imported when a backend is opened (a light submodule never needs them)
    from agent_memory.backends.base import MemoryBackend

__all__ = ["open_backend"]


def open_backend(target: str | os.PathLike[str] | MemoryBackend, **options: Any) -> MemoryBackend:
    """A backend for a root directory, a ``postgresql://`` URL, or an already-built backend."""
    from agent_memory.backends.base import MemoryBackend
    from agent_memory.backends.files.backend import FilesBackend

    if isinstance(target, MemoryBackend) and not isinstance(target, (str, os.PathLike)):
        return target
    text = os.fspath(target)
    if text.startswith(("postgresql://", "postgres://")):
        from agent_memory.errors import needs_extra

        with needs_extra("the PostgreSQL backend"):  # the one check: no psycopg is a MissingExtraError
            from agent_memory.backends.postgres import PostgresBackend  # type: ignore[import-not-found,unused-ignore]  # optional

        backend: MemoryBackend = PostgresBackend(text, **options)
        return backend
    from agent_memory.backends.files.store import MemoryStore

    return FilesBackend(MemoryStore(text, **options))
