"""Episodes in PostgreSQL rows (migration 5, table ``episodes``): the files backend's :class:`EpisodeStore` API.

One row per run: the episode as JSON, its goal and readable body (searched with a weighted ``tsvector``),
``tenant`` = the owning user id (``''`` for project/global episodes) like ``records``. Reads obey the
records' visibility table inside the query, before the limit; newest first, or best match first.
"""

from __future__ import annotations

import builtins
import dataclasses
import json
import uuid
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from agent_memory.backends.postgres.sessions import SyncPool
from agent_memory.episodes._model import STATUSES, Episode, ToolUse, gated, parse_episode, validate_episode_id
from agent_memory.episodes._store import MAX_LIMIT, _check_caller, query_terms, stamp_namespace
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.model import scopes
from agent_memory.model.drafts import prepare_event
from agent_memory.model.events import current_acting
from agent_memory.model.records import Scope

__all__ = ["PgEpisodeStore"]

_LIVE = "NOT (e.data ? 'deleted')"  # a deleted episode keeps its row (restorable) and leaves every read
_VISIBLE = f"{scopes.postgres_sql('e')} AND {_LIVE}"  # scope, owners and the namespace view bound for the call


def _tenant(episode: Episode) -> str:
    return "" if episode.scope in (Scope.PROJECT, Scope.GLOBAL) else (episode.user_id or "")


class PgEpisodeStore:
    """Episodes of one schema: write, get, list (newest first), search by terms, count, doctor, purge."""

    def __init__(self, pool: SyncPool, where: str, text_config: str = "english") -> None:
        self.pool = pool
        self.root = where
        self.table = f'"{pool.schema}".episodes'
        self.cfg = text_config

    def path_of(self, episode_id: str) -> str:
        return f"{self.root}/episodes/{validate_episode_id(episode_id)}"

    def write(self, episode: Episode) -> Episode:
        """Store ``episode`` (a new row; an existing id is refused) in the writer's namespace; returns it with its ``path``."""
        episode = stamp_namespace(gated(episode))  # the write gate, whoever built the episode
        text = episode.render()
        parse_episode(text, episode.id)  # never write what could not be read back
        if "\x00" in text:
            raise InvalidInputError("PostgreSQL text cannot hold a NUL character; the episode was not written")
        data = json.dumps({k: v for k, v in episode.to_dict().items() if k not in ("path", "approach", "tokens")}, ensure_ascii=False)
        try:
            with self.pool.connection() as conn:
                conn.execute(
                    f"INSERT INTO {self.table} (tenant, id, scope, session_id, user_id, started, status, goal, body,"
                    " data, namespace) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (
                        _tenant(episode),
                        episode.id,
                        episode.scope.value,
                        episode.session_id,
                        episode.user_id,
                        episode.started,
                        episode.status,
                        episode.goal,
                        episode.body(),
                        data,
                        episode.namespace,
                    ),
                )
        except psycopg.errors.UniqueViolation:
            raise InvalidInputError(f"episode {episode.id} exists already") from None
        return dataclasses.replace(episode, path=self.path_of(episode.id))

    def replace(self, episode: Episode) -> Episode:
        """Rewrite an existing episode's row (a refinement: same id, owner and run facts)."""
        episode = gated(episode)  # the write gate, whoever built the episode
        text = episode.render()
        parse_episode(text, episode.id)
        if "\x00" in text:
            raise InvalidInputError("PostgreSQL text cannot hold a NUL character; the episode was not rewritten")
        data = json.dumps({k: v for k, v in episode.to_dict().items() if k not in ("path", "approach", "tokens")}, ensure_ascii=False)
        with self.pool.connection() as conn:
            done = conn.execute(
                f"UPDATE {self.table} SET status = %s, goal = %s, body = %s, data = %s"
                " WHERE tenant = %s AND id = %s AND scope = %s AND session_id IS NOT DISTINCT FROM %s"
                " AND user_id IS NOT DISTINCT FROM %s AND started = %s AND namespace = %s",
                (
                    episode.status,
                    episode.goal,
                    episode.body(),
                    data,
                    _tenant(episode),
                    episode.id,
                    episode.scope.value,
                    episode.session_id,
                    episode.user_id,
                    episode.started,
                    episode.namespace,
                ),
            ).rowcount
        if not done:
            raise NotFoundError(f"no episode {episode.id} with this owner and run")
        return dataclasses.replace(episode, path=self.path_of(episode.id))

    def delete(self, episode_id: str, *, session_id: str | None = None, user_id: str | None = None) -> Episode:
        """Mark one episode the caller may see deleted (never listed; :meth:`restore` brings it back), evented."""
        return self._move(episode_id, session_id, user_id, restore=False)

    def restore(self, episode_id: str, *, session_id: str | None = None, user_id: str | None = None) -> Episode:
        """Bring back an episode :meth:`delete` took away, if the caller may see it."""
        return self._move(episode_id, session_id, user_id, restore=True)

    def _move(self, episode_id: str, session_id: str | None, user_id: str | None, *, restore: bool) -> Episode:
        _check_caller(session_id=session_id, user_id=user_id)
        params = {**self._params(session_id, user_id), "id": validate_episode_id(episode_id)}
        state = _LIVE.replace("NOT ", "") if restore else _LIVE
        with self.pool.connection() as conn, conn.transaction():
            row = conn.execute(
                f"SELECT tenant, data FROM {self.table} e WHERE e.id = %(id)s AND {scopes.postgres_sql('e')} AND {state} FOR UPDATE",
                params,
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no {'deleted ' if restore else ''}episode {episode_id!r} visible to this caller")
            change = "data - 'deleted'" if restore else "data || jsonb_build_object('deleted', now()::text)"
            conn.execute(f"UPDATE {self.table} SET data = {change} WHERE tenant = %s AND id = %s", (row["tenant"], episode_id))
            episode = self._episode(row["data"])
            self._event(conn, row["tenant"], "episode_restored" if restore else "episode_deleted", episode, session_id, user_id)
        return episode

    def _event(self, conn: Any, tenant: str, kind: str, episode: Episode, session_id: str | None, user_id: str | None) -> None:
        """The change in the schema's event log, through the write gate like every event (visible like the episode)."""
        who = current_acting()
        ev = prepare_event(
            {
                "eid": uuid.uuid4().hex[:16],
                "event": kind,
                "id": episode.id,
                "actor": who.actor or "api",
                "session_id": who.session_id or session_id,
                "user_id": who.user_id or user_id,
                "run_id": who.run_id,
                "tool_call_id": who.tool_call_id,
                "scope": episode.scope.value,
                "owner_session": episode.session_id,
                "owner_user": episode.user_id,
                "detail": {},
                "owner_namespace": episode.namespace or "",  # visible, and purged by namespace, as the episode
            }
        )
        names = [k for k in ev if k != "detail"]
        conn.execute(
            f'INSERT INTO "{self.pool.schema}".events (tenant, {", ".join(names)}, detail) VALUES (%s, {", ".join(["%s"] * len(names))}, %s)',
            (tenant, *(ev[k] for k in names), Jsonb(ev["detail"])),
        )

    def _episode(self, data: Any) -> Episode:
        raw = dict(data)
        raw.pop("deleted", None)
        raw["scope"] = Scope(raw["scope"])
        raw["tools"] = tuple(ToolUse(**t) for t in raw.get("tools") or ())
        for name in ("sequence", "worked", "failed"):
            raw[name] = tuple(raw.get(name) or ())
        raw["path"] = self.path_of(raw["id"])
        return Episode(**raw)

    @staticmethod
    def _params(session_id: str | None, user_id: str | None) -> dict[str, Any]:
        return scopes.postgres_params({"sid": session_id, "uid": user_id})  # the view bound for the call (scopes.viewing)

    def get(self, episode_id: str, *, session_id: str | None = None, user_id: str | None = None) -> Episode:
        """One episode the caller may see; hidden and missing are the same :class:`NotFoundError`."""
        _check_caller(session_id=session_id, user_id=user_id)
        params = {**self._params(session_id, user_id), "id": validate_episode_id(episode_id)}
        with self.pool.connection() as conn:
            row = conn.execute(f"SELECT data FROM {self.table} e WHERE e.id = %(id)s AND {_VISIBLE}", params).fetchone()
        if row is None:
            raise NotFoundError(f"no episode {episode_id!r} visible to this caller")
        return self._episode(row["data"])

    def list(
        self,
        query: str | None = None,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        limit: int = 20,
        status: str | None = None,
    ) -> builtins.list[Episode]:
        """The caller's visible episodes: newest first, or, with ``query``, best match first (ties newest first)."""
        _check_caller(session_id=session_id, user_id=user_id, query=query)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise InvalidInputError(f"limit must be a whole number from 1 to {MAX_LIMIT}")
        if status is not None and status not in STATUSES:
            raise InvalidInputError(f"status must be one of {', '.join(STATUSES)}")
        params: dict[str, Any] = {**self._params(session_id, user_id), "limit": limit, "status": status}
        where = f"{_VISIBLE} AND (%(status)s::text IS NULL OR e.status = %(status)s)"
        terms = query_terms(query) if query else []
        if terms:
            params.update({f"t{i}": t for i, t in enumerate(terms)})  # OR-ed, stemmed, stop words dropped
            q = " || ".join(f"plainto_tsquery('{self.cfg}'::regconfig, %(t{i})s)" for i in range(len(terms)))
            sql = (
                f"SELECT e.data FROM {self.table} e, (SELECT {q}) AS q(query) WHERE e.tsv @@ q.query AND {where}"
                " ORDER BY ts_rank_cd(e.tsv, q.query) DESC, e.started DESC, e.id DESC LIMIT %(limit)s"
            )
        else:
            sql = f"SELECT e.data FROM {self.table} e WHERE {where} ORDER BY e.started DESC, e.id DESC LIMIT %(limit)s"
        with self.pool.connection() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [self._episode(r["data"]) for r in rows]

    def count(self) -> int:
        """How many episodes are stored (every scope; for status and tests)."""
        with self.pool.connection() as conn:
            return int(conn.execute(f"SELECT count(*) AS n FROM {self.table} e WHERE {_LIVE}").fetchone()["n"])

    def doctor(self) -> builtins.list[dict[str, str]]:
        """Rows are checked when written: nothing to quarantine."""
        return []

    def reindex(self) -> int:
        """Nothing derived to rebuild (the search vector is a generated column); returns the number of episodes."""
        return self.count()

    def purge(self, *, user_id: str | None = None, session_id: str | None = None, namespace: str | None = None) -> int:
        """Delete every episode of ``user_id`` and/or ``session_id`` (both given: that user's episodes in that session);
        ``namespace``: only those in that namespace and its descendants (alone: every episode there)."""
        if user_id is None and session_id is None and not namespace:
            raise InvalidInputError("purge_episodes needs a user_id, a session_id or a namespace")
        _check_caller(user_id=user_id, session_id=session_id)
        ns = None if namespace is None else scopes.check_namespace(namespace)
        where = " AND ".join(
            w
            for w, v in (
                ("user_id = %(uid)s", user_id),
                ("session_id = %(sid)s", session_id),
                ("(namespace = %(ns)s OR starts_with(namespace, %(under)s))", ns),
            )
            if v is not None
        )
        params = {"uid": user_id, "sid": session_id, "ns": ns, "under": f"{ns}/"}
        with self.pool.connection() as conn:
            return int(conn.execute(f"DELETE FROM {self.table} WHERE {where}", params).rowcount)
