"""The coarse pass's top-k selection (agent_memory/backends/files/coarse.py: top_k) equals a full argpartition."""

from __future__ import annotations

import numpy as np
import pytest

from agent_memory.backends.files import coarse
from agent_memory.backends.files.coarse import top_k


def _want(scores: np.ndarray, k: int) -> set[int]:
    order = np.argsort(-np.nan_to_num(scores, nan=-np.inf), kind="stable")
    return {int(i) for i in order[:k]}


@pytest.mark.parametrize("n", [10, 1_000, 60_000, 250_000])
@pytest.mark.parametrize("k", [1, 10, 1_000, 8_000])
def test_top_k_is_the_k_largest(n: int, k: int) -> None:
    rng = np.random.default_rng(n + k)
    scores = rng.standard_normal(n).astype(np.float32)  # distinct values: no ties to break
    got = top_k(scores, k)
    assert len(got) == min(n, k) and len(set(got.tolist())) == len(got)
    assert set(got.tolist()) == _want(scores, k)


def test_a_sample_that_overestimates_the_threshold_still_gives_the_k_largest(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every sampled position holds a large score and the rest small ones: the threshold read off the sample keeps
    too few rows, so the full partition decides."""
    n, k = 200_000, 5_000
    rng = np.random.default_rng(3)
    scores = rng.uniform(0.0, 1.0, n).astype(np.float32)
    step = max(1, n // coarse.SELECT_SAMPLE)
    scores[::step] += 10.0  # only n/step (~16k) big ones, all sampled
    scores[1::step] += 5.0 + rng.uniform(0.0, 1.0, len(scores[1::step])).astype(np.float32)
    calls: list[int] = []
    real = np.argpartition

    def counting(a: np.ndarray, kth: int) -> np.ndarray:
        calls.append(len(a))
        return real(a, kth)

    monkeypatch.setattr(coarse.np, "argpartition", counting)
    got = top_k(scores, k)
    assert set(got.tolist()) == _want(scores, k) and calls == [n]  # the fallback: one partition of them all
    monkeypatch.setattr(coarse, "SELECT_SAMPLE", 50)  # a tiny sample: a poor threshold, the same answer
    assert set(top_k(scores, k).tolist()) == _want(scores, k)


def test_nan_scores_never_beat_numbers() -> None:
    rng = np.random.default_rng(5)
    scores = rng.standard_normal(120_000).astype(np.float32)
    scores[::7] = np.nan
    got = top_k(scores, 2_000)
    assert not np.isnan(scores[got]).any() and set(got.tolist()) == _want(scores, 2_000)
    allnan = np.full(100_000, np.nan, dtype=np.float32)
    assert len(top_k(allnan, 100)) == 100  # a damaged projection still answers (the rerank drops non-finite rows)
