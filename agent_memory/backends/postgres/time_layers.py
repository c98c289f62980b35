"""The time layers of a PostgreSQL schema: session logs and summaries, episodes, and contextual search over them.

They share one small synchronous pool (their callers run them in threads, as the files backend's do); the
records' async pool is untouched. See :mod:`.sessions` and :mod:`.episodes` for the tables.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agent_memory.backends.base import Caller
from agent_memory.backends.postgres.episodes import PgEpisodeStore
from agent_memory.backends.postgres.sessions import PgSessionLog, SyncPool
from agent_memory.errors import InvalidInputError
from agent_memory.search.types import SearchResult
from agent_memory.sessions.store import SessionStore

__all__ = ["TimeLayers"]


class TimeLayers:
    """``sessions`` (a :class:`SessionStore` over rows) and ``episodes`` (:class:`PgEpisodeStore`) of one schema."""

    def __init__(self, url: str, schema: str, where: str, timeout_s: float = 30.0, text_config: str = "english") -> None:
        self.pool = SyncPool(url, schema, timeout_s=timeout_s)
        self.log = PgSessionLog(self.pool, where)
        self.sessions = SessionStore(log=self.log)
        self.episodes = PgEpisodeStore(self.pool, where, text_config)

    async def contextual(self, backend: Any, query: str, caller: Caller, limit: int, options: dict[str, Any]) -> SearchResult:
        """``search(mode="contextual")``: sessions by their summaries, then messages and records within them."""
        from agent_memory.sessions.contextual import contextual_search

        rest = {k: v for k, v in options.items() if k not in ("mode", "trace")}
        loop = asyncio.get_running_loop()

        def records(n: int) -> SearchResult:  # called from the worker thread: the record search runs on the loop
            future = asyncio.run_coroutine_threadsafe(backend.search(query, caller, limit=n, **rest), loop)
            result: SearchResult = future.result()
            return result

        return await asyncio.to_thread(
            contextual_search,
            self.sessions,
            query,
            limit=limit,
            trace=bool(options.get("trace")),
            records=records,
            session_id=caller.session_id,
            user_id=caller.user_id,
        )

    def purge(self, *, user_id: str | None = None, session_id: str | None = None, namespace: str | None = None) -> tuple[int, int]:
        """Delete the session logs and episodes of one owner (as records are purged, and as the files backend does;
        :func:`agent_memory.model.scopes.owns`): ``user_id`` alone is every session and episode of the user;
        ``user_id`` and ``session_id`` that user's session; ``session_id`` alone the session without a user (never
        another user's session of the same id). ``namespace``: only in that namespace and its descendants (alone:
        everything there). Returns (sessions, episodes) removed."""
        if user_id or (namespace is not None and not session_id):
            owner = {"user_id": user_id or None, "session_id": session_id or None, "namespace": namespace}
            return self.sessions.purge(**owner), self.episodes.purge(**owner)
        if not session_id:
            raise InvalidInputError("purge needs a user or a session")
        log = self.log
        inside, params = "", [session_id]
        if namespace is not None:
            inside = " AND (namespace = %s OR starts_with(namespace, %s))"
            params += [namespace, namespace + "/"]
        with self.pool.connection() as conn, conn.transaction():  # messages and summaries go by ON DELETE CASCADE
            sessions = conn.execute(
                f"DELETE FROM {log.t_sessions} WHERE tenant = '' AND user_id IS NULL AND session_id = %s{inside}", params
            ).rowcount
            episodes = conn.execute(f"DELETE FROM {self.episodes.table} WHERE user_id IS NULL AND session_id = %s{inside}", params).rowcount
        return int(sessions), int(episodes)

    def close(self) -> None:
        self.pool.close()
