"""The provider's private worker agents and what they share.

:mod:`.recall` answers "what does memory know about this message?" with a cited summary;
:mod:`.capture` stores durable facts from a turn or from messages about to be compacted.
Both run a pydantic-ai ``Agent`` whose only tools are memory tools bound to the caller, under
the profile's step and time limits, and both fail open: they never raise into the caller.
"""

from __future__ import annotations

import asyncio
import importlib
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic_ai import Agent, ModelRetry
from pydantic_ai.exceptions import ModelAPIError, UnexpectedModelBehavior, UsageLimitExceeded
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset
from pydantic_ai.usage import RunUsage, UsageLimits

from ..errors import ProfileError
from ..tokens import count_tokens
from ..tools import memory_toolset

if TYPE_CHECKING:  # pragma: no cover
    from pydantic_ai.models import Model

    from ..profiles import WorkerProfile
    from ..provider import MemoryProvider
    from .capture import CaptureContext, CaptureResult, capture_before_compaction, capture_turn, rule_extractor
    from .recall import RecallResult, lexical_summary, run_recall

__all__ = [
    "RecallResult", "run_recall", "lexical_summary", "CaptureResult", "CaptureContext", "capture_turn",
    "capture_before_compaction", "rule_extractor", "trim_to_tokens", "usage_dict",
]
_LAZY = {"RecallResult": "recall", "run_recall": "recall", "lexical_summary": "recall", "CaptureResult": "capture",
         "CaptureContext": "capture", "capture_turn": "capture", "capture_before_compaction": "capture",
         "rule_extractor": "capture"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


# -- usage and errors -------------------------------------------------------------------------
def usage_dict(usage: RunUsage | None) -> dict[str, Any]:
    """``{requests, tool_calls, input_tokens, output_tokens, cost_usd}`` (cost None unless the model reported one)."""
    if usage is None:
        return {"requests": 0, "tool_calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": None}
    cost = getattr(usage, "cost", None)
    return {"requests": usage.requests, "tool_calls": usage.tool_calls, "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens, "cost_usd": float(cost) if cost is not None else None}


class UnusableOutput(Exception):
    """The worker model finished but its output cannot be used."""


def describe_error(exc: BaseException, timeout_s: float | None = None) -> str:
    """A one-line reason for a worker failure, for ``RecallResult.reason``/``CaptureResult.reason``."""
    if isinstance(exc, TimeoutError):
        return f"timeout after {timeout_s:g}s" if timeout_s else "timeout"
    prefix = ("step limit" if isinstance(exc, UsageLimitExceeded) else
              "unusable output" if isinstance(exc, (UnusableOutput, UnexpectedModelBehavior)) else
              "model error" if isinstance(exc, ModelAPIError) else
              "profile error" if isinstance(exc, ProfileError) else "error")
    text = " ".join(str(exc).split()) or type(exc).__name__
    if prefix in ("model error", "error"):
        text = f"{type(exc).__name__}: {text}"
    return f"{prefix}: {text[:300]}"


# -- running a worker ---------------------------------------------------------------------------
@dataclass
class ToolCallRecord:
    """One tool call a worker made: its arguments and result, or the error the model was sent."""

    name: str
    args: dict[str, Any]
    result: Any = None
    error: str | None = None


@dataclass
class RecordingToolset(WrapperToolset[Any]):
    """Passes calls through to the wrapped toolset and records each one (writes are known even if the run fails)."""

    calls: list[ToolCallRecord] = field(default_factory=list)

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
        record = ToolCallRecord(name, dict(tool_args))
        self.calls.append(record)
        try:
            record.result = await super().call_tool(name, tool_args, ctx, tool)
        except ModelRetry as exc:
            record.error = str(exc)
            raise
        return record.result


_MODELS: dict[tuple[Any, ...], "Model"] = {}
TOOLSET_CACHE_SIZE = 256
_CACHE_ATTR = "_agent_memory_worker_toolsets"


W = TypeVar("W", bound=RecordingToolset)


def bound_toolset(provider: "MemoryProvider", tools: tuple[str, ...], *, session_id: str | None, user_id: str | None,
                  source: str = "tool", wrapper: type[W] = RecordingToolset) -> W:  # type: ignore[assignment]
    """A fresh ``wrapper`` around the memory toolset for this caller.

    Building a toolset costs milliseconds (tool schemas), so the last few per provider are kept on the
    provider itself (an LRU keyed by tools and caller identity); they go away with it.
    """
    cache: OrderedDict[tuple[Any, ...], AbstractToolset[Any]] | None = getattr(provider, _CACHE_ATTR, None)
    if cache is None:
        cache = OrderedDict()
        try:
            setattr(provider, _CACHE_ATTR, cache)
        except AttributeError:  # pragma: no cover - a provider without __dict__: no caching
            pass
    key = (tuple(tools), session_id, user_id, source)
    toolset = cache.get(key)
    if toolset is None:
        toolset = cache[key] = memory_toolset(provider, tools, session_id=session_id, user_id=user_id, source=source)
        while len(cache) > TOOLSET_CACHE_SIZE:
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    return wrapper(toolset)


def worker_model(worker: "WorkerProfile") -> "Model":
    """The worker's pydantic-ai model; models built from strings are cached per settings."""
    if not isinstance(worker.model, str):
        return worker.model
    key = (worker.role, worker.model, worker.api_base, worker.resolved_api_key(), worker.temperature, worker.timeout_s)
    model = _MODELS.get(key)
    if model is None:
        model = _MODELS[key] = worker.build_model()
    return model


async def run_worker(worker: "WorkerProfile", prompt: str, toolset: AbstractToolset[Any], usage: RunUsage, *,
                     name: str) -> Any:
    """Run one worker agent with ``toolset`` as its only tools, under the profile's limits; returns its output.

    Raises whatever went wrong (the callers turn it into a flagged fallback). ``usage`` is filled in
    place, so it is accurate even when the run fails part-way.
    """
    if worker.api_key_env and not worker.resolved_api_key():
        raise ProfileError(f"missing API key: set the {worker.api_key_env} environment variable "
                           f"(the {worker.role} profile reads it through api_key_env)")
    agent: Agent[None, str] = Agent(worker_model(worker), instructions=worker.instructions or None, output_type=str,
                                    toolsets=[toolset], name=name, defer_model_check=True)
    limits = UsageLimits(request_limit=worker.max_steps, tool_calls_limit=worker.tool_calls_limit)
    settings: dict[str, Any] = {"temperature": worker.temperature} if worker.temperature is not None else {}
    run = agent.run(prompt, usage=usage, usage_limits=limits, model_settings=settings or None)  # type: ignore[arg-type]
    task = asyncio.ensure_future(run)
    done, _ = await asyncio.wait({task}, timeout=worker.timeout_s)
    if not done:  # cancel without waiting: a synchronous model call in a thread cannot be interrupted
        task.cancel()
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # never "exception was never retrieved"
        raise TimeoutError(f"worker exceeded {worker.timeout_s}s")
    return task.result().output


# -- text budget ----------------------------------------------------------------------------------
_SENTENCE_END = re.compile(r"[.!?…][\"')\]]*(?:[ \t]*\[[^\[\]\n]{1,200}\])*(?=\s|$)")


def trim_to_tokens(text: str, budget: int) -> str:
    """``text`` if it fits ``budget`` tokens, else its longest prefix ending on a sentence or line boundary.

    A citation right after a sentence stays with it. If even the first sentence is too long, it is
    cut on a word boundary and ends with ``…``.
    """
    text = text.strip()
    if budget <= 0:
        return ""
    if count_tokens(text) <= budget:
        return text
    cuts = sorted({m.end() for m in _SENTENCE_END.finditer(text)} | {m.start() for m in re.finditer(r"\n", text)})
    best = _longest_fitting(text, [c for c in cuts if c > 0], budget)
    if best:
        return text[:best].rstrip()
    words = [m.start() for m in re.finditer(r"\s+", text)] or [len(text)]
    best = _longest_fitting(text, words, budget - 1)
    cut = text[:best].rstrip() if best else _hard_cut(text, budget - 1)
    return (cut + "…") if cut else ""


def _longest_fitting(text: str, cuts: list[int], budget: int) -> int:
    lo, hi, found = 0, len(cuts) - 1, 0
    while lo <= hi:  # token counts grow with the prefix, so binary search the cut points
        mid = (lo + hi) // 2
        if count_tokens(text[:cuts[mid]].rstrip()) <= budget:
            found, lo = cuts[mid], mid + 1
        else:
            hi = mid - 1
    return found


def _hard_cut(text: str, budget: int) -> str:
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count_tokens(text[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip()
