"""Episodes: one record per agent run (goal, approach, what worked and failed, exit, tokens and cost).

Recorded deterministically from the run by the pydantic-ai capability (``MemoryCapability``) and by
``MemoryHooks.on_run_end``; stored as files under the memory root (``episodes/<yyyy-mm>/<id>.md``),
scoped like records (a user's episodes are that user's; a session's that session's), redacted,
listed newest first and searchable by terms::

    store = EpisodeStore(".agent-memory")
    episode = store.write(build_episode("Book a table", output="Booked for 8pm", tool_calls=["search", "book"],
                                        user_id="ada"))
    store.list("table booking", user_id="ada")

A backend offering episodes (``backends.base.EpisodesBackend``) has an ``episodes`` store with the
:class:`Episodes` API: the files backend its root's :class:`EpisodeStore`, PostgreSQL its row store (table
``episodes``). :func:`episode_store` finds it; a backend without one raises :class:`EpisodesUnsupportedError`.
"""

from __future__ import annotations

import builtins
import os
from typing import Any, Protocol, runtime_checkable

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
from agent_memory.errors import UnsupportedError

__all__ = [
    "EXITS",
    "STATUSES",
    "Episode",
    "EpisodeParseError",
    "EpisodeStore",
    "Episodes",
    "EpisodesUnsupportedError",
    "ToolCall",
    "ToolUse",
    "build_episode",
    "episode_store",
    "exit_of_error",
    "parse_episode",
    "purge_episodes",
    "usage_numbers",
    "validate_episode_id",
    "visible",
]


class EpisodesUnsupportedError(UnsupportedError):
    """This backend keeps no episodes (it is no ``EpisodesBackend``). Kept for one release: catch
    :class:`~agent_memory.errors.UnsupportedError`."""


@runtime_checkable
class Episodes(Protocol):
    """What an episode store does, on files (:class:`EpisodeStore`) or in rows (PostgreSQL)."""

    def write(self, episode: Episode) -> Episode: ...

    def replace(self, episode: Episode) -> Episode: ...

    def get(self, episode_id: str, *, session_id: str | None = None, user_id: str | None = None) -> Episode: ...

    def list(
        self,
        query: str | None = None,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        limit: int = 20,
        status: str | None = None,
    ) -> builtins.list[Episode]: ...

    def count(self) -> int: ...

    def purge(self, *, user_id: str | None = None, session_id: str | None = None) -> int: ...

    def delete(self, episode_id: str, *, session_id: str | None = None, user_id: str | None = None) -> Episode: ...

    def restore(self, episode_id: str, *, session_id: str | None = None, user_id: str | None = None) -> Episode: ...


@runtime_checkable
class _OffersEpisodes(Protocol):  # backends.base.EpisodesBackend, seen from this layer
    @property
    def episodes(self) -> Episodes: ...


def episode_store(source: Any) -> Episodes:
    """The episode store of a root directory, a backend offering episodes (the files backend: its root's
    :class:`EpisodeStore`; PostgreSQL: its row store, same API), an extension wrapper of one, or a provider.

    Raises :class:`EpisodesUnsupportedError` for a backend without episodes.
    """
    if isinstance(source, Episodes):
        return source
    if isinstance(source, (str, os.PathLike)) and "://" not in str(source):
        return EpisodeStore(source)
    seen: Any = source
    for _ in range(16):  # a provider's backend, then the backends extension wrappers wrap
        if isinstance(seen, _OffersEpisodes):
            store = seen.episodes
            if isinstance(store, Episodes):
                return store
        found = vars(seen) if hasattr(seen, "__dict__") else {}
        seen = found.get("backend", found.get("inner"))
        if seen is None:
            break
        source = seen
    raise EpisodesUnsupportedError.of("episodes", source)
