"""Scoring stages after fusion: each takes the candidates and the query context and returns them rescored.

Additive boosts are scaled by the current spread of scores, so a weight means the same whatever
the fusion method's score range (z-scores, max-normalised scores or RRF).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from agent_memory.errors import InvalidInputError

__all__ = [
    "Candidate",
    "QueryContext",
    "Stage",
    "CosineRerank",
    "RecencyBoost",
    "TimeDecay",
    "ImportanceWeight",
    "LengthNorm",
    "MinScore",
    "MMR",
    "DenseFloor",
    "NoiseFloor",
]

Vector = npt.NDArray[np.float32]
DAY = 86400.0


@dataclass(slots=True)
class Candidate:
    """One record under consideration. ``lexical``/``dense`` are the raw signals (None: not found by that side)."""

    id: str
    score: float = 0.0
    lexical: float | None = None
    dense: float | None = None
    updated: str | None = None
    importance: float | None = None
    length: int | None = None
    vector: Vector | None = None
    text: str | None = None


@dataclass(slots=True)
class QueryContext:
    """Per-query facts the stages use. ``confidence`` in [0, 1]: how well the lexical top hits cover the query.
    ``dense_mean``/``dense_std``: the query's cosine distribution over all searchable records (z-score fusion
    standardises cosines with them; without them, over the dense candidates)."""

    query: str = ""
    confidence: float | None = None
    now: dt.datetime | None = None
    query_vector: Vector | None = None
    dense_mean: float | None = None
    dense_std: float | None = None


class Stage(Protocol):
    name: str

    def params(self) -> dict[str, Any]: ...

    def apply(self, cands: list[Candidate], ctx: QueryContext) -> list[Candidate]: ...


def _params(obj: Any) -> dict[str, Any]:
    return {k: getattr(obj, k) for k in getattr(obj, "__dataclass_fields__", {}) if k != "name"}


def _age_days(updated: str | None, now: dt.datetime) -> float | None:
    if not updated:
        return None
    try:
        t = dt.datetime.fromisoformat(updated.replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return max(0.0, (now - t).total_seconds() / DAY)


def _now(ctx: QueryContext) -> dt.datetime:
    return ctx.now or dt.datetime.now(dt.UTC)


def _positive(name: str, value: float) -> None:
    if not value > 0:
        raise InvalidInputError(f"{name} must be positive")


def _scale(cands: list[Candidate]) -> float:
    """A positive scale for additive boosts: the spread of the current scores."""
    if not cands:
        return 1.0
    s = [c.score for c in cands]
    return (max(s) - min(s)) or abs(max(s)) or 1.0


@dataclass(slots=True)
class CosineRerank:
    """score += weight · spread · cosine (candidates with no cosine get none)."""

    weight: float = 0.2
    name: str = "cosine_rerank"

    def params(self) -> dict[str, Any]:
        return _params(self)

    def apply(self, cands: list[Candidate], ctx: QueryContext) -> list[Candidate]:
        spread = _scale(cands)
        for c in cands:
            if c.dense is not None:
                c.score += self.weight * spread * c.dense
        return cands


@dataclass(slots=True)
class RecencyBoost:
    """score += weight · spread · 0.5^(age / half_life_days): newer records rise, old ones keep their score."""

    weight: float = 0.1
    half_life_days: float = 30.0
    name: str = "recency_boost"

    def __post_init__(self) -> None:
        _positive("half_life_days", self.half_life_days)

    def params(self) -> dict[str, Any]:
        return _params(self)

    def apply(self, cands: list[Candidate], ctx: QueryContext) -> list[Candidate]:
        now, spread = _now(ctx), _scale(cands)
        for c in cands:
            age = _age_days(c.updated, now)
            if age is not None:
                c.score += self.weight * spread * 0.5 ** (age / self.half_life_days)
        return cands


@dataclass(slots=True)
class TimeDecay:
    """Scores shrink toward ``floor`` of themselves with a half-life: s · (floor + (1−floor)·0.5^(age/hl)).

    Applied above a baseline one score-spread below the lowest score, so it works for negative
    (z-scored) scores too and every candidate can decay.
    """

    half_life_days: float = 180.0
    floor: float = 0.5
    name: str = "time_decay"

    def __post_init__(self) -> None:
        _positive("half_life_days", self.half_life_days)
        if not 0.0 <= self.floor <= 1.0:
            raise InvalidInputError("floor must be in [0, 1]")

    def params(self) -> dict[str, Any]:
        return _params(self)

    def apply(self, cands: list[Candidate], ctx: QueryContext) -> list[Candidate]:
        if not cands:
            return cands
        now = _now(ctx)
        base = min(c.score for c in cands) - _scale(cands)
        for c in cands:
            age = _age_days(c.updated, now)
            if age is not None:
                c.score = base + (c.score - base) * (self.floor + (1 - self.floor) * 0.5 ** (age / self.half_life_days))
        return cands


@dataclass(slots=True)
class ImportanceWeight:
    """score += weight · spread · (importance − neutral); importance in [0, 1], missing = neutral."""

    weight: float = 0.2
    neutral: float = 0.5
    name: str = "importance"

    def params(self) -> dict[str, Any]:
        return _params(self)

    def apply(self, cands: list[Candidate], ctx: QueryContext) -> list[Candidate]:
        spread = _scale(cands)
        for c in cands:
            if c.importance is not None:
                imp = min(1.0, max(0.0, float(c.importance)))
                c.score += self.weight * spread * (imp - self.neutral)
        return cands


@dataclass(slots=True)
class DenseFloor:
    """Meaning's ``top`` best candidates (highest cosine) always sit within the first ``within`` results.

    A floor, not a boost: those already there keep their place and score; each one missing takes the place of
    the lowest-ranked other candidate there and is scored just above everything below it. A no-op without
    dense scores. Measured on reworded LoCoMo questions (docs/meaning.md), where lexical search is confident
    and wrong: it keeps the answer meaning found best on the first page.
    """

    top: int = 3
    within: int = 10
    name: str = "dense_floor"

    def __post_init__(self) -> None:
        if self.top < 0 or self.within < 1:
            raise InvalidInputError("top must be ≥ 0 and within ≥ 1")

    def params(self) -> dict[str, Any]:
        return _params(self)

    def apply(self, cands: list[Candidate], ctx: QueryContext) -> list[Candidate]:
        ranked = sorted(cands, key=lambda c: -c.score)
        with_dense = sorted((c for c in ranked if c.dense is not None), key=lambda c: -float(c.dense or 0.0))
        want = [c.id for c in with_dense[: min(self.top, self.within)]]
        head = {c.id for c in ranked[: self.within]}
        missing = [rid for rid in want if rid not in head]
        if not missing:
            return ranked
        kept = [c for c in ranked[: self.within] if c.id not in want][: self.within - len(want)]
        kept_ids = {c.id for c in kept} | set(want)
        below = max((c.score for c in ranked if c.id not in kept_ids), default=0.0)
        floor = min((c.score for c in kept), default=below + 1.0)
        by_id = {c.id: c for c in ranked}
        for n, rid in enumerate(missing, start=1):  # strictly between the kept ones and the rest, in meaning's order
            c = by_id[rid]
            c.score = floor - (floor - below) * n / (len(missing) + 1) if floor > below else below + 1e-9 * (len(missing) + 1 - n)
        return sorted(ranked, key=lambda c: -c.score)


@dataclass(slots=True)
class NoiseFloor:
    """Drops dense-only candidates (no lexical match) whose cosine is below ``min_cosine``: meaning's nearest records
    of a query that matches nothing are noise, not answers. Candidates lexical search found too are never dropped.
    The floor is the embedder's (:mod:`agent_memory.search.floor`), measured where its true evidence and noise part."""

    min_cosine: float
    name: str = "noise_floor"

    def __post_init__(self) -> None:
        if not -1.0 <= self.min_cosine <= 1.0:
            raise InvalidInputError("min_cosine must be in [-1, 1]")

    def params(self) -> dict[str, Any]:
        return _params(self)

    def apply(self, cands: list[Candidate], ctx: QueryContext) -> list[Candidate]:
        return [c for c in cands if c.lexical is not None or c.dense is None or c.dense >= self.min_cosine]


@dataclass(slots=True)
class LengthNorm:
    """Long records stop winning by sheer size: score −= strength · spread · log2(length / pivot) above pivot."""

    pivot: int = 400
    strength: float = 0.1
    name: str = "length_norm"

    def __post_init__(self) -> None:
        _positive("pivot", self.pivot)

    def params(self) -> dict[str, Any]:
        return _params(self)

    def apply(self, cands: list[Candidate], ctx: QueryContext) -> list[Candidate]:
        spread = _scale(cands)
        for c in cands:
            if c.length and c.length > self.pivot:
                c.score -= self.strength * spread * math.log2(c.length / self.pivot)
        return cands


@dataclass(slots=True)
class MinScore:
    """Hard floor on a raw signal: drop candidates whose ``signal`` (dense cosine or lexical) is below ``threshold``
    unless the other side found them too (``keep_if_both``)."""

    threshold: float = 0.2
    signal: Literal["dense", "lexical", "score"] = "dense"
    keep_if_both: bool = True
    name: str = "min_score"

    def params(self) -> dict[str, Any]:
        return _params(self)

    def apply(self, cands: list[Candidate], ctx: QueryContext) -> list[Candidate]:
        out = []
        for c in cands:
            value = c.score if self.signal == "score" else getattr(c, self.signal)
            if value is None or value >= self.threshold:
                out.append(c)
            elif self.keep_if_both and c.lexical is not None and c.dense is not None:
                out.append(c)
        return out


@dataclass(slots=True)
class MMR:
    """Maximal marginal relevance over the top ``window``: λ·relevance − (1−λ)·max similarity to those chosen.

    Relevance is the current score min-max scaled to [0, 1]. Similarity is the cosine of the candidates' vectors,
    else (a lexical search, no vectors) the overlap (Jaccard) of their word sets; candidates with neither keep
    their place.
    """

    lambda_: float = 0.7
    window: int = 25
    name: str = "mmr"

    def __post_init__(self) -> None:
        if not 0.0 <= self.lambda_ <= 1.0:
            raise InvalidInputError("lambda_ must be in [0, 1]")

    def params(self) -> dict[str, Any]:
        return _params(self)

    def apply(self, cands: list[Candidate], ctx: QueryContext) -> list[Candidate]:
        ranked = sorted(cands, key=lambda c: -c.score)
        head, tail = ranked[: self.window], ranked[self.window :]
        if len(head) < 2:
            return ranked
        if all(c.vector is not None for c in head):
            vecs = np.stack([np.asarray(c.vector, dtype=np.float32) for c in head])
            sims = vecs @ vecs.T
        elif all(c.text is not None for c in head):
            sims = _word_overlap([c.text or "" for c in head])
        else:
            return ranked
        lo, hi = head[-1].score, head[0].score
        rel = [(c.score - lo) / ((hi - lo) or 1.0) for c in head]
        chosen: list[int] = []
        left = list(range(len(head)))
        while left:
            best = max(
                left, key=lambda i: self.lambda_ * rel[i] - (1 - self.lambda_) * max((float(sims[i, j]) for j in chosen), default=0.0)
            )
            chosen.append(best)
            left.remove(best)
        top = head[0].score
        step = ((hi - lo) or 1.0) / len(head)
        out = [replace(head[i], score=top - n * step) for n, i in enumerate(chosen)]
        return out + tail


def _word_overlap(texts: list[str]) -> npt.NDArray[np.float64]:
    """Pairwise Jaccard similarity of the texts' lower-cased word sets."""
    words = [set(re.findall(r"\w+", t.lower())) for t in texts]
    n = len(words)
    sims = np.ones((n, n), dtype=np.float64)
    for i in range(n):
        for j in range(i + 1, n):
            union = len(words[i] | words[j])
            sims[i, j] = sims[j, i] = len(words[i] & words[j]) / union if union else 0.0
    return sims
