"""A root with vectors is searched with them by default: the embedder recorded with the vectors, no flag
(CLI subprocess and MemoryProvider); ``--mode lexical`` still lexical; another model's vectors → lexical with a
one-line notice, never ranked by the wrong model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agent_memory import MemoryProvider, MemoryStore
from agent_memory.backends.files.vector_meta import recorded
from agent_memory.backends.files.vectors import VectorCache, live_items
from agent_memory.embeddings import CallableEmbedder, LocalEmbedder, embedder_spec, local_model_available, make_embedder

needs_model = pytest.mark.skipif(not local_model_available(), reason="local embedding model not installed")
CLI = [sys.executable, "-m", "agent_memory.cli"]


def toy(texts: list[str]) -> np.ndarray:
    return np.array([[1.0, float(len(t) % 7), 0.5] for t in texts], dtype=np.float32)


def cli(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "AGENT_MEMORY_EMBEDDER"} | (env or {})
    return subprocess.run(
        [*CLI, "--root", str(root), *args], capture_output=True, text=True, timeout=300, env=full, stdin=subprocess.DEVNULL
    )


def stages(proc: subprocess.CompletedProcess[str]) -> set[str]:
    assert proc.returncode == 0, proc.stderr
    return {
        str(s.get("stage")) for s in json.loads(proc.stdout)["trace"] if "model" in s or s.get("stage") != "dense"
    }  # a dense stage that ran


def ids(proc: subprocess.CompletedProcess[str]) -> set[str]:
    assert proc.returncode == 0, proc.stderr
    return {h["id"] for h in json.loads(proc.stdout)["hits"]}


def two_users(root: Path) -> dict[str, str]:
    with MemoryStore(root, durable=False) as s:
        a = s.remember("Alice researched adoption agencies in the spring", user_id="alice", scope="user").id
        b = s.remember("Bob researched adoption agencies for his sister", user_id="bob", scope="user").id
        p = s.remember("The team deploys on Fridays after the review", scope="project").id
    return {"alice": a, "bob": b, "project": p}


def test_specs_round_trip_through_make_embedder(tmp_path: Path) -> None:
    assert embedder_spec(LocalEmbedder()) == "local"
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "modules.json").write_text("[]")
    made = make_embedder(f"local:{tmp_path / 'm'}")
    assert made is not None and embedder_spec(made) == f"local:{tmp_path / 'm'}"
    assert embedder_spec(CallableEmbedder(toy, name="toy")) is None


def test_vectors_record_their_embedder_and_a_prune_forgets_the_old_one(tmp_path: Path) -> None:
    two_users(tmp_path)
    assert recorded(tmp_path) is None  # no vectors.db: nothing recorded, nothing created
    assert not (tmp_path / "vectors.db").exists()
    with MemoryStore(tmp_path, durable=False) as s:
        s.open()
        items = list(live_items(s.index))
    cache = VectorCache.for_root(tmp_path)
    cache.backfill(items, CallableEmbedder(toy, name="toy"), prune=True)
    found = recorded(tmp_path)
    assert found is not None and (found.model, found.spec, found.vectors) == ("toy", None, 3)
    cache.put("all-MiniLM-L6-v2", [h for h, _ in items], np.eye(3, 384, dtype=np.float32))
    cache.prune("all-MiniLM-L6-v2", [h for h, _ in items])  # what `embed` with the local model does after it
    cache.close()
    found = recorded(tmp_path)
    assert found is not None and (found.model, found.spec) == ("all-MiniLM-L6-v2", "local")  # the packaged name maps back


def test_other_models_vectors_mean_lexical_with_a_notice(tmp_path: Path) -> None:
    made = two_users(tmp_path)
    with MemoryStore(tmp_path, durable=False, embedder=CallableEmbedder(toy, name="toy")) as s:
        assert s.embed().embedded == 3
    plain = cli(tmp_path, "search", "adoption agencies", "--user", "alice", "--json", "--trace")
    assert "dense" not in stages(plain) and "toy" in plain.stderr and len(plain.stderr.strip().splitlines()) == 1
    assert ids(plain) == {made["alice"]}  # alice never sees bob's
    other = cli(tmp_path, "search", "adoption agencies", "--json", "--trace", "--user", "alice", env={"AGENT_MEMORY_EMBEDDER": "local"})
    assert "dense" not in stages(other) and "not all-MiniLM-L6-v2" in other.stderr  # never ranked by another model's vectors
    assert ids(other) == {made["alice"]}
    provider = MemoryProvider(tmp_path)
    try:
        assert provider.backend.embedder is None  # type: ignore[attr-defined]  # a user function cannot be rebuilt: lexical
    finally:
        provider.close()


@needs_model
def test_cli_search_uses_the_vectors_without_a_flag(tmp_path: Path) -> None:
    made = two_users(tmp_path)
    before = cli(tmp_path, "search", "kid placement organisations", "--user", "alice", "--json", "--trace")
    assert "dense" not in stages(before) and ids(before) == set()  # no vectors yet: lexical, no shared word
    assert cli(tmp_path, "embed").returncode == 0
    assert recorded(tmp_path) is not None and recorded(tmp_path).spec == "local"  # type: ignore[union-attr]
    after = cli(tmp_path, "search", "kid placement organisations", "--user", "alice", "--json", "--trace")
    assert "dense" in stages(after) and after.stderr == ""
    assert made["alice"] in ids(after) and made["bob"] not in ids(after)  # meaning found it; bob's stays hidden
    lexical = cli(tmp_path, "search", "kid placement organisations", "--user", "alice", "--json", "--trace", "--mode", "lexical")
    assert "dense" not in stages(lexical) and ids(lexical) == set()
    bob = cli(tmp_path, "search", "kid placement organisations", "--user", "bob", "--json")
    assert made["bob"] in ids(bob) and made["alice"] not in ids(bob)


@needs_model
async def test_provider_uses_the_recorded_embedder(tmp_path: Path) -> None:
    made = two_users(tmp_path)
    with MemoryStore(tmp_path, durable=False, embedder="local") as s:
        s.embed()
    provider = MemoryProvider(tmp_path)
    try:
        emb: Any = provider.backend.embedder  # type: ignore[attr-defined]
        assert emb is not None and emb.name == "all-MiniLM-L6-v2"
        res = await provider.search("kid placement organisations", user_id="alice", trace=True)
        assert made["alice"] in {h.id for h in res.hits} and made["bob"] not in {h.id for h in res.hits}
        assert any(s.get("stage") == "dense" and s.get("model") == "all-MiniLM-L6-v2" for s in res.trace or [])
    finally:
        provider.close()
    off = MemoryProvider(tmp_path, embedder="none")
    try:
        assert off.backend.embedder is None  # type: ignore[attr-defined]  # an explicit "none" keeps it lexical
    finally:
        off.close()
