"""Workers users can extend: extra read tools, middleware around every tool call, approval of writes.

Given in code (``MemoryProvider(worker_tools=..., tool_middleware=..., approve_write=...)``) or in a profile
(``extra_tools``/``tool_middleware``/``approve_write`` in a worker's table, as ``"package.module:function"``
import paths), they reach every worker that uses tools (recall, capture, reflect, consolidate) through its
:class:`~agent_memory.agents.profiles.WorkerProfile`, and :func:`extend_toolset` applies them around the worker's
memory toolset for each run.

- **Extra tools are read-only by contract.** A plain function (sync or async) or a pydantic-ai ``Tool``; the
  worker's model sees its name, docstring and parameters. It never receives the memory backend (the worker's
  agent has no dependencies), so it cannot write memory; a sync tool runs in a thread, off the event loop.
  Its calls count against the worker's ``max_tool_calls``, and the worker's ``timeout_s`` bounds it: a tool
  that raises or hangs ends the run in the worker's flagged fallback, never in an exception in the app.
- **Middleware** ``(call: ToolCall, proceed) -> result`` (sync or async) wraps each tool call, memory tools
  included: ``await proceed()`` calls through (``proceed(args)`` with changed arguments), returning a value
  without calling ``proceed`` short-circuits. The first middleware given is the outermost.
- **Approval** ``approve_write(call: ToolCall) -> bool`` (sync or async) is asked before each memory write a
  worker makes (``memory_remember``, ``memory_supersede``, ``memory_curate``, ``memory_forget``, consolidation's
  ``memory_archive``): False (or an error in the callback) denies it; the worker is told the write was denied and
  nothing is stored. The capture worker stages its writes (``memory_curate`` included) and commits them only when
  its run ends well, so an approved write of a failed run is not stored either.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai.toolsets import AbstractToolset, CombinedToolset, FunctionToolset, WrapperToolset

from agent_memory.agents.tools import READ
from agent_memory.errors import InvalidInputError, ProfileError

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.base import Caller

__all__ = [
    "check_extensions",
    "ToolCall",
    "ToolMiddleware",
    "WriteApproval",
    "DENIED",
    "TOOL_WORKERS",
    "extend_profile",
    "extend_toolset",
    "resolve_import",
]

log = logging.getLogger("agent_memory")

#: The workers that run with tools (summarize and episode run none).
TOOL_WORKERS = ("recall", "capture", "reflect", "consolidate")
#: What a worker is told when a write is denied.
DENIED = "denied: the application did not approve this write; nothing was stored. Do not retry it."


@dataclass(frozen=True)
class ToolCall:
    """One tool call a worker is about to make: the worker's role, the tool, its arguments and the caller (its
    session, user and the namespace the call runs in: None is the root; docs/namespaces.md)."""

    worker: str
    name: str
    args: Mapping[str, Any]
    write: bool = False
    session_id: str | None = None
    user_id: str | None = None
    namespace: str | None = None


ToolMiddleware = Callable[[ToolCall, Callable[..., Awaitable[Any]]], Any]
WriteApproval = Callable[[ToolCall], "bool | Awaitable[bool]"]


def resolve_import(spec: str, *, where: str = "<profile>") -> Callable[..., Any]:
    """The object an import path ``"package.module:name"`` (or ``package.module.name``) names; a
    :class:`~agent_memory.errors.ProfileError` if it does not resolve to something callable."""
    if not isinstance(spec, str) or not spec.strip():
        raise ProfileError(f"{where}: an import path must be a non-empty string like 'package.module:function'")
    module_name, sep, attr = spec.strip().partition(":")
    if not sep:
        module_name, _, attr = module_name.rpartition(".")
    if not module_name or not attr:
        raise ProfileError(f"{where}: {spec!r} is not an import path like 'package.module:function'")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or an error raised while importing it
        raise ProfileError(f"{where}: {spec!r}: cannot import {module_name!r}: {type(exc).__name__}: {exc}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ProfileError(f"{where}: {spec!r}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj) and not _is_tool(obj):
        raise ProfileError(f"{where}: {spec!r} is not callable")
    return obj  # type: ignore[no-any-return]


def _is_tool(obj: Any) -> bool:
    from pydantic_ai import Tool

    return isinstance(obj, Tool)


def _tool_name(tool: Any) -> str:
    return str(tool.name) if _is_tool(tool) else str(getattr(tool, "__name__", ""))


def check_tools(tools: Any, where: str = "worker_tools") -> tuple[Any, ...]:
    """Extra tools as a tuple: functions or pydantic-ai ``Tool`` objects with distinct names that are not memory tools."""
    if tools is None:
        return ()
    if callable(tools) or _is_tool(tools):
        tools = [tools]
    if isinstance(tools, (str, bytes)) or not isinstance(tools, Sequence):
        raise InvalidInputError(f"{where} must be a list of functions or pydantic-ai Tools")
    names: set[str] = set()
    for tool in tools:
        if not (callable(tool) or _is_tool(tool)):
            raise InvalidInputError(f"{where}: {tool!r} is not a function or a pydantic-ai Tool")
        name = _tool_name(tool)
        if not name or name == "<lambda>":
            raise InvalidInputError(f"{where}: {tool!r} has no name (use a def, or pydantic_ai.Tool(fn, name=...))")
        if name.startswith("memory_"):
            raise InvalidInputError(f"{where}: {name!r}: names starting with memory_ are the memory tools'")
        if name in names:
            raise InvalidInputError(f"{where}: two tools named {name!r}")
        names.add(name)
    return tuple(tools)


def check_middleware(middleware: Any, where: str = "tool_middleware") -> tuple[ToolMiddleware, ...]:
    """Middleware as a tuple of callables (one callable or a list)."""
    if middleware is None:
        return ()
    items = [middleware] if callable(middleware) else middleware
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence) or not all(callable(m) for m in items):
        raise InvalidInputError(f"{where} must be a callable (call, proceed) -> result, or a list of them")
    return tuple(items)


def check_extensions(worker_tools: Any = None, tool_middleware: Any = None, approve_write: Any = None) -> None:
    """Refuse bad extensions up front (:class:`~agent_memory.errors.InvalidInputError`), before any worker runs."""
    if isinstance(worker_tools, Mapping):
        unknown = [k for k in worker_tools if k not in TOOL_WORKERS]
        if unknown:
            raise InvalidInputError(f"worker_tools: unknown worker(s) {unknown} (workers with tools: {', '.join(TOOL_WORKERS)})")
        for role, tools in worker_tools.items():
            check_tools(tools, f"worker_tools[{role!r}]")
    else:
        check_tools(worker_tools)
    check_middleware(tool_middleware)
    if approve_write is not None and not callable(approve_write):
        raise InvalidInputError("approve_write must be a callable (call) -> bool")


def extend_profile(
    profile: Any,
    *,
    worker_tools: "Sequence[Any] | Mapping[str, Sequence[Any]] | None" = None,
    tool_middleware: "ToolMiddleware | Sequence[ToolMiddleware] | None" = None,
    approve_write: WriteApproval | None = None,
) -> Any:
    """``profile`` with extra tools, middleware and a write approval added to its tool-using workers.

    ``worker_tools``: a list (every tool-using worker gets it) or ``{"recall": [...], "capture": [...]}``.
    Middleware given here wraps the profile's own (it is outermost); ``approve_write`` replaces the profile's."""
    import dataclasses

    if isinstance(worker_tools, Mapping):
        unknown = [k for k in worker_tools if k not in TOOL_WORKERS]
        if unknown:
            raise InvalidInputError(f"worker_tools: unknown worker(s) {unknown} (workers with tools: {', '.join(TOOL_WORKERS)})")
        per_role = {role: check_tools(worker_tools.get(role), f"worker_tools[{role!r}]") for role in TOOL_WORKERS}
    else:
        tools = check_tools(worker_tools)
        per_role = {role: tools for role in TOOL_WORKERS}
    middleware = check_middleware(tool_middleware)
    if approve_write is not None and not callable(approve_write):
        raise InvalidInputError("approve_write must be a callable (call) -> bool")
    changes: dict[str, Any] = {}
    for role in TOOL_WORKERS:
        worker = getattr(profile, role)
        extra = worker.extra_tools + per_role[role]
        check_tools(extra, f"{role} worker tools")
        changes[role] = dataclasses.replace(
            worker,
            extra_tools=extra,
            tool_middleware=middleware + worker.tool_middleware,
            approve_write=approve_write if approve_write is not None else worker.approve_write,
        )
    return dataclasses.replace(profile, **changes)


_FUNCTION_TOOLSETS: dict[tuple[int, ...], tuple[tuple[Any, ...], FunctionToolset[Any]]] = {}


def _function_toolset(tools: tuple[Any, ...]) -> FunctionToolset[Any]:
    """A toolset of the extra tools, built once per tuple of tools (tool schemas cost milliseconds)."""
    key = tuple(id(t) for t in tools)
    hit = _FUNCTION_TOOLSETS.get(key)
    if hit is None or hit[0] != tools:
        if len(_FUNCTION_TOOLSETS) > 64:
            _FUNCTION_TOOLSETS.clear()
        hit = _FUNCTION_TOOLSETS[key] = (tools, FunctionToolset(list(tools)))
    return hit[1]


def extend_toolset(toolset: AbstractToolset[Any], worker: Any, caller: "Caller | None" = None) -> AbstractToolset[Any]:
    """``toolset`` with ``worker``'s extra tools beside it, and its middleware and write approval around every call
    (``toolset`` itself when the worker has none of them)."""
    if not (worker.extra_tools or worker.tool_middleware or worker.approve_write):
        return toolset
    inner: AbstractToolset[Any] = toolset
    if worker.extra_tools:
        inner = CombinedToolset([toolset, _function_toolset(worker.extra_tools)])
    return ExtendedToolset(inner, worker=worker, caller=caller, base=toolset)


@dataclass
class ExtendedToolset(WrapperToolset[Any]):
    """Runs each tool call through the worker's middleware and, for a memory write, its approval."""

    worker: Any = None
    caller: "Caller | None" = None
    base: AbstractToolset[Any] | None = None
    extra_calls: list[str] = field(default_factory=list)

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
        assert self.worker is not None
        worker = self.worker
        extra = {_tool_name(t) for t in worker.extra_tools}
        call = ToolCall(
            worker.role,
            name,
            dict(tool_args),
            write=name.startswith("memory_") and name not in READ + ("memory_reflect",) and name not in extra,
            session_id=self.caller.session_id if self.caller else None,
            user_id=self.caller.user_id if self.caller else None,
            namespace=self.caller.namespace if self.caller else None,
        )
        if name in extra:
            self.extra_calls.append(name)
            calls = getattr(self.base, "extra_calls", None)
            if isinstance(calls, list):  # the worker's recording toolset learns an extra tool was used
                calls.append(name)

        async def last(args: Mapping[str, Any] | None = None) -> Any:
            use = dict(tool_args if args is None else args)
            if call.write and worker.approve_write is not None and not await _approved(worker.approve_write, _with(call, use)):
                return {"status": "denied", "note": DENIED}
            return await super(ExtendedToolset, self).call_tool(name, use, ctx, tool)

        chain: Callable[..., Awaitable[Any]] = last
        for mw in reversed(worker.tool_middleware):
            chain = _wrap(mw, call, chain)
        return await chain()


def _with(call: ToolCall, args: Mapping[str, Any]) -> ToolCall:
    import dataclasses

    return dataclasses.replace(call, args=dict(args))


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(inspect.getattr_static(type(fn), "__call__", None))


def _wrap(mw: ToolMiddleware, call: ToolCall, proceed: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def step(args: Mapping[str, Any] | None = None) -> Any:
        seen = call if args is None else _with(call, args)

        def forward(new: Mapping[str, Any] | None = None) -> Awaitable[Any]:
            return proceed(seen.args if new is None else new)

        if _is_async(mw):
            result = mw(seen, forward)
        else:  # a sync middleware runs in a thread; the coroutine it gets from proceed() is awaited here
            result = await asyncio.to_thread(mw, seen, forward)
        return await result if inspect.isawaitable(result) else result

    return step


async def _approved(approve: WriteApproval, call: ToolCall) -> bool:
    """The approval's answer; an error in it (or a non-bool answer) denies, logged, never raised."""
    try:
        answer = approve(call) if _is_async(approve) else await asyncio.to_thread(approve, call)
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception:
        log.exception("agent_memory: approve_write failed for %s; the write is denied", call.name)
        return False
    return answer is True
