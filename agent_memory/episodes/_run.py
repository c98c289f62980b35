"""The facts of one pydantic-ai run, read from its messages: tool calls in order with their outcomes,
output retries, the model's name and, when the prices are known, the cost."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart

from agent_memory.episodes._model import ToolCall

__all__ = ["RunFacts", "run_facts"]

_OUTPUT_TOOL_PREFIX = "final_result"


@dataclass
class RunFacts:
    """What :func:`run_facts` found in a run's messages."""

    tool_calls: list[ToolCall] = field(default_factory=list)
    retried_output: list[str] = field(default_factory=list)
    model: str | None = None
    cost_usd: float | None = None


def _detail(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # validation errors: [{"loc": …, "msg": …}, …]
        msgs = [str(e.get("msg", "")) for e in content if isinstance(e, dict)]
        return "; ".join(m for m in msgs if m) or "invalid arguments"
    try:
        return json.dumps(content, default=str)[:400]
    except (TypeError, ValueError):
        return str(content)[:400]


def run_facts(messages: Sequence[ModelMessage], run_id: str | None = None, errors: Mapping[str, str] | None = None) -> RunFacts:
    """Tool calls (in call order, each with its outcome), output retries, model and cost of the run ``run_id``.

    Only messages of that run are read when they carry run ids (a conversation's history holds
    earlier runs too). ``errors`` maps a tool call id to the exception that ended it (a call whose
    exception ended the run has no result message). Cost is the sum of each response's price when
    every response has one.
    """
    mine = [m for m in messages if run_id is None or getattr(m, "run_id", None) in (run_id, None)]
    if run_id is not None and any(getattr(m, "run_id", None) == run_id for m in messages):
        mine = [m for m in messages if getattr(m, "run_id", None) == run_id]
    facts = RunFacts()
    order: list[ToolCallPart] = []
    outcomes: dict[str, tuple[str, str]] = {}
    costs: list[float] = []
    priced = True
    for message in mine:
        if isinstance(message, ModelResponse):
            facts.model = message.model_name or facts.model
            order += [p for p in message.parts if isinstance(p, ToolCallPart) and not p.tool_name.startswith(_OUTPUT_TOOL_PREFIX)]
            try:
                costs.append(float(message.cost().total_price))
            except Exception:  # unknown model or provider, no usage: the cost is not known
                priced = False
        elif isinstance(message, ModelRequest):
            for part in message.parts:
                content: Any = getattr(part, "content", "")
                kind = getattr(part, "part_kind", "")
                call_id = getattr(part, "tool_call_id", None)
                if kind == "tool-return" and call_id:
                    outcome = getattr(part, "outcome", "success") or "success"
                    outcomes[call_id] = (outcome, "" if outcome == "success" else _detail(content))
                elif kind == "retry-prompt":
                    if getattr(part, "tool_name", None) and call_id:
                        outcomes[call_id] = ("retried", _detail(content))
                    else:
                        facts.retried_output.append(_detail(content))
                elif kind == "retry-feedback":
                    facts.retried_output.append(_detail(content))
    for call in order:
        fallback = ("failed", errors[call.tool_call_id]) if errors and call.tool_call_id in errors else ("interrupted", "no result")
        outcome, detail = outcomes.get(call.tool_call_id, fallback)
        facts.tool_calls.append(ToolCall(call.tool_name, outcome, detail))
    if priced and costs:
        facts.cost_usd = sum(costs)
    return facts
