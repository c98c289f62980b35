"""A command on a PostgreSQL root owns its connections: one event loop per command, closed on it, one-shot.

``consolidate`` and ``reflect`` ran the work in one ``asyncio.run`` and closed the provider in a second (a new
loop opening nothing but closing what the first left); ``export`` opened a pooled backend (the pool library's
background workers, for a one-shot process) and never closed it. The commands run in-process here so the
loops and the backend can be watched.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _pg import fresh_schema, pg_url, require_psycopg  # noqa: F401  (pytest fixture)

require_psycopg()

from agent_memory.backends.postgres import PostgresBackend  # noqa: E402
from agent_memory.backends.postgres.pool import Pool  # noqa: E402
from agent_memory.cli import main  # noqa: E402


@pytest.fixture
def fresh_db(pg_url: str) -> Iterator[str]:  # noqa: F811
    """A fresh database (the CLI always uses the default schema)."""
    import psycopg

    name = f"cl_{fresh_schema()}"
    admin = pg_url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield pg_url.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Every ``asyncio.run``, every pool made (with ``pooled``) and every backend close, with the loop it ran on."""
    seen: dict[str, list[Any]] = {"runs": [], "pools": [], "closes": []}
    real_run, real_init, real_close = asyncio.run, Pool.__init__, PostgresBackend.close

    def run(main: Any, **kw: Any) -> Any:
        seen["runs"].append(main)
        return real_run(main, **kw)

    def init(self: Pool, *args: Any, **kw: Any) -> None:
        real_init(self, *args, **kw)
        seen["pools"].append(self)

    async def close(self: PostgresBackend) -> None:
        seen["closes"].append(self)
        await real_close(self)

    monkeypatch.setattr(asyncio, "run", run)
    monkeypatch.setattr(Pool, "__init__", init)
    monkeypatch.setattr(PostgresBackend, "close", close)
    return seen


@pytest.mark.parametrize(
    ("command", "ok"),
    [
        (["consolidate", "--dry-run"], False),  # not offered on PostgreSQL: a typed error, and still one loop closed
        (["reflect", "where do deploys happen?"], True),
    ],
)
def test_consolidate_and_reflect_run_and_close_on_one_loop(
    fresh_db: str, watched: dict[str, list[Any]], capsys: pytest.CaptureFixture[str], command: list[str], ok: bool
) -> None:
    assert main(["--root", fresh_db, "remember", "Deploys happen on Fridays"]) == 0
    capsys.readouterr()
    for seen in watched.values():  # only the command under test (`remember` leaves its own target open)
        seen.clear()
    assert (main(["--root", fresh_db, "--json", *command]) == 0) is ok
    assert ("error" in json.loads(capsys.readouterr().out)) is not ok
    assert len(watched["runs"]) == 1  # the work and the close: one loop (was two)
    assert watched["closes"] and all(p.loops == 0 for p in watched["pools"])  # every loop's connections closed


def test_export_opens_one_shot_and_closes(
    fresh_db: str, watched: dict[str, list[Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--root", fresh_db, "remember", "Deploys happen on Fridays"]) == 0
    for seen in watched.values():
        seen.clear()
    out = tmp_path / "m.jsonl"
    assert main(["--root", fresh_db, "export", "--out", str(out)]) == 0
    assert "Deploys happen on Fridays" in out.read_text(encoding="utf-8")
    assert [p.pooled for p in watched["pools"]] == [False]  # a one-shot command: no pool library, no workers
    assert len(watched["closes"]) == 1 and watched["pools"][0].loops == 0
