"""The recall worker: one compact, cited summary of what memory knows about a message.

A pydantic-ai ``Agent`` with only the READ memory tools (narrowed by the profile), bound to the
caller's session and user, runs under the profile's ``max_steps`` and ``timeout_s``. Its reply is
trimmed to the token budget on a sentence boundary and its citations (``[record-id:L12-L14]``)
become ``sources``. A summary must be grounded in what the worker read: one that cites a record no
tool returned, or cites nothing at all, is not used. On any failure a deterministic lexical summary
of search hits is returned instead, flagged ``fallback=True`` with the reason: recall never raises
into the caller.
With ``answer_mode`` ``select`` (``auto`` in a text tool mode: small local models), the model is shown the records
its searches returned, numbered, and replies with the numbers of those that answer (or ``NONE``); the worker writes
the summary from those records' own text with their citations (:mod:`agent_memory.agents.models.select`).
The summary is plain text; fencing it for the main model is the integration layer's job.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai.usage import RunUsage

from agent_memory.agents.fence import escape
from agent_memory.agents.models.offline import NO_RELEVANT_MEMORY
from agent_memory.agents.models.select import SELECTING, Choice, SelectState, parse_selection
from agent_memory.agents.profiles import DEFAULT_SUMMARY_TOKENS
from agent_memory.agents.tokens import count_tokens, get_counter
from agent_memory.agents.workers.runner import (
    RecordingToolset,
    ToolCallRecord,
    UnusableOutput,
    bound_toolset,
    describe_error,
    resolve_worker,
    run_worker,
    trim_to_tokens,
    usage_dict,
)
from agent_memory.backends.base import Caller, MemoryBackend

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.agents.profiles import WorkerProfile

__all__ = ["RecallResult", "run_recall", "lexical_summary", "shortest_answer", "recall_prompt", "parse_citations", "ungrounded_citations"]

_EMPTY_REPLIES = frozenset({NO_RELEVANT_MEMORY, "NONE", "NO_REPLY", "NO_MEMORY"})
_CITATION = re.compile(r"\[([^\[\]\s]+?)(?::L(\d+)(?:\s*-\s*L?(\d+))?)?\]")
_LOOKS_LIKE_ID = re.compile(r"\d{4}-\d{2}-\d{2}-[\w.-]*[0-9a-f]{8}")
_FALLBACK_HITS = 8


@dataclass
class RecallResult:
    """What recall returns: the summary, its sources, its size and how it was produced."""

    summary: str
    sources: list[dict[str, Any]] = field(default_factory=list)
    tokens: int = 0
    fallback: bool = False
    reason: str | None = None
    usage: dict[str, Any] = field(default_factory=lambda: usage_dict(None))
    elapsed_s: float = 0.0
    model: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``summary, sources, tokens, fallback, reason, usage, elapsed_s, model``."""
        return asdict(self)


def recall_prompt(message: str, budget: int) -> str:
    """The worker's user prompt (the offline model parses the same two labels); the message escaped as capture's
    transcript is (:func:`agent_memory.agents.fence.escape`)."""
    return (
        f"Budget: {budget} tokens. Summarise what memory knows that is relevant to the message below, "
        f"with citations; reply {NO_RELEVANT_MEMORY} if nothing is.\nMessage:\n{escape(message.strip())}"
    )


def select_prompt(message: str) -> str:
    """The worker's user prompt in select mode (the model picks records; the worker writes the summary)."""
    return f"Find the records in memory that answer the message below.\nMessage:\n{escape(message.strip())}"


def parse_citations(summary: str, known_ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """``[{id, line_start, line_end}]`` for each distinct citation, keeping only ``known_ids`` when given.

    ``[id:L12-L14]``, ``[id:L12]`` and, for a known id, a bare ``[id]`` (lines ``None``) are recognised.
    """
    known = set(known_ids) if known_ids is not None else None
    out: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    for m in _CITATION.finditer(summary):
        rid, lo, hi = m.group(1), m.group(2), m.group(3)
        if (known is not None and rid not in known) or (lo is None and known is None):
            continue
        start = int(lo) if lo else None
        end = int(hi) if hi else start
        if start is not None and end is not None and end < start:
            start, end = end, start
        key = (rid, start, end)
        if key not in seen:
            seen.add(key)
            out.append({"id": rid, "line_start": start, "line_end": end})
    return out


def _seen_ids(calls: list[ToolCallRecord]) -> set[str]:
    ids: set[str] = set()
    for call in calls:
        result = call.result if isinstance(call.result, dict) else {}
        if "id" in result:
            ids.add(str(result["id"]))
        sessions = [s for s in result.get("sessions") or [] if isinstance(s, dict)]  # memory_search_sessions
        messages = [m for s in sessions for m in s.get("messages") or []]
        for item in (result.get("hits") or []) + (result.get("records") or []) + (result.get("episodes") or []) + messages:
            if isinstance(item, dict) and "id" in item:
                ids.add(str(item["id"]))
    return ids


def _curated_ids(calls: list[ToolCallRecord]) -> set[str]:
    """Ids the memory tools marked as curated lines (``"curated": true``), so recall's sources say so too."""
    out: set[str] = set()
    for call in calls:
        result = call.result if isinstance(call.result, dict) else {}
        for item in (result.get("hits") or []) + (result.get("records") or []):
            if isinstance(item, dict) and item.get("curated") is True:
                out.add(str(item.get("id")))
    return out


def _mark_curated(sources: list[dict[str, Any]], curated: set[str]) -> list[dict[str, Any]]:
    return [{**s, "curated": True} if s.get("id") in curated else s for s in sources]


def ungrounded_citations(summary: str, known_ids: set[str]) -> list[str]:
    """Ids cited in ``summary`` (``[id:L…]``, or a bare ``[id]`` that looks like a record id) that no tool returned."""
    bad: list[str] = []
    for m in _CITATION.finditer(summary):
        rid = m.group(1)
        if rid not in known_ids and (m.group(2) is not None or _LOOKS_LIKE_ID.fullmatch(rid)) and rid not in bad:
            bad.append(rid)
    return bad


def _finish(output: Any, budget: int, known_ids: set[str], extra_used: bool = False) -> tuple[str, list[dict[str, Any]]]:
    text = output.strip() if isinstance(output, str) else ""
    if not text:
        raise UnusableOutput("the recall model returned an empty summary")
    if text.strip(" .`'\"").upper() in _EMPTY_REPLIES:
        return "", []
    bad = ungrounded_citations(text, known_ids)
    if bad:
        raise UnusableOutput(f"the summary cites record(s) no memory tool returned: {', '.join(bad[:3])}")
    summary = trim_to_tokens(text, budget)
    if not summary:
        raise UnusableOutput("the summary could not be fitted to the budget")
    sources = parse_citations(summary, known_ids)
    if not sources and not extra_used:  # an answer from the user's extra tools alone cites no record
        raise UnusableOutput("the summary cites no record it read")
    return summary, sources


def _finish_selected(
    output: Any, state: SelectState, budget: int, known_ids: set[str], usage: RunUsage, extra_used: bool = False
) -> tuple[str, list[dict[str, Any]]]:
    """The summary of the records a select reply picked: one line each, their own text and citation, within ``budget``.

    With no record shown (no hit, or only the user's extra tools answered) the model was asked for a summary as in the
    summary mode, and its reply is checked the same way.
    """
    if not state.shown:
        return _finish(output, budget, known_ids, extra_used)
    text = output.strip() if isinstance(output, str) else ""
    picked = parse_selection(text, state.shown)
    for key, n in (("selections_ignored", picked.ignored), ("selection_fixes", int(picked.from_citations))):
        if n:
            usage.details[key] = usage.details.get(key, 0) + n
    chosen = [state.shown[n - 1] for n in picked.numbers if state.shown[n - 1].id in known_ids]
    if not chosen:
        if picked.none:  # a judgement that nothing answers
            return "", []
        raise UnusableOutput(f"the select reply picked no record: {' '.join(text.split())[:80]!r}")
    lines: list[str] = []
    sources: list[dict[str, Any]] = []
    for choice in chosen:
        line = _cited_line(choice.text or choice.title, choice)
        if count_tokens("\n".join([*lines, line])) > budget:
            continue
        lines.append(line)
        sources.append(
            {"id": choice.id, "line_start": choice.line_start, "line_end": choice.line_end, **({"curated": True} if choice.curated else {})}
        )
    return "\n".join(lines), sources


def _cited_line(text: str, choice: Choice) -> str:
    lines = f":L{choice.line_start}-L{choice.line_end}" if choice.line_start is not None and choice.line_end is not None else ""
    return f"- {' '.join(text.split())} [{choice.id}{lines}]"


async def lexical_summary(
    backend: MemoryBackend,
    message: str,
    budget: int,
    caller: Caller,
) -> tuple[str, list[dict[str, Any]]]:
    """Deterministic summary: the top search hits' snippets, one cited line each, within ``budget`` tokens."""
    hits = (await backend.search(message, caller, limit=_FALLBACK_HITS)).hits
    lines: list[str] = []
    sources: list[dict[str, Any]] = []
    used = 0
    for hit in hits:
        line = f"- {' '.join(hit.snippet.split())} [{hit.id}:L{hit.line_start}-L{hit.line_end}]"
        cost = _tokens(line) + 1
        if used + cost > budget:
            continue
        used += cost
        lines.append(line)
        sources.append({"id": hit.id, "line_start": hit.line_start, "line_end": hit.line_end, **({"curated": True} if hit.curated else {})})
    summary = "\n".join(lines)
    while lines and _tokens(summary) > budget:  # token counts are not quite additive across lines
        lines.pop()
        sources.pop()
        summary = "\n".join(lines)
    return summary, sources


async def shortest_answer(
    backend: MemoryBackend, message: str, budget: int, caller: Caller
) -> tuple[str, list[dict[str, Any]], int] | None:
    """When ``budget`` is below one cited line of the best hit: that hit's title (else snippet, else id) cut to fit,
    its source, and the tokens one cited line needs. None when there is no hit or its line fits."""
    hits = (await backend.search(message, caller, limit=1)).hits
    if not hits:
        return None
    hit = hits[0]
    needed = _tokens(f"- {' '.join(hit.snippet.split())} [{hit.id}:L{hit.line_start}-L{hit.line_end}]")
    if needed <= budget:
        return None
    text = ""
    for candidate in (hit.title, " ".join(hit.snippet.split()), hit.id):
        text = await asyncio.to_thread(trim_to_tokens, candidate, budget) if candidate else ""
        if text and text != "…":
            break
    return text, [{"id": hit.id, "line_start": hit.line_start, "line_end": hit.line_end}], needed


def _too_small(budget: int, needed: int) -> str:
    return (
        f"summary_tokens={budget} is below one cited line ({needed} tokens): the best hit's title (or snippet) "
        "cut to fit, its record in sources"
    )


def _tokens(text: str) -> int:
    """Exact when the tokenizer is loaded; else a safe over-estimate (loading it could wait on another import)."""
    if get_counter.cache_info().currsize:
        return count_tokens(text)
    return math.ceil(len(text.encode("utf-8")) / 3)


def _budget(summary_tokens: Any, profile_tokens: int | None) -> int:
    value = (profile_tokens or DEFAULT_SUMMARY_TOKENS) if summary_tokens is None else summary_tokens
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return DEFAULT_SUMMARY_TOKENS


async def run_recall(
    backend: MemoryBackend,
    message: str,
    *,
    caller: Caller,
    worker: "WorkerProfile | Callable[[], WorkerProfile]",
    summary_tokens: int | None = None,
    timeout_s: float | None = None,
) -> RecallResult:
    """Run the recall worker for ``message``; on any failure return the flagged lexical fallback. Never raises.

    ``worker`` is the recall profile (or a loader for it); ``summary_tokens`` overrides its budget
    (default 400 tokens); ``timeout_s`` shortens its ``timeout_s`` for this call.
    """
    started = time.perf_counter()
    usage = RunUsage()
    budget = _budget(summary_tokens, None)
    label: str | None = None
    limit: float | None = None
    try:
        profile = resolve_worker(worker)
        label = profile.model_label
        limit = profile.timeout_s if timeout_s is None else min(timeout_s, profile.timeout_s)
        budget = _budget(summary_tokens, profile.summary_tokens)
        if not isinstance(message, str) or not message.strip() or budget == 0:
            return RecallResult("", model=label, elapsed_s=time.perf_counter() - started)
        toolset = bound_toolset(backend, profile.tools, caller, wrapper=RecordingToolset)
        if profile.selects:  # the model picks numbered records; the summary is written here from their text
            state = SelectState(message)
            token = SELECTING.set(state)  # the run's task copies this context: its model wrapper shares ``state``
            try:
                output = await run_worker(profile, select_prompt(message), toolset, usage, name="agent_memory_recall", timeout_s=limit)
            finally:
                SELECTING.reset(token)
            summary, sources = await asyncio.to_thread(
                _finish_selected, output, state, budget, _seen_ids(toolset.calls), usage, bool(toolset.extra_calls)
            )
        else:
            output = await run_worker(profile, recall_prompt(message, budget), toolset, usage, name="agent_memory_recall", timeout_s=limit)
            summary, sources = await asyncio.to_thread(_finish, output, budget, _seen_ids(toolset.calls), bool(toolset.extra_calls))
        tight = None if summary else await shortest_answer(backend, message, budget, caller)
        if tight is not None:  # nothing fitted the budget: say so, with the shortest honest answer
            summary, sources, needed = tight
            return RecallResult(
                summary,
                sources,
                _tokens(summary),
                fallback=True,
                reason=_too_small(budget, needed),
                usage=usage_dict(usage),
                model=label,
                elapsed_s=time.perf_counter() - started,
            )
        sources = _mark_curated(sources, _curated_ids(toolset.calls))
        return RecallResult(
            summary, sources, count_tokens(summary), usage=usage_dict(usage), model=label, elapsed_s=time.perf_counter() - started
        )
    except Exception as exc:  # fail open: every failure becomes a flagged lexical fallback
        reason = describe_error(exc, limit)
    summary, sources = "", []
    if isinstance(message, str) and message.strip() and budget:
        try:
            summary, sources = await lexical_summary(backend, message, budget, caller)
            tight = None if summary else await shortest_answer(backend, message, budget, caller)
            if tight is not None:
                summary, sources, needed = tight
                reason += f"; {_too_small(budget, needed)}"
        except Exception as exc:
            reason += f"; lexical fallback failed too: {describe_error(exc)}"
    return RecallResult(
        summary,
        sources,
        _tokens(summary),
        fallback=True,
        reason=reason,
        usage=usage_dict(usage),
        model=label,
        elapsed_s=time.perf_counter() - started,
    )
