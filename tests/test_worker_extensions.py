"""Workers users can extend: extra read tools (code and profile), middleware around tool calls, write approval,
all under the worker's limits and fail-open rules; and recall below one cited line says so."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from _doubles import tool_returns
from pydantic_ai import RunContext, Tool
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory import InvalidInputError, MemoryProvider, ProfileError, ToolCall
from agent_memory.agents.profiles import load_profile, load_profile_file
from agent_memory.agents.tools import CAPTURE, READ

CALENDAR = {"friday": "Release review with Dana at 15:00"}


def calendar_lookup(day: str) -> str:
    """Look up the user's calendar for a day of the week.

    Args:
        day: a weekday name, e.g. friday.
    """
    calls.append((day, threading.current_thread() is threading.main_thread()))
    return CALENDAR.get(day.lower(), "nothing planned")


calls: list[tuple[str, bool]] = []


def recall_script(extra: str = "calendar_lookup", **args: Any) -> Any:
    """Calls the extra tool, then memory_search, then answers with both (citing the record it read)."""

    def step(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        from_tool = tool_returns(messages, extra)
        if not from_tool:
            return ModelResponse(parts=[ToolCallPart(extra, args or {"day": "friday"})])
        found = tool_returns(messages, "memory_search")
        if not found:
            return ModelResponse(parts=[ToolCallPart("memory_search", {"query": "deploys"})])
        hit = found[0]["hits"][0]
        cite = f"[{hit['id']}:L{hit['line_start']}-L{hit['line_end']}]"
        return ModelResponse(parts=[TextPart(f"Deploys happen on Fridays {cite}. Calendar: {from_tool[0]}.")])

    return step


def provider_with(tmp_path: Path, model: Any, *, role: str = "recall", **kw: Any) -> MemoryProvider:
    profile = load_profile("offline").with_models(**{role: model})
    return MemoryProvider(tmp_path / "mem", profile=profile, durable=False, **kw)


def recall_limits(provider: MemoryProvider, **limits: Any) -> None:
    p = provider.profile
    provider._profile = dataclasses.replace(p, recall=dataclasses.replace(p.recall, **limits))


# -- extra tools ----------------------------------------------------------------------------------------------
async def test_a_worker_uses_an_extra_tool_and_its_result_reaches_the_summary(tmp_path):
    calls.clear()
    seen: list[list[str]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(sorted(t.name for t in info.function_tools))
        return recall_script()(messages, info)

    provider = provider_with(tmp_path, FunctionModel(model), worker_tools=[calendar_lookup])
    await provider.remember("Deploys happen on Fridays after the release review.", user_id="ada", scope="user")
    result = await provider.recall("when do we deploy?", user_id="ada")
    assert not result.fallback, result.reason
    assert "Release review with Dana at 15:00" in result.summary and result.sources
    assert seen[0] == sorted((*READ, "calendar_lookup"))
    assert calls == [("friday", False)]  # a sync tool runs off the event loop's thread
    assert result.usage["tool_calls"] == 2
    provider.close()


async def test_a_summary_from_an_extra_tool_alone_is_used(tmp_path):
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        got = tool_returns(messages, "calendar_lookup")
        if not got:
            return ModelResponse(parts=[ToolCallPart("calendar_lookup", {"day": "friday"})])
        return ModelResponse(parts=[TextPart(f"Calendar says: {got[0]}.")])

    provider = provider_with(tmp_path, FunctionModel(model), worker_tools={"recall": [calendar_lookup]})
    result = await provider.recall("what is on friday?")
    assert not result.fallback and result.summary == "Calendar says: Release review with Dana at 15:00." and result.sources == []
    provider.close()


async def test_an_extra_tool_that_raises_ends_in_the_flagged_fallback(tmp_path):
    def broken(day: str) -> str:
        """A calendar that is down."""
        raise ConnectionError("calendar service unreachable")

    provider = provider_with(tmp_path, FunctionModel(recall_script("broken")), worker_tools=[broken])
    await provider.remember("Deploys happen on Fridays.")
    result = await provider.recall("when do deploys happen?")
    assert result.fallback and "ConnectionError" in (result.reason or "") and "calendar service unreachable" in (result.reason or "")
    assert "Deploys happen on Fridays." in result.summary  # the lexical fallback still answers
    provider.close()


async def test_an_extra_tool_that_hangs_is_cut_off_by_the_timeout(tmp_path):
    async def slow(day: str) -> str:
        """A calendar that never answers."""
        await asyncio.sleep(60)
        return "never"

    provider = provider_with(tmp_path, FunctionModel(recall_script("slow")), worker_tools=[slow])
    recall_limits(provider, timeout_s=0.5)
    await provider.remember("Deploys happen on Fridays.")
    started = time.perf_counter()
    result = await provider.recall("when do deploys happen?")
    assert time.perf_counter() - started < 5
    assert result.fallback and (result.reason or "").startswith("timeout")
    provider.close()


async def test_extra_tool_calls_count_against_the_tool_call_limit(tmp_path):
    used: list[str] = []

    def ping(day: str) -> str:
        """Look something up."""
        used.append(day)
        return "ok"

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:  # never stops calling the tool
        return ModelResponse(parts=[ToolCallPart("ping", {"day": "friday"})])

    provider = provider_with(tmp_path, FunctionModel(model), worker_tools=[ping])
    recall_limits(provider, max_tool_calls=2, max_steps=10)
    result = await provider.recall("anything?")
    assert result.fallback and (result.reason or "").startswith("step limit")
    assert len(used) == 2
    provider.close()


async def test_an_extra_tool_never_receives_the_backend(tmp_path):
    deps: list[Any] = []

    def peek(ctx: RunContext[Any], day: str) -> str:
        """Look at the run context."""
        deps.append(ctx.deps)
        return "ok"

    provider = provider_with(tmp_path, FunctionModel(recall_script("peek")), worker_tools=[Tool(peek, takes_ctx=True)])
    await provider.remember("Deploys happen on Fridays.")
    await provider.recall("when do deploys happen?")
    assert deps == [None]
    provider.close()


async def test_bad_extra_tools_are_refused_up_front(tmp_path):
    def memory_search(query: str) -> str:
        return ""

    for bad, word in (
        ([memory_search], "memory tools"),
        ([lambda day: day], "no name"),
        (["pkg:fn"], "not a function"),
        ([calendar_lookup, calendar_lookup], "two tools"),
    ):
        with pytest.raises(InvalidInputError, match=word):
            MemoryProvider(tmp_path / "m", durable=False, worker_tools=bad)
    with pytest.raises(InvalidInputError, match="unknown worker"):
        MemoryProvider(tmp_path / "m", durable=False, worker_tools={"summarise": [calendar_lookup]})
    with pytest.raises(InvalidInputError, match="approve_write"):
        MemoryProvider(tmp_path / "m", durable=False, approve_write=True)  # type: ignore[arg-type]
    bad_middleware: Any = "log"
    with pytest.raises(InvalidInputError, match="callable"):
        MemoryProvider(tmp_path / "m", durable=False, tool_middleware=bad_middleware)


# -- profiles: import paths ----------------------------------------------------------------------------------
PLUGIN = '''
calls = []

def lookup(day: str) -> str:
    """Look up the calendar."""
    calls.append(day)
    return "Standup at 09:30"

def audit(call, proceed):
    calls.append(("audit", call.name))
    return proceed()

def deny(call):
    return False
'''


def write_profile(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "p.toml"
    path.write_text(body, encoding="utf-8")
    return path


def test_profile_extra_tools_resolve_or_fail_typed(tmp_path, monkeypatch):
    (tmp_path / "tune_plugin_ok.py").write_text(PLUGIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    profile = load_profile_file(
        write_profile(
            tmp_path,
            '[recall]\nextra_tools = ["tune_plugin_ok:lookup"]\ntool_middleware = ["tune_plugin_ok:audit"]\n'
            '[capture]\napprove_write = "tune_plugin_ok:deny"\n',
        )
    )
    import tune_plugin_ok  # type: ignore[import-not-found]

    assert profile.recall.extra_tools == (tune_plugin_ok.lookup,) and profile.recall.tool_middleware == (tune_plugin_ok.audit,)
    assert profile.capture.approve_write is tune_plugin_ok.deny and profile.capture.extra_tools == ()
    for body, word in (
        ('[recall]\nextra_tools = ["tune_plugin_missing:lookup"]\n', "cannot import"),
        ('[recall]\nextra_tools = ["tune_plugin_ok:nothing"]\n', "no attribute"),
        ('[recall]\nextra_tools = ["tune_plugin_ok"]\n', "not an import path"),
        ('[recall]\nextra_tools = "tune_plugin_ok:lookup"\n', "list of import paths"),
        ('[recall]\napprove_write = "tune_plugin_ok:deny"\n', "unknown key"),
        ('[recall]\nextra_tools = ["tune_plugin_ok:calls"]\n', "not callable"),
    ):
        with pytest.raises(ProfileError, match=word):
            load_profile_file(write_profile(tmp_path, body))


async def test_a_profiles_extra_tool_and_middleware_run(tmp_path, monkeypatch):
    (tmp_path / "tune_plugin_run.py").write_text(PLUGIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    path = write_profile(tmp_path, '[recall]\nextra_tools = ["tune_plugin_run:lookup"]\ntool_middleware = ["tune_plugin_run:audit"]\n')
    profile = load_profile_file(path).with_models(recall=FunctionModel(recall_script("lookup")))
    provider = MemoryProvider(tmp_path / "mem", profile=profile, durable=False)
    await provider.remember("Deploys happen on Fridays.")
    result = await provider.recall("when do deploys happen?")
    import tune_plugin_run  # type: ignore[import-not-found]

    assert not result.fallback and "Standup at 09:30" in result.summary
    assert tune_plugin_run.calls == [("audit", "lookup"), "friday", ("audit", "memory_search")]
    provider.close()


# -- middleware ---------------------------------------------------------------------------------------------
async def test_middleware_sees_every_call_and_can_short_circuit_or_change_args(tmp_path):
    log: list[tuple[str, str, Any, str | None]] = []

    def first_arg(call: ToolCall) -> Any:
        return call.args.get("day") or call.args.get("query")

    async def outer(call: ToolCall, proceed: Any) -> Any:
        log.append(("outer", call.name, first_arg(call), call.user_id))
        if call.name == "calendar_lookup":
            return "short-circuited: Board meeting"  # never reaches the tool
        return await proceed({**call.args, "query": "deploys fridays"})

    def inner(call: ToolCall, proceed: Any) -> Any:  # a sync middleware: sees what the outer one passed on
        log.append(("inner", call.name, first_arg(call), call.user_id))
        return proceed()

    calls.clear()
    provider = provider_with(tmp_path, FunctionModel(recall_script()), worker_tools=[calendar_lookup], tool_middleware=[outer, inner])
    await provider.remember("Deploys happen on Fridays.", user_id="ada", scope="user")
    result = await provider.recall("when?", user_id="ada")
    assert not result.fallback and "short-circuited: Board meeting" in result.summary
    assert calls == []  # the tool never ran
    assert log == [
        ("outer", "calendar_lookup", "friday", "ada"),
        ("outer", "memory_search", "deploys", "ada"),
        ("inner", "memory_search", "deploys fridays", "ada"),
    ]
    provider.close()


async def test_a_failing_middleware_fails_open(tmp_path):
    def boom(call: ToolCall, proceed: Any) -> Any:
        raise RuntimeError("middleware bug")

    provider = provider_with(tmp_path, FunctionModel(recall_script()), worker_tools=[calendar_lookup], tool_middleware=boom)
    await provider.remember("Deploys happen on Fridays.")
    result = await provider.recall("when do deploys happen?")
    assert result.fallback and "middleware bug" in (result.reason or "") and "Fridays" in result.summary
    provider.close()


# -- approval of writes -----------------------------------------------------------------------------------
def capture_script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if not tool_returns(messages, "memory_remember"):
        return ModelResponse(parts=[ToolCallPart("memory_remember", {"content": "User's favourite colour is teal.", "kind": "preference"})])
    return ModelResponse(parts=[TextPart("NO_REPLY")])


@pytest.mark.parametrize("answer", [True, False, "raise"])
async def test_approve_write_decides_each_capture_write(tmp_path, answer):
    asked: list[ToolCall] = []
    told: list[Any] = []

    async def approve(call: ToolCall) -> bool:
        asked.append(call)
        if answer == "raise":
            raise RuntimeError("approval service down")
        return bool(answer)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        told.extend(tool_returns(messages, "memory_remember"))
        return capture_script(messages, info)

    provider = provider_with(tmp_path, FunctionModel(model), role="capture", approve_write=approve)
    result = await provider.capture_turn("my favourite colour is teal", "noted", user_id="ada")
    assert [(c.worker, c.name, c.write, c.user_id, c.args["content"]) for c in asked] == [
        ("capture", "memory_remember", True, "ada", "User's favourite colour is teal.")
    ]
    stored = [r.content for r in await provider.list(user_id="ada")]
    if answer is True:
        assert stored == ["User's favourite colour is teal."] and len(result.written) == 1
    else:
        assert stored == [] and result.written == [] and not result.fallback  # denied, the worker was told, no error
        assert told and told[0]["status"] == "denied" and "not approve" in told[0]["note"]
    provider.close()


async def test_reads_are_never_sent_for_approval(tmp_path):
    asked: list[str] = []

    def approve(call: ToolCall) -> bool:
        asked.append(call.name)
        return True

    provider = provider_with(tmp_path, FunctionModel(recall_script()), worker_tools=[calendar_lookup], approve_write=approve)
    await provider.remember("Deploys happen on Fridays.")
    assert not (await provider.recall("when do deploys happen?")).fallback
    assert asked == []
    assert set(CAPTURE) - set(READ) == {"memory_remember", "memory_supersede"}
    provider.close()


# -- recall below one cited line ---------------------------------------------------------------------------------
async def test_recall_below_one_cited_line_is_flagged_with_the_shortest_answer(tmp_path):
    provider = MemoryProvider(tmp_path / "mem", durable=False)
    rid = (await provider.remember("Deploys happen on Friday afternoon after the weekly review meeting", title="deploy day")).id
    for budget in (3, 8, 15):
        result = await provider.recall("when do deploys happen?", summary_tokens=budget)
        assert result.fallback and "below one cited line" in (result.reason or ""), (budget, result)
        assert result.summary and result.tokens <= budget and result.summary in "deploy day"
        assert [s["id"] for s in result.sources] == [rid]
    roomy = await provider.recall("when do deploys happen?", summary_tokens=200)
    assert not roomy.fallback and rid in roomy.summary
    nothing = await provider.recall("what is the wifi password?", summary_tokens=3)  # no hit: an honest empty answer
    assert nothing.summary == "" and not nothing.fallback
    provider.close()


@pytest.mark.parametrize("allow", [True, False])
async def test_approve_write_decides_the_consolidate_workers_archives(tmp_path, allow):
    asked: list[tuple[str, str, str | None]] = []

    def approve(call: ToolCall) -> bool:
        asked.append((call.worker, call.name, call.user_id))
        return allow

    provider = MemoryProvider(tmp_path / "mem", durable=False, approve_write=approve)
    mine = await provider.remember("Ada's desk is by the north window.", user_id="ada")
    dup = await provider.remember("ada's desk is by the north window", user_id="ada")
    rep = await provider.consolidate(worker=True, user_id="ada", max_share=1.0)
    assert not rep.fallback and ("consolidate", "memory_archive", "ada") in asked
    left = {r.id for r in await provider.list(user_id="ada")}
    assert left == ({mine.id} if allow else {mine.id, dup.id})
    assert [c.status == "applied" for c in rep.changes] == [allow]
    await provider.aclose()
