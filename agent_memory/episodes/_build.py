"""From the facts of one run to an :class:`Episode`: deterministic, redacted, trimmed, validated (every text and id
through the write gate, :mod:`agent_memory.model.drafts`; the store passes the whole episode through it again)."""

from __future__ import annotations

import asyncio
import datetime as dt
import math
from collections.abc import Iterable, Mapping
from typing import Any

from agent_memory.episodes._model import (
    EXITS,
    MAX_COUNT,
    MAX_DETAIL_CHARS,
    MAX_GOAL_CHARS,
    MAX_NOTE_CHARS,
    MAX_NOTES,
    MAX_SEQUENCE,
    MAX_TOOL_NAME,
    OUTCOMES,
    Episode,
    ToolCall,
    _git_sha,
    _verify_exit,
    check_owner,
    clean,
    new_episode_id,
    tool_uses,
)
from agent_memory.errors import InvalidInputError
from agent_memory.model.drafts import clean_ident
from agent_memory.model.records import Scope, normalize_instant, now_iso, parse_scope
from agent_memory.model.values import shown

__all__ = ["build_episode", "exit_of_error", "usage_numbers"]

_LIMIT_ERRORS = ("UsageLimitExceeded",)


def exit_of_error(error: BaseException | str | None) -> str:
    """``cancelled``, ``limit`` (a usage/step limit) or ``error`` for what ended a run."""
    if isinstance(error, (asyncio.CancelledError, KeyboardInterrupt)):
        return "cancelled"
    if isinstance(error, BaseException) and any(c.__name__ in _LIMIT_ERRORS for c in type(error).__mro__):
        return "limit"
    return "error"


def _error_text(error: BaseException | str) -> str:
    if isinstance(error, str):
        return error
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def usage_numbers(usage: Any) -> dict[str, int | None]:
    """``requests``, ``input_tokens``, ``output_tokens`` from a pydantic-ai ``RunUsage`` or a mapping (None when unknown)."""
    out: dict[str, int | None] = {"requests": None, "input_tokens": None, "output_tokens": None}
    if usage is None:
        return out
    for name in out:
        value = usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_COUNT:
            out[name] = value  # an absurd count is "unknown", never a file that could not be read back
    return out


def _instant(value: dt.datetime | str | None, name: str) -> str:
    if value is None:
        return now_iso()
    if isinstance(value, dt.datetime):
        value = (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).isoformat()
    norm = normalize_instant(value) if isinstance(value, str) else None
    if norm is None:
        raise InvalidInputError(f"{name} must be an ISO datetime, not {shown(value)}")
    return norm


def _calls(tool_calls: Iterable[ToolCall | str | Mapping[str, Any]]) -> list[ToolCall]:
    out: list[ToolCall] = []
    for call in tool_calls:
        if isinstance(call, str):
            call = ToolCall(call)
        elif isinstance(call, Mapping):
            call = ToolCall(str(call.get("name") or ""), str(call.get("outcome") or "success"), str(call.get("detail") or ""))
        if not isinstance(call, ToolCall):
            raise InvalidInputError(f"a tool call must be a name, a mapping or a ToolCall, not {type(call).__name__}")
        name = clean_ident(call.name, MAX_TOOL_NAME)
        if not name:
            raise InvalidInputError("a tool call has no name")
        outcome = call.outcome if call.outcome in OUTCOMES else "failed"
        out.append(ToolCall(name, outcome, clean(call.detail, MAX_NOTE_CHARS - MAX_TOOL_NAME - 16, one_line=True)))
    return out


def _notes(calls: list[ToolCall], retried_output: list[str], error: str | None, exit: str, output: str) -> tuple[list[str], list[str]]:
    worked: list[str] = []
    failed: list[str] = []
    for use in tool_uses(calls):
        ok = use.calls - use.errors
        if ok:
            worked.append(f"{use.name}: {ok} of {use.calls} call{'s' if use.calls != 1 else ''} succeeded")
    for call in calls:
        if call.outcome != "success":
            note = f"{call.name} {call.outcome}" + (f": {call.detail}" if call.detail else "")
            if note not in failed:
                failed.append(note)
    for text in retried_output:
        note = "output retried" + (f": {text}" if text else "")
        if note not in failed:
            failed.append(note)
    if exit == "output" and output:
        worked.append("produced a final answer")
    if error:
        failed.append(f"run {'cancelled' if exit == 'cancelled' else 'stopped by a limit' if exit == 'limit' else 'failed'}: {error}")
    return (
        [clean(n, MAX_NOTE_CHARS, one_line=True) for n in worked[:MAX_NOTES]],
        [clean(n, MAX_NOTE_CHARS, one_line=True) for n in failed[-MAX_NOTES:]],
    )


def build_episode(
    goal: str,
    *,
    output: str | None = None,
    error: BaseException | str | None = None,
    exit: str | None = None,
    tool_calls: Iterable[ToolCall | str | Mapping[str, Any]] = (),
    retried_output: Iterable[str] = (),
    usage: Any = None,
    cost_usd: float | None = None,
    model: str | None = None,
    started: dt.datetime | str | None = None,
    ended: dt.datetime | str | None = None,
    session_id: str | None = None,
    user_id: str | None = None,
    scope: Scope | str | None = None,
    run_id: str | None = None,
    conversation_id: str | None = None,
    source: str = "api",
    git_sha: str | None = None,
    verify_exit: int | None = None,
) -> Episode:
    """The episode of one run, from plain facts (every text redacted and trimmed; bad input is a typed error).

    ``exit`` defaults to ``error``/``limit``/``cancelled`` when ``error`` is given, else ``output``.
    ``tool_calls`` are names, ``{name, outcome, detail}`` mappings or :class:`ToolCall` in call order
    (outcome: success, failed, retried, denied, interrupted). ``git_sha``: the commit the run worked on (hex);
    ``verify_exit``: the exit status of its verification command (tests, build). ``scope`` defaults to the owner's:
    ``user`` with a ``user_id``, else ``session`` with a ``session_id``, else ``project``.
    """
    if not isinstance(goal, str):
        raise InvalidInputError(f"goal must be a string, not {type(goal).__name__}")
    session_id, user_id = check_owner("session_id", session_id), check_owner("user_id", user_id)
    default = Scope.USER if user_id else Scope.SESSION if session_id else Scope.PROJECT
    where = parse_scope(scope, default)
    if (where is Scope.USER and not user_id) or (where is Scope.SESSION and not session_id):
        raise InvalidInputError(f"scope {where.value} needs a {where.value}_id")
    exit = exit or (exit_of_error(error) if error is not None else "output")
    if exit not in EXITS:
        raise InvalidInputError(f"exit must be one of {', '.join(EXITS)}, not {shown(exit)}")
    error_text = clean(_error_text(error), MAX_DETAIL_CHARS, one_line=True) if error is not None else None
    out_text = clean(output, MAX_DETAIL_CHARS)
    calls = _calls(tool_calls)
    retried = [clean(t, MAX_NOTE_CHARS - 20, one_line=True) for t in retried_output]
    worked, failed = _notes(calls, retried, error_text, exit, out_text)
    if cost_usd is not None and (
        isinstance(cost_usd, bool) or not isinstance(cost_usd, (int, float)) or not math.isfinite(cost_usd) or cost_usd < 0
    ):
        raise InvalidInputError("cost_usd must be a finite number ≥ 0")
    start = _instant(started, "started")
    end = _instant(ended, "ended") if ended is not None else max(start, now_iso())
    numbers = usage_numbers(usage)
    status = "paused" if exit == "deferred" else "ok" if exit == "output" and error is None else "failed"
    return Episode(
        id=new_episode_id(start),
        goal=clean(goal, MAX_GOAL_CHARS) or "(no prompt)",
        started=start,
        ended=end,
        status=status,
        exit=exit,
        exit_detail=error_text if error_text is not None else out_text,
        scope=where,
        session_id=session_id,
        user_id=user_id,
        run_id=clean(run_id, 200, one_line=True) or None,
        conversation_id=clean(conversation_id, 200, one_line=True) or None,
        source=clean(source, 32, one_line=True) or "api",
        tools=tool_uses(calls),
        sequence=tuple(c.name for c in calls[:MAX_SEQUENCE]),
        worked=tuple(worked),
        failed=tuple(failed),
        retries=sum(1 for c in calls if c.outcome == "retried") + len(retried),
        requests=numbers["requests"],
        input_tokens=numbers["input_tokens"],
        output_tokens=numbers["output_tokens"],
        cost_usd=None if cost_usd is None else float(cost_usd),
        model=clean(model, 200, one_line=True) or None,
        git_sha=_git_sha(git_sha),
        verify_exit=_verify_exit(verify_exit),
    )
