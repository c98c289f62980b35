"""Extension hooks: observe writes, filter/annotate reads before workers and models see them, never break a turn."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory import MemoryProvider
from agent_memory.agents.tools import READ, memory_toolset
from agent_memory.backends.base import MemoryBackend
from agent_memory.backends.extended import ExtendedBackend, Hooks, Retrieved, SessionEnded, Written
from agent_memory.backends.files.backend import FilesBackend
from agent_memory.errors import NotFoundError
from agent_memory.model.drafts import MemoryDraft


def test_without_hooks_the_backend_is_not_wrapped(tmp_path: Path) -> None:
    provider = MemoryProvider(tmp_path / "m", durable=False)
    assert type(provider.backend) is FilesBackend
    provider.on("on_memory_written", lambda e: None)
    assert isinstance(provider.backend, ExtendedBackend) and isinstance(provider.backend, MemoryBackend)
    inner = provider.backend.inner
    assert isinstance(inner, FilesBackend)
    assert provider.store is inner.store  # attributes of the wrapped backend stay reachable
    with pytest.raises(ValueError, match="unknown hook"):
        provider.on("on_memory_deleted", lambda e: None)
    provider.close()


def test_on_memory_written_sees_created_appended_and_forgotten_not_duplicates(tmp_path: Path) -> None:
    events: list[Written] = []

    async def on_written(event: Written) -> None:  # async hooks work too
        events.append(event)

    async def run() -> None:
        provider = MemoryProvider(tmp_path / "m", durable=False, hooks=Hooks(on_memory_written=on_written))
        a = await provider.remember("The gateway is vpn2.", session_id="s1")
        await provider.remember("The gateway is vpn2.", session_id="s1")  # duplicate: nothing changed
        await provider.remember("Also port 443.", session_id="s1", memory_key=a.id, on_existing="append")
        many = await provider.remember_many(
            [MemoryDraft("Badge office is room 12.", session_id="s1"), MemoryDraft("Also port 443.", session_id="s1", memory_key=a.id)],
            source="import",
        )  # the append is already there: skipped, no event
        assert await provider.forget(a.id, session_id="s1")
        assert [(e.operation, e.status) for e in events] == [
            ("remember", "created"),
            ("remember", "appended"),
            ("remember", "created"),
            ("forget", "forgotten"),
        ]
        assert events[2].record_id == many[0].id and events[2].source == "import"
        assert events[0].record_id == a.id and events[0].caller is not None and events[0].caller.session_id == "s1"
        assert events[0].draft is not None and events[0].draft.content == "The gateway is vpn2." and events[0].source == "tool"
        await provider.aclose()

    asyncio.run(run())


def test_on_memory_retrieved_filters_before_tools_workers_and_get(tmp_path: Path) -> None:
    def hide_hr(event: Retrieved) -> list[Any]:
        return [i for i in event.items if "hr" not in (getattr(i, "tags", ()) or ())]

    async def run() -> None:
        provider = MemoryProvider(tmp_path / "m", durable=False)
        hidden = await provider.remember("Salary bands are reviewed in March.", scope="project", tags=["hr"])
        shown = await provider.remember("Sprint reviews are in March.", scope="project")
        provider.on("on_memory_retrieved", hide_hr)
        assert [h.id for h in (await provider.search("March reviews")).hits] == [shown.id]
        assert [r.id for r in await provider.list()] == [shown.id]
        with pytest.raises(NotFoundError):
            await provider.get(hidden.id)
        core = (await provider.inject()).text
        assert shown.id in core and hidden.id not in core and "Salary" not in core
        recall = await provider.recall("when are the salary bands reviewed in March?")
        assert hidden.id not in {s["id"] for s in recall.sources} and "Salary" not in recall.summary
        reflection = await provider.reflect("When are salary bands reviewed?")
        assert hidden.id not in {s["id"] for s in reflection.sources}

        seen: list[Any] = []

        def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
            if not returns:
                return ModelResponse(parts=[ToolCallPart("memory_search", {"query": "salary March"}, tool_call_id="a")])
            seen.append(returns[0].content)
            return ModelResponse(parts=[TextPart("ok")])

        await Agent(FunctionModel(model), toolsets=[memory_toolset(provider, READ)]).run("go")
        assert [h["id"] for h in seen[0]["hits"]] == [shown.id]
        await provider.aclose()

    asyncio.run(run())


def test_on_memory_retrieved_can_annotate_and_hooks_chain(tmp_path: Path) -> None:
    def mark(event: Retrieved) -> list[Any]:
        if event.operation == "search":
            return [dataclasses.replace(h, snippet=h.snippet + " (verified)") for h in event.items]
        return None  # type: ignore[return-value]

    def keep_first(event: Retrieved) -> list[Any]:
        return event.items[:1]

    async def run() -> None:
        provider = MemoryProvider(tmp_path / "m", durable=False, hooks=Hooks(on_memory_retrieved=[mark, keep_first]))
        await provider.remember("Lunch is at noon.", scope="project")
        await provider.remember("Lunch on Fridays is pizza.", scope="project")
        hits = (await provider.search("lunch")).hits
        assert len(hits) == 1 and hits[0].snippet.endswith("(verified)")
        assert len(await provider.list()) == 1  # keep_first applies to lists; mark leaves them alone
        await provider.aclose()

    asyncio.run(run())


def test_a_failing_hook_is_logged_and_never_breaks_a_write_or_a_read(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    def boom(event: Any) -> Any:
        raise RuntimeError("hook bug")

    async def run() -> None:
        provider = MemoryProvider(
            tmp_path / "m",
            durable=False,
            hooks=Hooks(on_memory_written=boom, on_memory_retrieved=[boom, lambda e: 42], on_session_end=boom),
        )
        res = await provider.remember("Coffee machine is on floor 3.", scope="project")
        assert res.status == "created"
        assert [h.id for h in (await provider.search("coffee machine")).hits] == [res.id]  # boom ignored, 42 ignored
        assert (await provider.get(res.id)).id == res.id
        await provider.end_session("s1", user_id="ada")
        recall = await provider.recall("where is the coffee machine?")
        assert not recall.fallback and recall.sources[0]["id"] == res.id
        await provider.aclose()

    logging.getLogger("agent_memory").propagate = True
    with caplog.at_level(logging.WARNING, logger="agent_memory"):
        asyncio.run(run())
    assert sum("hook" in r.getMessage() and "failed" in r.getMessage() for r in caplog.records) >= 4


def test_on_session_end_runs_after_pending_captures(tmp_path: Path) -> None:
    ended: list[tuple[SessionEnded, int]] = []

    async def run() -> None:
        provider = MemoryProvider(tmp_path / "m", durable=False)

        async def on_end(event: SessionEnded) -> None:
            ended.append((event, await provider.count(session_id="chat-1", user_id="ada")))

        provider.on("on_session_end", on_end)
        provider.capture_turn_in_background("Remember that my badge number is 4411.", "Noted.", session_id="chat-1", user_id="ada")
        await provider.end_session("chat-1", user_id="ada", reason="user closed the tab")
        await provider.aclose()

    asyncio.run(run())
    assert len(ended) == 1
    event, count = ended[0]
    assert event.session_id == "chat-1" and event.user_id == "ada" and event.info == {"reason": "user closed the tab"}
    assert count >= 1  # the background capture had finished before the hook ran


def test_on_memory_written_names_the_namespace_the_write_landed_in(tmp_path: Path) -> None:
    events: list[Written] = []

    async def run() -> None:
        provider = MemoryProvider(tmp_path / "m", durable=False, namespace="acme/support", hooks=Hooks(on_memory_written=events.append))
        await provider.remember("Refunds need a manager.", scope="project")
        await provider.remember_many([MemoryDraft("Badge office is room 12.", scope="project")], namespace="acme/coding")
        await provider.aclose()

    asyncio.run(run())
    assert [e.caller.namespace for e in events if e.caller is not None] == ["acme/support", "acme/coding"]
