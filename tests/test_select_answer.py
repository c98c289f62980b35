"""Recall's ``select`` answer mode: the model picks numbered results, the worker writes the cited summary.

Measured on Qwen2.5-Coder-1.5B (docs/benchmarks.md, *Workers on real models*): asked for a cited summary, the model
replied ``NO_RELEVANT_MEMORY`` over the very records that answered (r1, r3, m2, m3) and the 0.5B model copied the
citation template. Scripted models (FunctionModel) pin what the worker does with each kind of reply.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory.agents.models.select import Choice, parse_selection
from agent_memory.agents.profiles import load_profile, parse_profile
from agent_memory.errors import ProfileError
from agent_memory.provider import MemoryProvider

SEARCH = '{"name": "memory_search", "arguments": {"query": "editor"}}'


def text(value: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(value)])


class Script:
    """Plays ``steps`` (responses or callables; the last repeats), recording the messages each request was sent."""

    def __init__(self, *steps: Any) -> None:
        self.steps = steps
        self.seen: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        step = self.steps[min(len(self.seen) - 1, len(self.steps) - 1)]
        return step(messages, info) if callable(step) else step


def sent_text(messages: list[ModelMessage]) -> str:
    return "\n".join(str(p.content) for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, UserPromptPart))


def last_text(messages: list[ModelMessage]) -> str:
    """The last text part of the last request (what the model read last)."""
    last = messages[-1]
    prompts = [str(p.content) for p in last.parts if isinstance(p, UserPromptPart)] if isinstance(last, ModelRequest) else []
    return prompts[-1] if prompts else ""


def pick(word: str):
    """A model that replies with the number of the listed result containing ``word``."""

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        found = re.search(rf"^(\d+)\. .*{word}", sent_text(messages), re.M)
        assert found, sent_text(messages)
        return text(found.group(1))

    return reply


def provider_with(tmp_path, model: Any, **settings: Any) -> MemoryProvider:
    profile = load_profile("offline")
    settings.setdefault("tool_mode", "prompted")
    worker = dataclasses.replace(profile.recall, model=model, **settings)
    return MemoryProvider(tmp_path / "mem", profile=dataclasses.replace(profile, recall=worker), durable=False)


SHOWN = [Choice(f"r-{n}", n, n, f"T{n}", f"text {n}") for n in range(1, 4)]


@pytest.mark.parametrize(
    ("reply", "numbers"),
    [
        ("3, 1", (3, 1)),
        ("3,1", (3, 1)),
        ("[3] [1]", (3, 1)),
        ("[#3], [#1]", (3, 1)),
        ("#3 and #1", (3, 1)),
        ("Records: 3, 1.", (3, 1)),
        ("1.\n3.", (1, 3)),
        ("```\n2\n```", (2,)),
        ("The answer is result 2.", (2,)),
        ('{"numbers": [2, 3]}', (2, 3)),
        ("3, 1, 3", (3, 1)),
    ],
)
def test_numbers_are_read_in_the_shapes_small_models_write(reply, numbers):
    picked = parse_selection(reply, SHOWN)
    assert picked.numbers == numbers and not picked.none and picked.ignored == 0


def test_out_of_range_numbers_are_ignored_and_counted_and_none_is_read():
    assert parse_selection("7, 2, 0", SHOWN) == parse_selection("7, 2, 0", SHOWN)
    picked = parse_selection("7, 2, 0", SHOWN)
    assert picked.numbers == (2,) and picked.ignored == 2
    for reply in ("NONE", "none.", "None of them.", "NO_RELEVANT_MEMORY", "`NONE`"):
        assert parse_selection(reply, SHOWN).none and not parse_selection(reply, SHOWN).numbers, reply
    garbage = parse_selection("Ada uses the Helix editor.", SHOWN)
    assert garbage.numbers == () and not garbage.none
    only_out = parse_selection("2026", SHOWN)
    assert only_out.numbers == () and only_out.ignored == 1 and not only_out.none
    cited = parse_selection("Ada uses Helix. [r-2:L2-L2] [r-9:L1-L1]", SHOWN)  # a summary anyway: the shown ids cited
    assert cited.numbers == (2,) and cited.from_citations


async def test_select_recall_writes_the_summary_from_the_picked_record(tmp_path):
    script = Script(text(SEARCH), pick("Helix"))
    provider = provider_with(tmp_path, FunctionModel(script))
    other = (await provider.remember("Ada's editor colour theme is solarized dark.", title="Theme")).id
    rid = (await provider.remember("Ada prefers the Helix editor over vim.", title="Editor")).id
    result = await provider.recall("Which editor does Ada use?")
    assert not result.fallback, result.reason
    assert [s["id"] for s in result.sources] == [rid] and other not in result.summary  # exactly the picked record
    assert result.summary.startswith("- Ada prefers the Helix editor over vim.") and f"[{rid}:L" in result.summary
    first, second = script.seen
    assert "Find the records in memory that answer the message below." in sent_text(first)
    asked = last_text(second)
    assert asked.startswith("Message: Which editor does Ada use?") and "Reply with their numbers only" in asked
    assert rid not in sent_text(second) and other not in sent_text(second)  # numbered: no id to copy or invent
    assert "untrusted data" in sent_text(second)  # the results keep their untrusted-data note
    assert result.usage["tool_issues"] == {"text_tool_calls": 1}
    provider.close()


async def test_none_is_the_empty_answer_without_a_recheck(tmp_path):
    script = Script(text(SEARCH), text("NONE"))
    provider = provider_with(tmp_path, FunctionModel(script))
    await provider.remember("Ada prefers the Helix editor over vim.", title="Editor")
    result = await provider.recall("Which editor does Ada use?")
    assert not result.fallback and result.summary == "" and result.sources == []
    assert len(script.seen) == 2 and "empty_answers_rechecked" not in result.usage["tool_issues"]
    provider.close()


async def test_out_of_range_numbers_are_dropped_and_counted(tmp_path):
    script = Script(text(SEARCH), text("9, 1"))
    provider = provider_with(tmp_path, FunctionModel(script))
    rid = (await provider.remember("Ada prefers the Helix editor over vim.", title="Editor")).id
    result = await provider.recall("Which editor does Ada use?")
    assert not result.fallback and [s["id"] for s in result.sources] == [rid]
    assert result.usage["tool_issues"] == {"text_tool_calls": 1, "selections_ignored": 1}
    provider.close()


async def test_a_reply_with_no_number_is_asked_once_then_falls_back_flagged(tmp_path):
    script = Script(text(SEARCH), text("Ada uses an editor."), text("1"))
    provider = provider_with(tmp_path, FunctionModel(script))
    rid = (await provider.remember("Ada prefers the Helix editor over vim.", title="Editor")).id
    result = await provider.recall("Which editor does Ada use?")
    assert not result.fallback and [s["id"] for s in result.sources] == [rid]
    assert result.usage["tool_issues"] == {"text_tool_calls": 1, "selection_repairs": 1}
    assert last_text(script.seen[2]).startswith("Your reply gave no result number.")

    hopeless = Script(text(SEARCH), text("Ada uses an editor."))
    provider2 = provider_with(tmp_path / "b", FunctionModel(hopeless))
    await provider2.remember("Ada prefers the Helix editor over vim.", title="Editor")
    result2 = await provider2.recall("Which editor does Ada use?")
    assert result2.fallback and (result2.reason or "").startswith("unusable output: the select reply picked no record")
    assert "Helix" in result2.summary and len(hopeless.seen) == 3  # the flagged lexical fallback
    provider.close()
    provider2.close()


async def test_a_cited_summary_in_select_mode_keeps_only_the_cited_shown_records(tmp_path):
    def cite(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return text(f"Ada uses Helix. [{rid}:L1-L1] [2026-01-01-made-up-0000aaaa:L1-L2]")

    provider = provider_with(tmp_path, FunctionModel(Script(text(SEARCH), cite)))
    rid = (await provider.remember("Ada prefers the Helix editor over vim.", title="Editor")).id
    result = await provider.recall("Which editor does Ada use?")
    assert not result.fallback and [s["id"] for s in result.sources] == [rid]
    assert "made-up" not in result.summary and result.usage["tool_issues"]["selection_fixes"] == 1
    provider.close()


async def test_only_records_the_caller_may_see_are_numbered_or_cited(tmp_path):
    provider = provider_with(tmp_path, FunctionModel(Script(text(SEARCH), text("1, 2, 3"))))
    mine = (await provider.remember("Ada prefers the Helix editor over vim.", title="Editor", user_id="ada", scope="user")).id
    await provider.remember("Bob's editor is emacs, secret plans inside.", title="Bob editor", user_id="bob", scope="user")
    result = await provider.recall("Which editor does Ada use?", user_id="ada")
    assert not result.fallback and [s["id"] for s in result.sources] == [mine]
    assert "emacs" not in result.summary and result.usage["tool_issues"]["selections_ignored"] == 2
    provider.close()


async def test_auto_tool_mode_sends_the_numbered_list_after_native_results(tmp_path):
    def native_search(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("memory_search", {"query": "editor"})])

    script = Script(native_search, pick("Helix"))
    provider = provider_with(tmp_path, FunctionModel(script), tool_mode="auto")
    rid = (await provider.remember("Ada prefers the Helix editor over vim.", title="Editor")).id
    result = await provider.recall("Which editor does Ada use?")
    assert not result.fallback, result.reason
    assert [s["id"] for s in result.sources] == [rid]
    asked = last_text(script.seen[1])
    assert asked.startswith("Results, numbered:\n1. Editor: Ada prefers the Helix editor") and "Reply with their numbers" in asked
    provider.close()


async def test_summary_mode_still_asks_the_model_for_a_cited_summary(tmp_path):
    script = Script(text(SEARCH), text("NONE"))
    provider = provider_with(tmp_path, FunctionModel(script), answer_mode="summary")
    await provider.remember("Ada prefers the Helix editor over vim.", title="Editor")
    await provider.recall("Which editor does Ada use?")
    assert last_text(script.seen[1]).startswith("Now answer from these results")
    provider.close()


def test_answer_mode_is_a_checked_profile_key():
    assert parse_profile(
        {"recall": {"model": "openai-chat:m", "base_url": "http://127.0.0.1:1/v1", "tool_mode": "prompted"}}
    ).recall.selects
    summary = parse_profile({"recall": {"answer_mode": "summary", "tool_mode": "prompted"}})
    assert summary.recall.answer_mode == "summary" and not summary.recall.selects
    assert not load_profile("offline").recall.selects and not load_profile("openai").recall.selects  # native tools
    with pytest.raises(ProfileError, match="answer_mode: 'select' needs tool_mode = 'prompted' or 'auto'"):
        parse_profile({"recall": {"answer_mode": "select"}})
    with pytest.raises(ProfileError, match="answer_mode: must be one of 'auto', 'summary', 'select', not 'numbers'"):
        parse_profile({"recall": {"answer_mode": "numbers", "tool_mode": "prompted"}})
    with pytest.raises(ProfileError, match="answer_mode: unknown key"):
        parse_profile({"capture": {"answer_mode": "select"}})
    assert json.dumps(load_profile("local").recall.answer_mode) == '"auto"'
