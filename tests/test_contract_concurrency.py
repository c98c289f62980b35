"""Several app servers on one store, on every backend: concurrent writers, readers and capture workers.

Each ``backend.provider()`` opens the store anew (its own SQLite connection and file locks, or its own
PostgreSQL pool), as separate app servers would; one test also runs them as separate processes.
The PostgreSQL-only crash tests (clients killed mid-transaction) live in test_postgres_concurrency.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SERVERS, FACTS, LINES = 3, 15, 8


async def test_app_servers_write_and_read_at_once(backend: Any) -> None:
    """No lost, doubled or torn write while readers watch: every fact once, every appended line once, whole."""
    servers = [backend.provider() for _ in range(SERVERS)]
    expected_lines = {f"server {n} line {i}" for n in range(SERVERS) for i in range(LINES)}
    stop = asyncio.Event()
    seen: dict[int, list[int]] = {0: [], 1: []}  # per reader: how many lines the keyed record held

    async def writer(n: int, p: Any) -> None:
        for i in range(FACTS):
            await p.remember(f"server {n} fact {i} about kestrels", user_id="ada", scope="user")
            await p.remember(f"shared fact {i} about kestrels")  # every server writes it: stored once
        for i in range(LINES):
            for _ in range(2):  # every append is replayed (a retried tool call)
                await p.remember(f"server {n} line {i}", user_id="ada", scope="user", memory_key="shared-log")

    async def reader(k: int, p: Any) -> None:
        while not stop.is_set():
            log = [r for r in await p.list(user_id="ada", limit=None) if r.memory_key == "shared-log"]
            assert len(log) <= 1
            if log:
                lines = log[0].content.split("\n")
                assert set(lines) <= expected_lines and len(lines) == len(set(lines)), lines  # whole lines, never twice
                seen[k].append(len(lines))
            for hit in (await p.search("kestrels fact", user_id="ada", limit=50)).hits:
                assert "kestrels" in hit.snippet
            await asyncio.sleep(0)

    readers = [asyncio.ensure_future(reader(k, p)) for k, p in enumerate(servers[:2])]
    try:
        await asyncio.gather(*(writer(n, p) for n, p in enumerate(servers)))
    finally:
        stop.set()
        await asyncio.gather(*readers)
    check = backend.provider()
    records = await check.list(user_id="ada", limit=None)
    facts = sorted(r.content for r in records if r.memory_key is None)
    assert facts == sorted(
        [f"server {n} fact {i} about kestrels" for n in range(SERVERS) for i in range(FACTS)]
        + [f"shared fact {i} about kestrels" for i in range(FACTS)]
    )
    [log] = [r for r in records if r.memory_key == "shared-log"]
    assert sorted(log.content.split("\n")) == sorted(expected_lines)
    for states in seen.values():  # an appended line, once seen, never disappears
        assert states == sorted(states)
    assert (await check.doctor()).ok


async def test_concurrent_corrections_leave_one_record_per_key(backend: Any) -> None:
    """Capture workers of several servers correct the same keyed fact at once: one record, one of the values."""
    servers = [backend.provider() for _ in range(SERVERS)]
    editors = ["vim", "Helix", "emacs", "nano", "kakoune", "micro"]
    results = await asyncio.gather(
        *(servers[i % SERVERS].capture_turn(f"Actually, my favourite editor is {e}.", user_id="ada") for i, e in enumerate(editors))
    )
    assert all(not r.fallback for r in results), [r.reason for r in results]
    ids = {w["id"] for r in results for w in r.written}
    assert len(ids) == 1
    [record] = await servers[0].list(user_id="ada", limit=None)
    assert record.memory_key == "user.favourite-editor"
    assert record.content in {f"User's favourite editor is {e}." for e in editors}


WRITER = textwrap.dedent("""
    import asyncio, json, sys
    from agent_memory import MemoryProvider

    async def main(target, options, n):
        async with MemoryProvider(target, **json.loads(options)) as p:
            for i in range(10):
                await p.remember(f"process {n} fact {i}", user_id="ada", scope="user")
                await p.remember(f"common fact {i}")
                await p.remember(f"process {n} line {i}", user_id="ada", scope="user", memory_key="plan")

    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
""")


@pytest.mark.slow
async def test_app_server_processes_share_one_store(backend: Any) -> None:
    """3 processes: facts, a shared fact and appends to one key each; nothing lost, doubled or torn.

    (The store layer only: capture workers racing on one key are covered in process by the test above.)"""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, backend.target, json.dumps(backend.options), str(n)], env=env, stderr=subprocess.PIPE, text=True
        )
        for n in range(3)
    ]
    for child in children:
        _, err = await asyncio.to_thread(child.communicate, timeout=180)
        assert child.returncode == 0, err
    p = backend.provider()
    records = await p.list(user_id="ada", limit=None)
    unkeyed = sorted(r.content for r in records if r.memory_key is None and r.source == "tool")
    assert unkeyed == sorted([f"process {n} fact {i}" for n in range(3) for i in range(10)] + [f"common fact {i}" for i in range(10)])
    [plan] = [r for r in records if r.memory_key == "plan"]
    assert sorted(plan.content.split("\n")) == sorted(f"process {n} line {i}" for n in range(3) for i in range(10))
    assert (await p.doctor()).ok


async def test_connections_the_server_dropped_are_replaced_not_failed(tmp_path: Path) -> None:
    """PostgreSQL restarts, fails over or kills idle connections: the next calls of an app server still succeed."""
    from _pg import make_target

    from agent_memory.backends.postgres.pool import IDLE_CHECK_S

    target = make_target("postgres", tmp_path)
    try:
        p = target.provider(max_size=4)
        first = await p.remember("the pool keeps working after a drop", user_id="ada")
        await asyncio.gather(*(p.search("pool drop", user_id="ada") for _ in range(8)))  # several connections open
        import psycopg

        with psycopg.connect(target.target, autocommit=True) as admin:
            killed = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchone()
        assert killed is not None and killed[0] >= 1
        await asyncio.sleep(IDLE_CHECK_S + 0.2)
        results = await asyncio.gather(
            *(p.search("pool keeps working", user_id="ada") for _ in range(6)), p.remember("written after the drop", user_id="ada")
        )
        assert all([h.id for h in r.hits] == [first.id] for r in results[:-1])
        assert results[-1].status == "created" and await p.count(user_id="ada") == 2
    finally:
        await target.close()


async def test_a_client_cut_off_mid_transaction_leaves_nothing_half_written(tmp_path: Path) -> None:
    """The server ends a client's connection inside a batch (300 copied rows, then a keyed append waiting on a row
    lock): the caller gets a typed error, no row of the batch exists, and the next write works."""
    from _pg import make_target

    from agent_memory.errors import BackendError
    from agent_memory.model.drafts import MemoryDraft

    target = make_target("postgres", tmp_path)  # skips (or fails under AGENT_MEMORY_REQUIRE_PG=1) without a server
    import psycopg

    try:
        p = target.provider()
        held = await p.remember("first line", memory_key="held")
        schema = str(target.options["schema"])
        async with await psycopg.AsyncConnection.connect(target.target, autocommit=True) as admin:
            async with admin.transaction():
                await admin.execute(f'SELECT 1 FROM "{schema}".records WHERE id = %s FOR UPDATE', (held.id,))
                batch = [MemoryDraft(f"bulk row {i}") for i in range(300)] + [MemoryDraft("second line", memory_key="held")]
                task = asyncio.ensure_future(p.remember_many(batch))
                for _ in range(300):  # until the batch waits on the lock, inside its transaction
                    cur = await admin.execute(
                        "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                        " AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
                    )
                    waiting = [row[0] for row in await cur.fetchall()]
                    if waiting:
                        break
                    await asyncio.sleep(0.05)
                assert len(waiting) == 1
                await admin.execute("SELECT pg_terminate_backend(%s)", (waiting[0],))
                with pytest.raises(BackendError):
                    await asyncio.wait_for(task, 30)
        assert await p.count() == 1 and (await p.search("bulk row")).hits == []
        again = await p.remember("third line", memory_key="held")
        assert again.status == "appended" and (await p.get(held.id)).content == "first line\nthird line"
    finally:
        await target.close()
