"""The agent-builder API after the new-user probe: capture stays in the background for a run started as a task,
a PostgreSQL URL without the extra says which extra, distill skips what a live capture read, the API agrees with the
CLI on ``on_existing`` without a key and on forget's event, and a memory-tool rename is one undoable step."""

from __future__ import annotations

import asyncio
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

from agent_memory import MemoryProvider, MissingExtraError, PendingCaptureWarning
from agent_memory.backends import open_backend
from agent_memory.errors import InvalidInputError
from agent_memory.integrations.anthropic import MemoryToolHandler
from agent_memory.integrations.pydantic_ai import MemoryCapability

URL = "postgresql://nobody@127.0.0.1:1/none"


# -- 1. a run started with create_task / gather keeps its capture in the background ---------------------------------
async def test_a_run_started_as_a_task_captures_in_the_background_without_a_warning(tmp_path: Path) -> None:
    async with MemoryProvider(tmp_path / "mem") as provider:
        memory = MemoryCapability(provider, user_id="ada")
        agent = Agent(TestModel(custom_output_text="Noted."), capabilities=[memory])
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # PendingCaptureWarning is only for run_sync / asyncio.run(agent.run(…))
            await asyncio.create_task(agent.run("I live in Porto."))
            assert isinstance(memory.last_turn and memory.last_turn.capture, asyncio.Task)  # not awaited in the run
            await asyncio.gather(agent.run("I live in Lisbon."), agent.run("My cat is called Miso."))
            assert isinstance(memory.last_turn and memory.last_turn.capture, asyncio.Task)
        await provider.flush()
        assert provider.pending == 0


def test_run_stream_sync_captures_inside_the_run(tmp_path: Path) -> None:
    """The sync stream drives the loop only until it closes: a background capture would be left pending (lost)."""
    provider = MemoryProvider(tmp_path / "mem")
    agent = Agent(TestModel(custom_output_text="Noted."), capabilities=[MemoryCapability(provider, user_id="ada")])
    with pytest.warns(PendingCaptureWarning), agent.run_stream_sync("I live in Porto.") as streamed:
        for _ in streamed.stream_text():
            pass
    assert provider.pending == 0
    assert [r.content for r in asyncio.run(provider.list(user_id="ada"))] == ["User lives in Porto."]
    provider.close()


# -- 2. a PostgreSQL URL without the postgres extra -------------------------------------------------------------------
@pytest.fixture()
def no_psycopg(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """psycopg not installed, for this test: the PostgreSQL modules already imported are set aside (and put back)."""
    held = [m for m in sys.modules if m.split(".", 1)[0] in ("psycopg", "psycopg_pool") or m.startswith("agent_memory.backends.postgres.")]
    for name in held:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)
    monkeypatch.setitem(sys.modules, "psycopg_pool", None)
    yield
    for name in [m for m in sys.modules if m.startswith("agent_memory.backends.postgres.") and m not in held]:
        del sys.modules[name]  # a module this test imported anew does not outlive it


@pytest.mark.parametrize("opener", [MemoryProvider, open_backend], ids=["MemoryProvider", "open_backend"])
def test_a_postgresql_url_without_the_extra_is_a_missing_extra_error(no_psycopg: None, opener: Any) -> None:
    with pytest.raises(MissingExtraError) as caught:
        opener(URL)
    assert caught.value.extra == "postgres"
    assert "pip install 'agent-memory[postgres]'" in str(caught.value)


# -- 3. distill reads only what no capture read -------------------------------------------------------------------------
async def test_distill_skips_the_turns_a_capability_captured(backend: Any) -> None:
    provider = backend.provider()
    agent = Agent(TestModel(custom_output_text="Noted."), capabilities=[MemoryCapability(provider, user_id="ada", session_id="s1")])
    await agent.run("I live in Porto.")
    await provider.flush()
    assert [r.content for r in await provider.list(user_id="ada")] == ["User lives in Porto."]
    report = await provider.distill()
    assert (report.messages, report.written, report.sessions) == (0, 0, [])
    # a turn logged by hand afterwards (no capture read it) is what the next distill reads
    await provider.log_messages([{"role": "user", "text": "I work at Acme."}], session_id="s1", user_id="ada")
    report = await provider.distill()
    assert report.messages == 1 and [(s["from"], s["through"]) for s in report.sessions] == [(3, 3)]
    assert (await provider.distill()).messages == 0


async def test_a_turn_whose_capture_failed_is_left_to_distill(backend: Any) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("extractor down")

    provider = backend.provider(turn_extractor=broken)
    agent = Agent(
        TestModel(custom_output_text="Noted."),
        capabilities=[MemoryCapability(provider, user_id="ada", session_id="s1", background_capture=False)],
    )
    await agent.run("I live in Porto.")
    provider.turn_extractor = None  # the offline rules from here on
    agent2 = Agent(TestModel(custom_output_text="Noted."), capabilities=[MemoryCapability(provider, user_id="ada", session_id="s1")])
    await agent2.run("I work at Acme.")
    await provider.flush()
    report = await provider.distill()
    assert [(s["from"], s["through"]) for s in report.sessions] == [(1, 2)]  # the failed turn, not the captured one
    assert (await provider.distill()).messages == 0


# -- 4. API and CLI agree ---------------------------------------------------------------------------------------------
async def test_on_existing_without_a_key_is_refused_and_writes_nothing(backend: Any) -> None:
    provider = backend.provider()
    for mode in ("replace", "skip"):
        with pytest.raises(InvalidInputError, match="needs a memory_key"):
            await provider.remember("The boiler code is 4411.", user_id="ada", on_existing=mode)
    assert await provider.list(user_id="ada") == []
    assert (await provider.remember("The boiler code is 4411.", user_id="ada")).status == "created"


async def test_forget_returns_false_for_an_unknown_id_and_logs_the_same_event_on_every_backend(backend: Any) -> None:
    provider = backend.provider()
    assert await provider.forget("2026-01-01-nothing-here", user_id="ada") is False  # documented: nothing changed
    made = await provider.remember("The van is on level 2.", user_id="ada")
    assert await provider.forget(made.id, user_id="ada") is True
    events = [e for e in await provider.events(user_id="ada") if e.event == "forgotten"]
    assert [(e.actor, e.detail) for e in events] == [("api", {"reason": "forgotten"})]


# -- 5. one rename, one undo ------------------------------------------------------------------------------------------
async def test_one_undo_reverses_a_memory_tool_rename_or_directory_delete(backend: Any) -> None:
    provider = backend.provider()
    tool = MemoryToolHandler(provider, user_id="alice")
    await tool.ahandle({"command": "create", "path": "/memories/prefs.md", "file_text": "Likes green tea.\n"})
    await tool.ahandle({"command": "create", "path": "/memories/notes/todo.md", "file_text": "Buy milk.\n"})
    await tool.ahandle({"command": "create", "path": "/memories/notes/done.md", "file_text": "Paid rent.\n"})
    await tool.ahandle({"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/archive"})
    listing = await tool.ahandle({"command": "view", "path": "/memories"})
    assert "/memories/archive/todo.md" in listing and "/memories/notes" not in listing
    await provider.undo(user_id="alice")
    listing = await tool.ahandle({"command": "view", "path": "/memories"})
    assert "/memories/notes/todo.md" in listing and "/memories/notes/done.md" in listing and "/memories/archive" not in listing
    await provider.undo(user_id="alice")  # the next undo is the change before the rename: the last create
    listing = await tool.ahandle({"command": "view", "path": "/memories"})
    assert "/memories/notes/todo.md" in listing and "/memories/notes/done.md" not in listing and "prefs.md" in listing
    await tool.ahandle({"command": "create", "path": "/memories/notes/call.md", "file_text": "Call Bo.\n"})
    await tool.ahandle({"command": "delete", "path": "/memories/notes"})  # a directory delete is one step too
    await provider.undo(user_id="alice")
    listing = await tool.ahandle({"command": "view", "path": "/memories"})
    assert "/memories/notes/todo.md" in listing and "/memories/notes/call.md" in listing
