"""What every embedder shares: the :class:`Embedder` protocol, :class:`EmbeddingError` and the output check.

An embedder takes a batch of texts and returns a float32 matrix of unit-length rows. It records its ``name``
(part of the vector cache key, so a new model means re-embedding) and its ``dim``. :func:`as_matrix` validates
and normalises whatever an embedder's backend returned; :func:`check_texts` refuses anything but a sequence of
strings before a model or a provider is asked.

numpy (the ``embeddings`` extra) is imported when an embedder first returns vectors, not with this module: without
it, importing any embedder works and embedding raises :class:`EmbedderNotInstalledError` (a :class:`~agent_memory.errors.MissingExtraError`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

from agent_memory.errors import BackendError, InvalidInputError, MissingExtraError, needs_extra

__all__ = ["Embedder", "EmbedderNotInstalledError", "EmbeddingError", "Matrix", "as_matrix", "check_texts", "quietly"]

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import numpy.typing as npt

    Matrix: TypeAlias = npt.NDArray[np.float32]
else:
    Matrix = Any  # at run time only a name: numpy is imported on first use (the embeddings extra)


class EmbeddingError(BackendError):
    """An embedder failed or returned something that is not one finite vector per text."""


class EmbedderNotInstalledError(EmbeddingError, MissingExtraError):
    """What an embedder needs is not installed (numpy, the local model, litellm): a :class:`MissingExtraError`
    naming the extra to install, and an :class:`EmbeddingError`, so a search that falls back to lexical when its
    embedder fails still does (and says why in its trace)."""


@runtime_checkable
class Embedder(Protocol):
    """Texts in, an ``(len(texts), dim)`` float32 matrix of L2-normalised rows out."""

    name: str

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Matrix: ...

    async def aembed(self, texts: Sequence[str]) -> Matrix: ...


def check_texts(texts: Sequence[str]) -> list[str]:
    """The texts as a list, refusing one bare string or a non-string item."""
    if isinstance(texts, str):
        raise InvalidInputError("embed() takes a sequence of texts, not one string")
    out = list(texts)
    for t in out:
        if not isinstance(t, str):
            raise InvalidInputError(f"embed() texts must be strings, got {type(t).__name__}")
    return out


def as_matrix(vectors: Any, count: int, dim: int | None = None, *, source: str = "embedder") -> Matrix:
    """Validate and L2-normalise an embedder's output (zero rows stay zero)."""
    with needs_extra("embedding texts", EmbedderNotInstalledError):
        import numpy as np

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


def quietly(load: Callable[[], Any]) -> Any:
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
