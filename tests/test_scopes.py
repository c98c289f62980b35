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
#: Namespaces of owners and callers: the root, a tree two deep and a sibling, so ancestors, siblings and strangers occur.
NAMESPACES = ["", "acme", "acme/support", "acme/coding", "acme/support/agent-7", "other"]
ISOLATIONS = [None, "full", "inherited", "shared"]
#: The registry's shared marks the property test runs under (none; one sibling; a sibling and a stranger).
SHARED_MARKS = [(), ("acme/coding",), ("acme/coding", "other", "acme/support")]
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


def _ns_expected(owner_ns: str, caller_ns: str, isolation: str | None, shared: tuple[str, ...]) -> bool:
    """The namespace table of docs/namespaces.md, written out case by case."""
    if owner_ns == caller_ns:
        return True
    if isolation == "full":
        return False
    is_ancestor = owner_ns == "" or caller_ns.startswith(owner_ns + "/")
    if is_ancestor:
        return True
    if isolation == "shared" and caller_ns:
        parent = caller_ns.rsplit("/", 1)[0] if "/" in caller_ns else ""
        owner_parent = owner_ns.rsplit("/", 1)[0] if "/" in owner_ns else ""
        return owner_ns in shared and owner_parent == parent
    return False


def _ns_cases() -> list[tuple[str, str | None, tuple[str, ...]]]:
    return list(itertools.product(NAMESPACES, ISOLATIONS, SHARED_MARKS))


def test_namespace_views_match_the_table() -> None:
    for (caller_ns, isolation, shared), owner_ns in itertools.product(_ns_cases(), NAMESPACES):
        view = scopes.visible_namespaces(caller_ns, isolation, shared)
        assert (owner_ns in view) == _ns_expected(owner_ns, caller_ns, isolation, shared), (owner_ns, caller_ns, isolation, shared)


def test_python_predicate_matches_the_table() -> None:
    for (scope, osid, ouid), (sid, uid) in itertools.product(_owners(), _callers()):
        got = scopes.may_see(scope, osid, ouid, session_id=sid, user_id=uid)
        assert got == _expected(scope, osid, ouid, sid, uid), (scope, osid, ouid, sid, uid)


def test_python_predicate_composes_scope_and_namespace() -> None:
    """An object is visible only when its scope *and* its namespace agree with the caller (both backends' table)."""
    # the view depends on the namespace case only: made once per case, not once per owner and caller (it validates
    # every name, redaction included: that made this the slowest unit test, ~7 s CPU)
    views = {case: scopes.visible_namespaces(*case) for case in _ns_cases()[::5]}
    for (scope, osid, ouid), (sid, uid), (caller_ns, iso, shared), owner_ns in itertools.product(
        _owners(), _callers(), _ns_cases()[::5], NAMESPACES
    ):
        view = views[caller_ns, iso, shared]
        got = scopes.may_see(scope, osid, ouid, session_id=sid, user_id=uid, namespace=owner_ns, view=view)
        want = _expected(scope, osid, ouid, sid, uid) and _ns_expected(owner_ns, caller_ns, iso, shared)
        assert got == want, (scope, osid, ouid, sid, uid, owner_ns, caller_ns, iso, shared)


def test_the_current_view_is_the_roots_unless_a_backend_binds_one() -> None:
    assert scopes.current_view() == ("",)
    assert scopes.may_see("project", None, None, session_id=None, user_id=None, namespace="acme") is False
    with scopes.viewing(scopes.visible_namespaces("acme/support")):
        assert scopes.may_see("project", None, None, session_id=None, user_id=None, namespace="acme") is True
        assert scopes.sqlite_params(None, None)["ns"] == '["acme/support", "acme", ""]'
    assert scopes.current_view() == ("",)


@pytest.mark.parametrize(
    "bad", ["Acme", "/acme", "acme/", "acme//x", "a/../b", "a..b", ".hidden", "-x", "a" * 64, "/".join("abcdefghi"), "a b", "ü", 7]
)
def test_a_bad_namespace_is_refused_naming_the_rule(bad: object) -> None:
    from agent_memory.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="segments of"):
        scopes.check_namespace(bad)


@pytest.mark.parametrize("good", ["acme", "acme/support/agent-7", "a" * 63, "/".join("abcdefgh"), "x.y_z-1"])
def test_good_namespaces_pass(good: str) -> None:
    assert scopes.check_namespace(good) == good


def test_a_bad_isolation_is_refused() -> None:
    from agent_memory.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="full, inherited, shared"):
        scopes.check_isolation("open")


def test_sqlite_sql_matches_the_predicate() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE r (id INTEGER PRIMARY KEY, scope TEXT, session_id TEXT, user_id TEXT, namespace TEXT)")
    owners = [(*o, ns) for o in _owners() for ns in NAMESPACES]
    conn.executemany("INSERT INTO r VALUES (?, ?, ?, ?, ?)", [(i, *o) for i, o in enumerate(owners)])
    for (sid, uid), (caller_ns, iso, shared) in itertools.product(_callers(), _ns_cases()):
        view = scopes.visible_namespaces(caller_ns, iso, shared)
        with scopes.viewing(view):  # the parameters come from the bound view
            params = scopes.sqlite_params(sid, uid)
        rows = {row[0] for row in conn.execute(f"SELECT id FROM r WHERE {scopes.sqlite_sql('r')}", params)}
        want = {
            i
            for i, (scope, osid, ouid, ns) in enumerate(owners)
            if scopes.may_see(scope, osid, ouid, session_id=sid, user_id=uid, namespace=ns, view=view)
        }
        assert rows == want, (sid, uid, caller_ns, iso, shared)


def test_postgres_sql_matches_the_predicate(pg_url: str) -> None:  # noqa: F811
    require_psycopg()
    import psycopg

    owners = [(*o, ns) for o in _owners() for ns in NAMESPACES]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TEMP TABLE r (id int, scope text, session_id text, user_id text, namespace text, tenant text)")
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO r VALUES (%s, %s, %s, %s, %s, %s)",
                [
                    (i, scope, osid, ouid, ns, "" if scope in scopes.SHARED_SCOPES else (ouid or ""))
                    for i, (scope, osid, ouid, ns) in enumerate(owners)
                ],
            )
        for (sid, uid), (caller_ns, iso, shared) in itertools.product(_callers(), _ns_cases()[::3]):
            view = scopes.visible_namespaces(caller_ns, iso, shared)
            want = {
                i
                for i, (scope, osid, ouid, ns) in enumerate(owners)
                if scopes.may_see(scope, osid, ouid, session_id=sid, user_id=uid, namespace=ns, view=view)
            }
            for tenants in (True, False):
                params = scopes.postgres_params({"sid": sid, "uid": uid}, view)
                rows = {row[0] for row in conn.execute(f"SELECT id FROM r WHERE {scopes.postgres_sql('r', tenants=tenants)}", params)}
                assert rows == want, (sid, uid, tenants, caller_ns, iso, shared)


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
