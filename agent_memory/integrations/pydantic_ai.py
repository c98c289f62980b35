"""Durable memory for pydantic-ai v2 agents, prompt-cache stable by construction.

::

    from pydantic_ai import Agent
    from agent_memory import MemoryProvider
    from agent_memory.integrations.pydantic_ai import MemoryCapability

    provider = MemoryProvider(".agent-memory")
    memory = MemoryCapability(provider, session_id="chat-42", user_id="ada")
    agent = Agent("openai:gpt-4.1-mini", capabilities=[memory])

    result = await agent.run("Book my usual table", message_history=history)
    await provider.flush()  # wait for the background capture before exiting

What the model receives, and why the provider's prompt cache keeps hitting:

* **Core block → instructions, frozen.** ``provider.inject`` (scoped to ``session_id``/``user_id``)
  runs once per conversation (pydantic-ai's ``conversation_id``): at its first run, and again
  only at the first run after a compaction done through :meth:`MemoryCapability.compaction`.
  The fenced text is then byte-identical in every request of every turn.
* **Recall → a user-role part of the turn's first request, kept in history.** At the first model
  request of each run (one user turn), ``provider.recall(prompt)`` runs once; its fenced summary
  is enqueued with ``ctx.enqueue`` and so lands in that request *and* in the message history.
  Tool-loop requests of the same turn reuse it (no second recall), later requests and turns
  resend it unchanged, and recalled text never gets system authority. An empty recall adds
  nothing. A failed or timed-out recall is logged and the turn runs without it.
* **Capture at run end.** ``provider.capture_turn_in_background(prompt, output)`` by default, so
  the answer is not delayed; ``await provider.flush()`` waits for pending captures (call it
  before the event loop or process ends, or use ``async with MemoryProvider(...)``). Under
  ``agent.run_sync`` no loop is left to finish a background capture: the capability warns
  (:class:`~agent_memory.provider.PendingCaptureWarning`) and awaits it inside the run instead.
  The next turn of the same conversation waits for its predecessor's capture before recalling
  (within ``recall_timeout``), so what was said in turn 1 is recallable in turn 2.
* **One episode per run.** At run end (``after_run``, and ``on_run_error`` for a failed or cancelled
  run) the run's goal, tools in call order with their outcomes, exit and usage are stored as an
  episode (``provider.episodes(...)`` lists them; ``episodes=False`` turns this off).
* **Many users, one capability.** ``identity=`` takes a function of the run's ``RunContext``
  returning the caller (a :class:`~agent_memory.backends.base.Caller`, a ``(session_id, user_id)`` pair or a
  mapping), e.g. from ``ctx.deps``: one agent and one capability serve every user of a server.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic_ai.capabilities import AbstractCapability, ProcessHistory
from pydantic_ai.messages import ModelMessage
from pydantic_ai.tools import RunContext

from agent_memory.agents.core_block import DEFAULT_CORE_BUDGET
from agent_memory.backends.base import Caller, EpisodesBackend, require
from agent_memory.episodes import EpisodesUnsupportedError
from agent_memory.episodes._run import run_facts
from agent_memory.integrations._capability_state import NO_CONVERSATION, MemoryTurn, RunState, Shared, caller_of, driven_by_run_sync
from agent_memory.integrations._history import (
    _is_deferred,
    _last_user_text,
    _missing,
    _output_text,
    _prompt_text,
    _takes_ctx,
    _text_of,
    _without_recall,
    keep_recent_turns,
)
from agent_memory.integrations.hooks import MemoryHooks
from agent_memory.provider import PendingCaptureWarning

if TYPE_CHECKING:  # pragma: no cover
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.run import AgentRunResult

    from agent_memory.provider import MemoryProvider

__all__ = ["MemoryCapability", "MemoryTurn", "keep_recent_turns"]

logger = logging.getLogger("agent_memory.integrations.pydantic_ai")
#: What ``episode_facts`` may add to a run's episode: what the run was checked against.
CHECKED_FACTS = ("git_sha", "verify_exit")

HistoryProcessor = Callable[..., list[ModelMessage] | Awaitable[list[ModelMessage]]]
"""A pydantic-ai history processor: ``(messages)`` or ``(ctx, messages)``, sync or async."""
Identity = Callable[[RunContext[Any]], "Caller | tuple[str | None, str | None] | Mapping[str, str | None] | None"]
"""Who a run is for: ``Caller``, ``(session_id, user_id)`` or ``{"session_id": …, "user_id": …}``, from the run's ctx."""


class MemoryCapability(AbstractCapability[Any]):
    """Give a pydantic-ai agent durable memory: core block, per-turn recall, capture at run end.

    ``session_id``/``user_id`` scope every memory operation (another session's or user's
    records never reach this agent's model). ``recall=False`` disables per-turn recall,
    ``capture=False`` disables capture. ``core_budget`` is the core block's token budget.
    ``background_capture=False`` awaits the capture before the run returns (use it with
    ``agent.run_sync``, whose event loop is gone before a background capture could finish).
    ``summary_tokens`` is passed to ``provider.recall``; ``recall_timeout`` (seconds) bounds the
    whole memory delay of a turn (waiting for the previous capture, then recall).
    ``identity`` (a function of the run's ``RunContext``, e.g. reading ``ctx.deps``) names the
    caller per run instead of the fixed ``session_id``/``user_id``: one capability, many users.
    ``namespace``/``isolation`` put the agent in a namespace (``acme/support``; docs/namespaces.md): its writes land
    there and it reads what the isolation allows; an ``identity`` returning a ``Caller`` with a namespace overrides it.
    ``episodes=False`` stops recording one episode per run; ``episode_facts`` (a function of the run's
    ``RunContext``) adds what the run checked to its episode: ``{"git_sha": ..., "verify_exit": ...}``. ``consolidate_every=N`` (off by default) runs the
    non-destructive consolidation pass every N turns and at compaction, in the background. ``tidy=False`` turns off
    the run's-end tidy pass (on by default: :meth:`MemoryProvider.tidy` for the run's caller, in the background).

    Conversations are told apart by pydantic-ai's ``conversation_id`` (inherited from
    ``message_history``, or fresh for a run without history); the frozen core block of the
    ``max_conversations`` most recent ones is kept in memory.
    """

    def __init__(
        self,
        provider: "MemoryProvider",
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        recall: bool = True,
        capture: bool = True,
        core_budget: int = DEFAULT_CORE_BUDGET,
        background_capture: bool = True,
        summary_tokens: int | None = None,
        recall_timeout: float | None = None,
        max_conversations: int = 256,
        identity: Identity | None = None,
        episodes: bool = True,
        consolidate_every: int | None = None,
        tidy: bool = True,
        namespace: str | None = None,
        isolation: str | None = None,
        episode_facts: "Callable[[RunContext[Any]], Mapping[str, Any]] | None" = None,
    ) -> None:
        # an agent's namespace (docs/namespaces.md): every read and write of this capability carries it
        self.provider = provider.in_namespace(namespace, isolation) if namespace or isolation else provider
        self.tidy = tidy
        self.identity = identity
        self.session_id = session_id
        self.user_id = user_id
        self.recall = recall
        self.capture = capture
        self.core_budget = core_budget
        self.background_capture = background_capture
        self.summary_tokens = summary_tokens
        self.recall_timeout = recall_timeout
        self.consolidate_every = consolidate_every
        self.max_conversations = max_conversations
        self.episodes = episodes
        self.episode_facts = episode_facts
        self._shared = Shared()
        self._run: RunState | None = None

    # Identity semantics (the base dataclass would compare two capabilities by id/description).
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        who = f"identity={self.identity!r}" if self.identity is not None else f"session_id={self.session_id!r}, user_id={self.user_id!r}"
        return f"MemoryCapability(root={str(self.provider.root)!r}, {who})"

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a live provider: not spec-serializable

    # -- public helpers ------------------------------------------------------------------
    @property
    def last_turn(self) -> MemoryTurn | None:
        """What memory did in the most recent run (for display, logging and tests)."""
        return self._shared.last_turn

    def hooks(self, conversation_id: str | None = None) -> MemoryHooks:
        """The :class:`MemoryHooks` holding one conversation's frozen core block (for this run's caller)."""
        key = (
            conversation_id or NO_CONVERSATION,
            Caller(self.session_id, self.user_id, getattr(self.provider, "namespace", None), getattr(self.provider, "isolation", None)),
        )
        conversations = self._shared.conversations
        hooks = conversations.get(key)
        if hooks is None:
            hooks = MemoryHooks(
                self.provider,
                session_id=self.session_id,
                user_id=self.user_id,
                core_budget=self.core_budget,
                recall=self.recall,
                capture=self.capture,
                summary_tokens=self.summary_tokens,
                recall_timeout=self.recall_timeout,
                consolidate_every=self.consolidate_every,
                tidy=self.tidy,
            )
            conversations[key] = hooks
            while len(conversations) > max(1, self.max_conversations):
                conversations.popitem(last=False)
        else:
            conversations.move_to_end(key)
        return hooks

    def _hooks_for(self, ctx: RunContext[Any]) -> MemoryHooks:
        """:meth:`hooks` for the caller of the run ``ctx`` belongs to (``identity`` resolved)."""
        if self.identity is None:
            return self.hooks(ctx.conversation_id)
        clone = copy.copy(self)
        clone._identify(self.identity(ctx))
        return clone.hooks(ctx.conversation_id)

    def _identify(self, value: Any) -> None:
        """Take the caller an ``identity`` function returned (a ``Caller``'s namespace too)."""
        self.session_id, self.user_id = caller_of(value)
        if isinstance(value, Caller) and (value.namespace or value.isolation):
            self.provider = self.provider.in_namespace(value.namespace, value.isolation)

    def compaction(self, processor: HistoryProcessor | None = None, *, keep_turns: int = 8) -> ProcessHistory[Any]:
        """A ``ProcessHistory`` capability that compacts history and saves what it drops first.

        ``processor`` is any pydantic-ai history processor (``(messages)`` or ``(ctx, messages)``,
        sync or async); by default :func:`keep_recent_turns` with ``keep_turns``. Whenever it
        returns a history without some of the messages it was given, the removed messages
        (and the text of any messages it added, as the summary) go to
        ``provider.capture_before_compaction``, which is awaited before the trimmed history is
        used. The conversation's core block is then recomputed at its next run: the one point
        where it changes. Add it next to the capability::

            Agent(model, capabilities=[memory, memory.compaction(keep_turns=6)])
        """
        trim: HistoryProcessor = processor if processor is not None else keep_recent_turns(keep_turns)
        takes_ctx = _takes_ctx(trim)

        async def compact(ctx: RunContext[Any], messages: list[ModelMessage]) -> list[ModelMessage]:
            result = trim(ctx, messages) if takes_ctx else trim(messages)
            if inspect.isawaitable(result):
                result = await result
            kept = list(result)
            removed = _missing(messages, kept)
            if removed:
                summary = _text_of(_missing(kept, messages)) or None
                # recalled memory is already stored: don't hand it back to capture as if the user said it
                await self._hooks_for(ctx).on_before_compaction_commit(_without_recall(removed), summary)
                turn = self._shared.last_turn  # this helper is not the run's copy: find the run's turn
                if turn is not None and turn.run_id == ctx.run_id:
                    turn.compactions += 1
            return kept

        return ProcessHistory(compact)

    # -- pydantic-ai hooks ---------------------------------------------------------------
    async def for_run(self, ctx: RunContext[Any]) -> "MemoryCapability":
        clone = copy.copy(self)  # shares provider and the per-conversation state
        clone._run = RunState()
        if self.identity is not None:
            clone._identify(self.identity(ctx))
        return clone

    def get_instructions(self) -> Any:
        async def memory_core(ctx: RunContext[Any]) -> str:
            return await self._core_for_run(ctx)

        return memory_core

    async def before_run(self, ctx: RunContext[Any]) -> None:
        await self._core_for_run(ctx)

    async def before_model_request(self, ctx: RunContext[Any], request_context: "ModelRequestContext") -> "ModelRequestContext":
        run = self._state()
        run.messages = ctx.messages
        if run.recalled or ctx.prompt is None:  # once per user turn; a resumed run has no new prompt
            return request_context
        run.recalled = True
        turn = self._turn(ctx)
        hooks = self.hooks(ctx.conversation_id)
        text, result = await hooks.recall(turn.message)
        turn.recalls += 1
        turn.recall_result = result
        if text:
            try:
                ctx.enqueue(text)  # user-role part of this request, and kept in the message history
                turn.recall = text
            except Exception:
                logger.warning("agent_memory: could not deliver recalled memory", exc_info=True)
        return request_context

    async def after_run(self, ctx: RunContext[Any], *, result: "AgentRunResult[Any]") -> "AgentRunResult[Any]":
        result = await self._finish_turn(ctx, result)
        await self._tidy(ctx)
        return result

    async def _tidy(self, ctx: RunContext[Any]) -> None:
        """The run's-end tidy pass in the background (``tidy=False``: off); under ``run_sync`` awaited here, as the
        loop ends with the run."""
        if not self.tidy:
            return
        task = self.hooks(ctx.conversation_id).tidy_later()
        if task is not None and driven_by_run_sync():
            await asyncio.wait([task])

    async def _finish_turn(self, ctx: RunContext[Any], result: "AgentRunResult[Any]") -> "AgentRunResult[Any]":
        output = result.output
        deferred = _is_deferred(output)
        await self._record_episode(
            ctx, output=None if deferred else _output_text(output), exit="deferred" if deferred else None, messages=result.all_messages()
        )
        if not self.capture:
            return result
        if deferred:  # the run paused for deferred tools: the turn is not over yet
            return result
        turn = self._turn(ctx)
        user_input = turn.message or _last_user_text(ctx.messages)
        if not user_input:
            return result
        hooks = self.hooks(ctx.conversation_id)
        background = self.background_capture
        if background and driven_by_run_sync():
            background = False  # run_sync stops the loop when the run returns: a background capture would be lost
            if not self._shared.warned_sync:
                self._shared.warned_sync = True
                warnings.warn(
                    "MemoryCapability: agent.run_sync leaves no event loop to finish a background capture; "
                    "capturing inside the run instead (pass background_capture=False to silence this)",
                    PendingCaptureWarning,
                    stacklevel=2,
                )
        turn.capture = await hooks.on_turn_end(user_input, _output_text(output), background=background)
        return result

    async def on_tool_execute_error(self, ctx: RunContext[Any], *, call: Any, tool_def: Any, args: Any, error: Exception) -> Any:
        self._state().tool_errors[call.tool_call_id] = f"{type(error).__name__}: {error}"
        raise error

    async def on_run_error(self, ctx: RunContext[Any], *, error: BaseException) -> "AgentRunResult[Any]":
        await self._record_episode(ctx, error=error)
        if not isinstance(error, asyncio.CancelledError):
            await self._tidy(ctx)
        raise error

    # -- internals -----------------------------------------------------------------------
    async def _record_episode(
        self,
        ctx: RunContext[Any],
        *,
        output: str | None = None,
        error: BaseException | None = None,
        exit: str | None = None,
        messages: list[ModelMessage] | None = None,
    ) -> None:
        """Store this run's episode once (fail open: a failure is logged, never raised into the run)."""
        run = self._state()
        if not self.episodes or run.episode_recorded or self._shared.no_episodes:
            return
        run.episode_recorded = True
        try:
            require(self.provider.backend, EpisodesBackend, "episodes", error=EpisodesUnsupportedError)
        except EpisodesUnsupportedError as exc:
            self._shared.no_episodes = True
            logger.info("agent_memory: runs are not recorded as episodes: %s", exc)
            return
        turn = self._turn(ctx)
        try:
            messages = messages or run.messages or ctx.messages
            facts = run_facts(messages, ctx.run_id, run.tool_errors)
            checked = {k: v for k, v in (self.episode_facts(ctx) if self.episode_facts else {}).items() if k in CHECKED_FACTS}
            call = self.hooks(ctx.conversation_id).on_run_end(
                turn.message or _last_user_text(messages),
                output,
                error=error,
                exit=exit,
                tool_calls=facts.tool_calls,
                retried_output=facts.retried_output,
                usage=ctx.usage,
                model=facts.model,
                cost_usd=facts.cost_usd,
                started=run.started,
                run_id=ctx.run_id,
                conversation_id=ctx.conversation_id,
                source="pydantic_ai",
                tidy=False,  # the capability schedules it itself, also when episodes are off
                **checked,
            )
        except Exception:
            logger.warning("agent_memory: could not read the run for its episode", exc_info=True)
            return
        if isinstance(error, asyncio.CancelledError):  # the run is being cancelled: store it without waiting here
            self.provider.background(call)
            return
        turn.episode = await call

    def _state(self) -> RunState:
        if self._run is None:  # used outside a run's for_run copy (should not happen): keep state local
            self._run = RunState()
        return self._run

    def _turn(self, ctx: RunContext[Any]) -> MemoryTurn:
        run = self._state()
        if run.turn is None:
            run.turn = MemoryTurn(conversation_id=ctx.conversation_id, run_id=ctx.run_id, message=_prompt_text(ctx.prompt))
            self._shared.last_turn = run.turn
        return run.turn

    async def _core_for_run(self, ctx: RunContext[Any]) -> str:
        """The core text for this run: frozen per conversation, fixed for the whole run."""
        run = self._state()
        if run.core is None:
            hooks = self.hooks(ctx.conversation_id)
            run.core = await hooks.core()
            turn = self._turn(ctx)
            turn.core = run.core
            turn.core_block = hooks.core_block
        return run.core
