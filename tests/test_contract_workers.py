"""The recall and capture workers end to end, identically on every backend.

The workers get the backend and the caller, never the provider; here they are reached through
``MemoryProvider(<root or url>)`` with the offline profile (deterministic) or a scripted ``FunctionModel``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from _doubles import tool_returns
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory.agents.profiles import load_profile
from agent_memory.agents.tools import CAPTURE, READ


class Script:
    """A FunctionModel body playing ``steps`` in order (the last repeats); records what it was offered."""

    def __init__(self, *steps: Any) -> None:
        self.steps = steps
        self.infos: list[AgentInfo] = []

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.infos.append(info)
        step = self.steps[min(len(self.infos) - 1, len(self.steps) - 1)]
        if isinstance(step, BaseException):
            raise step
        return step(messages, info) if callable(step) else step

    def offered(self) -> list[str]:
        return sorted(t.name for t in self.infos[0].function_tools)


def call(tool: str, **args: Any) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool, args)])


def text(value: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(value)])


returns = tool_returns


NO_REPLY = text("NO_REPLY")


def provider_with(backend: Any, *, recall: Any = "offline", capture: Any = "offline", **limits: Any) -> Any:
    profile = load_profile("offline")
    profile = dataclasses.replace(
        profile,
        recall=dataclasses.replace(profile.recall, model=recall, **limits),
        capture=dataclasses.replace(profile.capture, model=capture, **limits),
    )
    return backend.provider(profile=profile)


async def seed(provider: Any) -> dict[str, str]:
    return {
        "deploy": (await provider.remember("Deploys happen on Tuesdays at 14:00 UTC.\nDana approves every deploy.")).id,
        "db": (await provider.remember("Decision: the main database is Postgres 16.")).id,
        "lunch": (await provider.remember("The team likes tacos for lunch on Fridays.")).id,
    }


# -- recall --------------------------------------------------------------------------------------------
async def test_offline_recall_finds_and_cites_the_right_lines(backend: Any) -> None:
    provider = provider_with(backend)
    ids = await seed(provider)
    result = await provider.recall("Who approves deploys, and when do they happen?")
    assert not result.fallback and result.reason is None
    assert "Dana approves every deploy." in result.summary and "Tuesdays at 14:00 UTC" in result.summary
    assert "tacos" not in result.summary and "Postgres" not in result.summary
    assert [s["id"] for s in result.sources] == [ids["deploy"]]
    record = await provider.get(ids["deploy"])
    assert record.body_line <= result.sources[0]["line_start"] <= result.sources[0]["line_end"]
    assert result.usage["tool_calls"] >= 2


def offered(tools: tuple[str, ...], backend: Any) -> list[str]:
    """The tools a worker is offered: the same on every backend (session logs and episodes included)."""
    return sorted(tools)


async def test_scripted_recall_search_then_get_lines_then_cited_answer(backend: Any) -> None:
    state: dict[str, Any] = {}

    def get(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        hit = returns(messages, "memory_search")[-1]["hits"][0]
        state["hit"] = hit
        return call("memory_get", id=hit["id"], line_start=hit["line_start"], line_end=hit["line_end"])

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        state["got"] = returns(messages, "memory_get")[-1]
        h = state["hit"]
        return text(f"Dana approves deploys [{h['id']}:L{h['line_start']}-L{h['line_end']}].")

    script = Script(call("memory_search", query="who approves deploys"), get, answer)
    provider = provider_with(backend, recall=FunctionModel(script))
    ids = await seed(provider)
    result = await provider.recall("Who approves deploys?")
    assert not result.fallback, result.reason
    assert script.offered() == offered(READ, backend)
    hit, got = state["hit"], state["got"]["content"]
    assert hit["id"] == ids["deploy"] and "Dana approves every deploy." in got  # the hit's lines, read back
    assert len(got.split("\n")) == hit["line_end"] - hit["line_start"] + 1
    assert [s["id"] for s in result.sources] == [ids["deploy"]]
    assert result.summary.startswith("Dana approves deploys [")


async def test_recall_sees_only_the_callers_memory(backend: Any) -> None:
    provider = provider_with(backend)
    await provider.remember("The vault combination hint is the blue notebook.", scope="session", session_id="alice-1", user_id="alice")
    await provider.remember("The vault spare key is under the red mat.", scope="user", user_id="alice")
    for who in ({"session_id": "bob-1"}, {"user_id": "bob"}, {"session_id": "alice-1", "user_id": "bob"}, {"session_id": "alice-1"}, {}):
        other = await provider.recall("vault combination hint spare key", **who)
        assert "blue notebook" not in other.summary and "red mat" not in other.summary, who
        assert other.sources == [], who
    mine = await provider.recall("vault combination hint spare key", session_id="alice-1", user_id="alice")
    assert "blue notebook" in mine.summary and "red mat" in mine.summary and len(mine.sources) == 2


async def test_recall_fails_open_with_a_lexical_fallback(backend: Any) -> None:
    provider = provider_with(backend, recall=FunctionModel(Script(RuntimeError("model down"))))
    ids = await seed(provider)
    result = await provider.recall("When do deploys happen?")
    assert result.fallback and "model down" in (result.reason or "")
    assert ids["deploy"] in [s["id"] for s in result.sources] and "Tuesdays" in result.summary


async def test_recall_timeout_never_blocks_the_turn(backend: Any) -> None:
    async def hang(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(30)
        return text("late")

    provider = provider_with(backend, recall=FunctionModel(hang), timeout_s=0.3)
    await seed(provider)
    started = asyncio.get_running_loop().time()
    result = await provider.recall("When do deploys happen?")
    assert asyncio.get_running_loop().time() - started < 5
    assert result.fallback and "Tuesdays" in result.summary


# -- capture -------------------------------------------------------------------------------------------
async def test_offline_capture_writes_into_the_callers_partition(backend: Any) -> None:
    provider = provider_with(backend)
    result = await provider.capture_turn(
        "Please remember that the staging server is called kestrel. I prefer short answers. "
        "We decided to ship on Thursdays. How long will this take?",
        "Noted.",
        session_id="s1",
        user_id="u1",
    )
    assert not result.fallback and [w["status"] for w in result.written] == ["created"] * 3
    for rid in result.ids:
        record = await provider.get(rid, user_id="u1")
        assert (record.source, record.scope, record.user_id, record.session_id) == ("turn_capture", "user", "u1", "s1")
    assert sorted(r.content for r in await provider.list(user_id="u1", limit=None)) == [
        "Decision: ship on Thursdays.",
        "The staging server is called kestrel.",
        "User prefers short answers.",
    ]
    for who in ({"user_id": "u2"}, {"session_id": "s1"}, {}):
        assert await provider.list(limit=None, **who) == [], who
    again = await provider.capture_turn("Please remember that the staging server is called kestrel.", user_id="u1")
    assert again.ids == [] and await provider.count(user_id="u1") == 3  # already known: nothing doubled


async def test_a_correction_replaces_the_keyed_fact_in_its_partition(backend: Any) -> None:
    provider = provider_with(backend)
    first = await provider.capture_turn("My favourite editor is vim.", user_id="ada")
    theirs = await provider.capture_turn("My favourite editor is emacs.", user_id="bob")
    second = await provider.capture_turn("Actually, my favourite editor is Helix.", user_id="ada")
    assert second.written == [{"id": first.ids[0], "status": "replaced"}]
    assert (await provider.get(first.ids[0], user_id="ada")).content == "User's favourite editor is Helix."
    assert (await provider.get(theirs.ids[0], user_id="bob")).content == "User's favourite editor is emacs."


async def test_compaction_capture_without_a_user_belongs_to_the_session(backend: Any) -> None:
    provider = provider_with(backend)
    removed = [
        {"role": "user", "content": "We decided to use Stripe for billing."},
        {"role": "assistant", "content": "Remember that I am a bot."},
    ]
    result = await provider.capture_before_compaction(removed, "Billing was discussed.", session_id="s9")
    assert not result.fallback, result.reason
    assert [r.content for r in await provider.list(session_id="s9", limit=None)] == ["Decision: use Stripe for billing."]
    record = (await provider.list(session_id="s9"))[0]
    assert (record.scope, record.session_id, record.source) == ("session", "s9", "compaction_capture")
    assert await provider.list(session_id="s8", limit=None) == []


async def test_scripted_capture_stages_writes_into_the_callers_partition(backend: Any) -> None:
    def remember(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(
            parts=[
                ToolCallPart("memory_remember", {"content": "User's favourite colour is teal.", "memory_key": "user.colour"}),
                ToolCallPart("memory_remember", {"content": "Releases are cut on Mondays.", "tags": ["release"]}),
            ]
        )

    script = Script(call("memory_search", query="favourite colour"), remember, NO_REPLY)
    provider = provider_with(backend, capture=FunctionModel(script))
    result = await provider.capture_turn("my favourite colour is teal; we cut releases on Mondays", "ok", session_id="chat-3", user_id="u7")
    assert not result.fallback, result.reason
    assert script.offered() == offered(CAPTURE, backend)  # never memory_forget
    assert [w["status"] for w in result.written] == ["created", "created"]
    teal = await provider.get(result.ids[0], user_id="u7")
    assert (teal.memory_key, teal.source, teal.scope, teal.user_id) == ("user.colour", "turn_capture", "user", "u7")
    assert (await provider.get(result.ids[1], user_id="u7")).tags == ("release",)
    assert await provider.list(user_id="u8", limit=None) == [] and await provider.list(limit=None) == []


async def test_a_failing_capture_run_writes_nothing(backend: Any) -> None:
    script = Script(call("memory_remember", content="User's car is a red bike."), RuntimeError("model crashed"))
    provider = provider_with(backend, capture=FunctionModel(script))
    result = await provider.capture_turn("My car is a red bike.", user_id="u1")
    assert result.fallback and "model crashed" in (result.reason or "") and result.written == []
    assert await provider.count(user_id="u1") == 0


async def test_background_capture_then_flush(backend: Any) -> None:
    provider = provider_with(backend)
    task = provider.capture_turn_in_background("Remember that my badge number is 5521.", "Noted.", user_id="ada")
    results = await provider.flush()
    assert task.done() and task.result() in results and provider.pending == 0
    hits = (await provider.search("badge number", user_id="ada")).hits
    assert hits and "5521" in hits[0].snippet
    assert (await provider.search("badge number", user_id="bob")).hits == []
