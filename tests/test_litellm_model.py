"""LiteLLMModel against a scripted OpenAI-compatible server on 127.0.0.1 (no other network)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest  # noqa: E402
from _doubles import FakeJSONServer, free_port  # noqa: E402
from pydantic import BaseModel  # noqa: E402
from pydantic_ai import Agent, ModelAPIError, ModelConnectionError, ModelHTTPError  # noqa: E402
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart  # noqa: E402
from pydantic_ai.models.test import TestModel  # noqa: E402

pytest.importorskip("litellm", reason="needs the litellm extra (make test runs this file in .venv-litellm)")

from agent_memory.agents.models.litellm import LiteLLMModel, make_model  # noqa: E402

pytestmark = [pytest.mark.asyncio, pytest.mark.litellm]


class FakeOpenAI:
    """A tiny Chat Completions server: pops scripted replies and records every request body."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, dict[str, Any] | bytes]] = []
        self.requests: list[dict[str, Any]] = []
        self.delay_s = 0.0
        self.http = FakeJSONServer(self._route)
        self.port = self.http.port

    def _route(self, path: str, body: dict[str, Any], headers: Any) -> tuple[int, dict[str, Any] | bytes]:
        if path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            return 404, {"error": {"message": f"no route {path}"}}
        self.requests.append(body)
        time.sleep(self.delay_s)
        if self.replies:
            return self.replies.pop(0)
        return 500, {"error": {"message": "no scripted reply left", "type": "server_error"}}

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def model(self, name: str = "openai/test-model", **kw: Any) -> LiteLLMModel:
        return LiteLLMModel(name, api_base=self.api_base, api_key="sk-test", timeout_s=10, **kw)

    def reply(self, message: dict[str, Any], *, finish: str = "stop", usage: tuple[int, int] = (11, 7)) -> None:
        self.replies.append(
            (
                200,
                {
                    "id": f"chatcmpl-{len(self.replies)}",
                    "object": "chat.completion",
                    "created": 1_700_000_000,
                    "model": "test-model",
                    "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
                    "usage": {
                        "prompt_tokens": usage[0],
                        "completion_tokens": usage[1],
                        "total_tokens": usage[0] + usage[1],
                    },
                },
            )
        )

    def reply_text(self, text: str, **kw: Any) -> None:
        self.reply({"content": text}, **kw)

    def reply_tool_call(self, name: str, args: dict[str, Any], call_id: str, **kw: Any) -> None:
        call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        self.reply({"content": None, "tool_calls": [call]}, finish="tool_calls", **kw)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    with server.http:
        yield server


async def test_tool_call_then_final_text(fake: FakeOpenAI) -> None:
    fake.reply_tool_call("get_weather", {"city": "Paris"}, "call_abc123", usage=(20, 5))
    fake.reply_text("It is sunny in Paris.", usage=(30, 8))

    agent = Agent(fake.model(), instructions="You are a weather bot.")
    seen: list[str] = []

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Look up the weather."""
        seen.append(city)
        return f"sunny in {city}"

    result = await agent.run("Weather in Paris?")

    assert result.output == "It is sunny in Paris."
    assert seen == ["Paris"]
    assert len(fake.requests) == 2

    first = fake.requests[0]
    assert first["model"] == "test-model"
    assert first["messages"][0] == {"role": "system", "content": "You are a weather bot."}
    assert first["messages"][-1] == {"role": "user", "content": "Weather in Paris?"}
    (tool,) = first["tools"]
    assert tool["type"] == "function"
    assert tool["function"]["name"] == "get_weather"
    assert tool["function"]["description"] == "Look up the weather."
    assert tool["function"]["parameters"]["properties"]["city"]["type"] == "string"
    assert first["tool_choice"] == "auto"

    second = fake.requests[1]["messages"]
    assistant = next(m for m in second if m["role"] == "assistant")
    assert assistant["tool_calls"][0]["id"] == "call_abc123"
    assert assistant["tool_calls"][0]["function"]["name"] == "get_weather"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    tool_msgs = [m for m in second if m["role"] == "tool"]
    assert len(tool_msgs) == 1
    assert tool_msgs[0]["tool_call_id"] == "call_abc123"
    assert tool_msgs[0]["content"] == "sunny in Paris"
    assert second.index(tool_msgs[0]) == second.index(assistant) + 1

    responses = [m for m in result.all_messages() if isinstance(m, ModelResponse)]
    call_part = responses[0].parts[0]
    assert isinstance(call_part, ToolCallPart)
    assert call_part.tool_call_id == "call_abc123"
    assert call_part.args == json.dumps({"city": "Paris"})
    assert responses[0].finish_reason == "tool_call"
    assert isinstance(responses[1].parts[0], TextPart)
    assert responses[1].finish_reason == "stop"
    assert responses[1].provider_name == "litellm"
    assert responses[1].model_name == "openai/test-model"


class City(BaseModel):
    name: str
    population: int


async def test_structured_output_via_output_tool(fake: FakeOpenAI) -> None:
    agent = Agent(fake.model(), output_type=City)
    fake.reply_tool_call("final_result", {"name": "Lyon", "population": 522000}, "call_out1")

    result = await agent.run("Biggest city after Paris and Marseille?")

    assert result.output == City(name="Lyon", population=522000)
    request = fake.requests[0]
    assert [t["function"]["name"] for t in request["tools"]] == ["final_result"]
    assert request["tools"][0]["function"]["parameters"]["required"] == ["name", "population"]
    # Text isn't an acceptable output, so the single output tool is forced.
    assert request["tool_choice"] in ("required", {"type": "function", "function": {"name": "final_result"}})


async def test_structured_output_retry_goes_back_as_tool_message(fake: FakeOpenAI) -> None:
    agent = Agent(fake.model(), output_type=City)
    fake.reply_tool_call("final_result", {"name": "Lyon"}, "call_bad")
    fake.reply_tool_call("final_result", {"name": "Lyon", "population": 1}, "call_good")

    result = await agent.run("city?")

    assert result.output == City(name="Lyon", population=1)
    retry = [m for m in fake.requests[1]["messages"] if m["role"] == "tool"]
    assert len(retry) == 1
    assert retry[0]["tool_call_id"] == "call_bad"
    assert "population" in retry[0]["content"]


async def test_native_output_sends_response_format(fake: FakeOpenAI) -> None:
    from pydantic_ai import NativeOutput

    fake.reply_text(json.dumps({"name": "Nice", "population": 340000}))
    result = await Agent(fake.model(), output_type=NativeOutput(City)).run("city?")

    assert result.output == City(name="Nice", population=340000)
    response_format = fake.requests[0]["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["schema"]["required"] == ["name", "population"]
    assert "tools" not in fake.requests[0]


async def test_http_500_raises_model_http_error_quickly(fake: FakeOpenAI) -> None:
    fake.replies.append((500, {"error": {"message": "boom", "type": "server_error", "code": "server_error"}}))
    agent = Agent(fake.model())

    started = time.monotonic()
    with pytest.raises(ModelHTTPError) as exc_info:
        await agent.run("hi")
    elapsed = time.monotonic() - started

    assert exc_info.value.status_code == 500
    assert exc_info.value.model_name == "openai/test-model"
    assert len(fake.requests) == 1  # num_retries=0: no retry
    assert elapsed < 5


async def test_http_429_is_rate_limit_error(fake: FakeOpenAI) -> None:
    from pydantic_ai import ModelRateLimitError

    fake.replies.append((429, {"error": {"message": "slow down", "type": "rate_limit_error"}}))
    with pytest.raises(ModelRateLimitError) as exc_info:
        await Agent(fake.model()).run("hi")
    assert isinstance(exc_info.value, ModelHTTPError)
    assert exc_info.value.status_code == 429


async def test_connection_refused_raises_connection_error_fast() -> None:
    port = free_port()
    model = LiteLLMModel("openai/test-model", api_base=f"http://127.0.0.1:{port}/v1", api_key="sk-test", timeout_s=10)

    started = time.monotonic()
    with pytest.raises(ModelAPIError) as exc_info:
        await Agent(model).run("hi")
    elapsed = time.monotonic() - started

    assert isinstance(exc_info.value, ModelConnectionError)
    assert exc_info.value.phase == "connect"
    assert not isinstance(exc_info.value, ModelHTTPError)
    assert elapsed < 3


async def test_slow_server_raises_timeout_error(fake: FakeOpenAI) -> None:
    from pydantic_ai import ModelTimeoutError

    fake.delay_s = 1.5
    fake.reply_text("too late")
    model = LiteLLMModel("openai/test-model", api_base=fake.api_base, api_key="sk-test", timeout_s=0.3)

    started = time.monotonic()
    with pytest.raises(ModelTimeoutError):
        await Agent(model).run("hi")
    assert time.monotonic() - started < 1.4
    assert len(fake.requests) == 1


async def test_usage_tokens_reach_run_usage(fake: FakeOpenAI) -> None:
    fake.reply_tool_call("noop", {}, "call_1", usage=(100, 10))
    fake.reply_text("done", usage=(150, 20))
    agent = Agent(fake.model())

    @agent.tool_plain
    def noop() -> str:
        return "ok"

    result = await agent.run("go")

    usage = result.usage
    assert usage.input_tokens == 250
    assert usage.output_tokens == 30
    assert usage.requests == 2
    assert usage.tool_calls == 1


async def test_cost_is_reported_for_priced_models(fake: FakeOpenAI) -> None:
    fake.reply_text("hello", usage=(1000, 1000))
    result = await Agent(fake.model("openai/gpt-4o-mini")).run("hi")

    response = result.all_messages()[-1]
    assert isinstance(response, ModelResponse)
    assert response.provider_details is not None
    cost = response.provider_details["cost_usd"]
    assert isinstance(cost, float) and cost > 0
    assert response.usage.cost is not None and float(response.usage.cost) == pytest.approx(cost)
    assert result.usage.cost is not None


async def test_settings_and_temperature_are_forwarded(fake: FakeOpenAI) -> None:
    fake.reply_text("ok")
    agent = Agent(fake.model(temperature=0.25))
    await agent.run("hi", model_settings={"max_tokens": 33, "stop_sequences": ["END"], "seed": 7})

    body = fake.requests[0]
    assert body["temperature"] == 0.25
    assert body.get("max_tokens", body.get("max_completion_tokens")) == 33
    assert body["stop"] == ["END"]
    assert body["seed"] == 7
    assert "tools" not in body


async def test_run_stream_replays_the_completed_response(fake: FakeOpenAI) -> None:
    fake.reply_text("streamed answer")
    async with Agent(fake.model()).run_stream("hi") as stream:
        output = await stream.get_output()
    assert output == "streamed answer"


async def test_make_model() -> None:
    model = make_model("litellm:ollama_chat/llama3.1", api_base="http://127.0.0.1:11434", timeout_s=5)
    assert isinstance(model, LiteLLMModel)
    assert model.model_name == "ollama_chat/llama3.1"
    assert model.model_id == "litellm:ollama_chat/llama3.1"
    assert model.base_url == "http://127.0.0.1:11434"
    assert isinstance(make_model("test"), TestModel)


async def test_context_window_comes_from_litellm_model_map() -> None:
    assert LiteLLMModel("openai/gpt-4o-mini").context_window == 128000
    assert LiteLLMModel("openai/not-a-real-model").context_window is None


@pytest.mark.parametrize("body", [b'{"hello": "world"}', b"<html>welcome to nginx</html>", b'{"object": "chat.completion", "choices": []}'])
async def test_a_200_that_is_not_a_completion_is_reported_as_such(fake: FakeOpenAI, body: bytes) -> None:
    from pydantic_ai import UnexpectedModelBehavior

    fake.replies.append((200, body))
    with pytest.raises(UnexpectedModelBehavior, match="the server answered.*not with a chat completion") as exc_info:
        await Agent(fake.model()).run("hi")
    assert not isinstance(exc_info.value, ModelHTTPError)
    assert "status_code: 500" not in str(exc_info.value)


async def test_a_real_500_with_an_html_body_stays_a_server_error(fake: FakeOpenAI) -> None:
    fake.replies.append((500, b"<html>upstream exploded</html>"))
    with pytest.raises(ModelHTTPError) as exc_info:
        await Agent(fake.model()).run("hi")
    assert exc_info.value.status_code == 500


_COLD_START = r"""
import asyncio, json, os, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get('Content-Length') or 0))
        data = json.dumps({'id': 'c1', 'object': 'chat.completion', 'created': 1, 'model': 'x',
                           'choices': [{'index': 0, 'finish_reason': 'stop',
                                        'message': {'role': 'assistant', 'content': 'NO_RELEVANT_MEMORY'}}],
                           'usage': {'prompt_tokens': 3, 'completion_tokens': 2, 'total_tokens': 5}}).encode()
        self.send_response(200); self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data))); self.end_headers(); self.wfile.write(data)
    def log_message(self, *args): pass

server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
root = Path(sys.argv[1])
def profile(timeout):
    path = root / f'p{timeout}.toml'
    path.write_text(f'[recall]\nmodel = "litellm:openai/x"\napi_key = "k"\ntimeout_s = {timeout}\n'
                    f'api_base = "http://127.0.0.1:{server.server_address[1]}/v1"\n', encoding='utf-8')
    return path

from pydantic_ai import Agent, ModelTimeoutError  # imported before the ticker starts: only litellm's import is timed
from agent_memory import MemoryProvider
from agent_memory.agents.models.litellm import LiteLLMModel
from agent_memory.agents.tokens import count_tokens
count_tokens('warm up')  # the tokenizer loads once per process; not what this test measures

async def main():
    gaps, running = [], True
    async def ticker():
        last = time.perf_counter()
        while running:
            await asyncio.sleep(0.05)
            now = time.perf_counter(); gaps.append(now - last); last = now
    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0.2)
    out = {'litellm_at_start': 'litellm' in sys.modules}
    started = time.perf_counter()
    model = LiteLLMModel('openai/x', api_base=f'http://127.0.0.1:{server.server_address[1]}/v1', api_key='k', timeout_s=0.5)
    import agent_memory.agents.models.litellm as lm
    lm._start_backend_import().add_done_callback(lambda f: out.setdefault('import_s', time.perf_counter() - started))
    t0 = time.perf_counter()
    try:
        await Agent(model).run('hi')
        out['direct'] = 'answered'
    except ModelTimeoutError:
        out['direct'] = 'timeout'
    out['direct_s'] = time.perf_counter() - t0
    provider = MemoryProvider(root / 'mem', profile=profile(1.0), durable=False)
    await provider.remember('Dana approves deploys.')
    t0 = time.perf_counter()
    cold = await provider.recall('Who approves deploys?')
    out['cold_s'] = time.perf_counter() - t0
    provider.close()
    provider = MemoryProvider(root / 'mem', profile=profile(60.0), durable=False)
    warm = await provider.recall('Who approves deploys?')
    provider.close()
    out.update(warm_fallback=warm.fallback, warm_reason=warm.reason)
    running = False
    await tick
    out.update(max_gap=max(gaps), ticks=len(gaps), litellm_at_end='litellm' in sys.modules,
               env={k: os.environ.get(k) for k in ('TIKTOKEN_CACHE_DIR', 'LITELLM_LOCAL_MODEL_COST_MAP')})
    print(json.dumps(out))

asyncio.run(main())
"""


def test_first_litellm_request_never_blocks_the_event_loop_nor_overshoots_its_timeout(tmp_path: Any) -> None:
    """In a fresh process: a 50 ms ticker sees no gap > 0.5 s while litellm is imported (~4 s, in a thread)."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "LITELLM_LOCAL_MODEL_COST_MAP")}
    done = subprocess.run([sys.executable, "-c", _COLD_START, str(tmp_path)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["litellm_at_start"] is False and out["litellm_at_end"] is True
    # 0.5 s where litellm imports in <= 4 s (the import used to block the loop for all of it); on a machine
    # that is n times slower than that, n times the limit, since litellm holds the GIL in C for a while.
    limit = 0.5 * max(1.0, out["import_s"] / 4.0)
    assert out["max_gap"] < limit, out
    assert out["direct_s"] < 0.5 + limit, out  # timeout_s=0.5 covers the wait for the import
    assert out["cold_s"] < 1.0 + limit, out  # the recall profile's timeout_s=1.0
    assert out["warm_fallback"] is False, out
    assert out["env"] == {"TIKTOKEN_CACHE_DIR": None, "LITELLM_LOCAL_MODEL_COST_MAP": None}, out
