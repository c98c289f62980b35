"""The agent tool's and MCP's ``memory_remember`` list every visible contradiction; each now says whether this caller
may supersede it (``may_supersede``, ``action``) by the CLI notice's rule (``consolidate.contradict.supersedable``) and
the caller's own limits — and what it says is what ``memory_supersede`` then does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import ModelRetry

from agent_memory.backends.base import Caller


async def test_the_agent_tool_says_which_contradictions_the_caller_may_supersede(backend: Any) -> None:
    from _doubles import plain_tools

    from agent_memory.agents.tools import FOREGROUND, memory_toolset

    parent = backend.provider(namespace="acme")
    child = backend.provider(namespace="acme/support")  # inherited: sees acme's records, may change only its own
    theirs = await parent.remember("The staging server is in eu-west-1.", user_id="alice", scope="user")
    mine = await child.remember("The staging server is in eu-central-1.", user_id="alice", scope="user")
    alice = Caller(user_id="alice", namespace="acme/support")

    tools = plain_tools(memory_toolset(child, FOREGROUND, caller=alice))
    done = await tools["memory_remember"](content="The staging server is in us-east-1.")
    notes = {c["id"]: c for c in done["contradicts"]}
    assert set(notes) == {theirs.id, mine.id}, done  # both still named: the caller sees both
    assert notes[mine.id]["may_supersede"] is True and "memory_supersede" in notes[mine.id]["action"]
    assert notes[theirs.id]["may_supersede"] is False and "cannot supersede" in notes[theirs.id]["action"]

    with pytest.raises(ModelRetry):  # what the note said: the parent's record is not this caller's to supersede
        await tools["memory_supersede"](id=theirs.id, content="The staging server is in us-west-2.")
    assert (await tools["memory_supersede"](id=mine.id, content="The staging server is in us-west-2."))["supersedes"] == mine.id

    # a toolset without memory_supersede can supersede nothing: no note says it may
    narrow = plain_tools(memory_toolset(child, ("memory_search", "memory_remember"), caller=alice))
    again = await narrow["memory_remember"](content="The staging server is in ap-south-1.")
    assert again["contradicts"] and not any(c["may_supersede"] for c in again["contradicts"]), again


async def test_the_mcp_remember_result_says_which_contradictions_this_connection_may_supersede(tmp_path: Path) -> None:
    from _mcp_util import free_port, http_session, payload, start_http, stop, write_tokens

    from agent_memory.backends.files.store import MemoryDraft, MemoryStore

    root = tmp_path / "mem"
    with MemoryStore(root) as store:
        office = store.remember_many([MemoryDraft("The office is in Berlin.", scope="project")])[0].id
    alice, ops = "alice-token-0123456789abcdef", "ops-token-0123456789abcdef"
    tokens = write_tokens(tmp_path / "tokens.json", {alice: {"user": "alice"}, ops: {"user": "ops", "access": "shared"}})
    port = free_port()
    proc = start_http(root, "--tokens", str(tokens), port=port)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        async with http_session(url, alice) as a, http_session(url, ops) as o:
            first = payload(await a.call_tool("memory_remember", {"content": "The staging server is in eu-west-1."}))
            own = payload(await a.call_tool("memory_remember", {"content": "The staging server is in us-east-1."}))
            [note] = own["contradicts"]
            assert note["id"] == first["id"] and note["may_supersede"] is True, own

            shared = payload(await a.call_tool("memory_remember", {"content": "The office is in Hamburg."}))
            [note] = shared["contradicts"]  # a project record: named, but access 'own' may not change it
            assert note["id"] == office and note["may_supersede"] is False and "cannot supersede" in note["action"], shared
            refused = await a.call_tool("memory_supersede", {"id": office, "content": "The office is in Hamburg."})
            assert refused.is_error

            by_ops = payload(await o.call_tool("memory_remember", {"content": "The office is in Munich.", "scope": "project"}))
            assert {c["id"]: c["may_supersede"] for c in by_ops["contradicts"]} == {office: True}, by_ops
            done = payload(await o.call_tool("memory_supersede", {"id": office, "content": "The office is in Munich."}))
            assert done["supersedes"] == office
    finally:
        stop(proc)
