"""Connections, and the one rule for who owns them (docs/architecture: "who owns a connection").

**The rule.** An asyncio connection belongs to the event loop that opened it, so a :class:`Pool` keeps its
connections *per running loop* and never lets one loop touch another's:

- the first statement on a loop opens that loop's connections (the first ever also checks, and if needed
  migrates, the schema over one direct connection, so a server that is down fails fast with
  :class:`~agent_memory.errors.BackendError` instead of after the whole timeout);
- the owner of the loop closes them on that loop: an async app with ``await backend.close()`` (or
  ``async with MemoryProvider(…)``); a CLI command or sync wrapper inside the same ``asyncio.run`` /
  ``asyncio.Runner`` that did the work (``agent_memory.cli._target.BackendTarget``, ``cli._workers._run``);
- an owner that forgets is covered: when its loop ends (``asyncio.run`` and ``Runner.close`` cancel every task),
  a guard task closes that loop's connections, so ``asyncio.run(backend.list(…))`` from sync code never hangs
  on the pool library's reconnecting workers; a loop closed without that (``loop.close()`` by hand) is found
  on the next use and its connections are dropped without touching the dead loop;
- each ``asyncio.run`` is a new loop: the next call simply opens connections on it (never "Event loop is
  closed"), and :meth:`Pool.close` closes only the calling loop's connections (other live loops close theirs
  when they end), after which the pool opens again on demand;
- a failed open leaves nothing behind: the next call tries afresh, so the backend recovers when the server
  comes back (never "pool cannot be reused").

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
import itertools
import logging
import threading
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
POOL_PREFIX = "agent-memory-pg-"  # our pools' names, so their log records can be told from other pools'
_names = itertools.count(1)


class _QuietCancelledConnects(logging.Filter):
    """Drop the pool library's "error connecting" warning when the error is the cancellation of one of OUR pools'
    background connects: the loop that owned the pool ended (a sync call's ``asyncio.run``) while it was still
    filling, and the guard closed it — nothing failed (it printed an empty "error connecting in 'pool-2': ")."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        return not (
            len(args) == 2
            and isinstance(args[1], asyncio.CancelledError)
            and str(args[0]).startswith(POOL_PREFIX)
            and str(record.msg).startswith("error connecting")
        )


_quiet = _QuietCancelledConnects()


class _Bound:
    """One loop's connections: the pool (or plain connections) and the guard that closes them with the loop."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.ready = asyncio.Lock()
        self.opened = False
        self.guard: asyncio.Task[None] | None = None


class Pool:
    """Connections returning rows as dicts, per event loop (the rule in the module docstring)."""

    def __init__(
        self, url: str, schema: str, *, min_size: int = 1, max_size: int = 10, timeout_s: float = 30.0, pooled: bool = True
    ) -> None:
        if not isinstance(min_size, int) or not isinstance(max_size, int) or not 0 <= min_size <= max_size or max_size < 1:
            raise InvalidInputError("pool sizes must be integers with 0 <= min_size <= max_size and max_size >= 1")
        self.url = url
        self.schema = schema
        self.timeout_s = float(timeout_s)
        self.min_size, self.max_size, self.pooled = min_size, max_size, pooled
        self._kwargs: dict[str, Any] = {"row_factory": dict_row, "autocommit": True, "prepare_threshold": None}
        self._loops: dict[asyncio.AbstractEventLoop, _Bound] = {}
        self._lock = threading.Lock()  # guards _loops: loops of several threads may share one backend
        self._last_used: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
        self.version = 0

    def _make(self) -> Any:
        if not self.pooled:
            return _Direct(self.url, self.max_size, self.timeout_s, self._kwargs)
        from psycopg_pool import AsyncConnectionPool

        pool_log = logging.getLogger("psycopg.pool")
        if _quiet not in pool_log.filters:
            pool_log.addFilter(_quiet)
        return AsyncConnectionPool(
            self.url,
            name=f"{POOL_PREFIX}{next(_names)}",
            min_size=self.min_size,
            max_size=self.max_size,
            open=False,
            timeout=self.timeout_s,
            check=self._check,
            reset=self._returned,
            kwargs=self._kwargs,
        )

    async def _returned(self, conn: Any) -> None:
        self._last_used[conn] = time.monotonic()

    async def _check(self, conn: Any) -> None:
        """At checkout: ping a connection that sat idle, so one the server dropped (restart, failover, idle
        timeout) is replaced instead of failing the caller's statement; a hot one costs no round trip."""
        last = self._last_used.get(conn)
        if last is None or time.monotonic() - last > IDLE_CHECK_S:
            from psycopg_pool import AsyncConnectionPool

            await AsyncConnectionPool.check_connection(conn)

    @property
    def loops(self) -> int:
        """How many event loops hold open connections of this pool (0 after every owner closed)."""
        with self._lock:
            self._drop_dead()
            return sum(b.opened for b in self._loops.values())

    def _drop_dead(self) -> None:
        """Forget the connections of loops that were closed without closing them (under ``_lock``)."""
        for loop in [lp for lp in self._loops if lp.is_closed()]:
            _abandon(self._loops.pop(loop).inner)

    async def _bound(self) -> _Bound:
        loop = asyncio.get_running_loop()
        with self._lock:
            self._drop_dead()
            bound = self._loops.get(loop)
            if bound is None:
                bound = self._loops[loop] = _Bound(self._make())
        if bound.opened:
            return bound
        async with bound.ready:
            if bound.opened:
                return bound
            try:
                await bound.inner.open(wait=False)
                if self.version < LATEST:  # a pool checks over one direct connection: fails fast with the server down
                    first = (
                        bound.inner.connection()
                        if not self.pooled
                        else await psycopg.AsyncConnection.connect(self.url, connect_timeout=max(1, int(self.timeout_s)), **self._kwargs)
                    )
                    async with first as conn:
                        self.version = await self._current(conn) or await migrate(conn, self.schema)
            except _errors(psycopg.Error) as exc:
                with contextlib.suppress(Exception):
                    await bound.inner.close()
                bound.inner = self._make()  # a closed pool cannot be reopened: the next call starts afresh
                raise BackendError(f"PostgreSQL at {redact_url(self.url)} is not usable: {exc}") from None
            bound.guard = loop.create_task(self._guard(loop, bound), name="agent-memory-postgres-pool-guard")
            bound.opened = True
        return bound

    async def _guard(self, loop: asyncio.AbstractEventLoop, bound: _Bound) -> None:
        """Wait for the end of ``loop`` (or :meth:`close`), then close its connections on it."""
        try:
            await asyncio.Event().wait()
        finally:
            with self._lock:
                if self._loops.get(loop) is bound:
                    del self._loops[loop]
            bound.opened = False
            with contextlib.suppress(Exception):
                await bound.inner.close()

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
        """A connection of the running loop (autocommit; use ``conn.transaction()`` for atomic work)."""
        bound = await self._bound()
        try:
            async with bound.inner.connection() as conn:
                yield conn
        except psycopg.errors.QueryCanceled as exc:
            raise BackendError(f"PostgreSQL statement timed out: {exc}") from None
        except _errors(psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise BackendError(f"PostgreSQL at {redact_url(self.url)} failed: {exc}") from None

    async def close(self) -> None:
        """Close the running loop's connections (and forget those of closed loops); the pool opens again on use."""
        loop = asyncio.get_running_loop()
        with self._lock:
            self._drop_dead()
            bound = self._loops.get(loop)
        if bound is None:
            return
        async with bound.ready:  # not while that loop's open is half way
            guard = bound.guard
            if guard is None:
                with self._lock:
                    if self._loops.get(loop) is bound:
                        del self._loops[loop]
                return
            guard.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await guard


def _abandon(inner: Any) -> None:
    """Close, without an event loop, the sockets of connections whose loop is gone (best effort)."""
    conns = list(getattr(inner, "_open", ())) + list(getattr(inner, "_pool", ()))
    for conn in conns:
        with contextlib.suppress(Exception):
            conn.pgconn.finish()


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
                conn = await psycopg.AsyncConnection.connect(self.url, connect_timeout=max(1, int(self.timeout_s)), **self.kwargs)
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
