"""MCP tools and time: supersede over MCP, as_of / include_superseded on reads, importance and dates on writes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from _mcp_util import PY, payload, server_env, text
from mcp import ClientSession, StdioServerParameters, stdio_client

from agent_memory.backends.files.store import MemoryStore


@asynccontextmanager
async def session(root: Path, *args: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=PY, args=["-m", "agent_memory.mcp", "--root", str(root), *args], env=server_env())
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        yield s


async def test_supersede_then_read_now_and_as_of_then(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    store = MemoryStore(root)
    bob = store.remember("Bob's office is in Lisbon.", scope="user", user_id="bob", title="Bob office").id
    store.close()
    async with session(root, "--user", "alice") as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert "as_of" in tools["memory_search"].input_schema["properties"]
        assert tools["memory_remember"].input_schema["properties"]["importance"]["type"] == "number"
        made = payload(
            await s.call_tool(
                "memory_remember",
                {
                    "content": "Alice works from the Porto office.",
                    "title": "Alice office",
                    "importance": "0.8",
                    "happened_at": "2024-03-01",
                    "valid_from": "2024-03-01",
                },
            )
        )
        new = payload(
            await s.call_tool(
                "memory_supersede",
                {"id": made["id"], "content": "Alice moved to the Berlin office.", "title": "Alice office", "valid_from": "2025-06-01"},
            )
        )
        assert new["supersedes"] == made["id"] and new["id"] != made["id"]

        now = payload(await s.call_tool("memory_search", {"query": "Alice office"}))["hits"]
        assert [h["id"] for h in now] == [new["id"]]
        everything = payload(await s.call_tool("memory_search", {"query": "Alice office", "include_superseded": True}))
        old = next(h for h in everything["hits"] if h["id"] == made["id"])
        assert old["superseded_by"] == new["id"] and old["happened_at"].startswith("2024-03-01")
        then = payload(await s.call_tool("memory_search", {"query": "Alice office", "as_of": "2024-12-31"}))["hits"]
        assert [h["id"] for h in then] == [made["id"]]  # what was held true then

        listed = payload(await s.call_tool("memory_list", {}))
        assert listed["total"] == 1 and [r["id"] for r in listed["records"]] == [new["id"]]
        full = payload(await s.call_tool("memory_list", {"include_superseded": "true"}))
        assert full["total"] == 2 and {r["id"] for r in full["records"]} == {made["id"], new["id"]}

        got = payload(await s.call_tool("memory_get", {"id": made["id"]}))
        assert got["superseded_by"] == new["id"]

        # another user's record can be neither read nor superseded, and nothing is written for the attempt
        spoof = await s.call_tool("memory_supersede", {"id": bob, "content": "Bob's office is in Paris."})
        assert spoof.is_error and "NotFoundError" in text(spoof)
        bad = await s.call_tool("memory_remember", {"content": "x", "importance": 3})
        assert bad.is_error and "importance" in text(bad) and "between 0 and 1" in text(bad)
    store = MemoryStore(root)
    try:
        assert [r.content for r in store.list(user_id="bob")] == ["Bob's office is in Lisbon."]
        rec = store.get(made["id"], user_id="alice")
        assert rec.importance == 0.8
    finally:
        store.close()
