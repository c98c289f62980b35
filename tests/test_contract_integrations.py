"""The MCP server (in process, through the SDK's client) and Claude's memory-tool handler, on every backend."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_memory.agents.fence import OPEN
from agent_memory.integrations.anthropic import MemoryToolHandler
from agent_memory.mcp._config import Identity, ServerOptions
from agent_memory.mcp.server import build_server

Client = pytest.importorskip("mcp.client.client").Client


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return dict(result.structured_content)


def mcp_client(provider: Any, tools: str = "foreground", **identity: Any) -> Any:
    options = ServerOptions(tools=(tools,), identity=Identity(**identity))
    return Client(build_server(provider, options))


async def seed(provider: Any) -> dict[str, str]:
    return {
        "alice": (await provider.remember("Alice likes dark roast coffee.", title="Alice coffee", scope="user", user_id="alice")).id,
        "bob": (await provider.remember("Bob likes green tea with his coffee roast.", title="Bob tea", scope="user", user_id="bob")).id,
        "shared": (await provider.remember("Releases ship on the second Tuesday.", title="Release cadence")).id,
    }


async def test_mcp_tools_serve_one_identity(backend: Any) -> None:
    provider = backend.provider()
    ids = await seed(provider)
    async with mcp_client(provider, user_id="alice") as s:
        hits = payload(await s.call_tool("memory_search", {"q": "coffee roast", "top_k": 5}))["hits"]
        assert [h["id"] for h in hits] == [ids["alice"]]  # bob's record is invisible, even to a matching query
        listed = payload(await s.call_tool("memory_list", {"k": 10}))
        assert {r["id"] for r in listed["records"]} == {ids["alice"], ids["shared"]} and listed["total"] == 2
        got = await s.call_tool(
            "memory_get", {"record_id": ids["alice"], "line_start": hits[0]["line_start"], "line_end": hits[0]["line_end"]}
        )
        assert payload(got)["content"] == "Alice likes dark roast coffee." and OPEN in got.content[0].text
        missing = await s.call_tool("memory_get", {"id": ids["bob"]})
        assert missing.is_error and "NotFoundError" in missing.content[0].text
        spoof = await s.call_tool("memory_search", {"query": "tea", "user_id": "bob"})
        assert spoof.is_error and "unknown argument(s) user_id" in spoof.content[0].text
        made = payload(await s.call_tool("memory_remember", {"text": "Alice's cat is called Miso.", "tags": "pets"}))
        again = payload(await s.call_tool("memory_remember", {"content": "Alice's cat is called Miso."}))
        assert made["status"] == "created" and again == {**made, "status": "duplicate"}
        recalled = payload(await s.call_tool("memory_recall", {"message": "What is Alice's cat called?"}))
        assert "Miso" in recalled["summary"] and "green tea" not in recalled["summary"]
        bob_gone = await s.call_tool("memory_forget", {"id": ids["bob"]})
        assert bob_gone.is_error and "NotFoundError" in bob_gone.content[0].text
        assert payload(await s.call_tool("memory_forget", {"id": made["id"]}))["forgotten"] is True
    assert (await provider.get(ids["bob"], user_id="bob")).content.startswith("Bob likes green tea")
    cat = await provider.search("cat Miso", user_id="alice")
    assert cat.hits == []  # forgotten


async def test_mcp_writes_land_in_the_connections_partition_and_resources_obey_scope(backend: Any) -> None:
    provider = backend.provider()
    ids = await seed(provider)
    async with mcp_client(provider, tools="capture", session_id="chat-9", user_id="bob") as s:
        made = payload(await s.call_tool("memory_remember", {"content": "Bob's desk is on floor 4."}))
        core = (await s.read_resource("memory://core")).contents[0].text
        assert "green tea" in core and "second Tuesday" in core and "dark roast" not in core
        uris = {str(r.uri) for r in (await s.list_resources()).resources}
        assert f"memory://records/{ids['bob']}" in uris and f"memory://records/{ids['alice']}" not in uris
        with pytest.raises(Exception, match="NotFoundError"):
            await s.read_resource(f"memory://records/{ids['alice']}")
    record = await provider.get(made["id"], user_id="bob")
    assert (record.scope, record.user_id, record.session_id) == ("user", "bob", "chat-9")
    assert [h.id for h in (await provider.search("desk floor", user_id="alice")).hits] == []


async def test_memory_tool_files_are_records_in_the_callers_partition(backend: Any) -> None:
    provider = backend.provider()
    alice = MemoryToolHandler(provider, user_id="alice")
    bob = MemoryToolHandler(provider, user_id="bob")
    assert (await alice.ahandle({"command": "create", "path": "/memories/prefs.md", "file_text": "Likes dark roast.\n"})).startswith(
        "File created"
    )
    assert "does not exist" in await bob.ahandle({"command": "view", "path": "/memories/prefs.md"})
    assert (await bob.ahandle({"command": "create", "path": "/memories/prefs.md", "file_text": "Likes tea.\n"})).startswith("File created")
    hits = (await provider.search("dark roast", user_id="alice")).hits
    assert [h.title for h in hits] == ["prefs.md"] and (await provider.search("dark roast", user_id="bob")).hits == []
    record = await provider.get(hits[0].id, user_id="alice")
    assert record.scope == "user" and record.user_id == "alice" and record.metadata["memory_path"] == "/memories/prefs.md"
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 3
    await alice.ahandle({"command": "create", "path": "/memories/keys.md", "file_text": f"api key: {secret}\n"})
    shown = await alice.ahandle({"command": "view", "path": "/memories/keys.md"})
    assert secret not in shown and "api key:" in shown


async def test_memory_tool_replay_is_the_same_on_every_backend(backend: Any, tmp_path: Any) -> None:
    """The documented command sequence gives byte-identical answers here and on a files root.

    (test_anthropic_memory_tool.py checks the files answers against the SDK's reference tool.)
    """
    from _pg import make_target
    from test_anthropic_memory_tool import SEQUENCE

    reference = make_target("files", tmp_path)
    try:
        ours = MemoryToolHandler(backend.provider(), user_id="alice", session_id="s1")
        files = MemoryToolHandler(reference.provider(), user_id="alice", session_id="s1")
        for command in SEQUENCE:
            got, want = await ours.ahandle(json.loads(json.dumps(command))), await files.ahandle(dict(command))
            assert got == want, command
    finally:
        await reference.close()
