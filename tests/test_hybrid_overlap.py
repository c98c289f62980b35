"""The query is embedded on one worker thread while the lexical side runs (agent_memory/backends/files/hybrid.py)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _doubles import concept_vectors_for

import agent_memory.backends.files.hybrid as hybrid
from agent_memory.backends.files.fts import Fts5Engine
from agent_memory.backends.files.hybrid import hybrid_search
from agent_memory.backends.files.store import MemoryStore
from agent_memory.backends.files.vectors import VectorCache, live_items
from agent_memory.embeddings import CallableEmbedder

CONCEPTS = {"car": 0, "automobile": 0, "vehicle": 0, "buy": 1, "bought": 1, "purchase": 1, "dog": 2, "puppy": 2, "soup": 3, "broth": 3}
vectors = concept_vectors_for(CONCEPTS)
WORKER = "agent-memory-embed"


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    s = MemoryStore(tmp_path / "m", durable=False, rescan_interval=None)
    for text in ("I bought a car last week", "we adopted a puppy", "the broth was salty", "a vehicle for the dog", "soup again"):
        s.remember(text, scope="project")
    s.remember("she purchased an automobile secretly", scope="session", session_id="other")
    yield s
    s.close()


def _cache(store: MemoryStore, emb: CallableEmbedder) -> VectorCache:
    cache = VectorCache.for_root(store.root)
    cache.backfill(live_items(store.index), emb)
    return cache


def _run(store: MemoryStore, cache: VectorCache, emb: Any, q: str, **kw: Any) -> list[tuple[str, float]]:
    res = hybrid_search(store, cache, emb, q, session_id="mine", **kw)
    return [(h.id, h.score) for h in res.hits]


def test_overlap_returns_what_the_sequential_search_returns(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[str] = []

    def embed(texts: list[str]) -> Any:
        threads.append(threading.current_thread().name)
        return vectors(texts)

    emb = CallableEmbedder(embed, name="concepts")
    cache = _cache(store, emb)
    for q in ("which vehicle did they purchase?", "puppy", "salty soup", "car", "nothing matches this"):
        for mode in ("hybrid", "dense"):
            monkeypatch.setattr(hybrid, "OVERLAP", False)
            threads.clear()
            sequential = _run(store, cache, emb, q, mode=mode, trace=True)
            assert threads and not any(t.startswith(WORKER) for t in threads)
            monkeypatch.setattr(hybrid, "OVERLAP", True)
            threads.clear()
            overlapped = _run(store, cache, emb, q, mode=mode, trace=True)
            assert threads and threads[0].startswith(WORKER)  # the query was embedded on the worker
            assert overlapped == sequential


def test_the_embedding_runs_while_the_lexical_side_does(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lexical ranking waits (bounded) for the embedding to start: only an overlapped search lets it start."""
    started = threading.Event()
    seen: list[bool] = []

    def embed(texts: list[str]) -> Any:
        started.set()
        return vectors(texts)

    emb = CallableEmbedder(embed, name="concepts")
    cache = _cache(store, emb)
    started.clear()
    ranked = Fts5Engine.ranked

    def slow_ranked(self: Fts5Engine, *a: Any, **kw: Any) -> Any:
        seen.append(started.wait(10))  # True at once when the embedding runs beside us; False after 10 s if not
        return ranked(self, *a, **kw)

    monkeypatch.setattr(Fts5Engine, "ranked", slow_ranked)
    got = _run(store, cache, emb, "which vehicle did they purchase?")
    assert seen == [True] and got


def test_a_failing_embedder_still_fails_open_to_lexical(store: MemoryStore) -> None:
    def down(texts: list[str]) -> Any:
        raise ConnectionError("embedding server unreachable")

    emb = CallableEmbedder(down, name="down")
    res = hybrid_search(store, VectorCache.for_root(store.root), emb, "salty broth", trace=True)
    assert [h.snippet for h in res.hits] == ["the broth was salty"]
    assert res.trace is not None and res.trace[-1]["fallback"] == "lexical" and "unreachable" in res.trace[-1]["error"]


class _Raising:
    """An embedder that raises something other than an embedding error: it surfaces, as without the overlap."""

    name = "raising"
    dim = 4

    def embed(self, texts: list[str]) -> Any:
        raise KeyError("a bug in the embedder")


def test_other_embedder_errors_surface_as_before(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    for overlap in (False, True):
        monkeypatch.setattr(hybrid, "OVERLAP", overlap)
        with pytest.raises(KeyError, match="a bug in the embedder"):
            hybrid_search(store, VectorCache.for_root(store.root), _Raising(), "salty broth")  # type: ignore[arg-type]


def test_one_worker_thread_however_many_searches(store: MemoryStore) -> None:
    emb = CallableEmbedder(vectors, name="concepts")
    cache = _cache(store, emb)
    for i in range(30):
        _run(store, cache, emb, f"car {i}")
    assert sum(t.name.startswith(WORKER) for t in threading.enumerate()) == 1


def test_a_busy_worker_leaves_the_embedding_to_the_caller() -> None:
    gate = threading.Event()
    overlap = hybrid._Overlap()
    first = overlap.submit(lambda: (gate.wait(10), np.zeros(2, dtype=np.float32))[1])
    assert first is not None
    assert overlap.submit(lambda: np.ones(2, dtype=np.float32)) is None  # busy: never queued behind another query
    gate.set()
    assert first.result(10).tolist() == [0.0, 0.0]
    again = overlap.submit(lambda: np.ones(2, dtype=np.float32))
    assert again is not None and again.result(10).tolist() == [1.0, 1.0]


def test_concurrent_hybrid_searches_agree_with_sequential_ones(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    emb = CallableEmbedder(vectors, name="concepts")
    cache = _cache(store, emb)
    qs = ["car", "puppy", "salty soup", "vehicle purchase"] * 3
    monkeypatch.setattr(hybrid, "OVERLAP", False)
    want = {q: _run(store, cache, emb, q) for q in qs}
    monkeypatch.setattr(hybrid, "OVERLAP", True)
    got: dict[int, list[tuple[str, float]]] = {}
    errors: list[BaseException] = []

    def worker(i: int, q: str) -> None:
        try:
            got[i] = _run(store, cache, emb, q)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i, q)) for i, q in enumerate(qs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and all(got[i] == want[q] for i, q in enumerate(qs))


def test_the_nearest_vectors_are_looked_up_on_the_worker_too(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    emb = CallableEmbedder(vectors, name="concepts")
    cache = _cache(store, emb)
    where: list[str] = []
    nearest = VectorCache.nearest

    def spy(self: VectorCache, *a: Any, **kw: Any) -> Any:
        where.append(threading.current_thread().name)
        return nearest(self, *a, **kw)

    monkeypatch.setattr(VectorCache, "nearest", spy)
    monkeypatch.setattr(hybrid, "OVERLAP", False)
    sequential = _run(store, cache, emb, "vehicle purchase")
    assert where and not any(t.startswith(WORKER) for t in where)
    where.clear()
    monkeypatch.setattr(hybrid, "OVERLAP", True)
    assert _run(store, cache, emb, "vehicle purchase") == sequential
    assert where and where[0].startswith(WORKER)


def test_a_dense_failure_on_the_worker_fails_open_as_before(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cached vectors of another dimension under the same name: the nearest lookup raises an embedding error,
    on the worker or not, and the search falls back to lexical either way."""
    cache = _cache(store, CallableEmbedder(vectors, name="concepts"))
    wider = CallableEmbedder(lambda texts: np.hstack([vectors(texts), np.ones((len(texts), 3))]), name="concepts")
    for overlap in (False, True):
        monkeypatch.setattr(hybrid, "OVERLAP", overlap)
        res = hybrid_search(store, cache, wider, "salty broth", session_id="mine", trace=True)
        assert [h.snippet for h in res.hits] == ["the broth was salty"]
        assert res.trace is not None and res.trace[-1]["fallback"] == "lexical" and "dimension" in res.trace[-1]["error"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_searches_with_a_worker_of_its_own(store: MemoryStore) -> None:
    """A child forked after a hybrid search (a preforking server, multiprocessing) has no worker thread: its
    search used to wait for ever on the parent's pool."""
    emb = CallableEmbedder(vectors, name="concepts")
    cache = _cache(store, emb)
    parent = _run(store, cache, emb, "car")
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if its search answers what the parent's did
        code = 1
        try:
            signal.alarm(60)
            code = 0 if _run(store, cache, emb, "car") == parent else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
