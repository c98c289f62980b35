"""New-user findings where CLI, consolidation and the memory tool meet (issue 27, fixG): each from the CLI (a real
subprocess) where it has a command, on both backends where it applies."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from agent_memory.integrations.anthropic import MemoryToolHandler
from agent_memory.provider import MemoryProvider

KINDS = ["files", "postgres"]


def _store(kind: str, tmp_path: Path) -> str:
    if kind == "postgres":
        from _matrix import fresh_database
        from _pg import require_psycopg, server

        require_psycopg()
        return fresh_database(server().url)  # its own database: the CLI's default schema is shared by the session
    root = str(tmp_path / "mem")
    subprocess.run([sys.executable, "-m", "agent_memory.cli", "init", root], check=True, capture_output=True, timeout=120)
    return root


def _cli(root: str, *args: str, ok: bool = True, code: int | None = None) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", root, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    if code is not None:
        assert out.returncode == code, (args, out.stdout, out.stderr)
    else:
        assert (out.returncode == 0) is ok, (args, out.stdout, out.stderr)
    return out


def _hinted(stderr: str, command: str) -> list[list[str]]:
    """The `agent-memory <command> …` lines a hint printed, as argument lists (without `agent-memory`)."""
    found = []
    for line in stderr.replace("`", "\n").splitlines():
        line = line.strip()
        if line.startswith(f"agent-memory {command}"):
            words = shlex.split(line)[1:]
            if words[-2:-1] == ["--root"]:  # a files root's hints end with it (tests/test_hint_root.py)
                words = words[:-2]
            found.append(words)
    return found


def _ids(root: str, *who: str) -> set[str]:
    return {r["id"] for r in json.loads(_cli(root, "--json", "list", *who).stdout)["records"]}


# -- 1. mcp never creates a root ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("where", "transport"), [("typo-root", "stdio"), ("nope/deep", "http")])
def test_mcp_refuses_a_missing_root_and_creates_nothing(tmp_path: Path, where: str, transport: str) -> None:
    pytest.importorskip("mcp")
    root = tmp_path / where
    out = _cli(str(root), "mcp", "--user", "a", "--transport", transport, "--port", "1", ok=False)
    assert "no memory root at" in out.stderr and f"agent-memory init {root}" in out.stderr, out.stderr
    assert not root.exists() and not (tmp_path / "nope").exists()


# -- 2. the recovery hints of consolidate, tidy and episodes delete run as printed -------------------------------------
def _seed_near_duplicates(root: str, user: str, shared: str) -> None:
    _cli(root, "remember", "Ada drinks green tea every morning at the office.", "--user", user, "--scope", "user")
    _cli(root, "remember", "Ada drinks green tea every morning at the office!", "--user", user, "--scope", "user")
    _cli(root, "remember", shared, "--scope", "project")


def test_consolidate_hinted_undo_undoes_that_pass_not_the_shared_record(tmp_path: Path) -> None:
    root = _store("files", tmp_path)
    _seed_near_duplicates(root, "ada", "Shared: the office closes at six.")
    before_ada, before_all = _ids(root, "--user", "ada"), _ids(root)
    out = _cli(root, "consolidate", "--max-share", "1")
    undos = _hinted(out.stderr, "undo")
    assert undos == [["undo", "--user", "ada"]], out.stderr
    assert _ids(root, "--user", "ada") != before_ada  # one of ada's copies was archived
    _cli(root, *undos[0])
    assert _ids(root, "--user", "ada") == before_ada and _ids(root) == before_all  # ada's back, the shared one stays
    # the archive event names who ran the pass (the CLI), not the API
    events = json.loads(_cli(root, "--json", "events", "--user", "ada").stdout)["events"]
    assert [e["actor"] for e in events if e["event"] == "archived"] == ["cli"]


def test_consolidate_hinted_restore_brings_the_users_record_back(tmp_path: Path) -> None:
    root = _store("files", tmp_path)
    _seed_near_duplicates(root, "ada", "Shared: the office closes at six.")
    before = _ids(root, "--user", "ada")
    out = _cli(root, "consolidate", "--max-share", "1")
    restores = _hinted(out.stderr, "restore")
    assert len(restores) == 1 and restores[0][-2:] == ["--user", "ada"], out.stderr
    _cli(root, *restores[0])
    assert _ids(root, "--user", "ada") == before


@pytest.mark.parametrize("kind", KINDS)
def test_tidy_hints_undo_and_restore_as_the_owner(kind: str, tmp_path: Path) -> None:
    root = _store(kind, tmp_path)
    ada = f"ada-{uuid.uuid4().hex[:8]}"
    _cli(root, "remember", f"{ada} drinks  green tea.", "--user", ada, "--scope", "user")
    _cli(root, "remember", f"{ada} drinks green tea.", "--user", ada, "--scope", "user")
    before = _ids(root, "--user", ada)
    out = _cli(root, "tidy", "--user", ada, "--max-share", "1") if kind == "postgres" else _cli(root, "tidy", "--max-share", "1")
    assert len(_ids(root, "--user", ada)) == 1
    undos, restores = _hinted(out.stderr, "undo"), _hinted(out.stderr, "restore")
    assert undos == [["undo", "--user", ada]] and len(restores) == 1 and restores[0][-2:] == ["--user", ada], out.stderr
    _cli(root, *undos[0])
    assert _ids(root, "--user", ada) == before


def test_episodes_delete_hint_restores_a_users_episode(tmp_path: Path) -> None:
    root = _store("files", tmp_path)

    async def record() -> str:
        async with MemoryProvider(root) as memory:
            return (await memory.record_episode("plan the week", user_id="ada", session_id="s1")).id

    eid = asyncio.run(record())
    out = _cli(root, "episodes", "delete", eid, "--user", "ada")
    hinted = _hinted(out.stdout + out.stderr, "episodes")
    assert hinted == [["episodes", "restore", eid, "--user", "ada"]], out.stdout
    _cli(root, *hinted[0])
    assert eid in _cli(root, "episodes", "--user", "ada").stdout


# -- 3. consolidation never merges a record into a memory-tool file ----------------------------------------------------
def test_consolidate_leaves_memory_tool_files_out_of_duplicate_detection(tmp_path: Path) -> None:
    root = _store("files", tmp_path)
    text = "Standup is at nine every weekday morning."

    async def seed() -> None:
        async with MemoryProvider(root) as memory:
            await memory.remember(text, user_id="al", scope="user")
            await MemoryToolHandler(memory, user_id="al").execute({"command": "create", "path": "/memories/a.md", "file_text": text})

    asyncio.run(seed())
    before = _ids(root, "--user", "al")
    assert len(before) == 2
    out = _cli(root, "--json", "consolidate", "--max-share", "1")
    assert json.loads(out.stdout)["changes"] == []
    assert _ids(root, "--user", "al") == before


# -- 4. a memory-tool file round-trips byte for byte through forget and undo -------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_memory_tool_file_keeps_its_trailing_newline_through_forget_and_undo(kind: str, tmp_path: Path) -> None:
    root = _store(kind, tmp_path)
    user = f"al-{uuid.uuid4().hex[:8]}"
    body = "hello world\n"

    async def create() -> str:
        async with MemoryProvider(root) as memory:
            await MemoryToolHandler(memory, user_id=user).execute({"command": "create", "path": "/memories/a.md", "file_text": body})
            (rec,) = await memory.list(user_id=user)
            return rec.id

    rid = asyncio.run(create())
    _cli(root, "forget", rid, "--user", user)
    _cli(root, "undo", "--user", user)

    async def read() -> Any:
        async with MemoryProvider(root) as memory:
            return await memory.get(rid, user_id=user)

    assert asyncio.run(read()).content == body


# -- 5. history of a superseded record says so, and by which record ----------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_history_of_a_superseded_record_names_its_successor(kind: str, tmp_path: Path) -> None:
    root = _store(kind, tmp_path)
    user = f"u-{uuid.uuid4().hex[:8]}"
    old = json.loads(_cli(root, "--json", "remember", "Deploy day is Monday.", "--user", user).stdout)["id"]
    new = json.loads(_cli(root, "--json", "remember", "Deploy day is Friday.", "--user", user, "--supersede", old).stdout)["id"]
    doc = json.loads(_cli(root, "--json", "history", old, "--user", user).stdout)
    assert doc["state"] == "live" and doc["superseded_by"] == new  # still in the records, no longer current
    assert not any(v["current"] for v in doc["versions"])
    assert [e["id"] for e in doc["events"] if e["event"] == "superseded"] == [new]
    text = _cli(root, "history", old, "--user", user).stdout
    assert f"(superseded by {new})" in text and "(current)" not in text and "(live)" not in text


# -- 6. usage errors name the flag and the root ------------------------------------------------------------------------
def test_a_path_inside_a_root_names_the_root(tmp_path: Path) -> None:
    root = _store("files", tmp_path)
    out = _cli(str(Path(root) / "records"), "search", "x", ok=False)
    assert f"inside the memory root {root}" in out.stderr and "agent-memory init" not in out.stderr, out.stderr


@pytest.mark.parametrize(("scope", "flag"), [("user", "--user"), ("session", "--session")])
def test_remember_a_scope_without_its_owner_is_a_usage_error(tmp_path: Path, scope: str, flag: str) -> None:
    root = _store("files", tmp_path)
    out = _cli(root, "remember", "x", "--scope", scope, code=2)
    assert f"needs {flag}" in out.stderr, out.stderr


@pytest.mark.parametrize(("command", "flag"), [("search", "--as-of"), ("list", "--created-after")])
def test_an_unreadable_date_flag_is_a_usage_error_naming_it(tmp_path: Path, command: str, flag: str) -> None:
    root = _store("files", tmp_path)
    args = [command, "x"] if command == "search" else [command]
    out = _cli(root, *args, flag, "yesterday", code=2)
    assert f"{flag} 'yesterday' is not a date" in out.stderr, out.stderr
