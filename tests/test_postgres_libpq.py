"""The command line's one-shot PostgreSQL search (``backends/postgres/oneshot.py`` over ``_libpq.py``).

It must answer exactly as :meth:`PostgresBackend.search` does, import neither psycopg nor asyncio, and step
aside (``None``) whenever it cannot give that exact answer.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from _pg import fresh_schema, pg_url, require_psycopg  # noqa: F401  (pytest fixture)

require_psycopg()

from agent_memory.backends.base import Caller  # noqa: E402
from agent_memory.backends.postgres import PostgresBackend, _libpq, oneshot  # noqa: E402
from agent_memory.backends.postgres.oneshot import search_once  # noqa: E402
from agent_memory.errors import BackendError, InvalidInputError  # noqa: E402
from agent_memory.model.drafts import MemoryDraft  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DAY = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)

DRAFTS = [
    MemoryDraft("Deploys happen on Fridays after noon; rollbacks need approval.", title="Deploys", tags=("ops",)),
    MemoryDraft("The staging database lives in eu-west-1 and is rebuilt nightly.", kind="fact", tags=("infra", "db")),
    MemoryDraft("Ada prefers tea, never coffee, before the 9:30 stand-up.", scope="user", user_id="ada"),
    MemoryDraft("Bob's locker is number 12 — the key is at the front desk.", scope="user", user_id="bob"),
    MemoryDraft("In this session we agreed to rename the billing service.", scope="session", session_id="s1", user_id="ada"),
    MemoryDraft("A session note without a user: the ferry leaves at nine.", scope="session", session_id="s2"),
    MemoryDraft('Global rule: quote "exact" errors and back\\slashes verbatim.', scope="global", kind="rule"),
    MemoryDraft("Ünïcode façade naïve café — deploys in Zürich differ.", tags=("i18n",)),
    MemoryDraft("The old deploy window was Thursdays.", happened_at="2025-03-01", valid_from="2025-01-01"),
    MemoryDraft("This reminder about the deploy freeze already expired.", expires="2999-01-01T00:00:00Z"),
    MemoryDraft("Weekly deploys moved from Thursday to Friday in June.", importance=0.9, happened_at="2026-06-02"),
]
QUERIES = [
    "when do deploys happen?",
    "staging database region",
    "tea or coffee",
    "locker key",
    "billing service",
    "ferry",
    'quote "exact" errors back\\slashes',
    "café Zürich",
    "deploy window",
    "the",
    "",
    "it's 100% ; DROP TABLE records; --",
    "deploys " * 200,
    "x\x00y deploys",
    "\ud800 deploys",
]
CALLERS = [Caller(), Caller(user_id="ada"), Caller(session_id="s1", user_id="ada"), Caller(session_id="s2"), Caller(user_id="bob")]
OPTIONS: list[dict[str, object]] = [
    {},
    {"trace": True},
    {"tags": ("ops",)},
    {"include_superseded": True},
    {"as_of": "2025-06-01"},
    {"scope": "user"},
    {"kind": ["fact", "rule"]},
    {"created_after": "2000-01-01", "updated_before": "2999-12-31"},
    {"limit": 1},
    {"mode": "lexical"},
]


@pytest.fixture(scope="module")
def seeded(pg_url: str) -> tuple[str, str]:  # noqa: F811
    import asyncio

    schema = fresh_schema()

    async def seed() -> None:
        b = PostgresBackend(pg_url, schema=schema)
        try:
            await b.remember_many(DRAFTS)
            old = (await b.search("Thursdays deploy window", Caller(), limit=1)).hits[0].id
            await b.remember(MemoryDraft("The deploy window is Fridays now.", supersedes=old))
            async with b.pool.connection() as conn:  # a record that has expired since it was written
                await conn.execute(
                    f"UPDATE \"{schema}\".records SET expires = now() - interval '1 day' WHERE content LIKE '%deploy freeze%'"
                )
        finally:
            await b.close()

    asyncio.run(seed())
    return pg_url, schema


def _same(got: object, ref: object) -> bool:
    assert got is not None
    return ([h.to_dict() for h in got.hits], got.trace) == ([h.to_dict() for h in ref.hits], ref.trace)  # type: ignore[attr-defined]


async def test_answers_exactly_as_the_backend_does(seeded: tuple[str, str]) -> None:
    url, schema = seeded
    b = PostgresBackend(url, schema=schema, pooled=False)
    found = 0
    try:
        for query in QUERIES:
            for caller in CALLERS:
                for opts in OPTIONS:
                    kw: dict[str, Any] = {"limit": 10, **opts}
                    ref = await b.search(query, caller, **dict(kw))
                    got = search_once(url, query, session_id=caller.session_id, user_id=caller.user_id, schema=schema, **dict(kw))
                    assert _same(got, ref), (query, caller, opts)
                    found += len(ref.hits)
    finally:
        await b.close()
    assert found > 200  # the grid really ranks records, not only empty results


def test_visibility_holds_on_the_one_shot_path(seeded: tuple[str, str]) -> None:
    url, schema = seeded

    def ids(caller: dict[str, Any]) -> set[str]:
        result = search_once(url, "locker key tea coffee billing ferry", schema=schema, **caller)
        assert result is not None
        hits = result.hits
        return {h.content if hasattr(h, "content") else h.snippet for h in hits}

    assert not any("locker" in s for s in ids({"user_id": "ada"}))
    assert any("locker" in s for s in ids({"user_id": "bob"}))
    assert not any("billing" in s for s in ids({"session_id": "s1"}))  # a user's session record needs that user
    assert any("billing" in s for s in ids({"session_id": "s1", "user_id": "ada"}))
    assert any("ferry" in s for s in ids({"session_id": "s2"})) and not any("ferry" in s for s in ids({}))


def test_steps_aside_when_it_cannot_answer_exactly(seeded: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    url, schema = seeded
    assert search_once(url, "deploys", schema=fresh_schema()) is None  # no schema yet: the backend migrates
    assert search_once(url, "deploys", schema=schema, mode="hybrid") is None
    assert search_once(url, "deploys", schema=schema, mode="contextual") is None
    monkeypatch.setenv(oneshot.ENV, "0")
    assert search_once(url, "deploys", schema=schema) is None
    monkeypatch.delenv(oneshot.ENV)
    monkeypatch.setattr(_libpq, "_LIB", None)
    monkeypatch.setattr(_libpq, "_candidates", lambda: iter(["/nonexistent/libpq.so.5"]))
    assert search_once(url, "deploys", schema=schema) is None
    monkeypatch.undo()
    assert search_once(url, "deploys", schema=schema) is not None


def test_bad_input_and_dead_servers_are_typed_errors() -> None:
    with pytest.raises(InvalidInputError):
        search_once("postgresql://u@127.0.0.1:1/x", "q", limit=0)
    with pytest.raises(InvalidInputError):
        search_once("postgresql://u@127.0.0.1:1/x", "q", user_id="a\x00b")
    with pytest.raises(BackendError, match="is not usable") as err:
        search_once("postgresql://ada:s3cret@127.0.0.1:1/x", "q")
    assert "s3cret" not in str(err.value) and "***" in str(err.value)


def test_parameters_and_values_round_trip(pg_url: str) -> None:  # noqa: F811
    conn = _libpq.Connection(pg_url)
    try:
        odd = ["a", "b c", 'say "hi"', "back\\slash", "{braces}", "com,ma", "NULL", "", "ünï"]
        row = conn.run(
            "SELECT %(arr)s::text[] AS arr, %(n)s::bigint + 1 AS n, %(f)s::float8 AS f, %(t)s::timestamptz AS t,"
            " %(s)s AS s, %(none)s::text AS none, %(yes)s::bool AS yes, '100%%' AS pct,"
            " ARRAY['x', NULL]::text[] AS withnull, '{\"k\": [1, \"v\"]}'::jsonb AS j",
            {"arr": odd, "n": 41, "f": 0.25, "t": DAY, "s": "it's $1 %(x)s", "none": None, "yes": True},
        )[0]
        assert row == {
            "arr": odd,
            "n": 42,
            "f": 0.25,
            "t": DAY,
            "s": "it's $1 %(x)s",
            "none": None,
            "yes": True,
            "pct": "100%",
            "withnull": ["x", None],
            "j": {"k": [1, "v"]},
        }
        with pytest.raises(_libpq.ServerError) as err:
            conn.run("SELECT * FROM no_such_table_here")
        assert err.value.sqlstate == "42P01"
        with pytest.raises(_libpq.Unsupported):
            conn.run("SELECT 'x'::bytea AS b")  # a type it does not decode: the caller falls back
        with pytest.raises(_libpq.Unsupported):
            conn.run("SELECT %(s)s AS s", {"s": "nul\x00byte"})
        assert conn.run("SELECT 1 AS one") == [{"one": 1}]  # the connection is still usable
    finally:
        conn.close()


@pytest.mark.parametrize("one_shot", ["1", "0"])
def test_cli_search_same_output_and_no_psycopg_on_the_one_shot_path(pg_url: str, one_shot: str) -> None:  # noqa: F811
    import asyncio

    async def seed() -> None:
        b = PostgresBackend(pg_url)  # the command line's default schema
        try:
            await b.remember_many(
                [
                    MemoryDraft("the quoll ferry leaves at nine from pier 4"),
                    MemoryDraft("the late quoll ferry leaves at eleven", scope="user", user_id="ada"),
                ]
            )
        finally:
            await b.close()

    asyncio.run(seed())
    script = textwrap.dedent(f"""
        import sys
        from agent_memory.cli._app import main
        code = main(["--root", {pg_url!r}, "search", "when does the quoll ferry leave?", "--user", "ada", "--json", "--trace"])
        heavy = sorted(m for m in ("psycopg", "asyncio", "numpy", "yaml", "logging", "agent_memory.backends.files.store", "agent_memory.backends.files.index")
                       if m in sys.modules)
        print("HEAVY", ",".join(heavy) or "-", code, file=sys.stderr)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True", oneshot.ENV: one_shot}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert [h["snippet"] for h in doc["hits"]][:2] == [
        "the late quoll ferry leaves at eleven",
        "the quoll ferry leaves at nine from pier 4",
    ]
    assert doc["trace"] and doc["trace"][0]["stage"] == "parse"
    if one_shot == "1":
        assert "HEAVY - 0" in out.stderr, out.stderr
    else:
        assert "psycopg" in out.stderr and "asyncio" in out.stderr  # the backend path, same answer


async def test_common_terms_are_counted_from_statistics_on_large_tables(pg_url: str) -> None:  # noqa: F811
    """At ≥ 20 × the budget rows, a term the planner lists as common takes its count from pg_stats (no scan)."""
    from agent_memory.backends.files.fts import Fts5Engine

    schema = fresh_schema()
    b = PostgresBackend(pg_url, schema=schema, engine=Fts5Engine(candidate_budget=20))
    try:
        await b.remember_many([MemoryDraft(f"weekly status report number {i}") for i in range(600)])
        await b.remember(MemoryDraft("the zeppelin status report"))
        async with b.pool.connection() as conn:
            await conn.execute(f'ALTER TABLE "{schema}".records SET (autovacuum_enabled = false)')
            await conn.execute(f'ANALYZE "{schema}".records')
            # statistics now say "weekly" is in every row; make them stale: only 10 rows (numbers 10–19) keep it
            await conn.execute(
                f"DELETE FROM \"{schema}\".records WHERE content LIKE 'weekly status report number %' AND content NOT LIKE '% 1_'"
            )
        res = await b.search("zeppelin weekly", Caller(), limit=3, trace=True)
        assert "candidates" in {s["stage"] for s in res.trace or []}
        counts = {t: b.searcher._df[(t, None)][0] for t in ("zeppelin", "weekly")}  # the trace shows no whole-table count
        assert counts == {"zeppelin": 1, "weekly": 21}  # weekly: the statistics' estimate, capped at budget + 1
        plain = PostgresBackend(pg_url, schema=schema)  # the default budget, as the command line uses
        try:
            ref = await plain.search("zeppelin weekly", Caller(), limit=3, trace=True)
        finally:
            await plain.close()
        once = search_once(pg_url, "zeppelin weekly", schema=schema, limit=3, trace=True)
        assert once is not None and _same(once, ref)
        small = PostgresBackend(pg_url, schema=schema, engine=Fts5Engine(candidate_budget=100))  # 2,000 > rows
        try:
            exact = await small.search("zeppelin weekly", Caller(), limit=3, trace=True)
            assert {s["stage"]: s for s in exact.trace or []}.get("candidates") is None  # 1 + 10 ≤ 100: no narrowing
            tight = PostgresBackend(pg_url, schema=schema, engine=Fts5Engine(candidate_budget=5))  # 100 ≤ rows: stats
            try:
                t = await tight.search("zeppelin weekly", Caller(), limit=3, trace=True)
                assert "candidates" in {s["stage"] for s in t.trace or []}
                assert {w: tight.searcher._df[(w, None)][0] for w in ("zeppelin", "weekly")} == {"zeppelin": 1, "weekly": 6}
            finally:
                await tight.close()
        finally:
            await small.close()
    finally:
        await b.close()
