"""LoCoMo question answering, the way peers report it: answer each question from what recall returns, then ask a
judge model to grade the answer against the gold one.

Per question: the recall worker (the run's profile) summarises what memory knows at the run's budget; the *answer
model* answers from that summary alone; the *judge model* grades the answer against LoCoMo's gold answer with a
graded prompt: 1 (correct), 0.5 (partly: right but incomplete, or the right fact with a wrong detail) or 0. A
judge reply with no grade counts 0 and is counted in ``qa_unjudged``. The score ``qa`` is the mean grade. The report
names the three models: a figure made with other models (peers' papers use GPT-4-class answerers and judges) is a
different measurement, never set beside this one.

Models are pydantic-ai model strings (``openai-chat:NAME`` with ``model_url`` for an OpenAI-compatible server,
``local`` for the server at ``AGENT_MEMORY_MODEL_URL``) or ``Model`` instances (tests pass a ``FunctionModel``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pydantic_ai.models import Model

__all__ = ["ANSWER_PROMPT", "JUDGE_PROMPT", "QAModels", "answer_and_grade", "parse_grade", "qa_model"]

ANSWER_PROMPT = """\
Answer the question using only the memory notes below. Reply with a short answer (a few words or one sentence).
If the notes do not contain the answer, reply "unknown".
Memory notes:
{memory}
Question: {question}
Answer:"""

JUDGE_PROMPT = """\
You grade an answer to a question about a past conversation against the gold answer.
Question: {question}
Gold answer: {gold}
Answer to grade: {answer}
Reply with one number: 1 if the answer states the gold answer's fact (other wording is fine), 0.5 if it is
partly right (incomplete, or the right fact with a wrong detail such as a date), 0 if it is wrong, says it does
not know, or is about something else.
Grade:"""

_GRADE = re.compile(r"(?<![\d.])(1(?:\.0+)?|0?\.5|0(?:\.0+)?)(?![\d.])")


def parse_grade(text: str) -> float | None:
    """The first grade (1, 0.5 or 0) in a judge's reply; None when it holds none."""
    found = _GRADE.search(text or "")
    if not found:
        word = (text or "").strip().lower()
        return 1.0 if word.startswith("correct") else 0.0 if word.startswith(("wrong", "incorrect")) else None
    return float(found.group(1))


def qa_model(spec: "str | Model", model_url: str | None = None) -> "Model":
    """A pydantic-ai model for ``spec`` (see the module doc); a :class:`~agent_memory.errors.ProfileError` if unusable."""
    if not isinstance(spec, str):
        return spec
    from agent_memory.agents.profiles import WorkerProfile

    if spec == "local":
        return WorkerProfile(role="summarize", model="openai-chat:", base_url_env="AGENT_MEMORY_MODEL_URL", timeout_s=600).build_model()
    return WorkerProfile(
        role="summarize", model=spec, api_base=model_url if spec.startswith("openai-chat:") else None, timeout_s=600
    ).build_model()


@dataclass
class QAModels:
    """The answer and judge models of a run, with the names the report gives them."""

    answer: Any
    judge: Any
    answer_name: str
    judge_name: str
    max_tokens: int = 60


async def _ask(model: Any, prompt: str, max_tokens: int) -> str:
    from pydantic_ai import Agent

    agent: Agent[None, str] = Agent(model, output_type=str, defer_model_check=True)
    result = await agent.run(prompt, model_settings={"temperature": 0.0, "max_tokens": max_tokens})
    return str(result.output).strip()


async def answer_and_grade(models: QAModels, question: str, gold: Any, memory: str) -> dict[str, Any]:
    """``{answer, grade, judged}`` for one question; a model error is an answer of ``""`` graded 0 (never raised)."""
    try:
        answer = await _ask(models.answer, ANSWER_PROMPT.format(memory=memory.strip() or "(nothing)", question=question), models.max_tokens)
    except Exception as exc:  # a failed answer scores 0; the run goes on
        return {"answer": "", "grade": 0.0, "judged": False, "error": f"answer: {type(exc).__name__}: {exc}"[:300]}
    try:
        verdict = await _ask(models.judge, JUDGE_PROMPT.format(question=question, gold=_gold(gold), answer=answer or "(empty)"), 8)
    except Exception as exc:
        return {"answer": answer, "grade": 0.0, "judged": False, "error": f"judge: {type(exc).__name__}: {exc}"[:300]}
    grade = parse_grade(verdict)
    return {"answer": answer, "grade": grade or 0.0, "judged": grade is not None, "verdict": verdict[:80]}


def _gold(gold: Any) -> str:
    if isinstance(gold, Mapping):
        return str(gold.get("answer") or gold)
    return str(gold)
