"""Per-run and per-capability state of :class:`~agent_memory.integrations.pydantic_ai.MemoryCapability`.

What one run (one user turn) did for memory (:class:`MemoryTurn`), the run-local state, the state a
capability's per-run copies share, and two small readers of the run's surroundings (who the run is for,
whether ``run_sync`` drives it).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import sys
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai.messages import ModelMessage

from agent_memory.agents.core_block import MemoryBlock
from agent_memory.backends.base import Caller

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.agents.workers.capture import CaptureResult
    from agent_memory.agents.workers.recall import RecallResult
    from agent_memory.episodes import Episode
    from agent_memory.integrations.hooks import MemoryHooks

__all__ = ["MemoryTurn"]

NO_CONVERSATION = ""


@dataclass
class MemoryTurn:
    """What memory did for one run (one user turn); ``MemoryCapability.last_turn`` holds the latest.

    ``core`` is the fenced text placed in the instructions (``""`` if memory was empty),
    ``recall`` the fenced text delivered as a user-role part of the turn's first request
    (``""`` if nothing was recalled), ``capture`` the background capture task (or, with
    ``background_capture=False``, its result).
    """

    conversation_id: str | None
    run_id: str | None
    message: str
    core: str = ""
    core_block: MemoryBlock | None = None
    recall: str = ""
    recall_result: "RecallResult | None" = None
    recalls: int = 0
    capture: "asyncio.Task[CaptureResult] | CaptureResult | None" = None
    compactions: int = 0
    episode: "Episode | None" = None


@dataclass
class RunState:
    turn: MemoryTurn | None = None
    core: str | None = None
    recalled: bool = False
    started: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    episode_recorded: bool = False
    messages: list[ModelMessage] = field(default_factory=list)  # the run's live history (for a failed run's episode)
    tool_errors: dict[str, str] = field(default_factory=dict)  # tool call id -> the exception a tool raised


@dataclass
class Shared:
    conversations: "OrderedDict[tuple[str, Caller], MemoryHooks]" = field(default_factory=OrderedDict)
    warned_sync: bool = False
    last_turn: MemoryTurn | None = None
    no_episodes: bool = False  # the backend keeps no episodes (e.g. PostgreSQL): said once, then skipped


def caller_of(value: Any) -> tuple[str | None, str | None]:
    """``(session_id, user_id)`` from what an ``identity`` function returned."""
    if value is None:
        return None, None
    if isinstance(value, Caller):
        return value.session_id, value.user_id
    if isinstance(value, Mapping):
        unknown = set(value) - {"session_id", "user_id"}
        if unknown:
            raise TypeError(f"identity mapping has unknown key(s): {sorted(map(str, unknown))}")
        return value.get("session_id"), value.get("user_id")
    if isinstance(value, tuple) and len(value) == 2:
        return value[0], value[1]
    raise TypeError(f"identity must return a Caller, a (session_id, user_id) pair or a mapping, not {type(value).__name__}")


_AGENT_RUN_COROS = frozenset({"AbstractAgent.run", "Agent.run", "WrapperAgent.run"})
_SYNC_ENTRIES = frozenset({"run_sync", "run_stream_sync"})  # pydantic-ai's sync wrappers: they drive the loop themselves
_SYNC_BRIDGE = "_sync_stream.py"  # the module run_stream_sync's result drives the loop from, chunk by chunk, until it closes


def _is_agent_run(task: "asyncio.Task[Any]") -> bool:
    coro = task.get_coro()
    code = getattr(coro, "cr_code", None)
    return getattr(coro, "__qualname__", "") in _AGENT_RUN_COROS and code is not None and "pydantic_ai" in code.co_filename


def _loop_runs_until(task: "asyncio.Task[Any]") -> bool:
    """Whether ``task`` is the future an ``asyncio`` loop's ``run_until_complete`` waits for (the loop stops with it)."""
    callbacks = getattr(task, "_callbacks", None) or ()
    return any(getattr(entry[0] if isinstance(entry, tuple) else entry, "__name__", "") == "_run_until_complete_cb" for entry in callbacks)


def driven_by_run_sync() -> bool:
    """Whether the loop ends when this run returns, so nothing scheduled in the background would finish.

    True under ``agent.run_sync`` / ``run_stream_sync`` (one of their frames, or of the sync stream that drives the
    loop, is below this one on the thread's stack) and for ``asyncio.run(agent.run(…))`` (the run is the task the loop runs until complete).
    False for a run started with ``asyncio.create_task`` or ``asyncio.gather`` in a loop that outlives it (a server's
    task per request): its capture stays in the background.
    """
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if "pydantic_ai" in code.co_filename and (code.co_name in _SYNC_ENTRIES or code.co_filename.endswith(_SYNC_BRIDGE)):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return any(_is_agent_run(task) and _loop_runs_until(task) for task in asyncio.all_tasks())
