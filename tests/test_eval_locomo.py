"""LoCoMo evaluation: evidence normalisation, paper-style recall, averaging, the JSON shape, coverage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_memory.eval import locomo
from agent_memory.eval.locomo import coverage_score, evaluate, evidence_recall, normalize_evidence, render_table

SHARED = Path(__file__).resolve().parents[2] / "shared" / "eval" / "locomo" / "locomo-dev.json"


def _turn(speaker: str, dia: str, text: str, **extra: object) -> dict:
    return {"speaker": speaker, "dia_id": dia, "text": text, **extra}


SAMPLE = {
    "sample_id": "conv-test",
    "conversation": {
        "speaker_a": "Ada",
        "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            _turn("Ada", "D1:1", "Hi Bo! I adopted a grey kitten named Pixel last week."),
            _turn("Bo", "D1:2", "Congrats! How is Pixel settling in?"),
            _turn(
                "Ada",
                "D1:3",
                "Great, she loves the cardboard castle I built.",
                blip_caption="a photo of a kitten in a cardboard box",
                img_url=["x"],
            ),
            _turn("Bo", "D1:4", "I started learning the cello in April."),
        ],
        "session_2_date_time": "10:00 am on 20 May, 2023",
        "session_2": [
            _turn("Bo", "D2:1", "My cello teacher says my bowing improved a lot."),
            _turn("Ada", "D2:2", "Pixel knocked my coffee over this morning."),
            _turn("Bo", "D2:3", "Ha! Cats and coffee never mix."),
        ],
        "session_3_date_time": "9:00 am on 1 June, 2023",  # a date without a session (as in conv-26)
    },
    "qa": [
        {"question": "What is the name of Ada's kitten?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
        {"question": "What instrument is Bo learning?", "answer": "cello", "evidence": ["D1:4; D2:1"], "category": 1},
        {"question": "What did Ada build for the kitten?", "answer": "a cardboard castle", "evidence": ["D:1:3"], "category": 4},
        {"question": "Would Bo enjoy a concert?", "answer": "likely", "evidence": [], "category": 3},
        {"question": "What did Pixel knock over?", "adversarial_answer": "tea", "evidence": ["D02:02", "D"], "category": 5},
    ],
}


@pytest.fixture
def sample_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo-tiny.json"
    path.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    return path


def test_normalize_evidence_repairs_malformed_ids():
    assert normalize_evidence(["D8:6; D9:17"]) == ["D8:6", "D9:17"]
    assert normalize_evidence(["D9:1 D4:4 D4:6"]) == ["D9:1", "D4:4", "D4:6"]
    assert normalize_evidence(["D:11:26"]) == ["D11:26"]
    assert normalize_evidence(["D30:05"]) == ["D30:5"]
    assert normalize_evidence(["D", "D3:7"]) == ["D3:7"]
    assert normalize_evidence(["D1:3", "D1:3"]) == ["D1:3"]
    assert normalize_evidence([]) == [] and normalize_evidence(None) == []
    assert normalize_evidence("D2:4") == ["D2:4"]


def test_evidence_recall_is_the_papers_fraction():
    assert evidence_recall(["D1:1", "D1:2"], ["D1:2", "D5:5"]) == 0.5
    assert evidence_recall(["D1:1"], []) == 0.0
    assert evidence_recall([], ["D1:1"]) == 1.0  # no evidence counts 1
    assert evidence_recall(["D1:1"], [None, "D1:1"]) == 1.0


def test_sessions_follow_session_lists_not_date_keys():
    sessions = locomo.sample_sessions(SAMPLE)
    assert [s.id for s in sessions] == ["session_1", "session_2"]
    assert sessions[0].turns[2].caption == "a photo of a kitten in a cardboard box"
    assert sessions[1].date == "10:00 am on 20 May, 2023"


def test_evaluate_returns_the_documented_json(sample_file):
    calls: list[int] = []
    result = evaluate(sample_file, ks=(1, 3), progress=calls.append)
    assert set(result) == {"questions", "overall", "by_category", "elapsed_s"}
    assert result["questions"] == 5
    assert list(result["overall"]) == ["recall@1", "recall@3"]
    assert list(result["by_category"]) == ["1", "3", "4", "5"]
    assert result["by_category"]["4"]["questions"] == 2
    assert all(0.0 <= v <= 1.0 for v in result["overall"].values())
    assert calls == [1] * 5
    json.dumps(result)  # one JSON document


def test_scores_and_per_category_averaging(sample_file):
    result = evaluate(sample_file, ks=(3, 7))
    cats = result["by_category"]
    assert cats["3"]["recall@3"] == 1.0  # empty evidence counts 1
    assert cats["4"]["recall@3"] == 1.0  # "D:1:3" normalised, the kitten questions found
    assert cats["1"]["recall@7"] == 1.0  # both halves of "D1:4; D2:1" found
    assert cats["5"]["recall@3"] == 1.0  # "D02:02" → D2:2; bare "D" ignored, not a miss
    per_question = [cats[c]["recall@3"] for c in cats for _ in range(cats[c]["questions"])]
    assert result["overall"]["recall@3"] == pytest.approx(sum(per_question) / 5, abs=1e-4)  # questions, not categories


def test_overall_averages_questions_not_categories(tmp_path):
    sample = json.loads(json.dumps(SAMPLE))
    sample["qa"] = [
        {"question": "What is the name of Ada's kitten?", "evidence": ["D1:1"], "category": 4},
        {"question": "What is the name of Ada's kitten?", "evidence": ["D1:1"], "category": 4},
        {"question": "What is the name of Ada's kitten?", "evidence": ["D1:1"], "category": 4},
        {"question": "zzz qqq", "evidence": ["D2:3"], "category": 2},
    ]
    path = tmp_path / "f.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    result = evaluate(path, ks=(1,))
    assert result["by_category"]["4"]["recall@1"] == 1.0
    assert result["by_category"]["2"]["recall@1"] == 0.0
    assert result["overall"]["recall@1"] == 0.75


def test_progress_gets_its_total_from_evaluate_before_the_first_question(sample_file):
    class Recorder:
        total = None

        def __init__(self) -> None:
            self.seen: list[tuple[int | None, int]] = []

        def __call__(self, n: int) -> None:
            self.seen.append((self.total, n))

    bar = Recorder()
    evaluate(sample_file, ks=(5,), progress=bar)
    assert bar.seen == [(5, 1)] * 5  # total known from the first tick on


def test_load_errors_name_the_file_and_line(tmp_path):
    from agent_memory.errors import InvalidInputError

    bad = tmp_path / "broken.json"
    bad.write_text('[\n  {"conversation": {},\n   "qa": [}\n]', encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"broken\.json: line 3 column"):
        locomo.load_samples(bad)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps([SAMPLE, {"sample_id": "conv-x", "qa": []}]), encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"wrong\.json: sample 1 \(conv-x\)"):
        locomo.load_samples(wrong)


def test_evaluate_keeps_roots_under_root_and_reuses_them(sample_file, tmp_path):
    keep = tmp_path / "roots"
    first = evaluate(sample_file, ks=(3,), root=keep)
    records = list((keep / "conv-test" / "records").glob("*.md"))
    assert len(records) == 7  # one record per dialog turn, kept
    again = evaluate(sample_file, ks=(3,), root=keep)
    assert again["overall"] == first["overall"]
    assert len(list((keep / "conv-test" / "records").glob("*.md"))) == 7  # idempotent: nothing doubled


def test_render_table_lists_categories_and_overall(sample_file):
    table = render_table(evaluate(sample_file, ks=(5,)))
    lines = table.splitlines()
    assert lines[0].split() == ["category", "questions", "recall@5"]
    assert any(line.startswith("4 single-hop") for line in lines)
    assert any(line.startswith("overall") and " 5 " in f" {line} " for line in lines)


def test_coverage_score_counts_cited_or_quoted_evidence():
    text_of = {"D1:1": "I adopted a grey kitten named Pixel last week."}
    assert coverage_score(["D1:1"], {"D1:1"}, "", text_of) == 1.0
    assert coverage_score(["D1:1", "D2:2"], set(), "- Ada: I adopted a grey kitten named Pixel last week. [x]", text_of) == 0.5
    assert coverage_score(["D1:1"], set(), "Ada has a cat.", text_of) == 0.0
    assert coverage_score([], set(), "", text_of) == 1.0


def test_budgeted_coverage_with_the_offline_recall_worker(sample_file):
    pytest.importorskip("agent_memory.agents.workers.recall")
    result = evaluate(sample_file, ks=(5,), budget=300)
    assert "coverage@300" in result["overall"]
    assert "coverage@300" in result["by_category"]["4"]
    assert 0.0 < result["overall"]["coverage@300"] <= 1.0


def test_bad_arguments_are_refused(sample_file, tmp_path):
    with pytest.raises(ValueError):
        evaluate(sample_file, ks=(0,))
    with pytest.raises(ValueError):
        evaluate(sample_file, budget=0)
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "locomo"}', encoding="utf-8")
    with pytest.raises(ValueError):
        evaluate(bad)


@pytest.mark.skipif(not SHARED.exists(), reason="LoCoMo dev file not available")
def test_shared_locomo_file_first_conversation_recall_is_sane():
    result = evaluate(SHARED, ks=(10,), limit_conversations=1)
    assert result["questions"] > 100
    assert result["overall"]["recall@10"] >= 0.70  # plain FTS5 gets ~0.66 over the dev half
