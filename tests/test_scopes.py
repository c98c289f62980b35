"""The one visibility rule (agent_memory/model/scopes.py): its Python, SQLite and PostgreSQL forms agree.

Random owners and callers (ids drawn from a tiny alphabet, so they often collide, and None) are checked against
all three forms; a grep test keeps the rule in one module (no backend or feature spells it out again).
"""

from __future__ import annotations

import itertools
import re
import sqlite3
from pathlib import Path

import pytest
from _pg import pg_url, require_psycopg  # noqa: F401  (pytest fixture)

from agent_memory.model import scopes

SCOPES = ["session", "user", "project", "global", "bogus"]
IDS = [None, "a", "b"]
PACKAGE = Path(__file__).resolve().parents[1] / "agent_memory"


def _owners() -> list[tuple[str, str | None, str | None]]:
    return list(itertools.product(SCOPES, IDS, IDS))


def _callers() -> list[tuple[str | None, str | None]]:
    return list(itertools.product(IDS, IDS))


def _expected(scope: str, osid: str | None, ouid: str | None, sid: str | None, uid: str | None) -> bool:
    """The table of the README, written out case by case (independent of the module under test)."""
    if scope in ("project", "global"):
        return True
    if scope == "user":
        return ouid is not None and ouid == uid
    if scope == "session":
        return osid is not None and osid == sid and (ouid is None or ouid == uid)
    return False


def test_python_predicate_matches_the_table() -> None:
    for (scope, osid, ouid), (sid, uid) in itertools.product(_owners(), _callers()):
        got = scopes.may_see(scope, osid, ouid, session_id=sid, user_id=uid)
        assert got == _expected(scope, osid, ouid, sid, uid), (scope, osid, ouid, sid, uid)


def test_sqlite_sql_matches_the_predicate() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE r (id INTEGER PRIMARY KEY, scope TEXT, session_id TEXT, user_id TEXT)")
    owners = _owners()
    conn.executemany("INSERT INTO r VALUES (?, ?, ?, ?)", [(i, *o) for i, o in enumerate(owners)])
    for sid, uid in _callers():
        rows = {row[0] for row in conn.execute(f"SELECT id FROM r WHERE {scopes.sqlite_sql('r')}", scopes.sqlite_params(sid, uid))}
        want = {i for i, (scope, osid, ouid) in enumerate(owners) if scopes.may_see(scope, osid, ouid, session_id=sid, user_id=uid)}
        assert rows == want, (sid, uid)


def test_postgres_sql_matches_the_predicate(pg_url: str) -> None:  # noqa: F811
    require_psycopg()
    import psycopg

    owners = _owners()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TEMP TABLE r (id int, scope text, session_id text, user_id text, tenant text)")
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO r VALUES (%s, %s, %s, %s, %s)",
                [
                    (i, scope, osid, ouid, "" if scope in scopes.SHARED_SCOPES else (ouid or ""))
                    for i, (scope, osid, ouid) in enumerate(owners)
                ],
            )
        for sid, uid in _callers():
            for tenants in (True, False):
                params = scopes.postgres_params({"sid": sid, "uid": uid})
                rows = {row[0] for row in conn.execute(f"SELECT id FROM r WHERE {scopes.postgres_sql('r', tenants=tenants)}", params)}
                want = {i for i, (scope, osid, ouid) in enumerate(owners) if scopes.may_see(scope, osid, ouid, session_id=sid, user_id=uid)}
                assert rows == want, (sid, uid, tenants)


#: The rule's fingerprints: the session case in SQL, or the shared scopes listed as a literal.
RULE = re.compile(r"scope\s*=\s*'session'\s+AND|IN\s*\(\s*'project',\s*'global'\s*\)|in\s*\(\s*[\"']project[\"'],\s*[\"']global[\"']\s*\)")
#: The PostgreSQL schema's tenant CHECK constraint is storage layout (migration DDL), not a read rule.
EXEMPT = {"backends/postgres/schema.py"}


def test_the_rule_is_written_in_one_module() -> None:
    """No other module spells out the session/user/shared cases of visibility (they call model/scopes.py)."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "model/scopes.py" or rel in EXEMPT:
            continue
        text = path.read_text(encoding="utf-8")
        if RULE.search(text):
            offenders.append(rel)
    assert not offenders, f"visibility written out again in: {offenders} (use agent_memory.model.scopes)"


@pytest.mark.parametrize("alias", ["r", "e", ""])
def test_aliases_compile(alias: str) -> None:
    sql = scopes.sqlite_sql(alias)
    assert (f"{alias}.scope" in sql) == bool(alias)
    assert ":sid" in sql and ":uid" in sql
