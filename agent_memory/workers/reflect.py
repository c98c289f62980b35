"""The reflect worker: a synthesised answer to a question, citing the records it rests on.

A pydantic-ai ``Agent`` with read-only memory tools (search/get/list, narrowed by the profile's ``[reflect]``
table), bound to the caller, under the profile's limits. Its answer must be **grounded**: every citation
(``[record-id:L12-L14]``) must name a record a tool returned to it, and it must cite at least one. An ungrounded
answer, a failure or a timeout falls back to an extractive answer (the best search hits' lines, cited), flagged
``fallback=True`` with the reason. ``confidence`` is the share of the question's content words found in the cited
records (0 when nothing is cited). Never raises into the caller.

(Session messages join the sources when the sessions layer offers a read tool for them; today: records.)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai.usage import RunUsage

from .._text import STOP_WORDS, default_tokenizer, term_key
from ..backend import Caller, MemoryBackend
from ..profiles import DEFAULT_SUMMARY_TOKENS
from . import (
    RecordingToolset,
    UnusableOutput,
    bound_toolset,
    describe_error,
    resolve_worker,
    run_worker,
    trim_to_tokens,
    usage_dict,
)
from .recall import _EMPTY_REPLIES, _seen_ids, lexical_summary, parse_citations, ungrounded_citations

if TYPE_CHECKING:  # pragma: no cover
    from ..profiles import WorkerProfile

__all__ = ["Reflection", "run_reflect", "reflect_prompt", "confidence_of"]

_QUESTION_WORDS = frozenset("what when where who whom whose which why how does did do is are was were can could".split())


@dataclass
class Reflection:
    """An answer, the records it cites, how well they cover the question, and how it was produced."""

    answer: str
    sources: list[dict[str, Any]] = field(default_factory=list)
    confidence: float = 0.0
    fallback: bool = False
    reason: str | None = None
    usage: dict[str, Any] = field(default_factory=lambda: usage_dict(None))
    elapsed_s: float = 0.0
    model: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``answer, sources, confidence, fallback, reason, usage, elapsed_s, model``."""
        return asdict(self)


def reflect_prompt(question: str, budget: int) -> str:
    """The worker's user prompt (the offline model reads the same ``Budget:``/``Message:`` labels as recall)."""
    return (f"Budget: {budget} tokens. Answer the question below from memory, citing every record you use; "
            f"reply NO_RELEVANT_MEMORY if memory does not answer it.\nMessage:\n{question.strip()}")


def _terms(text: str) -> set[str]:
    return {term_key(w) for w in default_tokenizer(text) if w not in STOP_WORDS and w not in _QUESTION_WORDS}


async def confidence_of(backend: MemoryBackend, question: str, sources: list[dict[str, Any]], caller: Caller) -> float:
    """Share of the question's content words present in the cited records (0..1)."""
    want = _terms(question)
    if not sources or not want:
        return 0.0
    found: set[str] = set()
    for rid in dict.fromkeys(s["id"] for s in sources):
        try:
            rec = await backend.get(rid, caller)
        except Exception:  # a record gone since: it supports nothing
            continue
        found |= _terms(rec.content) & want
    return round(len(found) / len(want), 2)


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


async def run_reflect(backend: MemoryBackend, question: str, *, caller: Caller,
                      worker: "WorkerProfile | Callable[[], WorkerProfile]", answer_tokens: int | None = None,
                      timeout_s: float | None = None) -> Reflection:
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
        output = await run_worker(profile, reflect_prompt(question, budget), toolset, usage, name="agent_memory_reflect",
                                  timeout_s=limit)
        answer, sources = _grounded(output, budget, _seen_ids(toolset.calls))
        return Reflection(answer, sources, await confidence_of(backend, question, sources, caller), usage=usage_dict(usage),
                          model=label, elapsed_s=time.perf_counter() - started)
    except Exception as exc:  # fail open: an extractive answer, flagged
        reason = describe_error(exc, limit)
    answer, sources = "", []
    try:
        answer, sources = await lexical_summary(backend, question, budget, caller)
        confidence = await confidence_of(backend, question, sources, caller)
    except Exception as exc:
        reason += f"; extractive fallback failed too: {describe_error(exc)}"
        confidence = 0.0
    return Reflection(answer, sources, confidence, fallback=True, reason=reason, usage=usage_dict(usage), model=label,
                      elapsed_s=time.perf_counter() - started)

