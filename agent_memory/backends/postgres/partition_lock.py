"""One partition's lock on PostgreSQL, held across several calls of one logical write (a capped write).

The same contract as the files backend's (:mod:`agent_memory.backends.files.partition_lock`): counting a partition's
curated lines and writing a new one are two calls, made atomic by a session-level advisory lock on
``hashtextextended(schema + key)``. The lock is polled with ``pg_try_advisory_lock`` and a waiter gives its
connection back between attempts, so waiters never starve the holder of pool connections; the holder keeps one
connection until it unlocks (a dead session releases it).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from agent_memory.errors import LockTimeoutError

__all__ = ["partition_lock"]


@contextlib.asynccontextmanager
async def partition_lock(b: Any, key: str) -> AsyncIterator[None]:
    """Hold the advisory lock of ``key`` in ``b``'s schema until the block ends (:class:`LockTimeoutError` after the
    pool's timeout)."""
    name = f"{b.schema}:{key}"
    deadline, delay = time.monotonic() + b.pool.timeout_s, 0.002
    while True:
        stack = contextlib.AsyncExitStack()
        conn = await stack.enter_async_context(b.pool.connection())
        try:
            cur = await conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0)) AS ok", (name,))
            held = bool((await cur.fetchone())["ok"])
        except BaseException:
            await stack.aclose()
            raise
        if held:
            break
        await stack.aclose()  # the connection goes back while this writer waits
        if time.monotonic() > deadline:
            raise LockTimeoutError(f"could not take the partition lock {key!r} within {b.pool.timeout_s:g}s")
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)
    try:
        yield
    finally:
        try:
            await conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (name,))
        finally:
            await stack.aclose()
