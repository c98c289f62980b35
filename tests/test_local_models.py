"""Local OpenAI-compatible servers as a worker target: ``openai-chat:`` with base_url, the ``local`` profile.

A fake server on 127.0.0.1 plays a small local model: it lists one model at ``GET /v1/models`` and answers a
tool request the way llama.cpp's server does for small models, with the call written as JSON *text*.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from _doubles import FakeJSONServer

pytest.importorskip("openai")

from agent_memory.agents.profiles import load_profile, parse_profile, server_model_name  # noqa: E402
from agent_memory.errors import ProfileError  # noqa: E402
from agent_memory.provider import MemoryProvider  # noqa: E402

SERVED = "qwen-tiny-local"


class SmallModelServer:
    """``GET /v1/models`` lists :data:`SERVED`; each chat completion first asks for a search as text, then picks the
    first numbered result (recall's select step), or cites the hit when asked for a summary."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        self.gets: list[str] = []
        self.headers: list[dict[str, str]] = []

        def listed(path: str) -> tuple[int, Any]:
            self.gets.append(path)
            return (200 if path.rstrip("/").endswith("/models") else 404), {"object": "list", "data": [{"id": SERVED}]}

        def answered(path: str, body: dict[str, Any], headers: Any) -> tuple[int, Any]:
            self.posts.append(body)
            self.headers.append({k.lower(): v for k, v in headers.items()})
            return 200, self.reply(body)

        self.fake = FakeJSONServer(answered, get=listed)
        self.base_url = self.fake.base_url

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        sent = json.dumps(body["messages"])
        found = re.search(r"- \[(\S+?):L(\d+)-L(\d+)\] ", sent)  # a search result replayed as text
        if "Which numbered results answer this message?" in sent:
            content = "1"
        elif found:
            content = f"Ada prefers the Helix editor. [{found.group(1)}:L{found.group(2)}-L{found.group(3)}]"
        else:
            content = '{"name": "memory_search", "arguments": {"query": "Ada editor", "limit": "5"}}'
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 20, "total_tokens": 140},
        }

    def __enter__(self) -> SmallModelServer:
        self.fake.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.fake.stop()


@pytest.fixture
def server() -> Iterator[SmallModelServer]:
    with SmallModelServer() as s:
        yield s


async def seeded(tmp_path, profile: Any) -> MemoryProvider:
    provider = MemoryProvider(tmp_path / "mem", profile=profile, durable=False)
    await provider.remember("Ada prefers the Helix editor over vim.", title="Editor", user_id="ada", scope="user")
    return provider


async def test_local_profile_asks_the_server_for_its_model_and_recalls(tmp_path, server, monkeypatch):
    monkeypatch.setenv("AGENT_MEMORY_MODEL_URL", server.base_url)
    monkeypatch.delenv("AGENT_MEMORY_MODEL", raising=False)
    provider = await seeded(tmp_path, "local")
    result = await provider.recall("Which editor does Ada use?", user_id="ada")
    assert not result.fallback, result.reason
    assert "Helix" in result.summary and len(result.sources) == 1
    assert server.gets == ["/v1/models"]
    assert [p["model"] for p in server.posts] == [SERVED, SERVED]
    assert server.posts[0]["max_tokens"] == 300 and server.posts[0]["temperature"] == 0.0
    assert "tools" not in server.posts[0]  # prompted: the tools are listed in the prompt
    assert "- memory_get(id: string" in json.dumps(server.posts[0]["messages"])
    assert result.usage["tool_issues"] == {"text_tool_calls": 1, "tool_call_fixes": 1}
    assert (result.usage["input_tokens"], result.usage["requests"]) == (240, 2)
    provider.close()


async def test_the_model_variable_wins_over_the_servers_list(tmp_path, server, monkeypatch):
    monkeypatch.setenv("AGENT_MEMORY_MODEL_URL", server.base_url)
    monkeypatch.setenv("AGENT_MEMORY_MODEL", "my-model")
    provider = await seeded(tmp_path, "local")
    result = await provider.recall("Which editor does Ada use?", user_id="ada")
    assert not result.fallback and server.gets == [] and server.posts[0]["model"] == "my-model"
    provider.close()


async def test_without_a_server_url_recall_falls_back_naming_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENT_MEMORY_MODEL_URL", raising=False)
    provider = await seeded(tmp_path, "local")
    result = await provider.recall("Which editor does Ada use?", user_id="ada")
    assert result.fallback and "set the AGENT_MEMORY_MODEL_URL environment variable" in (result.reason or "")
    assert "Helix" in result.summary
    provider.close()


async def test_openai_chat_with_base_url_and_key_in_auto_mode(tmp_path, server, monkeypatch):
    monkeypatch.setenv("MY_LOCAL_KEY", "sk-local-123")
    profile = parse_profile(
        {
            "recall": {
                "model": "openai-chat:served-name",
                "base_url": server.base_url,
                "api_key_env": "MY_LOCAL_KEY",
                "tool_mode": "auto",
                "tools": ["memory_search", "memory_get"],
            }
        }
    )
    provider = await seeded(tmp_path, profile)
    result = await provider.recall("Which editor does Ada use?", user_id="ada")
    assert not result.fallback, result.reason
    assert server.posts[0]["model"] == "served-name"
    assert {t["function"]["name"] for t in server.posts[0]["tools"]} == {"memory_search", "memory_get"}  # auto: native tools
    assert "Result of memory_search" in json.dumps(server.posts[1]["messages"])  # a text call's result replayed as text
    assert server.headers[0].get("authorization") == "Bearer sk-local-123"
    provider.close()


def test_server_model_name_errors_name_the_fix(server):
    assert server_model_name(server.base_url) == SERVED
    with pytest.raises(ProfileError, match="set AGENT_MEMORY_MODEL or give model = 'openai-chat:<name>'"):
        server_model_name("http://127.0.0.1:9/v1", timeout_s=0.5)


def test_connection_keys_name_what_works():
    ok = parse_profile({"recall": {"model": "openai-chat:m", "base_url": "http://127.0.0.1:8080/v1"}})
    assert ok.recall.api_base == "http://127.0.0.1:8080/v1" == ok.recall.base_url
    assert ok.reflect.base_url == "http://127.0.0.1:8080/v1"  # [reflect] inherits the connection
    with pytest.raises(ProfileError, match=r"base_url: only supported with .*'openai-chat:<name>'.*Responses API"):
        parse_profile({"recall": {"model": "openai:gpt-4o-mini", "base_url": "http://127.0.0.1:8080/v1"}})
    with pytest.raises(ProfileError, match=r"api_key_env: only supported with model = 'litellm:<name>' or 'openai-chat:<name>'"):
        parse_profile({"recall": {"model": "anthropic:claude", "api_key_env": "K"}})
    with pytest.raises(ProfileError, match="give base_url or api_base"):
        parse_profile({"recall": {"model": "openai-chat:m", "base_url": "http://a/v1", "api_base": "http://b/v1"}})
    with pytest.raises(ProfileError, match="'openai-chat:' without a model name needs base_url"):
        parse_profile({"recall": {"model": "openai-chat:"}})
    with pytest.raises(ProfileError, match="max_tokens: must be a positive integer"):
        parse_profile({"recall": {"max_tokens": 0}})


def test_shipped_local_profile():
    profile = load_profile("local")
    for worker in (profile.recall, profile.capture):
        assert worker.model == "openai-chat:" and worker.base_url_env == "AGENT_MEMORY_MODEL_URL" and worker.tool_mode == "prompted"
    assert profile.capture.tools == ("memory_remember",) and profile.recall.answer_mode == "auto" and profile.recall.selects
