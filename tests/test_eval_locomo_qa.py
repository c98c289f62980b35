"""LoCoMo QA: answers from what recall returns, graded by a judge; the report names the models."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from test_eval_locomo import SAMPLE

from agent_memory.eval.locomo import evaluate, render_table
from agent_memory.eval.locomo_qa import QAModels, parse_grade


def prompt_of(messages: list[ModelMessage]) -> str:
    return "\n".join(str(p.content) for m in messages for p in getattr(m, "parts", []) if isinstance(p, UserPromptPart))


def answerer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Answers from the memory notes only: the kitten's name if the notes hold it, else 'unknown'."""
    prompt = prompt_of(messages)
    notes = prompt.split("Memory notes:", 1)[1].split("Question:", 1)[0]
    if "kitten" in prompt and "Pixel" in notes:
        return ModelResponse(parts=[TextPart("Pixel")])
    return ModelResponse(parts=[TextPart("unknown")])


def judge(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    prompt = prompt_of(messages)
    gold = re.search(r"Gold answer: (.*)", prompt).group(1)  # type: ignore[union-attr]
    answer = re.search(r"Answer to grade: (.*)", prompt).group(1)  # type: ignore[union-attr]
    return ModelResponse(parts=[TextPart("1" if answer.lower() in gold.lower() else "Grade: 0")])


@pytest.mark.parametrize(
    ("reply", "grade"),
    [("1", 1.0), ("Grade: 0.5", 0.5), (".5", 0.5), ("0", 0.0), ("1.0 - correct", 1.0), ("Correct", 1.0), ("maybe", None)],
)
def test_parse_grade(reply, grade):
    assert parse_grade(reply) == grade


def test_qa_answers_from_recall_and_names_the_models(tmp_path: Path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    models = QAModels(FunctionModel(answerer), FunctionModel(judge), "fake-answerer", "fake-judge")
    result = evaluate(path, ks=(5,), qa=models, limit_questions=2)
    assert result["questions"] == 2
    assert result["by_category"]["4"]["qa"] == 1.0  # the kitten: recall found Pixel, the answer is graded right
    assert result["by_category"]["1"]["qa"] == 0.0  # the cello: this answerer never knows
    assert result["overall"]["qa"] == 0.5 and result["qa_unjudged"] == 0
    assert result["models"] == {"recall": "offline (offline)", "answer": "fake-answerer", "judge": "fake-judge"}
    table = render_table(result)
    assert "answer fake-answerer, judge fake-judge" in table and "Not comparable" in table


def test_a_failing_answer_model_scores_zero_and_the_run_goes_on(tmp_path: Path):
    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("server down")

    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    result = evaluate(path, ks=(5,), qa=QAModels(FunctionModel(broken), FunctionModel(judge), "a", "j"), limit_questions=1)
    assert result["overall"]["qa"] == 0.0 and result["qa_unjudged"] == 1 and result["questions"] == 1
