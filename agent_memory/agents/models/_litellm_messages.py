"""pydantic-ai messages and tool definitions rendered in the OpenAI chat format `litellm.acompletion` takes.

Pure data mapping: nothing here imports litellm, so building a request never pays its import cost.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import (
    BinaryContent,
    CachePoint,
    CompactionPart,
    FilePart,
    ImageUrl,
    InstructionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
    RetryPromptPart,
    SpeechPart,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserContent,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition

__all__ = ("ChatMessage", "map_messages", "tools_and_choice")

ChatMessage = dict[str, Any]
"""One OpenAI-style chat message, as `litellm.acompletion(messages=...)` takes it."""

_NEEDS_PREPARE = "`SpeechPart` cannot be sent to `LiteLLMModel` as-is; call `model.prepare_messages()` first."


def map_messages(messages: Sequence[ModelMessage], instructions: Sequence[InstructionPart]) -> list[ChatMessage]:
    """Render pydantic-ai history as OpenAI chat messages, with ``instructions`` as leading system messages."""
    chat: list[ChatMessage] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            chat.extend(_map_request(message))
        elif isinstance(message, ModelResponse):
            if (assistant := _map_response(message)) is not None:
                chat.append(assistant)
        else:  # pragma: no cover
            raise UserError(f"Unexpected message type {type(message).__name__}.")
    if instructions:
        leading = 0
        while leading < len(chat) and chat[leading]["role"] == "system":
            leading += 1
        chat[leading:leading] = [{"role": "system", "content": part.content} for part in instructions]
    return chat


def tools_and_choice(settings: ModelSettings, params: ModelRequestParameters) -> tuple[list[dict[str, Any]], str | dict[str, Any] | None]:
    """The `tools` list and `tool_choice`, honouring the `tool_choice` model setting."""
    tool_defs = params.tool_defs
    if not tool_defs:
        return [], None
    output_names = [t.name for t in params.output_tools]
    function_names = [t.name for t in params.function_tools]

    choice = settings.get("tool_choice")
    names: list[str] | None = None  # None: send every tool
    mode = "auto" if params.allow_text_output else "required"
    if choice in (None, "auto"):
        pass
    elif choice == "none" or choice == []:
        if output_names:
            names = output_names
        else:
            mode = "none"
    elif choice == "required":
        if not function_names:
            raise UserError('`tool_choice="required"` was set, but no function tools are defined.')
        mode = "required"
    elif isinstance(choice, list):
        names = [n for n in choice if n in tool_defs]
        if not names:
            raise UserError(f"No tool in `tool_choice` is defined: {sorted(choice)}.")
        mode = "required"
    else:  # `ToolOrOutput`: the chosen function tools plus every output tool
        chosen = list(getattr(choice, "function_tools", None) or [])
        names = [n for n in chosen if n in function_names] + output_names

    selected = tool_defs if names is None else {n: tool_defs[n] for n in names if n in tool_defs}
    tools = [_tool_param(t) for t in selected.values()]
    if not tools:
        return [], None
    if mode == "required" and len(tools) == 1:
        return tools, {"type": "function", "function": {"name": tools[0]["function"]["name"]}}
    return tools, mode


def _tool_param(tool: ToolDefinition) -> dict[str, Any]:
    function: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description or "",
        "parameters": tool.parameters_json_schema,
    }
    if tool.strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def _map_request(message: ModelRequest) -> Iterator[ChatMessage]:
    tool_files: list[UserContent] = []
    for part in message.parts:
        if isinstance(part, SystemPromptPart):
            yield {"role": "system", "content": part.content}
        elif isinstance(part, UserPromptPart):
            yield _map_user_prompt(part.content)
        elif isinstance(part, ToolReturnPart):
            text, files = part.model_response_str_and_user_content()
            tool_files.extend(files)
            yield {"role": "tool", "tool_call_id": part.tool_call_id, "content": text}
        elif isinstance(part, RetryPromptPart):  # legacy; `prepare_messages` normally translates it
            if part.tool_name is not None:
                yield {"role": "tool", "tool_call_id": part.tool_call_id, "content": part.model_response()}
            else:
                yield {"role": "user", "content": part.model_response()}
        elif isinstance(part, RetryFeedbackPart):
            yield {"role": "user", "content": part.model_response()}
        elif isinstance(part, CompactionPart):
            yield {"role": "user", "content": f"Summary of the earlier conversation:\n{part.content or ''}"}
        elif isinstance(part, SpeechPart):
            raise UserError(_NEEDS_PREPARE)
        else:
            raise UserError(
                f"`{type(part).__name__}` cannot be rendered by `LiteLLMModel`. Call "
                "`model.prepare_messages(messages)` first (`Agent` does this for you)."
            )
    if tool_files:
        yield _map_user_prompt(tool_files)


def _map_response(message: ModelResponse) -> ChatMessage | None:
    """An earlier model response as an assistant message, or None when it has nothing to resend."""
    texts: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            texts.append(part.content)
        elif isinstance(part, ToolCallPart):
            tool_calls.append(
                {
                    "id": part.tool_call_id,
                    "type": "function",
                    "function": {"name": part.tool_name, "arguments": part.args_as_json_str()},
                }
            )
        elif isinstance(part, ThinkingPart | FilePart | CompactionPart | NativeToolCallPart | NativeToolReturnPart):
            # Reasoning, generated files, provider compaction state and native-tool traffic have no
            # place in a Chat Completions assistant message; they're not resent.
            continue
        elif isinstance(part, SpeechPart):
            raise UserError(_NEEDS_PREPARE)
        else:
            raise UserError(f"`{type(part).__name__}` cannot be rendered by `LiteLLMModel`.")
    if not texts and not tool_calls:
        return None
    assistant: ChatMessage = {"role": "assistant", "content": "\n\n".join(texts) if texts else None}
    if tool_calls:
        assistant["tool_calls"] = tool_calls
    return assistant


def _map_user_prompt(content: str | Sequence[UserContent]) -> ChatMessage:
    if isinstance(content, str):
        return {"role": "user", "content": content}
    items: list[dict[str, Any]] = []
    for item in content:
        if isinstance(item, str):
            items.append({"type": "text", "text": item})
        elif isinstance(item, TextContent):
            items.append({"type": "text", "text": item.content})
        elif isinstance(item, ImageUrl):
            items.append({"type": "image_url", "image_url": {"url": item.url}})
        elif isinstance(item, BinaryContent) and item.is_image:
            items.append({"type": "image_url", "image_url": {"url": item.data_uri}})
        elif isinstance(item, CachePoint):
            continue
        else:
            raise UserError(f"`LiteLLMModel` can only send text and images in user prompts, not {type(item).__name__}.")
    if all(i["type"] == "text" for i in items):
        return {"role": "user", "content": "\n".join(i["text"] for i in items)}
    return {"role": "user", "content": items}
