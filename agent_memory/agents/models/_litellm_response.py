"""A litellm chat completion turned into a pydantic-ai `ModelResponse`, with usage and cost."""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.messages import FinishReason, ModelResponse, ModelResponsePart, TextPart, ThinkingPart, ToolCallPart
from pydantic_ai.usage import RequestUsage

from agent_memory.agents.models._litellm_runtime import litellm

PROVIDER = "litellm"

_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "length": "length",
    "max_tokens": "length",
    "tool_calls": "tool_call",
    "function_call": "tool_call",
    "tool_use": "tool_call",
    "content_filter": "content_filter",
    "error": "error",
}
"""litellm (OpenAI-normalized, plus a few raw provider) finish reasons -> pydantic-ai's."""


def process_response(response: Any, model_name: str, api_base: str | None) -> ModelResponse:
    """Parse one non-streamed litellm response; a body without a message is `UnexpectedModelBehavior`."""
    choices = getattr(response, "choices", None)
    if not choices:
        raise UnexpectedModelBehavior(f"{model_name}: the server answered, but not with a chat completion (no choices)")
    choice = choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        raise UnexpectedModelBehavior(f"litellm returned a choice without a message for {model_name!r}")

    parts: list[ModelResponsePart] = []
    reasoning = getattr(message, "reasoning_content", None)
    if isinstance(reasoning, str) and reasoning:
        parts.append(ThinkingPart(content=reasoning, provider_name=PROVIDER))
    content = getattr(message, "content", None)
    if isinstance(content, str) and content:
        parts.append(TextPart(content=content))
    for call in getattr(message, "tool_calls", None) or []:
        function = getattr(call, "function", None)
        name = getattr(function, "name", None)
        if not name:
            raise UnexpectedModelBehavior(f"litellm returned a tool call without a name: {call!r}")
        arguments = getattr(function, "arguments", None)
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments or {})
        call_id = getattr(call, "id", None)
        parts.append(ToolCallPart(name, arguments, **({"tool_call_id": call_id} if call_id else {})))

    raw_finish = getattr(choice, "finish_reason", None)
    cost = _response_cost(response)
    details: dict[str, Any] = {}
    if cost is not None:
        details["cost_usd"] = cost
    if raw_finish:
        details["finish_reason"] = raw_finish
    if provider_model := getattr(response, "model", None):
        details["model"] = provider_model
    hidden = getattr(response, "_hidden_params", None) or {}
    if llm_provider := hidden.get("custom_llm_provider"):
        details["litellm_provider"] = llm_provider

    return ModelResponse(
        parts=parts,
        usage=_map_usage(response, cost),
        model_name=model_name,
        provider_name=PROVIDER,
        provider_url=api_base,
        provider_response_id=getattr(response, "id", None) or None,
        provider_details=details or None,
        finish_reason=_FINISH_REASONS.get(raw_finish) if isinstance(raw_finish, str) else None,
    )


def _response_cost(response: Any) -> float | None:
    """The USD cost litellm attached to the response, or computed from its local price map."""
    hidden = getattr(response, "_hidden_params", None) or {}
    cost = hidden.get("response_cost") if isinstance(hidden, Mapping) else None
    if cost is None:
        try:
            cost = litellm.completion_cost(completion_response=response)
        except Exception:  # unpriced model: litellm raises
            return None
    try:
        value = float(cost)
    except (TypeError, ValueError):
        return None
    return value if value > 0 else None


def _map_usage(response: Any, cost: float | None) -> RequestUsage:
    raw = getattr(response, "usage", None)
    if raw is None:
        return RequestUsage(unmeasured_requests=1)
    usage = RequestUsage(
        input_tokens=_int(getattr(raw, "prompt_tokens", 0)),
        output_tokens=_int(getattr(raw, "completion_tokens", 0)),
    )
    usage.cache_read_tokens = _int(getattr(getattr(raw, "prompt_tokens_details", None), "cached_tokens", 0))
    usage.output_reasoning_tokens = _int(getattr(getattr(raw, "completion_tokens_details", None), "reasoning_tokens", 0))
    if cost is not None:
        try:
            usage.cost = Decimal(str(cost))
        except InvalidOperation:  # pragma: no cover
            pass
    return usage


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
