"""Message-history helpers for :mod:`agent_memory.integrations.pydantic_ai` (turn boundaries, recall parts, texts)."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)

from agent_memory.integrations.hooks import RECALL_NOTICE

__all__ = ["keep_recent_turns"]


# -- history helpers ---------------------------------------------------------------------
def keep_recent_turns(turns: int = 8) -> Callable[[list[ModelMessage]], list[ModelMessage]]:
    """A history processor keeping the last ``turns`` user turns (whole turns only).

    A turn starts at a request carrying a user prompt that does not answer a tool call, so a
    tool call is never separated from its return and a recall part never from its prompt.
    """
    if turns < 1:
        raise ValueError("turns must be at least 1")

    def trim(messages: list[ModelMessage]) -> list[ModelMessage]:
        starts = _turn_starts(messages)
        if len(starts) <= turns:
            return messages
        return messages[starts[-turns] :]

    return trim


def _turn_starts(messages: Sequence[ModelMessage]) -> list[int]:
    starts: list[int] = []
    previous: ModelMessage | None = None
    for i, message in enumerate(messages):
        if isinstance(message, ModelRequest) and any(isinstance(p, UserPromptPart) for p in message.parts):
            if previous is None or (isinstance(previous, ModelResponse) and not any(isinstance(p, ToolCallPart) for p in previous.parts)):
                starts.append(i)
        previous = message
    return starts


def _missing(source: Sequence[ModelMessage], target: Sequence[ModelMessage]) -> list[ModelMessage]:
    """Messages of ``source`` absent from ``target`` (by identity, then by value)."""
    ids = {id(m) for m in target}
    out = []
    for message in source:
        if id(message) in ids:
            continue
        if any(message == other for other in target):
            continue
        out.append(message)
    return out


def _is_recall_part(part: Any) -> bool:
    return isinstance(part, UserPromptPart) and isinstance(part.content, str) and part.content.startswith(RECALL_NOTICE)


def _without_recall(messages: Sequence[ModelMessage]) -> list[ModelMessage]:
    out: list[ModelMessage] = []
    for message in messages:
        if isinstance(message, ModelRequest) and any(_is_recall_part(p) for p in message.parts):
            parts = [p for p in message.parts if not _is_recall_part(p)]
            if parts:
                out.append(dataclasses.replace(message, parts=parts))
        else:
            out.append(message)
    return out


def _text_of(messages: Sequence[ModelMessage]) -> str:
    chunks: list[str] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                chunks.append(_prompt_text(part.content))
            elif isinstance(part, TextPart):
                chunks.append(part.content)
            else:
                content = getattr(part, "content", None)
                if isinstance(content, str):
                    chunks.append(content)
    return "\n".join(c for c in chunks if c.strip())


def _prompt_text(prompt: Any) -> str:
    if prompt is None:
        return ""
    if isinstance(prompt, str):
        return prompt
    return "\n".join(item for item in prompt if isinstance(item, str))


def _last_user_text(messages: Sequence[ModelMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in reversed(message.parts):
                if isinstance(part, UserPromptPart):
                    text = _prompt_text(part.content)
                    if text and not _is_recall_part(part):
                        return text
    return ""


def _output_text(output: Any) -> str:
    if output is None or isinstance(output, str):
        return output or ""
    dump = getattr(output, "model_dump_json", None)
    if callable(dump):
        return str(dump())
    return str(output)


def _is_deferred(output: Any) -> bool:
    from pydantic_ai.tools import DeferredToolRequests

    return isinstance(output, DeferredToolRequests)


def _takes_ctx(fn: Callable[..., Any]) -> bool:
    try:
        params = [p for p in inspect.signature(fn).parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return False
    return len(params) >= 2
