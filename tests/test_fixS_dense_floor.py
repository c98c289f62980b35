"""After ``embed``, a search for noise says "no matches": dense-only hits below the embedder's measured floor are
dropped (``search.stages.NoiseFloor``, ``search.floor``), on both backends, from the API and the CLI — and a reworded
question that shares no content word with its fact still finds it. The printed score means something across
queries: the best hit's figure is the query's match quality, not always 1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_memory.embeddings.local import local_model_available
from agent_memory.search.floor import DENSE_FLOORS, dense_floor_for, hybrid_scores, match_quality
from agent_memory.search.stages import Candidate, NoiseFloor, QueryContext

needs_model = pytest.mark.skipif(not local_model_available(), reason="local embedding model not installed")

FACTS = [  # tests/fixtures/paraphrase_pairs.json's kind: no content word shared with the question
    "I bought a car last week.",
    "My sister lives in Toronto.",
    "We adopted a puppy from the shelter.",
    "The dentist appointment is on Thursday.",
    "Our flight to Lisbon leaves at noon.",  # not the fixture's violin: "xylophone" is near it in meaning (.245)
    "The quarterly report is due at the end of March.",
]
REWORDED = ("Which automobile did the user purchase recently?", FACTS[0])
NOISE = "zzzz qqq xylophone"


def test_the_noise_floor_drops_only_dense_only_candidates_below_it() -> None:
    cands = [
        Candidate("lexical-and-far", lexical=3.0, dense=0.01),
        Candidate("dense-near", dense=0.6),
        Candidate("dense-far", dense=0.05),
        Candidate("lexical-only", lexical=1.0),
    ]
    kept = NoiseFloor(0.2).apply(cands, QueryContext())
    assert [c.id for c in kept] == ["lexical-and-far", "dense-near", "lexical-only"]


def test_the_best_hits_score_is_the_match_quality_not_always_one() -> None:
    class MiniLM:
        name = "all-MiniLM-L6-v2"

    cal = DENSE_FLOORS[MiniLM.name]
    floor, typical = cal.floor, cal.typical
    assert dense_floor_for(MiniLM()) == floor and dense_floor_for(MiniLM(), lexical_matched=False) == cal.unmatched > floor
    strong = [Candidate("a", score=2.0, dense=typical), Candidate("b", score=1.0, dense=typical - 0.1)]
    weak = [Candidate("a", score=2.0, dense=floor + 0.02), Candidate("b", score=1.0, dense=floor + 0.01)]
    assert hybrid_scores(strong, None, MiniLM())[0] == 1.0
    low = hybrid_scores(weak, None, MiniLM())
    assert low[0] < 0.2 and low[1] < low[0]  # the same ranking, a figure that says the match is weak
    assert hybrid_scores(weak, 0.9, MiniLM())[0] == pytest.approx(0.9)  # a confident lexical match speaks for itself
    assert match_quality(None, None, MiniLM()) == 0.0

    class Own:  # a user's embedder may declare its own floor
        name, dense_floor, dense_typical = "mine", 0.5, 0.9

    assert dense_floor_for(Own()) == 0.5 == dense_floor_for(Own(), lexical_matched=False)
    assert match_quality(None, 0.7, Own()) == pytest.approx(0.5)
    assert dense_floor_for(type("Unknown", (), {"name": "x"})()) is None  # an unmeasured model is never guessed at


@needs_model
async def test_a_noise_query_finds_nothing_after_embed_and_a_reworded_one_finds_its_fact(backend: Any) -> None:
    provider = backend.provider(embedder="local")
    ids = {f: (await provider.remember(f, user_id="ada")).id for f in FACTS}
    await provider.backend.embed()
    assert (await provider.search(NOISE, user_id="ada")).hits == []
    assert (await provider.search(NOISE, user_id="ada", mode="dense")).hits == []
    found = await provider.search(REWORDED[0], user_id="ada")
    assert found.hits and found.hits[0].id == ids[REWORDED[1]], [h.id for h in found.hits]
    assert 0 < found.hits[0].score <= 1


def _cli(target: str, *args: str) -> Any:
    out = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", target, "--json", *args], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@needs_model
@pytest.mark.parametrize("kind", ["files", "postgres"])
def test_the_cli_says_no_matches_for_noise_after_embed(kind: str, tmp_path: Path) -> None:
    from _doubles import cli_target

    target = cli_target(kind, tmp_path)
    ids = {f: _cli(target, "remember", f, "--scope", "project")["id"] for f in FACTS}
    _cli(target, "embed")
    assert _cli(target, "search", NOISE)["hits"] == []
    hits = _cli(target, "search", REWORDED[0])["hits"]
    assert hits and hits[0]["id"] == ids[REWORDED[1]], hits
