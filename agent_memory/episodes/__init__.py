"""Episodes: one record per agent run (goal, approach, what worked and failed, exit, tokens and cost).

Recorded deterministically from the run by the pydantic-ai capability (``MemoryCapability``) and by
``MemoryHooks.on_run_end``; stored as files under the memory root (``episodes/<yyyy-mm>/<id>.md``),
scoped like records (a user's episodes are that user's; a session's that session's), redacted,
listed newest first and searchable by terms::

    store = EpisodeStore(".agent-memory")
    episode = store.write(build_episode("Book a table", output="Booked for 8pm", tool_calls=["search", "book"],
                                        user_id="ada"))
    store.list("table booking", user_id="ada")

On PostgreSQL, :func:`episode_store` returns the backend's row store (same API, table ``episodes``); a backend
with neither raises :class:`EpisodesUnsupportedError`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agent_memory.episodes._build import build_episode, exit_of_error, usage_numbers
from agent_memory.episodes._model import (
    EXITS,
    STATUSES,
    Episode,
    EpisodeParseError,
    ToolCall,
    ToolUse,
    parse_episode,
    validate_episode_id,
)
from agent_memory.episodes._store import EpisodeStore, purge_episodes, visible
from agent_memory.errors import BackendError

__all__ = [
    "EXITS", "STATUSES", "Episode", "EpisodeParseError", "EpisodeStore", "EpisodesUnsupportedError", "ToolCall",
    "ToolUse", "build_episode", "episode_store", "exit_of_error", "parse_episode", "purge_episodes", "usage_numbers",
    "validate_episode_id", "visible",
]


class EpisodesUnsupportedError(BackendError):
    """This backend keeps no episodes (neither a memory root nor an ``episodes`` store)."""


def episode_store(source: Any) -> EpisodeStore:
    """The :class:`EpisodeStore` of a root directory, a files backend, a ``MemoryStore`` or a provider.

    A PostgreSQL backend gives its row store (same API). Raises :class:`EpisodesUnsupportedError` for a backend
    with neither.
    """
    if isinstance(source, EpisodeStore):
        return source
    if isinstance(source, (str, os.PathLike)) and "://" not in str(source):
        return EpisodeStore(source)
    inner = getattr(source, "backend", None)
    target = inner if inner is not None else source
    rows = getattr(target, "episodes", None)  # PostgreSQL: PgEpisodeStore over the schema's rows (same API)
    if rows is not None and not callable(rows) and hasattr(rows, "write"):
        return rows  # type: ignore[no-any-return]
    root = getattr(target, "root", None)
    if isinstance(root, Path):
        return EpisodeStore(root)
    raise EpisodesUnsupportedError(f"episodes are not supported on {type(inner or source).__name__}")
