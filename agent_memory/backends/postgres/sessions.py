"""Session logs and summaries in PostgreSQL rows: the same layer :class:`~agent_memory.sessions.SessionStore` keeps
in files, so visibility, validation and redaction are the store's and identical on both backends.

Tables (migration 5): ``sessions`` (one row per session, with the number of its last message),
``session_messages`` (one row per message, numbered 1, 2, … in its session) and ``session_summaries``
(every version; the current one is the highest). Every row carries ``tenant`` (the owning user id, ``''``
for a session without a user), so the tables distribute by user as ``records`` does. An append locks its
session's row while it numbers and inserts its messages, in one transaction: concurrent appenders on any
number of app servers never lose, double or interleave a line.

The layer is synchronous (the session store's callers run it in a thread) over its own small pool.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator, Sequence
from pathlib import PurePath, PurePosixPath
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from agent_memory.backends.postgres.links import MIGRATION_VERSION as LINKS_VERSION
from agent_memory.backends.postgres.links import rebuild_sync as rebuild_links_sync
from agent_memory.backends.postgres.pool import redact_url
from agent_memory.backends.postgres.schema import LATEST, migrations
from agent_memory.errors import BackendError, InvalidInputError
from agent_memory.model.drafts import prepare_summary
from agent_memory.sessions._messages import SessionDir, SessionMessage, SessionProblem, SessionSummary, dir_name, now_utc, ns_dir_name

__all__ = ["PgSessionLog", "SyncPool", "migrate_sync"]


def migrate_sync(conn: Any, schema: str) -> int:
    """:func:`~agent_memory.backends.postgres.schema.migrate` over a synchronous connection (same lock, same steps)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"agent_memory:{schema}",))
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        conn.execute(
            f'CREATE TABLE IF NOT EXISTS "{schema}".schema_version'
            " (version integer PRIMARY KEY, description text NOT NULL, applied timestamptz NOT NULL DEFAULT now())"
        )
        current = int(conn.execute(f'SELECT coalesce(max(version), 0) AS v FROM "{schema}".schema_version').fetchone()["v"])
        for version, description, statements in migrations(schema):
            if version <= current:
                continue
            for stmt in statements:
                conn.execute(stmt)
            conn.execute(f'INSERT INTO "{schema}".schema_version (version, description) VALUES (%s, %s)', (version, description))
            current = version
            if version == LINKS_VERSION:  # as migrate does: link rows of the records already there
                rebuild_links_sync(conn, schema)
        return current


class SyncPool:
    """A lazily opened synchronous pool (rows as dicts, autocommit) whose first use migrates the schema."""

    def __init__(self, url: str, schema: str, *, max_size: int = 4, timeout_s: float = 30.0) -> None:
        self.url, self.schema, self.timeout_s = url, schema, timeout_s
        self._pool = ConnectionPool(
            url,
            min_size=0,
            max_size=max_size,
            open=False,
            timeout=timeout_s,
            kwargs={"row_factory": dict_row, "autocommit": True, "prepare_threshold": None},
        )
        self._lock = threading.Lock()
        self._opened = False

    def _open(self) -> None:
        with self._lock:
            if self._opened:
                return
            try:
                # a direct first connection fails fast (a refused port is not retried for the whole timeout)
                with psycopg.connect(self.url, autocommit=True, row_factory=dict_row, connect_timeout=max(1, int(self.timeout_s))) as conn:
                    row: Any = None
                    with contextlib.suppress(psycopg.errors.UndefinedTable):
                        row = conn.execute(f'SELECT max(version) AS v FROM "{self.schema}".schema_version').fetchone()
                    if row is None or int(row["v"] or 0) < LATEST:
                        migrate_sync(conn, self.schema)
                self._pool.open(wait=False)
            except (psycopg.Error, PoolTimeout) as exc:
                self._renew()
                raise BackendError(f"PostgreSQL at {redact_url(self.url)} is not usable: {exc}") from None
            self._opened = True

    @contextlib.contextmanager
    def connection(self) -> Iterator[Any]:
        self._open()
        try:
            with self._pool.connection(timeout=self.timeout_s) as conn:
                yield conn
        except psycopg.errors.QueryCanceled as exc:
            raise BackendError(f"PostgreSQL statement timed out: {exc}") from None
        except (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout) as exc:
            raise BackendError(f"PostgreSQL at {redact_url(self.url)} failed: {exc}") from None

    def _renew(self) -> None:
        """Close the pool and make a fresh one (a closed pool cannot be reopened): the next use connects again."""
        with contextlib.suppress(Exception):
            self._pool.close()
        self._pool = ConnectionPool(
            self.url, min_size=0, max_size=self._pool.max_size, open=False, timeout=self.timeout_s, kwargs=self._pool.kwargs
        )

    def close(self) -> None:
        with self._lock:
            if self._opened:
                self._renew()
                self._opened = False


_KEY = "tenant = %s AND namespace = %s AND session_id = %s"  # one session's rows (PgSessionLog._key)


def _no_nul(*values: Any) -> None:
    for value in values:
        if isinstance(value, str) and "\x00" in value:
            raise InvalidInputError("PostgreSQL text cannot hold a NUL character; nothing was appended")


class PgSessionLog:
    """The rows of every session of one schema (no visibility here: see :class:`~agent_memory.sessions.SessionStore`)."""

    def __init__(self, pool: SyncPool, where: str) -> None:
        self.pool = pool
        self.root = where  # "<url without password>#<schema>": what paths of hits and messages start with
        self.durable = True
        s = pool.schema
        self.t_sessions, self.t_messages, self.t_summaries = (f'"{s}".sessions', f'"{s}".session_messages', f'"{s}".session_summaries')

    # -- addresses ---------------------------------------------------------------------------
    @staticmethod
    def _dir(session_id: str, user_id: str | None, namespace: str = "") -> SessionDir:
        parts = ("sessions", ns_dir_name(namespace), dir_name(user_id), dir_name(session_id)) if namespace else None
        path = PurePosixPath(*parts) if parts else PurePosixPath("sessions", dir_name(user_id), dir_name(session_id))
        return SessionDir(path, session_id, user_id, namespace)

    @staticmethod
    def _key(sdir: SessionDir) -> tuple[str, str, str]:
        return (sdir.user_id or "", sdir.namespace, sdir.session_id)

    def _rel(self, path: PurePath) -> str:
        return f"{self.root}/{PurePosixPath(path)}"

    def rel(self, sdir: SessionDir, name: str = "log.jsonl") -> str:
        return self._rel(PurePosixPath(sdir.path, name) if name else sdir.path)

    def _dirs(self, where: str, params: Sequence[Any]) -> list[SessionDir]:
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT session_id, user_id, namespace FROM {self.t_sessions} WHERE {where} ORDER BY tenant, namespace, session_id", params
            ).fetchall()
        return [self._dir(r["session_id"], r["user_id"], r["namespace"]) for r in rows]

    # -- directories (rows) ----------------------------------------------------------------------
    def session_dir(self, session_id: str, user_id: str | None, *, create: bool = False, namespace: str = "") -> SessionDir:
        sdir = self._dir(session_id, user_id, namespace)
        if create:
            _no_nul(session_id, user_id)
            with self.pool.connection() as conn:
                conn.execute(
                    f"INSERT INTO {self.t_sessions} (tenant, namespace, session_id, user_id, created) VALUES (%s, %s, %s, %s, %s)"
                    " ON CONFLICT (tenant, namespace, session_id) DO NOTHING",
                    (*self._key(sdir), user_id, now_utc()),
                )
        return sdir

    def exists(self, sdir: SessionDir) -> bool:
        with self.pool.connection() as conn:
            return conn.execute(f"SELECT 1 FROM {self.t_sessions} WHERE {_KEY}", self._key(sdir)).fetchone() is not None

    def all_dirs(self, problems: list[SessionProblem] | None = None) -> Iterator[SessionDir]:
        yield from self._dirs("true", ())

    def user_dirs(self, user_id: str) -> list[SessionDir]:
        return self._dirs("tenant = %s", (user_id,))

    def find(self, session_id: str) -> list[SessionDir]:
        return self._dirs("session_id = %s", (session_id,))

    # -- log ---------------------------------------------------------------------------------
    def append(self, sdir: SessionDir, lines: Sequence[bytes]) -> int:
        """Insert the messages of ``lines`` (JSON objects, validated and redacted) in one transaction; returns the
        number of the first. The session's row is locked while numbering, so appenders queue, never collide."""
        objs = [json.loads(line) for line in lines]
        for obj in objs:
            _no_nul(obj["role"], obj["text"], obj.get("speaker"), obj.get("turn_id"), json.dumps(obj.get("meta") or {}))
        tenant, ns, sid = self._key(sdir)
        with self.pool.connection() as conn, conn.transaction():
            row = conn.execute(
                f"UPDATE {self.t_sessions} SET messages = messages + %s WHERE {_KEY} RETURNING messages",
                (len(objs), tenant, ns, sid),
            ).fetchone()
            if row is None:
                raise BackendError(f"session {sid!r} vanished while appending (purged?); nothing was appended")
            first = int(row["messages"]) - len(objs) + 1
            with conn.cursor() as cur:
                cur.executemany(
                    f"INSERT INTO {self.t_messages} (tenant, namespace, session_id, n, role, text, at, speaker, turn_id, meta)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    [
                        (
                            tenant,
                            ns,
                            sid,
                            first + i,
                            o["role"],
                            o["text"],
                            o["at"],
                            o.get("speaker"),
                            o.get("turn_id"),
                            json.dumps(o.get("meta") or {}, ensure_ascii=False),
                        )
                        for i, o in enumerate(objs)
                    ],
                )
        return first

    def read(self, sdir: SessionDir) -> tuple[list[SessionMessage], list[SessionProblem]]:
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT n, role, text, at, speaker, turn_id, meta FROM {self.t_messages} WHERE {_KEY} ORDER BY n",
                self._key(sdir),
            ).fetchall()
        return [
            SessionMessage(
                sdir.session_id, sdir.user_id, r["n"], r["role"], r["text"], r["at"], r["speaker"], r["turn_id"], dict(r["meta"] or {})
            )
            for r in rows
        ], []

    def read_many(self, sdirs: Sequence[SessionDir]) -> list[tuple[list[SessionMessage], SessionSummary | None]]:
        """Messages and current summary of every session in ``sdirs`` (in that order): two statements in all."""
        keys = [self._key(d) for d in sdirs]
        pick = " WHERE (tenant, namespace, session_id) IN (SELECT * FROM unnest(%s::text[], %s::text[], %s::text[]))"
        args = ([k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys])
        with self.pool.connection() as conn:
            msgs = conn.execute(
                f"SELECT tenant, namespace, session_id, n, role, text, at, speaker, turn_id, meta FROM {self.t_messages}"
                f"{pick} ORDER BY tenant, namespace, session_id, n",
                args,
            ).fetchall()
            sums = conn.execute(
                f"SELECT DISTINCT ON (tenant, namespace, session_id) tenant, namespace, session_id, version, text, made_at,"
                f" messages, source, fallback FROM {self.t_summaries}{pick}"
                " ORDER BY tenant, namespace, session_id, version DESC",
                args,
            ).fetchall()
        by_key: dict[tuple[str, str, str], list[Any]] = {}
        for r in msgs:
            by_key.setdefault((r["tenant"], r["namespace"], r["session_id"]), []).append(r)
        summary_of = {(r["tenant"], r["namespace"], r["session_id"]): r for r in sums}
        out = []
        for sdir, key in zip(sdirs, keys, strict=True):
            s = summary_of.get(key)
            out.append(
                (
                    [
                        SessionMessage(
                            sdir.session_id,
                            sdir.user_id,
                            r["n"],
                            r["role"],
                            r["text"],
                            r["at"],
                            r["speaker"],
                            r["turn_id"],
                            dict(r["meta"] or {}),
                        )
                        for r in by_key.get(key, [])
                    ],
                    None
                    if s is None
                    else SessionSummary(
                        sdir.session_id, sdir.user_id, s["version"], s["text"], s["made_at"], s["messages"], s["source"], s["fallback"]
                    ),
                )
            )
        return out

    # -- summaries ---------------------------------------------------------------------------
    def _summaries(self, sdir: SessionDir, last: bool) -> list[SessionSummary]:
        order = "DESC LIMIT 1" if last else "ASC"
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT version, text, made_at, messages, source, fallback FROM {self.t_summaries} WHERE {_KEY} ORDER BY version {order}",
                self._key(sdir),
            ).fetchall()
        return [
            SessionSummary(sdir.session_id, sdir.user_id, r["version"], r["text"], r["made_at"], r["messages"], r["source"], r["fallback"])
            for r in rows
        ]

    def summary(self, sdir: SessionDir) -> tuple[SessionSummary | None, SessionProblem | None]:
        found = self._summaries(sdir, True)
        return (found[0] if found else None), None

    def history(self, sdir: SessionDir) -> list[SessionSummary]:
        """Earlier summary versions, oldest first (the current one excluded)."""
        return self._summaries(sdir, False)[:-1]

    def write_summary(
        self, sdir: SessionDir, text: str, *, messages: int, source: str, fallback: bool, made_at: str | None = None
    ) -> SessionSummary:
        """Store the next version (the session's row is locked, so two summarisers never take the same number); its
        fields pass the write gate first (:func:`agent_memory.model.drafts.prepare_summary`)."""
        fields = prepare_summary(text, messages=messages, source=source, fallback=fallback, made_at=made_at)
        clean, source, messages, fallback = fields["text"], fields["source"], fields["messages"], fields["fallback"]
        _no_nul(clean, source)
        tenant, ns, sid = self._key(sdir)
        with self.pool.connection() as conn, conn.transaction():
            if conn.execute(f"SELECT 1 FROM {self.t_sessions} WHERE {_KEY} FOR UPDATE", (tenant, ns, sid)).fetchone() is None:
                raise BackendError(f"session {sid!r} vanished (purged?); no summary was written")
            version = int(
                conn.execute(
                    f"SELECT coalesce(max(version), 0) + 1 AS v FROM {self.t_summaries} WHERE {_KEY}",
                    (tenant, ns, sid),
                ).fetchone()["v"]
            )
            new = SessionSummary(sid, sdir.user_id, version, clean, fields["made_at"], messages, source, fallback)
            conn.execute(
                f"INSERT INTO {self.t_summaries} (tenant, namespace, session_id, version, text, made_at, messages, source,"
                " fallback) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (tenant, ns, sid, version, new.text, new.made_at, messages, source, fallback),
            )
        return new

    # -- deletion ----------------------------------------------------------------------------
    def purge(self, *, user_id: str | None = None, session_id: str | None = None, namespace: str | None = None) -> int:
        """Delete the rows of a user's sessions, of a session, or of both given; returns how many sessions.
        ``namespace``: only sessions in it and its descendants (alone: every session there)."""
        if user_id is None and session_id is None and not namespace:
            raise InvalidInputError("purge_sessions needs user_id, session_id or namespace")
        where, params = [], []
        if namespace is not None:
            where.append("(namespace = %s OR starts_with(namespace, %s))")
            params += [namespace, namespace + "/"]
        if user_id is not None:
            where.append("tenant = %s")
            params.append(user_id)
        if session_id is not None:
            where.append("session_id = %s")
            params.append(session_id)
        with self.pool.connection() as conn, conn.transaction():  # messages and summaries go by ON DELETE CASCADE
            cur = conn.execute(f"DELETE FROM {self.t_sessions} WHERE {' AND '.join(where)}", params)
            return int(cur.rowcount)
