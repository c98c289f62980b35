"""What a dense score means: the cosine below which a dense-only hit is noise, and the hybrid score a hit prints.

**The floor.** A query that matches nothing lexically still has nearest records; what tells an answer from noise is
how near. Cosines of one model mean nothing to another, so the lines are the embedder's own: a table of measured
models (``benchmarks/bench_dense_floor.py``; docs/search.md, "Scores after embed"), or an embedder's own attributes
(``dense_floor``, ``dense_floor_unmatched``, ``dense_typical``), else none (no dense-only hit dropped: an unknown
model is never guessed at). Two lines per model: ``floor``, under which a dense-only hit is dropped from any query
(below every piece of evidence measured), and ``unmatched``, the higher line for a query no record the caller sees
shares a word with (lexical search found nothing): gibberish and off-topic questions, whose nearest records are
noise however near they happen to lie.

**The score.** A hybrid hit prints ``quality × its share of the best hit's fused score``: the order is the
ranking's, and the best hit's figure is the query's *match quality* — the larger of the lexical confidence (the
backend's own signal in [0, 1]: BM25 strength on files, term coverage on PostgreSQL) and meaning's best cosine
placed between the embedder's floor (0) and its typical best cosine for a real question (1). So 1.000 means a strong
match, and a query whose best hit is weak says so in every figure: one figure compares across queries.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from agent_memory.search.fusion import squash

__all__ = ["Calibration", "DENSE_FLOORS", "calibration_for", "dense_floor_for", "match_quality", "hybrid_scores"]

MIN_SHOWN = 1e-4


@dataclass(frozen=True, slots=True)
class Calibration:
    """One embedder's measured cosines: ``floor`` (a dense-only hit below it is noise), ``unmatched`` (the same for
    a query lexical search finds nothing for) and ``typical`` (a real question's best cosine: a score of 1)."""

    floor: float
    unmatched: float
    typical: float


#: Measured by embedder name (``benchmarks/bench_dense_floor.py`` on the LoCoMo dev half and its reworded questions,
#: docs/search.md): MiniLM's lowest dense-only evidence in any question's top 50 is .087 (reworded) / .111
#: (original), so ``floor`` .08 drops none; no dev question is without a lexical match, so ``unmatched`` (.20) never
#: applies there: it sits above a small store's noise (≤ .14 in tests) and below all but 2 of the 90 hand-written
#: reworded questions that share no word with their store (tests/fixtures/paraphrase_pairs.json: .174, .196); a real
#: question's median best cosine is .50 (``typical``).
DENSE_FLOORS: dict[str, Calibration] = {"all-MiniLM-L6-v2": Calibration(floor=0.08, unmatched=0.2, typical=0.5)}


class _Ranked(Protocol):
    score: float
    dense: float | None


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def calibration_for(embedder: object) -> Calibration | None:
    """``embedder``'s calibration: its own ``dense_floor`` (with ``dense_floor_unmatched`` and ``dense_typical`` when
    given) when it has a number there, else the measured one for its ``name``, else None."""
    own = _number(getattr(embedder, "dense_floor", None))
    if own is not None:
        unmatched = _number(getattr(embedder, "dense_floor_unmatched", None))
        typical = _number(getattr(embedder, "dense_typical", None))
        return Calibration(
            own, max(own, unmatched if unmatched is not None else own), max(own + 1e-6, typical if typical is not None else 1.0)
        )
    return DENSE_FLOORS.get(str(getattr(embedder, "name", "")))


def dense_floor_for(embedder: object, *, lexical_matched: bool = True) -> float | None:
    """The cosine under which ``embedder``'s dense-only hits are dropped: its ``floor``, or its ``unmatched`` line
    when lexical search found no visible record for the query; None without a calibration (nothing dropped)."""
    cal = calibration_for(embedder)
    if cal is None:
        return None
    return cal.floor if lexical_matched else cal.unmatched


def match_quality(confidence: float | None, best_cosine: float | None, embedder: object) -> float:
    """How well a query is answered, in [0, 1]: the larger of ``confidence`` (lexical, in [0, 1]) and ``best_cosine``
    placed between the embedder's floor (0) and typical best cosine (1); without a calibration, the cosine itself
    (clipped to [0, 1])."""
    lexical = min(1.0, max(0.0, float(confidence or 0.0)))
    if best_cosine is None or math.isnan(best_cosine):
        return lexical
    cal = calibration_for(embedder)
    low, high = (cal.floor, cal.typical) if cal is not None else (0.0, 1.0)
    dense = (float(best_cosine) - low) / (high - low) if high > low else 0.0
    return max(lexical, min(1.0, max(0.0, dense)))


def hybrid_scores(ranked: Sequence[_Ranked], confidence: float | None, embedder: object) -> list[float]:
    """The scores hybrid hits print, best first: :func:`match_quality` × each hit's share of the best fused score
    (never below :data:`MIN_SHOWN`)."""
    if not ranked:
        return []
    quality = match_quality(confidence, max((c.dense for c in ranked if c.dense is not None), default=None), embedder)
    top = squash(ranked[0].score)
    return [round(max(MIN_SHOWN, quality * squash(c.score) / top), 6) for c in ranked]
