"""The rule-based capture against a hand-written corpus: hits with their expected key and content,
and sentences that must never be captured. Run this file directly to print the figures:
``python tests/test_offline_capture_corpus.py``."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agent_memory.agents.models.statements import extract_statements

CORPUS = json.loads((Path(__file__).parent / "fixtures" / "capture_corpus.json").read_text(encoding="utf-8"))


def transcript(text: str) -> str:
    """A corpus text as a transcript: unlabelled text is the user's message."""
    return text if re.match(r"^(?:\[|[A-Za-z]+:\s)", text) else f"user: {text}"


@dataclass
class Score:
    expected: int = 0
    found: int = 0
    produced: int = 0
    correct: int = 0
    clean_misses: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.found / self.expected

    @property
    def precision(self) -> float:
        return self.correct / self.produced if self.produced else 1.0

    @property
    def must_not_precision(self) -> float:
        return self.clean_misses / len(CORPUS["misses"])


def score() -> Score:
    s = Score()
    for case in CORPUS["hits"]:
        expected = {(key, content) for key, content in case["expect"]}
        got = [(st.memory_key, st.content) for st in extract_statements(transcript(case["text"]))]
        s.expected += len(expected)
        s.found += len(expected & set(got))
        s.produced += len(got)
        s.correct += sum(1 for g in got if g in expected)
        if set(got) != expected:
            s.problems.append(f"hit  {case['text']!r}: got {got}, expected {sorted(expected, key=str)}")
    for case in CORPUS["misses"]:
        got = [(st.memory_key, st.content) for st in extract_statements(transcript(case["text"]))]
        s.produced += len(got)
        s.clean_misses += not got
        if got:
            s.problems.append(f"miss {case['text']!r} ({case['why']}): captured {got}")
    return s


def report(s: Score) -> str:
    return (
        f"capture corpus: {len(CORPUS['hits'])} hit sentences ({s.expected} statements), "
        f"{len(CORPUS['misses'])} must-not sentences\n"
        f"recall {s.recall:.1%} ({s.found}/{s.expected}); precision {s.precision:.1%} ({s.correct}/{s.produced}); "
        f"must-not-capture precision {s.must_not_precision:.1%} ({s.clean_misses}/{len(CORPUS['misses'])})"
        + "".join(f"\n  {p}" for p in s.problems)
    )


def test_corpus_is_big_enough_and_well_formed():
    assert len(CORPUS["hits"]) + len(CORPUS["misses"]) >= 60
    assert len(CORPUS["hits"]) >= 40 and len(CORPUS["misses"]) >= 30
    texts = [c["text"] for c in CORPUS["hits"] + CORPUS["misses"]]
    assert len(texts) == len(set(texts)), "duplicate sentences"
    for case in CORPUS["hits"]:
        assert case["expect"], case["text"]  # a hit expects at least one statement
        keys = [k for k, _ in case["expect"] if k]
        assert len(keys) == len(set(keys)), case["text"]  # one fact per key


def test_precision_and_recall(capsys: pytest.CaptureFixture[str]):
    s = score()
    with capsys.disabled():
        print("\n" + report(s))
    assert s.must_not_precision == 1.0, report(s)
    assert s.recall >= 0.90, report(s)
    assert s.precision >= 0.97, report(s)


def test_one_conversation_keeps_the_latest_statement_per_key_and_loses_no_other():
    """All undated hit sentences as one conversation: exactly the latest statement per key (or per unkeyed
    content) that the sentences give one by one; a later home replaces the earlier ones, allergies all stay."""
    cases = [c["text"] for c in CORPUS["hits"] if not c["text"].startswith(("[", "Date:"))]
    latest: dict[str, tuple[str | None, str]] = {}
    for text in cases:
        for st in extract_statements(transcript(text)):
            ident = st.memory_key or st.content.lower()
            latest.pop(ident, None)
            latest[ident] = (st.memory_key, st.content)
    together = [(st.memory_key, st.content) for st in extract_statements("\n".join(transcript(t) for t in cases))]
    assert together == list(latest.values())
    assert len({k for k, _ in together if k}) == len([k for k, _ in together if k])  # one statement per key
    assert [c for k, c in together if k == "user.home"] == ["User lives in Hamburg."]  # the last home said
    allergies = {k for k, _ in together if k and k.startswith("user.allergy.")}
    assert {"user.allergy.shellfish", "user.allergy.kiwi", "user.allergy.sesame"} <= allergies


if __name__ == "__main__":
    print(report(score()))
