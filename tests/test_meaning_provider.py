"""The provider embeds after writes, in the background: a write never waits for or fails on embedding,
and closing stops the background work after the batch in flight."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agent_memory import MemoryDraft, MemoryProvider
from agent_memory.embeddings import CallableEmbedder, EmbeddingError

WORDS = {"car": 0, "vehicle": 0, "automobile": 0, "bought": 1, "purchase": 1, "tea": 2, "drink": 2}


def vecs(texts: list[str]) -> list[list[float]]:
    out = []
    for t in texts:
        v = [0.01] * 4
        for w in t.lower().replace("?", " ").replace(".", " ").split():
            if w in WORDS:
                v[WORDS[w]] += 1.0
        out.append(v)
    return out


def _meaning(memory: MemoryProvider) -> Any:
    """The store's meaning layer (set: these providers are built with an embedder)."""
    meaning = memory.store.meaning
    assert meaning is not None
    return meaning


def test_writes_are_embedded_in_the_background_and_found_by_meaning(tmp_path: Path) -> None:
    async def main() -> None:
        async with MemoryProvider(tmp_path / "m", embedder=CallableEmbedder(vecs, name="toy")) as memory:
            r = await memory.remember("Ada bought a car in May.")
            await memory.remember_many([MemoryDraft("Bo likes tea")])
            assert await memory.embedded(timeout=30)
            assert _meaning(memory).vectors.count("toy") == 2
            hits = (await memory.search("which vehicle did she purchase?")).hits
            assert hits and hits[0].id == r.id  # no shared word: found by meaning
            lexical = (await memory.search("which vehicle did she purchase?", mode="lexical")).hits
            assert r.id not in [h.id for h in lexical]

    asyncio.run(main())


def test_a_failing_embedder_never_fails_or_slows_a_write(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    def broken(texts: list[str]) -> list[list[float]]:
        raise EmbeddingError("model server down")

    async def main() -> None:
        memory = MemoryProvider(tmp_path / "m", embedder=CallableEmbedder(broken, name="broken", dim=4))
        r = await memory.remember("Deploys happen on Fridays.")
        assert r.status == "created"
        assert await memory.embedded(timeout=30)
        hits = (await memory.search("deploys")).hits  # hybrid falls back to lexical
        assert [h.id for h in hits] == [r.id]
        await memory.aclose()

    asyncio.run(main())


def test_close_abandons_after_the_batch_in_flight(tmp_path: Path) -> None:
    started, release = threading.Event(), threading.Event()
    batches: list[int] = []

    def slow(texts: list[str]) -> list[list[float]]:
        batches.append(len(texts))
        started.set()
        release.wait(10)
        return vecs(texts)

    async def main() -> None:
        memory = MemoryProvider(tmp_path / "m", embedder=CallableEmbedder(slow, name="slow", dim=4))

        t0 = time.perf_counter()
        await memory.remember_many([MemoryDraft(f"note number {i} about cars") for i in range(200)])
        assert time.perf_counter() - t0 < 5  # the write did not wait for embedding
        assert await asyncio.to_thread(started.wait, 10)
        meaning = _meaning(memory)
        closing = asyncio.create_task(memory.aclose())
        await asyncio.sleep(0.05)
        assert not closing.done()  # waits for the batch in flight …
        release.set()
        await asyncio.wait_for(closing, 10)
        assert not meaning.busy and len(batches) == 1  # … and starts no other
        assert meaning.vectors.count("slow") == batches[0]

    asyncio.run(main())


def test_flush_waits_for_background_embedding(tmp_path: Path) -> None:
    """flush() before exit leaves every stored record with its vector (the embedder here answers late)."""
    gate = threading.Event()

    def late(texts: list[str]) -> list[list[float]]:
        gate.wait(10)
        return vecs(texts)

    async def main() -> None:
        memory = MemoryProvider(tmp_path / "m", embedder=CallableEmbedder(late, name="late", dim=4))
        await memory.remember("Ada bought a car in May.")
        threading.Timer(0.3, gate.set).start()
        await memory.flush()
        assert _meaning(memory).vectors.count("late") == 1  # before the fix flush returned with no vector yet
        await memory.aclose()

    asyncio.run(main())


@pytest.mark.parametrize("bring_back", ["restore", "undo"])
def test_a_record_brought_back_is_embedded_again(tmp_path: Path, bring_back: str) -> None:
    """forget, a background pass prunes the archived record's vector, then restore/undo brings the record back: it
    is embedded again without a manual embed, and hybrid search finds it by meaning."""

    async def main() -> None:
        async with MemoryProvider(tmp_path / "m", embedder=CallableEmbedder(vecs, name="toy")) as memory:
            r = await memory.remember("Ada bought a car in May.", user_id="ada")
            assert await memory.embedded(timeout=30)
            await memory.forget(r.id, user_id="ada")
            await memory.remember("Bo likes tea", user_id="bo")  # another caller's write: a pass that prunes
            assert await memory.embedded(timeout=30)
            assert _meaning(memory).vectors.count("toy") == 1
            if bring_back == "restore":
                await memory.restore(r.id, user_id="ada")
            else:
                await memory.undo(user_id="ada")
            assert await memory.embedded(timeout=30)
            assert _meaning(memory).vectors.count("toy") == 2
            hits = (await memory.search("which vehicle did she purchase?", user_id="ada")).hits
            assert hits and hits[0].id == r.id

    asyncio.run(main())


def test_flush_leaves_a_stalled_embedder_behind_after_its_timeout(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A stalled embedder never hangs flush() (probe 7: it waited forever, and asyncio.run after it)."""
    stall = threading.Event()

    def stuck(texts: list[str]) -> list[list[float]]:
        stall.wait(20)
        return vecs(texts)

    async def main() -> None:
        memory = MemoryProvider(tmp_path / "m", embedder=CallableEmbedder(stuck, name="stuck", dim=4))
        await memory.remember("Ada bought a car in May.")
        t0 = time.perf_counter()
        await memory.flush(embedding_timeout=0.5)
        assert time.perf_counter() - t0 < 10
        assert "did not catch up" in caplog.text
        stall.set()
        await memory.aclose()

    asyncio.run(main())
