"""MemoryCapability: prompt-cache-stable memory for pydantic-ai agents.

The main agent is a scripted ``FunctionModel`` that records exactly what it receives
(instructions and messages) on every request; the memory side is a real provider.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from _doubles import last_turn
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory import MemoryProvider
from agent_memory.agents.fence import CLOSE, OPEN
from agent_memory.integrations.hooks import CORE_NOTICE, RECALL_NOTICE
from agent_memory.integrations.pydantic_ai import MemoryCapability, keep_recent_turns


# -- the main agent: a scripted model that records what it receives ------------------------
@dataclass
class Seen:
    instructions: str
    messages: list[bytes]  # each message serialized as pydantic-ai would store it
    raw: list[ModelMessage]

    @property
    def text(self) -> str:
        return "\n".join(m.decode() for m in self.messages)

    def user_parts(self) -> list[str]:
        out = []
        for message in self.raw:
            if isinstance(message, ModelRequest):
                out += [p.content for p in message.parts if isinstance(p, UserPromptPart) and isinstance(p.content, str)]
        return out

    def recall_parts(self) -> list[str]:
        return [p for p in self.user_parts() if p.startswith(RECALL_NOTICE)]


@dataclass
class ScriptedMainModel:
    """Answers after ``steps[prompt]`` tool calls; records every request."""

    steps: dict[str, int] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    events: list[str] | None = None

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(
            Seen(
                info.instructions or "",
                [ModelMessagesTypeAdapter.dump_json([m]) for m in messages],
                list(messages),
            )
        )
        if self.events is not None:
            self.events.append(f"model:{len(messages)}")
        prompt, done = _current_turn(messages)
        if done < self.steps.get(prompt, 0):
            return ModelResponse(parts=[ToolCallPart("lookup", {"query": prompt, "step": done + 1})])
        return ModelResponse(parts=[TextPart(f"answer to: {prompt}")])


def _current_turn(messages: list[ModelMessage]) -> tuple[str, int]:
    """The turn's user prompt (not a recall part) and how many tool returns followed it."""
    returns = 0
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            returns += sum(isinstance(p, ToolReturnPart) for p in message.parts)
            prompts = [
                p.content
                for p in message.parts
                if isinstance(p, UserPromptPart) and isinstance(p.content, str) and not p.content.startswith(RECALL_NOTICE)
            ]
            if prompts:
                return prompts[0], returns
    return "", returns


def make_agent(model: ScriptedMainModel, *capabilities: Any) -> Agent:
    agent = Agent(FunctionModel(model), instructions="You are a helpful assistant.", capabilities=list(capabilities))

    @agent.tool_plain
    def lookup(query: str, step: int) -> str:
        return f"lookup result {step} for {query!r}"

    return agent


# -- the memory side --------------------------------------------------------------------
class CountingProvider(MemoryProvider):
    """A real provider that records every façade call the capability makes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def inject(self, budget: int = 1500, **kw: Any):
        self.calls.append(("inject", kw))
        return await super().inject(budget, **kw)

    async def recall(self, message: str, **kw: Any):
        self.calls.append(("recall", {"message": message, **kw}))
        return await super().recall(message, **kw)

    async def capture_turn(self, input: str, output: str | None = None, **kw: Any):
        self.calls.append(("capture_turn", {"input": input, "output": output, **kw}))
        return await super().capture_turn(input, output, **kw)

    def calls_to(self, name: str) -> int:
        return sum(1 for call, _ in self.calls if call == name)


@pytest.fixture
def provider(tmp_path):
    p = CountingProvider(tmp_path / "mem")
    yield p
    p.close()


async def converse(agent: Agent, prompts: list[str], provider: MemoryProvider, history: list[ModelMessage] | None = None):
    outputs = []
    for prompt in prompts:
        result = await agent.run(prompt, message_history=history)
        history = result.all_messages()
        outputs.append(result.output)
        await provider.flush()
    return outputs, history


# -- tests -------------------------------------------------------------------------------
async def test_recall_runs_once_per_user_turn_and_is_reused_across_tool_loop(provider):
    await provider.remember("The deploy window is Tuesday 14:00 UTC.", title="Deploy window")
    model = ScriptedMainModel(steps={"When is the deploy window?": 3, "And who approves deploys?": 2})
    memory = MemoryCapability(provider, session_id="s1", user_id="ada", capture=False)
    agent = make_agent(model, memory)

    result = await agent.run("When is the deploy window?")
    assert len(model.seen) == 4  # three tool-loop steps, then the answer
    assert provider.calls_to("recall") == 1
    recalled = model.seen[0].recall_parts()
    assert len(recalled) == 1 and "Tuesday 14:00 UTC" in recalled[0]
    for later in model.seen[1:]:  # the same part, resent unchanged, never recalled again
        assert later.recall_parts() == recalled

    await agent.run("And who approves deploys?", message_history=result.all_messages())
    assert provider.calls_to("recall") == 2  # a new user turn recalls again
    assert [c["message"] for n, c in provider.calls if n == "recall"] == ["When is the deploy window?", "And who approves deploys?"]
    assert provider.calls_to("inject") == 1  # the core block is computed once per conversation


async def test_a_fact_captured_in_turn_one_reaches_the_main_model_in_turn_two(provider):
    model = ScriptedMainModel()
    memory = MemoryCapability(provider, session_id="s1", user_id="ada")
    agent = make_agent(model, memory)

    first = await agent.run("Please remember that my cat is called Miso.")
    # turn 2 starts right away: it waits for turn 1's background capture before recalling
    await agent.run("What is my cat called?", message_history=first.all_messages())
    assert provider.calls_to("capture_turn") >= 1
    turn2 = model.seen[-1]
    recalled = turn2.recall_parts()
    assert recalled and "Miso" in recalled[-1], "the captured fact must reach the model through recall"
    assert "Miso" not in turn2.instructions  # the frozen core block was computed before the capture
    assert memory.last_turn is not None and "Miso" in last_turn(memory).recall


async def test_capture_runs_at_run_end_with_the_turns_input_and_output_in_the_background(provider):
    model = ScriptedMainModel(steps={"Remember: the office wifi is called Larch.": 1})
    memory = MemoryCapability(provider, session_id="s1", user_id="ada")
    agent = make_agent(model, memory)
    result = await agent.run("Remember: the office wifi is called Larch.")
    captures = [c for n, c in provider.calls if n == "capture_turn"]
    assert all(c.pop("at").tzinfo is not None for c in captures)  # when the turn was said (docs/time.md)
    assert captures == [
        {"input": "Remember: the office wifi is called Larch.", "output": result.output, "session_id": "s1", "user_id": "ada"}
    ]
    task = last_turn(memory).capture
    assert isinstance(task, asyncio.Task)
    results = await provider.flush()
    assert task.done() and task.result() in results

    foreground = MemoryCapability(provider, session_id="s1", user_id="ada", background_capture=False)
    await make_agent(ScriptedMainModel(), foreground).run("Remember: the printer is on floor 3.")
    assert not isinstance(last_turn(foreground).capture, asyncio.Task)  # already done when the run returned


class BrokenRecallProvider(CountingProvider):
    def __init__(self, *args: Any, mode: str = "raise", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.mode = mode

    async def recall(self, message: str, **kw: Any):
        self.calls.append(("recall", {"message": message, **kw}))
        if self.mode == "hang":
            await asyncio.sleep(30)
        raise RuntimeError("recall worker exploded")

    async def inject(self, budget: int = 1500, **kw: Any):
        if self.mode == "raise":
            raise OSError("disk on fire")
        return await super().inject(budget, **kw)


@pytest.mark.parametrize("mode", ["raise", "hang"])
async def test_recall_failure_never_breaks_the_main_run(tmp_path, mode, caplog):
    provider = BrokenRecallProvider(tmp_path / "mem", mode=mode)
    await provider.remember("Anything at all about pizza.")
    model = ScriptedMainModel(steps={"Tell me about pizza": 1})
    memory = MemoryCapability(provider, session_id="s1", capture=False, recall_timeout=0.2)
    result = await make_agent(model, memory).run("Tell me about pizza")
    assert result.output == "answer to: Tell me about pizza"
    assert provider.calls_to("recall") == 1
    assert all(not s.recall_parts() for s in model.seen)  # the turn simply had no recalled memory
    assert "recall failed" in caplog.text
    provider.close()


async def test_empty_recall_adds_nothing(provider):
    model = ScriptedMainModel()
    memory = MemoryCapability(provider, session_id="s1", capture=False)
    await make_agent(model, memory).run("Completely unrelated question about volcanoes")
    assert provider.calls_to("recall") == 1
    (seen,) = model.seen
    assert seen.user_parts() == ["Completely unrelated question about volcanoes"]
    assert seen.instructions == "You are a helpful assistant."  # empty memory: no core block either
    assert last_turn(memory).recall == ""


class CompactionProvider(CountingProvider):
    def __init__(self, *args: Any, events: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.order = events
        self.compactions: list[tuple[list[ModelMessage], str | None]] = []

    async def capture_before_compaction(self, removed_messages, next_summary=None, **kw: Any):
        self.order.append("capture:start")
        await asyncio.sleep(0.05)  # a slow capture must still finish before the trimmed history is used
        result = await super().capture_before_compaction(removed_messages, next_summary, **kw)
        self.compactions.append((list(removed_messages), next_summary))
        self.order.append("capture:done")
        return result


async def test_compaction_capture_is_awaited_before_the_trimmed_history_is_used(tmp_path):
    events: list[str] = []
    provider = CompactionProvider(tmp_path / "mem", events=events)
    await provider.remember("Lockers are on floor 2, next to the showers.", title="Lockers")
    model = ScriptedMainModel(events=events)
    memory = MemoryCapability(provider, session_id="s1", user_id="ada", capture=False)
    agent = make_agent(model, memory, memory.compaction(keep_turns=2))

    _, history = await converse(agent, ["turn one: my locker room is 4471", "turn two", "turn three"], provider)
    assert provider.compactions, "the third turn trims the first one away"
    removed, summary = provider.compactions[0]
    removed_text = json.dumps([json.loads(ModelMessagesTypeAdapter.dump_json([m])) for m in removed])
    assert "turn one: my locker room is 4471" in removed_text and summary is None
    assert model.seen[0].recall_parts(), "turn one had recalled memory in its history"
    assert RECALL_NOTICE not in removed_text  # recalled memory is not handed back to capture as user speech
    first = events.index("capture:start")
    assert events[first + 1] == "capture:done", events  # nothing reached the model in between
    trimmed_call = model.seen[len([e for e in events[:first] if e.startswith("model:")])]
    assert "turn one" not in trimmed_call.text and "turn two" in trimmed_call.text
    assert "4471" not in json.dumps([json.loads(ModelMessagesTypeAdapter.dump_json([m])) for m in history])
    assert last_turn(memory).compactions == 1
    provider.close()


async def test_compaction_is_the_one_point_where_the_core_block_is_refreshed(tmp_path):
    provider = CompactionProvider(tmp_path / "mem", events=[])
    model = ScriptedMainModel()
    memory = MemoryCapability(provider, session_id="s1", user_id="ada", capture=False)
    agent = make_agent(model, memory, memory.compaction(keep_turns=2))

    await provider.remember("Ada's team is called Falcon.", scope="user", user_id="ada")
    r1 = await agent.run("one")
    await provider.remember("Ada moved to team Heron.", scope="user", user_id="ada")  # written mid-conversation
    r2 = await agent.run("two", message_history=r1.all_messages())
    assert model.seen[-1].instructions == model.seen[0].instructions  # frozen: no "Heron" yet
    assert "Heron" not in model.seen[-1].instructions
    r3 = await agent.run("three", message_history=r2.all_messages())  # compacts turn one away
    assert provider.compactions
    assert "Heron" not in model.seen[-1].instructions  # fixed for the rest of the compacting run
    await agent.run("four", message_history=r3.all_messages())
    assert "Heron" in model.seen[-1].instructions  # refreshed from the next turn on
    provider.close()


async def test_compaction_with_a_summarizing_processor_passes_the_summary(tmp_path):
    provider = CompactionProvider(tmp_path / "mem", events=[])
    model = ScriptedMainModel()
    memory = MemoryCapability(provider, session_id="s1", capture=False, recall=False)

    def summarize(messages: list[ModelMessage]) -> list[ModelMessage]:
        if len(messages) <= 3:
            return messages
        summary = ModelRequest(parts=[UserPromptPart(f"Summary: {len(messages) - 1} earlier messages about birds.")])
        return [summary, messages[-1]]

    agent = make_agent(model, memory, memory.compaction(summarize))
    await converse(agent, ["ravens", "crows", "magpies"], provider)
    removed, summary = provider.compactions[0]
    assert summary == "Summary: 4 earlier messages about birds."
    assert any("ravens" in ModelMessagesTypeAdapter.dump_json([m]).decode() for m in removed)
    provider.close()


async def test_ten_turn_conversation_with_tool_calls_is_prompt_cache_stable(provider):
    await provider.remember("Ada prefers window seats on trains.", scope="user", user_id="ada", title="Seats")
    await provider.remember("The team offsite is in Porto in June.", title="Offsite")
    prompts = [
        "Hi, I'm planning travel for the offsite.",
        "Where is the offsite again?",
        "Book me a train seat, I like window seats.",
        "Remember that my employee number is 8812.",
        "What hotels are near the venue in Porto?",
        "Please remember I am vegetarian.",
        "Find a restaurant for the team dinner.",
        "What is my employee number?",
        "Summarise my travel preferences.",
        "Thanks, that is all for the offsite.",
    ]
    model = ScriptedMainModel(steps={p: (i % 3) for i, p in enumerate(prompts)})  # 0, 1 or 2 tool calls per turn
    memory = MemoryCapability(provider, session_id="trip", user_id="ada")
    agent = make_agent(model, memory)
    await converse(agent, prompts, provider)

    assert len(model.seen) == sum(1 + i % 3 for i in range(10))
    first = model.seen[0]
    assert CORE_NOTICE in first.instructions and "window seats" in first.instructions
    recalled_texts: set[str] = set()
    for previous, current in zip(model.seen, model.seen[1:]):
        assert current.instructions == first.instructions  # byte-identical across all requests and turns
        assert current.messages[: len(previous.messages)] == previous.messages  # earlier bytes resent unchanged
    for seen in model.seen:
        for part in seen.recall_parts():
            recalled_texts.add(part)
            body = part.split(OPEN, 1)[1].split(CLOSE, 1)[0].strip()
            assert body and body not in seen.instructions  # recalled text never in the instructions
        assert RECALL_NOTICE not in seen.instructions
    assert len(recalled_texts) >= 3  # recall did deliver memory, in several turns
    assert provider.calls_to("recall") == 10 and provider.calls_to("inject") == 1
    assert provider.calls_to("capture_turn") == 10
    last = model.seen[-1]
    assert any("8812" in part for part in last.recall_parts()), "mid-conversation memories arrive via recall"
    assert "8812" not in last.instructions


async def test_another_users_or_sessions_memory_never_reaches_the_model(provider):
    await provider.remember("Mallory's secret project is codenamed Quokka.", scope="user", user_id="mallory")
    await provider.remember("In another chat we discussed the Papaya migration.", scope="session", session_id="other-chat")
    await provider.remember("Ada's favourite fruit is the mango; project Quokka? never heard of it.", scope="user", user_id="ada")
    await provider.remember("The shared wiki lives at wiki.example.com.", scope="project")
    model = ScriptedMainModel(steps={"Tell me about Quokka and the Papaya migration, and mango.": 1})
    memory = MemoryCapability(provider, session_id="my-chat", user_id="ada")
    agent = make_agent(model, memory)
    result = await agent.run("What do you know about Mallory, codename Quokka, Papaya migration?")
    await agent.run("Tell me about Quokka and the Papaya migration, and mango.", message_history=result.all_messages())
    await provider.flush()

    everything = "\n".join(s.instructions + "\n" + s.text for s in model.seen)
    assert "Mallory's secret" not in everything and "codenamed Quokka" not in everything
    assert "Papaya migration." not in everything.replace("Papaya migration?", "").replace("Papaya migration, and", "")
    assert "In another chat" not in everything
    assert "mango" in model.seen[0].instructions  # positive control: Ada's own memory does arrive
    assert "wiki.example.com" in model.seen[0].instructions
    for name, kwargs in provider.calls:
        assert kwargs.get("session_id") == "my-chat" and kwargs.get("user_id") == "ada", name


async def test_a_new_conversation_gets_a_fresh_core_block(provider):
    model = ScriptedMainModel()
    memory = MemoryCapability(provider, session_id="s1", user_id="ada", capture=False, recall=False)
    agent = make_agent(model, memory)
    first = await agent.run("one")
    await provider.remember("Ada now works on the billing service.", scope="user", user_id="ada")
    await agent.run("two", message_history=first.all_messages())
    assert "billing" not in model.seen[-1].instructions  # same conversation: frozen
    await agent.run("fresh start")  # no history: a new conversation
    assert "billing" in model.seen[-1].instructions
    assert provider.calls_to("inject") == 2


def test_keep_recent_turns_cuts_on_turn_boundaries_only():
    def turn(prompt: str, tools: int, recall: bool) -> list[ModelMessage]:
        parts = [UserPromptPart(prompt)]
        out: list[ModelMessage] = [ModelRequest(parts=parts)]
        if recall:
            out.append(ModelRequest(parts=[UserPromptPart(RECALL_NOTICE + " ...")]))
        for i in range(tools):
            out.append(ModelResponse(parts=[ToolCallPart("t", {}, tool_call_id=f"{prompt}{i}")]))
            out.append(ModelRequest(parts=[ToolReturnPart("t", "x", tool_call_id=f"{prompt}{i}")]))
        out.append(ModelResponse(parts=[TextPart("ok")]))
        return out

    history = turn("a", 1, True) + turn("b", 2, False) + turn("c", 0, True)
    trim = keep_recent_turns(2)
    kept = trim(history)
    assert kept == history[len(turn("a", 1, True)) :]
    assert trim(kept) == kept and keep_recent_turns(5)(history) == history
    with pytest.raises(ValueError):
        keep_recent_turns(0)


async def test_recall_and_capture_can_be_switched_off(provider):
    await provider.remember("The printer is on floor 3.")
    model = ScriptedMainModel()
    memory = MemoryCapability(provider, session_id="s1", recall=False, capture=False)
    await make_agent(model, memory).run("Remember that the printer is broken. Where is the printer?")
    await provider.flush()
    assert provider.calls_to("recall") == 0 and provider.calls_to("capture_turn") == 0
    assert not model.seen[0].recall_parts() and "floor 3" in model.seen[0].instructions  # the core block still comes


async def test_structured_output_is_captured_as_json(provider):
    from pydantic import BaseModel

    class Booking(BaseModel):
        restaurant: str
        seats: int

    def model_fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        tool = info.output_tools[0]
        return ModelResponse(parts=[ToolCallPart(tool.name, {"restaurant": "Casa Verde", "seats": 4})])

    memory = MemoryCapability(provider, session_id="s1", user_id="ada", background_capture=False)
    agent = Agent(FunctionModel(model_fn), output_type=Booking, capabilities=[memory])
    result = await agent.run("Book Casa Verde for four.")
    assert result.output == Booking(restaurant="Casa Verde", seats=4)
    (call,) = [c for n, c in provider.calls if n == "capture_turn"]
    assert call["input"] == "Book Casa Verde for four." and json.loads(call["output"]) == {"restaurant": "Casa Verde", "seats": 4}


def test_run_sync_with_foreground_capture(tmp_path):
    provider = CountingProvider(tmp_path / "mem")
    memory = MemoryCapability(provider, session_id="s1", user_id="ada", background_capture=False)
    make_agent(ScriptedMainModel(), memory).run_sync("Please remember that my cat is called Miso.")
    assert provider.calls_to("capture_turn") == 1
    assert any("Miso" in r.content for r in provider.store.list(session_id="s1", user_id="ada"))
    provider.close()
