"""End to end over streamable HTTP: per-token identity, isolation, refusal without tokens, surviving disconnects."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx  # what the mcp SDK brings (no plain httpx without litellm)
import pytest
from _mcp_util import free_port, http_session, payload, resource_text, start_http, text, write_tokens

from agent_memory.backends.files.store import MemoryStore

ALICE, BOB = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "mem"
    MemoryStore(root).close()
    tokens = write_tokens(tmp_path / "tokens.json", {ALICE: {"user": "alice"}, BOB: {"user": "bob"}})
    port = free_port()
    proc = start_http(root, "--tokens", str(tokens), "--tools", "foreground", port=port)
    try:
        yield f"http://127.0.0.1:{port}/mcp", root
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


async def test_two_tokens_never_see_each_others_records(server: tuple[str, Path]) -> None:
    url, root = server
    async with http_session(url, ALICE) as a, http_session(url, BOB) as b:
        assert {t.name for t in (await a.list_tools()).tools} >= {"memory_search", "memory_forget"}
        ida = payload(await a.call_tool("memory_remember", {"content": "Alice's locker room is 4411."}))["id"]
        idb = payload(await b.call_tool("memory_remember", {"content": "Bob's locker room is 9922."}))["id"]
        assert [h["id"] for h in payload(await a.call_tool("memory_search", {"query": "locker code"}))["hits"]] == [ida]
        assert [h["id"] for h in payload(await b.call_tool("memory_search", {"query": "locker code"}))["hits"]] == [idb]
        assert [r["id"] for r in payload(await b.call_tool("memory_list", {}))["records"]] == [idb]
        stolen = await b.call_tool("memory_get", {"id": ida})
        assert stolen.is_error and "NotFoundError" in text(stolen)
        assert (await b.call_tool("memory_forget", {"id": ida})).is_error  # bob cannot delete alice's record
        core = resource_text(await a.read_resource("memory://core"))
        assert "4411" in core and "9922" not in core
        with pytest.raises(Exception, match="NotFoundError"):
            await a.read_resource(f"memory://records/{idb}")
        bad = await a.call_tool("memory_search", {"serch": "locker"})
        assert bad.is_error and "Call it as memory_search(query: string" in text(bad)
        recalled = payload(await b.call_tool("memory_recall", {"q": "what is my locker code?"}))
        assert "9922" in recalled["summary"] and "4411" not in recalled["summary"]
    store = MemoryStore(root)
    try:
        assert store.get(ida, user_id="alice").user_id == "alice" and store.get(idb, user_id="bob").user_id == "bob"
    finally:
        store.close()


async def test_no_token_or_wrong_token_is_refused(server: tuple[str, Path]) -> None:
    url, _ = server
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    async with httpx.AsyncClient(timeout=10) as http:
        for extra in ({}, {"authorization": "Bearer wrong-token-000000000000"}, {"authorization": f"Basic {ALICE}"}):
            r = await http.post(url, headers={**headers, **extra}, content=json.dumps(init))
            assert r.status_code == 401 and "unauthorized" in r.text
        ok = await http.post(url, headers={**headers, "authorization": f"Bearer {ALICE}"}, content=json.dumps(init))
        assert ok.status_code == 200


async def test_server_survives_a_client_that_disconnects_mid_call(server: tuple[str, Path]) -> None:
    url, _ = server
    async with http_session(url, ALICE) as a:
        for i in range(20):
            await a.call_tool("memory_remember", {"content": f"Filler memory number {i} about the harbour."})
    for _ in range(3):  # a call abandoned while in flight: the client's connection goes away under it

        async def abandon() -> None:
            async with http_session(url, ALICE) as s:
                await asyncio.wait_for(s.call_tool("memory_recall", {"message": "harbour memories"}), 0.01)

        with pytest.raises((TimeoutError, asyncio.TimeoutError, BaseExceptionGroup)):
            await abandon()
    async with httpx.AsyncClient(timeout=10) as http:  # raw: a POST whose connection is closed before the answer
        try:
            await http.post(
                url,
                headers={
                    "authorization": f"Bearer {ALICE}",
                    "accept": "application/json, text/event-stream",
                    "content-type": "application/json",
                },
                content=b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_list"}}',
                timeout=0.001,
            )
        except httpx.HTTPError:
            pass
    async with http_session(url, BOB) as b:  # still serving, and still isolated
        assert payload(await b.call_tool("memory_search", {"query": "harbour"}))["hits"] == []
    async with http_session(url, ALICE) as a:
        assert len(payload(await a.call_tool("memory_search", {"query": "harbour", "limit": 50}))["hits"]) == 20


async def test_loopback_without_tokens_uses_the_servers_identity(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    store = MemoryStore(root)
    store.remember("Carol writes Rust.", scope="user", user_id="carol")
    store.remember("Dave writes Go.", scope="user", user_id="dave")
    store.close()
    port = free_port()
    proc = start_http(root, "--user", "carol", "--tools", "read", port=port)
    try:
        async with http_session(f"http://127.0.0.1:{port}/mcp") as s:
            hits = payload(await s.call_tool("memory_search", {"query": "writes"}))["hits"]
            assert [h["snippet"] for h in hits] and all("Carol" in h["snippet"] for h in hits)
            bad = await s.call_tool("memory_remember", {"content": "x"})
            assert bad.is_error and "unknown tool" in text(bad)
    finally:
        proc.terminate()
        proc.wait(10)
