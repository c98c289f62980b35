"""The capture worker: store durable facts from a finished turn or from messages about to be compacted.

By default a pydantic-ai ``Agent`` with the CAPTURE memory tools (search/get/list/remember; never
forget, never file tools) reads the transcript, searches what exists, remembers only new durable
facts and replies ``NO_REPLY``. Its ``memory_remember`` calls are staged and written in one batch
when the run ends well, so a run that fails (model error, timeout, step limit) writes nothing.
Writes go through the store, which verifies each one (redaction, duplicates, ``memory_key``
policy) and tags it ``source="turn_capture"`` or ``"compaction_capture"``; a draft the store
rejects is reported in ``rejected`` and does not stop the others. If the provider has an extractor
function for the hook, it runs instead of the agent and its drafts are written the same way.
Capture never raises: failures come back as ``fallback=True`` with a reason.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Union

from pydantic_ai import ModelRetry
from pydantic_ai.usage import RunUsage

from ..errors import AgentMemoryError
from ..models.offline import extract_statements
from ..records import check_content, validate_key
from ..store import MemoryDraft
from . import RecordingToolset, ToolCallRecord, bound_toolset, describe_error, run_worker, usage_dict

if TYPE_CHECKING:  # pragma: no cover
    from ..provider import MemoryProvider

__all__ = ["CaptureResult", "CaptureContext", "Extractor", "capture_turn", "capture_before_compaction",
           "render_messages", "rule_extractor"]

DraftLike = Union[MemoryDraft, Mapping[str, Any], str]
Drafts = Union[DraftLike, Iterable[DraftLike], None]
MAX_TRANSCRIPT_CHARS = 60_000
_CHANGED = ("created", "appended", "replaced")


@dataclass(frozen=True)
class CaptureContext:
    """What an extractor sees: the hook, the rendered transcript, the raw inputs and the caller."""

    kind: Literal["turn", "compaction"]
    transcript: str
    input: str | None = None
    output: str | None = None
    removed_messages: Sequence[Any] = ()
    next_summary: str | None = None
    session_id: str | None = None
    user_id: str | None = None


Extractor = Callable[[CaptureContext], Drafts | Awaitable[Drafts]]
"""A plain function (sync or async) turning a :class:`CaptureContext` into memory drafts.

It may return ``None``, one :class:`MemoryDraft`, a dict with MemoryDraft fields, a string (the
content), or an iterable of those.
"""


@dataclass
class CaptureResult:
    """What capture wrote (``{id, status}`` per stored draft, in order), what the store rejected, and how it went."""

    written: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=lambda: usage_dict(None))
    fallback: bool = False
    reason: str | None = None
    elapsed_s: float = 0.0
    model: str | None = None

    @property
    def ids(self) -> list[str]:
        """Ids of records this capture changed (created, appended or replaced), without repeats."""
        return list(dict.fromkeys(w["id"] for w in self.written if w.get("status") in _CHANGED))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``written, ids, rejected, usage, fallback, reason, elapsed_s, model``."""
        data = asdict(self)
        data["ids"] = self.ids
        return data


# -- rendering ------------------------------------------------------------------------------------
def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        for key in ("text", "content", "value"):
            if isinstance(content.get(key), str):
                return content[key]
        return json.dumps(content, default=str, ensure_ascii=False)[:500]
    if isinstance(content, (list, tuple)):
        return "\n".join(t for t in (_text_of(c) for c in content) if t)
    inner = getattr(content, "content", None)
    if isinstance(inner, str):
        return inner
    return str(content)


_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant", "model": "assistant",
          "bot": "assistant", "tool": "tool", "function": "tool", "system": None, "developer": None}
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
        for part in message.parts:
            if isinstance(part, TextPart) and part.content.strip():
                lines.append(f"assistant: {part.content}")
            elif isinstance(part, ToolCallPart):
                lines.append(f"assistant: [called {part.tool_name} {part.args_as_json_str()[:300]}]")
        return lines
    if isinstance(message, Mapping):
        speaker = str(message.get("role") or message.get("speaker") or message.get("author") or "message")
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


def capture_prompt(ctx: CaptureContext) -> str:
    """The capture worker's user prompt: the transcript between ``<transcript>`` tags (plus the summary)."""
    what = "this conversation turn" if ctx.kind == "turn" else "these messages, which are about to be compacted away"
    prompt = f"Capture durable memories from {what}.\n<transcript>\n{ctx.transcript}\n</transcript>"
    if ctx.next_summary:
        prompt += f"\nThe summary that will replace them (context only; it is kept anyway):\n<summary>\n{ctx.next_summary}\n</summary>"
    return prompt + "\nReply NO_REPLY when done."


# -- extractors -----------------------------------------------------------------------------------
def rule_extractor(ctx: CaptureContext) -> list[MemoryDraft]:
    """A deterministic extractor (no LLM, no agent): the offline model's statement rules as drafts."""
    return [MemoryDraft(st.content, kind=st.kind, tags=st.tags, memory_key=st.memory_key,
                        on_existing=st.on_existing)  # type: ignore[arg-type]
            for st in extract_statements(ctx.transcript)]


def _drafts(value: Any, ctx: CaptureContext) -> list[MemoryDraft]:
    if value is None:
        return []
    if isinstance(value, (MemoryDraft, Mapping, str)):
        value = [value]
    drafts = []
    for item in value:
        draft = (item if isinstance(item, MemoryDraft) else MemoryDraft(item) if isinstance(item, str)
                 else MemoryDraft.from_dict(item))
        drafts.append(dataclasses.replace(draft, session_id=draft.session_id or ctx.session_id,
                                          user_id=draft.user_id or ctx.user_id))
    return drafts


async def _commit(provider: "MemoryProvider", drafts: list[MemoryDraft], source: str,
                  result: CaptureResult) -> CaptureResult:
    """Write the drafts in one batch; each one the store rejects is listed in ``result.rejected``."""
    if drafts:
        errors: list[tuple[int, str]] = []
        done = await provider.remember_many(drafts, source=source, on_error="skip", errors=errors)
        result.written = [{"id": r.id, "status": r.status} for r in done]
        result.rejected = [{"index": i, "error": e} for i, e in errors]
    return result


class StagingToolset(RecordingToolset):
    """Stages ``memory_remember`` calls instead of running them; the worker commits them if the run succeeds."""

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
        if name != "memory_remember":
            return await super().call_tool(name, tool_args, ctx, tool)
        record = ToolCallRecord(name, dict(tool_args))
        try:
            check_content(tool_args.get("content"))
            if tool_args.get("memory_key") is not None:
                validate_key(tool_args["memory_key"])
        except AgentMemoryError as exc:
            raise ModelRetry(f"{type(exc).__name__}: {exc}") from None
        self.calls.append(record)
        record.result = {"status": "accepted", "note": "stored (verified and deduplicated) when capture finishes"}
        return record.result

    def drafts(self, ctx: CaptureContext) -> list[MemoryDraft]:
        fields = ("content", "title", "kind", "scope", "tags", "memory_key", "on_existing")
        out = []
        for c in self.calls:
            if c.name == "memory_remember" and c.result is not None:
                args = {k: v for k, v in c.args.items() if k in fields and v is not None}
                if "scope" not in args and ctx.user_id and is_personal(args):
                    args["scope"] = "user"  # a person's facts follow the person, not the project
                out.append(MemoryDraft(**args, session_id=ctx.session_id, user_id=ctx.user_id))
        return out


def is_personal(args: dict[str, Any]) -> bool:
    """Preferences, ``user.*`` keyed facts and statements about "the user" default to user scope."""
    content = str(args.get("content") or "").lower()
    return (args.get("kind") == "preference" or str(args.get("memory_key") or "").startswith("user.")
            or content.startswith(("user ", "user's ", "the user ", "the user's ")))


async def _run_extractor(provider: "MemoryProvider", extractor: Extractor, ctx: CaptureContext, source: str,
                         started: float) -> CaptureResult:
    result = CaptureResult(model=f"extractor:{getattr(extractor, '__name__', type(extractor).__name__)}")
    try:
        value = extractor(ctx)
        if inspect.isawaitable(value):
            value = await value
        await _commit(provider, _drafts(value, ctx), source, result)
    except Exception as exc:
        result.written, result.fallback, result.reason = [], True, describe_error(exc)
    result.elapsed_s = time.perf_counter() - started
    return result


# -- the worker -------------------------------------------------------------------------------------
async def _capture(provider: "MemoryProvider", ctx: CaptureContext, extractor: Extractor | None, source: str) -> CaptureResult:
    started = time.perf_counter()
    if extractor is not None:
        return await _run_extractor(provider, extractor, ctx, source, started)
    usage = RunUsage()
    result = CaptureResult()
    timeout_s: float | None = None
    try:
        worker = provider.profile.capture
        result.model, timeout_s = worker.model_label, worker.timeout_s
        if ctx.transcript.strip():
            toolset = bound_toolset(provider, worker.tools, session_id=ctx.session_id, user_id=ctx.user_id,
                                    source=source, wrapper=StagingToolset)
            await run_worker(worker, capture_prompt(ctx), toolset, usage, name=f"agent_memory_{source}")
            await _commit(provider, toolset.drafts(ctx), source, result)
    except Exception as exc:  # fail open: nothing staged is written, never raise
        result.written, result.fallback, result.reason = [], True, describe_error(exc, timeout_s)
    result.usage, result.elapsed_s = usage_dict(usage), time.perf_counter() - started
    return result


async def capture_turn(provider: "MemoryProvider", input: str, output: str | None = None, *,
                       session_id: str | None = None, user_id: str | None = None) -> CaptureResult:
    """Capture durable facts from one turn (the user's ``input`` and the assistant's ``output``). Never raises."""
    messages = [{"role": "user", "content": input}] + ([{"role": "assistant", "content": output}] if output else [])
    ctx = CaptureContext("turn", render_messages(messages), input=input, output=output,
                         session_id=session_id, user_id=user_id)
    return await _capture(provider, ctx, getattr(provider, "turn_extractor", None), "turn_capture")


async def capture_before_compaction(provider: "MemoryProvider", removed_messages: Sequence[Any],
                                    next_summary: str | None = None, *, session_id: str | None = None,
                                    user_id: str | None = None) -> CaptureResult:
    """Last-chance capture from ``removed_messages`` before a compaction commits. Never raises."""
    removed = list(removed_messages or ())
    ctx = CaptureContext("compaction", render_messages(removed), removed_messages=removed,
                         next_summary=next_summary if isinstance(next_summary, str) else None,
                         session_id=session_id, user_id=user_id)
    return await _capture(provider, ctx, getattr(provider, "compaction_extractor", None), "compaction_capture")
