"""The backend seam: tools and workers take a MemoryBackend and a Caller, never the provider."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, ModelResponsePart, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory.agents.profiles import load_profile
from agent_memory.agents.tools import CAPTURE, FOREGROUND, as_backend, memory_toolset
from agent_memory.agents.workers.capture import capture_turn
from agent_memory.agents.workers.recall import run_recall
from agent_memory.backends import open_backend
from agent_memory.backends.base import Caller, MemoryBackend
from agent_memory.backends.files.backend import FilesBackend
from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import AgentMemoryError
from agent_memory.provider import MemoryProvider
from agent_memory.search.types import SearchResult

PACKAGE = Path(__file__).resolve().parents[1] / "agent_memory"


class CountingBackend(FilesBackend):
    """A backend of our own: every call is recorded with the caller it was made for."""

    def __init__(self, root: Path) -> None:
        super().__init__(MemoryStore(root, durable=False))
        self.calls: list[tuple[str, Caller | None]] = []

    async def search(self, query: str, caller: Caller, *, limit: int = 10, **options: Any) -> SearchResult:
        self.calls.append(("search", caller))
        return await super().search(query, caller, limit=limit, **options)

    async def remember(self, draft: Any, **kwargs: Any) -> Any:
        self.calls.append(("remember", Caller(draft.session_id, draft.user_id)))
        return await super().remember(draft, **kwargs)

    async def remember_many(self, drafts: Any, **kwargs: Any) -> Any:
        drafts = list(drafts)
        self.calls.extend(("remember", Caller(d.session_id, d.user_id)) for d in drafts)
        return await super().remember_many(drafts, **kwargs)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


@pytest.mark.parametrize(
    "module",
    [
        "agents/tools.py",
        "agents/workers/__init__.py",
        "agents/workers/recall.py",
        "agents/workers/capture.py",
        "agents/core_block.py",
        "backends/base.py",
    ],
)
def test_tools_workers_and_core_never_import_the_provider(module):
    imported = _imports(PACKAGE / module)
    assert not any(name.endswith("provider") or "integrations" in name for name in imported), imported


def test_the_backend_protocol_is_satisfied_and_the_provider_is_not_one(tmp_path):
    backend = CountingBackend(tmp_path / "m")
    assert isinstance(backend, MemoryBackend)
    provider = MemoryProvider(backend)
    assert provider.backend is backend and as_backend(provider) is backend and as_backend(backend) is backend
    with pytest.raises(TypeError):
        as_backend(object())


async def test_tools_run_on_a_backend_with_a_caller(tmp_path):
    backend = CountingBackend(tmp_path / "m")
    steps: Iterator[list[ModelResponsePart]] = iter(
        [
            [ToolCallPart("memory_remember", {"content": "Ada's locker is number 12."})],
            [ToolCallPart("memory_search", {"query": "locker"})],
            [TextPart("done")],
        ]
    )

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=next(steps))

    ada = Caller(session_id="c1", user_id="ada")
    await Agent(FunctionModel(model), toolsets=[memory_toolset(backend, FOREGROUND, caller=ada)]).run("go")
    # memory_remember also looks for what the fact contradicts: one search of its own, as the same caller
    assert backend.calls == [("remember", ada), ("search", ada), ("search", ada)]
    [rec] = await backend.list(ada)
    assert rec.scope == "user" and rec.user_id == "ada"  # no scope asked: the caller's user, never shared
    assert await backend.list(Caller(user_id="bob")) == []


async def test_workers_run_on_a_backend_without_a_provider(tmp_path):
    backend = CountingBackend(tmp_path / "m")
    profile = load_profile("offline")
    who = Caller(session_id="s1", user_id="ada")
    captured = await capture_turn(backend, "Remember that the staging host is kestrel.", caller=who, worker=profile.capture)
    assert not captured.fallback and len(captured.ids) == 1
    recalled = await run_recall(backend, "What is the staging host?", caller=who, worker=profile.recall)
    assert not recalled.fallback and "kestrel" in recalled.summary
    assert {c for _, c in backend.calls} == {who}
    other = await run_recall(backend, "What is the staging host?", caller=Caller(user_id="bob"), worker=profile.recall)
    assert "kestrel" not in other.summary


async def test_a_profile_that_cannot_load_fails_open(tmp_path):
    backend = CountingBackend(tmp_path / "m")

    def broken() -> Any:
        raise RuntimeError("no such profile")

    result = await run_recall(backend, "anything", caller=Caller(), worker=broken)
    assert result.fallback and "no such profile" in (result.reason or "")
    captured = await capture_turn(backend, "Remember that x is y.", caller=Caller(), worker=broken)
    assert captured.fallback and captured.written == []


async def test_provider_search_returns_the_store_shape(tmp_path):
    provider = MemoryProvider(tmp_path / "m")
    await provider.remember("The kettle is in the cupboard.")
    result = await provider.search("kettle", trace=True)
    store_result = provider.store.search("kettle", trace=True)
    assert type(result) is type(store_result) is SearchResult
    assert [h.id for h in result.hits] == [h.id for h in store_result.hits] and result.trace is not None


async def test_a_postgres_url_is_never_a_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    try:  # without the postgres extra: a clear error at once
        provider = MemoryProvider("postgresql://nobody@127.0.0.1:1/none")
    except (ImportError, AgentMemoryError):
        pass
    else:  # with it: connections open on first use, and an unreachable server is a typed error, not a directory
        with pytest.raises(AgentMemoryError):
            await provider.search("anything")
        await provider.aclose()
    assert os.listdir(tmp_path) == []  # no directory named "postgresql:" appears
    assert isinstance(open_backend(tmp_path / "files"), FilesBackend)


async def test_capture_toolset_defaults_to_the_callers_partition(tmp_path):
    backend = CountingBackend(tmp_path / "m")
    calls: Iterator[list[ModelResponsePart]] = iter(
        [
            [
                ToolCallPart("memory_remember", {"content": "Only this chat needs this."}),
                ToolCallPart("memory_remember", {"content": "Shared rule: deploys on Tuesdays.", "scope": "project"}),
            ],
            [TextPart("ok")],
        ]
    )

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=next(calls))

    session_only = Caller(session_id="chat-9")
    await Agent(FunctionModel(model), toolsets=[memory_toolset(backend, CAPTURE, caller=session_only)]).run("go")
    scopes = sorted((r.content, r.scope.value) for r in await backend.list(session_only))
    assert scopes == [("Only this chat needs this.", "session"), ("Shared rule: deploys on Tuesdays.", "project")]
