"""The model-facing memory tools (``agent_memory.agents.tools``), identically on every backend.

Each test gets ``backend`` (conftest.py): a fresh files root, then a fresh PostgreSQL schema, opened through
``MemoryProvider(<root or url>)``. Tools run inside a real pydantic-ai ``Agent`` driven by a ``FunctionModel``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from _doubles import plain_tools
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory.agents.tools import CAPTURE, FOREGROUND, READ, memory_toolset


class Script:
    """A FunctionModel body: one tool call per step (arguments may be a function of the messages so far), then 'done'."""

    def __init__(self, *calls: tuple[str, Any]) -> None:
        self.calls = calls
        self.infos: list[AgentInfo] = []
        self.messages: list[ModelMessage] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.infos.append(info)
        self.messages = list(messages)
        step = len(self.infos) - 1
        if step < len(self.calls):
            name, args = self.calls[step]
            args = args(messages) if callable(args) else args
            return ModelResponse(parts=[ToolCallPart(name, json.dumps(args), tool_call_id=f"c{step}")])
        return ModelResponse(parts=[TextPart("done")])

    def returns(self) -> list[Any]:
        """Every tool return or retry prompt the model received, in order."""
        return [
            p for m in self.messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, (ToolReturnPart, RetryPromptPart))
        ]


def is_retry(part: Any) -> bool:
    """A tool call sent back to the model to retry (pydantic-ai v2 marks the return ``outcome='retried'``)."""
    return isinstance(part, RetryPromptPart) or getattr(part, "outcome", None) == "retried"


def last_return(messages: list[ModelMessage], tool: str) -> Any:
    found = [
        p.content
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart) and p.tool_name == tool and not is_retry(p)
    ]
    return found[-1]


async def run(provider: Any, allowed: tuple[str, ...], *calls: tuple[str, Any], **who: Any) -> Script:
    script = Script(*calls)
    result = await Agent(FunctionModel(script), toolsets=[memory_toolset(provider, allowed, **who)]).run("go")
    assert result.output == "done"
    return script


async def test_each_set_offers_exactly_its_tools_and_no_identity_parameter(backend: Any) -> None:
    provider = backend.provider()
    for allowed in (READ, CAPTURE, FOREGROUND):
        script = await run(provider, allowed, session_id="s1", user_id="ada")
        tools = script.infos[0].function_tools
        assert sorted(t.name for t in tools) == sorted(allowed)  # session logs and episodes on every backend
        for tool in tools:
            assert not {"session_id", "user_id"} & set(tool.parameters_json_schema.get("properties", {}))


async def test_remember_search_get_list_forget_round_trip(backend: Any) -> None:
    provider = backend.provider()
    who = {"session_id": "s1", "user_id": "ada"}

    def get_hit_lines(messages: list[ModelMessage]) -> dict[str, Any]:
        hit = last_return(messages, "memory_search")["hits"][0]
        return {"id": hit["id"], "line_start": hit["line_start"], "line_end": hit["line_end"]}

    script = await run(
        provider,
        FOREGROUND,
        (
            "memory_remember",
            {
                "content": "Standup moved to 9:30.\nThe retro is on Fridays.",
                "title": "Team rituals",
                "tags": ["Meetings"],
                "kind": "decision",
            },
        ),
        ("memory_remember", {"content": "Lunch is tacos on Thursdays.", "tags": ["food"]}),
        ("memory_search", {"query": "When is the retro?"}),
        ("memory_get", get_hit_lines),
        ("memory_list", {"tags": ["meetings"]}),
        ("memory_list", {"kind": "decision", "scope": "user"}),
        **who,
    )
    made, other, found, got, listed, by_kind = script.returns()
    assert made.content["status"] == other.content["status"] == "created"
    rid = made.content["id"]
    hits = found.content["hits"]
    assert hits[0]["id"] == rid and "retro is on Fridays" in hits[0]["snippet"]
    assert "untrusted" in found.content["note"]
    assert got.content["content"] == "The retro is on Fridays."  # the hit's line range addresses the right line
    assert [r["id"] for r in listed.content["records"]] == [rid]
    assert [r["id"] for r in by_kind.content["records"]] == [rid]
    record = await provider.get(rid, **who)
    assert (record.scope, record.user_id, record.session_id, record.source) == ("user", "ada", "s1", "tool")
    assert record.tags == ("meetings",) and record.kind == "decision" and record.title == "Team rituals"

    script = await run(
        provider, FOREGROUND, ("memory_forget", {"id": rid}), ("memory_forget", {"id": rid}), ("memory_get", {"id": rid}), **who
    )
    first, second, gone = script.returns()
    assert first.content == {"id": rid, "forgotten": True} and second.content == {"id": rid, "forgotten": False}
    assert is_retry(gone) and "NotFoundError" in str(gone.content)
    assert [h.id for h in (await provider.search("retro standup", **who)).hits] == []
    assert await provider.count(**who) == 1


async def test_keyed_capture_policy_through_the_tools(backend: Any) -> None:
    provider = backend.provider()
    script = await run(
        provider,
        CAPTURE,
        ("memory_remember", {"content": "step one", "memory_key": "release.plan"}),
        ("memory_remember", {"content": "step two", "memory_key": "release.plan"}),
        ("memory_remember", {"content": "step two", "memory_key": "release.plan"}),  # a replayed tool call
        ("memory_remember", {"content": "ignored", "memory_key": "release.plan", "on_existing": "skip"}),
        ("memory_remember", {"content": "The plan: ship Friday.", "memory_key": "release.plan", "on_existing": "replace"}),
        ("memory_remember", {"content": "The plan: ship Friday.", "memory_key": "release.plan", "on_existing": "replace"}),
        session_id="s1",
    )
    statuses = [r.content["status"] for r in script.returns()]
    assert statuses == ["created", "appended", "duplicate", "skipped", "replaced", "duplicate"]
    ids = {r.content["id"] for r in script.returns()}
    assert len(ids) == 1
    [rid] = ids
    record = await provider.get(rid, session_id="s1")
    assert record.content == "The plan: ship Friday." and record.memory_key == "release.plan"
    assert record.scope == "session"  # no scope named, no user: this conversation's own partition
    assert await provider.count(session_id="s1") == 1
    # the same key from another conversation is another record; the first one is untouched
    script = await run(provider, CAPTURE, ("memory_remember", {"content": "their plan", "memory_key": "release.plan"}), session_id="s2")
    theirs = script.returns()[0].content
    assert theirs["status"] == "created" and theirs["id"] != rid
    assert (await provider.get(rid, session_id="s1")).content == "The plan: ship Friday."


async def test_appending_by_record_id_extends_that_record(backend: Any) -> None:
    provider = backend.provider()
    first = await provider.remember("Packing list: tent", user_id="ada", scope="user")
    script = await run(provider, CAPTURE, ("memory_remember", {"content": "Packing list: stove", "memory_key": first.id}), user_id="ada")
    assert script.returns()[0].content == {"id": first.id, "status": "appended"}
    assert (await provider.get(first.id, user_id="ada")).content == "Packing list: tent\nPacking list: stove"


async def test_bad_arguments_come_back_as_retries_and_write_nothing(backend: Any) -> None:
    provider = backend.provider()
    parts: list[Any] = []
    for calls in (  # at most two failures of one tool per run (the toolset's retry budget)
        [
            ("memory_get", {"id": "../../etc/passwd"}),
            ("memory_remember", {"content": ""}),
            ("memory_remember", {"content": "x", "memory_key": "../escape"}),
            ("memory_get", {"id": "no-such-record"}),
        ],
        [
            ("memory_remember", {"content": "nul \x00 inside"}),
            ("memory_forget", {"id": "../x"}),
            ("memory_remember", {"content": "A stale reminder.", "expires": "2001-01-01"}),
            ("memory_search", {"query": "x", "limit": 0}),
        ],
    ):
        parts += (await run(provider, FOREGROUND, *calls, user_id="ada")).returns()
    assert [is_retry(p) for p in parts] == [True] * 7 + [False], parts  # a limit out of range is clamped, not refused
    assert "InvalidIdError" in str(parts[0].content) and "NotFoundError" in str(parts[3].content)
    assert "already expired" in str(parts[6].content)
    assert await provider.count(user_id="ada") == 0


async def test_a_nul_or_lone_surrogate_in_a_query_only_separates_words(backend: Any) -> None:
    provider = backend.provider()
    want = await provider.remember("the treasure map marks the spot", user_id="ada")
    search = plain_tools(memory_toolset(provider, READ, user_id="ada"))["memory_search"]
    for query in ("treasure\x00spot", "treasure \ud800 spot", "\x00"):
        hits = (await search(query=query))["hits"]  # as the tool receives it, past JSON parsing
        assert [h["id"] for h in hits] == ([want.id] if "treasure" in query else []), query
        assert [h.id for h in (await provider.search(query, user_id="ada")).hits] == [h["id"] for h in hits]


async def test_a_caller_never_reaches_another_callers_records_through_the_tools(backend: Any) -> None:
    """Another user's and another session's records: not found, not listed, not forgotten, not overwritten by key or id."""
    provider = backend.provider()
    theirs = {
        "user": await provider.remember("zeppelin hangar code for bob", scope="user", user_id="bob", memory_key="code"),
        "session": await provider.remember("zeppelin hangar draft of s9", scope="session", session_id="s9"),
        "session_of_bob": await provider.remember("zeppelin hangar chat of bob", scope="session", session_id="s1", user_id="bob"),
    }
    shared = await provider.remember("zeppelin hangar opening hours", scope="project")
    before = {
        name: (await provider.get(r.id, session_id=r_sid, user_id=r_uid)).content
        for (name, r), (r_sid, r_uid) in zip(theirs.items(), [(None, "bob"), ("s9", None), ("s1", "bob")])
    }
    tools = plain_tools(memory_toolset(provider, FOREGROUND, session_id="s1", user_id="ada"))

    async def call(name: str, **args: Any) -> Any:
        return await tools[name](**args)

    assert {h["id"] for h in (await call("memory_search", query="zeppelin hangar", limit=50))["hits"]} == {shared.id}
    assert {r["id"] for r in (await call("memory_list", limit=100))["records"]} == {shared.id}
    for r in theirs.values():
        with pytest.raises(ModelRetry, match="NotFoundError"):
            await call("memory_get", id=r.id)
        assert await call("memory_forget", id=r.id) == {"id": r.id, "forgotten": False}
        for key in (r.id, "code"):
            out = await call("memory_remember", content=f"overwrite attempt via {key}", memory_key=key, on_existing="replace")
            assert out["status"] == "created" and out["id"] != r.id  # a new record in ada's own partition
            assert (await call("memory_forget", id=out["id"]))["forgotten"] is True
    after = {
        name: (await provider.get(r.id, session_id=r_sid, user_id=r_uid)).content
        for (name, r), (r_sid, r_uid) in zip(theirs.items(), [(None, "bob"), ("s9", None), ("s1", "bob")])
    }
    assert after == before
