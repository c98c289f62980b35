"""Seams between the CLI, MCP and the rules' homes (task fixT), one regression test per finding:

1. a memory-tool file or a curated line is not a fact to supersede on *any* surface: the backends refuse it
   (:func:`~agent_memory.model.supersession.check_supersede`), so ``MemoryProvider.supersede``, ``remember(supersedes=)``
   and the CLI's ``remember --supersede ID`` refuse it as the tools and MCP do, both backends; an import still writes a
   file's chain of versions back; the CLI's notice says what such a record is instead of "another partition";
2. ``on_existing`` replace/skip without a ``memory_key`` is refused by MCP, the agent tools and ``MemoryStore`` as by
   the API and the CLI (:func:`~agent_memory.model.drafts.check_on_existing`);
3. the CLI's missing-extra error is :class:`agent_memory.errors.MissingExtraError`;
4. the CLI's parser redacts each quoted value with one call of ``shown``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _doubles import cli_json, cli_target

from agent_memory.errors import InvalidInputError
from agent_memory.model.drafts import MemoryDraft


async def _file_and_line(provider: Any) -> tuple[str, str]:
    """Alice's memory-tool file (staging server) and curated line (deploy day): their record ids."""
    from agent_memory.integrations.anthropic import MemoryToolHandler

    tool = MemoryToolHandler(provider, user_id="alice")
    await tool.ahandle({"command": "create", "path": "/memories/server.md", "file_text": "The staging server is in eu-west-1.\n"})
    line = await provider.curate("Deploys happen on Fridays.", priority=8, user_id="alice")
    (file,) = [r for r in await provider.list(user_id="alice", kind="memory_file")]
    return file.id, line.id


async def test_the_api_refuses_to_supersede_a_memory_file_or_a_curated_line(backend: Any) -> None:
    provider = backend.provider()
    file_id, line_id = await _file_and_line(provider)
    before = sorted((r.id, r.content) for r in await provider.list(user_id="alice", include_superseded=True))
    for rid, tool in ((file_id, "memory tool"), (line_id, "curate")):
        draft = MemoryDraft("The staging server is in us-east-1.", user_id="alice", scope="user")
        with pytest.raises(InvalidInputError, match=tool):
            await provider.supersede(rid, draft)
        with pytest.raises(InvalidInputError, match=tool):
            await provider.remember("The staging server is in us-east-1.", user_id="alice", scope="user", supersedes=rid)
        with pytest.raises(InvalidInputError, match=tool):  # remember_many's default source is "import": not of that kind
            await provider.remember_many([_with(draft, rid)])
    after = sorted((r.id, r.content) for r in await provider.list(user_id="alice", include_superseded=True))
    assert after == before  # nothing written, nothing superseded
    curated = await provider.curated(user_id="alice")
    assert [ln.id for ln in curated] == [line_id]


def _with(draft: MemoryDraft, supersedes: str) -> MemoryDraft:
    import dataclasses

    return dataclasses.replace(draft, supersedes=supersedes)


def test_an_import_still_writes_a_memory_files_versions_back(tmp_path: Path) -> None:
    """The backends' refusal leaves the import alone: a replaced file's chain (old version, current) comes back."""
    import asyncio

    from agent_memory import MemoryProvider, MemoryStore, export_records, import_file

    async def make() -> None:
        from agent_memory.integrations.anthropic import MemoryToolHandler

        async with MemoryProvider(tmp_path / "src") as provider:
            tool = MemoryToolHandler(provider, user_id="alice")
            await tool.ahandle({"command": "create", "path": "/memories/server.md", "file_text": "Staging: eu-west-1.\n"})
            await tool.ahandle({"command": "str_replace", "path": "/memories/server.md", "old_str": "eu-west-1", "new_str": "us-east-1"})

    asyncio.run(make())
    with MemoryStore(tmp_path / "src") as src:
        assert export_records(src, tmp_path / "out.jsonl") == 2
    with MemoryStore(tmp_path / "dst") as dst:
        report = import_file(dst, tmp_path / "out.jsonl")
        assert not report.skipped, report.to_dict()
        records = dst.list(user_id="alice", include_superseded=True, limit=None)
        assert sorted((r.kind, r.content.strip(), bool(r.superseded_by)) for r in records) == [
            ("memory_file", "Staging: eu-west-1.", True),
            ("memory_file", "Staging: us-east-1.", False),
        ]


def _remember(target: str, *args: str) -> tuple[int, dict[str, Any], str]:
    out = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", target, "--json", "remember", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return out.returncode, json.loads(out.stdout), out.stderr


def _seeded(kind: str, tmp_path: Path) -> tuple[str, str, str]:
    """A CLI target holding alice's memory-tool file and curated line, and their ids."""
    import asyncio

    from agent_memory import MemoryProvider

    target = cli_target(kind, tmp_path)

    async def seed() -> tuple[str, str]:
        async with MemoryProvider(target) as provider:
            return await _file_and_line(provider)

    return (target, *asyncio.run(seed()))


@pytest.mark.parametrize("kind", ["files", "postgres"])
def test_the_cli_refuses_to_supersede_a_memory_file_or_a_curated_line(kind: str, tmp_path: Path) -> None:
    target, file_id, line_id = _seeded(kind, tmp_path)
    for rid, tool in ((file_id, "memory tool"), (line_id, "curate")):
        rc, doc, err = _remember(target, "The staging server is in us-east-1.", "--user", "alice", "--supersede", rid)
        assert rc != 0 and doc["error"]["type"] == "InvalidInputError" and tool in doc["error"]["message"], (doc, err)
    listed = cli_json(target, "list", "--user", "alice", "--include-superseded")["records"]
    assert sorted(r["id"] for r in listed) == sorted([file_id, line_id])  # nothing written, nothing superseded


@pytest.mark.parametrize("kind", ["files", "postgres"])
def test_the_cli_notice_says_a_memory_file_is_no_fact_to_supersede(kind: str, tmp_path: Path) -> None:
    target, file_id, _ = _seeded(kind, tmp_path)
    rc, doc, err = _remember(target, "The staging server is in us-east-1.", "--user", "alice")  # contradicts the file
    assert rc == 0 and file_id in [c["id"] for c in doc["contradicts"]], (doc, err)
    assert "memory file is not a fact to supersede" in err and "another partition" not in err, err
    rc, doc, err = _remember(target, "The staging server is in us-west-2.", "--user", "alice", "--supersede")
    assert rc == 0 and doc.get("superseded") != file_id, (doc, err)  # picks alice's own fact, never the file


@pytest.mark.parametrize("kind", ["files", "postgres"])
async def test_mcp_refuses_on_existing_without_a_memory_key_and_superseding_a_file(kind: str, tmp_path: Path) -> None:
    from _mcp_util import PY, payload, server_env, text
    from mcp import ClientSession, StdioServerParameters, stdio_client

    from agent_memory import MemoryProvider

    target = cli_target(kind, tmp_path)
    async with MemoryProvider(target) as provider:
        file_id, line_id = await _file_and_line(provider)
    params = StdioServerParameters(command=PY, args=["-m", "agent_memory.mcp", "--root", target, "--user", "alice"], env=server_env())
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        for mode in ("replace", "skip"):
            bad = await s.call_tool("memory_remember", {"content": f"The boiler code is 44{mode}.", "on_existing": mode})
            assert bad.is_error and "needs a memory_key" in text(bad), text(bad)
        ok = payload(await s.call_tool("memory_remember", {"content": "The boiler code is 4411.", "on_existing": "append"}))
        assert ok["status"] == "created"
        for rid, tool in ((file_id, "memory tool"), (line_id, "curate")):  # the backend's refusal, as MCP shows it
            bad = await s.call_tool("memory_supersede", {"id": rid, "content": "The staging server is in us-east-1."})
            assert bad.is_error and tool in text(bad), text(bad)
        listed = payload(await s.call_tool("memory_list", {"kind": "fact"}))
        assert [r["id"] for r in listed["records"]] == [ok["id"]]  # the refused calls wrote nothing


async def test_the_agent_tools_and_the_store_refuse_on_existing_without_a_memory_key(tmp_path: Path) -> None:
    from _doubles import plain_tools
    from pydantic_ai import ModelRetry

    from agent_memory import MemoryProvider, MemoryStore
    from agent_memory.agents.tools import FOREGROUND, memory_toolset
    from agent_memory.backends.base import Caller

    async with MemoryProvider(tmp_path / "m") as provider:
        tools = plain_tools(memory_toolset(provider, FOREGROUND, caller=Caller(user_id="ada")))
        with pytest.raises(ModelRetry, match="needs a memory_key"):
            await tools["memory_remember"](content="The boiler code is 4411.", on_existing="replace")
        assert await provider.list(user_id="ada") == []
    with MemoryStore(tmp_path / "m") as store:
        with pytest.raises(InvalidInputError, match="needs a memory_key"):
            store.remember("The boiler code is 4411.", user_id="ada", on_existing="skip")
        assert store.list(user_id="ada") == []


def test_the_cli_missing_extra_error_is_the_librarys(monkeypatch: pytest.MonkeyPatch) -> None:
    import agent_memory.errors
    from agent_memory.cli._target import open_url

    monkeypatch.setitem(sys.modules, "agent_memory.backends.postgres", None)  # as without the extra installed
    with pytest.raises(agent_memory.errors.MissingExtraError) as caught:
        open_url("postgresql://user@127.0.0.1:1/memory")
    assert caught.value.extra == "postgres" and "pip install 'agent-memory[postgres]'" in str(caught.value)
    assert str(caught.value).startswith("--root postgresql://… needs the PostgreSQL backend")


def test_the_parser_redacts_each_quoted_value_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import agent_memory.cli._base as base
    from agent_memory.cli._app import build_parser

    calls: list[object] = []
    real = base.shown

    def counting(value: object) -> str:
        calls.append(value)
        return real(value)

    monkeypatch.setattr(base, "shown", counting)
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    argv = ["--root", str(tmp_path / "m"), "search", "x", "--mode", token]
    with pytest.raises(base.UsageError) as err:
        build_parser(argv).parse_args(argv)
    assert token not in str(err.value)
    quoted = [v for v in calls if v == token]
    assert len(quoted) == 1, calls


async def test_a_tools_contradiction_note_says_what_a_memory_file_is(backend: Any) -> None:
    """The tools' (and MCP's) note names the memory tool, not "another partition", for a file the caller owns."""
    from _doubles import plain_tools

    from agent_memory.agents.tools import FOREGROUND, memory_toolset
    from agent_memory.backends.base import Caller

    provider = backend.provider()
    file_id, _ = await _file_and_line(provider)
    tools = plain_tools(memory_toolset(provider, FOREGROUND, caller=Caller(user_id="alice")))
    done = await tools["memory_remember"](content="The staging server is in us-east-1.")
    (note,) = [c for c in done.get("contradicts") or [] if c["id"] == file_id]
    assert note["may_supersede"] is False and "memory tool" in note["action"] and "partition" not in note["action"], note
