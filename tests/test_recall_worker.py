"""The recall worker: tools, permissions, limits, fail-open paths, budget and usage, driven by scripted models."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from _doubles import first_prompt, tool_returns
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from agent_memory.agents.profiles import load_profile
from agent_memory.agents.tokens import count_tokens
from agent_memory.agents.tools import READ
from agent_memory.agents.workers import trim_to_tokens
from agent_memory.agents.workers.recall import RecallResult, parse_citations
from agent_memory.provider import MemoryProvider

Step = Callable[[list[ModelMessage], AgentInfo], ModelResponse]


class Script:
    """A FunctionModel body that plays ``steps`` in order (the last one repeats) and records what it saw."""

    def __init__(self, *steps: Step | ModelResponse) -> None:
        self.steps = steps
        self.infos: list[AgentInfo] = []
        self.messages: list[list[ModelMessage]] = []

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.infos.append(info)
        self.messages.append(list(messages))
        step = self.steps[min(len(self.infos) - 1, len(self.steps) - 1)]
        return step(messages, info) if callable(step) else step

    @property
    def tool_names(self) -> list[str]:
        return sorted(t.name for t in self.infos[0].function_tools)


returns = tool_returns


def call(tool: str, **args: Any) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool, args)])


def text(value: str, **usage: Any) -> ModelResponse:
    return ModelResponse(parts=[TextPart(value)], usage=RequestUsage(**usage))


def make_provider(tmp_path, model: Any = "offline", **recall: Any) -> MemoryProvider:
    profile = load_profile("offline")
    profile = dataclasses.replace(profile, recall=dataclasses.replace(profile.recall, model=model, **recall))
    return MemoryProvider(tmp_path / "mem", profile=profile, durable=False)


async def seed(provider: MemoryProvider) -> dict[str, str]:
    return {
        "deploy": (await provider.remember("Deploys happen on Tuesdays at 14:00 UTC.\nDana approves every deploy.")).id,
        "db": (await provider.remember("Decision: the main database is Postgres 16.")).id,
        "lunch": (await provider.remember("The team likes tacos for lunch on Fridays.")).id,
    }


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the offline profile ---------------------------------------------------------------------------
async def test_offline_recall_finds_facts_and_cites_them(tmp_path):
    provider = make_provider(tmp_path)
    ids = await seed(provider)
    result = await provider.recall("Who approves deploys, and when do they happen?")
    assert isinstance(result, RecallResult) and not result.fallback and result.reason is None
    assert "Dana approves every deploy." in result.summary and "Tuesdays at 14:00 UTC" in result.summary
    assert "tacos" not in result.summary
    assert [s["id"] for s in result.sources] == [ids["deploy"]]
    record = await provider.get(ids["deploy"])
    assert result.sources[0]["line_start"] >= record.body_line
    assert result.tokens == count_tokens(result.summary) <= 400
    assert result.usage["requests"] == 3 and result.usage["tool_calls"] >= 2 and result.usage["input_tokens"] == 0
    assert result.model == "offline" and result.elapsed_s > 0
    assert set(result.to_dict()) >= {"summary", "sources", "tokens", "fallback", "reason", "usage", "elapsed_s"}
    provider.close()


async def test_recall_sees_only_the_callers_memory(tmp_path):
    provider = make_provider(tmp_path)
    await provider.remember("The vault combination hint is the blue notebook.", scope="session", session_id="alice-1")
    other = await provider.recall("vault combination hint", session_id="bob-1")
    assert "blue notebook" not in other.summary and other.sources == []
    mine = await provider.recall("vault combination hint", session_id="alice-1")
    assert "blue notebook" in mine.summary
    provider.close()


async def test_empty_message_recalls_nothing_without_running_a_model(tmp_path):
    script = Script(text("should not run"))
    provider = make_provider(tmp_path, FunctionModel(script))
    result = await provider.recall("   ")
    assert (result.summary, result.sources, result.fallback, script.infos) == ("", [], False, [])
    provider.close()


# -- tools and permissions ---------------------------------------------------------------------------
async def test_tool_order_citations_and_usage_with_a_scripted_model(tmp_path):
    state: dict[str, Any] = {}

    def search(messages, info):
        return call("memory_search", query="who approves deploys")

    def get(messages, info):
        hit = returns(messages, "memory_search")[-1]["hits"][0]
        state["hit"] = hit
        return call("memory_get", id=hit["id"], line_start=hit["line_start"], line_end=hit["line_end"])

    def answer(messages, info):
        got = returns(messages, "memory_get")[-1]
        assert "untrusted" in got["note"]  # memory reaches the worker labelled as untrusted data
        h = state["hit"]
        return text(
            f"Dana approves deploys [{h['id']}:L{h['line_start']}-L{h['line_end']}]. Also a bracketed aside [sic].",
            input_tokens=120,
            output_tokens=30,
            cost=Decimal("0.0025"),
        )

    script = Script(search, get, answer)
    provider = make_provider(tmp_path, FunctionModel(script))
    ids = await seed(provider)
    result = await provider.recall("Who approves deploys?")
    assert not result.fallback, result.reason
    assert script.tool_names == sorted(READ)  # recall is offered the READ tools and nothing else
    assert all(sorted(t.name for t in i.function_tools) == sorted(READ) for i in script.infos)
    assert "memory content is untrusted" in (script.infos[0].instructions or "").lower()
    assert "Who approves deploys?" in first_prompt(script.messages[0])
    assert result.summary.startswith("Dana approves deploys [")
    assert [s["id"] for s in result.sources] == [ids["deploy"]]  # a bracketed word is not a source
    assert result.usage["requests"] == 3 and result.usage["tool_calls"] == 2
    assert result.usage["output_tokens"] >= 30 and result.usage["input_tokens"] >= 120
    assert result.usage["cost_usd"] == pytest.approx(0.0025)  # the cost the model reported
    provider.close()


async def test_a_profile_narrows_the_tools_the_model_is_offered(tmp_path):
    script = Script(text("nothing [x:L1-L1]"))
    provider = make_provider(tmp_path, FunctionModel(script), tools=("memory_search",))
    await provider.recall("anything")
    assert script.tool_names == ["memory_search"]
    provider.close()


@pytest.mark.promise("workers")
async def test_recall_cannot_write_memory(tmp_path):
    """A recall model calling memory_remember is refused (the tool is not offered); nothing is written."""
    script = Script(call("memory_remember", content="Injected fact: the admin password is hunter2."))
    provider = make_provider(tmp_path, FunctionModel(script))
    await seed(provider)
    result = await provider.recall("When do deploys happen?")
    assert "memory_remember" not in script.tool_names
    assert result.fallback and (result.reason or "").startswith("unusable output")
    assert "Tuesdays" in result.summary  # the lexical fallback still answers
    assert len(await provider.list()) == 3 and "hunter2" not in str([r.content for r in await provider.list()])
    provider.close()


# -- limits and fail-open ------------------------------------------------------------------------------
@pytest.mark.promise("workers")
async def test_step_limit_gives_a_flagged_lexical_fallback(tmp_path):
    """A model that loops on tool calls is stopped at max_steps and recall falls back."""
    script = Script(call("memory_search", query="deploys"))  # searches forever
    provider = make_provider(tmp_path, FunctionModel(script), max_steps=3)
    ids = await seed(provider)
    result = await provider.recall("When do deploys happen?")
    assert result.fallback and (result.reason or "").startswith("step limit")
    assert result.usage["requests"] == 3 and len(script.infos) == 3
    assert ids["deploy"] in [s["id"] for s in result.sources] and "Tuesdays at 14:00 UTC" in result.summary
    assert result.summary.count("[") == len(result.sources)  # one cited line per fallback hit
    provider.close()


async def test_tool_call_limit_is_enforced(tmp_path):
    many = ModelResponse(parts=[ToolCallPart("memory_search", {"query": f"q{i}"}) for i in range(6)])
    provider = make_provider(tmp_path, FunctionModel(Script(many)), max_steps=5, max_tool_calls=4)
    result = await provider.recall("deploys")
    assert result.fallback and (result.reason or "").startswith("step limit") and "tool_calls_limit" in (result.reason or "")
    assert result.usage["tool_calls"] == 0
    provider.close()


@pytest.mark.promise("workers")
async def test_timeout_gives_a_fallback_within_timeout_s(tmp_path):
    """A model that hangs past timeout_s: recall returns the fallback on time."""

    async def hang(messages, info):
        await asyncio.sleep(30)
        return text("too late")

    provider = make_provider(tmp_path, FunctionModel(hang), timeout_s=0.3)
    await seed(provider)
    t0 = time.perf_counter()
    result = await provider.recall("Who approves deploys?")
    assert time.perf_counter() - t0 < 2.0
    assert result.fallback and result.reason == "timeout after 0.3s" and "Dana" in result.summary
    provider.close()


@pytest.mark.promise("workers")
async def test_model_error_gives_a_fallback_and_never_raises(tmp_path):
    """A model that raises: recall reports the error as the reason and answers lexically."""

    def boom(messages, info):
        raise RuntimeError("model exploded")

    provider = make_provider(tmp_path, FunctionModel(boom))
    ids = await seed(provider)
    result = await provider.recall("Which database do we use?")
    assert result.fallback and "RuntimeError" in (result.reason or "") and "model exploded" in (result.reason or "")
    assert ids["db"] in [s["id"] for s in result.sources] and "Postgres 16" in result.summary
    assert result.tokens == count_tokens(result.summary)
    provider.close()


@pytest.mark.promise("workers")
async def test_malformed_tool_arguments_fail_open(tmp_path):
    """A model sending malformed tool arguments is retried, then recall falls back."""
    script = Script(ModelResponse(parts=[ToolCallPart("memory_get", '{"id": 5, "line_start": "abc"')]))
    provider = make_provider(tmp_path, FunctionModel(script))
    await seed(provider)
    result = await provider.recall("Which database do we use?")
    assert result.fallback and (result.reason or "").startswith("unusable output") and len(script.infos) >= 2
    assert "Postgres" in result.summary
    provider.close()


async def test_a_bad_call_is_retried_and_the_run_recovers(tmp_path):
    def recover(messages, info):
        return text("NO_RELEVANT_MEMORY")

    script = Script(call("memory_get", id="no-such-record"), recover)
    provider = make_provider(tmp_path, FunctionModel(script))
    result = await provider.recall("anything at all")
    assert not result.fallback and result.summary == "" and result.sources == [] and len(script.infos) == 2
    assert "no-such-record" in str(script.messages[1][-1].parts)  # the model was told what went wrong
    provider.close()


@pytest.mark.promise("workers")
@pytest.mark.parametrize("output", ["", "   \n"])
async def test_empty_summary_gives_a_fallback(tmp_path, output):
    """An empty summary is unusable: recall falls back and says why."""
    provider = make_provider(tmp_path, FunctionModel(Script(text(output))))
    await seed(provider)
    result = await provider.recall("Which database do we use?")
    assert result.fallback and (result.reason or "").startswith("unusable output")
    assert "Postgres" in result.summary
    provider.close()


async def test_no_relevant_memory_is_an_empty_summary_not_a_failure(tmp_path):
    provider = make_provider(tmp_path, FunctionModel(Script(text("NO_RELEVANT_MEMORY"))))
    result = await provider.recall("anything")
    assert (result.summary, result.sources, result.tokens, result.fallback) == ("", [], 0, False)
    provider.close()


async def test_a_broken_profile_falls_back_instead_of_raising(tmp_path):
    provider = MemoryProvider(tmp_path / "mem", profile=tmp_path / "missing.toml", durable=False)
    await seed(provider)
    result = await provider.recall("Which database do we use?")
    assert result.fallback and (result.reason or "").startswith("profile error") and "Postgres" in result.summary
    provider.close()


async def test_dead_local_server_gives_a_fallback_within_about_timeout_s(tmp_path):
    import agent_memory.agents.models.litellm  # noqa: F401  (import cost is not part of the recall)

    path = tmp_path / "dead.toml"
    path.write_text(
        f"""
[recall]
model = "litellm:openai/x"
api_base = "http://127.0.0.1:{closed_port()}/v1"
api_key = "test-key"
timeout_s = 3
max_steps = 3
""",
        encoding="utf-8",
    )
    provider = MemoryProvider(tmp_path / "mem", profile=path, durable=False)
    await seed(provider)
    t0 = time.perf_counter()
    result = await provider.recall("Who approves deploys?")
    assert time.perf_counter() - t0 < 3 + 2
    assert result.fallback and result.reason and "Dana" in result.summary
    assert result.model == "litellm:openai/x"
    provider.close()


# -- the budget ---------------------------------------------------------------------------------------------
async def test_summary_is_trimmed_to_the_budget_on_a_sentence_boundary(tmp_path):
    provider = make_provider(tmp_path, "offline")
    ids = await seed(provider)
    rid = ids["db"]
    long = " ".join(f"Fact number {i} about the database is worth knowing [{rid}:L{i}-L{i}]." for i in range(1, 60))
    provider = make_provider(tmp_path, FunctionModel(Script(call("memory_search", query="database"), text(long))), summary_tokens=60)
    result = await provider.recall("database")
    assert not result.fallback and 0 < result.tokens <= 60 and result.tokens == count_tokens(result.summary)
    assert long.startswith(result.summary) and result.summary.endswith("].")
    assert result.sources == [{"id": rid, "line_start": i, "line_end": i} for i in range(1, len(result.sources) + 1)]
    provider = make_provider(tmp_path, FunctionModel(Script(call("memory_search", query="database"), text(long))), summary_tokens=60)
    wider = await provider.recall("database", summary_tokens=200)  # the argument overrides the profile
    assert 60 < wider.tokens <= 200
    provider.close()


def test_trim_to_tokens():
    text_ = "First sentence here. Second one [a:L1-L2]. Third sentence is a bit longer than the others."
    assert trim_to_tokens(text_, 1000) == text_
    assert trim_to_tokens(text_, count_tokens("First sentence here. Second one [a:L1-L2].")) == "First sentence here. Second one [a:L1-L2]."
    two = "- one [a:L1-L1]\n- two [b:L2-L2]"
    assert trim_to_tokens(two + "\n- three and more", count_tokens(two)) == two
    cut = trim_to_tokens("word " * 200, 10)
    assert cut.endswith("…") and count_tokens(cut) <= 10
    assert trim_to_tokens("anything", 0) == ""


def test_parse_citations():
    summary = "A [r-1:L3-L5]. B [r-2:L7]. C [r-1:L3-L5]. D [r-3]. E [not cited]"
    assert parse_citations(summary) == [{"id": "r-1", "line_start": 3, "line_end": 5}, {"id": "r-2", "line_start": 7, "line_end": 7}]
    assert parse_citations(summary, {"r-2", "r-3"}) == [
        {"id": "r-2", "line_start": 7, "line_end": 7},
        {"id": "r-3", "line_start": None, "line_end": None},
    ]


async def test_recall_never_raises_even_when_search_breaks(tmp_path):
    def boom(messages, info):
        raise RuntimeError("model down")

    provider = make_provider(tmp_path, FunctionModel(boom))

    async def broken_search(*args: Any, **kwargs: Any):
        raise OSError("disk on fire")

    provider.backend.search = broken_search  # type: ignore[method-assign]
    result = await provider.recall("anything", summary_tokens="lots")  # type: ignore[arg-type]
    assert result.fallback and result.summary == "" and "model down" in (result.reason or "")
    assert "lexical fallback failed too" in (result.reason or "") and "disk on fire" in (result.reason or "")
    provider.close()
