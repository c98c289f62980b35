"""The reflect worker: a synthesised answer to a question, citing the records it rests on.

A pydantic-ai ``Agent`` with read-only memory tools (search/get/list, narrowed by the profile's ``[reflect]``
table), bound to the caller, under the profile's limits. Its answer must be **grounded**: every citation
(``[record-id:L12-L14]``) must name a record a tool returned to it, and it must cite at least one. An ungrounded
answer, a failure or a timeout falls back to an extractive answer (the best search hits' lines, cited), flagged
``fallback=True`` with the reason. ``confidence`` is the share of the question's content words found in the cited
records (0 when nothing is cited). Never raises into the caller.

**Conflicts.** When cited records disagree — versions of one statement with a value changed (the consolidation
lint's rule, :func:`agent_memory.consolidate.similar.contradictions`), or one ``memory_key`` with two values — the
reflection lists them in ``conflicts`` (newest first), the answer opens with a line naming the newest record as
the one preferred, and ``confidence`` is at most :data:`CONFLICT_CONFIDENCE`: memory that contradicts itself
never answers with certainty. Superseded versions are history, never a conflict. "Newest" is the record whose fact
started last (``valid_from``, else ``happened_at``, else when it was written), then the last updated.

(Session messages join the sources when the sessions layer offers a read tool for them; today: records.)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai.usage import RunUsage

from agent_memory.agents.fence import escape
from agent_memory.agents.profiles import DEFAULT_SUMMARY_TOKENS
from agent_memory.agents.workers import (
    RecordingToolset,
    UnusableOutput,
    bound_toolset,
    describe_error,
    resolve_worker,
    run_worker,
    trim_to_tokens,
    usage_dict,
)
from agent_memory.agents.workers.recall import _EMPTY_REPLIES, _seen_ids, lexical_summary, parse_citations, ungrounded_citations
from agent_memory.backends.base import Caller, MemoryBackend
from agent_memory.consolidate import similar
from agent_memory.model.supersession import start_of
from agent_memory.search.text import STOP_WORDS, default_tokenizer, term_key

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.agents.profiles import WorkerProfile
    from agent_memory.model.records import MemoryRecord

__all__ = ["Reflection", "run_reflect", "reflect_prompt", "confidence_of", "conflicts_of", "CONFLICT_CONFIDENCE"]

CONFLICT_CONFIDENCE = 0.5  # the most confidence an answer resting on records that disagree can have

_QUESTION_WORDS = frozenset("what when where who whom whose which why how does did do is are was were can could".split())


@dataclass
class Reflection:
    """An answer, the records it cites, how well they cover the question, and how it was produced."""

    answer: str
    sources: list[dict[str, Any]] = field(default_factory=list)
    confidence: float = 0.0
    conflicts: list[dict[str, Any]] = field(default_factory=list)  # cited records that disagree, newest first
    fallback: bool = False
    reason: str | None = None
    usage: dict[str, Any] = field(default_factory=lambda: usage_dict(None))
    elapsed_s: float = 0.0
    model: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``answer, sources, confidence, conflicts, fallback, reason, usage, elapsed_s, model``."""
        return asdict(self)


def reflect_prompt(question: str, budget: int) -> str:
    """The worker's user prompt (the offline model reads the same ``Budget:``/``Message:`` labels as recall); the
    question escaped as capture's transcript is (:func:`agent_memory.agents.fence.escape`)."""
    return (
        f"Budget: {budget} tokens. Answer the question below from memory, citing every record you use; "
        f"reply NO_RELEVANT_MEMORY if memory does not answer it.\nMessage:\n{escape(question.strip())}"
    )


def _terms(text: str) -> set[str]:
    return {term_key(w) for w in default_tokenizer(text) if w not in STOP_WORDS and w not in _QUESTION_WORDS}


async def _cited(backend: MemoryBackend, sources: list[dict[str, Any]], caller: Caller) -> list[MemoryRecord]:
    out: list[MemoryRecord] = []
    for rid in dict.fromkeys(s["id"] for s in sources):
        try:
            out.append(await backend.get(rid, caller))
        except Exception:  # a record gone since: it supports nothing
            continue
    return out


def _coverage(question: str, records: list[MemoryRecord]) -> float:
    want = _terms(question)
    if not records or not want:
        return 0.0
    found: set[str] = set()
    for rec in records:
        found |= _terms(rec.content) & want
    return round(len(found) / len(want), 2)


async def confidence_of(backend: MemoryBackend, question: str, sources: list[dict[str, Any]], caller: Caller) -> float:
    """Share of the question's content words present in the cited records (0..1); at most
    :data:`CONFLICT_CONFIDENCE` when the cited records disagree."""
    records = await _cited(backend, sources, caller)
    score = _coverage(question, records)
    return min(score, CONFLICT_CONFIDENCE) if conflicts_of(records) else score


def _newest_first(rec: MemoryRecord) -> tuple[str, str, str]:
    return (start_of(rec), rec.updated or "", rec.created or "")


def conflicts_of(records: list[MemoryRecord]) -> list[dict[str, Any]]:
    """Groups of ``records`` that disagree: ``{"ids": [newest first], "newest": id, "differ": [words]}``.

    Versions of one statement with a value changed, or current records of one ``memory_key`` with different
    texts; superseded versions are history and never take part."""
    current = [r for r in records if not r.superseded_by]
    groups: list[tuple[list[int], list[str]]] = list(similar.contradictions([r.content for r in current]))
    keyed: dict[str, list[int]] = {}
    for i, rec in enumerate(current):
        if rec.memory_key:
            keyed.setdefault(rec.memory_key, []).append(i)
    for idx in keyed.values():
        if len({current[i].content_hash for i in idx}) > 1 and not any(set(idx) <= set(g[0]) for g in groups):
            a, b = current[idx[0]].content, current[idx[1]].content
            groups.append((idx, similar.surface(similar.conflicting(similar.words(a), similar.words(b)), a, b)))
    out: list[dict[str, Any]] = []
    for members, differ in groups:
        ordered = sorted((current[i] for i in members), key=_newest_first, reverse=True)
        out.append({"ids": [r.id for r in ordered], "newest": ordered[0].id, "differ": list(differ)})
    return out


def _flag_conflicts(answer: str, sources: list[dict[str, Any]], conflicts: list[dict[str, Any]]) -> str:
    """The answer opened by one line per conflict naming the newest record as the one preferred (cited as the
    answer cites it, so the line adds no source); lines that each cite one record of a conflict are put newest
    first."""
    if not conflicts:
        return answer

    def cite(rid: str) -> str:
        src = next((s for s in sources if s["id"] == rid), None)
        if src is None or src.get("line_start") is None:
            return f"[{rid}]"
        return f"[{rid}:L{src['line_start']}-L{src['line_end']}]"

    body = answer.split("\n")
    for c in conflicts:  # lines that cite one record of a conflict each: the newest record's line first
        rank = {rid: n for n, rid in enumerate(c["ids"])}
        slots = [k for k, line in enumerate(body) if len(ids := {x["id"] for x in parse_citations(line)}) == 1 and next(iter(ids)) in rank]
        ordered = sorted((body[k] for k in slots), key=lambda line: rank[parse_citations(line)[0]["id"]])
        for k, line in zip(slots, ordered, strict=True):
            body[k] = line
    lines = []
    for c in conflicts:
        differ = f" ({', '.join(c['differ'][:6])})" if c["differ"] else ""
        older = ", ".join(cite(i) for i in c["ids"][1:])
        lines.append(f"Conflict: these records disagree{differ}; the newest, {cite(c['newest'])}, is preferred over {older}.")
    return "\n".join([*lines, *body])


def _grounded(output: Any, budget: int, known: set[str]) -> tuple[str, list[dict[str, Any]]]:
    text = output.strip() if isinstance(output, str) else ""
    if not text:
        raise UnusableOutput("the reflect model returned an empty answer")
    if text.strip(" .`'\"").upper() in _EMPTY_REPLIES:
        return "", []
    bad = ungrounded_citations(text, known)
    if bad:
        raise UnusableOutput(f"ungrounded: the answer cites record(s) no memory tool returned: {', '.join(bad[:3])}")
    answer = trim_to_tokens(text, budget)
    sources = parse_citations(answer, known)
    if not sources:
        raise UnusableOutput("ungrounded: the answer cites no record it read")
    return answer, sources


async def run_reflect(
    backend: MemoryBackend,
    question: str,
    *,
    caller: Caller,
    worker: "WorkerProfile | Callable[[], WorkerProfile]",
    answer_tokens: int | None = None,
    timeout_s: float | None = None,
) -> Reflection:
    """Run the reflect worker for ``question``; on any failure, the flagged extractive answer. Never raises."""
    started = time.perf_counter()
    usage = RunUsage()
    budget = answer_tokens or DEFAULT_SUMMARY_TOKENS
    label: str | None = None
    limit: float | None = None
    if not isinstance(question, str) or not question.strip():
        return Reflection("", reason="empty question")
    try:
        profile = resolve_worker(worker)
        label = profile.model_label
        limit = profile.timeout_s if timeout_s is None else min(timeout_s, profile.timeout_s)
        budget = answer_tokens or profile.summary_tokens or DEFAULT_SUMMARY_TOKENS
        toolset = bound_toolset(backend, profile.tools, caller, wrapper=RecordingToolset)
        output = await run_worker(profile, reflect_prompt(question, budget), toolset, usage, name="agent_memory_reflect", timeout_s=limit)
        answer, sources = _grounded(output, budget, _seen_ids(toolset.calls))
        answer, confidence, conflicts = await _assess(backend, question, answer, sources, caller)
        return Reflection(
            answer, sources, confidence, conflicts, usage=usage_dict(usage), model=label, elapsed_s=time.perf_counter() - started
        )
    except Exception as exc:  # fail open: an extractive answer, flagged
        reason = describe_error(exc, limit)
    answer, sources = "", []
    conflicts = []
    try:
        answer, sources = await lexical_summary(backend, question, budget, caller)
        answer, confidence, conflicts = await _assess(backend, question, answer, sources, caller)
    except Exception as exc:
        reason += f"; extractive fallback failed too: {describe_error(exc)}"
        confidence = 0.0
    return Reflection(
        answer,
        sources,
        confidence,
        conflicts,
        fallback=True,
        reason=reason,
        usage=usage_dict(usage),
        model=label,
        elapsed_s=time.perf_counter() - started,
    )


async def _assess(
    backend: MemoryBackend, question: str, answer: str, sources: list[dict[str, Any]], caller: Caller
) -> tuple[str, float, list[dict[str, Any]]]:
    """The answer (conflicts flagged), its confidence and the conflicts among the cited records."""
    records = await _cited(backend, sources, caller)
    conflicts = conflicts_of(records)
    confidence = _coverage(question, records)
    if conflicts:
        confidence = min(confidence, CONFLICT_CONFIDENCE)
    return _flag_conflicts(answer, sources, conflicts), confidence, conflicts
