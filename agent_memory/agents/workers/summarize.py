"""The summarize worker: one summary of a session log, by the profile's model or the offline summariser.

The ``[summarize]`` profile section chooses the model; ``offline`` (the default) runs the
deterministic extractive summariser (:mod:`agent_memory.agents.models.offline_summarize`) without any agent.
A model runs as a private pydantic-ai ``Agent`` with no tools, under the section's ``max_steps`` and
``timeout_s``. It fails open: on any error, timeout or empty reply the offline summary is used,
flagged ``fallback=True`` with the reason. It never raises into the caller.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.usage import RunUsage

from agent_memory.agents.fence import escape
from agent_memory.agents.models.offline_summarize import summarize_messages
from agent_memory.agents.workers import RecordingToolset, describe_error, resolve_worker, run_worker, usage_dict
from agent_memory.errors import InvalidInputError
from agent_memory.redaction.api import redact_text

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.agents.profiles import WorkerProfile
    from agent_memory.sessions import SessionMessage, SessionStore, SessionSummary, SummaryPolicy

__all__ = ["SummarizeResult", "run_summarize", "summarize_session", "summarize_prompt", "MAX_PROMPT_CHARS", "MAX_SUMMARY_CHARS"]

MAX_PROMPT_CHARS = 60_000
MAX_SUMMARY_CHARS = 4_000


@dataclass
class SummarizeResult:
    """A session summary and how it was produced (``source``: ``offline`` or the model's label)."""

    text: str
    source: str = "offline"
    fallback: bool = False
    reason: str | None = None
    usage: dict[str, Any] = field(default_factory=lambda: usage_dict(None))
    elapsed_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize_prompt(messages: Sequence["SessionMessage"], session_id: str, previous: str | None = None) -> str:
    """The worker's prompt: the log as dated lines (the newest part kept when it is too long). Stored text (a
    message, its speaker, the previous summary) is escaped as capture's prompt is (:func:`agent_memory.agents.fence.escape`):
    no chat-template token in it reaches the model as one."""
    # speaker and text are each collapsed to one line (a log written before the write gate refused line breaks in a
    # speaker must not forge log lines either)
    lines = [
        f"[{m.at[:16].replace('T', ' ')}] {escape(' '.join((m.speaker or m.role).split()))}: {escape(' '.join(m.text.split()))}"
        for m in messages
    ]
    body, size = [], 0
    for line in reversed(lines):
        size += len(line) + 1
        if size > MAX_PROMPT_CHARS:
            break
        body.append(line)
    head = f"Session {session_id}, {len(messages)} messages."
    if previous:
        head += f"\nPrevious summary (replace it):\n{escape(previous.strip())}"
    return f"{head}\nLog:\n" + "\n".join(reversed(body))


async def run_summarize(
    messages: Sequence["SessionMessage"],
    *,
    session_id: str,
    worker: "WorkerProfile | Callable[[], WorkerProfile]",
    previous: str | None = None,
    timeout_s: float | None = None,
) -> SummarizeResult:
    """Summarise ``messages``; never raises (the offline summary is the flagged fallback)."""
    started = time.perf_counter()

    def offline(reason: str | None = None) -> SummarizeResult:
        text = summarize_messages(messages, session_id=session_id)
        return SummarizeResult(text, "offline", reason is not None, reason, elapsed_s=time.perf_counter() - started)

    try:
        profile = resolve_worker(worker)
    except Exception as exc:
        return await asyncio.to_thread(offline, describe_error(exc))
    if isinstance(profile.model, str) and profile.model == "offline":
        return await asyncio.to_thread(offline)
    usage = RunUsage()
    try:
        prompt = summarize_prompt(messages, session_id, previous)
        output = await run_worker(profile, prompt, RecordingToolset(FunctionToolset()), usage, name="summarize", timeout_s=timeout_s)
        text = redact_text(str(output or "")).strip()[:MAX_SUMMARY_CHARS]
        if not text:
            raise ValueError("the model returned an empty summary")
    except Exception as exc:  # fail open: the deterministic summary, flagged
        result = await asyncio.to_thread(offline, describe_error(exc, timeout_s or profile.timeout_s))
        result.usage = usage_dict(usage)
        return result
    return SummarizeResult(text, profile.model_label, False, None, usage_dict(usage), time.perf_counter() - started)


async def summarize_session(
    store: "SessionStore",
    target: str | None,
    *,
    session_id: str | None,
    user_id: str | None,
    worker: "WorkerProfile | Callable[[], WorkerProfile]",
    force: bool = False,
    policy: "SummaryPolicy | None" = None,
    now: dt.datetime | None = None,
) -> "SessionSummary | None":
    """Summarise a visible session when it is due under ``policy`` (or ``force``); returns the new version or None.

    A session the caller cannot see raises :class:`~agent_memory.errors.NotFoundError`; the model
    itself never breaks the call (the offline summary is the fallback)."""
    from agent_memory.sessions import SummaryPolicy

    if not target:
        raise InvalidInputError("summarize needs a session id")
    sdir = await asyncio.to_thread(store.resolve, target, session_id=session_id, user_id=user_id)
    info = await asyncio.to_thread(store.info, sdir)
    if info.messages == 0 or not (force or info.due(policy or SummaryPolicy(), now)):
        return None
    messages, _ = await asyncio.to_thread(store.files.read, sdir)
    previous = info.summary.text if info.summary else None
    result = await run_summarize(messages, session_id=sdir.session_id, worker=worker, previous=previous)
    if not result.text.strip():
        return None
    return await asyncio.to_thread(
        store.files.write_summary, sdir, result.text, messages=len(messages), source=result.source, fallback=result.fallback
    )
