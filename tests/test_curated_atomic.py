"""Curated memory under concurrency and inside the capture worker, on files and PostgreSQL.

The 50-line cap is atomic: writers racing for the last free lines (separate providers on one store, as separate
app servers are) never leave more than MAX_LINES lines, and every line reported ``created`` is kept. The capture
worker's ``memory_curate`` calls are staged like its other writes: the write approval sees each one (with the
namespace it runs in) and can refuse it, and a run that fails applies none.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _matrix import cli_env
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory import CuratedLimitError, ToolCall
from agent_memory.agents.profiles import load_profile
from agent_memory.agents.tools import CAPTURE
from agent_memory.model.curated import MAX_LINES

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


async def _race(providers: list[Any], texts: list[str], **who: Any) -> tuple[list[Any], list[BaseException]]:
    """Add ``texts`` at once, spread over ``providers``; the results and the errors."""
    calls = [providers[i % len(providers)].curate(t, **who) for i, t in enumerate(texts)]
    out = await asyncio.gather(*calls, return_exceptions=True)
    return [r for r in out if not isinstance(r, BaseException)], [r for r in out if isinstance(r, BaseException)]


@pytest.mark.parametrize("namespace", [None, "acme/support"])
async def test_concurrent_curate_calls_never_pass_the_cap_nor_lose_a_line(backend: Any, namespace: str | None) -> None:
    first = backend.provider(namespace=namespace)
    for i in range(MAX_LINES - 5):
        await first.curate(f"Standing line {i}.", user_id="alice")
    writers = [backend.provider(namespace=namespace) for _ in range(3)]  # three app servers on one store
    done, errors = await _race(writers, [f"Racing line {i}." for i in range(12)], user_id="alice")
    assert all(isinstance(e, CuratedLimitError) for e in errors), errors
    assert len(done) == 5 and len(errors) == 7 and all(r.status == "created" for r in done)
    lines = await first.curated(user_id="alice")
    assert len(lines) == MAX_LINES  # never 51
    assert {r.id for r in done} <= {c.id for c in lines}  # every line reported created is there
    assert len(await first.curated(user_id="alice", namespace="acme/other", isolation="full")) == 0  # the cap is per namespace


async def test_concurrent_adds_of_one_line_store_it_once(backend: Any) -> None:
    writers = [backend.provider() for _ in range(3)]
    done, errors = await _race(writers, ["Alice is on call this week."] * 6, user_id="alice")
    assert errors == [] and len({r.id for r in done}) == 1
    assert sorted(r.status for r in done) == ["created"] + ["duplicate"] * 5
    assert [c.text for c in await writers[0].curated(user_id="alice")] == ["Alice is on call this week."]


async def test_curate_from_several_processes_respects_the_cap(tmp_path: Path) -> None:
    """Separate processes (the command line) racing for the last two free lines of one files root."""
    from agent_memory import MemoryProvider

    root = str(tmp_path / "mem")
    async with MemoryProvider(root) as memory:
        for i in range(MAX_LINES - 2):
            await memory.curate(f"Standing line {i}.", user_id="alice")

    def cli(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "agent_memory.cli", "--root", root, "--json", "curate", *args, "--user", "alice"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(),
        )

    racers = [cli(f"Racing line {i}.") for i in range(5)]
    outs = [p.communicate(timeout=120) for p in racers]
    ok = [json.loads(out)["id"] for (out, _), p in zip(outs, racers, strict=True) if p.returncode == 0]
    refused = [json.loads(out)["error"]["type"] for (out, _), p in zip(outs, racers, strict=True) if p.returncode != 0]
    assert len(ok) == 2 and refused == ["CuratedLimitError"] * 3, outs
    listed = cli("--list")
    out, err = listed.communicate(timeout=120)
    assert listed.returncode == 0, err
    lines = json.loads(out)["lines"]
    assert len(lines) == MAX_LINES and set(ok) <= {ln["id"] for ln in lines}


# -- the capture worker's memory_curate: staged, approved, committed only when the run ends well --------------------
def _capture_model(calls: list[dict[str, Any]], *, fail_after: bool = False) -> FunctionModel:
    """A capture worker that makes the ``calls`` (memory_curate arguments) in one step, then says NO_REPLY (or fails)."""

    def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if any(isinstance(p, ToolReturnPart) for m in messages if isinstance(m, ModelRequest) for p in m.parts):
            if fail_after:
                raise RuntimeError("the model fell over after curating")
            return ModelResponse(parts=[TextPart("NO_REPLY")])
        return ModelResponse(parts=[ToolCallPart("memory_curate", args) for args in calls])

    return FunctionModel(play)


def _profile(model: FunctionModel) -> Any:
    base = load_profile("offline")
    return dataclasses.replace(base, capture=dataclasses.replace(base.capture, model=model, tools=CAPTURE + ("memory_curate",)))


async def test_capture_curate_is_approved_with_its_namespace_and_a_refusal_stores_nothing(backend: Any) -> None:
    seen: list[ToolCall] = []

    def approve(call: ToolCall) -> bool:
        seen.append(call)
        return "refuse" not in str(call.args.get("text"))

    calls: list[dict[str, Any]] = [
        {"action": "add", "text": "Alice is on call this week.", "priority": 8},
        {"action": "add", "text": "Please refuse this."},
    ]
    memory = backend.provider(profile=_profile(_capture_model(calls)), approve_write=approve, namespace="acme/support")
    result = await memory.capture_turn("I'm on call this week.", "Noted.", user_id="alice", session_id="s1")
    assert not result.fallback, result.reason
    assert [(c.worker, c.name, c.write, c.user_id, c.namespace) for c in seen] == [
        ("capture", "memory_curate", True, "alice", "acme/support")
    ] * 2
    assert [(c["action"], c["status"]) for c in result.curated] == [("add", "created")]
    lines = await memory.curated(user_id="alice")
    assert [(c.text, c.priority) for c in lines] == [("Alice is on call this week.", 8)]
    assert (await memory.get(lines[0].id, user_id="alice")).namespace == "acme/support"
    assert await backend.provider().curated(user_id="alice") == []  # not in the root


async def test_a_failed_capture_run_applies_none_of_its_curate_calls(backend: Any) -> None:
    keep = await backend.provider().curate("Alice's standing line.", user_id="alice")
    calls = [{"action": "add", "text": "Alice is on call this week."}]
    memory = backend.provider(profile=_profile(_capture_model(calls, fail_after=True)))
    result = await memory.capture_turn("I'm on call this week.", "Noted.", user_id="alice", session_id="s1")
    assert result.fallback and "fell over" in (result.reason or "")
    assert result.curated == [] and [c.id for c in await memory.curated(user_id="alice")] == [keep.id]
