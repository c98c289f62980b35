"""What the files store's helpers may use of it: :class:`StoreParts`.

The helper modules (writes in :mod:`.batch`, :mod:`.keyed`, :mod:`.supersede` and :mod:`.record_files`;
:mod:`.history`, :mod:`.lifecycle`, :mod:`.purge`, :mod:`.maintenance`, :mod:`.reads`, :mod:`.hybrid` and
:mod:`.meaning`) take the store as a :class:`StoreParts`, never as a
:class:`~agent_memory.backends.files.store.MemoryStore`: they see its public parts named here, and the
store's module imports them without their importing it back. :class:`MemoryStore` satisfies this
protocol (``mypy`` checks it wherever the store passes itself to a helper).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from agent_memory.backends.files.events import EventLog
from agent_memory.backends.files.fts import SearchEngine
from agent_memory.backends.files.index import Index
from agent_memory.formats.atomic import RootLock
from agent_memory.model.events import Event
from agent_memory.model.records import MemoryRecord, Scope
from agent_memory.model.reports import SyncReport
from agent_memory.search.types import SearchResult

__all__ = ["StoreParts"]


class StoreParts(Protocol):
    """One root's files store as its helpers see it."""

    root: Path
    records_dir: Path  # <root>/records: the live record files
    records_str: str  # str(records_dir), joined with file names on hot paths
    archive_dir: Path  # <root>/archive: forgotten and swept records (restorable)
    history_dir: Path  # <root>/history: kept versions
    default_scope: Scope | None
    durable: bool  # fsync writes
    strict_visibility: bool  # rank with the caller's visible records' statistics only
    lock: RootLock  # held by every write
    index: Index
    events: EventLog
    engine: SearchEngine  # the lexical engine

    def open(self) -> SyncReport | None:
        """Bring the index in line with the files (cheaply; see ``MemoryStore.open``)."""
        ...

    def write_memory_md(self) -> Path:
        """Regenerate ``MEMORY.md`` after a change."""
        ...

    def event(self, kind: str, rec: Any, **kw: Any) -> Event | None:
        """Log one change of ``rec`` (a record or an index row): the seam every mutation reports through."""
        ...

    def stamp(self, rec: MemoryRecord) -> MemoryRecord:
        """``rec`` with its ``metadata.provenance`` brought up to date (every record file written carries it)."""
        ...

    def visible_row(self, record_id: str, session_id: str | None, user_id: str | None) -> Any:
        """The index row of ``record_id`` if the caller may see it, else None."""
        ...

    def get(self, record_id: str, *, session_id: str | None = None, user_id: str | None = None) -> MemoryRecord:
        """One record the caller may see, fresh from its file (else :class:`~agent_memory.errors.NotFoundError`)."""
        ...

    @property
    def search(self) -> Callable[..., SearchResult]:
        """The store's search (``MemoryStore.search``: its keyword filters)."""
        ...
