"""``agent-memory --root postgresql://… init`` connects and makes the tables: a URL that cannot be used fails there
(typed error, exit 1, the password masked) instead of "tables are created on first use" and exit 0."""

from __future__ import annotations

import json

import pytest
from _pg import fresh_db, pg_url, require_psycopg  # noqa: F401  (pytest fixtures)

from agent_memory.cli import main

SECRET = "hunter2-not-shown"


def _init(url: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["--root", url, "--json", "init"])
    out, err = capsys.readouterr()
    return code, out, err


def test_init_of_a_refused_server_fails_with_the_password_masked(capsys: pytest.CaptureFixture[str]) -> None:
    require_psycopg()
    code, out, err = _init(f"postgresql://postgres:{SECRET}@127.0.0.1:1/x", capsys)
    assert code == 1, (out, err)
    error = json.loads(out)["error"]
    assert error["type"] == "BackendError" and "127.0.0.1" in error["message"], error
    assert SECRET not in out + err and "postgres:***@" in error["message"]


def test_init_of_a_missing_database_says_so(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    base = pg_url.rsplit("/", 1)[0]
    code, out, err = _init(f"{base}/no_such_database_fixn", capsys)
    assert code == 1 and "no_such_database_fixn" in json.loads(out)["error"]["message"], (out, err)


def test_init_of_a_usable_database_makes_its_tables(fresh_db: str, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    import psycopg

    code, out, err = _init(fresh_db, capsys)
    assert code == 0, err
    assert json.loads(out) == {"root": fresh_db, "created": False}
    with psycopg.connect(fresh_db) as conn:
        tables = {r[0] for r in conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'agent_memory'")}
    assert "records" in tables, tables
