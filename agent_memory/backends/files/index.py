"""The derived SQLite FTS5 index over record files.

Files are the truth. The index is created on first use, kept in sync incrementally
(directory mtime, then per-file mtime/size), rebuilt when missing or corrupt, and can be
deleted at any time. One connection per thread; WAL and a busy timeout let many
processes read while one writes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import agent_memory.backends.files.index_sync as _sync
from agent_memory.backends.files import link_rows
from agent_memory.backends.files.index_conn import open_connection
from agent_memory.backends.files.index_schema import (  # re-exported: the schema and SQL fragments are imported from here
    _RECORD_COLS,
    DEFAULT_FTS_TOKENIZER,
    FTS_COLUMNS,
    MIGRATIONS,
    SCHEMA_VERSION,
    _instant,
    as_of_sql,
    current_sql,
    live_sql,
    row_to_record,
    schema_sql,
    scope_filter_sql,
    time_sql,
    visibility_sql,
    visible_params,
)
from agent_memory.errors import ReadOnlyError, StorageError
from agent_memory.formats.atomic import TMP_PREFIX, RootLock, ensure_dir, storage_error, storage_errors
from agent_memory.formats.quarantine import (
    is_corrupt,  # re-exported
    read_record_file,
)
from agent_memory.model.lines import core_line, dates_text, day_text, summary_line  # re-exported
from agent_memory.model.records import MemoryRecord
from agent_memory.model.reports import SyncReport as SyncReport

_FTS_SECURE_DELETE = sqlite3.sqlite_version_info >= (3, 44, 0)
# the statements of :meth:`Index.upsert`, built once
_INSERT_RECORD = f"INSERT INTO records ({', '.join(_RECORD_COLS)}) VALUES ({', '.join(':' + c for c in _RECORD_COLS)})"
_UPDATE_RECORD = f"UPDATE records SET {', '.join(f'{c} = :{c}' for c in _RECORD_COLS)} WHERE rowid = :rid"
#: The page cache of a connection during :meth:`Index.bulk` (negative: KiB, as ``PRAGMA cache_size`` takes it).
BULK_CACHE_KIB = -131072
BULK_CHECKPOINT_PAGES = 65536  # a bulk write checkpoints once its WAL reaches 256 MiB of 4 KiB pages, not 4 MiB

__all__ = [
    "DEFAULT_FTS_TOKENIZER",
    "FTS_COLUMNS",
    "SCHEMA_VERSION",
    "Index",
    "SyncReport",
    "as_of_sql",
    "core_line",
    "current_sql",
    "dates_text",
    "day_text",
    "is_corrupt",
    "live_sql",
    "row_to_record",
    "scope_filter_sql",
    "summary_line",
    "time_sql",
    "visibility_sql",
    "visible_params",
]

log = logging.getLogger("agent_memory")


class Index:
    """SQLite FTS5 index of one memory root."""

    def __init__(
        self,
        root: Path,
        lock: RootLock,
        *,
        fts_tokenizer: str = DEFAULT_FTS_TOKENIZER,
        rescan_interval: float | None = 10.0,
        context_of: Callable[[MemoryRecord], str] | None = None,
        busy_timeout_s: float = 30.0,
        read_only: bool | None = None,
    ) -> None:
        self.root = root
        self.records_dir = root / "records"
        self.path = root / "index.db"
        self.lock = lock
        self.fts_tokenizer = fts_tokenizer
        self.rescan_interval = rescan_interval
        self.context_of = context_of or (lambda rec: str(rec.metadata.get("context") or ""))
        self.busy_timeout_s = busy_timeout_s
        self._local = threading.local()
        self.last_full_scan = 0.0
        self.scan_lock = threading.Lock()
        self.problems: dict[str, str] = {}
        # None: detect (a root that refuses writes is served from an in-memory copy of its index)
        self.read_only = read_only
        self.ro_conn: sqlite3.Connection | None = None
        # called (under the lock) after a sync changed or dropped rows behind the library's back, e.g. a file
        # quarantined by a hand edit; the store sets it to regenerate MEMORY.md
        self.on_change: Callable[[], object] | None = None
        # called (under the lock) with (record or row, hash before, hash after) for files a rescan found changed
        # outside the library; the store sets it to log ``hand_edit`` events
        self.on_hand_edit: Callable[[Sequence[tuple[Any, str | None, str | None]]], object] | None = None

    @property
    def purge_pending(self) -> bool:
        """Whether this thread's transaction deleted rows (their terms are then purged from the FTS segments)."""
        return bool(getattr(self._local, "purge", False))

    @purge_pending.setter
    def purge_pending(self, value: bool) -> None:
        self._local.purge = value

    # -- connections -------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        return open_connection(self.path, self.busy_timeout_s)

    def _ident(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_dev)

    def hold(self, *, blocking: bool = True) -> contextlib.AbstractContextManager[bool]:
        """The root lock, or nothing to hold when the root is read-only (nobody can write it through us)."""
        return contextlib.nullcontext(True) if self.read_only else self.lock.hold(blocking=blocking)

    def _read_only_conn(self) -> sqlite3.Connection:
        """An in-memory copy of the on-disk index (if readable), brought in line with the files."""
        return _sync.read_only_copy(self)

    def _detect_read_only(self) -> bool:
        if self.read_only is None:
            try:
                ensure_dir(self.root, allow_symlink=True)
                ensure_dir(self.records_dir)
                self.read_only = not os.access(self.root, os.W_OK)
            except StorageError as exc:
                if not self.root.is_dir() or "symlink" in str(exc):
                    raise
                self.read_only = True
        return self.read_only  # (a records/ symlinked later is refused by every sync: see record_files)

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection, reopened if ``index.db`` was replaced or removed.

        On a read-only root (``read_only``, or a root that refuses writes) an in-memory index is used."""
        if self.ro_conn is not None:
            return self.ro_conn
        if self._detect_read_only():
            return self._read_only_conn()
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        ident = self._ident()
        if conn is not None and ident == getattr(self._local, "ident", None) and ident is not None:
            return conn
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        self._local.conn = None
        try:
            conn = self._connect()
            self.ensure_schema(conn)
        except sqlite3.DatabaseError as exc:
            if not is_corrupt(exc):
                err = storage_error(exc, "cannot open the index")
                if isinstance(err, ReadOnlyError):
                    log.warning("index %s cannot be written (%s); serving reads from memory", self.path, exc)
                    self.read_only = True
                    return self._read_only_conn()
                raise err from exc
            log.warning("index %s unusable (%s); rebuilding from files", self.path, exc)
            conn = self._recreate()
        self._local.conn = conn
        self._local.ident = self._ident()
        return conn

    def _schema_ok(self, conn: sqlite3.Connection) -> bool:
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return False
            raise
        if row is None or row[0] != f"{SCHEMA_VERSION}|{self.fts_tokenizer}":
            return False
        conn.execute("SELECT count(*) FROM fts WHERE fts MATCH 'probe'").fetchone()  # touches FTS shadow tables
        return True

    def ensure_schema(self, conn: sqlite3.Connection) -> None:
        if self._schema_ok(conn):
            self._ensure_links(conn)
            return
        with self.hold():
            if self._schema_ok(conn):  # another process created it while we waited
                self._ensure_links(conn)
                return
            if self._migrate(conn):
                link_rows.ensure(conn)  # an index migrated in place may hold link tables of an older version too
                return
            drops = "".join(f"DROP TABLE IF EXISTS {t};" for t in ("fts", "record_tags", "records", "meta"))
            schema = f"{SCHEMA_VERSION}|{self.fts_tokenizer}".replace("'", "''")
            conn.executescript(
                f"BEGIN IMMEDIATE; {drops} {schema_sql(self.fts_tokenizer)} INSERT INTO meta VALUES ('schema', '{schema}'); COMMIT;"
            )
            link_rows.ensure(conn)

    def _ensure_links(self, conn: sqlite3.Connection) -> None:
        """The link tables' own migration step (:mod:`agent_memory.backends.files.link_rows`), under the lock."""
        if not link_rows.current(conn):
            with self.hold():
                link_rows.ensure(conn)

    def _migrate(self, conn: sqlite3.Connection) -> bool:
        """Bring an index of an older schema up to date in place when a migration exists (see
        ``index_schema.MIGRATIONS``); False when it must be rebuilt instead. Called under :meth:`hold`."""
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        except sqlite3.OperationalError:
            return False
        version, _, tokenizer = (row[0] if row else "").partition("|")
        if tokenizer != self.fts_tokenizer or version not in MIGRATIONS:
            return False
        schema = f"{SCHEMA_VERSION}|{self.fts_tokenizer}"
        with conn:
            for statement in MIGRATIONS[version]:
                conn.execute(statement)
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (schema,))
        return self._schema_ok(conn)

    def _recreate(self) -> sqlite3.Connection:
        with self.lock.hold():
            for suffix in ("", "-wal", "-shm", "-journal"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{self.path}{suffix}")
            conn = self._connect()
            self.ensure_schema(conn)
            self._local.conn = conn
            self._local.ident = self._ident()
            self.full_sync(conn=conn)
        return conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction. Failures of the disk (full, read-only, I/O) raise typed storage errors.

        After a transaction that deleted rows, the FTS segments are merged and the WAL truncated,
        so no stemmed term of a forgotten record stays in ``index.db*``."""
        if self.read_only:
            raise ReadOnlyError(f"the memory root {self.root} is read-only")
        if os.path.islink(self.root / "archive"):  # a write may archive: never out of the root
            raise StorageError(f"{self.root / 'archive'} is a symlink; memory directories must be real directories")
        conn = self.conn
        self.purge_pending = False
        with storage_errors("cannot write the index"):
            with _sync.immediate(conn):
                yield conn
            if self.purge_pending:
                self.purge(conn)

    @contextlib.contextmanager
    def bulk(self) -> Iterator[None]:
        """Settings of this thread's connection for a write of many batches (``remember_many``): a bigger page
        cache (the random-key indexes of a big store dirty pages all over the file) and automatic checkpoints every
        :data:`BULK_CHECKPOINT_PAGES` WAL pages instead of SQLite's 1,000 (so a million-record import still bounds
        its WAL), then one checkpoint at the end (PASSIVE: it never waits for readers). The WAL is as crash-safe
        with fewer checkpoints (a committed transaction is in the WAL, replayed on the next open); a kill mid-write
        leaves a longer WAL, which the next commit of any connection checkpoints as usual."""
        if self.read_only:
            yield
            return
        conn = self.conn
        with storage_errors("cannot write the index"):
            cache = int(conn.execute("PRAGMA cache_size").fetchone()[0])
            every = int(conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
            conn.execute(f"PRAGMA cache_size = {BULK_CACHE_KIB}")
            conn.execute(f"PRAGMA wal_autocheckpoint = {BULK_CHECKPOINT_PAGES}")
        try:
            yield
        finally:
            with contextlib.suppress(sqlite3.Error):
                conn.execute(f"PRAGMA cache_size = {cache}")
                conn.execute(f"PRAGMA wal_autocheckpoint = {every}")
                if not conn.in_transaction:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def purge(self, conn: sqlite3.Connection) -> None:
        """Rewrite the FTS segments (dropping deleted rows' terms) and truncate the WAL."""
        self.purge_pending = False
        if not _FTS_SECURE_DELETE:  # rewrite the segments: O(index size), the price of forgetting on SQLite < 3.44
            conn.execute("INSERT INTO fts(fts) VALUES ('optimize')")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def guarded(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run a read; if the database turns out corrupt, rebuild it from files and retry once."""
        try:
            return fn(self.conn)
        except sqlite3.DatabaseError as exc:
            if not is_corrupt(exc):
                raise
            log.warning("index %s corrupt (%s); rebuilding from files", self.path, exc)
            self.close()
            self._local.conn = self._recreate()
            self._local.ident = self._ident()
            return fn(self._local.conn)

    def healing(self, fn: Callable[[], Any]) -> Any:
        """Run a write or sync; if the index turns out corrupt, rebuild it from the files and run it once more.

        Files are written before their index rows, so a retried write finds its own file (and is idempotent)."""
        return self.guarded(lambda _conn: fn())

    # -- meta ----------------------------------------------------------------------------
    def meta(self, conn: sqlite3.Connection, key: str) -> str | None:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, conn: sqlite3.Connection, key: str, value: str) -> None:
        conn.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

    def _dir_mtime(self) -> str:
        try:
            return str(os.stat(self.records_dir).st_mtime_ns)
        except FileNotFoundError:
            return "missing"

    def mark_synced(self, conn: sqlite3.Connection) -> None:
        """Record that the index reflects the records directory as it is now (call under the lock)."""
        self.set_meta(conn, "dir_mtime", self._dir_mtime())

    # -- rows ----------------------------------------------------------------------------
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
    ) -> None:
        """Insert or replace the rows of one record (``new=True``: the caller knows the id is unused)."""
        values = {
            "id": rec.id,
            "file": file,
            "mtime_ns": mtime_ns,
            "size": size,
            "scope": rec.scope.value,
            "session_id": rec.session_id,
            "user_id": rec.user_id,
            "namespace": rec.namespace,
            "kind": rec.kind,
            "title": rec.title,
            "tags": json.dumps(list(rec.tags)) if rec.tags else "[]",
            "memory_key": rec.memory_key,
            "source": rec.source,
            "created": _instant(rec.created),
            "updated": _instant(rec.updated),
            "expires": _instant(rec.expires),
            "importance": rec.importance,
            "content_hash": rec.content_hash,
            "body_line": body_line or rec.body_line,
            "summary": summary_line(rec.content),
            "metadata": json.dumps(dict(rec.metadata), default=str),
            "happened_at": _instant(rec.happened_at),
            "valid_from": _instant(rec.valid_from),
            "valid_to": _instant(rec.valid_to),
            "superseded_by": rec.superseded_by,
            "supersedes": rec.supersedes,
        }
        row = None if new else conn.execute("SELECT rowid FROM records WHERE id = ?", (rec.id,)).fetchone()
        rid: int
        if row is None:
            inserted = conn.execute(_INSERT_RECORD, values).lastrowid
            assert inserted is not None  # an INSERT into a rowid table always sets it
            rid = inserted
        else:
            rid = row[0]
            values["rid"] = rid
            conn.execute(_UPDATE_RECORD, values)
            conn.execute("DELETE FROM fts WHERE rowid = ?", (rid,))
            conn.execute("DELETE FROM record_tags WHERE rid = ?", (rid,))
        conn.execute(
            "INSERT INTO fts (rowid, title, tags, body, context) VALUES (?, ?, ?, ?, ?)",
            (rid, rec.title, " ".join(rec.tags), rec.content, self.context_of(rec)),
        )
        if rec.tags:
            conn.executemany("INSERT INTO record_tags VALUES (?, ?)", [(rid, t) for t in rec.tags])
        link_rows.write(conn, rid, rec.id, rec.title, rec.content, new=row is None and new)

    def delete(self, conn: sqlite3.Connection, record_id: str) -> None:
        row = conn.execute("SELECT rowid FROM records WHERE id = ?", (record_id,)).fetchone()
        if row is not None:
            rid = row[0]
            conn.execute("DELETE FROM fts WHERE rowid = ?", (rid,))
            conn.execute("DELETE FROM record_tags WHERE rid = ?", (rid,))
            conn.execute("DELETE FROM records WHERE rowid = ?", (rid,))
            self.purge_pending = True
            link_rows.drop(conn, rid, record_id)

    # -- synchronisation -----------------------------------------------------------------
    def record_files(self) -> Iterator[os.DirEntry[str]]:
        """Record files under ``records/``: ``*.md``, not hidden, not temp files, never symlinks."""
        ensure_dir(self.records_dir, create=False)  # a symlinked records/ would lead outside the root
        try:
            it = os.scandir(self.records_dir)
        except FileNotFoundError:
            return
        with it:
            for entry in it:
                name = entry.name
                if not name.endswith(".md") or name.startswith((".", TMP_PREFIX)):
                    continue
                if entry.is_symlink() or not entry.is_file(follow_symlinks=False):
                    self.problems[name] = "symlink or special file ignored; fix: replace it with a regular file"
                    continue
                yield entry

    def load_file(self, name: str) -> tuple[MemoryRecord, int, int]:
        """Read, check and parse one record file (see :mod:`agent_memory.formats.quarantine`).

        Raises ``FileNotFoundError`` or :class:`RecordParseError` (the file is quarantined)."""
        return read_record_file(self.records_dir, name)

    def full_sync(self, conn: sqlite3.Connection | None = None, *, clean: bool = True) -> SyncReport:
        """Bring the index in line with every file (under the root lock); ``clean``: remove orphaned temp files."""
        return _sync.full_sync(self, conn, clean=clean)

    def rebuild_aside(self) -> SyncReport:
        """Rebuild from the files beside the live index and swap it in atomically (see :mod:`.index_sync`)."""
        return _sync.rebuild_aside(self)

    def refresh(self, *, force: bool = False, wait: bool | None = None, periodic: bool = True, bounded: bool = False) -> SyncReport | None:
        """Cheap freshness check before a read: rescan if the records directory changed
        behind the library's back, or if ``rescan_interval`` has elapsed (in-place edits).

        Unless ``wait`` (default: ``force``), a rescan never queues behind a writer: if the root
        is locked it is skipped (None), since every writer leaves the index in line with the files.
        Writers pass ``periodic=False``: for dedupe they only need files added behind their back.
        A changed directory gets a full scan; the periodic rescan, and a forced one with ``bounded``,
        a check whose cost does not grow with the store (:func:`agent_memory.backends.files.index_sync.bounded_check`).
        A rescan that cannot write (disk full, root turned read-only) is skipped: reads go on
        from the index as it is."""

        def check(conn: sqlite3.Connection) -> str | None:
            if self.meta(conn, "dir_mtime") != self._dir_mtime():
                return "full"
            if force:
                return "bounded" if bounded else "full"
            interval = self.rescan_interval
            due = periodic and interval is not None and time.monotonic() - self.last_full_scan >= interval
            return "bounded" if due else None

        mode = self.guarded(check)
        if mode is None:
            return None
        with self.hold(blocking=force if wait is None else wait) as held:
            if not held:
                return None
            with self.scan_lock:
                try:
                    report: SyncReport = self.healing(
                        self.full_sync if mode == "full" or self.read_only else lambda: _sync.bounded_check(self)
                    )
                    return report
                except StorageError as exc:
                    if self.ro_conn is not None:
                        raise
                    log.warning("index %s not refreshed (%s); serving reads from it as it is", self.path, exc)
                    return None

    def refresh_rows(self, conn: sqlite3.Connection, rows: Sequence[sqlite3.Row]) -> bool:
        """Re-index any of ``rows`` whose file changed on disk (or may no longer be served); True if so."""
        if self.read_only:
            changed = bool(_sync._changed(self, [(r["id"], r["file"], r["mtime_ns"], r["size"]) for r in rows]))
            if changed:
                with self.scan_lock, contextlib.suppress(StorageError):
                    self.full_sync()
            return changed
        return _sync.sync_rows(self, list(rows))

    def stored_problems(self) -> dict[str, str]:
        raw = self.guarded(lambda c: self.meta(c, "problems"))
        return json.loads(raw) if raw else {}

    # -- queries -------------------------------------------------------------------------
    def get_row(self, record_id: str) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self.guarded(lambda c: c.execute("SELECT rowid, * FROM records WHERE id = ?", (record_id,)).fetchone())
        return row

    def rows_where(self, where: str, params: dict[str, Any], *, order: str = "updated DESC", limit: int | None = None) -> list[sqlite3.Row]:
        sql = f"SELECT r.rowid, r.* FROM records r WHERE {where} ORDER BY {order}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        rows: list[sqlite3.Row] = self.guarded(lambda c: c.execute(sql, params).fetchall())
        return rows

    def count(self) -> int:
        return int(self.guarded(lambda c: c.execute("SELECT count(*) FROM records").fetchone()[0]))
