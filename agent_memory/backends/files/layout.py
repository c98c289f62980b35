"""What a files memory root holds: one static table, so no store can be forgotten.

Every file or folder the library keeps under a root is one :class:`RootEntry` of :data:`ROOT_LAYOUT`: where it
is, what it holds, whether it is derived (rebuilt from the others, never exported), whose data it holds, how a
purge removes a user's or session's bytes from it, and which section of a portable export carries it.

The operations that must visit every store iterate this table instead of keeping their own list:

- :func:`agent_memory.backends.files.purge.purge` runs one step per entry that holds owned data (``owned=True``) and its
  report names every store it visited (``PurgeReport.stores``); a test fails when an entry has no step;
- ``agent-memory doctor`` checks the entries that declare a ``doctor`` check;
- export/import: :func:`exported` lists the entries a lossless export must carry, each with its section name
  (``records``, ``archive``, ``history``, ``sessions``, ``episodes``, ``events``); derived entries are rebuilt on
  import and never copied.

A new store is added here first; the tests in ``tests/test_root_layout.py`` then fail until purge handles it
and a fully used root holds no path this table does not name. Module-level registration at import time is
gone: which stores exist never depends on which modules happen to be imported.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "ROOT_LAYOUT",
    "SCAN_LIMIT",
    "RootEntry",
    "PurgeJob",
    "contained_root",
    "covers",
    "derived",
    "enclosing_root",
    "entry",
    "exported",
    "inventory",
    "is_root",
    "missing_root",
    "outside_roots",
    "owned",
]

Section = Literal["records", "archive", "history", "sessions", "episodes", "events", "recalls", "namespaces"]


@dataclass(frozen=True, slots=True)
class RootEntry:
    """One store under a memory root."""

    name: str
    path: str  # relative to the root; a trailing "/" marks a directory
    holds: str
    derived: bool  # rebuilt from other entries when missing; never exported
    owned: bool  # holds data of particular users/sessions: a user/session purge must visit it
    purge: str  # how a purge removes an owner's bytes from it (or why it does not)
    export: Section | None = None  # the portable-export section that carries it (None: not exported)
    siblings: tuple[str, ...] = ()  # companion files a SQLite database leaves beside it
    doctor: bool = False  # `agent-memory doctor` checks it (see agent_memory.cli._maint.layer_problems)

    @property
    def is_dir(self) -> bool:
        return self.path.endswith("/")

    def location(self, root: str | Path) -> Path:
        """Where this store is under ``root``."""
        return Path(root) / self.path.rstrip("/")

    def files(self, root: str | Path) -> list[Path]:
        """The entry's file(s) under ``root`` that exist: itself and its siblings (a folder: the folder)."""
        base = self.location(root)
        out = [Path(f"{base}{suffix}") for suffix in ("", *self.siblings)]
        return [p for p in out if p.exists() or p.is_symlink()]


_SQLITE = ("-wal", "-shm", "-journal")

ROOT_LAYOUT: tuple[RootEntry, ...] = (
    RootEntry(
        "records",
        "records/",
        "live memory records and their superseded versions, one Markdown file each",
        derived=False,
        owned=True,
        purge="files of the owner's records (and of the versions they superseded)",
        export="records",
        doctor=True,
    ),
    RootEntry(
        "archive",
        "archive/",
        "forgotten, swept and consolidated records (restorable)",
        derived=False,
        owned=True,
        purge="archived copies of the owner's records",
        export="archive",
        doctor=True,
    ),
    RootEntry(
        "history",
        "history/",
        "kept earlier versions of records (older layout; read and purged)",
        derived=False,
        owned=True,
        purge="kept versions of the owner's records",
        export="history",
    ),
    RootEntry(
        "index",
        "index.db",
        "SQLite FTS5 index of records (rows, stemmed terms)",
        derived=True,
        owned=True,
        purge="rows and terms deleted, VACUUM, WAL checkpointed and truncated",
        siblings=_SQLITE,
        doctor=True,
    ),
    RootEntry(
        "vectors",
        "vectors.db",
        "embedding cache keyed by model and content hash (and vectors.db-snap/, its memory-mappable snapshot per model)",
        derived=True,
        owned=True,
        purge="vectors of purged content hashes deleted, VACUUM, WAL truncated; the snapshot deleted",
        siblings=(*_SQLITE, "-snap"),
    ),
    RootEntry(
        "events",
        "events/",
        "the event log: one JSON line per change (who, when, hashes)",
        derived=False,
        owned=True,
        purge="the owner's lines become tombstones (ids hashed, details dropped); one `purged` event per record",
        export="events",
        doctor=True,
    ),
    RootEntry(
        "recall_log",
        "recalled.log",
        "ids of records handed to a model (consolidation's decay input)",
        derived=False,
        owned=True,
        purge="lines of purged record ids removed",
        export="recalls",
    ),
    RootEntry(
        "consolidation_runs",
        "consolidation.log",
        "consolidation run history: when, what changed or was skipped and why, drift (ids and reasons, no text)",
        derived=False,
        owned=True,
        purge="changes of purged records removed; the purged owner's runs lose their caller",
    ),
    RootEntry(
        "memory_md",
        "MEMORY.md",
        "generated list of project/global records",
        derived=True,
        owned=True,
        purge="regenerated without the purged records",
    ),
    RootEntry(
        "user_md",
        "USER.md",
        "hand-written stable preferences of the root's owner",
        derived=False,
        owned=False,
        purge="not touched: the root owner's own file, no user's or session's data",
    ),
    RootEntry(
        "namespaces",
        "namespaces.json",
        "the namespace registry: which namespaces are marked shared and their default isolation (docs/namespaces.md)",
        derived=False,
        owned=False,
        purge="not touched: configuration (namespace names and flags), no user's or session's data",
        export="namespaces",
    ),
    RootEntry(
        "sessions",
        "sessions/",
        "session logs, summaries and their cached vectors, per user and session",
        derived=False,
        owned=True,
        purge="the owner's session directories removed (logs, summaries, vectors)",
        export="sessions",
        doctor=True,
    ),
    RootEntry(
        "episode_index",
        "episodes/.index.db",
        "SQLite FTS5 index of episodes",
        derived=True,
        owned=True,
        purge="dropped (rebuilt from the files at the next read)",
        siblings=_SQLITE,
    ),
    RootEntry(
        "episodes",
        "episodes/",
        "one Markdown file per agent run, by month",
        derived=False,
        owned=True,
        purge="the owner's episode files removed (quarantined ones judged by their owner lines)",
        export="episodes",
        doctor=True,
    ),
    RootEntry(
        "locks",
        ".lock",
        "lock files (root, .partition.lock for capped writes, episodes/.lock); hold no data",
        derived=True,
        owned=False,
        purge="not touched: empty",
    ),
)

_BY_NAME = {e.name: e for e in ROOT_LAYOUT}
_LOCK_FILES = (".lock", ".partition.lock", "episodes/.lock")


def entry(name: str) -> RootEntry:
    """The entry called ``name`` (``KeyError`` when there is none)."""
    return _BY_NAME[name]


def exported() -> tuple[RootEntry, ...]:
    """The entries a lossless export of a whole root carries (the export hook: iterate these)."""
    return tuple(e for e in ROOT_LAYOUT if e.export is not None)


def derived() -> tuple[RootEntry, ...]:
    """The entries rebuilt from the others (safe to delete; never exported)."""
    return tuple(e for e in ROOT_LAYOUT if e.derived)


def owned() -> tuple[RootEntry, ...]:
    """The entries holding data of particular users or sessions: what a user/session purge visits, in order."""
    return tuple(e for e in ROOT_LAYOUT if e.owned)


def covers(relpath: str) -> RootEntry | None:
    """The entry a path relative to the root belongs to (the most specific one), or None if none names it."""
    rel = relpath.replace("\\", "/").lstrip("/")
    if rel in _LOCK_FILES:
        return _BY_NAME["locks"]
    best: RootEntry | None = None
    for e in ROOT_LAYOUT:
        base = e.path.rstrip("/")
        names = (base, *(base + s for s in e.siblings))
        if rel in names or (e.is_dir and rel.startswith(e.path)):
            if best is None or len(e.path) > len(best.path):
                best = e
    return best


def inventory(root: str | Path) -> list[dict[str, Any]]:
    """Per entry: whether it exists under ``root`` and its top-level size in bytes (files: the file and its
    siblings; folders: not walked, so this stays cheap at any size). For stats and doctor."""
    out = []
    for e in ROOT_LAYOUT:
        present = e.files(root)
        size = sum(p.stat().st_size for p in present if p.is_file() and not p.is_symlink()) if not e.is_dir else None
        out.append({"name": e.name, "path": e.path, "present": bool(present), "derived": e.derived, "bytes": size, "holds": e.holds})
    return out


@dataclass(frozen=True)
class PurgeJob:
    """What one purge removes, as each store's purge step sees it.

    ``record_id`` for one record (then ``ids`` holds it and the versions it superseded), else every item of one
    owner (:func:`agent_memory.model.scopes.owns`): ``user_id`` alone, that user's ``session_id``, or ``session_id``
    alone for the session without a user. ``store`` is the files ``MemoryStore``."""

    root: Path
    store: Any
    record_id: str | None
    session_id: str | None
    user_id: str | None
    ids: frozenset[str] = frozenset()
    files: frozenset[Path] = frozenset()
    hashes: frozenset[str] = frozenset()
    namespace: str | None = None  # a namespace purge: only items in it and its descendants (with or without an owner)


_ROOT_MARKS = ("index.db", "MEMORY.md", "events", "archive", ".lock")


def _is_root(path: Path) -> bool:
    """A memory root around a path: ``records/`` and one of the files a root holds once opened (``init`` opens it),
    so a project's own ``records/`` folder, empty or of notes, does not make the project a memory root."""
    return (path / "records").is_dir() and any((path / mark).exists() for mark in _ROOT_MARKS)


def is_root(path: str | Path) -> bool:
    """Is ``path`` a memory root a command has opened (``records/`` and one of a root's own files)?"""
    return _is_root(Path(path))


def enclosing_root(path: str | os.PathLike[str], *, itself: bool = False) -> Path | None:
    """The memory root ``path`` lies inside (``itself``: or is), or None: its parents are tried as written (made
    absolute) and with every symlink followed, so a link into a root (or a root reached through one) is caught.
    The one test of "a path inside a memory root": a missing root's error, a write creating a root, an output file."""
    given = Path(path).absolute()
    for candidate in (given, given.resolve()):
        for above in ((candidate,) if itself else ()) + tuple(candidate.parents):
            if _is_root(above):
                return above
    return None


#: The folders :func:`contained_root` looks into besides the path itself: the folders a root keeps (``records/``,
#: ``archive/``, ``history/``, ``events/``, ``sessions/``, ``episodes/``), where a root made by mistake would sit.
_ROOT_DIRS = tuple(e.path.rstrip("/") for e in ROOT_LAYOUT if e.is_dir and "/" not in e.path.rstrip("/"))
#: At most this many entries of one folder are looked at (a home directory is never walked).
SCAN_LIMIT = 4096


def contained_root(path: str | Path) -> Path | None:
    """A memory root inside ``path`` (not ``path`` itself), or None: what makes ``path`` a folder no root may be
    made of (a root around a root would hold the inner one's files as its own, and every path in the inner one
    would lie inside two roots). Bounded, so a folder as large as a home directory costs a few ``stat`` calls:
    ``path``'s own children and the children of the folders a root keeps under it (``records/``, ``archive/``, …)
    are tried, at most :data:`SCAN_LIMIT` entries of each folder; a root deeper down is not looked for."""
    base = Path(path)
    for folder in (base, *(base / name for name in _ROOT_DIRS)):
        try:
            with os.scandir(folder) as entries:
                for n, item in enumerate(entries):
                    if n >= SCAN_LIMIT:
                        break
                    if item.is_dir() and _is_root(Path(item.path)):
                        return Path(item.path)
        except OSError:  # missing, not a folder, unreadable: nothing found there
            continue
    return None


def outside_roots(path: str | os.PathLike[str], label: str, what: str = "write it outside every memory root") -> Path:
    """``path`` as a :class:`~pathlib.Path` if it is neither a memory root nor inside one (followed through symlinks),
    else an ``InvalidInputError`` naming ``label`` (the option or argument), the root, and ``what`` to do instead.

    The one check of a path a caller is about to write that is not a root's own: an export file or tree (the
    CLI's ``--out`` and :func:`agent_memory.portable.export_records` alike), where a file would replace or be read
    as the root's own data (a record, ``USER.md``, ``index.db``), and the folder ``eval`` keeps its roots in."""
    from agent_memory.errors import InvalidInputError

    above = enclosing_root(path, itself=True)
    if above is not None:
        given = Path(path).absolute()
        where = "is the memory root" if above in (given, given.resolve()) else f"is inside the memory root {above}"
        raise InvalidInputError(f"{label} {os.fspath(path)} {where}: {what} (nothing was written)")
    return Path(path)


def missing_root(root: str) -> Exception:
    """The error every command but ``init`` gives for a ``--root`` that is not a memory root (nothing is created):
    a path inside a root (``ROOT/records``) names that root instead of suggesting a root nested in it."""
    from agent_memory.errors import NotFoundError

    above = enclosing_root(root)
    if above is not None:
        return NotFoundError(f"no memory root at {root}: it is inside the memory root {above} (pass --root {above})")
    return NotFoundError(f"no memory root at {root} (create one with `agent-memory init {root}`, or pass --root)")
