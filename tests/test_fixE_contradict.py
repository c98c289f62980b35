"""A contradiction notice never quotes a secret the write redacted (issue 27), on every surface: the provider's
``contradict``, ``contradiction_notes``, the agent tool and MCP's ``memory_remember``, and the CLI's ``remember``
(stdout and the stderr note); and a text is no contradiction of its own redacted copy. Files and PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from typing import Any

from agent_memory.backends.base import Caller
from agent_memory.consolidate.contradict import contradiction_notes

TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789AB"  # a GitHub token's shape (redacted as github_token)
SECRET_TEXT = f"The staging region is {TOKEN}."


async def test_contradictions_are_judged_on_the_redacted_text(backend: Any) -> None:
    m = backend.provider()
    old = await m.remember("The staging region is eu-west-1.", user_id="ada", scope="user")
    written = await m.remember(SECRET_TEXT, user_id="ada", scope="user")
    assert written.redactions == 1

    found = await m.contradict(SECRET_TEXT, user_id="ada")
    assert [c.id for c in found] == [old.id]  # not the record's own redacted copy
    assert TOKEN not in json.dumps([c.to_dict() for c in found]) and "REDACTED" in found[0].new_value
    notes = await contradiction_notes(m.backend, SECRET_TEXT, Caller(user_id="ada"), key=None, written=written.id)
    assert [n["id"] for n in notes] == [old.id] and TOKEN not in json.dumps(notes)


async def test_the_remember_tools_never_quote_the_secret(backend: Any) -> None:
    from _doubles import plain_tools

    from agent_memory.agents.tools import FOREGROUND, memory_toolset
    from agent_memory.mcp._config import Identity
    from agent_memory.mcp._tools import SPECS, Runtime

    m = backend.provider()
    old = await m.remember("The staging region is eu-west-1.", user_id="ada", scope="user")
    tools = plain_tools(memory_toolset(m, FOREGROUND, user_id="ada"))
    done = await tools["memory_remember"](content=SECRET_TEXT)
    assert [c["id"] for c in done["contradicts"]] == [old.id] and TOKEN not in json.dumps(done)

    other = await m.remember("The staging region is eu-west-1.", user_id="bea", scope="user")
    res = await SPECS["memory_remember"].run(Runtime(m), Identity(user_id="bea", access="own"), {"content": SECRET_TEXT})
    assert [c["id"] for c in res["contradicts"]] == [other.id] and TOKEN not in json.dumps(res)


def test_cli_remember_notice_shows_the_redacted_value(backend: Any) -> None:
    root = backend.target  # PostgreSQL: the URL's default schema, so a user of this test's own
    user = f"ada-{uuid.uuid4().hex[:6]}"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "agent_memory.cli", "--root", root, *args], capture_output=True, text=True, env=env, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done

    old = json.loads(cli("--json", "remember", "The staging region is eu-west-1.", "--user", user).stdout)["id"]
    done = cli("--json", "remember", SECRET_TEXT, "--user", user)
    doc = json.loads(done.stdout)
    assert [c["id"] for c in doc["contradicts"]] == [old] and f"this contradicts {old}" in done.stderr
    assert TOKEN not in done.stdout + done.stderr and "REDACTED" in done.stderr
