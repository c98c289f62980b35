"""The PostgreSQL backend (``pip install 'agent-memory[postgres]'``: psycopg 3 and psycopg-pool).

``PostgresBackend`` is imported on first use, so a light submodule (the command line's one-shot search,
:mod:`agent_memory.backends.postgres.oneshot`) never pays for psycopg.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.postgres.backend import PostgresBackend

__all__ = ["PostgresBackend"]


def __getattr__(name: str) -> Any:
    if name == "PostgresBackend":
        from agent_memory.backends.postgres.backend import PostgresBackend

        return PostgresBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
