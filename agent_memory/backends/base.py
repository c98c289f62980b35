"""The storage seam: one narrow, async protocol every backend implements, and the caller identity.

Tools and workers depend on :class:`MemoryBackend` and a :class:`Caller`, never on the provider.
Optional features are capability protocols a backend implements or not: :class:`LifecycleBackend`,
:class:`SessionsBackend`, :class:`EpisodesBackend`, :class:`VectorsBackend`. Callers ask :func:`capability`
(``isinstance`` through an extension wrapper) or :func:`require` (else :class:`~agent_memory.errors.UnsupportedError`).
:class:`FilesBackend` adapts the synchronous files-and-SQLite :class:`~agent_memory.backends.files.store.MemoryStore`
(each call runs in a worker thread, so the event loop never blocks on disk or locks).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, cast, runtime_checkable

from agent_memory.errors import UnsupportedError
from agent_memory.model.scopes import Isolation, check_isolation, check_namespace, visible_namespaces

if TYPE_CHECKING:  # annotations only: a PostgreSQL process never imports the files store
    from agent_memory.embeddings import Embedder
    from agent_memory.episodes import Episodes
    from agent_memory.model.drafts import MemoryDraft, RememberResult
    from agent_memory.model.events import Event
    from agent_memory.model.links import RecordLinks
    from agent_memory.model.records import MemoryRecord
    from agent_memory.model.reports import BackfillReport, DoctorReport, History, PurgeReport, SweepReport, SyncReport
    from agent_memory.search.types import SearchResult
    from agent_memory.sessions import SessionStore

T = TypeVar("T")
C = TypeVar("C")

__all__ = [
    "Caller",
    "MemoryBackend",
    "LifecycleBackend",
    "SessionsBackend",
    "EpisodesBackend",
    "VectorsBackend",
    "RecordedEmbedder",
    "LinksBackend",
    "PartitionLockBackend",
    "capability",
    "require",
]


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is asking: fixed by the application, never by a model's tool arguments.

    ``namespace`` (``acme/support``; None is the root) is where the caller's writes land; ``isolation`` is what
    else it reads (``full``, ``inherited``, ``shared``; None: the one the root's namespace registry configured for
    the namespace, else ``inherited``). See ``docs/namespaces.md`` and :mod:`agent_memory.model.scopes`."""

    session_id: str | None = None
    user_id: str | None = None
    namespace: str | None = None
    isolation: Isolation | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "namespace", check_namespace(self.namespace) or None)
        object.__setattr__(self, "isolation", check_isolation(self.isolation))

    def kwargs(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "user_id": self.user_id}

    def own_view(self) -> tuple[str, ...]:
        """The namespaces this caller may *change* (forget, restore, undo): its own only, never an ancestor's."""
        return (self.namespace or "",)

    def view(self, registry: Mapping[str, Mapping[str, Any]] | None = None) -> tuple[str, ...]:
        """The namespaces this caller reads (:func:`~agent_memory.model.scopes.visible_namespaces`), given the
        root's namespace registry (``{namespace: {"shared": bool, "isolation": str}}``)."""
        if not self.namespace:
            return ("",)
        reg = registry or {}
        isolation = self.isolation or check_isolation((reg.get(self.namespace) or {}).get("isolation"))
        return visible_namespaces(self.namespace, isolation, [ns for ns, cfg in reg.items() if cfg.get("shared")])


@runtime_checkable
class MemoryBackend(Protocol):
    """What a memory store must do. Visibility is applied inside every read, before any limit."""

    async def remember(self, draft: MemoryDraft, *, source: str = "tool") -> RememberResult: ...

    async def remember_many(
        self,
        drafts: Iterable[MemoryDraft],
        *,
        source: str = "import",
        on_error: Literal["raise", "skip"] = "raise",
        errors: builtins.list[tuple[int, str]] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> builtins.list[RememberResult]: ...

    async def supersede(self, old_id: str, draft: MemoryDraft, *, source: str = "tool") -> RememberResult: ...

    async def get(self, record_id: str, caller: Caller) -> MemoryRecord: ...

    async def list(self, caller: Caller, *, limit: int | None = 50, **filters: Any) -> builtins.list[MemoryRecord]: ...

    async def count(self, caller: Caller, **filters: Any) -> int: ...

    async def search(self, query: str, caller: Caller, *, limit: int = 10, **options: Any) -> SearchResult: ...

    async def forget(self, record_id: str, caller: Caller) -> bool: ...

    async def core_lines(self, caller: Caller, limit: int | None) -> builtins.list[str]: ...

    async def user_md(self) -> str: ...

    async def sweep(self) -> SweepReport: ...

    async def reindex(self) -> SyncReport: ...

    async def doctor(self) -> DoctorReport: ...

    async def close(self) -> None: ...


# -- optional capabilities: a backend implements each or not; ask with capability()/require() ------------------
@runtime_checkable
class LifecycleBackend(Protocol):
    """History, restore, undo, the event log, provenance and purge (``docs/lifecycle.md``)."""

    async def history(self, record_id: str, caller: Caller) -> History: ...

    async def restore(self, record_id: str, caller: Caller, *, version: int | None = None) -> MemoryRecord: ...

    async def undo(self, caller: Caller) -> Event: ...

    async def events(self, caller: Caller, *, record_id: str | None = None, limit: int | None = None) -> builtins.list[Event]: ...

    async def provenance(self, record_id: str, caller: Caller) -> dict[str, Any]: ...

    async def purge(
        self, record_id: str | None = None, *, session_id: str | None = None, user_id: str | None = None, namespace: str | None = None
    ) -> PurgeReport: ...

    async def forget_purge(self, record_id: str, caller: Caller) -> bool: ...


@runtime_checkable
class SessionsBackend(Protocol):
    """Session logs and summaries (``docs/sessions.md``), behind a visibility-checked :class:`SessionStore`."""

    @property
    def sessions(self) -> SessionStore: ...


@runtime_checkable
class EpisodesBackend(Protocol):
    """One episode per agent run (``agent_memory.episodes``), behind a store with the :class:`Episodes` API."""

    @property
    def episodes(self) -> Episodes: ...


@dataclass(frozen=True)
class RecordedEmbedder:
    """The embedder a store's vectors were made with: its model name, the spec that rebuilds it (``local``,
    ``local:PATH``, a litellm model id; None when it cannot be rebuilt from a name, e.g. a user function) and how
    many vectors it made (None when the backend does not count them). What a search without an embedder uses
    (:mod:`agent_memory.backends.vector_choice`)."""

    model: str
    spec: str | None
    vectors: int | None = None


@runtime_checkable
class VectorsBackend(Protocol):
    """Dense and hybrid search over derived vectors (``docs/meaning.md``): an embedder attached or not, a backfill,
    and which embedder made the vectors already stored (``recorded_embedder``: None when there are none)."""

    @property
    def embedder(self) -> Embedder | None: ...

    def use_embedder(self, embedder: Embedder | str | None) -> None: ...

    async def embed(self, progress: Callable[[int, int], None] | None = None) -> BackfillReport: ...

    async def embedded(self, timeout: float | None = None) -> bool: ...

    async def recorded_embedder(self) -> RecordedEmbedder | None: ...


@runtime_checkable
class LinksBackend(Protocol):
    """Links between records (``[[id]]``/``[[Title]]`` in bodies; :mod:`agent_memory.model.links`): one record's
    outgoing links and backlinks, resolved among the records the caller may see."""

    async def links(self, record_id: str, caller: Caller) -> RecordLinks: ...


@runtime_checkable
class PartitionLockBackend(Protocol):
    """A lock on one partition held across several calls, in every process using the store: what makes a capped
    write (count, then write: curated lines, :mod:`agent_memory.agents.curated`) atomic. ``key`` names the partition."""

    def partition_lock(self, key: str) -> AbstractAsyncContextManager[None]: ...


def capability(backend: object, protocol: Callable[..., C]) -> C | None:
    """``backend`` as ``protocol`` (a capability protocol above, or a backend class) if it offers it, else None.

    An extension wrapper (:class:`~agent_memory.backends.extended.ExtendedBackend`: an ``inner`` backend in its
    instance dict) offers what the backend it wraps offers; the wrapped backend is returned. (``protocol`` is typed
    as a callable because mypy refuses a protocol class where ``type[C]`` is expected.)"""
    kind = cast(type, protocol)
    seen: object | None = backend
    for _ in range(16):  # wrappers of wrappers, never a loop
        if isinstance(seen, kind):
            return cast(C, seen)
        seen = vars(seen).get("inner") if hasattr(seen, "__dict__") else None
        if seen is None:
            return None
    return None


def require(
    backend: object, protocol: Callable[..., C], feature: str, hint: str | None = None, *, error: type[UnsupportedError] = UnsupportedError
) -> C:
    """:func:`capability`, or ``error`` (an :class:`~agent_memory.errors.UnsupportedError`) naming ``feature`` and
    the backend (the wrapped one, not an extension wrapper), in the one wording of :meth:`UnsupportedError.of`."""
    found = capability(backend, protocol)
    if found is None:
        raise error.of(feature, innermost(backend), hint)
    return found


def innermost(backend: object) -> object:
    """The backend under any extension wrappers (itself when it is none)."""
    for _ in range(16):
        inner = vars(backend).get("inner") if hasattr(backend, "__dict__") else None
        if inner is None:
            break
        backend = inner
    return backend
