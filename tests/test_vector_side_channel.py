"""Issue 27/32, attacker probe F3: no score a caller sees may depend on records it cannot see.

The cosines used to be standardised with the mean and std of the query's cosines over EVERY vector in the
cache (files backend, without strict visibility), so another user's hidden record close to the query moved
every one of alice's hybrid and dense scores. They now come from the caller's visible vectors only.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agent_memory.backends import open_backend
from agent_memory.backends.base import Caller
from agent_memory.backends.files.hybrid import _visible_stats
from agent_memory.backends.files.store import MemoryStore
from agent_memory.backends.files.vectors import VectorCache, live_items
from agent_memory.embeddings import CallableEmbedder
from agent_memory.model.drafts import MemoryDraft

ALICE = Caller(user_id="alice")
QUERY = "merger acquisition Zephyr corp layoffs"  # shares no word with alice's records


def bag_of_words(texts: list[str], dim: int = 64) -> list[list[float]]:
    out = []
    for text in texts:
        v = [0.0] * dim
        for w in text.lower().split():
            h = int(hashlib.sha256(w.encode()).hexdigest(), 16)
            v[h % dim] += 1.0 + (h >> 8) % 3
        out.append(v)
    return out


async def embed(b: Any) -> None:
    if hasattr(b, "store"):  # files: the store's vector cache
        b.store.embed()
    else:
        await b.embed()


async def scores(b: Any, **options: Any) -> dict[str, list[tuple[str, float]]]:
    out = {}
    for mode in ("dense", "hybrid"):
        res = await b.search(QUERY, ALICE, mode=mode, **options)
        out[mode] = [(h.id, h.score) for h in res.hits]
    return out


@pytest.mark.parametrize("strict", [False, True])
async def test_another_users_hidden_write_moves_none_of_alices_scores(backend: Any, strict: bool) -> None:
    b = open_backend(backend.target, **backend.options, embedder=CallableEmbedder(bag_of_words, name="bow"))
    try:
        for text in ("alice likes green tea", "alice owns a red bicycle", "alice works at the bakery"):
            await b.remember(MemoryDraft(text, user_id="alice"))
        for text in ("bob has a cat", "bob plays chess"):
            await b.remember(MemoryDraft(text, user_id="bob"))
        await embed(b)
        before = await scores(b, strict_visibility=strict)
        assert all(len(v) == 3 for v in before.values()), before
        for i in range(3):  # hidden from alice, close to her query in meaning (and words)
            await b.remember(MemoryDraft(f"merger acquisition Zephyr corp layoffs planned {i}", user_id="bob"))
        await embed(b)
        assert await scores(b, strict_visibility=strict) == before  # failed on the files backend before the fix
    finally:
        await b.close()


def test_the_cosine_stats_are_each_callers_own_and_follow_its_writes(tmp_path: Path) -> None:
    """The sample a caller's stats come from is kept per caller and index state: carol never gets alice's, and
    alice's own new record counts at once (stats equal numpy's over exactly the caller's visible vectors)."""
    store = MemoryStore(tmp_path / "m", durable=False, rescan_interval=None)
    emb = CallableEmbedder(bag_of_words, name="bow")
    cache = VectorCache.for_root(store.root)
    texts = {"alice": ["alice likes green tea", "alice owns a red bicycle"], "carol": ["carol sails", "carol bakes bread daily"]}
    for user, ts in texts.items():
        for t in ts:
            store.remember(t, user_id=user)
    q = np.asarray(bag_of_words([QUERY + " bread"])[0], dtype=np.float32)

    def expected(ts: list[str]) -> dict[str, float]:
        rows = np.asarray(bag_of_words(ts), dtype=np.float32)
        sims = (rows / np.linalg.norm(rows, axis=1, keepdims=True)) @ q  # the cache holds unit vectors
        return {"mean": pytest.approx(float(sims.mean())), "std": pytest.approx(float(sims.std()))}  # type: ignore[dict-item]

    for _ in range(2):
        cache.backfill(live_items(store.index), emb)
        for user, ts in texts.items():
            assert _visible_stats(store, cache, emb.name, q, None, user) == expected(ts), user
        store.remember("alice reads about corp layoffs", user_id="alice")
        texts["alice"].append("alice reads about corp layoffs")
    store.close()
    cache.close()
