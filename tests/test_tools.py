"""Narrow pydantic-ai toolsets bound to one provider and caller identity."""

import json

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelRequest, ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory import MemoryProvider
from agent_memory.agents.tools import CAPTURE, FOREGROUND, READ, memory_toolset


@pytest.fixture
def provider(tmp_path):
    return MemoryProvider(tmp_path / "mem")


def script(calls):
    """A FunctionModel that makes the given tool calls one per step, then answers 'done'."""
    seen = []

    def fn(messages, info: AgentInfo):
        seen.append((messages, info))
        step = len(seen) - 1
        if step < len(calls):
            name, args = calls[step]
            return ModelResponse(parts=[ToolCallPart(name, json.dumps(args), tool_call_id=f"c{step}")])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(fn), seen


def returns(messages):
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, (ToolReturnPart, RetryPromptPart))]


def tool_names(info):
    return sorted(t.name for t in info.function_tools)


async def test_sets_offer_exactly_their_tools(provider):
    for allowed in (READ, CAPTURE, FOREGROUND):
        model, seen = script([])
        await Agent(model, toolsets=[memory_toolset(provider, allowed)]).run("hi")
        assert tool_names(seen[0][1]) == sorted(allowed)


async def test_identity_is_bound_and_not_a_parameter(provider):
    await provider.remember("alice private plan: sail to Madeira", scope="session", session_id="alice")
    await provider.remember("bob private plan: climb Etna", scope="session", session_id="bob")
    model, seen = script([("memory_search", {"query": "private plan"})])
    await Agent(model, toolsets=[memory_toolset(provider, FOREGROUND, session_id="alice")]).run("go")
    schemas = {t.name: t.parameters_json_schema for t in seen[0][1].function_tools}
    for schema in schemas.values():
        assert not {"session_id", "user_id"} & set(schema.get("properties", {}))
    [ret] = returns(seen[-1][0])
    snippets = [h["snippet"] for h in ret.content["hits"]]
    assert snippets == ["alice private plan: sail to Madeira"]
    assert "untrusted" in ret.content["note"]


async def test_remember_get_list_forget_round_trip(provider):
    model, seen = script(
        [
            ("memory_remember", {"content": "The team standup is at 9:30.", "tags": ["meetings"], "memory_key": "standup"}),
            ("memory_list", {"tags": ["meetings"]}),
        ]
    )
    await Agent(model, toolsets=[memory_toolset(provider, CAPTURE, session_id="s1")]).run("go")
    r1, r2 = returns(seen[-1][0])
    assert r1.content["status"] == "created"
    rid = r1.content["id"]
    assert [r["id"] for r in r2.content["records"]] == [rid]
    rec = await provider.get(rid, session_id="s1")
    assert rec.source == "tool" and rec.session_id == "s1" and rec.memory_key == "standup"
    assert rec.scope == "session"  # no scope asked for: the caller's own partition, not shared project scope
    model, seen = script(
        [("memory_get", {"id": rid, "line_start": rec.body_line, "line_end": rec.body_line}), ("memory_forget", {"id": rid})]
    )
    await Agent(model, toolsets=[memory_toolset(provider.backend, FOREGROUND, session_id="s1")]).run("go")
    got, forgot = returns(seen[-1][0])
    assert got.content["content"] == "The team standup is at 9:30." and forgot.content == {"id": rid, "forgotten": True}


async def test_bad_arguments_come_back_as_retry_messages(provider, tmp_path):
    model, seen = script(
        [
            ("memory_get", {"id": "../../etc/passwd"}),
            ("memory_remember", {"content": ""}),
            ("memory_remember", {"content": "x", "memory_key": "../escape"}),
            ("memory_get", {"id": "no-such-record"}),
        ]
    )
    result = await Agent(model, toolsets=[memory_toolset(provider, CAPTURE)]).run("go")
    assert result.output == "done"
    retries = [p for p in returns(seen[-1][0]) if isinstance(p, RetryPromptPart) or getattr(p, "outcome", None) == "retried"]
    assert len(retries) == 4
    assert "InvalidIdError" in str(retries[0].content) and "NotFoundError" in str(retries[3].content)
    assert list(provider.store.records_dir.glob("*.md")) == []
    assert not (tmp_path / "escape").exists()


def test_unknown_tool_names_are_rejected(provider):
    with pytest.raises(ValueError):
        memory_toolset(provider, ("memory_search", "shell"))


async def test_remember_tool_takes_importance_and_expires(tmp_path):
    provider = MemoryProvider(tmp_path / "m")
    model, seen = script(
        [
            ("memory_remember", {"content": "Quarterly review is on the 9th.", "importance": 0.9, "expires": "2999-01-01"}),
            ("memory_remember", {"content": "A stale reminder.", "expires": "2001-01-01"}),
        ]
    )
    await Agent(model, toolsets=[memory_toolset(provider.backend, CAPTURE, session_id="s1")]).run("go")
    first = returns(seen[1][0])[0].content
    rec = await provider.get(first["id"], session_id="s1")
    assert rec.importance == 0.9 and rec.expires is not None and rec.expires.startswith("2999-01-01")
    assert "already expired" in str(seen[2][0])  # a past expiry goes back to the model as a retry, nothing stored
    provider.close()
