"""Many writers on many connections and processes (several app servers), and clients killed mid-transaction."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from _pg import fresh_schema, pg_url, require_psycopg  # noqa: F401  (pytest fixture)

require_psycopg()

from agent_memory.backends.base import Caller  # noqa: E402
from agent_memory.backends.postgres import PostgresBackend  # noqa: E402
from agent_memory.model.drafts import MemoryDraft  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ANYONE = Caller()

WRITER = textwrap.dedent("""
    import asyncio, sys
    from agent_memory.backends.postgres import PostgresBackend
    from agent_memory.model.drafts import MemoryDraft

    async def main(url, schema, n, writes, appends):
        b = PostgresBackend(url, schema=schema, max_size=4)
        async def one(i):
            await b.remember(MemoryDraft(f"writer {n} fact {i}"))
        async def app(i):
            for _ in range(2):  # every append is replayed once (a retried tool call)
                await b.remember(MemoryDraft(f"w{n} line {i}", memory_key="shared-log"))
        await asyncio.gather(*(one(i) for i in range(writes)), *(app(i) for i in range(appends)))
        await b.remember_many([MemoryDraft(f"writer {n} bulk {i}") for i in range(200)] +
                              [MemoryDraft(f"common bulk {i}") for i in range(100)])
        await b.close()

    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])))
""")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


async def test_many_processes_no_lost_doubled_or_torn_write(pg_url: str) -> None:  # noqa: F811
    """4 processes x (60 facts + 15 appends to one key, each replayed + a COPY batch overlapping the others)."""
    schema = fresh_schema()
    procs, writes, appends = 4, 60, 15
    children = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, pg_url, schema, str(n), str(writes), str(appends)], env=_env(), stderr=subprocess.PIPE, text=True
        )
        for n in range(procs)
    ]
    for child in children:
        _, err = child.communicate(timeout=180)
        assert child.returncode == 0, err
    b = PostgresBackend(pg_url, schema=schema)
    try:
        facts = await b.list(ANYONE, limit=None)
        contents = [r.content for r in facts if r.memory_key is None]
        expected = {f"writer {n} fact {i}" for n in range(procs) for i in range(writes)}
        expected |= {f"writer {n} bulk {i}" for n in range(procs) for i in range(200)}
        expected |= {f"common bulk {i}" for i in range(100)}  # written by every process: exactly once
        assert sorted(contents) == sorted(expected)
        shared = [r for r in facts if r.memory_key == "shared-log"]
        assert len(shared) == 1
        lines = shared[0].content.split("\n")
        assert sorted(lines) == sorted(f"w{n} line {i}" for n in range(procs) for i in range(appends))
        assert (await b.doctor()).ok
    finally:
        await b.close()


async def test_many_connections_one_key(pg_url: str) -> None:  # noqa: F811
    """40 concurrent appends to a key that does not exist yet, on 10 connections: one record, every line once."""
    b = PostgresBackend(pg_url, schema=fresh_schema(), max_size=10)
    try:
        results = await asyncio.gather(*(b.remember(MemoryDraft(f"entry {i}", memory_key="race")) for i in range(40)))
        assert [r.status for r in results].count("created") == 1
        assert len({r.id for r in results}) == 1
        rec = await b.get(results[0].id, ANYONE)
        assert sorted(rec.content.split("\n")) == sorted(f"entry {i}" for i in range(40))
        same = await asyncio.gather(*(b.remember(MemoryDraft("identical text")) for _ in range(20)))
        assert [r.status for r in same].count("created") == 1 and len({r.id for r in same}) == 1
    finally:
        await b.close()


KILLED = textwrap.dedent("""
    import asyncio, sys, time
    from agent_memory.backends.postgres import PostgresBackend
    from agent_memory.backends.postgres.rows import tenant_part
    from agent_memory.model.drafts import MemoryDraft, prepare_draft
    from agent_memory.model.records import Scope

    async def main(url, schema):
        b = PostgresBackend(url, schema=schema)
        await b.remember(MemoryDraft("first line", memory_key="held"))
        prepared = [prepare_draft(MemoryDraft(f"half written {i}"), "import", Scope.PROJECT) for i in range(500)]
        async with b.pool.connection() as conn, conn.transaction():
            await b.writer.copy_unkeyed(conn, prepared)
            rec, n = prepare_draft(MemoryDraft("second line", memory_key="held"), "tool", Scope.PROJECT)
            await b.writer.remember_one(conn, rec, n, "append")  # holds the row lock of 'held'
            print("inside", flush=True)
            time.sleep(60)

    asyncio.run(main(sys.argv[1], sys.argv[2]))
""")


async def test_sigkilled_client_leaves_nothing_half_written(pg_url: str) -> None:  # noqa: F811
    schema = fresh_schema()
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED, pg_url, schema], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(child.stdout.readline), 60)
        assert line.strip() == "inside", child.stderr.read() if child.stderr else ""
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    b = PostgresBackend(pg_url, schema=schema, timeout_s=10)
    try:
        started = time.monotonic()
        res = await asyncio.wait_for(b.remember(MemoryDraft("third line", memory_key="held")), 30)  # lock released
        assert time.monotonic() - started < 20
        assert res.status == "appended"
        assert (await b.get(res.id, ANYONE)).content == "first line\nthird line"  # the killed append is gone
        assert await b.count(ANYONE) == 1  # none of the 500 copied rows
    finally:
        await b.close()


BATCHES = textwrap.dedent("""
    import asyncio, sys
    from agent_memory.backends.postgres import PostgresBackend
    from agent_memory.model.drafts import MemoryDraft

    async def main(url, schema):
        b = PostgresBackend(url, schema=schema, batch_size=250)
        n = 0
        while True:
            await b.remember_many([MemoryDraft(f"batch {n} row {i}", tags=[f"b{n}"]) for i in range(250)])
            print(n, flush=True)
            n += 1

    asyncio.run(main(sys.argv[1], sys.argv[2]))
""")


@pytest.mark.parametrize("delay", [0.05, 0.3, 0.9])
async def test_sigkill_during_batches_keeps_batches_whole(pg_url: str, delay: float) -> None:  # noqa: F811
    """A client killed at a random moment of a stream of 250-row transactions: every batch is all there or absent."""
    schema = fresh_schema()
    child = subprocess.Popen(
        [sys.executable, "-c", BATCHES, pg_url, schema], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert child.stdout is not None
        first = await asyncio.wait_for(asyncio.to_thread(child.stdout.readline), 60)
        assert first.strip() == "0"
        await asyncio.sleep(delay)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
        acknowledged = 1 + sum(1 for _ in child.stdout)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    b = PostgresBackend(pg_url, schema=schema)
    try:
        total = await b.count(ANYONE)
        assert total % 250 == 0 and total >= 250 * acknowledged
        for n in range(acknowledged + 2):
            assert await b.count(ANYONE, tags=[f"b{n}"]) in (0, 250)
    finally:
        await b.close()
