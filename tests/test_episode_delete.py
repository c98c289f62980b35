"""Episodes record ``git_sha`` and ``verify_exit``, and one episode can be deleted by id (evented, restorable)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from agent_memory import InvalidInputError, NotFoundError
from agent_memory.episodes import build_episode, parse_episode


def test_git_sha_and_verify_exit_are_checked_and_read_back() -> None:
    episode = build_episode("fix the flaky test", git_sha="ABCDEF0123", verify_exit=1, user_id="ada")
    again = parse_episode(episode.render(), episode.id)
    assert (again.git_sha, again.verify_exit) == ("abcdef0123", 1)
    assert "commit abcdef0123, verification exit 1" in episode.body()
    for bad in ({"git_sha": "not-a-sha"}, {"git_sha": "ghp_" + "a" * 36}, {"verify_exit": 999}, {"verify_exit": True}):
        with pytest.raises(InvalidInputError):
            build_episode("x", **bad)  # type: ignore[arg-type]


async def test_record_delete_restore_on_both_backends(backend: Any) -> None:
    provider = backend.provider()
    mine = await provider.record_episode("deploy billing", user_id="alice", git_sha="0a1b2c3d", verify_exit=0, tool_calls=["test"])
    bobs = await provider.record_episode("deploy search", user_id="bob", git_sha="ffff0000", verify_exit=2)
    got = await provider.episode(mine.id, user_id="alice")
    assert (got.git_sha, got.verify_exit) == ("0a1b2c3d", 0)
    with pytest.raises(NotFoundError):
        await provider.delete_episode(bobs.id, user_id="alice")  # alice cannot delete bob's
    assert [e.id for e in await provider.episodes(user_id="bob")] == [bobs.id]
    await provider.delete_episode(mine.id, user_id="alice")
    assert await provider.episodes(user_id="alice") == []
    assert await provider.episodes("billing", user_id="alice") == []
    with pytest.raises(NotFoundError):
        await provider.episode(mine.id, user_id="alice")
    with pytest.raises(NotFoundError):
        await provider.delete_episode(mine.id, user_id="alice")  # once
    with pytest.raises(NotFoundError):
        await provider.restore_episode(mine.id, user_id="bob")  # bob cannot bring back alice's
    events = [(e.event, e.id) for e in await provider.events(user_id="alice")]
    assert ("episode_deleted", mine.id) in events
    assert all(e.id != mine.id for e in await provider.events(user_id="bob"))
    back = await provider.restore_episode(mine.id, user_id="alice")
    assert back.git_sha == "0a1b2c3d"
    assert [e.id for e in await provider.episodes("billing", user_id="alice")] == [mine.id]
    assert ("episode_restored", mine.id) in [(e.event, e.id) for e in await provider.events(user_id="alice")]
    await provider.delete_episode(mine.id, user_id="alice")
    await provider.purge(user_id="alice")  # a deleted episode is the owner's data too
    with pytest.raises(NotFoundError):
        await provider.restore_episode(mine.id, user_id="alice")


async def test_the_capability_records_what_the_run_checked(tmp_path: Path) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    from agent_memory import MemoryCapability, MemoryProvider

    async with MemoryProvider(tmp_path / "mem") as provider:
        facts = {"git_sha": "c0ffee12", "verify_exit": 3, "goal": "ignored: only what a run checked"}
        cap = MemoryCapability(provider, user_id="ada", capture=False, recall=False, episode_facts=lambda ctx: facts)
        await Agent(TestModel(), capabilities=[cap]).run("run the tests")
        [episode] = await provider.episodes(user_id="ada")
        assert (episode.git_sha, episode.verify_exit, episode.goal) == ("c0ffee12", 3, "run the tests")


def _cli(root: str, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", root, *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert (out.returncode == 0) is ok, out.stderr
    return out


@pytest.mark.parametrize("kind", ["files", "postgres"])
async def test_cli_episodes_delete_and_restore(kind: str, tmp_path: Path) -> None:
    from agent_memory import MemoryProvider

    if kind == "postgres":
        from _pg import require_psycopg, server

        require_psycopg()
        root = server().url
    else:
        root = str(tmp_path / "mem")
    alice, bob = f"alice-{uuid.uuid4().hex[:6]}", f"bob-{uuid.uuid4().hex[:6]}"
    async with MemoryProvider(root) as provider:
        ep = await provider.record_episode("deploy billing", user_id=alice, git_sha="abc1234")
    out = _cli(root, "episodes", "delete", ep.id, "--user", bob, ok=False)
    assert "no episode" in out.stderr
    out = _cli(root, "episodes", "delete", ep.id, "--user", alice)
    assert f"deleted: {ep.id}" in out.stdout
    assert json.loads(_cli(root, "--json", "episodes", "--user", alice).stdout)["episodes"] == []
    events = json.loads(_cli(root, "--json", "events", "--user", alice).stdout)["events"]
    assert [(e["event"], e["actor"]) for e in events if e["id"] == ep.id] == [("episode_deleted", "cli")]
    assert json.loads(_cli(root, "--json", "episodes", "restore", ep.id, "--user", alice).stdout) == {"id": ep.id, "restored": True}
    [shown] = json.loads(_cli(root, "--json", "episodes", "--user", alice).stdout)["episodes"]
    assert (shown["id"], shown["git_sha"]) == (ep.id, "abc1234")


@pytest.mark.parametrize("kind", ["files", "postgres"])
async def test_export_import_keeps_what_runs_checked_and_leaves_deleted_episodes(kind: str, tmp_path: Path) -> None:
    from agent_memory import MemoryProvider

    if kind == "postgres":
        from _pg import require_psycopg, server

        require_psycopg()
        root = server().url
    else:
        root = str(tmp_path / "mem")
    user = f"alice-{uuid.uuid4().hex[:6]}"
    async with MemoryProvider(root) as provider:
        kept = await provider.record_episode("deploy billing", user_id=user, git_sha="abc1234", verify_exit=0)
        gone = await provider.record_episode("deploy search", user_id=user, git_sha="def5678", verify_exit=1)
        await provider.delete_episode(gone.id, user_id=user)
    _cli(root, "export", "--full", "--out", str(tmp_path / "all.jsonl"))
    lines = [json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines()]
    exported = [line["episode"]["id"] for line in lines if line.get("section") == "episode"]
    assert kept.id in exported and gone.id not in exported
    _cli(str(tmp_path / "copy"), "import", str(tmp_path / "all.jsonl"))
    async with MemoryProvider(tmp_path / "copy") as copy:
        [back] = await copy.episodes(user_id=user)
        assert (back.id, back.git_sha, back.verify_exit) == (kept.id, "abc1234", 0)
