"""Who owns a PostgreSQL connection: the command, sync wrapper or app that opened it, on its own event loop.

Regression tests for the integrity issue (finding 5 and the PostgreSQL medium items): CLI ``recall``/``capture``/
``reflect`` exited 1 with "Event loop is closed" (capture after storing its fact), ``export`` hung for ever (CLI
and :func:`agent_memory.portable.export_records`), a failed first connection left the backend broken ("pool
cannot be reused"), and PostgreSQL scores were raw ``ts_rank`` values instead of 1 for the best hit.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _pg import fresh_schema, pg_url, require_psycopg  # noqa: F401  (pytest fixture)

require_psycopg()

from agent_memory import MemoryProvider  # noqa: E402
from agent_memory.backends import open_backend  # noqa: E402
from agent_memory.backends.base import Caller  # noqa: E402
from agent_memory.backends.postgres import PostgresBackend  # noqa: E402
from agent_memory.errors import BackendError  # noqa: E402
from agent_memory.model.drafts import MemoryDraft  # noqa: E402
from agent_memory.portable import export_records  # noqa: E402


def cli(url: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEMORY_")}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    return subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", url, *args], capture_output=True, text=True, timeout=timeout, env=env
    )


@pytest.fixture
def fresh_db(pg_url: str) -> Iterator[str]:  # noqa: F811
    """A fresh database on the session's server (the CLI always uses the default schema ``agent_memory``)."""
    import psycopg

    name = f"lt_{fresh_schema()}"
    admin = pg_url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield pg_url.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def test_cli_workers_on_postgres_exit_zero_and_capture_reports_once(fresh_db: str) -> None:
    made = cli(fresh_db, "capture", "--input", "Remember that staging is eu-west-1", "--output", "Noted.", "--json")
    assert made.returncode == 0, made.stderr
    assert "Event loop is closed" not in made.stderr and "error" not in made.stderr
    doc = json.loads(made.stdout)  # exactly one JSON document: one success, no error after it
    assert not doc["fallback"] and [w["status"] for w in doc["written"]] == ["created"]
    listed = json.loads(cli(fresh_db, "list", "--json").stdout)
    assert listed["total"] == 1 and "eu-west-1" in listed["records"][0]["content"]
    recalled = cli(fresh_db, "recall", "where is staging?", "--json")
    assert recalled.returncode == 0, recalled.stderr
    assert "eu-west-1" in json.loads(recalled.stdout)["summary"]
    reflected = cli(fresh_db, "reflect", "where is staging?", "--json")
    assert reflected.returncode == 0, reflected.stderr
    assert "eu-west-1" in json.loads(reflected.stdout)["answer"]


def test_cli_export_from_postgres_finishes(fresh_db: str, tmp_path: Path) -> None:
    assert cli(fresh_db, "remember", "Deploys happen on Fridays").returncode == 0
    out = cli(fresh_db, "export", timeout=60)  # hung for ever (the pool's workers outlived asyncio.run)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 2 and "Deploys happen on Fridays" in lines[1]
    to_file = cli(fresh_db, "export", "--out", str(tmp_path / "m.jsonl"), "--json")
    assert to_file.returncode == 0 and json.loads(to_file.stdout)["exported"] == 1


def _in_thread(fn: Any, timeout: float = 60) -> Any:
    """``fn()`` in a daemon thread: a hang fails the test instead of hanging the run."""
    box: dict[str, Any] = {}

    def main() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            box["error"] = exc

    t = threading.Thread(target=main, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), f"hung for {timeout} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


def test_export_records_from_a_pooled_backend_returns(pg_url: str) -> None:  # noqa: F811
    schema = fresh_schema()

    async def write() -> None:
        async with MemoryProvider(pg_url, schema=schema) as provider:
            await provider.remember("The release codename is Bluebird")

    asyncio.run(write())
    backend = open_backend(pg_url, schema=schema)  # pooled: the pool library's background workers
    buf = io.StringIO()
    assert _in_thread(lambda: export_records(backend, buf)) == 1
    assert "Bluebird" in buf.getvalue()
    assert backend.pool.loops == 0  # type: ignore[attr-defined]  # closed when export_records' loop ended
    asyncio.run(backend.close())


def test_sync_use_across_loops_and_provider_close(pg_url: str) -> None:  # noqa: F811
    schema = fresh_schema()
    backend = PostgresBackend(pg_url, schema=schema)

    def sync_app() -> None:  # a sync caller: every asyncio.run is a new loop (was: a hang at the first one's end)
        for i in range(3):
            asyncio.run(backend.remember(MemoryDraft(f"fact number {i}")))
        assert asyncio.run(backend.count(Caller())) == 3
        asyncio.run(backend.close())
        assert asyncio.run(backend.count(Caller())) == 3  # a closed backend opens again on use
        asyncio.run(backend.close())

    _in_thread(sync_app)
    assert backend.pool.loops == 0

    provider = MemoryProvider(pg_url, schema=schema)
    got = _in_thread(lambda: asyncio.run(provider.search("fact number")))
    assert len(got.hits) == 3
    provider.close()  # from sync code, after the loop that used it is gone: never "Event loop is closed"
    assert provider.backend.pool.loops == 0  # type: ignore[attr-defined]


def test_a_loop_closed_by_hand_is_dropped_on_next_use(pg_url: str) -> None:  # noqa: F811
    backend = PostgresBackend(pg_url, schema=fresh_schema(), pooled=False)
    loop = asyncio.new_event_loop()
    loop.run_until_complete(backend.remember(MemoryDraft("kept across loops")))
    loop.close()  # no task cancelled: the guard never ran
    assert asyncio.run(backend.count(Caller())) == 1
    asyncio.run(backend.close())
    assert backend.pool.loops == 0


async def test_an_async_app_and_a_sync_helper_thread_each_own_their_connections(pg_url: str) -> None:  # noqa: F811
    backend = PostgresBackend(pg_url, schema=fresh_schema())
    try:
        await backend.remember(MemoryDraft("shared between loops"))
        # a sync wrapper run from inside the app (its own loop in a helper thread, while the app's loop lives)
        n = await asyncio.to_thread(lambda: asyncio.run(backend.count(Caller())))
        assert n == 1
        assert backend.pool.loops == 1  # the helper's loop ended and closed its own; the app's stays open
        assert await backend.count(Caller()) == 1
    finally:
        await backend.close()
    assert backend.pool.loops == 0


class Gate:
    """A TCP forwarder on a fixed 127.0.0.1 port to the test server: ``down`` refuses, ``up`` forwards."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        with contextlib.closing(socket.socket()) as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []

    def up(self) -> None:
        lst = socket.socket()
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lst.bind(("127.0.0.1", self.port))
        lst.listen(16)
        self._listener = lst
        threading.Thread(target=self._accept, args=(lst,), daemon=True).start()

    def down(self) -> None:
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        for c in self._conns:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
            c.close()
        self._conns.clear()

    def _accept(self, lst: socket.socket) -> None:
        while True:
            try:
                client, _ = lst.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            self._conns += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := a.recv(65536):
                b.sendall(data)
        with contextlib.suppress(OSError):
            b.shutdown(socket.SHUT_WR)


@pytest.mark.parametrize("pooled", [True, False])
async def test_the_backend_recovers_when_the_server_comes_back(pg_url: str, pooled: bool) -> None:  # noqa: F811
    port = int(pg_url.rsplit(":", 1)[1].split("/", 1)[0])
    gate = Gate(port)
    url = pg_url.replace(f":{port}/", f":{gate.port}/")
    backend = PostgresBackend(url, schema=fresh_schema(), pooled=pooled, timeout_s=3)
    try:
        with pytest.raises(BackendError, match="not usable"):  # a first connection to a server that is down
            await backend.count(Caller())
        gate.up()
        assert await backend.count(Caller()) == 0  # was: "the pool 'pool-1' cannot be reused" until restart
        await backend.remember(MemoryDraft("survives a server restart"))
        gate.down()  # the server goes away with connections open
        with pytest.raises(BackendError):
            await backend.count(Caller())
        gate.up()
        for _ in range(3):  # a dropped connection may surface once more; then it is replaced
            with contextlib.suppress(BackendError):
                assert await backend.count(Caller()) == 1
                break
        else:
            pytest.fail("the backend did not recover")
    finally:
        await backend.close()
        gate.down()


async def test_scores_read_one_for_the_best_hit_on_both_backends(pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    from agent_memory.backends.postgres.oneshot import search_once

    texts = ["The staging cluster runs in eu-west-1", "Staging deploys need a green build and staging approval"]
    pg = MemoryProvider(pg_url, schema=(schema := fresh_schema()))
    files = MemoryProvider(str(tmp_path / "root"))
    try:
        for provider in (pg, files):
            await provider.remember(texts[0])
            one = await provider.search("cluster")
            assert [h.score for h in one.hits] == [1.0], provider.backend  # a single hit: 1, not a raw ts_rank
            await provider.remember(texts[1])
            two = await provider.search("staging approval")
            scores = [h.score for h in two.hits]
            assert len(scores) == 2 and scores[0] == 1.0 and 0 < scores[1] < 1, scores
        once = search_once(pg_url, "cluster", schema=schema)
        assert once is not None and [h.score for h in once.hits] == [1.0]  # the CLI's one-shot path agrees
    finally:
        await pg.aclose()
        await files.aclose()


def test_session_logs_open_again_after_close(pg_url: str) -> None:  # noqa: F811
    backend = PostgresBackend(pg_url, schema=fresh_schema())
    backend.sessions.append("s1", [{"role": "user", "content": "hello"}])
    backend.time_layers.close()
    # was: "pool has already been opened/closed and cannot be reused" for the rest of the process
    backend.sessions.append("s1", [{"role": "user", "content": "again"}])
    assert len(backend.sessions.sessions(session_id="s1")) == 1
    asyncio.run(backend.close())


def test_a_sync_wrapper_ending_its_loop_logs_no_error_for_a_cancelled_background_connect(
    pg_url: str,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each sync call is its own ``asyncio.run``: the guard closes that loop's pool, sometimes while the pool is
    still filling in the background. That cancellation is not a failure, and was logged as one (an empty
    "error connecting in 'pool-2': " warning in the user's app)."""
    from agent_memory.integrations.anthropic import MemoryToolHandler

    provider = MemoryProvider(pg_url, schema=fresh_schema())
    handler = MemoryToolHandler(provider, user_id="alice")
    caplog.set_level(logging.WARNING, logger="psycopg.pool")
    assert handler.handle({"command": "create", "path": "/memories/a.md", "file_text": "hello"}).startswith("File created")
    for _ in range(12):
        assert "hello" in handler.handle({"command": "view", "path": "/memories/a.md"})
    assert not [r.getMessage() for r in caplog.records if "error connecting" in r.getMessage()]


def test_the_pool_log_filter_drops_only_our_pools_cancelled_connects() -> None:
    from agent_memory.backends.postgres.pool import POOL_PREFIX, _quiet

    def record(name: str, error: BaseException) -> logging.LogRecord:
        return logging.LogRecord("psycopg.pool", logging.WARNING, __file__, 1, "error connecting in %r: %s", (name, error), None)

    assert not _quiet.filter(record(f"{POOL_PREFIX}3", asyncio.CancelledError()))
    assert _quiet.filter(record(f"{POOL_PREFIX}3", OSError("connection refused")))  # a real failure stays visible
    assert _quiet.filter(record("pool-1", asyncio.CancelledError()))  # another library's pool is not ours to quiet


def test_cli_reindex_on_postgres_counts_the_records_it_rebuilt(fresh_db: str) -> None:
    """`reindex` rebuilds every row's text index on PostgreSQL, and said "reindexed 0 records" (doctor counted 2)."""
    for text in ("Deploys happen on Fridays", "Rollbacks need approval"):
        assert cli(fresh_db, "remember", text).returncode == 0
    done = cli(fresh_db, "reindex", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["records"] == 2
    assert "reindexed 2 records" in cli(fresh_db, "reindex").stdout
