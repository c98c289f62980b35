"""Building the index from the files: incremental sync, the rebuild beside the live index, the
read-only in-memory copy, and removal of temp files left by killed writers. Functions of an
:class:`~agent_memory.index.Index` (its methods delegate here)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ._fs import FILE_MODE, TMP_PREFIX, storage_errors
from .errors import ReadOnlyError, StorageError
from .quarantine import check_stat, describe
from .records import RecordParseError

if TYPE_CHECKING:  # pragma: no cover
    from .index import Index

log = logging.getLogger("agent_memory")
REBUILD_SUFFIX = ".rebuild-"


@dataclass
class SyncReport:
    """What one synchronisation pass did."""

    scanned: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    problems: dict[str, str] = field(default_factory=dict)
    rebuilt: bool = False


REBUILD_SUFFIX = ".rebuild-"



def read_only_copy(index: Index) -> sqlite3.Connection:
    """An in-memory copy of the on-disk index (if readable), brought in line with the files."""
    with index._scan_lock:
        if index._ro_conn is not None:
            return index._ro_conn
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
            index._ensure_schema(conn)
        except sqlite3.DatabaseError:
            conn.close()
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            index._ensure_schema(conn)
        index._ro_conn = conn
    index.full_sync(conn=conn)
    return conn


def remove_orphaned_temps(index: Index) -> None:
    """Delete temp files of writers (records, archive, aside-built index) that died mid-write.

    Call under the lock: then every one is orphaned. A killed sweep's ``archive/.tmp-*`` holds full text."""
    for folder, prefix in ((index.records_dir, TMP_PREFIX), (index.root / "archive", TMP_PREFIX),
                           (index.root, f"{index.path.name}{REBUILD_SUFFIX}")):
        if folder.is_symlink():
            continue
        with contextlib.suppress(OSError), os.scandir(folder) as it:
            for entry in it:
                if entry.name.startswith(prefix) and not entry.is_dir(follow_symlinks=False):
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)


def full_sync(index: Index, conn: sqlite3.Connection | None = None, *, clean: bool = True) -> SyncReport:
    """Bring the index in line with every file (under the root lock); ``clean``: remove orphaned temp files."""
    conn = conn or index.conn
    report = SyncReport()
    with index._hold():
        if clean and not index.read_only:
            index._remove_orphaned_temps()
        known = {r["file"]: (r["id"], r["mtime_ns"], r["size"]) for r in conn.execute("SELECT id, file, mtime_ns, size FROM records")}
        problems: dict[str, str] = {}
        index.problems = problems
        seen: set[str] = set()
        index._local.purge = False
        hand = getattr(index, "on_hand_edit", None) if clean and known and not index.read_only else None
        edits: list[tuple[object, str | None, str | None]] = []  # hand edits: (record or row, hash before, after)
        with storage_errors("cannot update the index"):
            conn.execute("BEGIN IMMEDIATE")
            try:
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
                        rec, mtime_ns, size = index.load_file(name)
                    except FileNotFoundError:
                        seen.discard(name)
                        continue
                    except (OSError, RecordParseError) as exc:
                        problems[name] = describe(exc)
                        log.warning("quarantined record file %r: %s", name, exc)
                        if old is not None:
                            index.delete(conn, old[0])
                        continue
                    if hand is not None:
                        prior = conn.execute("SELECT content_hash FROM records WHERE file = ?", (name,)).fetchone()
                        if prior is None or prior[0] != rec.content_hash:
                            edits.append((rec, prior[0] if prior else None, rec.content_hash))
                    if old is not None and old[0] != rec.id:
                        index.delete(conn, old[0])
                    clash = conn.execute("SELECT file FROM records WHERE id = ?", (rec.id,)).fetchone()
                    if clash is not None and clash[0] != name:
                        problems[name] = f"duplicate id {rec.id!r} (also {clash[0]}); fix: rename one of them"
                        continue
                    index.upsert(conn, rec, name, mtime_ns, size, new=old is None and clash is None)
                    if old is None:
                        report.added += 1
                    else:
                        report.updated += 1
                for name, (rid, _, _) in known.items():
                    if name not in seen:
                        gone = conn.execute("SELECT * FROM records WHERE id = ?", (rid,)).fetchone() if hand else None
                        if gone is not None:
                            edits.append((gone, gone["content_hash"], None))
                        index.delete(conn, rid)
                        report.removed += 1
                index._set_meta(conn, "problems", json.dumps(problems))
                index.mark_synced(conn)
                conn.execute("COMMIT")
                if edits and hand is not None:
                    hand(edits)
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            dropped = getattr(index._local, "purge", False)
            if dropped and not index.read_only:
                index.purge(conn)
        if (dropped or report.updated) and index.on_change is not None and not index.read_only and clean:
            with contextlib.suppress(StorageError):
                index.on_change()
    report.problems = dict(problems)
    index._last_full_scan = time.monotonic()
    return report


def rebuild_aside(index: Index) -> SyncReport:
    """Rebuild the whole index from the files in a new database beside it, then copy it over the
    live one in a single step (SQLite's backup API, one transaction): concurrent readers keep
    their snapshot and then see the complete new index, never a partial or empty one. A rebuild
    killed midway leaves the live index untouched (its temp file is removed on the next sync)."""
    with index._hold():
        if index.read_only:
            raise ReadOnlyError(f"the memory root {index.root} is read-only")
        index._remove_orphaned_temps()
        tmp = index.path.with_name(f"{index.path.name}{REBUILD_SUFFIX}{os.getpid()}")
        with storage_errors("cannot rebuild the index"):
            fresh = sqlite3.connect(tmp, isolation_level=None, check_same_thread=False)
            try:
                os.chmod(tmp, FILE_MODE)
                fresh.row_factory = sqlite3.Row
                fresh.execute("PRAGMA journal_mode = OFF")
                fresh.execute("PRAGMA synchronous = OFF")
                fresh.execute("PRAGMA cache_size = -65536")
                index._ensure_schema(fresh)
                report = index.full_sync(conn=fresh, clean=False)
                live = index.conn
                index._local.purge = False
                fresh.backup(live)
                live.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                fresh.close()
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
    report.rebuilt = True
    return report
