"""A throwaway PostgreSQL 15 server for the tests (one per test process, started on first use).

``initdb`` refuses root, so as root the cluster is created and run as the ``postgres`` user in a temp
directory it owns. The server listens on a unix socket directory and a free 127.0.0.1 port, with fsync off
(the tests check transactions, not disks), and is stopped at exit and by the fixture finaliser.
When no server can start the tests skip with the reason, or fail when ``AGENT_MEMORY_REQUIRE_PG=1``.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PG_BIN = Path(os.environ.get("AGENT_MEMORY_PG_BIN", "/usr/lib/postgresql/15/bin"))
DATABASE = "agent_memory_test"
_counter = itertools.count()


class PgServer:
    """One cluster in a temp directory; ``url`` points at its test database over 127.0.0.1."""

    def __init__(self, *, durable: bool = False) -> None:
        self.durable = durable
        self.tmp = Path(tempfile.mkdtemp(prefix="agent-memory-pg-"))
        self.data = self.tmp / "data"
        self.sock = self.tmp / "sock"
        self.log = self.tmp / "server.log"
        self.port = _free_port()
        self.running = False
        self.as_root = os.geteuid() == 0
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/{DATABASE}"

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = list(args)
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)

    def start(self) -> None:
        if not (PG_BIN / "initdb").exists():
            raise RuntimeError(f"no PostgreSQL binaries in {PG_BIN} (apt-get install postgresql-15)")
        self.sock.mkdir()
        if self.as_root:
            shutil.chown(self.tmp, "postgres", "postgres")
            shutil.chown(self.sock, "postgres", "postgres")
        out = self._run(
            str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"
        )
        if out.returncode:
            raise RuntimeError(f"initdb failed: {out.stderr.strip() or out.stdout.strip()}")
        opts = f"-p {self.port} -k {self.sock} -c listen_addresses=127.0.0.1 -c max_connections=200 -c shared_buffers=128MB"
        if not self.durable:  # tests check transactions, not disks
            opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        out = self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", opts, "-w", "-t", "60", "start")
        if out.returncode:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {out.stderr.strip()} {log}")
        self.running = True
        import psycopg

        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.port}/postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{DATABASE}"')

    def stop(self) -> None:
        if self.running:
            self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
            self.running = False
        shutil.rmtree(self.tmp, ignore_errors=True)


def _free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_server: PgServer | None = None
_failure: str | None = None


def server() -> PgServer:
    """The process's server, started on first call; skips (or fails under AGENT_MEMORY_REQUIRE_PG=1) if impossible."""
    global _server, _failure
    if _server is None and _failure is None:
        candidate = PgServer()
        try:
            import psycopg  # noqa: F401

            candidate.start()
            _server = candidate
            atexit.register(candidate.stop)
        except Exception as exc:  # any reason at all: report it loudly below
            candidate.stop()
            _failure = f"{type(exc).__name__}: {exc}"
    if _server is None:
        message = f"NO POSTGRESQL SERVER: the PostgreSQL tests did not run ({_failure})"
        if os.environ.get("AGENT_MEMORY_REQUIRE_PG") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return _server


def require_psycopg() -> None:
    """At the top of a PostgreSQL-only test module: skip it (or fail under AGENT_MEMORY_REQUIRE_PG=1) without psycopg."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        message = f"NO POSTGRESQL SERVER: psycopg is not installed ({exc}); pip install -e '.[postgres]'"
        if os.environ.get("AGENT_MEMORY_REQUIRE_PG") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message, allow_module_level=True)


def stop_server() -> None:
    global _server
    if _server is not None:
        _server.stop()
        _server = None


def fresh_schema() -> str:
    """A new schema name: one per test keeps tests apart on the shared database."""
    return f"t{os.getpid()}_{next(_counter)}"


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """URL of the session's test database (a real server on 127.0.0.1)."""
    srv = server()
    yield srv.url
    stop_server()


@pytest.fixture
def pg_schema() -> str:
    return fresh_schema()


@pytest.fixture
def fresh_db(pg_url: str) -> Iterator[str]:
    """The URL of a database of its own, dropped after the test: the CLI always uses the default schema, and a
    test that embeds there would turn every later plain CLI search of the session hybrid."""
    import psycopg

    name = f"db_{fresh_schema()}"
    admin = pg_url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield pg_url.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


class Target:
    """One fresh store of one backend kind, opened through the public façade: ``MemoryProvider(target, **options)``.

    ``kind`` is ``files`` (a root directory) or ``postgres`` (the server's URL and a fresh schema). Every
    :meth:`provider` call opens the *same* store anew (as another app server would); the fixture closes them all.
    """

    def __init__(self, kind: str, target: str, options: dict[str, object]) -> None:
        self.kind = kind
        self.target = target
        self.options = options
        self.providers: list[object] = []

    def __repr__(self) -> str:
        return f"Target({self.kind})"

    def provider(self, **kwargs: object):  # type: ignore[no-untyped-def]
        from agent_memory.provider import MemoryProvider

        made = MemoryProvider(self.target, **{**self.options, **kwargs})  # type: ignore[arg-type]
        kind = type(made.backend).__name__
        assert kind == {"files": "FilesBackend", "postgres": "PostgresBackend"}[self.kind], kind  # routed by the target
        self.providers.append(made)
        return made

    def backend(self):  # type: ignore[no-untyped-def]
        """A bare backend on the same store (closed by the caller)."""
        from agent_memory.backends import open_backend

        return open_backend(self.target, **self.options)  # type: ignore[arg-type]

    async def close(self) -> None:
        for made in self.providers:
            await made.aclose()  # type: ignore[attr-defined]
        self.providers.clear()


def make_target(kind: str, tmp_path: Path) -> Target:
    """A fresh ``files`` root under ``tmp_path`` or a fresh ``postgres`` schema on the session's server."""
    if kind == "postgres":
        require_psycopg()
        return Target(kind, server().url, {"schema": fresh_schema(), "durable": False})
    root = tmp_path / f"store-{next(_counter)}"
    return Target(kind, str(root), {"durable": False})


def bare_backend(kind: str, tmp_path: Path) -> Any:
    """A bare backend of ``kind`` on a fresh store (:func:`make_target`); the caller closes it (:func:`run_closing`)."""
    return make_target(kind, tmp_path).backend()


def run_closing(backend: Any, coro: Any) -> Any:
    """Run ``coro`` to its end, then close ``backend`` (whatever happened)."""

    async def go() -> Any:
        try:
            return await coro
        finally:
            await backend.close()

    return asyncio.run(go())
