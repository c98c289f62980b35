"""Small-model tool calling: text tool calls parsed tolerantly, prompted mode, repairs and loop guards.

The scripted models answer with the text shapes small local models were seen to produce (a JSON object as
content instead of ``tool_calls``, fenced, tagged, a near-miss tool name, ``"limit": "5"``, Python-style calls).
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import pytest
from _doubles import first_prompt, tool_returns
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory.agents.models.tool_text import coerce_args, parse_tool_calls, resolve_tool_name, tools_prompt
from agent_memory.agents.profiles import load_profile, parse_profile
from agent_memory.errors import ProfileError
from agent_memory.provider import MemoryProvider

SEARCH = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
        "limit": {"type": "integer"},
    },
    "required": ["query"],
}
GET = {"type": "object", "properties": {"id": {"type": "string"}, "line_start": {"type": "integer"}}, "required": ["id"]}
TOOLS = {"memory_search": SEARCH, "memory_get": GET}


# -- parsing ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        '{"name": "memory_search", "arguments": {"query": "editor"}}',
        '```json\n{"name": "memory_search", "arguments": {"query": "editor"}}\n```',
        '<tool_call>\n{"name": "memory_search", "arguments": {"query": "editor"}}\n</tool_call>',
        'I will search memory first. {"name": "memory_search", "arguments": {"query": "editor"}}',
        '{"tool": "memory_search", "args": {"query": "editor"}}',
        '{"function": {"name": "memory_search", "arguments": "{\\"query\\": \\"editor\\"}"}}',
        '{"name": "memory_search", "query": "editor"}',
        '{"memory_search": {"query": "editor"}}',
        'memory_search(query="editor")',
        '[{"name": "memory_search", "arguments": {"query": "editor"}}]',
    ],
)
def test_shapes_small_models_write_parse_to_the_same_call(text):
    parsed = parse_tool_calls(text, TOOLS)
    assert parsed.calls == [("memory_search", {"query": "editor"})] and parsed.error is None


def test_near_miss_names_and_wrong_types_are_fixed_and_reported():
    parsed = parse_tool_calls('{"name": "search", "arguments": {"query": 42, "limit": "5", "tags": "work", "junk": 1}}', TOOLS)
    assert parsed.calls == [("memory_search", {"query": "42", "limit": 5, "tags": ["work"]})]
    assert any("'search' → 'memory_search'" in f for f in parsed.fixes)
    assert any("junk" in f for f in parsed.fixes) and len(parsed.fixes) == 5
    assert resolve_tool_name("Memory-Get", TOOLS) == "memory_get"
    assert resolve_tool_name("memory_serach", TOOLS) == "memory_search"
    assert resolve_tool_name("delete_everything", TOOLS) is None


def test_coercion_leaves_right_types_alone():
    args, fixes = coerce_args({"query": "x", "limit": 3, "tags": None}, SEARCH)
    assert args == {"query": "x", "limit": 3, "tags": None} and fixes == []
    assert coerce_args({"limit": "three"}, SEARCH)[0] == {"limit": "three"}  # not a number: left for validation to refuse


def test_a_final_answer_is_no_call_and_a_broken_call_is_an_error():
    answer = parse_tool_calls("- Ada prefers Helix [2026-01-01-editor-0a1b2c3d:L3-L3]", TOOLS)
    assert answer.calls == [] and answer.error is None and not answer.attempted
    broken = parse_tool_calls('{"name": "memory_search", "arguments": {"query": "edit', TOOLS)
    assert broken.calls == [] and broken.attempted and broken.error
    unknown = parse_tool_calls('{"name": "delete_everything", "arguments": {}}', TOOLS)
    assert unknown.calls == [] and "unknown tool 'delete_everything'" in (unknown.error or "")


def test_tools_prompt_lists_each_tool_with_its_arguments():
    text = tools_prompt({"memory_search": ("Search memory. Long details.", SEARCH), "memory_get": ("Read one record.", GET)})
    assert 'reply with only a JSON object {"name": "<tool name>", "arguments": {...}}' in text
    assert "- memory_search(query: string, tags: array (optional), limit: integer (optional)): Search memory\n" in text
    assert "Long details" not in text
    assert "- memory_search(query: string): Search memory" in tools_prompt({"memory_search": ("Search memory.", SEARCH)}, optional=0)


# -- profiles -------------------------------------------------------------------------------------
def test_tool_mode_is_a_checked_profile_key():
    profile = parse_profile({"recall": {"model": "openai-chat:m", "base_url": "http://127.0.0.1:1/v1", "tool_mode": "prompted"}})
    assert profile.recall.tool_mode == "prompted" and profile.reflect.tool_mode == "prompted"  # inherited with the model
    assert load_profile("offline").recall.tool_mode == "native"
    with pytest.raises(ProfileError, match=r"\[recall\] tool_mode: must be one of 'native', 'auto', 'prompted', not 'json'"):
        parse_profile({"recall": {"tool_mode": "json"}})
    with pytest.raises(ProfileError, match="max_repairs: must be a non-negative integer"):
        parse_profile({"recall": {"max_repairs": -1}})


# -- workers driven by text tool calls ------------------------------------------------------------
class Script:
    """A FunctionModel body playing ``steps`` (callables or responses; the last repeats), recording what it saw."""

    def __init__(self, *steps: Any) -> None:
        self.steps = steps
        self.seen: list[tuple[list[ModelMessage], AgentInfo]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append((list(messages), info))
        step = self.steps[min(len(self.seen) - 1, len(self.steps) - 1)]
        return step(messages, info) if callable(step) else step


def text(value: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(value)])


def provider_with(tmp_path, role: str, model: Any, **settings: Any) -> MemoryProvider:
    """A provider whose ``role`` worker runs ``model``; recall writes its own summary (``answer_mode="summary"``) unless
    the test asks for another answer mode (the select mode's tests are in test_select_answer.py)."""
    profile = load_profile("offline")
    if role == "recall":
        settings.setdefault("answer_mode", "summary")
    worker = dataclasses.replace(profile.worker(role), model=model, **settings)  # type: ignore[arg-type]
    return MemoryProvider(tmp_path / "mem", profile=dataclasses.replace(profile, **{role: worker}), durable=False)  # type: ignore[arg-type]


def cite_first_hit(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Cite the first search hit, read from a native tool return or from a result replayed as text."""
    returns = tool_returns(messages, "memory_search")
    if returns:
        hit = returns[-1]["hits"][0]
    else:
        replayed = texts_sent(messages).rsplit("Result of memory_search:\n", 1)[1]
        found = re.search(r"^- \[(\S+):L(\d+)-L(\d+)\] ", replayed, re.M)
        assert found, replayed
        hit = {"id": found.group(1), "line_start": found.group(2), "line_end": found.group(3)}
    return text(f"Ada prefers the Helix editor. [{hit['id']}:L{hit['line_start']}-L{hit['line_end']}]")


def texts_sent(messages: list[ModelMessage]) -> str:
    return "\n".join(str(p.content) for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, UserPromptPart))


@pytest.mark.parametrize("mode", ["auto", "prompted"])
async def test_recall_runs_on_a_model_that_writes_tool_calls_as_text(tmp_path, mode):
    script = Script(text('```json\n{"name": "search", "arguments": {"query": "editor Ada", "limit": "5"}}\n```'), cite_first_hit)
    provider = provider_with(tmp_path, "recall", FunctionModel(script), tool_mode=mode)
    rid = (await provider.remember("Ada prefers the Helix editor over vim.", title="Editor")).id
    result = await provider.recall("Which editor does Ada use?")
    assert not result.fallback, result.reason
    assert [s["id"] for s in result.sources] == [rid] and "Helix" in result.summary
    assert result.usage["tool_calls"] == 1
    assert result.usage["tool_issues"] == {"text_tool_calls": 1, "tool_call_fixes": 2}  # the name and the limit
    first, second = script.seen
    if mode == "prompted":  # no native tools offered; the listing, the prompt and the first step in one message
        assert first[1].function_tools == []
        (prompt,) = [p.content for p in first[0][0].parts if isinstance(p, UserPromptPart)]
        assert str(prompt).startswith("Tools (") and "Which editor does Ada use?" in str(prompt)
        assert str(prompt).endswith("Your reply must be the JSON call of memory_search.")
        assert "Result of memory_search:" in texts_sent(second[0]) and rid in texts_sent(second[0])
    else:
        assert {t.name for t in first[1].function_tools} >= {"memory_search", "memory_get"}
        assert "Result of memory_search:" in texts_sent(second[0])  # a text call is replayed as text too
        assert not any(isinstance(p, ToolCallPart) for m in second[0] for p in getattr(m, "parts", []))
    provider.close()


async def test_native_mode_keeps_the_text_as_a_final_answer(tmp_path):
    script = Script(text('{"name": "memory_search", "arguments": {"query": "editor"}}'))
    provider = provider_with(tmp_path, "recall", FunctionModel(script))  # tool_mode defaults to native
    await provider.remember("Ada prefers the Helix editor over vim.", title="Editor")
    result = await provider.recall("Which editor does Ada use?")
    assert result.fallback and "cites no record" in (result.reason or "") and len(script.seen) == 1
    assert result.usage["tool_issues"] == {}
    provider.close()


async def test_a_broken_call_is_repaired_once_then_the_worker_falls_back(tmp_path):
    broken = text('{"name": "memory_search", "arguments": {"query": "edit')
    repaired = Script(broken, text('{"name": "memory_search", "arguments": {"query": "editor"}}'), cite_first_hit)
    provider = provider_with(tmp_path, "recall", FunctionModel(repaired), tool_mode="auto")
    await provider.remember("Ada prefers the Helix editor over vim.", title="Editor")
    result = await provider.recall("Which editor does Ada use?")
    assert not result.fallback and result.usage["tool_issues"] == {"text_tool_calls": 1, "tool_call_repairs": 1}
    assert "not a valid tool call" in texts_sent(repaired.seen[1][0])

    hopeless = Script(broken)
    provider2 = provider_with(tmp_path / "b", "recall", FunctionModel(hopeless), tool_mode="auto", max_repairs=2)
    await provider2.remember("Ada prefers the Helix editor over vim.", title="Editor")
    result2 = await provider2.recall("Which editor does Ada use?")
    assert result2.fallback and (result2.reason or "").startswith("unusable output: invalid tool call after 2 repair(s)")
    assert "Helix" in result2.summary  # the flagged lexical fallback
    assert len(hopeless.seen) == 3 and result2.usage["tool_issues"] == {"tool_call_repairs": 2, "invalid_tool_calls": 1}
    provider.close()
    provider2.close()


async def test_the_same_call_twice_is_dropped_then_stops_the_run(tmp_path):
    same = text('{"name": "memory_search", "arguments": {"query": "editor"}}')
    provider = provider_with(tmp_path, "recall", FunctionModel(Script(same)), tool_mode="auto", max_steps=10)
    await provider.remember("Ada prefers the Helix editor over vim.", title="Editor")
    result = await provider.recall("Which editor does Ada use?")
    assert result.fallback and (result.reason or "").startswith("unusable output: repeated tool call: memory_search")
    issues = result.usage["tool_issues"]
    assert issues == {"text_tool_calls": 1, "repeated_tool_calls": 2, "guard_stops": 1}
    assert result.usage["tool_calls"] == 1  # the repeats never reached the tools
    provider.close()


async def test_a_repeat_after_a_nudge_can_still_recover(tmp_path):
    same = text('{"name": "memory_search", "arguments": {"query": "editor"}}')
    script = Script(same, same, cite_first_hit)
    provider = provider_with(tmp_path, "recall", FunctionModel(script), tool_mode="auto")
    await provider.remember("Ada prefers the Helix editor over vim.", title="Editor")
    result = await provider.recall("Which editor does Ada use?")
    assert not result.fallback and result.usage["tool_issues"] == {"text_tool_calls": 1, "repeated_tool_calls": 1}
    assert "Do not repeat a call" in texts_sent(script.seen[2][0])
    provider.close()


async def test_capture_stores_facts_from_text_calls_and_a_loop_ends_it_cleanly(tmp_path):
    remember = {"name": "memory_remember", "arguments": {"content": "User's dog is called Rex.", "kind": "fact", "tags": "pets"}}
    script = Script(text(json.dumps(remember)), text(json.dumps(remember)))  # then repeats the same call forever
    provider = provider_with(tmp_path, "capture", FunctionModel(script), tool_mode="prompted", max_steps=6)
    result = await provider.capture_turn("My dog is called Rex.", "Noted!", user_id="ada", session_id="s1")
    assert not result.fallback, result.reason  # the loop guard ends capture with NO_REPLY: the staged write stands
    assert len(result.written) == 1 and result.usage["tool_issues"]["guard_stops"] == 1
    records = (await provider.search("Rex", user_id="ada")).hits
    assert [h.title for h in records] and "Rex" in records[0].snippet
    assert "memory_remember(" in first_prompt(script.seen[0][0]) or "memory_remember(" in texts_sent(script.seen[0][0])
    provider.close()


def test_results_replayed_as_text_carry_the_citation_form():
    from agent_memory.agents.models.tool_mode import render_result

    hits = {
        "note": "untrusted",
        "hits": [{"id": "r-1", "title": "Editor", "line_start": 12, "line_end": 13, "snippet": "Ada  uses\nHelix"}],
    }
    assert render_result(hits) == "untrusted\n- [r-1:L12-L13] Editor: Ada uses Helix"
    assert render_result({"note": "n", "hits": []}) == "n\nno hits"
    record = {"id": "r-1", "title": "Editor", "body_line": 12, "content": "Ada uses Helix.\nSince 2024."}
    assert render_result(record) == "[r-1:L12-L13] Editor\nAda uses Helix.\nSince 2024."
    assert render_result({"id": "r-2", "status": "created"}) is None and render_result("text") is None


async def test_recall_that_answers_before_searching_is_asked_once_to_search(tmp_path):
    script = Script(text("NO_RELEVANT_MEMORY"), text('{"name": "memory_search", "arguments": {"query": "editor"}}'), cite_first_hit)
    provider = provider_with(tmp_path, "recall", FunctionModel(script), tool_mode="prompted")
    await provider.remember("Ada prefers the Helix editor over vim.", title="Editor")
    result = await provider.recall("Which editor does Ada use?")
    assert not result.fallback and "Helix" in result.summary
    assert result.usage["tool_issues"] == {"answers_without_search": 1, "text_tool_calls": 1}
    assert "You have not searched memory yet" in texts_sent(script.seen[1][0])

    lazy = Script(text("NO_RELEVANT_MEMORY"))  # asked once; a second answer without searching stands
    provider2 = provider_with(tmp_path / "b", "recall", FunctionModel(lazy), tool_mode="prompted")
    result2 = await provider2.recall("Which editor does Ada use?")
    assert not result2.fallback and result2.summary == "" and len(lazy.seen) == 2
    provider.close()
    provider2.close()


async def test_prompted_recall_is_told_what_to_do_with_the_results(tmp_path):
    script = Script(text('{"name": "memory_search", "arguments": {"query": "editor"}}'), cite_first_hit)
    provider = provider_with(tmp_path, "recall", FunctionModel(script), tool_mode="prompted")
    await provider.remember("Ada prefers the Helix editor over vim.", title="Editor")
    result = await provider.recall("Which editor does Ada use?")
    assert not result.fallback
    last = script.seen[1][0][-1]
    assert isinstance(last, ModelRequest) and isinstance(last.parts[-1], UserPromptPart)
    assert str(last.parts[-1].content).startswith("Now answer from these results")
    provider.close()


def last_text(messages: list[ModelMessage]) -> str:
    last = messages[-1]
    return "\n".join(str(p.content) for p in last.parts if isinstance(p, UserPromptPart)) if isinstance(last, ModelRequest) else ""


def cite_everything_read(messages: list[ModelMessage]) -> ModelResponse:
    cited = re.findall(r"^- (\[\S+:L\d+-L\d+\])", texts_sent(messages), re.M)
    return text("The lead of Ada's team works from the Lisbon office. " + " ".join(dict.fromkeys(cited)))


class Decomposer:
    """A prompted-mode model that follows its instructions (search for each part of a multi-hop question) unless the
    text it was sent last forbids another search; then it answers, citing every hit it read."""

    def __init__(self, queries: list[str]) -> None:
        self.queries = list(queries)
        self.asked: list[str] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        said = last_text(messages)
        self.asked.append(said)
        if self.queries and "Do not search again" not in said:
            return text(json.dumps({"name": "memory_search", "arguments": {"query": self.queries.pop(0), "limit": 1}}))
        return cite_everything_read(messages)


async def test_a_decomposing_recall_searches_for_each_part_within_its_step_limit(tmp_path):
    # measured on a 1.5B model: "Do not search again" after the first results stopped the decomposing worker at one search
    model = Decomposer(["Ada team", "Payments lead", "Marco office"])
    provider = provider_with(tmp_path, "recall", FunctionModel(model), tool_mode="prompted", max_steps=4)
    ids = [
        (await provider.remember(content, title=title)).id
        for content, title in (
            ("Ada works in the Payments team.", "Ada team"),
            ("The Payments lead is Marco.", "Payments lead"),
            ("Marco works from the Lisbon office.", "Marco office"),
        )
    ]
    result = await provider.recall("Which office does the lead of Ada's team work from?")
    assert not result.fallback, result.reason
    assert result.usage["tool_calls"] == 3 and len(model.asked) == 4  # three searches, then the answer on the last step
    assert {s["id"] for s in result.sources} == set(ids)
    assert model.asked[-1].endswith("Do not search again.")  # the last request the step limit allows asks for the answer
    assert all("Do not search again" not in said for said in model.asked[:-1])
    provider.close()


async def test_a_call_on_the_last_allowed_step_is_sent_back_once_for_the_answer(tmp_path):
    search = text('{"name": "memory_search", "arguments": {"query": "editor"}}')
    again = text('{"name": "memory_search", "arguments": {"query": "Helix"}}')
    script = Script(search, again, cite_first_hit)
    provider = provider_with(tmp_path, "recall", FunctionModel(script), tool_mode="prompted", max_steps=2)
    await provider.remember("Ada prefers the Helix editor over vim.", title="Editor")
    result = await provider.recall("Which editor does Ada use?")
    assert not result.fallback, result.reason  # before: the second search ran and the step limit ended the run
    assert result.usage["tool_calls"] == 1 and result.usage["tool_issues"]["calls_at_step_limit"] == 1
    assert last_text(script.seen[2][0]).startswith("No more tool calls: the step limit is reached. Now answer")

    stubborn = Script(search, again)  # asked once; a second call stands and the step limit ends the run (flagged)
    provider2 = provider_with(tmp_path / "b", "recall", FunctionModel(stubborn), tool_mode="prompted", max_steps=2)
    await provider2.remember("Ada prefers the Helix editor over vim.", title="Editor")
    result2 = await provider2.recall("Which editor does Ada use?")
    assert result2.fallback and "Helix" in result2.summary
    provider.close()
    provider2.close()


async def test_nothing_relevant_over_returned_records_is_checked_once(tmp_path):
    # measured on a 1.5B model: NO_RELEVANT_MEMORY right after a search that had returned the evidence
    search = text('{"name": "memory_search", "arguments": {"query": "editor"}}')
    script = Script(search, text("NO_RELEVANT_MEMORY"), cite_first_hit)
    provider = provider_with(tmp_path, "recall", FunctionModel(script), tool_mode="prompted")
    await provider.remember("Ada prefers the Helix editor over vim.", title="Editor")
    result = await provider.recall("Which editor does Ada use?")
    assert not result.fallback and "Helix" in result.summary and result.sources
    assert result.usage["tool_issues"] == {"text_tool_calls": 1, "empty_answers_rechecked": 1}
    assert last_text(script.seen[2][0]).startswith("The results above hold 1 record(s).")

    sure = Script(search, text("NO_RELEVANT_MEMORY"))  # asked once: a second NO_RELEVANT_MEMORY stands
    provider2 = provider_with(tmp_path / "b", "recall", FunctionModel(sure), tool_mode="prompted")
    await provider2.remember("Ada prefers the Helix editor over vim.", title="Editor")
    result2 = await provider2.recall("Which editor does Ada use?")
    assert not result2.fallback and result2.summary == "" and len(sure.seen) == 3

    nothing = Script(text('{"name": "memory_search", "arguments": {"query": "zebra"}}'), text("NO_RELEVANT_MEMORY"))
    provider3 = provider_with(tmp_path / "c", "recall", FunctionModel(nothing), tool_mode="prompted")
    result3 = await provider3.recall("Which zebra does Ada own?")  # an empty memory: no hits, nothing to check
    assert not result3.fallback and result3.summary == "" and len(nothing.seen) == 2
    assert "empty_answers_rechecked" not in result3.usage["tool_issues"]
    for p in (provider, provider2, provider3):
        p.close()


# -- capture with small models: what the 1.5B model did with the must-not conversations ------------------------
def remember_call(content: str) -> ModelResponse:
    return text(json.dumps({"name": "memory_remember", "arguments": {"content": content}}))


async def test_the_capture_model_never_sees_a_secret_of_the_transcript(tmp_path):
    # measured: shown "my password … is X, and I prefer dark mode", the 1.5B model replied NO_REPLY (the fact lost too)
    script = Script(remember_call("User prefers dark mode in every tool."), text("NO_REPLY"))
    provider = provider_with(tmp_path, "capture", FunctionModel(script), tool_mode="prompted")
    said = "My password for the staging box is Tr0ub4dor&3, and I prefer dark mode in every tool."
    result = await provider.capture_turn(said, "Noted the dark mode preference.", user_id="ada", session_id="s1")
    assert not result.fallback and len(result.written) == 1
    sent = texts_sent(script.seen[0][0])
    assert "Tr0ub4dor" not in sent and "[REDACTED" in sent and "dark mode" in sent
    record = await provider.get(result.written[0]["id"], user_id="ada", session_id="s1")
    assert record is not None and record.content == "User prefers dark mode in every tool."
    provider.close()


async def test_capture_keeps_statements_and_drops_questions_from_what_a_model_stores(tmp_path):
    # measured: the 1.5B model stored the user's words whole, "Nice weather today, isn't it? Anyway, my cat is called Miso."
    script = Script(
        remember_call("Nice weather today, isn't it? Anyway, my cat is called Miso."), remember_call("Is it sunny?"), text("NO_REPLY")
    )
    provider = provider_with(tmp_path, "capture", FunctionModel(script), tool_mode="prompted")
    result = await provider.capture_turn("Nice weather today, isn't it? Anyway, my cat is called Miso.", "Lovely!", user_id="ada")
    assert not result.fallback and len(result.written) == 1
    record = await provider.get(result.written[0]["id"], user_id="ada")
    assert record is not None and record.content == "Anyway, my cat is called Miso."
    assert "content is a question" in texts_sent(script.seen[2][0])  # the bare question was refused back to the model
    provider.close()


async def test_a_turn_where_the_user_only_asks_is_not_sent_to_a_small_model(tmp_path):
    # measured: told its reply must be a memory_remember call, the 1.5B model stored
    # "User prefers to be remembered with the result of 2+2 being 4." for "Can you tell me what 2+2 is?"
    script = Script(remember_call("User prefers to be remembered with the result of 2+2 being 4."), text("NO_REPLY"))
    provider = provider_with(tmp_path, "capture", FunctionModel(script), tool_mode="prompted")
    result = await provider.capture_turn("Can you tell me what 2+2 is?", "It is 4.", user_id="ada")
    assert not result.fallback and result.written == [] and script.seen == []
    assert result.usage["tool_issues"] == {"question_turns_skipped": 1}

    asks_to_remember = await provider.capture_turn("Can you remember that I drink green tea?", "Sure.", user_id="ada")
    assert len(script.seen) >= 1 and len(asks_to_remember.written) == 1  # a question that says something about the user is sent

    native = Script(text("NO_REPLY"))  # native tool calling (larger models) still sees every turn
    provider2 = provider_with(tmp_path / "b", "capture", FunctionModel(native), tool_mode="native")
    await provider2.capture_turn("Can you tell me what 2+2 is?", "It is 4.", user_id="ada")
    assert len(native.seen) == 1
    provider.close()
    provider2.close()


def test_arguments_written_without_the_tool_name_are_the_one_tool_they_fit():
    # measured: the 1.5B model's first recall reply was ```json {"query": "editor for ada", "tags": [...], "limit": 10} ```
    parsed = parse_tool_calls('```json\n{"query": "editor for ada", "tags": ["dev"], "limit": 10}\n```', TOOLS)
    assert parsed.calls == [("memory_search", {"query": "editor for ada", "tags": ["dev"], "limit": 10})] and parsed.error is None
    assert parsed.fixes == ["arguments without a tool name → 'memory_search'"]
    assert parse_tool_calls('{"id": "r-1"}', TOOLS).calls == [("memory_get", {"id": "r-1"})]
    for not_a_call in ('{"limit": 3}', '{"answer": "vim"}', '{"query": "x", "colour": "red"}'):  # no required key, or no tool fits
        assert parse_tool_calls(not_a_call, TOOLS).calls == []
