"""Curated ("hot") memory: per-user lines with a priority, first in the core block, on files and PostgreSQL.

Python API (provider, the ``memory_curate`` tool, the capture worker, the pydantic-ai capability, MCP) here;
the CLI as a subprocess in tests/test_curated_cli.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory import CuratedLimitError, CuratedLine, InvalidInputError, NotFoundError
from agent_memory.agents.core_block import CURATED_HEADING, TRUNCATION_MARKER, build_block
from agent_memory.agents.profiles import ProfileError, load_profile
from agent_memory.agents.tokens import count_tokens
from agent_memory.agents.tools import CAPTURE, memory_toolset
from agent_memory.integrations.pydantic_ai import MemoryCapability
from agent_memory.mcp._config import AccessDeniedError, Identity
from agent_memory.mcp._tools import SPECS, Runtime
from agent_memory.model.curated import MAX_CHARS, MAX_LINES
from agent_memory.redaction.api import SECRET_SAMPLES

SECRET = next(s for s in SECRET_SAMPLES if s.startswith("sk-ant-"))  # one line


async def call_tool(toolset: Any, name: str, args: dict[str, Any]) -> Any:
    """Drive one tool call through a real pydantic-ai run; returns what the model was sent back (a retry as text)."""
    seen: list[Any] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(name, args)])
        for p in messages[-1].parts:
            if isinstance(p, ToolReturnPart):
                seen.append(p.content)
            elif isinstance(p, RetryPromptPart):
                seen.append(p.model_response())
        return ModelResponse(parts=[TextPart("done")])

    await Agent(FunctionModel(model), toolsets=[toolset]).run("go")
    return seen[0]


def curated_part(text: str) -> str:
    """The curated section of a core block ('' when there is none)."""
    if not text.startswith(CURATED_HEADING):
        return ""
    return text.split("\n\n", 1)[0]


# -- the core block: alice's lines are hers ------------------------------------------------------------------
async def test_alices_line_is_first_in_her_block_and_in_no_one_elses(backend: Any) -> None:
    memory = backend.provider()
    await memory.remember("The deploy window is Tuesday 14:00 UTC.", scope="project")
    await memory.remember("Bob keeps his notes in Obsidian.", user_id="bob")
    mine = await memory.curate("Alice wants answers in metric units", user_id="alice", priority=7)
    shared = await memory.curate("Every answer cites its source", scope="project", user_id="alice", priority=3)
    assert mine.status == "created" and shared.status == "created"

    alice = (await memory.inject(user_id="alice", session_id="chat-1")).text
    assert alice.startswith(CURATED_HEADING + "\n- [" + mine.id + "] (priority 7) Alice wants answers in metric units")
    assert f"[{shared.id}] (priority 3) Every answer cites its source" in curated_part(alice)
    assert "Tuesday 14:00" in alice.split("\n\n", 1)[1]  # the index follows
    assert alice.count(mine.id) == 1  # a curated line is not repeated in the index

    for who in ({"user_id": "bob"}, {}, {"session_id": "chat-1"}):
        block = (await memory.inject(**who)).text
        assert "metric units" not in block and mine.id not in block, who
        assert "Every answer cites its source" in curated_part(block), who  # the shared line is everyone's
    assert [c.id for c in await memory.curated(user_id="bob")] == [shared.id]
    assert [(c.id, c.priority, c.scope) for c in await memory.curated(user_id="alice")] == [(mine.id, 7, "user"), (shared.id, 3, "project")]
    assert (await memory.search("metric units", user_id="bob")).hits == []
    with pytest.raises(NotFoundError):
        await memory.get(mine.id, user_id="bob")


async def test_a_high_priority_line_wins_over_a_newer_low_priority_one_when_the_budget_fits_one(backend: Any) -> None:
    memory = backend.provider()
    high = await memory.curate("Never deploy on Fridays", user_id="alice", priority=9)
    await asyncio.sleep(0.01)
    low = await memory.curate("Likes the colour teal", user_id="alice", priority=2)
    await asyncio.sleep(0.01)
    newer_high = await memory.curate("Pager rotation starts Monday", user_id="alice", priority=9)
    lines = await memory.curated(user_id="alice")
    assert [c.id for c in lines] == [newer_high.id, high.id, low.id]  # priority first, then newest

    one = CuratedLine(newer_high.id, "Pager rotation starts Monday", 9, "user").line()
    budget = count_tokens(f"{CURATED_HEADING}\n{one}\n{TRUNCATION_MARKER}")
    block = await memory.inject(budget, user_id="alice")
    assert block.truncated and block.tokens <= budget
    assert newer_high.id in block.text and high.id not in block.text and low.id not in block.text

    await memory.uncurate(newer_high.id, user_id="alice")
    budget = count_tokens(f"{CURATED_HEADING}\n{CuratedLine(high.id, 'Never deploy on Fridays', 9, 'user').line()}\n{TRUNCATION_MARKER}")
    block = await memory.inject(budget, user_id="alice")
    assert high.id in block.text and low.id not in block.text  # older but higher: it wins the one slot
    whole = await memory.inject(user_id="alice")
    assert whole.text.index(high.id) < whole.text.index(low.id) and not whole.truncated


def test_the_block_never_exceeds_its_budget_and_curated_lines_come_before_user_md() -> None:
    curated = [f"- [c{i}] (priority {10 - i}) line number {i} of the curated memory" for i in range(6)]
    index = [f"- [r{i}] (fact): an indexed record number {i}" for i in range(40)]
    full = build_block("# About the project\nWe build rockets.", index, 100_000, curated)
    assert full.text.startswith(CURATED_HEADING) and full.text.index("We build rockets") > full.text.index("c5")
    for budget in range(0, count_tokens(full.text) + 5, 7):
        block = build_block("# About the project\nWe build rockets.", index, budget, curated)
        assert block.tokens == count_tokens(block.text) <= budget, budget
        shown = [c for c in range(6) if f"[c{c}]" in block.text]
        assert shown == list(range(len(shown))), budget  # a prefix: the highest priorities survive
        if any(f"[r{i}]" in block.text for i in range(40)) or "rockets" in block.text:
            assert len(shown) == 6, budget  # nothing else before every curated line is in


# -- search, purge, history ----------------------------------------------------------------------------------
async def test_search_marks_curated_lines_and_purge_of_alice_removes_hers(backend: Any) -> None:
    memory = backend.provider()
    mine = await memory.curate("Alice is allergic to hazelnuts", user_id="alice", priority=8)
    fact = await memory.remember("Hazelnuts are served at the Friday lunch", scope="project")
    bobs = await memory.curate("Bob is allergic to hazelnuts too", user_id="bob")
    hits = {h.id: h for h in (await memory.search("hazelnuts allergic", user_id="alice")).hits}
    assert set(hits) == {mine.id, fact.id}
    assert hits[mine.id].curated and hits[mine.id].priority == 8 and hits[mine.id].to_dict()["curated"] is True
    assert not hits[fact.id].curated and "curated" not in hits[fact.id].to_dict()
    found = await call_tool(memory_toolset(memory, CAPTURE, user_id="alice"), "memory_search", {"query": "hazelnuts allergic"})
    marked = {h["id"]: h for h in found["hits"]}
    assert marked[mine.id]["curated"] is True and marked[mine.id]["priority"] == 8 and "curated" not in marked[fact.id]

    report = await memory.purge(user_id="alice")
    assert mine.id in report.records
    assert await memory.curated(user_id="alice") == []
    assert "hazelnuts" not in (await memory.inject(user_id="alice")).text.split("## Memory index")[0]
    assert [c.id for c in await memory.curated(user_id="bob")] == [bobs.id]  # bob's stays


async def test_remove_replace_and_undo_round_trip_and_another_users_id_is_not_found(backend: Any) -> None:
    memory = backend.provider()
    line = await memory.curate("Alice's standup is at 09:30", user_id="alice", priority=4)
    plain = await memory.remember("Alice's desk is on floor 3", user_id="alice")
    with pytest.raises(NotFoundError):
        await memory.uncurate(line.id, user_id="bob")
    with pytest.raises(NotFoundError):
        await memory.curate("Bob's standup", replace=line.id, user_id="bob")
    with pytest.raises(NotFoundError):
        await memory.uncurate(plain.id, user_id="alice")  # a record that is no curated line
    assert [c.text for c in await memory.curated(user_id="alice")] == ["Alice's standup is at 09:30"]

    assert await memory.uncurate(line.id, user_id="alice") is True
    assert await memory.curated(user_id="alice") == [] and line.id not in (await memory.inject(user_id="alice")).text
    assert (await memory.undo(user_id="alice")).event == "forgotten"
    assert [c.id for c in await memory.curated(user_id="alice")] == [line.id]
    assert line.id in curated_part((await memory.inject(user_id="alice")).text)

    replaced = await memory.curate("Alice's standup is at 10:00", replace=line.id, priority=6, user_id="alice")
    assert replaced.id == line.id and replaced.status == "replaced"
    assert [(c.text, c.priority) for c in await memory.curated(user_id="alice")] == [("Alice's standup is at 10:00", 6)]
    assert [v.content for v in (await memory.history(line.id, user_id="alice")).versions][:2] == [
        "Alice's standup is at 09:30",
        "Alice's standup is at 10:00",
    ]
    await memory.undo(user_id="alice")
    assert [(c.text, c.priority) for c in await memory.curated(user_id="alice")] == [("Alice's standup is at 09:30", 4)]
    only_priority = await memory.curate(replace=line.id, priority=10, user_id="alice")
    assert only_priority.id == line.id
    assert [(c.text, c.priority) for c in await memory.curated(user_id="alice")] == [("Alice's standup is at 09:30", 10)]


async def test_bad_input_is_a_typed_error_and_nothing_is_lost(backend: Any) -> None:
    memory = backend.provider()
    for bad in (0, 11, -1, True, "5", 2.5):
        with pytest.raises(InvalidInputError, match="priority"):
            await memory.curate("a line", user_id="alice", priority=bad)
    for text in ("", "   ", "two\nlines", "x" * (MAX_CHARS + 1)):
        with pytest.raises(InvalidInputError):
            await memory.curate(text, user_id="alice")
    with pytest.raises(InvalidInputError, match="user_id"):
        await memory.curate("nobody's line")  # a user's line needs a user
    with pytest.raises(InvalidInputError, match="scope"):
        await memory.curate("a session line", user_id="alice", scope="session")
    assert await memory.list(limit=None, user_id="alice") == []

    secret = await memory.curate(f"Alice's deploy token is {SECRET}", user_id="alice")
    assert secret.redactions >= 1
    stored = await memory.get(secret.id, user_id="alice")
    assert SECRET not in stored.content and SECRET not in (await memory.inject(user_id="alice")).text
    again = await memory.curate(f"Alice's deploy token is {SECRET}", user_id="alice")
    assert again.id == secret.id and again.status == "duplicate"  # the same line once


async def test_a_user_holds_at_most_max_lines_then_a_typed_error(backend: Any) -> None:
    memory = backend.provider()
    for i in range(MAX_LINES):
        await memory.curate(f"line number {i}", user_id="alice", priority=1 + i % 10)
    with pytest.raises(CuratedLimitError, match=str(MAX_LINES)):
        await memory.curate("one line too many", user_id="alice")
    assert len(await memory.curated(user_id="alice")) == MAX_LINES
    assert (await memory.curate("Bob's first line", user_id="bob")).status == "created"  # per user
    assert (await memory.curate("line number 3", user_id="alice", priority=4)).status in ("duplicate", "replaced")  # not new


# -- export and import: curated lines come out and back ------------------------------------------------------
@pytest.mark.parametrize("kind", ["files", "postgres"])
def test_export_and_import_round_trip_curated_lines(kind: str, tmp_path: Path) -> None:
    from _pg import make_target

    from agent_memory.backends import open_backend
    from agent_memory.portable import import_file
    from agent_memory.portable.export import export_records

    src, dst = make_target(kind, tmp_path), make_target(kind, tmp_path)

    def bare(target: Any) -> Any:
        return open_backend(target.target, **{**target.options, **({"pooled": False} if kind == "postgres" else {})})

    def close(b: Any) -> None:
        res = b.close()
        if asyncio.iscoroutine(res):
            asyncio.run(res)

    async def fill() -> list[CuratedLine]:
        memory = src.provider()
        await memory.curate("Alice reads the changelog first", user_id="alice", priority=9)
        await memory.curate("Alice prefers short answers", user_id="alice", priority=2)
        await memory.curate("Bob's line", user_id="bob", priority=5)
        lines = await memory.curated(user_id="alice")
        await src.close()
        return lines

    before = asyncio.run(fill())
    out = tmp_path / "export.jsonl"
    b = bare(src)
    try:
        assert export_records(b, out) == 3
    finally:
        close(b)
    b = bare(dst)
    try:
        report = import_file(b, out)
        assert len(report.written) == 3
    finally:
        close(b)

    async def read() -> tuple[list[CuratedLine], list[CuratedLine], str, str]:
        memory = dst.provider()
        got = (
            await memory.curated(user_id="alice"),
            await memory.curated(user_id="bob"),
            (await memory.inject(user_id="alice")).text,
            (await memory.inject(user_id="bob")).text,
        )
        await dst.close()
        return got

    alice, bob, alice_block, bob_block = asyncio.run(read())
    assert [(c.text, c.priority, c.scope) for c in alice] == [(c.text, c.priority, c.scope) for c in before]
    if report.ids_kept:  # files: our export comes back byte for byte (PostgreSQL allocates its own ids, and says so)
        assert [c.id for c in alice] == [c.id for c in before]
    assert [c.text for c in bob] == ["Bob's line"]
    assert alice_block.startswith(CURATED_HEADING) and "changelog" in alice_block and "Bob's line" not in alice_block
    assert "changelog" not in bob_block


# -- the tool, the capture worker and the capability --------------------------------------------------------
async def test_memory_curate_tool_changes_only_the_callers_own_lines(backend: Any) -> None:
    memory = backend.provider()
    bobs = await memory.curate("Bob's line", user_id="bob")
    shared = await memory.curate("A shared line", scope="project", user_id="bob")
    toolset = memory_toolset(memory, CAPTURE + ("memory_curate",), user_id="alice", session_id="s1")
    assert "memory_curate" in toolset.tools and "memory_curate" not in memory_toolset(memory, CAPTURE, user_id="alice").tools

    async def curate(**args: Any) -> Any:
        return await call_tool(toolset, "memory_curate", args)

    added = await curate(action="add", text="Alice works from Lisbon", priority=6)
    assert added["status"] == "created"
    for args in (
        {"action": "remove", "id": bobs.id},
        {"action": "replace", "id": bobs.id, "text": "hijacked"},
        {"action": "remove", "id": shared.id},
    ):
        assert "NotFoundError" in str(await curate(**args))  # the model is told to retry: not its line
    assert "priority" in str(await curate(action="add", text="x", priority=42))
    assert (await curate(action="replace", id=added["id"], priority=8))["status"] == "replaced"
    assert [(c.text, c.priority) for c in await memory.curated(user_id="alice", scope="user")] == [("Alice works from Lisbon", 8)]
    assert [c.text for c in await memory.curated(user_id="bob")] == ["A shared line", "Bob's line"]  # same priority: newest first
    assert (await curate(action="remove", id=added["id"]))["removed"] is True
    assert await memory.curated(user_id="alice", scope="user") == []


def _capture_model(calls: list[dict[str, Any]], offered: list[set[str]]) -> FunctionModel:
    """A capture worker that makes the ``calls`` (memory_curate arguments) in one step, then says NO_REPLY."""

    def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append({t.name for t in info.function_tools})
        if any(isinstance(p, ToolReturnPart) for m in messages if isinstance(m, ModelRequest) for p in m.parts):
            return ModelResponse(parts=[TextPart("NO_REPLY")])
        if "memory_curate" not in offered[-1]:
            return ModelResponse(parts=[TextPart("NO_REPLY")])
        return ModelResponse(parts=[ToolCallPart("memory_curate", args) for args in calls])

    return FunctionModel(play)


async def test_the_capture_worker_given_memory_curate_curates_for_its_caller_only(backend: Any) -> None:
    base = load_profile("offline")
    manual = await backend.provider().curate("Alice's hand-written line", user_id="alice", priority=5)
    bobs = await backend.provider().curate("Bob's line", user_id="bob")
    calls = [
        {"action": "add", "text": "Alice is on call this week", "priority": 9},
        {"action": "remove", "id": bobs.id},  # another user's: not found, nothing happens
        {"action": "remove", "id": manual.id},  # a person's line: capture changes only what it wrote
    ]
    offered: list[set[str]] = []
    opted = dataclasses.replace(
        base, capture=dataclasses.replace(base.capture, model=_capture_model(calls, offered), tools=CAPTURE + ("memory_curate",))
    )
    memory = backend.provider(profile=opted)
    result = await memory.capture_turn("I'm on call this week, remember that.", "Noted.", user_id="alice", session_id="s1")
    assert not result.fallback, result.reason
    assert "memory_curate" in offered[0]
    alice = await memory.curated(user_id="alice")
    assert [(c.text, c.priority) for c in alice] == [("Alice is on call this week", 9), ("Alice's hand-written line", 5)]
    assert (await memory.get(alice[0].id, user_id="alice")).source == "turn_capture"
    assert [c.id for c in await memory.curated(user_id="bob")] == [bobs.id]
    assert "on call" not in (await memory.inject(user_id="bob")).text

    offered.clear()  # without the opt-in the worker is never offered the tool
    plain = dataclasses.replace(base, capture=dataclasses.replace(base.capture, model=_capture_model(calls, offered)))
    await backend.provider(profile=plain).capture_turn("Another turn about being on call.", "ok", user_id="carol")
    assert offered and "memory_curate" not in offered[0]
    assert await memory.curated(user_id="carol") == []


def test_profiles_offer_memory_curate_only_when_named(tmp_path: Path) -> None:
    assert "memory_curate" not in load_profile("offline").capture.tools
    path = tmp_path / "p.toml"
    path.write_text('[capture]\nmodel = "offline"\ntools = ["memory_search", "memory_remember", "memory_curate"]\n', encoding="utf-8")
    assert load_profile(path).capture.tools == ("memory_search", "memory_remember", "memory_curate")
    path.write_text('[recall]\nmodel = "offline"\ntools = ["memory_search", "memory_curate"]\n', encoding="utf-8")
    with pytest.raises(ProfileError, match="memory_curate"):
        load_profile(path)


async def test_the_capabilitys_frozen_core_block_holds_the_callers_curated_lines_only(backend: Any) -> None:
    memory = backend.provider()
    await memory.curate("Alice signs emails as 'A.'", user_id="alice", priority=8)
    seen: list[str] = []

    def main(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions or "")
        return ModelResponse(parts=[TextPart("ok")])

    for user in ("alice", "bob"):
        agent = Agent(FunctionModel(main), capabilities=[MemoryCapability(memory, user_id=user, session_id=f"{user}-chat", capture=False)])
        await agent.run("hello")
    alice, bob = seen
    assert "## Curated memory" in alice and "Alice signs emails as 'A.'" in alice
    assert "Alice signs emails" not in bob


# -- MCP: the connection's user, never another ------------------------------------------------------------
async def test_mcp_memory_curate_obeys_the_tokens_user(backend: Any) -> None:
    memory = backend.provider()
    rt = Runtime(memory)
    spec = SPECS["memory_curate"]
    alice, bob = Identity(user_id="alice", access="own"), Identity(user_id="bob", access="own")
    added = await spec.run(rt, alice, {"action": "add", "text": "Alice's MCP line", "priority": 7})
    assert added["status"] == "created"
    with pytest.raises(NotFoundError):
        await spec.run(rt, bob, {"action": "remove", "id": added["id"]})
    with pytest.raises(AccessDeniedError):
        await spec.run(rt, Identity(user_id="alice", access="read"), {"action": "add", "text": "read-only"})
    with pytest.raises(AccessDeniedError):
        await spec.run(rt, Identity(session_id="s9", access="own"), {"action": "add", "text": "no user"})
    hits = (await SPECS["memory_search"].run(rt, alice, {"query": "MCP line", "limit": 5}))["hits"]
    assert hits[0]["id"] == added["id"] and hits[0]["curated"] is True and hits[0]["priority"] == 7
    assert (await SPECS["memory_search"].run(rt, bob, {"query": "MCP line", "limit": 5}))["hits"] == []
    assert [c.text for c in await memory.curated(user_id="alice")] == ["Alice's MCP line"]
    assert (await spec.run(rt, alice, {"action": "remove", "id": added["id"]}))["removed"] is True
    assert await memory.curated(user_id="alice") == []


async def test_the_recall_worker_finds_curated_lines_and_marks_them_in_its_sources(backend: Any) -> None:
    memory = backend.provider()
    line = await memory.curate("Alice's pager rotation starts on Mondays", user_id="alice", priority=8)
    fact = await memory.remember("The pager rotation handbook lives in the wiki", scope="project")
    recalled = await memory.recall("When does my pager rotation start?", user_id="alice")
    assert not recalled.fallback, recalled.reason
    marked = {s["id"]: s.get("curated") for s in recalled.sources}
    assert marked.get(line.id) is True and marked.get(fact.id) is None, recalled.sources
    assert line.id not in {s["id"] for s in (await memory.recall("When does my pager rotation start?", user_id="bob")).sources}

    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("model down")

    base = load_profile("offline")
    down = backend.provider(profile=dataclasses.replace(base, recall=dataclasses.replace(base.recall, model=FunctionModel(broken))))
    fallback = await down.recall("pager rotation Mondays", user_id="alice")
    assert fallback.fallback and {s["id"]: s.get("curated") for s in fallback.sources}.get(line.id) is True


async def test_consolidation_never_merges_a_curated_line_away(tmp_path: Path) -> None:
    from agent_memory import MemoryProvider

    memory = MemoryProvider(tmp_path / "mem", durable=False)  # consolidation runs on the files backend
    one = await memory.curate("Alice prefers short answers in the morning", user_id="alice", priority=6)
    two = await memory.curate("Alice prefers short answers in the morning!", user_id="alice", priority=3)
    fact = await memory.remember("Alice prefers short answers in the morning.", user_id="alice")
    twin = await memory.remember("Alice prefers short answers in the morning, really.", user_id="alice")
    report = await memory.consolidate(max_share=1.0)
    touched = {c.record_id for c in report.changes} | {r for c in report.changes for r in c.related}
    assert one.id not in touched and two.id not in touched
    assert {fact.id, twin.id} & touched  # the ordinary near-duplicates are still merged
    assert {c.id for c in await memory.curated(user_id="alice")} == {one.id, two.id}
    await memory.aclose()
