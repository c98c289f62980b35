"""End to end over stdio with the official MCP client: tools, annotations, aliases, errors, resources, identity."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from _mcp_util import PY, hints, payload, resource_text, server_env, text
from mcp import ClientSession, StdioServerParameters, stdio_client

from agent_memory.agents.fence import CLOSE, OPEN
from agent_memory.backends.files.store import MemoryStore


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "mem"
    store = MemoryStore(r)
    store.remember("The release train leaves every second Tuesday.", title="Release cadence", scope="project", tags=["release"])
    store.remember("Alice prefers dark roast coffee.", scope="user", user_id="alice", title="Alice coffee")
    store.remember("Bob prefers green tea.", scope="user", user_id="bob", title="Bob tea")
    store.close()
    return r


@asynccontextmanager
async def stdio_session(root: Path, *args: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=PY, args=["-m", "agent_memory.mcp", "--root", str(root), *args], env=server_env())
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def test_tools_listed_with_annotations_and_sets(root: Path) -> None:
    async with stdio_session(root, "--user", "alice") as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
    assert set(tools) == {
        "memory_search",
        "memory_get",
        "memory_list",
        "memory_recall",
        "memory_links",
        "memory_remember",
        "memory_supersede",
        "memory_curate",
    }
    assert hints(tools["memory_search"]).read_only_hint is True
    assert hints(tools["memory_remember"]).read_only_hint is False
    assert hints(tools["memory_remember"]).destructive_hint is False
    assert tools["memory_search"].input_schema["required"] == ["query"]
    async with stdio_session(root, "--tools", "read") as s:
        assert "memory_remember" not in {t.name for t in (await s.list_tools()).tools}
    async with stdio_session(root, "--tools", "foreground", "--user", "alice") as s:
        forget = next(t for t in (await s.list_tools()).tools if t.name == "memory_forget")
        assert hints(forget).destructive_hint is True and hints(forget).idempotent_hint is True


async def test_every_tool_call_and_identity_from_flags(root: Path) -> None:
    async with stdio_session(root, "--tools", "foreground", "--user", "alice") as s:
        hits = payload(await s.call_tool("memory_search", {"q": "coffee roast", "top_k": 5}))["hits"]
        assert [h["title"] for h in hits] == ["Alice coffee"]  # bob's record is invisible, even to a matching query
        assert payload(await s.call_tool("memory_search", {"query": "green tea"}))["hits"] == []
        listed = payload(await s.call_tool("memory_list", {"k": 10}))
        assert {r["title"] for r in listed["records"]} == {"Release cadence", "Alice coffee"}
        assert listed["total"] == 2
        rid = hits[0]["id"]
        got = payload(await s.call_tool("memory_get", {"record_id": rid}))
        assert "dark roast" in got["content"]
        made = payload(await s.call_tool("memory_remember", {"text": "Alice's cat is called Miso.", "tags": "pets"}))
        assert made["status"] == "created"
        again = payload(await s.call_tool("memory_remember", {"content": "Alice's cat is called Miso."}))
        assert again == {**made, "status": "duplicate"}
        recalled = payload(await s.call_tool("memory_recall", {"message": "What is Alice's cat called?"}))
        assert "Miso" in recalled["summary"]
        result = await s.call_tool("memory_get", {"id": made["id"]})
        assert OPEN in text(result) and CLOSE in text(result)  # recalled memory is fenced as untrusted data
        assert payload(await s.call_tool("memory_forget", {"id": made["id"]}))["forgotten"] is True
        gone = await s.call_tool("memory_get", {"id": made["id"]})
        assert gone.is_error and "NotFoundError" in text(gone)
    store = MemoryStore(root)
    try:
        alice = store.list(user_id="alice", scope="user", limit=None)
        assert {r.title for r in alice} == {"Alice coffee"}  # the written record went to alice's partition
    finally:
        store.close()


async def test_wrong_calls_get_helpful_errors_and_the_session_goes_on(root: Path) -> None:
    async with stdio_session(root, "--user", "alice") as s:
        bad = await s.call_tool("memory_search", {"serch": "coffee"})
        assert bad.is_error
        assert "unknown argument(s) serch" in text(bad) and "memory_search(query: string" in text(bad)
        missing = await s.call_tool("memory_get", {})
        assert missing.is_error and "missing required argument(s) id" in text(missing)
        typed = await s.call_tool("memory_search", {"query": "x", "limit": "lots"})
        assert typed.is_error and "'limit' must be an integer" in text(typed)
        spoof = await s.call_tool("memory_search", {"query": "tea", "user_id": "bob"})
        assert spoof.is_error and "unknown argument(s) user_id" in text(spoof)  # identity is never an argument
        nope = await s.call_tool("memory_forget", {"id": "x"})
        assert nope.is_error and "unknown tool 'memory_forget'" in text(nope)
        assert payload(await s.call_tool("memory_search", {"text": "coffee"}))["hits"]  # still serving


async def test_pagination_and_bounded_output(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    store = MemoryStore(root)
    for i in range(30):
        store.remember(f"Deployment note {i}: " + "detail " * 200, title=f"note {i}", scope="project")
    store.close()
    async with stdio_session(root, "--tools", "read", "--max-output-chars", "6000") as s:
        seen: list[str] = []
        cursor = None
        for _ in range(40):
            args = {"limit": 100, **({"cursor": cursor} if cursor else {})}
            page = await s.call_tool("memory_list", args)
            assert len(text(page)) < 6000 + 1000  # bounded, notice and fence included
            data = payload(page)
            seen += [r["id"] for r in data["records"]]
            cursor = data["next_cursor"]
            if cursor is None:
                break
        assert len(seen) == len(set(seen)) == 30
        found: list[str] = []
        cursor = None
        for _ in range(40):
            data = payload(
                await s.call_tool("memory_search", {"q": "deployment note detail", "k": 7, **({"cursor": cursor} if cursor else {})})
            )
            assert len(data["hits"]) <= 7
            found += [h["id"] for h in data["hits"]]
            cursor = data["next_cursor"]
            if cursor is None:
                break
        assert sorted(found) == sorted(seen)  # every record once, across pages
        assert payload(await s.call_tool("memory_search", {"q": "deployment", "cursor": "o1000"}))["hits"] == []
        bad = await s.call_tool("memory_list", {"cursor": "garbage"})
        assert bad.is_error and "invalid cursor" in text(bad)


async def test_resources_core_and_records(root: Path) -> None:
    async with stdio_session(root, "--user", "alice") as s:
        uris = {str(r.uri) for r in (await s.list_resources()).resources}
        assert "memory://core" in uris
        templates = (await s.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["memory://records/{id}"]
        core = resource_text(await s.read_resource("memory://core"))
        assert "second Tuesday" in core and "dark roast" in core and "green tea" not in core
        rec_uri = next(u for u in uris if u.startswith("memory://records/"))
        body = resource_text(await s.read_resource(rec_uri))
        assert OPEN in body
        bob_id = next(r.id for r in MemoryStore(root).list(user_id="bob", limit=None) if r.title == "Bob tea")
        with pytest.raises(Exception, match="NotFoundError"):
            await s.read_resource(f"memory://records/{bob_id}")


async def test_env_identity_and_bad_config(root: Path) -> None:
    params = StdioServerParameters(
        command=PY, args=["-m", "agent_memory.mcp", "--root", str(root)], env=server_env(AGENT_MEMORY_USER="bob")
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            hits = payload(await s.call_tool("memory_search", {"query": "tea coffee"}))["hits"]
            assert [h["title"] for h in hits] == ["Bob tea"]
    proc = await asyncio.create_subprocess_exec(
        PY,
        "-m",
        "agent_memory.mcp",
        "--root",
        str(root),
        "--transport",
        "http",
        "--host",
        "0.0.0.0",
        env=server_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 1 and b"refusing to serve HTTP on 0.0.0.0 without tokens" in err
