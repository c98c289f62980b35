"""What a namespaced caller is told, from the CLI on both backends (fixH 4-5).

- ``forget ID`` / ``episodes delete ID`` from ``--namespace acme/support`` on an item of the root namespace said
  "no record … visible to this caller" while ``get``/``episodes show`` showed it to that very caller. They now say
  that only records of the caller's own namespace can be changed (still a ``NotFoundError``, exit 1); an item the
  caller cannot read keeps the old message, so nothing new is told about it.
- ``sessions summarize --idle --json`` and ``sessions distill --json`` listed two identical
  ``{"session_id": "chat-1", "user_id": "alice"}`` entries for the root's and acme/support's logs: each entry now
  names its namespace as ``sessions --json`` does (the key only for a namespace other than the root).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _matrix import cli_env, fresh_database

from agent_memory import MemoryProvider

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

NS = ["--namespace", "acme/support"]
OWN_ONLY = "only records of the caller's own namespace can be changed"


@pytest.fixture(params=["files", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        from _pg import require_psycopg, server

        require_psycopg()
        return fresh_database(server().url)
    return str(tmp_path / "mem")


def am(root: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", root, *args, "--json"],
        capture_output=True,
        text=True,
        timeout=180,
        env=cli_env(),
    )


def ok(root: str, *args: str) -> Any:
    proc = am(root, *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def refused(root: str, *args: str) -> str:
    proc = am(root, *args)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    error = json.loads(proc.stdout)["error"]
    assert error["type"] == "NotFoundError", error
    return str(error["message"])


def test_changing_an_item_of_another_namespace_says_why(store: str) -> None:
    async def seed() -> tuple[str, str, str]:
        async with MemoryProvider(store) as p:
            mine = await p.remember("Alice's root note: the vault is blue.", user_id="alice")
            bobs = await p.remember("Bob's root note: the shed is green.", user_id="bob")
            episode = await p.record_episode("alice deploys billing", user_id="alice")
            return mine.id, bobs.id, episode.id

    mine, bobs, episode = asyncio.run(seed())
    assert ok(store, "get", mine, "--user", "alice", *NS)["id"] == mine  # the caller reads it
    message = refused(store, "forget", mine, "--user", "alice", *NS)
    assert OWN_ONLY in message and "root namespace" in message and "acme/support" in message, message
    assert ok(store, "get", mine, "--user", "alice")["id"] == mine  # nothing changed
    hidden = refused(store, "forget", bobs, "--user", "alice", *NS)  # bob's: not readable by alice
    assert hidden.startswith(f"no record {bobs!r} visible to this caller (")  # the fixed hint (model.wording) follows
    assert ok(store, "episodes", "show", episode, "--user", "alice", *NS)["id"] == episode
    message = refused(store, "episodes", "delete", episode, "--user", "alice", *NS)
    assert OWN_ONLY in message and "root namespace" in message, message
    assert ok(store, "episodes", "show", episode, "--user", "alice")["id"] == episode
    assert "visible to this caller" in refused(store, "episodes", "delete", episode, "--user", "bob", *NS)


TALK = "I moved to Lisbon last spring and I work on the billing team."


def test_tended_sessions_name_their_namespace(store: str) -> None:
    async def seed() -> None:
        async with MemoryProvider(store) as p:
            for ns in (None, "acme/support"):
                msg = {"role": "user", "text": TALK, "at": "2026-04-20T10:00:00Z"}
                await p.log_messages([msg], session_id="chat-1", user_id="alice", namespace=ns)

    asyncio.run(seed())
    listed = ok(store, "sessions", "--user", "alice", *NS, "--isolation", "full")["sessions"]
    assert [s.get("namespace") for s in listed] == ["acme/support"]  # how `sessions --json` names it
    want = ["", "acme/support"]
    summarized = ok(store, "sessions", "summarize", "--idle")["summarized"]
    assert sorted(s.get("namespace", "") for s in summarized) == want
    assert all(s["session_id"] == "chat-1" and s["user_id"] == "alice" for s in summarized)
    distilled = ok(store, "sessions", "distill")["sessions"]
    assert sorted(s.get("namespace", "") for s in distilled) == want
