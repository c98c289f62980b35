"""Building the index from the files: incremental sync, the rebuild beside the live index, the
read-only in-memory copy, and removal of temp files left by killed writers. Functions of an
:class:`~agent_memory.backends.files.index.Index` (its methods delegate here), which they see only
through :class:`SyncedIndex`: the public parts of an index a sync uses (so this module does not import
the index's, which imports it)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from agent_memory.backends.files.index_schema import FILE_ROW_SQL
from agent_memory.errors import ReadOnlyError, StorageError
from agent_memory.formats.atomic import FILE_MODE, TMP_PREFIX, RootLock, storage_errors
from agent_memory.formats.quarantine import Quarantined, check_stat, describe
from agent_memory.model.records import MemoryRecord, RecordParseError
from agent_memory.model.reports import SyncReport

log = logging.getLogger("agent_memory")
REBUILD_SUFFIX = ".rebuild-"
CHECK_SLICE = 10_000  # files one bounded check stats at least (all of a store up to this size)
CHECK_ROUNDS = 20  # a larger store is fully checked within this many bounded checks
MAX_RECHECKED_PROBLEMS = 1_000  # quarantined files re-read by each bounded check


class SyncedIndex(Protocol):
    """What a sync uses of an index (:class:`~agent_memory.backends.files.index.Index` is one)."""

    root: Path
    records_dir: Path
    path: Path  # index.db
    lock: RootLock
    read_only: bool | None
    problems: dict[str, str]  # file name -> why it is quarantined, as the last sync found
    on_change: Callable[[], object] | None
    on_hand_edit: Callable[[Sequence[tuple[Any, str | None, str | None]]], object] | None
    scan_lock: threading.Lock  # one scan at a time per index object
    ro_conn: sqlite3.Connection | None  # the in-memory copy a read-only root is served from
    last_full_scan: float  # time.monotonic() of the last scan that left the index in line with the files
    purge_pending: bool  # this thread's transaction deleted rows: their terms are to be purged

    @property
    def conn(self) -> sqlite3.Connection: ...

    def hold(self, *, blocking: bool = True) -> contextlib.AbstractContextManager[bool]: ...

    def ensure_schema(self, conn: sqlite3.Connection) -> None: ...

    def meta(self, conn: sqlite3.Connection, key: str) -> str | None: ...

    def set_meta(self, conn: sqlite3.Connection, key: str, value: str) -> None: ...

    def mark_synced(self, conn: sqlite3.Connection) -> None: ...

    def record_files(self) -> Iterator[os.DirEntry[str]]: ...

    def load_file(self, name: str) -> tuple[MemoryRecord, int, int]: ...

    def upsert(
        self,
        conn: sqlite3.Connection,
        rec: MemoryRecord,
        file: str,
        mtime_ns: int,
        size: int,
        *,
        body_line: int | None = None,
        new: bool = False,
    ) -> None: ...

    def delete(self, conn: sqlite3.Connection, record_id: str) -> None: ...

    def purge(self, conn: sqlite3.Connection) -> None: ...

    def full_sync(self, conn: sqlite3.Connection | None = None, *, clean: bool = True) -> SyncReport: ...


@contextlib.contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction taken at once (``BEGIN IMMEDIATE``): committed at the end, rolled back on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def read_only_copy(index: SyncedIndex) -> sqlite3.Connection:
    """An in-memory copy of the on-disk index (if readable), brought in line with the files."""
    with index.scan_lock:
        if index.ro_conn is not None:
            return index.ro_conn
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        if os.path.isfile(index.path) and not os.path.islink(index.path):
            try:
                src = sqlite3.connect(f"file:{index.path}?immutable=1", uri=True)
                src.backup(conn)
                src.close()
            except sqlite3.Error as exc:
                log.warning("cannot copy read-only index %s (%s); indexing the files in memory", index.path, exc)
        try:
            index.ensure_schema(conn)
        except sqlite3.DatabaseError:
            conn.close()
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            index.ensure_schema(conn)
        index.ro_conn = conn
    index.full_sync(conn=conn)
    return conn


def remove_orphaned_temps(index: SyncedIndex, *, records: bool = True, archive: bool = True) -> None:
    """Delete temp files of writers (records, archive, aside-built index) that died mid-write.

    Call under the lock: then every one is orphaned. A killed sweep's ``archive/.tmp-*`` holds full text."""
    folders = [(index.root, f"{index.path.name}{REBUILD_SUFFIX}")]
    if records:
        folders.append((index.records_dir, TMP_PREFIX))
    if archive:
        folders.append((index.root / "archive", TMP_PREFIX))
    for folder, prefix in folders:
        if folder.is_symlink():
            continue
        with contextlib.suppress(OSError), os.scandir(folder) as it:
            for entry in it:
                if entry.name.startswith(prefix) and not entry.is_dir(follow_symlinks=False):
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)


def _archive_mtime(index: SyncedIndex) -> str:
    try:
        return str(os.stat(index.root / "archive", follow_symlinks=False).st_mtime_ns)
    except OSError:
        return "missing"


def _clean_cheaply(index: SyncedIndex, conn: sqlite3.Connection) -> None:
    """Orphaned temps, without listing ``records/``: a writer killed there left the directory's mtime
    changed, which makes the next check a full scan (and that cleans it); ``archive/`` is listed only
    when its mtime moved since the last clean."""
    archive = _archive_mtime(index) != index.meta(conn, "archive_mtime")
    remove_orphaned_temps(index, records=False, archive=archive)
    if archive:
        index.set_meta(conn, "archive_mtime", _archive_mtime(index))


def full_sync(index: SyncedIndex, conn: sqlite3.Connection | None = None, *, clean: bool = True) -> SyncReport:
    """Bring the index in line with every file (under the root lock); ``clean``: remove orphaned temp files."""
    conn = conn or index.conn
    report = SyncReport()
    with index.hold():
        if clean and not index.read_only:
            remove_orphaned_temps(index)
        known = {r["file"]: (r["id"], r["mtime_ns"], r["size"]) for r in conn.execute("SELECT id, file, mtime_ns, size FROM records")}
        problems: dict[str, str] = {}
        index.problems = problems
        seen: set[str] = set()
        index.purge_pending = False
        hand = index.on_hand_edit if clean and known and not index.read_only else None
        edits: list[tuple[object, str | None, str | None]] = []  # hand edits: (record or row, hash before, after)
        with storage_errors("cannot update the index"):
            with immediate(conn):
                for entry in index.record_files():
                    report.scanned += 1
                    name = entry.name
                    seen.add(name)
                    old = known.get(name)
                    try:
                        st = entry.stat(follow_symlinks=False)
                        check_stat(st)  # cheap: a chmod 000 or a new hard link keeps mtime, and must not be served
                        if old is not None and old[1] == st.st_mtime_ns and old[2] == st.st_size:
                            continue
                    except FileNotFoundError:
                        seen.discard(name)
                        continue
                    except (OSError, RecordParseError) as exc:
                        _quarantine(index, conn, name, old, exc, problems)
                        continue
                    _sync_file(
                        index, conn, name, old, problems, report, edits if hand is not None else None
                    )  # a file gone meanwhile is dropped there
                for name, (rid, _, _) in known.items():
                    if name not in seen:
                        gone = conn.execute("SELECT * FROM records WHERE id = ?", (rid,)).fetchone() if hand else None
                        if gone is not None:
                            edits.append((gone, gone["content_hash"], None))
                        index.delete(conn, rid)
                        report.removed += 1
                index.set_meta(conn, "problems", json.dumps(problems))
                index.mark_synced(conn)
            if edits and hand is not None:
                hand(edits)
            dropped = index.purge_pending
            if dropped and not index.read_only:
                index.purge(conn)
        if (dropped or report.updated) and index.on_change is not None and not index.read_only and clean:
            with contextlib.suppress(StorageError):
                index.on_change()
    report.problems = dict(problems)
    index.last_full_scan = time.monotonic()
    if not index.read_only and conn is index.conn:  # a full scan of the live index: whatever was left is found
        index.lock.unclean = False
    return report


def _quarantine(
    index: SyncedIndex, conn: sqlite3.Connection, name: str, old: tuple[str, int, int] | None, exc: BaseException, problems: dict[str, str]
) -> None:
    problems[name] = describe(exc)
    log.warning("quarantined record file %r: %s", name, exc)
    if old is not None:
        index.delete(conn, old[0])


def _sync_file(
    index: SyncedIndex,
    conn: sqlite3.Connection,
    name: str,
    old: tuple[str, int, int] | None,
    problems: dict[str, str],
    report: SyncReport,
    edits: list[tuple[object, str | None, str | None]] | None = None,
) -> bool:
    """Read and index one new or changed file (in the caller's transaction); False if it is gone.

    ``edits`` collects hand edits (record, hash before, hash after) for the event log."""
    try:
        rec, mtime_ns, size = index.load_file(name)
    except FileNotFoundError:
        if old is not None:
            index.delete(conn, old[0])
            report.removed += 1
        return False
    except (OSError, RecordParseError) as exc:
        _quarantine(index, conn, name, old, exc, problems)
        return True
    problems.pop(name, None)
    if edits is not None:
        prior = conn.execute(FILE_ROW_SQL.format(cols="content_hash"), {"name": name, "stem": name.removesuffix(".md")}).fetchone()
        if prior is None or prior[0] != rec.content_hash:
            edits.append((rec, prior[0] if prior else None, rec.content_hash))
    if old is not None and old[0] != rec.id:
        index.delete(conn, old[0])
    clash = conn.execute("SELECT file FROM records WHERE id = ?", (rec.id,)).fetchone()
    if clash is not None and clash[0] != name:
        problems[name] = f"duplicate id {rec.id!r} (also {clash[0]}); fix: rename one of them"
        return True
    index.upsert(conn, rec, name, mtime_ns, size, new=old is None and clash is None)
    if old is None:
        report.added += 1
    else:
        report.updated += 1
    return True


def slice_size(rows: int) -> int:
    """How many indexed files one bounded check stats: all of them up to :data:`CHECK_SLICE`, else enough
    that :data:`CHECK_ROUNDS` checks cover the whole store."""
    return max(CHECK_SLICE, -(-rows // CHECK_ROUNDS))


def _changed(index: SyncedIndex, rows: Sequence[Sequence[Any]]) -> list[Sequence[Any]]:
    """The ``(id, file, mtime_ns, size, …)`` rows whose file's (mtime, size) differ from the index,
    or that may no longer be served."""
    base = f"{index.records_dir}{os.sep}"
    stat_of = os.stat
    out = []
    for row in rows:
        try:
            st = stat_of(base + row[1], follow_symlinks=False)
            if st.st_mtime_ns != row[2] or st.st_size != row[3]:
                out.append(row)
                continue
            check_stat(st)
        except (OSError, Quarantined):
            out.append(row)
    return out


def _regular(index: SyncedIndex, name: str) -> bool:
    """True if ``records/name`` is a regular file (a symlink or special file keeps its problem as it is)."""
    try:
        return stat.S_ISREG(os.lstat(index.records_dir / name).st_mode)
    except OSError:
        return True  # gone: re-checking it drops its problem


def _cursor(index: SyncedIndex) -> int:
    """Where the last bounded check stopped: a note in the lock file (a cursor in the index would make every
    open a write transaction, and the index file's sync the largest part of a cold search's wall time)."""
    note = index.lock.note()
    if note.startswith(b"cursor "):
        with contextlib.suppress(ValueError):
            return max(0, int(note[7:]))
    return 0


def bounded_check(index: SyncedIndex) -> SyncReport:
    """The freshness check of an open (and of the periodic rescan), in time that does not grow with the store.

    Call under the root lock. The directory's mtime (compared by :meth:`Index.refresh` before this is
    called) already tells of files added, removed or renamed, e.g. by an editor that saves by rename; what
    it cannot tell is a file rewritten in place. For those this stats the next :func:`slice_size` indexed
    files after a cursor kept in the lock file (every file when the store is that small), plus every
    quarantined file, and re-reads only the ones that changed; when nothing changed it writes nothing. A store of N records is thus fully
    checked by every open up to 10,000 records, and within ⌈N / slice⌉ ≤ 20 opens beyond."""
    if index.lock.unclean:  # a holder of the lock died mid-work: what it left may not show in any mtime
        return full_sync(index)
    conn = index.conn
    report = SyncReport()
    top = conn.execute("SELECT max(rowid) FROM records").fetchone()[0] or 0
    size = slice_size(top)
    cursor = _cursor(index)
    if cursor >= top:
        cursor = 0
    rows = conn.execute(
        "SELECT id, file, mtime_ns, size, rowid FROM records WHERE rowid > ? ORDER BY rowid LIMIT ?", (cursor, size)
    ).fetchall()
    if len(rows) < size and cursor:  # wrap around
        rows += conn.execute(
            "SELECT id, file, mtime_ns, size, rowid FROM records WHERE rowid <= ? ORDER BY rowid LIMIT ?", (cursor, size - len(rows))
        ).fetchall()
    report.scanned = len(rows)
    changed = _changed(index, rows)
    problems = dict(json.loads(index.meta(conn, "problems") or "{}"))
    index.problems = problems
    quarantined = [n for n in problems if n.endswith(".md") and os.sep not in n and _regular(index, n)][:MAX_RECHECKED_PROBLEMS]
    new_cursor = rows[-1][4] if rows and len(rows) < top else 0
    index.lock.set_note(b"cursor %d" % new_cursor)
    if not changed and not quarantined and _archive_mtime(index) == index.meta(conn, "archive_mtime"):
        remove_orphaned_temps(index, records=False, archive=False)  # a killed rebuild's database beside the index
        index.last_full_scan = time.monotonic()  # nothing to write: no index transaction (and no WAL to sync)
        return report
    with storage_errors("cannot update the index"):
        with immediate(conn):
            index.purge_pending = False
            for row in changed:
                _sync_file(index, conn, row[1], (row[0], row[2], row[3]), problems, report)
            for name in quarantined:
                if name not in {row[1] for row in changed}:
                    old_row = conn.execute(
                        FILE_ROW_SQL.format(cols="id, mtime_ns, size"), {"name": name, "stem": name.removesuffix(".md")}
                    ).fetchone()
                    if not _sync_file(index, conn, name, tuple(old_row) if old_row else None, problems, report):
                        problems.pop(name, None)
            index.set_meta(conn, "problems", json.dumps(problems))
            if not index.read_only:
                _clean_cheaply(index, conn)
        if index.purge_pending and not index.read_only:
            index.purge(conn)
    if (report.updated or report.removed) and index.on_change is not None and not index.read_only:
        with contextlib.suppress(StorageError):
            index.on_change()
    report.problems = dict(problems)
    index.last_full_scan = time.monotonic()
    return report


def sync_rows(index: SyncedIndex, rows: Sequence[sqlite3.Row]) -> bool:
    """Re-index the files of ``rows`` that changed on disk (a search's hits); True if any did.

    Only those files are read, so a hand-edited hit costs one parse, not a scan of the store."""
    changed = _changed(index, [(r["id"], r["file"], r["mtime_ns"], r["size"]) for r in rows])
    if not changed:
        return False
    with index.hold(blocking=False) as held:  # not held: a writer is mid-write and will index it
        if held:
            with index.scan_lock, contextlib.suppress(StorageError):
                conn = index.conn
                problems = dict(json.loads(index.meta(conn, "problems") or "{}"))
                report = SyncReport()
                with storage_errors("cannot update the index"):
                    with immediate(conn):
                        index.purge_pending = False
                        for row in changed:
                            _sync_file(index, conn, row[1], (row[0], row[2], row[3]), problems, report)
                        index.set_meta(conn, "problems", json.dumps(problems))
                    if index.purge_pending and not index.read_only:
                        index.purge(conn)
                index.problems = problems
                if index.on_change is not None and not index.read_only:
                    with contextlib.suppress(StorageError):
                        index.on_change()
    return True


def rebuild_aside(index: SyncedIndex) -> SyncReport:
    """Rebuild the whole index from the files in a new database beside it, then copy it over the
    live one in a single step (SQLite's backup API, one transaction): concurrent readers keep
    their snapshot and then see the complete new index, never a partial or empty one. A rebuild
    killed midway leaves the live index untouched (its temp file is removed on the next sync)."""
    with index.hold():
        if index.read_only:
            raise ReadOnlyError(f"the memory root {index.root} is read-only")
        remove_orphaned_temps(index)
        tmp = index.path.with_name(f"{index.path.name}{REBUILD_SUFFIX}{os.getpid()}")
        with storage_errors("cannot rebuild the index"):
            fresh = sqlite3.connect(tmp, isolation_level=None, check_same_thread=False)
            try:
                os.chmod(tmp, FILE_MODE)
                fresh.row_factory = sqlite3.Row
                fresh.execute("PRAGMA journal_mode = OFF")
                fresh.execute("PRAGMA synchronous = OFF")
                fresh.execute("PRAGMA cache_size = -65536")
                index.ensure_schema(fresh)
                report = index.full_sync(conn=fresh, clean=False)
                live = index.conn
                index.purge_pending = False
                fresh.backup(live)
                live.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                index.lock.unclean = False
            finally:
                fresh.close()
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
    report.rebuilt = True
    return report
