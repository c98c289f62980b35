"""MCP over stdio with the official client: ``memory_search``'s ranking stages and the ``memory_links`` read tool.

The stages are the CLI's (``--recency``, ``--decay``, ``--mmr``, ``--min-score``; docs/search.md), validated with
typed errors; ``memory_links`` resolves links among what the connection's identity (user, namespace) may see.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from _mcp_util import PY, payload, server_env, text
from mcp import ClientSession, StdioServerParameters, stdio_client

from agent_memory.backends.files.store import MemoryStore
from agent_memory.model.drafts import MemoryDraft

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@asynccontextmanager
async def session(root: Path, *args: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=PY, args=["-m", "agent_memory.mcp", "--root", str(root), *args], env=server_env())
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            yield s


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "mem"
    store = MemoryStore(r)
    store.remember("The harbour ferry leaves at noon from pier one.", scope="project")
    store.remember("The harbour ferry leaves at noon from pier one daily.", scope="project")  # a near-duplicate
    store.remember("The harbour museum opens at nine.", scope="project")
    store.remember("Harbour parking is free on Sundays near the harbour gate.", scope="project")
    store.close()
    return r


def _snippets(result: object) -> list[str]:
    return [h["snippet"] for h in payload(result)["hits"]]


async def test_memory_search_takes_the_ranking_stages_and_refuses_bad_values(root: Path) -> None:
    query = {"query": "harbour ferry noon"}
    async with session(root) as s:
        plain = _snippets(await s.call_tool("memory_search", query))
        assert len(plain) == 4 and plain[0].startswith("The harbour ferry") and plain[1].startswith("The harbour ferry")
        diverse = _snippets(await s.call_tool("memory_search", {**query, "mmr": 0.0}))
        assert sorted(diverse) == sorted(plain) and diverse[0] == plain[0]
        assert not diverse[1].startswith("The harbour ferry")  # the near-duplicate is demoted below a different hit
        best = _snippets(await s.call_tool("memory_search", {**query, "min_score": 1}))
        assert best == plain[:1]  # everything scoring below the best hit is dropped
        for stages in ({"recency": True}, {"decay": 30}, {"decay_days": 7, "recency": "true"}):
            assert sorted(_snippets(await s.call_tool("memory_search", {**query, **stages}))) == sorted(plain), stages
        for bad, named in (
            ({"mmr": 2}, "mmr"),
            ({"min_score": -0.5}, "min_score"),
            ({"decay": 0}, "decay"),
            ({"mmr": "lots"}, "mmr"),
            ({"recency": "maybe"}, "recency"),
        ):
            result = await s.call_tool("memory_search", {**query, **bad})
            assert result.is_error and ("InvalidInputError" in text(result) or "ToolArgumentError" in text(result)), bad
            assert named in text(result), (bad, text(result))


async def test_memory_links_obeys_the_connections_user_and_namespace(tmp_path: Path) -> None:
    r = tmp_path / "mem"
    store = MemoryStore(r)
    bobs = store.remember("Bob's locker is 12.", title="Bob locker", scope="user", user_id="bob").id
    alices = store.remember("Alice's desk is by the window.", title="Alice desk", scope="user", user_id="alice").id
    hub = store.remember(f"Office notes: [[{bobs}]] and [[Alice desk]].", title="Office notes", scope="project").id
    [acme] = store.remember_many([MemoryDraft("Acme notes link [[Office notes]].", scope="project", namespace="acme")])
    store.close()

    async with session(r, "--user", "alice") as s:
        found = payload(await s.call_tool("memory_links", {"id": hub}))
        assert [(x["target"], x["record_id"]) for x in found["outgoing"]] == [(bobs, None), ("Alice desk", alices)]  # bob's: hidden
        assert "note" in found and found["truncated"] is False
        assert found["backlinks"] == []  # acme's record links here, but a parent never reads its children
        back = payload(await s.call_tool("memory_links", {"record_id": alices}))  # an alias of id
        assert [b["record_id"] for b in back["backlinks"]] == [hub]
        hidden = await s.call_tool("memory_links", {"id": bobs})
        assert hidden.is_error and "NotFoundError" in text(hidden)
        sneaky = await s.call_tool("memory_links", {"id": hub, "user_id": "bob"})
        assert sneaky.is_error and "unknown argument" in text(sneaky)
    async with session(r, "--user", "bob") as s:
        found = payload(await s.call_tool("memory_links", {"id": hub}))
        assert [x["record_id"] for x in found["outgoing"]] == [bobs, None]  # alice's desk: hidden from bob
    async with session(r, "--user", "alice", "--namespace", "acme", "--isolation", "full") as s:
        assert [x["record_id"] for x in payload(await s.call_tool("memory_links", {"id": acme.id}))["outgoing"]] == [None]
        outside = await s.call_tool("memory_links", {"id": hub})  # the root's record: not in a full caller's view
        assert outside.is_error and "NotFoundError" in text(outside)
    async with session(r, "--user", "alice", "--namespace", "acme") as s:  # inherited: the root is an ancestor
        assert [x["record_id"] for x in payload(await s.call_tool("memory_links", {"id": acme.id}))["outgoing"]] == [hub]
        assert [b["record_id"] for b in payload(await s.call_tool("memory_links", {"id": hub}))["backlinks"]] == [acme.id]
    async with session(r, "--tools", "read") as s:
        listed = {t.name: t for t in (await s.list_tools()).tools}
        assert listed["memory_links"].annotations is not None and listed["memory_links"].annotations.read_only_hint is True


@pytest.fixture(params=["files", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh files root or a fresh PostgreSQL database (the MCP server uses its default schema)."""
    if request.param == "postgres":
        from _matrix import fresh_database
        from _pg import require_psycopg, server

        require_psycopg()
        return fresh_database(server().url)
    return str(tmp_path / "mem")


async def test_memory_links_and_stages_over_http_follow_each_tokens_identity(target: str, tmp_path: Path) -> None:
    from _mcp_util import free_port, http_session, start_http, stop, write_tokens

    from agent_memory import MemoryProvider

    async with MemoryProvider(target) as memory:
        bobs = (await memory.remember("Bob's locker is 12.", title="Bob locker", scope="user", user_id="bob")).id
        hub = (await memory.remember(f"Office notes: [[{bobs}]] and [[Acme plan]].", title="Office notes", scope="project")).id
        plan = (await memory.remember("Acme plan: ship in May.", title="Acme plan", scope="project", namespace="acme")).id
        sub = (await memory.remember("Support notes link [[Acme plan]].", scope="project", namespace="acme/support")).id
    alice, bob, full = "alice-token-0123456789ab", "bob-token-0123456789abcd", "full-token-0123456789abc"
    tokens = write_tokens(
        tmp_path / "tokens.json",
        {
            alice: {"user": "alice", "namespace": "acme/support"},  # inherited: reads acme and the root
            bob: {"user": "bob"},
            full: {"user": "alice", "namespace": "acme/support", "isolation": "full"},
        },
    )
    port = free_port()
    proc = start_http(target, "--tokens", str(tokens), port=port)  # type: ignore[arg-type]
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        async with http_session(url, alice) as a, http_session(url, bob) as b, http_session(url, full) as f:
            seen = payload(await a.call_tool("memory_links", {"id": hub}))["outgoing"]
            assert [x["record_id"] for x in seen] == [None, plan]  # bob's record hidden from alice; acme's plan inherited
            assert [x["record_id"] for x in payload(await b.call_tool("memory_links", {"id": hub}))["outgoing"]] == [bobs, None]
            assert [x["record_id"] for x in payload(await a.call_tool("memory_links", {"id": sub}))["outgoing"]] == [plan]
            assert [x["record_id"] for x in payload(await f.call_tool("memory_links", {"id": sub}))["outgoing"]] == [None]
            outside = await f.call_tool("memory_links", {"id": hub})
            assert outside.is_error and "NotFoundError" in text(outside)
            assert [h["id"] for h in payload(await f.call_tool("memory_search", {"query": "notes", "mmr": 0.5}))["hits"]] == [sub]
            bad = await f.call_tool("memory_search", {"query": "notes", "min_score": 3})
            assert bad.is_error and "min_score" in text(bad)
    finally:
        stop(proc)
