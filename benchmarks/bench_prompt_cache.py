"""Prompt-cache friendliness: the cacheable share of each request in a 10-turn conversation.

Provider prompt caches (Anthropic, OpenAI, Gemini, DeepSeek, ...) reuse the longest prefix a new
request shares with an earlier one, in the order tools → system prompt → messages. For each
model request of a scripted 10-turn conversation with tool calls, this prints the share of the
request's bytes that repeat the previous request's prefix, for two wirings of the same memory:

* ``capability``: :class:`MemoryCapability` (core block frozen in the instructions; the
  recall summary as a user-role part of the turn's first request, kept in history);
* ``naive``: the instructions rewritten every turn with a fresh core block and the turn's recall.

    .venv/bin/python benchmarks/bench_prompt_cache.py [--json]

Requests are rendered as a provider would receive them (tool schemas, then the instructions,
then role/content messages; no timestamps), one segment per line. Offline: scripted main model,
offline memory workers; deterministic apart from record ids.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import itertools
import json
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic_ai import Agent, RunContext  # noqa: E402
from pydantic_ai.capabilities import AbstractCapability  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

from agent_memory.agents.fence import fence  # noqa: E402
from agent_memory.integrations.hooks import CORE_NOTICE, RECALL_NOTICE  # noqa: E402
from agent_memory.integrations.pydantic_ai import MemoryCapability  # noqa: E402
from agent_memory.provider import MemoryProvider  # noqa: E402

INSTRUCTIONS = "You are a travel assistant for a small engineering team. Be brief and concrete."
SEED = [
    ("Ada prefers window seats on trains and aisle seats on planes.", "user"),
    ("The team offsite is in Porto from 10 to 12 June.", "project"),
    ("Travel budget: up to 180 EUR per night for hotels.", "project"),
    ("Ada's employee number is 8812 for expense reports.", "user"),
]
TURNS = [  # (user message, tool calls the scripted model makes before answering)
    ("Hi, I'm planning travel for the offsite.", 0),
    ("Where and when is the offsite again?", 1),
    ("Book me a train seat to Porto; you know what I like.", 2),
    ("Please remember that I am vegetarian.", 0),
    ("Which hotels near the venue fit the budget?", 2),
    ("Remember that my return flight is on 13 June.", 0),
    ("Find a restaurant for the team dinner on 11 June.", 1),
    ("What is my employee number for the expense report?", 0),
    ("Summarise my travel preferences.", 1),
    ("Thanks, that is all for the offsite.", 0),
]
SESSION, USER = "offsite-chat", "ada"


# -- the scripted main model: records what each request would put on the wire -------------------------
@dataclass
class Recorder:
    requests: list[str] = field(default_factory=list)
    instructions: list[str] = field(default_factory=list)

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append(render_request(info, messages))
        self.instructions.append(info.instructions or "")
        prompt, calls = current_turn(messages)
        wanted = dict(TURNS).get(prompt, 0)
        if calls < wanted:
            return ModelResponse(parts=[ToolCallPart("search_travel", {"query": prompt, "page": calls + 1})])
        return ModelResponse(parts=[TextPart(f"Here is what I found for: {prompt}")])


def current_turn(messages: list[ModelMessage]) -> tuple[str, int]:
    calls = 0
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            calls += sum(isinstance(p, ToolReturnPart) for p in message.parts)
            for part in message.parts:
                if isinstance(part, UserPromptPart) and not str(part.content).startswith(RECALL_NOTICE):
                    return str(part.content), calls
    return "", calls


def render_request(info: AgentInfo, messages: list[ModelMessage]) -> str:
    """One line per segment, in provider order: tools, system, then messages (no timestamps)."""
    lines = [
        json.dumps(
            {"tools": [{"name": t.name, "description": t.description, "parameters": t.parameters_json_schema} for t in info.function_tools]}
        )
    ]
    lines.append(json.dumps({"role": "system", "content": info.instructions or ""}))
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart):
                    lines.append(json.dumps({"role": "user", "content": part.content}))
                elif isinstance(part, ToolReturnPart):
                    lines.append(json.dumps({"role": "tool", "id": part.tool_call_id, "content": part.model_response_str()}))
        elif isinstance(message, ModelResponse):
            lines.append(
                json.dumps(
                    {
                        "role": "assistant",
                        "content": "".join(p.content for p in message.parts if isinstance(p, TextPart)),
                        "tool_calls": [
                            {"id": p.tool_call_id, "name": p.tool_name, "arguments": p.args_as_json_str()}
                            for p in message.parts
                            if isinstance(p, ToolCallPart)
                        ],
                    }
                )
            )
    return "\n".join(lines) + "\n"


def search_travel(query: str, page: int = 1) -> str:
    """Search trains, hotels and restaurants.

    Args:
        query: What to look for.
        page: Result page.
    """
    return f"page {page}: 3 results for {query!r} (Porto, June)"


# -- the naive wiring: instructions rewritten every turn --------------------------------------------
class NaiveMemory(AbstractCapability[Any]):
    """The wiring to avoid: a fresh core block and the turn's recall in the instructions, every turn."""

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __init__(self, provider: MemoryProvider) -> None:
        self.provider = provider
        self._text: str | None = None

    async def for_run(self, ctx: RunContext[Any]) -> "NaiveMemory":
        clone = copy.copy(self)
        clone._text = None
        return clone

    def get_instructions(self) -> Any:
        async def memory(ctx: RunContext[Any]) -> str:
            if self._text is None:
                core = await self.provider.inject(1500, session_id=SESSION, user_id=USER)
                recall = await self.provider.recall(str(ctx.prompt), session_id=SESSION, user_id=USER)
                parts = [fence(core.text, notice=CORE_NOTICE)] if core.text.strip() else []
                if recall.summary.strip():
                    parts.append(fence(recall.summary, notice=RECALL_NOTICE))
                self._text = "\n\n".join(parts)
            return self._text

        return memory

    async def after_run(self, ctx: RunContext[Any], *, result: Any) -> Any:
        self.provider.capture_turn_in_background(str(ctx.prompt), str(result.output), session_id=SESSION, user_id=USER)
        return result


# -- measurement ----------------------------------------------------------------------------------------
def common_prefix(a: str, b: str) -> int:
    a_bytes, b_bytes = a.encode(), b.encode()
    n = min(len(a_bytes), len(b_bytes))
    i = 0
    while i < n and a_bytes[i] == b_bytes[i]:
        i += 1
    return i


def shares(requests: list[str]) -> list[float]:
    """Per request: bytes repeating the previous request's prefix / request bytes (0 for the first)."""
    out = [0.0]
    for previous, current in itertools.pairwise(requests):
        out.append(common_prefix(previous, current) / len(current.encode()))
    return out


async def run_conversation(wiring: str, root: Path) -> Recorder:
    provider = MemoryProvider(root)
    for content, scope in SEED:
        await provider.remember(content, scope=scope, user_id=USER if scope == "user" else None)
    recorder = Recorder()
    capability: AbstractCapability[Any] = (
        MemoryCapability(provider, session_id=SESSION, user_id=USER) if wiring == "capability" else NaiveMemory(provider)
    )
    agent = Agent(FunctionModel(recorder), instructions=INSTRUCTIONS, capabilities=[capability], tools=[search_travel])
    history: list[ModelMessage] | None = None
    for prompt, _ in TURNS:
        result = await agent.run(prompt, message_history=history)
        history = result.all_messages()
        await provider.flush()
    provider.close()
    return recorder


async def measure() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-prompt-cache-") as tmp:
        ours = await run_conversation("capability", Path(tmp) / "capability")
        naive = await run_conversation("naive", Path(tmp) / "naive")
    assert len(ours.requests) == len(naive.requests)
    ours_s, naive_s = shares(ours.requests), shares(naive.requests)
    rows = []
    index = 0
    for turn, (_, tools) in enumerate(TURNS, 1):
        for step in range(tools + 1):
            rows.append(
                {
                    "request": index + 1,
                    "turn": turn,
                    "step": step + 1,
                    "capability_bytes": len(ours.requests[index].encode()),
                    "capability_share": round(ours_s[index], 4),
                    "naive_bytes": len(naive.requests[index].encode()),
                    "naive_share": round(naive_s[index], 4),
                }
            )
            index += 1

    def summary(requests: list[str], per_request: list[float]) -> dict[str, float]:
        later = per_request[1:]
        cached = sum(common_prefix(a, b) for a, b in itertools.pairwise(requests))
        total = sum(len(r.encode()) for r in requests[1:])
        first_of_turn = [per_request[r["request"] - 1] for r in rows if r["step"] == 1 and r["turn"] > 1]
        return {
            "mean_share": round(statistics.mean(later), 4),
            "mean_share_first_request_of_turn": round(statistics.mean(first_of_turn), 4),
            "byte_weighted_share": round(cached / total, 4),
            "total_bytes": sum(len(r.encode()) for r in requests),
            "uncached_bytes": sum(len(r.encode()) for r in requests) - cached,
        }

    ours_sum, naive_sum = summary(ours.requests, ours_s), summary(naive.requests, naive_s)
    return {
        "requests": len(rows),
        "rows": rows,
        "capability": {**ours_sum, "distinct_instructions": len(set(ours.instructions))},
        "naive": {**naive_sum, "distinct_instructions": len(set(naive.instructions))},
        "ratio_mean_share": round(ours_sum["mean_share"] / naive_sum["mean_share"], 2) if naive_sum["mean_share"] else None,
        "uncached_ratio": round(naive_sum["uncached_bytes"] / ours_sum["uncached_bytes"], 2),
        "ratio_byte_weighted": round(ours_sum["byte_weighted_share"] / naive_sum["byte_weighted_share"], 2)
        if naive_sum["byte_weighted_share"]
        else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    args = parser.parse_args(argv)
    report = asyncio.run(measure())
    if args.json:
        print(json.dumps(report))
        return 0
    print("Cacheable share per request: bytes repeating the previous request's prefix / request bytes")
    print(f"10-turn conversation, {report['requests']} model requests (tool calls included)\n")
    print(f"{'req':>3} {'turn':>4} {'step':>4} | {'capability':>10} {'bytes':>7} | {'naive':>7} {'bytes':>7}")
    print("-" * 56)
    for r in report["rows"]:
        print(
            f"{r['request']:>3} {r['turn']:>4} {r['step']:>4} | {r['capability_share']:>10.1%} {r['capability_bytes']:>7} | "
            f"{r['naive_share']:>7.1%} {r['naive_bytes']:>7}"
        )
    print("-" * 56)
    c, n = report["capability"], report["naive"]
    print(f"{'':<40} {'capability':>10} {'naive':>10}")
    print(f"{'mean share (requests 2..N)':<40} {c['mean_share']:>10.1%} {n['mean_share']:>10.1%}")
    print(
        f"{'mean share, first request of a turn':<40} {c['mean_share_first_request_of_turn']:>10.1%} "
        f"{n['mean_share_first_request_of_turn']:>10.1%}"
    )
    print(f"{'byte-weighted share':<40} {c['byte_weighted_share']:>10.1%} {n['byte_weighted_share']:>10.1%}")
    print(f"{'bytes sent, all requests':<40} {c['total_bytes']:>10} {n['total_bytes']:>10}")
    print(f"{'bytes not in the previous prefix':<40} {c['uncached_bytes']:>10} {n['uncached_bytes']:>10}")
    print(f"{'distinct instructions':<40} {c['distinct_instructions']:>10} {n['distinct_instructions']:>10}")
    print(
        f"\nratio (capability / naive): mean share {report['ratio_mean_share']}x, "
        f"byte-weighted {report['ratio_byte_weighted']}x; "
        f"{report['uncached_ratio']}x fewer bytes outside the cacheable prefix"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
