"""The capture worker: offline extraction, corrections, permissions, staging, fail-open, extractors, rendering."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from _doubles import first_prompt
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory.agents.profiles import load_profile
from agent_memory.agents.tools import CAPTURE
from agent_memory.agents.workers.capture import CaptureContext, CaptureResult, render_messages, rule_extractor
from agent_memory.backends.files.store import MemoryDraft
from agent_memory.provider import MemoryProvider
from agent_memory.redaction.api import SECRET_SAMPLES


class Script:
    """A FunctionModel body playing ``steps`` in order (the last repeats), recording what it was offered."""

    def __init__(self, *steps: Any) -> None:
        self.steps = steps
        self.infos: list[AgentInfo] = []
        self.prompts: list[str] = []

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.infos.append(info)
        self.prompts.append(first_prompt(messages))
        step = self.steps[min(len(self.infos) - 1, len(self.steps) - 1)]
        if isinstance(step, BaseException):
            raise step
        return step(messages, info) if callable(step) else step


def call(tool: str, **args: Any) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool, args)])


NO_REPLY = ModelResponse(parts=[TextPart("NO_REPLY")])


def make_provider(tmp_path, model: Any = "offline", *, root: str = "mem", **capture: Any) -> MemoryProvider:
    profile = load_profile("offline")
    profile = dataclasses.replace(profile, capture=dataclasses.replace(profile.capture, model=model, **capture))
    return MemoryProvider(tmp_path / root, profile=profile, durable=False)


async def contents(provider: MemoryProvider, user_id: str = "u1") -> list[str]:
    return sorted(r.content for r in await provider.list(limit=None, user_id=user_id))


# -- the offline profile ---------------------------------------------------------------------------------
async def test_offline_capture_turn_writes_explicit_statements(tmp_path):
    provider = make_provider(tmp_path)
    result = await provider.capture_turn(
        "Please remember that the staging server is called kestrel. I prefer short answers. "
        "We decided to ship on Thursdays. My timezone is CET. How long will this take?",
        "Noted, I'll keep that in mind.",
        session_id="s1",
        user_id="u1",
    )
    assert isinstance(result, CaptureResult) and not result.fallback and result.reason is None
    assert [w["status"] for w in result.written] == ["created"] * 4 and len(result.ids) == 4
    assert await contents(provider, user_id="someone-else") == []  # a capture for u1 stays in u1's partition
    assert await contents(provider) == [
        "Decision: ship on Thursdays.",
        "The staging server is called kestrel.",
        "User prefers short answers.",
        "User's timezone is CET.",
    ]
    for rid in result.ids:
        record = await provider.get(rid, user_id="u1")
        assert record.source == "turn_capture" and record.session_id == "s1" and record.user_id == "u1"
        assert record.scope == "user"
    assert result.usage["requests"] == 3 and result.usage["tool_calls"] == 8  # 4 searches + 4 remembers
    assert result.model == "offline" and set(result.to_dict()) >= {"written", "ids", "usage", "fallback", "reason"}
    again = await provider.capture_turn("Please remember that the staging server is called kestrel.", user_id="u1")
    assert again.written == [] and again.ids == []  # memory already holds it: searched, not remembered
    assert len(await contents(provider)) == 4
    provider.close()


async def test_a_correction_replaces_the_keyed_fact(tmp_path):
    provider = make_provider(tmp_path)
    first = await provider.capture_turn("My favourite editor is vim.")
    second = await provider.capture_turn("Actually, my favourite editor is Helix.")
    assert second.written == [{"id": first.ids[0], "status": "replaced"}]
    record = await provider.get(first.ids[0])
    assert record.content == "User's favourite editor is Helix." and record.memory_key == "user.favourite-editor"
    assert await contents(provider) == ["User's favourite editor is Helix."]
    provider.close()


async def test_nothing_to_capture(tmp_path):
    provider = make_provider(tmp_path)
    result = await provider.capture_turn("What's the weather like?", "Sunny.")
    assert (result.written, result.fallback) == ([], False) and result.usage["tool_calls"] == 0
    empty = await provider.capture_turn("", None)
    assert empty.written == [] and empty.usage["requests"] == 0
    assert await contents(provider) == []
    provider.close()


@pytest.mark.promise("secrets")
async def test_secrets_in_captured_statements_never_reach_disk(tmp_path):
    """Statements holding a secret are not captured at all; the other statements are."""
    provider = make_provider(tmp_path)
    samples = SECRET_SAMPLES[:6]
    text = " ".join(f"Remember that the key number {i} is {secret} ." for i, secret in enumerate(samples))
    result = await provider.capture_turn(text + " Remember that the deploy host is atlas.")
    assert not result.fallback and len(result.ids) == 1
    assert (await provider.get(result.ids[0])).content == "The deploy host is atlas."
    on_disk = "".join(p.read_text(encoding="utf-8", errors="replace") for p in (tmp_path / "mem").rglob("*.md"))
    for secret in samples:
        assert secret not in on_disk
    provider.close()


# -- compaction --------------------------------------------------------------------------------------------
async def test_capture_before_compaction_reads_model_messages_dicts_and_strings(tmp_path):
    provider = make_provider(tmp_path)
    removed = [
        ModelRequest(
            parts=[
                SystemPromptPart("You are helpful. Remember that the system prompt is secret."),
                UserPromptPart("My name is Ada. Please remember that invoices go out on the 5th."),
            ]
        ),
        ModelResponse(parts=[TextPart("Thanks Ada!"), ToolCallPart("lookup", {"q": "invoices"})]),
        ModelRequest(parts=[ToolReturnPart("lookup", {"rows": 3}), UserPromptPart(["I prefer email summaries.", "Thanks!"])]),
        {"role": "user", "content": [{"type": "text", "text": "We decided to use Stripe for billing."}]},
        {"role": "assistant", "content": "Remember that I am a bot."},
        "Let's go with monthly reports.",
        object(),
    ]
    result = await provider.capture_before_compaction(removed, "Ada discussed billing.", session_id="s9")
    assert not result.fallback, result.reason
    assert await contents(provider) == []  # no user known: the captures belong to session s9
    assert sorted(r.content for r in await provider.list(session_id="s9", limit=None)) == [
        "Decision: go with monthly reports.",
        "Decision: use Stripe for billing.",
        "Invoices go out on the 5th.",
        "User prefers email summaries.",
        "User's name is Ada.",
    ]
    for rid in result.ids:
        record = await provider.get(rid, session_id="s9")
        assert record.source == "compaction_capture" and record.scope == "session"
    provider.close()


def test_render_messages_is_robust():
    text = render_messages(
        [
            ModelRequest(parts=[SystemPromptPart("SYSTEM SECRET"), UserPromptPart("hello\nsecond line")]),
            ModelResponse(parts=[TextPart("hi"), ToolCallPart("t", {"a": 1})]),
            {"speaker": "Bob", "text": "a dict turn"},
            {"role": "system", "content": "DICT SYSTEM"},
            {"role": "human", "content": "from a human"},
            {"content": None},
            "plain string",
            "assistant: already labelled",
            42,
        ]
    )
    assert "SYSTEM" not in text
    assert text.splitlines() == [
        "user: hello",
        "second line",
        "assistant: hi",
        'assistant: [called t {"a":1}]',
        "Bob: a dict turn",
        "user: from a human",
        "message: plain string",
        "assistant: already labelled",
        "message: 42",
    ]
    assert render_messages([]) == "" and render_messages(None) == ""  # type: ignore[arg-type]


# -- tools and permissions ----------------------------------------------------------------------------------
async def test_scripted_capture_tool_order_and_staged_writes(tmp_path):
    def remember(messages, info):
        return ModelResponse(
            parts=[
                ToolCallPart(
                    "memory_remember",
                    {"content": "User's favourite colour is teal.", "kind": "fact", "memory_key": "user.colour", "on_existing": "replace"},
                ),
                ToolCallPart(
                    "memory_remember", {"content": "Decision: releases are cut on Mondays.", "kind": "decision", "tags": ["release"]}
                ),
            ]
        )

    script = Script(call("memory_search", query="favourite colour"), remember, NO_REPLY)
    provider = make_provider(tmp_path, FunctionModel(script))
    result = await provider.capture_turn("my favourite colour is teal; we cut releases on Mondays", "ok", user_id="u7")
    assert not result.fallback, result.reason
    assert sorted(t.name for t in script.infos[0].function_tools) == sorted(CAPTURE)  # never memory_forget
    assert "<transcript>" in script.prompts[0] and "user: my favourite colour is teal" in script.prompts[0]
    assert [w["status"] for w in result.written] == ["created", "created"] and result.usage["tool_calls"] == 3
    teal = await provider.get(result.ids[0], user_id="u7")
    assert (teal.memory_key, teal.kind, teal.source, teal.user_id) == ("user.colour", "fact", "turn_capture", "u7")
    assert (await provider.get(result.ids[1], user_id="u7")).tags == ("release",)
    assert teal.scope == "user" and (await provider.get(result.ids[1], user_id="u7")).scope == "user"
    provider.close()


@pytest.mark.promise("workers")
async def test_capture_cannot_forget(tmp_path):
    """A capture model calling memory_forget is refused (the tool is not offered); the record survives."""
    kept: dict[str, str] = {}
    script = Script(lambda messages, info: call("memory_forget", id=kept["id"]))
    provider = make_provider(tmp_path, FunctionModel(script))
    kept["id"] = (await provider.remember("The office wifi is called Lighthouse.")).id
    result = await provider.capture_turn("Forget the wifi name.")
    assert "memory_forget" not in [t.name for t in script.infos[0].function_tools]
    assert result.fallback and result.written == []
    assert (await provider.get(kept["id"])).content == "The office wifi is called Lighthouse."
    provider.close()


@pytest.mark.promise("workers")
async def test_a_failing_run_writes_nothing(tmp_path):
    """The model remembers, then raises: the staged write is dropped and the failure reported."""
    script = Script(call("memory_remember", content="User's car is a red bike."), RuntimeError("model crashed"))
    provider = make_provider(tmp_path, FunctionModel(script))
    result = await provider.capture_turn("My car is a red bike.")
    assert result.fallback and "RuntimeError" in (result.reason or "") and "model crashed" in (result.reason or "")
    assert result.written == [] and result.usage["tool_calls"] == 1
    assert await contents(provider) == []
    provider.close()


@pytest.mark.promise("workers")
async def test_capture_step_limit_and_timeout_write_nothing(tmp_path):
    """A looping capture model hits the step limit; a hanging one times out; neither writes anything."""
    loop = Script(call("memory_remember", content="User likes loops."))
    provider = make_provider(tmp_path, FunctionModel(loop), max_steps=2)
    result = await provider.capture_turn("I like loops.")
    assert result.fallback and (result.reason or "").startswith("step limit") and result.written == []

    async def hang(messages, info):
        await asyncio.sleep(30)
        return NO_REPLY

    slow_provider = make_provider(tmp_path, FunctionModel(hang), root="slow", timeout_s=0.2)
    slow = await slow_provider.capture_turn("I like loops.")
    assert slow.fallback and slow.reason == "timeout after 0.2s" and slow.written == []
    assert await contents(provider) == [] and await contents(slow_provider) == []
    provider.close()
    slow_provider.close()


async def test_invalid_remember_arguments_are_sent_back_to_the_model(tmp_path):
    def fixed(messages, info):
        return call("memory_remember", content="User's pet is a cat named Miso.")

    script = Script(call("memory_remember", content="   "), fixed, NO_REPLY)
    provider = make_provider(tmp_path, FunctionModel(script))
    result = await provider.capture_turn("My pet is a cat named Miso.")
    assert not result.fallback and [w["status"] for w in result.written] == ["created"]
    assert await contents(provider) == ["User's pet is a cat named Miso."]
    provider.close()


async def test_a_draft_the_store_rejects_does_not_stop_the_others(tmp_path):
    script = Script(
        ModelResponse(
            parts=[
                ToolCallPart("memory_remember", {"content": "Session-only note.", "scope": "session"}),  # no session_id
                ToolCallPart("memory_remember", {"content": "The build uses Bazel."}),
            ]
        ),
        NO_REPLY,
    )
    provider = make_provider(tmp_path, FunctionModel(script))
    result = await provider.capture_turn("The build uses Bazel.")
    assert not result.fallback and [w["status"] for w in result.written] == ["created"]
    assert len(result.rejected) == 1 and result.rejected[0]["index"] == 0 and "session" in result.rejected[0]["error"]
    assert await contents(provider) == ["The build uses Bazel."]
    provider.close()


# -- extractors ----------------------------------------------------------------------------------------------
def never_called(messages, info):  # pragma: no cover - the agent must not run when an extractor is set
    raise AssertionError("the capture agent ran although an extractor is configured")


async def test_turn_extractor_replaces_the_agent(tmp_path):
    seen: list[CaptureContext] = []

    def extractor(ctx: CaptureContext):
        seen.append(ctx)
        return [{"content": f"Turn said: {ctx.input}", "kind": "summary"}, "A plain string draft.", None][:2]

    provider = make_provider(tmp_path, FunctionModel(never_called))
    provider.turn_extractor = extractor
    result = await provider.capture_turn("we ship friday", "great", session_id="s2", user_id="u2")
    assert not result.fallback and len(result.ids) == 2 and result.model == "extractor:extractor"
    assert seen[0].kind == "turn" and seen[0].output == "great" and "user: we ship friday" in seen[0].transcript
    for rid in result.ids:
        record = await provider.get(rid, session_id="s2", user_id="u2")
        assert record.source == "turn_capture" and (record.session_id, record.user_id) == ("s2", "u2")
        assert record.scope == "user"  # an extractor's draft without a scope goes to the caller's user
    assert (await provider.get(result.ids[0], user_id="u2")).kind == "summary"
    provider.close()


async def test_async_compaction_extractor_gets_the_removed_messages(tmp_path):
    async def extractor(ctx: CaptureContext):
        await asyncio.sleep(0)
        assert ctx.kind == "compaction" and ctx.next_summary == "the summary" and len(ctx.removed_messages) == 2
        return MemoryDraft(content="Compacted: " + ctx.transcript.replace("\n", " | "), tags=("compaction",))

    provider = make_provider(tmp_path, FunctionModel(never_called))
    provider.compaction_extractor = extractor
    result = await provider.capture_before_compaction(["first message", {"role": "user", "content": "second"}], "the summary")
    assert not result.fallback and len(result.ids) == 1
    record = await provider.get(result.ids[0])
    assert record.content == "Compacted: message: first message | user: second"
    assert record.source == "compaction_capture"
    provider.close()


@pytest.mark.promise("workers")
async def test_failing_extractors_never_raise(tmp_path):
    """An extractor that raises or returns garbage: capture reports the failure and writes nothing."""
    provider = make_provider(tmp_path, FunctionModel(never_called))

    def boom(ctx):
        raise ValueError("extractor bug")

    provider.turn_extractor = boom
    result = await provider.capture_turn("anything")
    assert result.fallback and "extractor bug" in (result.reason or "") and result.written == []
    provider.turn_extractor = lambda ctx: [{"content": "fine"}, {"content": "x", "colour": "red"}]
    bad = await provider.capture_turn("anything")
    assert bad.fallback and "colour" in (bad.reason or "") and bad.written == []
    assert await contents(provider) == []
    provider.close()


async def test_rule_extractor_works_as_a_plain_extractor(tmp_path):
    provider = make_provider(tmp_path, FunctionModel(never_called))
    provider.turn_extractor = rule_extractor
    await provider.capture_turn("My home city is Lisbon. I love jazz.")
    result = await provider.capture_turn("Actually, my home city is Porto.")
    assert [w["status"] for w in result.written] == ["replaced"]
    assert await contents(provider) == ["User loves jazz.", "User's home city is Porto."]
    provider.close()
