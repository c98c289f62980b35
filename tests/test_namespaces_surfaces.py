"""Namespaces through the CLI (a real subprocess) and MCP (stdio flags, HTTP tokens), on files and PostgreSQL.

The minimums of issue 29: an agent in ``acme/support`` with ``full`` isolation cannot find a record written in
``acme/coding``; with ``inherited`` it finds one written in ``acme``; with ``shared`` it finds one in
``acme/coding`` only after ``acme/coding`` is marked shared; a write lands in the writer's namespace whatever
its arguments say; two users in one namespace stay apart.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from _matrix import cli_env, fresh_database
from _mcp_util import PY, free_port, http_session, payload, server_env, start_http, stop, text, write_tokens
from mcp import ClientSession, StdioServerParameters, stdio_client

from agent_memory.errors import InvalidInputError
from agent_memory.mcp._config import ConfigError, Identity

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(params=["files", "postgres"])
def root(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh files root or a fresh PostgreSQL database (the CLI and MCP use its default schema)."""
    if request.param == "postgres":
        from _pg import require_psycopg, server

        require_psycopg()
        return fresh_database(server().url)
    (tmp_path / "mem" / "records").mkdir(parents=True)  # what `agent-memory init` makes: `mcp` never creates a root
    return str(tmp_path / "mem")


def cli(root: str, *args: str, ok: bool = True) -> Any:
    proc = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", root, *args, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(),
    )
    if not ok:
        assert proc.returncode != 0
        return json.loads(proc.stdout)["error"]
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _ids(doc: Any) -> set[str]:
    return {h["id"] for h in doc.get("hits", doc.get("records", []))}


def test_cli_isolation_minimums(root: str) -> None:
    coding = cli(root, "remember", "The acme build uses the turbocharger cache.", "--scope", "project", "--namespace", "acme/coding")["id"]
    parent = cli(root, "remember", "The acme escalation rota lives in the wiki.", "--scope", "project", "--namespace", "acme")["id"]
    own = cli(root, "remember", "Refunds above 500 need a manager (acme).", "--scope", "project", "--namespace", "acme/support")["id"]
    full = ("--namespace", "acme/support", "--isolation", "full")
    assert _ids(cli(root, "search", "turbocharger", *full)) == set()
    assert _ids(cli(root, "search", "acme", *full)) == {own}
    assert _ids(cli(root, "list", *full)) == {own}
    assert cli(root, "get", coding, *full, ok=False)["type"] == "NotFoundError"
    assert _ids(cli(root, "search", "acme", "--namespace", "acme/support")) == {own, parent}  # inherited: the parent too
    shared = ("--namespace", "acme/support", "--isolation", "shared")
    assert _ids(cli(root, "search", "turbocharger", *shared)) == set()
    assert cli(root, "namespace", "acme/coding", "--shared") == {"namespace": "acme/coding", "shared": True, "isolation": None}
    assert _ids(cli(root, "search", "turbocharger", *shared)) == {coding}
    assert cli(root, "namespace")["namespaces"] == {"acme/coding": {"shared": True, "isolation": None}}
    assert _ids(cli(root, "search", "turbocharger", *full)) == set()  # full ignores the mark
    # the root (no --namespace) sees what it always saw: root records only
    assert _ids(cli(root, "search", "acme")) == set()
    # recall and inject in the caller's view
    recalled = cli(root, "recall", "turbocharger cache and refunds", *full)
    assert coding not in json.dumps(recalled) and "turbocharger" not in recalled["summary"]
    assert "turbocharger" not in cli(root, "inject", *full)["text"] and "Refunds" in cli(root, "inject", *full)["text"]


def test_cli_writes_land_in_the_callers_namespace_and_users_stay_apart(root: str, tmp_path: Path) -> None:
    drafts = tmp_path / "drafts.jsonl"
    drafts.write_text(json.dumps({"content": "Imported into coding?", "scope": "project", "namespace": "acme/coding"}) + "\n")
    cli(root, "import", str(drafts), "--format", "drafts", "--namespace", "acme/support")
    assert _ids(cli(root, "list", "--namespace", "acme/coding", "--isolation", "full")) == set()
    [rec] = cli(root, "list", "--namespace", "acme/support", "--isolation", "full")["records"]
    assert rec["namespace"] == "acme/support" and rec["content"] == "Imported into coding?"
    alice = cli(root, "remember", "Alice's locker room is 4411.", "--user", "alice", "--namespace", "acme/support")["id"]
    assert _ids(cli(root, "search", "locker", "--user", "bob", "--namespace", "acme/support")) == set()
    assert _ids(cli(root, "search", "locker", "--user", "alice", "--namespace", "acme/support")) == {alice}
    assert _ids(cli(root, "search", "locker", "--user", "alice", "--namespace", "acme/coding", "--isolation", "full")) == set()
    # a change stays in the caller's own namespace: the child cannot forget its parent's record
    parent = cli(root, "remember", "Parent note", "--scope", "project", "--namespace", "acme")["id"]
    assert cli(root, "forget", parent, "--namespace", "acme/support", ok=False)["type"] == "NotFoundError"
    assert cli(root, "get", parent, "--namespace", "acme")["id"] == parent
    # a bad namespace is a usage-level error naming the rule
    assert "segments" in cli(root, "search", "x", "--namespace", "Acme/../x", ok=False)["message"]
    # an export for a namespace carries it, and holds only what that namespace sees
    out = tmp_path / "ns.jsonl"
    cli(root, "export", "--out", str(out), "--namespace", "acme/support", "--isolation", "full")
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[0]["caller"]["namespace"] == "acme/support"
    assert {x["namespace"] for x in lines[1:]} == {"acme/support"} and parent not in {x["id"] for x in lines[1:]}


# -- MCP ---------------------------------------------------------------------------------------------------------------
@asynccontextmanager
async def stdio_session(root: str, *args: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=PY, args=["-m", "agent_memory.mcp", "--root", root, *args], env=server_env())
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def test_mcp_stdio_namespace_flags(root: str) -> None:
    async with stdio_session(root, "--namespace", "acme/coding") as coding:
        cid = payload(await coding.call_tool("memory_remember", {"content": "Coding: turbocharger cache", "scope": "project"}))["id"]
    async with stdio_session(root, "--namespace", "acme") as acme:
        aid = payload(await acme.call_tool("memory_remember", {"content": "Acme: escalation rota", "scope": "project"}))["id"]
    async with stdio_session(root, "--namespace", "acme/support", "--isolation", "full") as s:
        assert payload(await s.call_tool("memory_search", {"query": "turbocharger"}))["hits"] == []
        assert payload(await s.call_tool("memory_search", {"query": "escalation"}))["hits"] == []
        got = await s.call_tool("memory_get", {"id": cid})
        assert got.is_error and "NotFoundError" in text(got)
        assert payload(await s.call_tool("memory_list", {}))["records"] == []
        # a tool argument never chooses the namespace
        sneaky = await s.call_tool("memory_remember", {"content": "Support: sneaky", "scope": "project", "namespace": "acme/coding"})
        assert sneaky.is_error and "namespace" in text(sneaky)
        own = payload(await s.call_tool("memory_remember", {"content": "Support: own note", "scope": "project"}))["id"]
        assert payload(await s.call_tool("memory_get", {"id": own}))["namespace"] == "acme/support"
    async with stdio_session(root, "--namespace", "acme/support") as s:
        assert [h["id"] for h in payload(await s.call_tool("memory_search", {"query": "escalation"}))["hits"]] == [aid]
        assert payload(await s.call_tool("memory_search", {"query": "turbocharger"}))["hits"] == []
    async with stdio_session(root, "--namespace", "acme/coding", "--isolation", "full") as coding:
        listed = payload(await coding.call_tool("memory_list", {}))["records"]
        assert [r["id"] for r in listed] == [cid]  # nothing of support's landed in coding


def test_token_config_names_namespace_and_isolation() -> None:
    ident = Identity.from_mapping({"user": "alice", "namespace": "acme/support", "isolation": "full"}, "tokens.json")
    assert ident.caller.namespace == "acme/support" and ident.caller.isolation == "full"
    with pytest.raises(ConfigError, match="segments"):
        Identity.from_mapping({"namespace": "acme//x"}, "tokens.json")
    with pytest.raises(ConfigError, match="isolation"):
        Identity.from_mapping({"namespace": "acme", "isolation": "open"}, "tokens.json")
    with pytest.raises(InvalidInputError, match="segments"):  # the Python API refuses it the same way
        Identity(namespace="a b")


async def test_mcp_http_tokens_carry_their_namespace(root: str, tmp_path: Path) -> None:
    if "://" not in root:
        Path(root).mkdir(exist_ok=True)
        (Path(root) / "records").mkdir(exist_ok=True)
    support, coding, shared = "support-token-0123456789", "coding-token-01234567890", "shared-token-01234567890"
    tokens = write_tokens(
        tmp_path / "tokens.json",
        {
            support: {"user": "alice", "namespace": "acme/support", "isolation": "full"},
            coding: {"user": "alice", "namespace": "acme/coding"},
            shared: {"user": "alice", "namespace": "acme/support", "isolation": "shared"},
        },
    )
    port = free_port()
    proc = start_http(Path(root) if "://" not in root else root, "--tokens", str(tokens), "--tools", "foreground", port=port)  # type: ignore[arg-type]
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        async with http_session(url, coding) as c, http_session(url, support) as s, http_session(url, shared) as sh:
            cid = payload(await c.call_tool("memory_remember", {"content": "Coding: turbocharger cache", "scope": "project"}))["id"]
            assert payload(await s.call_tool("memory_search", {"query": "turbocharger"}))["hits"] == []
            recalled = payload(await s.call_tool("memory_recall", {"message": "turbocharger cache?"}))
            assert "turbocharger" not in recalled["summary"]
            assert payload(await sh.call_tool("memory_search", {"query": "turbocharger"}))["hits"] == []
            cli(root, "namespace", "acme/coding", "--shared")
            assert [h["id"] for h in payload(await sh.call_tool("memory_search", {"query": "turbocharger"}))["hits"]] == [cid]
            assert payload(await s.call_tool("memory_search", {"query": "turbocharger"}))["hits"] == []
    finally:
        stop(proc)
