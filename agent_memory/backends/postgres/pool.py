"""Connections: one async pool per backend, opened (and the schema migrated) on first use.

``pooled=False`` (a one-shot process such as the command line): plain connections opened when needed, kept
for reuse until :meth:`Pool.close`, at most ``max_size`` at once — no pool library, no background tasks,
no idle pings, so a cold ``agent-memory search`` pays one connect and its statements only.

Server and network failures become :class:`agent_memory.errors.BackendError` with the cause in the message
(never the password). Statements use no session state (no ``SET``, no prepared statements kept across
transactions), so the pool also works behind pgbouncer in transaction mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import AsyncIterator
from typing import Any

import psycopg
from psycopg.rows import dict_row

from agent_memory.backends.postgres.rows import redact_url
from agent_memory.backends.postgres.schema import LATEST, migrate
from agent_memory.errors import BackendError, InvalidInputError

__all__ = ["Pool", "redact_url"]

IDLE_CHECK_S = 1.0  # a connection idle longer than this is pinged before use


class Pool:
    """A lazily opened :class:`AsyncConnectionPool` whose connections return rows as dicts."""

    def __init__(self, url: str, schema: str, *, min_size: int = 1, max_size: int = 10, timeout_s: float = 30.0,
                 pooled: bool = True) -> None:
        if not isinstance(min_size, int) or not isinstance(max_size, int) or not 0 <= min_size <= max_size or max_size < 1:
            raise InvalidInputError("pool sizes must be integers with 0 <= min_size <= max_size and max_size >= 1")
        self.url = url
        self.schema = schema
        self.timeout_s = float(timeout_s)
        kwargs = {"row_factory": dict_row, "autocommit": True, "prepare_threshold": None}
        self._pool: Any = _Direct(url, max_size, self.timeout_s, kwargs)
        if pooled:
            from psycopg_pool import AsyncConnectionPool

            self._pool = AsyncConnectionPool(url, min_size=min_size, max_size=max_size, open=False, timeout=self.timeout_s,
                                             check=self._check, reset=self._returned, kwargs=kwargs)
        self._ready: asyncio.Lock | None = None
        self._last_used: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
        self._opened = False
        self.version = 0

    async def _returned(self, conn: Any) -> None:
        self._last_used[conn] = time.monotonic()

    async def _check(self, conn: Any) -> None:
        """At checkout: ping a connection that sat idle, so one the server dropped (restart, failover, idle
        timeout) is replaced instead of failing the caller's statement; a hot one costs no round trip."""
        last = self._last_used.get(conn)
        if last is None or time.monotonic() - last > IDLE_CHECK_S:
            from psycopg_pool import AsyncConnectionPool

            await AsyncConnectionPool.check_connection(conn)

    async def _open(self) -> None:
        if self._opened:
            return
        if self._ready is None:
            self._ready = asyncio.Lock()
        async with self._ready:
            if self._opened:
                return
            try:
                await self._pool.open(wait=True, timeout=self.timeout_s)
                async with self._pool.connection() as conn:
                    self.version = await self._current(conn) or await migrate(conn, self.schema)
            except _errors(psycopg.Error) as exc:
                with contextlib.suppress(Exception):
                    await self._pool.close()
                raise BackendError(f"PostgreSQL at {redact_url(self.url)} is not usable: {exc}") from None
            self._opened = True

    async def _current(self, conn: Any) -> int:
        """The schema's version when it is already the latest (one read, no lock, no DDL: a cold start of
        the command line pays one round trip for it); 0 when migrations may be due."""
        try:
            cur = await conn.execute(f'SELECT max(version) AS v FROM "{self.schema}".schema_version')
            row = await cur.fetchone()
        except psycopg.errors.UndefinedTable:
            return 0
        version = int(row["v"] or 0) if row else 0
        return version if version >= LATEST else 0

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        """A pooled connection (autocommit; use ``conn.transaction()`` for atomic work)."""
        await self._open()
        try:
            async with self._pool.connection() as conn:
                yield conn
        except psycopg.errors.QueryCanceled as exc:
            raise BackendError(f"PostgreSQL statement timed out: {exc}") from None
        except _errors(psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise BackendError(f"PostgreSQL at {redact_url(self.url)} failed: {exc}") from None

    async def close(self) -> None:
        if self._opened:
            await self._pool.close()
            self._opened = False



def _errors(*kinds: type[BaseException]) -> tuple[type[BaseException], ...]:
    """``kinds`` and the pool library's timeout when that library is loaded (a pool-less process never imports it)."""
    import sys

    mod = sys.modules.get("psycopg_pool")
    return kinds if mod is None else (*kinds, mod.PoolTimeout)


class _Direct:
    """Plain connections for a one-shot process: opened on demand, reused, at most ``max_size`` at once."""

    def __init__(self, url: str, max_size: int, timeout_s: float, kwargs: dict[str, Any]) -> None:
        self.url, self.max_size, self.timeout_s, self.kwargs = url, max_size, timeout_s, kwargs
        self._idle: list[Any] = []
        self._open: list[Any] = []
        self._slots: asyncio.Semaphore | None = None

    async def open(self, wait: bool = True, timeout: float = 30.0) -> None:  # noqa: ARG002 - the pool's signature
        return None

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_size)
        try:
            async with asyncio.timeout(self.timeout_s):
                await self._slots.acquire()
        except TimeoutError:
            raise BackendError(f"no PostgreSQL connection free within {self.timeout_s:g} s") from None
        try:
            conn = self._idle.pop() if self._idle else None
            if conn is None:
                conn = await psycopg.AsyncConnection.connect(self.url, connect_timeout=max(1, int(self.timeout_s)),
                                                             **self.kwargs)
                self._open.append(conn)
            try:
                yield conn
            finally:
                if conn.closed or conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    self._open.remove(conn)
                    await conn.close()
                else:
                    self._idle.append(conn)
        finally:
            self._slots.release()

    async def close(self) -> None:
        conns, self._open, self._idle = self._open, [], []
        for conn in conns:
            with contextlib.suppress(Exception):
                await conn.close()
