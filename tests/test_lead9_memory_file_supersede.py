"""A memory-tool file or a curated line is not a fact to supersede (last probe of 2026-11-28): ``memory_supersede``
of one made a successor fact take the file's key but not the file, so the file vanished from ``/memories``. The
contradiction note says ``may_supersede: false`` for it and both tools refuse it, naming the tool that changes it."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import ModelRetry

from agent_memory.backends.base import Caller
from agent_memory.model.supersession import tool_refusal


async def test_a_memory_tool_file_is_never_offered_or_taken_as_a_fact_to_supersede(backend: Any) -> None:
    from _doubles import plain_tools

    from agent_memory.agents.tools import FOREGROUND, memory_toolset
    from agent_memory.integrations.anthropic import MemoryToolHandler

    provider = backend.provider()
    tool = MemoryToolHandler(provider, user_id="alice")
    await tool.ahandle({"command": "create", "path": "/memories/server.md", "file_text": "The staging server is in eu-west-1.\n"})
    tools = plain_tools(memory_toolset(provider, FOREGROUND, caller=Caller(user_id="alice")))
    done = await tools["memory_remember"](content="The staging server is in us-east-1.")
    notes = [c for c in done.get("contradicts") or [] if "eu-west-1" in c["old_value"]]
    assert notes, done  # the file is still named as a contradiction: the caller should know
    assert not notes[0]["may_supersede"], notes
    with pytest.raises(ModelRetry, match="memory tool"):
        await tools["memory_supersede"](id=notes[0]["id"], content="The staging server is in us-west-2.")
    assert "eu-west-1" in await tool.ahandle({"command": "view", "path": "/memories/server.md"})  # the file is there


def test_the_rule_names_the_tool_that_changes_each_kind() -> None:
    assert tool_refusal("fact") is None and tool_refusal("preference") is None
    assert "memory tool" in (tool_refusal("memory_file") or "")
    assert "curate" in (tool_refusal("curated") or "")


@pytest.mark.parametrize("flag", ["--mode", "--decay", "--mmr", "--min-score"])
def test_argparse_never_echoes_a_refused_value_that_is_a_secret(flag: str, tmp_path: Any) -> None:
    """argparse quotes the value it refuses (an invalid choice or number): the CLI's parser shows a secret as such."""
    from agent_memory.cli._app import build_parser
    from agent_memory.cli._base import UsageError

    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    argv = ["--root", str(tmp_path / "m"), "search", "x", flag, token]
    with pytest.raises(UsageError) as err:
        build_parser(argv).parse_args(argv)
    assert token not in str(err.value) and ("REDACTED" in str(err.value) or "secret" in str(err.value)) and flag in str(err.value)
    argv = ["--root", str(tmp_path / "m"), "search", "x", flag, "bogus"]
    with pytest.raises(UsageError, match="'bogus'"):  # a plain bad value is still shown
        build_parser(argv).parse_args(argv)
