"""The callable embedder: a user function, sync or async, whose output is validated and normalised."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agent_memory.embeddings.base import EmbeddingError, Matrix, as_matrix, check_texts
from agent_memory.errors import InvalidInputError

__all__ = ["CallableEmbedder", "EmbedFn"]

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
        items = check_texts(texts)
        try:
            out = asyncio.run(self._coro(items)) if self._async else self.fn(items)
        except (EmbeddingError, InvalidInputError):
            raise
        except Exception as exc:
            raise EmbeddingError(f"{self.name}: embedding function failed: {exc}") from exc
        return self._finish(out, len(items))

    async def aembed(self, texts: Sequence[str]) -> Matrix:
        items = check_texts(texts)
        if not self._async:
            return await asyncio.to_thread(self.embed, items)
        try:
            out = await self._coro(items)
        except Exception as exc:
            raise EmbeddingError(f"{self.name}: embedding function failed: {exc}") from exc
        return self._finish(out, len(items))
