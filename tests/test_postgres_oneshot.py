"""The pool-less connections of a one-shot process (``PostgresBackend(pooled=False)``, used by the command line)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _pg import fresh_schema, pg_url, require_psycopg  # noqa: F401  (pytest fixture)

require_psycopg()

from agent_memory.backends.base import Caller  # noqa: E402
from agent_memory.backends.postgres import PostgresBackend  # noqa: E402
from agent_memory.errors import BackendError  # noqa: E402
from agent_memory.model.drafts import MemoryDraft  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


async def test_at_most_max_size_connections_reused_and_closed(pg_url: str) -> None:  # noqa: F811
    b = PostgresBackend(pg_url, schema=fresh_schema(), pooled=False, max_size=2)
    pids: list[int] = []
    busy = 0
    most = 0

    async def work() -> None:
        nonlocal busy, most
        async with b.pool.connection() as conn:
            busy += 1
            most = max(most, busy)
            cur = await conn.execute("SELECT pg_backend_pid() AS p, pg_sleep(0.05)")
            pids.append((await cur.fetchone())["p"])
            busy -= 1

    try:
        await asyncio.gather(*(work() for _ in range(8)))
        assert most == 2 and len(set(pids)) == 2 and len(pids) == 8
        res = await b.remember_many([MemoryDraft(f"one-shot fact {i}") for i in range(100)])
        assert {r.status for r in res} == {"created"}
        assert len((await b.search("one-shot fact", Caller(), limit=5)).hits) == 5
        opened = [c for bound in b.pool._loops.values() for c in bound.inner._open]
    finally:
        await b.close()
    assert opened and all(conn.closed for conn in opened)


async def test_a_connection_left_mid_transaction_is_not_reused(pg_url: str) -> None:  # noqa: F811
    b = PostgresBackend(pg_url, schema=fresh_schema(), pooled=False, max_size=1)
    try:
        async with b.pool.connection() as conn:
            first = (await (await conn.execute("SELECT pg_backend_pid() AS p")).fetchone())["p"]
            await conn.execute("BEGIN")  # a caller that never ended its transaction
        async with b.pool.connection() as conn:
            second = (await (await conn.execute("SELECT pg_backend_pid() AS p")).fetchone())["p"]
            assert conn.info.transaction_status.name == "IDLE"
        assert first != second
    finally:
        await b.close()


async def test_waiting_for_a_busy_connection_times_out_with_a_backend_error(pg_url: str) -> None:  # noqa: F811
    b = PostgresBackend(pg_url, schema=fresh_schema(), pooled=False, max_size=1, timeout_s=0.3)
    try:
        async with b.pool.connection():
            with pytest.raises(BackendError, match="no PostgreSQL connection free"):
                async with b.pool.connection():
                    pass  # pragma: no cover
    finally:
        await b.close()


async def test_cli_search_loads_no_pool_library_and_leaves_no_warning(pg_url: str) -> None:  # noqa: F811
    b = PostgresBackend(pg_url)  # the command line's default schema
    try:
        await b.remember(MemoryDraft("the one-shot ferry leaves at nine"))
    finally:
        await b.close()
    script = textwrap.dedent(f"""
        import sys
        from agent_memory.cli._app import main
        code = main(["--root", {pg_url!r}, "search", "one-shot ferry", "--json"])
        heavy = sorted(m for m in ("numpy", "agent_memory.backends.files.store", "agent_memory.embeddings") if m in sys.modules)
        print("HEAVY", ",".join(heavy) or "-")
        print("POOL-LOADED" if "psycopg_pool" in sys.modules else "NO-POOL", code)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("NO-POOL 0"), out.stdout
    assert "the one-shot ferry leaves at nine" in out.stdout
    assert "Task was destroyed" not in out.stderr
    assert "HEAVY -" in out.stdout  # a lexical search imports neither numpy nor the files store
