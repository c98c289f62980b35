"""The README's `Agent("openai:…", capabilities=[memory])` against a local OpenAI-compatible server.

Needs the ``openai`` extra (pydantic-ai-slim[openai], openai>=3.31). The server runs on 127.0.0.1 in a
thread and speaks the Responses API (what ``openai:`` uses) and Chat Completions (``openai-chat:``).
This file is also a script: ``python tests/test_openai_compat.py`` runs the README snippet once and prints
what the server saw as JSON (tests/test_install.py runs it inside a freshly installed venv, without pytest).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _doubles import FakeJSONServer

ANSWER = "Booked your usual table by the window at Luigi's for 8pm."
FACT = "Ada's usual table is the one by the window at Luigi's, booked for 8pm."


class FakeOpenAIServer(FakeJSONServer):
    """Answers every `/v1/responses` and `/v1/chat/completions` POST with ``ANSWER``; records request bodies."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        super().__init__(self._route)

    def _route(self, raw_path: str, body: dict[str, Any], headers: Any) -> tuple[int, dict[str, Any] | bytes]:
        path = raw_path.rstrip("/")
        self.requests.append((path, body))
        if path.endswith("/responses"):
            return 200, _responses_reply(body)
        if path.endswith("/chat/completions"):
            return 200, _chat_reply(body)
        return 404, {"error": {"message": f"no route {raw_path}", "type": "invalid_request_error"}}


def _usage(kind: str) -> dict[str, Any]:
    if kind == "responses":
        return {
            "input_tokens": 50,
            "output_tokens": 12,
            "total_tokens": 62,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
    return {"prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62}


def _responses_reply(body: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": "completed",
        "model": body.get("model", "gpt-4.1-mini"),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
            }
        ],
        "usage": _usage("responses"),
    }


def _chat_reply(body: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": body.get("model", "x"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
        "usage": _usage("chat"),
    }


@contextmanager
def _env(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


async def run_readme_snippet(root: Path, model: str = "openai:gpt-4.1-mini") -> dict[str, Any]:
    """The README's capability wiring, verbatim apart from the root and a seeded fact; returns what happened."""
    from pydantic_ai import Agent

    from agent_memory import MemoryProvider
    from agent_memory.integrations.pydantic_ai import MemoryCapability

    with FakeOpenAIServer() as server, _env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-local-test"):
        provider = MemoryProvider(root)  # offline workers by default
        await provider.remember(FACT, title="Usual table", user_id="ada", scope="user")
        memory = MemoryCapability(provider, session_id="chat-42", user_id="ada")
        agent = Agent(model, capabilities=[memory, memory.compaction(keep_turns=8)])
        result = await agent.run("Book my usual table")
        await provider.flush()
        provider.close()
    return {
        "output": result.output,
        "requests": server.requests,
        "input_tokens": result.usage.input_tokens,
        "output_tokens": result.usage.output_tokens,
    }


def _sent_text(body: dict[str, Any]) -> str:
    return json.dumps(body)


def test_readme_agent_runs_on_pydantic_ais_openai_model(tmp_path: Path) -> None:
    seen = asyncio.run(run_readme_snippet(tmp_path / "mem"))
    assert seen["output"] == ANSWER
    ((path, body),) = seen["requests"]
    assert path == "/v1/responses" and body["model"] == "gpt-4.1-mini"
    assert "Luigi" in _sent_text(body)  # recall (or the core block) reached the main model
    assert "Book my usual table" in _sent_text(body)
    assert (seen["input_tokens"], seen["output_tokens"]) == (50, 12)


def test_chat_completions_flavour_works_too(tmp_path: Path) -> None:
    seen = asyncio.run(run_readme_snippet(tmp_path / "mem", model="openai-chat:gpt-4.1-mini"))
    assert seen["output"] == ANSWER
    ((path, body),) = seen["requests"]
    assert path == "/v1/chat/completions"
    assert "Luigi" in _sent_text(body) and body["messages"][-1]["role"] == "user"


def test_openai_sdk_is_the_one_pydantic_ai_needs() -> None:
    import openai

    major, minor = (int(p) for p in openai.__version__.split(".")[:2])
    assert (major, minor) >= (3, 31), openai.__version__


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        report = asyncio.run(run_readme_snippet(Path(tmp) / "mem"))
    json.dump(
        {
            "output": report["output"],
            "paths": [p for p, _ in report["requests"]],
            "recall_reached_model": all("Luigi" in _sent_text(b) for _, b in report["requests"]),
        },
        sys.stdout,
    )
