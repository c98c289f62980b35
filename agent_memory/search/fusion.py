"""The scoring pipeline: lexical + dense candidates → fusion → named stages → ranked ids, with a trace.

Every stage records what entered, what left and how scores changed, so ``--trace`` can show why a
record ranks where it does. Stages (each configurable, each skippable by leaving it out):

- :class:`Fuse` — lexical/dense fusion: ``zscore`` (default: per-query calibrated scores, the lexical
  weight raised when lexical search is confident), ``convex`` (max-normalised) or ``rrf`` (k=60);
- :class:`CosineRerank`, :class:`RecencyBoost`, :class:`TimeDecay` (half-life), :class:`ImportanceWeight`,
  :class:`LengthNorm`, :class:`MinScore` (hard floor), :class:`MMR` (diversity), :class:`DenseFloor` (meaning's
  best few within the first page).

Defaults were chosen by measurement on the LoCoMo dev half and its reworded questions
(``benchmarks/bench_meaning.py``, figures in ``docs/meaning.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from agent_memory.errors import InvalidInputError
from agent_memory.search.stages import (
    MMR,
    Candidate,
    CosineRerank,
    DenseFloor,
    ImportanceWeight,
    LengthNorm,
    MinScore,
    NoiseFloor,
    QueryContext,
    RecencyBoost,
    Stage,
    TimeDecay,
    _params,
)
from agent_memory.search.text import term_key, term_matcher

__all__ = [
    "Candidate",
    "QueryContext",
    "Stage",
    "Pipeline",
    "Fuse",
    "CosineRerank",
    "RecencyBoost",
    "TimeDecay",
    "ImportanceWeight",
    "LengthNorm",
    "MinScore",
    "MMR",
    "DenseFloor",
    "NoiseFloor",
    "default_pipeline",
    "lexical_confidence",
    "lexical_strength",
    "squash",
    "EMBED_AT_QUERY",
    "to_embed",
]

EMBED_AT_QUERY = 32
"""At most this many lexical candidates without a current vector are embedded (and stored) during a hybrid search:
records written since the last backfill (a CLI, MCP or ``capture`` write never embeds), so an exact keyword match
gets its cosine instead of none. Bounded: the embedder is loaded for the query anyway, 32 short texts cost tens of ms."""


def to_embed(lexical_ids: Iterable[str], has_vector: Callable[[str], bool]) -> list[str]:
    """The lexical candidates (best first) a hybrid search embeds now: those without a current vector, at most
    :data:`EMBED_AT_QUERY` (both backends ask this; each embeds and stores them its own way)."""
    out: list[str] = []
    for rid in dict.fromkeys(lexical_ids):
        if len(out) >= EMBED_AT_QUERY:
            break
        if not has_vector(rid):
            out.append(rid)
    return out


@dataclass(slots=True)
class Pipeline:
    """Runs :class:`Fuse` then each stage in order; ``trace`` (if a list) receives one entry per stage."""

    fuse: Fuse
    stages: Sequence[Stage] = ()
    show: int = 10

    def run(
        self,
        lexical: Sequence[tuple[str, float]],
        dense: Sequence[tuple[str, float]],
        ctx: QueryContext | None = None,
        *,
        info: Mapping[str, Mapping[str, Any]] | None = None,
        limit: int | None = None,
        trace: list[dict[str, Any]] | None = None,
    ) -> list[Candidate]:
        """Rank the union of ``lexical`` and ``dense`` hits (``(id, score)``, best first).

        ``info`` maps an id to candidate fields (``updated``, ``importance``, ``length``, ``vector``, ``text``).
        """
        ctx = ctx or QueryContext()
        cands = self.fuse.fuse(lexical, dense, ctx)
        for c in cands:
            for k, v in (info or {}).get(c.id, {}).items():
                if k in ("updated", "importance", "length", "vector", "text"):
                    setattr(c, k, v)
        if trace is not None:
            trace.append(
                self._entry(self.fuse.name, self.fuse.params(), [], cands, entered={"lexical": len(lexical), "dense": len(dense)}, ctx=ctx)
            )
        for stage in self.stages:
            before = {c.id: c.score for c in cands}
            out = stage.apply(list(cands), ctx)  # scores before are kept in ``before``
            if trace is not None:
                trace.append(self._entry(stage.name, stage.params(), cands, out, before=before))
            cands = out
        cands.sort(key=lambda c: -c.score)
        return cands[:limit] if limit is not None else cands

    def _entry(
        self,
        name: str,
        params: dict[str, Any],
        before_c: list[Candidate],
        after: list[Candidate],
        *,
        before: dict[str, float] | None = None,
        entered: dict[str, int] | None = None,
        ctx: QueryContext | None = None,
    ) -> dict[str, Any]:
        kept = {c.id for c in after}
        ranked = sorted(after, key=lambda c: -c.score)
        entry: dict[str, Any] = {
            "stage": name,
            "params": params,
            "in": entered if entered is not None else len(before_c),
            "out": len(after),
            "dropped": [c.id for c in before_c if c.id not in kept],
            "top": [
                {
                    "id": c.id,
                    "score": round(c.score, 4),
                    **({"before": round(before[c.id], 4)} if before and c.id in before else {}),
                    **({"lexical": round(c.lexical, 4)} if c.lexical is not None else {}),
                    **({"dense": round(c.dense, 4)} if c.dense is not None else {}),
                }
                for c in ranked[: self.show]
            ],
        }
        if before is not None:
            entry["changed"] = sum(1 for c in after if c.id in before and abs(before[c.id] - c.score) > 1e-12)
        if ctx is not None and ctx.confidence is not None:
            entry["confidence"] = round(ctx.confidence, 4)
        return entry


def _z(values: Sequence[float]) -> list[float]:
    if not values:
        return []
    arr = np.asarray(values, dtype=np.float64)
    sd = float(arr.std())
    return [0.0] * len(values) if sd == 0 else [float(v) for v in (arr - arr.mean()) / sd]


@dataclass(slots=True)
class Fuse:
    """Lexical/dense fusion.

    ``zscore``: each side's scores standardised within the query; score = a·z(lexical) + (1−a)·z(cosine),
    a candidate missing from one side getting that side's lowest z — except a candidate ``dense_scores`` found no
    vector for (no dense evidence, not bad evidence): never below a neutral dense z of 0 (the mean cosine). ``a`` (the lexical weight) follows the
    query's lexical confidence: ``weight`` at ≥ ``confident_at`` (or when unknown), ``weak_weight`` at ≤
    ``ramp_from``, linear in between (``ramp_from == confident_at`` is a hard gate).
    ``convex``: a·lexical/max(lexical) + (1−a)·cosine. ``rrf``: Σ 1/(k + rank).
    ``dense_scores`` (optional) gives cosines for lexical hits the dense top list missed.
    """

    method: Literal["zscore", "convex", "rrf"] = "zscore"
    weight: float = 0.7
    weak_weight: float = 0.0
    confident_at: float = 0.25
    ramp_from: float = 0.05
    k: int = 60
    name: str = "fuse"
    dense_scores: Callable[[Sequence[str]], Mapping[str, float]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.method not in ("zscore", "convex", "rrf"):
            raise InvalidInputError(f"unknown fusion method {self.method!r}")
        for v in (self.weight, self.weak_weight, self.confident_at, self.ramp_from):
            if not 0.0 <= v <= 1.0:
                raise InvalidInputError("fusion weights, confident_at and ramp_from must be in [0, 1]")
        if self.ramp_from > self.confident_at:
            raise InvalidInputError("ramp_from must not exceed confident_at")
        if self.k < 1:
            raise InvalidInputError("rrf k must be at least 1")

    def params(self) -> dict[str, Any]:
        return {k: v for k, v in _params(self).items() if k != "dense_scores"}

    def lexical_weight(self, ctx: QueryContext) -> float:
        c = ctx.confidence
        if c is None or c >= self.confident_at:
            return self.weight
        if c <= self.ramp_from:
            return self.weak_weight
        return self.weak_weight + (self.weight - self.weak_weight) * (c - self.ramp_from) / (self.confident_at - self.ramp_from)

    def fuse(self, lexical: Sequence[tuple[str, float]], dense: Sequence[tuple[str, float]], ctx: QueryContext) -> list[Candidate]:
        cands: dict[str, Candidate] = {}
        for rid, s in lexical:
            cands.setdefault(rid, Candidate(rid, lexical=float(s)))
        for rid, s in dense:
            cands.setdefault(rid, Candidate(rid)).dense = float(s)
        unscored: set[str] = set()  # asked for a cosine and has no vector
        if self.dense_scores is not None and dense:
            missing = [c.id for c in cands.values() if c.dense is None]
            for rid, s in self.dense_scores(missing).items():
                if rid in cands:
                    cands[rid].dense = float(s)
            unscored = {c.id for c in cands.values() if c.dense is None}
        if not dense:
            for c in cands.values():
                c.score = c.lexical or 0.0
            return sorted(cands.values(), key=lambda c: -c.score)
        a = self.lexical_weight(ctx)
        if self.method == "rrf":
            for r, (rid, _) in enumerate(lexical):
                cands[rid].score += 1.0 / (self.k + r + 1)
            for r, (rid, _) in enumerate(dense):
                cands[rid].score += 1.0 / (self.k + r + 1)
        elif self.method == "convex":
            top = max((abs(s) for _, s in lexical), default=0.0) or 1.0
            for c in cands.values():
                c.score = a * (c.lexical or 0.0) / top + (1 - a) * (c.dense or 0.0)
        else:
            lz = dict(zip((r for r, _ in lexical), _z([s for _, s in lexical]), strict=True))
            with_dense = [c for c in cands.values() if c.dense is not None]
            if ctx.dense_mean is not None and ctx.dense_std:
                dz = {c.id: ((c.dense or 0.0) - ctx.dense_mean) / ctx.dense_std for c in with_dense}
            else:
                dz = dict(zip((c.id for c in with_dense), _z([c.dense or 0.0 for c in with_dense]), strict=True))
            lfloor, dfloor = min(lz.values(), default=0.0), min(dz.values(), default=0.0)
            for c in cands.values():
                c.score = a * lz.get(c.id, lfloor) + (1 - a) * dz.get(c.id, max(0.0, dfloor) if c.id in unscored else dfloor)
        return sorted(cands.values(), key=lambda c: -c.score)


def squash(score: float) -> float:
    """A fused score (a z-score mix, any sign) mapped monotonically into (0, 1); hits show it relative to the best."""
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, score))))


def default_pipeline() -> Pipeline:
    """The measured default (docs/meaning.md): z-score fusion whose lexical weight follows :func:`lexical_strength`
    (0 at ≤ 0.05, 0.55 at ≥ 0.3), :class:`ImportanceWeight` (a no-op for records without an importance), then
    :class:`DenseFloor` (meaning's best three within the first ten)."""
    return Pipeline(Fuse(weight=0.55, confident_at=0.3), [ImportanceWeight(), DenseFloor()])


def lexical_strength(top_score: float, idfs: Iterable[float]) -> float:
    """How strongly lexical search answers a query: its best raw BM25 score as a share of the query's IDF mass
    (the sum of its terms' IDF), capped at 1.

    A query whose best lexical hit matches only its common words, or few of its rare ones, scores low: its
    words are not the ones the answer uses, so meaning should lead. Measured on LoCoMo (docs/meaning.md) this
    separates questions lexical answers from those only dense retrieval answers better than term coverage.
    """
    total = sum(max(0.0, float(v)) for v in idfs)
    if total <= 0 or top_score <= 0:
        return 0.0
    return min(1.0, float(top_score) / total)


def lexical_confidence(query_terms: Iterable[str], top_texts: Iterable[str], idf: Mapping[str, float] | Callable[[str], float]) -> float:
    """IDF-weighted share of the query's terms found in the best of ``top_texts`` (the lexical top hits).

    ``idf`` maps a :func:`~agent_memory.search.text.term_key` to its inverse document frequency (or is a function).
    """
    keys = {term_key(t) for t in query_terms if t}
    keys.discard("")
    if not keys:
        return 0.0
    weight = idf if callable(idf) else (lambda k: float(idf.get(k, 1.0)))  # type: ignore[union-attr]
    w = {k: max(0.0, weight(k)) for k in keys}
    total = sum(w.values())
    if total <= 0:
        return 0.0
    found = term_matcher(keys)
    return max((sum(w[k] for k in found(t)) / total for t in top_texts), default=0.0)
