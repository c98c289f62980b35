"""Ranking users can tune: extra scoring stages over a search's ranked hits, whatever backend found them.

``search(..., stages=[TimeDecay(half_life_days=30), MMR(lambda_=0.5)])`` asks the backend for a wider pool
(:func:`pool_size`) ranked exactly as by default, then runs the stages over it, in order, and cuts to the limit.
Without ``stages`` nothing here runs: the default ranking is untouched. Each stage is traced like the fusion
pipeline's (score before and after, candidates dropped), so ``--trace`` shows what each one did.

Visibility acts first: the pool holds only hits the caller may see, and the facts the stages use (age, importance,
length, text for diversity) come from records read with the caller's own visibility.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from agent_memory.errors import InvalidInputError
from agent_memory.search.fusion import Fuse, Pipeline
from agent_memory.search.stages import (
    MMR,
    ImportanceWeight,
    LengthNorm,
    MinScore,
    QueryContext,
    RecencyBoost,
    Stage,
    TimeDecay,
)
from agent_memory.search.types import SearchHit, SearchResult

__all__ = ["check_stages", "pool_size", "rerank", "record_facts", "search_stages", "tuned", "SEARCH_KEYS"]

#: Keys of a profile's ``[search]`` table (and of :func:`search_stages`).
SEARCH_KEYS = (
    "recency",
    "recency_half_life_days",
    "decay_days",
    "decay_floor",
    "importance",
    "length_pivot",
    "mmr",
    "min_score",
)


def check_stages(stages: Any) -> tuple[Stage, ...] | None:
    """``stages`` as a tuple (None stays None: the default ranking); anything that is not a stage is an
    :class:`~agent_memory.errors.InvalidInputError`."""
    if stages is None:
        return None
    if isinstance(stages, (str, bytes)) or not isinstance(stages, Sequence):
        raise InvalidInputError("stages must be a list of ranking stages (e.g. [TimeDecay(half_life_days=30), MMR(lambda_=0.5)])")
    for stage in stages:
        if not all(callable(getattr(stage, attr, None)) for attr in ("apply", "params")) or not isinstance(
            getattr(stage, "name", None), str
        ):
            raise InvalidInputError(
                f"not a ranking stage: {stage!r} (use RecencyBoost, TimeDecay, ImportanceWeight, LengthNorm, MinScore, MMR)"
            )
    return tuple(stages)


def pool_size(limit: int) -> int:
    """How many hits the stages re-rank for a search of ``limit``: 3 × limit, at least 30, at most 1000."""
    return min(1000, max(30, 3 * int(limit)))


def shown_number(value: Any) -> str:
    """``repr(value)``, cut short (a 400-digit integer is not echoed back whole)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _number(name: str, value: Any, low: float | None = None, high: float | None = None, *, open_low: bool = False) -> float:
    try:
        finite = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
    except OverflowError:  # an int too large for a float
        finite = False
    if not finite:
        raise InvalidInputError(f"{name} must be a finite number, not {shown_number(value)}")
    v = float(value)
    if low is not None and (v <= low if open_low else v < low):
        raise InvalidInputError(f"{name} must be {'greater than' if open_low else 'at least'} {low:g}, not {value!r}")
    if high is not None and v > high:
        raise InvalidInputError(f"{name} must be at most {high:g}, not {value!r}")
    return v


def search_stages(
    *,
    recency: float | bool | None = None,
    recency_half_life_days: float = 30.0,
    decay_days: float | None = None,
    decay_floor: float = 0.0,
    importance: float | None = None,
    length_pivot: int | None = None,
    mmr: float | None = None,
    min_score: float | None = None,
) -> list[Stage]:
    """The stages the CLI flags and a profile's ``[search]`` table name, in the order they run.

    ``min_score`` (drop hits scoring below S × the best, S in [0, 1]) first; then ``importance`` (weight),
    ``recency`` (True or a weight: newer records rise), ``decay_days`` (a half-life: old records sink toward
    ``decay_floor`` of their score), ``length_pivot`` (long records stop winning by size) and ``mmr`` (λ in [0, 1]:
    lower is more diverse) last. Bad values are :class:`~agent_memory.errors.InvalidInputError`.
    """
    stages: list[Stage] = []
    if min_score is not None:
        stages.append(MinScore(threshold=_number("min_score", min_score, 0.0, 1.0), signal="score", keep_if_both=False))
    if importance is not None:
        stages.append(ImportanceWeight(weight=_number("importance", importance, 0.0)))
    if recency is not None and recency is not False:
        weight = 0.3 if recency is True else _number("recency", recency, 0.0, open_low=True)
        stages.append(
            RecencyBoost(weight=weight, half_life_days=_number("recency_half_life_days", recency_half_life_days, 0.0, open_low=True))
        )
    if decay_days is not None:
        stages.append(
            TimeDecay(
                half_life_days=_number("decay_days", decay_days, 0.0, open_low=True), floor=_number("decay_floor", decay_floor, 0.0, 1.0)
            )
        )
    if length_pivot is not None:
        pivot = _number("length_pivot", length_pivot, 0.0, open_low=True)
        stages.append(LengthNorm(pivot=int(pivot)))
    if mmr is not None:
        stages.append(MMR(lambda_=_number("mmr", mmr, 0.0, 1.0)))
    return stages


def record_facts(record: Any) -> dict[str, Any]:
    """The facts stages use about one record (a :class:`~agent_memory.model.records.MemoryRecord`)."""
    text = f"{getattr(record, 'title', '') or ''}\n{getattr(record, 'content', '') or ''}"
    return {
        "updated": getattr(record, "updated", "") or "",
        "importance": getattr(record, "importance", None),
        "length": len(getattr(record, "content", "") or ""),
        "text": text,
    }


def rerank(
    result: SearchResult,
    stages: Sequence[Stage],
    limit: int,
    facts: Mapping[str, Mapping[str, Any]],
    *,
    query: str = "",
    now: dt.datetime | None = None,
) -> SearchResult:
    """``result``'s hits re-ranked by ``stages`` and cut to ``limit``; hits without ``facts`` (no longer readable)
    are dropped. Scores stay in (0, 1]: the best hit keeps the figure the search gave its best (1 after a lexical
    search; the match quality after a hybrid one, :mod:`agent_memory.search.floor`), the others their share of it;
    each stage adds a trace entry when ``result`` has a trace."""
    hits = {h.id: h for h in result.hits if h.id in facts}
    peak = max((float(h.score) for h in hits.values()), default=1.0) or 1.0  # the best hit's figure keeps its meaning
    pairs = [(h.id, float(h.score) / peak) for h in result.hits if h.id in hits]  # shares of the best: what min-score reads
    steps: list[dict[str, Any]] | None = [] if result.trace is not None else None
    pipeline = Pipeline(Fuse(name="ranked"), list(stages))
    ranked = pipeline.run(pairs, [], QueryContext(query=query, now=now), info=facts, limit=limit, trace=steps)
    out: list[SearchHit] = []
    if ranked:
        top, low = ranked[0].score, min(c.score for c in ranked)
        shift = 0.0 if low > 0 else (top - low or 1.0) * 0.01 - low  # every score positive, the order kept
        for c in ranked:
            share = 1.0 if c.score >= top else (c.score + shift) / (top + shift)
            score = max(1e-4, round(peak * share, 6))
            out.append(replace(hits[c.id], score=score))
    trace = None
    if result.trace is not None and steps is not None:
        if steps:
            steps[0] = {"stage": "tuned", "pool": len(pairs), "note": "the default ranking's hits, re-ranked by the stages below"}
        trace = [*result.trace, *steps]
    return SearchResult(out, trace)


def tuned(
    search: Callable[[int], SearchResult],
    facts: Callable[[Sequence[str]], Mapping[str, Mapping[str, Any]]],
    stages: Sequence[Stage],
    limit: int,
    query: str,
) -> SearchResult:
    """Run ``search`` for a pool, read the pool's ``facts`` and :func:`rerank` (the synchronous path)."""
    result = search(pool_size(limit))
    return rerank(result, stages, limit, facts([h.id for h in result.hits]), query=query)
