"""The litellm embedder: any provider litellm speaks to (OpenAI, Ollama, vLLM, …).

``litellm`` is imported on the first request, never when this module is imported.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from agent_memory.embeddings.base import EmbedderNotInstalledError, EmbeddingError, Matrix, as_matrix, check_texts
from agent_memory.errors import InvalidInputError, needs_extra

__all__ = ["LiteLLMEmbedder"]


class LiteLLMEmbedder:
    """Embeddings from any provider through ``litellm.embedding`` / ``litellm.aembedding`` (optional extra)."""

    def __init__(
        self,
        model: str,
        *,
        dim: int | None = None,
        batch_size: int = 64,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        name: str | None = None,
        **options: Any,
    ) -> None:
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
        with needs_extra("LiteLLMEmbedder", EmbedderNotInstalledError):
            import litellm
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
        items = check_texts(texts)
        with needs_extra("LiteLLMEmbedder", EmbedderNotInstalledError):
            import numpy as np

        if not items:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        lib = self._litellm()
        parts = []
        for i in range(0, len(items), self.batch_size):
            batch = items[i : i + self.batch_size]
            try:
                resp = lib.embedding(model=self.model, input=batch, **self.options)
            except Exception as exc:
                raise EmbeddingError(f"{self.name}: embedding request failed: {exc}") from exc
            parts.append(self._rows(resp, len(batch)))
        return np.vstack(parts)

    async def aembed(self, texts: Sequence[str]) -> Matrix:
        items = check_texts(texts)
        with needs_extra("LiteLLMEmbedder", EmbedderNotInstalledError):
            import numpy as np

        if not items:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        lib = self._litellm()
        parts = []
        for i in range(0, len(items), self.batch_size):
            batch = items[i : i + self.batch_size]
            try:
                resp = await lib.aembedding(model=self.model, input=batch, **self.options)
            except Exception as exc:
                raise EmbeddingError(f"{self.name}: embedding request failed: {exc}") from exc
            parts.append(self._rows(resp, len(batch)))
        return np.vstack(parts)
