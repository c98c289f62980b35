"""The pydantic-ai capability and the runtime-neutral hooks, identically on every backend.

The main agent is a scripted ``FunctionModel`` recording what it receives; the memory side is a real
``MemoryProvider(<root or url>)`` with the offline worker profile.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory.agents.fence import CLOSE, OPEN
from agent_memory.integrations.hooks import CORE_NOTICE, RECALL_NOTICE, MemoryHooks
from agent_memory.integrations.pydantic_ai import MemoryCapability


class MainModel:
    """Answers after ``steps`` tool calls per turn; records the instructions and user parts of every request."""

    def __init__(self, steps: int = 0) -> None:
        self.steps = steps
        self.seen: list[tuple[str, list[str], str]] = []  # (instructions, user-role texts, everything as text)

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        users = [
            p.content
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, UserPromptPart) and isinstance(p.content, str)
        ]
        self.seen.append((info.instructions or "", users, repr(messages) + repr(info.instructions)))
        done = 0
        for message in reversed(messages):
            if isinstance(message, ModelRequest):
                done += sum(isinstance(p, ToolReturnPart) for p in message.parts)
                if any(isinstance(p, UserPromptPart) and not str(p.content).startswith(RECALL_NOTICE) for p in message.parts):
                    break
        if done < self.steps:
            return ModelResponse(parts=[ToolCallPart("lookup", {"step": done + 1})])
        return ModelResponse(parts=[TextPart(f"answer {len(self.seen)}")])

    def recalled(self, request: int) -> list[str]:
        return [u for u in self.seen[request][1] if u.startswith(RECALL_NOTICE)]


def agent_with(model: MainModel, *capabilities: Any) -> Agent[None, str]:
    agent = Agent(FunctionModel(model), instructions="You are a helpful assistant.", capabilities=list(capabilities))

    @agent.tool_plain
    def lookup(step: int) -> str:
        return f"lookup result {step}"

    return agent


def fenced_body(text: str) -> str:
    assert text.count(OPEN) == 1 and text.count(CLOSE) == 1, text
    return text.split(OPEN, 1)[1].split(CLOSE, 1)[0]


async def test_a_turn_gets_core_and_recall_then_captures_for_the_next_turn(backend: Any) -> None:
    provider = backend.provider()
    await provider.remember("Ada prefers tea over coffee.", scope="user", user_id="ada", title="Drinks")
    await provider.remember("The deploy window is Tuesday 14:00 UTC.", title="Deploy window")
    await provider.remember("Bob's deploy window note: Bob's secret plan is Friday.", scope="user", user_id="bob")
    model = MainModel(steps=2)
    memory = MemoryCapability(provider, session_id="chat-1", user_id="ada")
    agent = agent_with(model, memory)

    first = await agent.run("When is the deploy window? Remember that my cat is called Miso.")
    assert len(model.seen) == 3  # two tool-loop steps, then the answer
    instructions = model.seen[0][0]
    assert CORE_NOTICE in instructions and "Ada prefers tea" in instructions and "Tuesday 14:00" in instructions
    assert "Bob" not in instructions
    recalled = model.recalled(0)
    assert len(recalled) == 1 and "Tuesday 14:00 UTC" in fenced_body(recalled[0]) and "Friday" not in recalled[0]
    for later in range(1, 3):  # the tool loop reuses the turn's recall and the frozen core, byte for byte
        assert model.recalled(later) == recalled and model.seen[later][0] == instructions

    second = await agent.run("What is my cat called?", message_history=first.all_messages())
    assert any("Miso" in fenced_body(r) for r in model.recalled(-1)), "turn one's capture reaches turn two by recall"
    assert model.seen[-1][0] == instructions  # the core block stays frozen for the conversation
    await provider.flush()
    cat = [r for r in await provider.list(session_id="chat-1", user_id="ada", limit=None) if "Miso" in r.content]
    assert len(cat) == 1 and cat[0].scope == "user" and cat[0].user_id == "ada" and cat[0].source == "turn_capture"
    assert all("Miso" not in r.content for r in await provider.list(user_id="bob", limit=None))
    assert second.output.startswith("answer")


async def test_the_main_model_sees_only_its_callers_memory(backend: Any) -> None:
    provider = backend.provider()
    made: dict[str, tuple[str, str | None, str | None]] = {}
    for scope, sid, uid in [
        ("session", "a", None),
        ("session", "a", "x"),
        ("user", None, "x"),
        ("user", None, "y"),
        ("session", "b", "y"),
        ("project", None, None),
    ]:
        r = await provider.remember(f"zeppelin hangar fact for {scope} {sid} {uid}", scope=scope, session_id=sid, user_id=uid)
        made[r.id] = (scope, sid, uid)

    def may_see(scope: str, sid: str | None, uid: str | None, csid: str | None, cuid: str | None) -> bool:
        return (
            scope in ("project", "global")
            or (scope == "session" and sid == csid and (uid is None or uid == cuid))
            or (scope == "user" and uid == cuid)
        )

    for csid, cuid in [("a", None), ("a", "x"), ("a", "y"), (None, "x"), ("b", "y"), (None, None)]:
        model = MainModel()
        memory = MemoryCapability(provider, session_id=csid, user_id=cuid, capture=False)
        await agent_with(model, memory).run("what about the zeppelin hangar?")
        everything = "".join(seen[2] for seen in model.seen)
        want = {rid for rid, m in made.items() if may_see(*m, csid, cuid)}
        assert {rid for rid in made if rid in everything} == want, (csid, cuid)


async def test_identity_per_run_serves_many_users_with_one_capability(backend: Any) -> None:
    provider = backend.provider()
    await provider.remember("Ada's locker is number 12.", scope="user", user_id="ada")
    await provider.remember("Bob's locker is number 47.", scope="user", user_id="bob")
    model = MainModel()
    memory = MemoryCapability(provider, identity=lambda ctx: (None, ctx.deps), capture=False)
    agent: Agent[str, str] = Agent(FunctionModel(model), deps_type=str, capabilities=[memory])
    await agent.run("Which locker is mine?", deps="ada")
    await agent.run("Which locker is mine?", deps="bob")
    assert "number 12" in model.seen[0][2] and "number 47" not in model.seen[0][2]
    assert "number 47" in model.seen[1][2] and "number 12" not in model.seen[1][2]


async def test_hooks_turn_start_end_and_compaction(backend: Any) -> None:
    provider = backend.provider()
    await provider.remember("Ada prefers tea over coffee.", scope="user", user_id="ada", title="Drinks")
    hooks = MemoryHooks(provider, session_id="chat-1", user_id="ada", core_budget=500)
    ctx = await hooks.on_turn_start("Should I bring tea or coffee for Ada?")
    assert ctx.core.startswith(CORE_NOTICE) and "Ada prefers tea" in fenced_body(ctx.core)
    assert "tea" in fenced_body(ctx.recall) and ctx.recall_result is not None and ctx.recall_result.sources

    task = await hooks.on_turn_end("Remember that my parking spot is B12.", "Got it.")
    assert isinstance(task, asyncio.Task)
    later = await hooks.on_turn_start("Where is my parking spot?")  # waits for the previous turn's capture
    assert later.core == ctx.core and "B12" in fenced_body(later.recall)

    removed = [{"role": "user", "content": "Remember that my team standup is in room 4471."}, {"role": "assistant", "content": "Noted."}]
    result = await hooks.on_before_compaction_commit(removed, "The user shared a locker code.")
    assert result is not None and not result.fallback
    refreshed = await hooks.on_turn_start("Anything else?")
    assert "4471" in fenced_body(refreshed.core)  # the core block is refreshed after a compaction
    await hooks.flush()
    other = MemoryHooks(provider, session_id="chat-2", user_id="bob")
    theirs = await other.on_turn_start("What is the locker code and parking spot?")
    assert "4471" not in theirs.core + theirs.recall and "B12" not in theirs.core + theirs.recall
    assert "tea" not in theirs.core
