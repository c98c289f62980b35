"""What every worker shares: running a pydantic-ai agent under a profile's limits, the toolset it may use,
usage accounting, failure descriptions and trimming text to a token budget.

The worker modules (:mod:`.recall`, :mod:`.capture`, …) import this module, never the package
``agent_memory.agents.workers``, whose ``__init__`` re-exports from them (so the package and its workers
form no import cycle).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import re
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic_ai import Agent, ModelRetry
from pydantic_ai.exceptions import ModelAPIError, UnexpectedModelBehavior, UsageLimitExceeded
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset
from pydantic_ai.usage import RunUsage, UsageLimits

from agent_memory.agents.extensions import extend_toolset
from agent_memory.agents.models.tool_mode import STAT_KEYS, TOOL_STATS, ToolModeModel
from agent_memory.agents.tokens import count_tokens, get_counter
from agent_memory.agents.tools import memory_toolset
from agent_memory.backends.base import Caller, MemoryBackend
from agent_memory.errors import ProfileError

if TYPE_CHECKING:  # pragma: no cover
    from pydantic_ai.models import Model

    from agent_memory.agents.profiles import WorkerProfile


# -- usage and errors -------------------------------------------------------------------------
def usage_dict(usage: RunUsage | None) -> dict[str, Any]:
    """``{requests, tool_calls, input_tokens, output_tokens, cost_usd, tool_issues}`` (cost None unless the model
    reported one; ``tool_issues``: the non-zero counters of :mod:`~agent_memory.agents.models.tool_mode`, e.g.
    ``{"text_tool_calls": 2, "tool_call_repairs": 1}``)."""
    if usage is None:
        return {"requests": 0, "tool_calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": None, "tool_issues": {}}
    cost = getattr(usage, "cost", None)
    details = getattr(usage, "details", None) or {}
    return {
        "requests": usage.requests,
        "tool_calls": usage.tool_calls,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cost_usd": float(cost) if cost is not None else None,
        "tool_issues": {k: int(details[k]) for k in STAT_KEYS if details.get(k)},
    }


class UnusableOutput(Exception):
    """The worker model finished but its output cannot be used."""


def describe_error(exc: BaseException, timeout_s: float | None = None) -> str:
    """A one-line reason for a worker failure, for ``RecallResult.reason``/``CaptureResult.reason``."""
    if isinstance(exc, TimeoutError):
        return f"timeout after {timeout_s:g}s" if timeout_s else "timeout"
    prefix = (
        "step limit"
        if isinstance(exc, UsageLimitExceeded)
        else "unusable output"
        if isinstance(exc, (UnusableOutput, UnexpectedModelBehavior))
        else "model error"
        if isinstance(exc, ModelAPIError)
        else "profile error"
        if isinstance(exc, ProfileError)
        else "error"
    )
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
    caller: Caller | None = None
    extra_calls: list[str] = field(default_factory=list)  # extra (user-given) tools called, by name

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
_TOOLSETS: "weakref.WeakKeyDictionary[Any, OrderedDict[tuple[Any, ...], AbstractToolset[Any]]]" = weakref.WeakKeyDictionary()


W = TypeVar("W", bound=RecordingToolset)


def bound_toolset(
    backend: MemoryBackend,
    tools: tuple[str, ...],
    caller: Caller,
    *,
    source: str = "tool",
    wrapper: type[W] = RecordingToolset,  # type: ignore[assignment]
) -> W:
    """A fresh ``wrapper`` around the memory toolset over ``backend`` for ``caller``.

    Building a toolset costs milliseconds (tool schemas), so the last few per backend are kept
    (an LRU keyed by tools, caller and source) for as long as the backend lives.
    """
    try:
        cache = _TOOLSETS.setdefault(backend, OrderedDict())
    except TypeError:  # pragma: no cover - a backend that cannot be weakly referenced: no caching
        cache = OrderedDict()
    key = (tuple(tools), caller, source)
    toolset = cache.get(key)
    if toolset is None:
        toolset = cache[key] = memory_toolset(staged_backend(backend), tools, caller=caller, source=source)
        while len(cache) > TOOLSET_CACHE_SIZE:
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    out = wrapper(toolset)
    out.caller = caller
    return out


#: The ranking stages of the running worker's searches (its profile's ``[search]`` table), set by :func:`run_worker`.
_SEARCH_STAGES: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar("agent_memory_worker_stages", default=())


def staged_backend(backend: MemoryBackend) -> Any:
    """``backend`` as a worker's memory tools use it: its searches get the running worker's ranking stages."""
    return _StagedBackend(backend)


class _StagedBackend:
    """The backend a worker's memory tools use: its searches get the worker's ranking stages (if any)."""

    def __init__(self, inner: MemoryBackend) -> None:
        self.inner = inner  # in the instance dict: ``capability()`` looks through to the backend

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def search(self, query: str, caller: Caller, *, limit: int = 10, **options: Any) -> Any:
        stages = _SEARCH_STAGES.get()
        if stages and options.get("stages") is None and options.get("mode") != "contextual":
            options["stages"] = list(stages)
        return await self.inner.search(query, caller, limit=limit, **options)


_STOP_TEXT = {"capture": "NO_REPLY", "consolidate": "NO_REPLY"}  # a neutral final answer when a loop guard ends the run
_FIRST_STEP = {  # prompted mode: what the first reply should be (small models follow what they read last)
    "recall": "Your reply must be the JSON call of memory_search.",
    "reflect": "Your reply must be the JSON call of memory_search.",
    "capture": "Your reply must be the JSON call of memory_remember.",  # offered NO_REPLY, 1.5B models always take it
}


_NEXT_STEP = {  # prompted mode: what to do with the results just returned, while more steps remain
    # no "or NO_RELEVANT_MEMORY" here: offered that exit, 0.5B and 1.5B models took it over relevant hits (measured).
    # No "Do not search again" while steps remain (it stopped a decomposing worker after one search: the worker's
    # instructions decide whether to search again), and no search offered here: offered one ("If these results answer
    # the message, answer now…, or search for the missing part"), the 1.5B model replied NO_RELEVANT_MEMORY over the
    # evidence (r1, m2; measured), twice each.
    "recall": "Now answer from these results: one or two short sentences, each ending with its "
    "[record-id:L<start>-L<end>] citation as shown.",
    "reflect": "Now answer from these results, citing [record-id:L<start>-L<end>] as shown, or search with other words.",
    "capture": "Reply with the JSON call of memory_remember for the next fact not stored yet, or NO_REPLY if all are stored.",
}
_LAST_STEP = {  # prompted mode: the same, on the last request the step limit allows (a call there ends the run)
    "recall": "Now answer from all the results above: short sentences, each ending with its "
    "[record-id:L<start>-L<end>] citation as shown. Do not search again.",
    "reflect": "Now answer from all the results above, citing [record-id:L<start>-L<end>] as shown. Do not search again.",
}


def _model_key(worker: "WorkerProfile") -> tuple[Any, ...]:
    import os

    from agent_memory.agents.profiles import MODEL_ENV

    return (
        worker.role,
        worker.model,
        worker.base_url,
        worker.resolved_api_key(),
        worker.temperature,
        worker.timeout_s,
        worker.tool_mode,
        worker.max_repairs,
        worker.max_steps,  # the tool-mode wrapper's last-step prompt depends on it
        os.environ.get(MODEL_ENV) if worker.model == "openai-chat:" else None,
    )


def _with_tool_mode(worker: "WorkerProfile", model: "Model") -> "Model":
    if worker.tool_mode == "native" or worker.model == "offline":
        return model
    return ToolModeModel(
        model,
        worker.tool_mode,  # type: ignore[arg-type]
        max_repairs=worker.max_repairs,
        stop_text=_STOP_TEXT.get(worker.role),
        search_first=worker.role in ("recall", "reflect"),
        first_step=_FIRST_STEP.get(worker.role) if worker.tools else None,
        next_step=_NEXT_STEP.get(worker.role),
        last_step=_LAST_STEP.get(worker.role),
        max_steps=worker.max_steps,
        empty_text="NO_RELEVANT_MEMORY" if worker.role in ("recall", "reflect") else None,
    )


def worker_model(worker: "WorkerProfile") -> "Model":
    """The worker's pydantic-ai model (wrapped for its ``tool_mode``); models built from strings are cached per settings."""
    if not isinstance(worker.model, str):
        return _with_tool_mode(worker, worker.model)
    key = _model_key(worker)
    model = _MODELS.get(key)
    if model is None:
        model = _MODELS[key] = _with_tool_mode(worker, worker.build_model())
    return model


async def worker_model_async(worker: "WorkerProfile") -> "Model":
    """:func:`worker_model` without blocking the event loop: the first build (``import litellm``…) runs in a thread."""
    if not isinstance(worker.model, str):
        return _with_tool_mode(worker, worker.model)
    cached = _MODELS.get(_model_key(worker))
    return cached if cached is not None else await asyncio.to_thread(worker_model, worker)


async def warm_up() -> None:
    """Load what the first worker run would otherwise load on the event loop (the tokenizer)."""
    if get_counter.cache_info().currsize == 0:
        await asyncio.to_thread(get_counter)


_banner_holds = 0


@contextlib.contextmanager
def _no_banner() -> Iterator[None]:
    """Keep pydantic-ai's first-run banner out of a private worker run (restored afterwards)."""
    global _banner_holds
    import pydantic_ai

    saved = pydantic_ai.BANNER_ENABLED
    _banner_holds += 1
    pydantic_ai.BANNER_ENABLED = False
    try:
        yield
    finally:
        _banner_holds -= 1
        if _banner_holds == 0:
            pydantic_ai.BANNER_ENABLED = saved


def abandon(task: "asyncio.Future[Any]") -> None:
    """Cancel ``task`` without waiting for it; its outcome is consumed, so nothing is logged as never retrieved."""
    task.cancel()
    task.add_done_callback(lambda t: t.cancelled() or t.exception())


async def run_worker(
    worker: "WorkerProfile", prompt: str, toolset: AbstractToolset[Any], usage: RunUsage, *, name: str, timeout_s: float | None = None
) -> Any:
    """Run one worker agent with ``toolset`` as its only tools, under the profile's limits; returns its output.

    ``timeout_s`` (default: the profile's) bounds the run; on timeout, or when the caller is
    cancelled, the run is cancelled too (its HTTP request with it) and never logs an unretrieved
    error. Raises whatever went wrong (the callers turn it into a flagged fallback). ``usage`` is
    filled in place, so it is accurate even when the run fails part-way.
    """
    if worker.api_key_env and not worker.resolved_api_key():
        raise ProfileError(
            f"missing API key: set the {worker.api_key_env} environment variable (the {worker.role} profile reads it through api_key_env)"
        )
    limit = worker.timeout_s if timeout_s is None else min(timeout_s, worker.timeout_s)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    # the tokenizer and the model (``import litellm``…) load in threads, within the run's time limit
    _, model = await asyncio.wait_for(asyncio.gather(warm_up(), worker_model_async(worker)), max(0.0, deadline - loop.time()))
    toolset = extend_toolset(toolset, worker, getattr(toolset, "caller", None))  # extra tools, middleware, approval
    agent: Agent[None, str] = Agent(
        model, instructions=worker.instructions or None, output_type=str, toolsets=[toolset], name=name, defer_model_check=True
    )
    limits = UsageLimits(request_limit=worker.max_steps, tool_calls_limit=worker.tool_calls_limit)
    settings: dict[str, Any] = {"temperature": worker.temperature} if worker.temperature is not None else {}
    if worker.max_tokens is not None:
        settings["max_tokens"] = worker.max_tokens
    stats: dict[str, int] = {}
    with _no_banner():
        token = _SEARCH_STAGES.set(tuple(worker.search))  # the run's task copies the context as it is created
        stats_token = TOOL_STATS.set(stats)
        try:
            task = asyncio.ensure_future(agent.run(prompt, usage=usage, usage_limits=limits, model_settings=settings or None))  # type: ignore[arg-type]
        finally:
            _SEARCH_STAGES.reset(token)
            TOOL_STATS.reset(stats_token)
        try:
            done, _ = await asyncio.wait({task}, timeout=max(0.0, deadline - loop.time()))
        except BaseException:  # the caller gave up (cancelled): so does the worker
            abandon(task)
            raise
        finally:  # counted even when the run failed
            for key, count in stats.items():
                usage.details[key] = usage.details.get(key, 0) + count
    if not done:  # cancel without waiting: a synchronous model call in a thread cannot be interrupted
        abandon(task)
        raise TimeoutError(f"worker exceeded {limit:g}s")
    return task.result().output


def resolve_worker(worker: "WorkerProfile | Callable[[], WorkerProfile]") -> "WorkerProfile":
    """A worker profile, or the result of calling a zero-argument loader (so loading errors fail open too)."""
    return worker() if callable(worker) else worker


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
        if count_tokens(text[: cuts[mid]].rstrip()) <= budget:
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
