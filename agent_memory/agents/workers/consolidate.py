"""The consolidate worker: a private agent that reviews the deterministic plan and archives what is redundant.

It sees only the partitions of the caller it is given (what that caller may read), and has the tools of the
profile's ``[consolidate]`` table: search/get/list, ``memory_remember`` (writes are marked
``source="consolidation"``) and ``memory_archive`` (moves a record to ``archive/`` with a reason; restorable).
It can never forget or purge. It may archive at most the run's share limit (``max_share`` of the records it
sees); further archive calls are refused. The offline profile's worker carries out the deterministic plan as
given. A model error or timeout never raises: the report says ``fallback`` with the reason, and what was
archived before the failure stays archived (restorable).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic_ai import ModelRetry
from pydantic_ai.toolsets import CombinedToolset, FunctionToolset
from pydantic_ai.usage import RunUsage

from agent_memory.agents.fence import escape
from agent_memory.agents.tools import CAPTURE, memory_toolset
from agent_memory.agents.workers import RecordingToolset, describe_error, resolve_worker, run_worker, usage_dict
from agent_memory.agents.workers.runner import staged_backend
from agent_memory.backends.base import Caller, MemoryBackend
from agent_memory.consolidate import Change, ConsolidationReport, archive_record, consolidate, store_of
from agent_memory.errors import AgentMemoryError

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.agents.profiles import WorkerProfile

__all__ = ["run_consolidate", "consolidate_prompt"]


def consolidate_prompt(report: ConsolidationReport) -> str:
    """The plan as the worker reads it: ``ARCHIVE <id> | <reason>`` lines within the limit, then the findings (stored
    text in a reason or a finding escaped: :func:`agent_memory.agents.fence.escape`)."""
    lines = [f"You may archive at most {report.limit} record(s) in this run.", "Plan:"]
    planned = [c for c in report.changes if c.status == "planned"][: report.limit]
    lines += [f"ARCHIVE {c.record_id} | {escape(c.reason)}" for c in planned] or ["(nothing planned)"]
    if report.findings:
        lines.append("Findings (review; do not act unless clearly right):")
        lines += [f"- {f.kind}: {', '.join(f.record_ids)}: {escape(f.detail)}" for f in report.findings[:50]]
    return "\n".join(lines)


def _archive_toolset(backend: MemoryBackend, caller: Caller, report: ConsolidationReport) -> FunctionToolset[Any]:
    store = store_of(backend)
    toolset: FunctionToolset[Any] = FunctionToolset(max_retries=2)
    reasons = {c.record_id: c for c in report.changes}
    taken = [0]  # archives done or under way: reserved before any await, so parallel calls cannot overshoot

    async def memory_archive(id: str, reason: str) -> dict[str, Any]:
        """Archive one memory record (it leaves search and listings; it is kept in archive/ and can be restored).

        Args:
            id: The record id.
            reason: Why it is redundant or obsolete (one short sentence).
        """
        if not isinstance(reason, str) or not reason.strip():
            raise ModelRetry("give a short reason")
        if taken[0] >= report.limit:
            raise ModelRetry(f"the archive limit of this run ({report.limit}) is reached; stop archiving")
        taken[0] += 1
        why = " ".join(reason.split())[:300]
        try:
            done = await asyncio.to_thread(archive_record, store, id, why, caller)
        except AgentMemoryError as exc:
            taken[0] -= 1
            raise ModelRetry(f"{type(exc).__name__}: {exc}") from None
        if not done:
            taken[0] -= 1
            raise ModelRetry(f"no record {id!r} you may see")
        planned = reasons.get(id)
        if planned is not None:
            planned.status = "applied"
        else:
            report.changes.append(Change("worker", id, why, status="applied"))
        return {"id": id, "archived": True}

    toolset.add_function(memory_archive, name="memory_archive")
    return toolset


async def run_consolidate(
    backend: MemoryBackend,
    *,
    caller: Caller,
    worker: "WorkerProfile | Callable[[], WorkerProfile]",
    max_share: float | None = None,
    dry_run: bool = False,
    **options: Any,
) -> ConsolidationReport:
    """Plan deterministically for what ``caller`` sees, then let the consolidate worker act on it (unless ``dry_run``).

    Raises only :class:`~agent_memory.consolidate.ConsolidationUnsupported` (not a files store) and invalid options;
    a worker failure is reported (``fallback``), never raised."""
    store = store_of(backend)
    report = await asyncio.to_thread(consolidate, store, dry_run=True, max_share=max_share, caller=caller, **options)
    if dry_run:
        return report
    report.dry_run = False
    report.stopped, report.stop_reason = False, None
    for change in report.changes:
        change.status = "planned"
    started = time.perf_counter()
    usage = RunUsage()
    limit: float | None = None
    try:
        profile = resolve_worker(worker)
        limit = profile.timeout_s
        tools = tuple(t for t in profile.tools if t in CAPTURE)
        parts: list[Any] = [memory_toolset(staged_backend(backend), tools, caller=caller, source="consolidation")]
        if "memory_archive" in profile.tools:
            parts.append(_archive_toolset(backend, caller, report))
        toolset = RecordingToolset(CombinedToolset(parts), caller=caller)
        await run_worker(profile, consolidate_prompt(report), toolset, usage, name="agent_memory_consolidate")
    except Exception as exc:  # fail open: report, never raise
        report.fallback, report.reason = True, describe_error(exc, limit)
    for change in report.changes:
        if change.status == "planned":
            change.status = "not_applied"
    report.usage = {**usage_dict(usage), "elapsed_s": round(time.perf_counter() - started, 3)}
    return report
