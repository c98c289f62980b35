"""The provider's face of time: episodes (one per agent run) and session logs, summaries and contextual search."""

from __future__ import annotations

import asyncio
import builtins
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from agent_memory.backends.base import MemoryBackend

logger = logging.getLogger("agent_memory")

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.agents.profiles import Profile
    from agent_memory.episodes import Episode
    from agent_memory.sessions import SessionInfo, SessionMessage, SessionStore, SessionSummary, SummaryPolicy


class TimeAPI:
    """Mixed into :class:`~agent_memory.provider.MemoryProvider` (which supplies ``backend`` and the profile)."""

    if TYPE_CHECKING:  # pragma: no cover
        backend: MemoryBackend

        @property
        def profile(self) -> Profile: ...

        async def _loaded_profile(self) -> None: ...

        async def flush(self) -> builtins.list[Any]: ...

        def background(self, coro: Any) -> Any: ...

    # -- episodes (one per agent run; files backend) -------------------------------------
    async def record_episode(self, goal: str, *, session_id: str | None = None, user_id: str | None = None,
                             **facts: Any) -> "Episode":
        """Store the episode of one run; ``facts`` as :func:`agent_memory.episodes.build_episode` takes them.

        With a model in the profile's ``[episode]`` section, the stored episode is then refined in the background
        (:mod:`agent_memory.agents.workers.episode`; ``await provider.flush()`` waits for it); this call never waits for it."""
        from agent_memory.episodes import build_episode, episode_store

        store = episode_store(self.backend)
        episode: Episode = await asyncio.to_thread(
            lambda: store.write(build_episode(goal, session_id=session_id, user_id=user_id, **facts)))
        await self._loaded_profile()
        try:
            worker = self.profile.episode
        except Exception:  # an unreadable profile: the workers that need it report it; the episode stands
            return episode
        if not (isinstance(worker.model, str) and worker.model == "offline"):
            self.background(self._refine_episode(store, episode, worker))
        return episode

    async def _refine_episode(self, store: Any, episode: "Episode", worker: Any) -> "Episode | None":
        from agent_memory.agents.workers.episode import refine_episode

        refined = await refine_episode(episode, worker=worker)
        if refined is None:
            return None
        try:
            stored: Episode = await asyncio.to_thread(store.replace, refined)
            return stored
        except Exception:  # e.g. purged or hand-edited meanwhile: the deterministic episode (or nothing) stays
            logger.warning("agent_memory: could not store the refined episode %s", episode.id, exc_info=True)
            return None

    async def episodes(self, query: str | None = None, *, session_id: str | None = None, user_id: str | None = None,
                       limit: int = 20, status: str | None = None) -> "builtins.list[Episode]":
        """The caller's episodes: newest first, or best match for ``query`` first; ``status`` ok, failed or paused."""
        from agent_memory.episodes import episode_store

        store = episode_store(self.backend)
        return await asyncio.to_thread(store.list, query, session_id=session_id, user_id=user_id, limit=limit,
                                       status=status)

    async def episode(self, episode_id: str, *, session_id: str | None = None, user_id: str | None = None) -> "Episode":
        """One episode the caller may see (else :class:`~agent_memory.errors.NotFoundError`)."""
        from agent_memory.episodes import episode_store

        store = episode_store(self.backend)
        return await asyncio.to_thread(store.get, episode_id, session_id=session_id, user_id=user_id)

    # -- sessions (logs, summaries, contextual search; files backend) ---------------------
    @property
    def session_store(self) -> "SessionStore":
        """The :class:`~agent_memory.sessions.SessionStore` of the backend (:class:`SessionsNotSupportedError` if none)."""
        from agent_memory.sessions.api import session_store

        return session_store(self.backend)

    async def log_messages(self, messages: Iterable[Mapping[str, Any]], *, session_id: str, user_id: str | None = None
                           ) -> "builtins.list[SessionMessage]":
        """Append messages (``{"role", "text", "at"?, "speaker"?}``) to the session's log (redacted, locked)."""
        store, items = self.session_store, builtins.list(messages)
        return await asyncio.to_thread(store.append, session_id, items, user_id=user_id)

    async def sessions(self, *, session_id: str | None = None, user_id: str | None = None,
                       limit: int | None = None) -> "builtins.list[SessionInfo]":
        """The caller's sessions (its own, and its user's), most recently active first."""
        store = self.session_store
        return await asyncio.to_thread(store.sessions, session_id=session_id, user_id=user_id, limit=limit)

    async def session(self, target: str, *, session_id: str | None = None, user_id: str | None = None,
                      limit: int | None = None) -> "tuple[SessionInfo, builtins.list[SessionMessage]]":
        """One visible session and its messages (``limit``: the last N); :class:`NotFoundError` otherwise."""
        from agent_memory.sessions.api import read_session

        return await asyncio.to_thread(read_session, self.session_store, target, session_id, user_id, limit)

    async def summarize_session(self, target: str | None = None, *, session_id: str | None = None,
                                user_id: str | None = None, force: bool = False,
                                policy: "SummaryPolicy | None" = None) -> "SessionSummary | None":
        """Summarise a session (default: the caller's own) when due under ``policy`` or ``force``; fails open."""
        from agent_memory.agents.workers.summarize import summarize_session

        await self._loaded_profile()
        return await summarize_session(self.session_store, target or session_id, session_id=session_id,
                                       user_id=user_id, worker=lambda: self.profile.summarize, force=force, policy=policy)

    async def search_sessions(self, query: str, *, session_id: str | None = None, user_id: str | None = None,
                              limit: int = 5) -> "builtins.list[dict[str, Any]]":
        """The caller's sessions best matching ``query`` by their summaries, each with its best messages."""
        from agent_memory.sessions.contextual import embedder_of, search_sessions

        return await asyncio.to_thread(search_sessions, self.session_store, query, session_id=session_id,
                                       user_id=user_id, limit=limit, embedder=embedder_of(self.backend))
