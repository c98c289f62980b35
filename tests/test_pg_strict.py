"""The ranking oracle on PostgreSQL: can another user's hidden records move a caller's hits?

``ts_rank`` scores each row on its own, but the candidate narrowing of a many-row query
(:meth:`agent_memory.backends.postgres.search.PgSearch._narrow`) counted each term's documents over the whole
table: user B planting records with a query word made that word "common", so it stopped selecting candidates
and user A's own record holding only that word dropped out of her results. With ``strict_visibility`` (the
backend's default, per search, or the MCP server's strict default) the counts come from the caller's visible
records only, so her hits and scores are the same whether or not B's records exist.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _pg import fresh_schema, pg_url, require_psycopg  # noqa: F401  (pytest fixture)

require_psycopg()

from agent_memory.backends.base import Caller  # noqa: E402
from agent_memory.backends.postgres import PostgresBackend  # noqa: E402
from agent_memory.model.drafts import MemoryDraft  # noqa: E402
from agent_memory.search.lexical import LexicalEngine  # noqa: E402

ADA = Caller(None, "ada")
QUERY = "alpha beta"


def _backend(url: str, schema: str, **kw: Any) -> PostgresBackend:
    # a small candidate budget stands in for a large table (the budget is 2000 by default); no coordination:
    # the pool of re-scored candidates is the limit itself
    return PostgresBackend(url, schema=schema, engine=LexicalEngine(candidate_budget=5, coordination=0), **kw)


async def _hits(url: str, schema: str, **search: Any) -> list[tuple[str, float]]:
    b = _backend(url, schema)  # a fresh backend: no term counts cached from an earlier search
    try:
        res = await b.search(QUERY, ADA, limit=5, **search)
        return [(h.snippet, h.score) for h in res.hits]
    finally:
        await b.close()


async def _ada_writes(url: str, schema: str) -> None:
    b = _backend(url, schema)
    try:
        drafts = [MemoryDraft(f"alpha note number {i}", scope="user", user_id="ada") for i in range(5)]
        await b.remember_many([*drafts, MemoryDraft("beta beta beta", scope="user", user_id="ada")])
    finally:
        await b.close()


async def _bob_plants(url: str, schema: str) -> None:
    b = _backend(url, schema)
    try:
        await b.remember_many([MemoryDraft(f"beta planted {i}", scope="user", user_id="bob") for i in range(12)])
    finally:
        await b.close()


@pytest.mark.parametrize("how", ["per-search", "backend"])
async def test_hidden_records_do_not_move_a_callers_hits(pg_url: str, how: str) -> None:  # noqa: F811
    schema = fresh_schema()
    await _ada_writes(pg_url, schema)
    lax_before = await _hits(pg_url, schema, strict_visibility=False)
    if how == "per-search":
        before = await _hits(pg_url, schema, strict_visibility=True)
    else:
        b = _backend(pg_url, schema, strict_visibility=True)
        before = [(h.snippet, h.score) for h in (await b.search(QUERY, ADA, limit=5)).hits]
        await b.close()
    assert before == lax_before and "beta beta beta" in {s for s, _ in before}  # nothing hidden yet: the same
    await _bob_plants(pg_url, schema)
    lax_after = await _hits(pg_url, schema, strict_visibility=False)
    assert "beta beta beta" not in {s for s, _ in lax_after}  # the leak, for contrast: bob's rows moved ada's hits
    if how == "per-search":
        after = await _hits(pg_url, schema, strict_visibility=True)
    else:
        b = _backend(pg_url, schema, strict_visibility=True)
        after = [(h.snippet, h.score) for h in (await b.search(QUERY, ADA, limit=5)).hits]
        await b.close()
    assert after == before


async def test_strict_counts_are_the_callers_own_in_the_trace(pg_url: str) -> None:  # noqa: F811
    schema = fresh_schema()
    await _ada_writes(pg_url, schema)
    await _bob_plants(pg_url, schema)
    b = _backend(pg_url, schema, strict_visibility=True)
    try:
        res = await b.search(QUERY, ADA, limit=5, trace=True)
        steps = {s["stage"]: s for s in res.trace or []}
        assert steps["candidates"]["documents_per_term"] == {"alpha": 5, "beta": 1}  # bob's 12 are not counted
        assert steps["candidates"]["visible_only"] is True
        lax = await b.search(QUERY, ADA, limit=5, trace=True, strict_visibility=False)
        assert "documents_per_term" not in {s["stage"]: s for s in lax.trace or []}["candidates"]  # whole-table counts: not shown
    finally:
        await b.close()


def test_mcp_strict_default_switches_a_postgres_backend(pg_url: str) -> None:  # noqa: F811
    from agent_memory import MemoryProvider
    from agent_memory.backends.extended import ExtendedBackend, Hooks
    from agent_memory.mcp.server import make_strict

    async def main() -> tuple[bool, bool]:
        async with MemoryProvider(pg_url, schema=fresh_schema()) as provider:
            backend: Any = provider.backend
            assert backend.strict_visibility is False
            make_strict(provider)
            inner = PostgresBackend(pg_url, schema=fresh_schema())
            make_strict(ExtendedBackend(inner, Hooks()))  # a wrapped backend: the wrapped one is switched
            await inner.close()
            return bool(backend.strict_visibility), inner.strict_visibility

    assert asyncio.run(main()) == (True, True)
