"""The episode worker: a model refines one run's deterministic episode (summary, what worked, what failed).

The ``[episode]`` profile section chooses the model; ``offline`` (the default) keeps the deterministic episode
and runs nothing. A model runs as a private pydantic-ai ``Agent`` with no tools, under the section's
``max_steps`` and ``timeout_s``, and must reply with one JSON object ``{"summary", "worked", "failed"}``.
It only ever changes those three texts (redacted and trimmed like the rest of the episode) and records
``refined_by``; ids, owner, timestamps, tools, exit, tokens and cost stay as the run recorded them. It fails
open: on any error, timeout or invalid reply :func:`refine_episode` returns ``None`` and never raises.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.usage import RunUsage

from agent_memory.agents.fence import escape
from agent_memory.agents.workers import RecordingToolset, describe_error, resolve_worker, run_worker
from agent_memory.episodes._model import MAX_NOTE_CHARS, MAX_NOTES, MAX_SUMMARY_CHARS, Episode, clean

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.agents.profiles import WorkerProfile

__all__ = ["episode_prompt", "parse_refinement", "refine_episode"]

logger = logging.getLogger("agent_memory.agents.workers.episode")


def episode_prompt(episode: Episode) -> str:
    """What the model sees: the episode's own readable record (already redacted when it was built), escaped
    (:func:`agent_memory.agents.fence.escape`): no chat-template token in it reaches the model as one."""
    return f"Run record:\n{escape(episode.body())}"


def parse_refinement(text: str) -> dict[str, Any]:
    """``{"summary", "worked", "failed"}`` from a reply (the first JSON object in it), cleaned; ``ValueError`` if
    it is not one."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("the reply holds no JSON object")
    data = json.loads(text[start : end + 1])
    if not isinstance(data, dict):
        raise ValueError("the reply is not a JSON object")
    summary = data.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise ValueError("the reply has no summary")
    out: dict[str, Any] = {"summary": clean(summary, MAX_SUMMARY_CHARS)}
    for name in ("worked", "failed"):
        items = data.get(name, [])
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise ValueError(f"{name} must be a list of texts")
        out[name] = tuple(note for i in items[:MAX_NOTES] if (note := clean(i, MAX_NOTE_CHARS, one_line=True)))
    return out


async def refine_episode(
    episode: Episode, *, worker: "WorkerProfile | Callable[[], WorkerProfile]", timeout_s: float | None = None
) -> Episode | None:
    """The episode with the model's summary and notes, or ``None`` (offline profile, or the model failed)."""
    try:
        profile = resolve_worker(worker)
        if isinstance(profile.model, str) and profile.model == "offline":
            return None
        output = await run_worker(
            profile, episode_prompt(episode), RecordingToolset(FunctionToolset()), RunUsage(), name="episode", timeout_s=timeout_s
        )
        fields = parse_refinement(str(output or ""))
    except Exception as exc:  # fail open: the deterministic episode stays
        logger.warning("agent_memory: episode %s not refined: %s", episode.id, describe_error(exc, timeout_s))
        return None
    return dataclasses.replace(episode, refined_by=profile.model_label, **fields)
