"""Transcripts for capture: messages of any runtime rendered as ``role: text`` lines, and their first timestamp."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

MAX_TRANSCRIPT_CHARS = 60_000


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        for key in ("text", "content", "value"):
            value = content.get(key)
            if isinstance(value, str):
                return value
        return json.dumps(content, default=str, ensure_ascii=False)[:500]
    if isinstance(content, (list, tuple)):
        return "\n".join(t for t in (_text_of(c) for c in content) if t)
    inner = getattr(content, "content", None)
    if isinstance(inner, str):
        return inner
    return str(content)


_ROLES = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "model": "assistant",
    "bot": "assistant",
    "tool": "tool",
    "function": "tool",
    "system": None,
    "developer": None,
}
_KNOWN_PREFIX = ("user:", "assistant:", "tool:", "message:", "summary:")


def _render_one(message: Any) -> list[str]:
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart

    if isinstance(message, str):
        return [message if message.lower().startswith(_KNOWN_PREFIX) else f"message: {message}"]
    if isinstance(message, ModelRequest):
        lines = []
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                lines.append(f"user: {_text_of(part.content)}")
            elif isinstance(part, ToolReturnPart):
                lines.append(f"tool: {part.tool_name} -> {_text_of(part.content)[:500]}")
        return lines
    if isinstance(message, ModelResponse):
        lines = []
        for out in message.parts:
            if isinstance(out, TextPart) and out.content.strip():
                lines.append(f"assistant: {out.content}")
            elif isinstance(out, ToolCallPart):
                lines.append(f"assistant: [called {out.tool_name} {out.args_as_json_str()[:300]}]")
        return lines
    if isinstance(message, Mapping):
        # one line: a speaker holding a line break would forge transcript lines of its own
        speaker = " ".join(str(message.get("role") or message.get("speaker") or message.get("author") or "message").split()) or "message"
        text = _text_of(message.get("content", message.get("text")))
        role = _ROLES.get(speaker.lower(), speaker)
        return [f"{role}: {text}"] if text and role else []
    return [f"message: {_text_of(message)}"]


def render_messages(messages: Iterable[Any]) -> str:
    """Messages as ``role: text`` lines: pydantic-ai ``ModelMessage`` objects, ``{"role", "content"}`` dicts or strings.

    Roles are ``user``, ``assistant``, ``tool``, a named speaker (``{"speaker": "Bob"}``) or ``message``
    (a plain string or object whose author is unknown). System prompts are left out; tool calls and
    results are abbreviated; anything else is rendered with ``str``. Never raises for odd input.
    """
    lines: list[str] = []
    for message in messages or ():
        try:
            lines.extend(line for line in _render_one(message) if line.strip())
        except Exception:  # a message we cannot read must not sink the capture
            lines.append(str(message)[:500])
    text = "\n".join(lines)
    return text[-MAX_TRANSCRIPT_CHARS:] if len(text) > MAX_TRANSCRIPT_CHARS else text


def _first_timestamp(messages: Sequence[Any]) -> dt.datetime | None:
    """The time stamped on the first of ``messages`` that has one (pydantic-ai messages carry ``timestamp``)."""
    for message in messages:
        for item in (message, *(getattr(message, "parts", None) or ())):
            when = getattr(item, "timestamp", None)
            if isinstance(when, dt.datetime):
                return when
    return None
