"""Episode files under a memory root, and the small derived SQLite FTS5 index that lists and searches them.

Files are the truth (``episodes/<yyyy-mm>/<id>.md``, written atomically under a lock); the index
(``episodes/.index.db``) follows them: a read rescans (file mtime and size) when a month directory
changed behind the store's back or ``rescan_interval`` has passed, and re-checks the files of the
episodes it returns (a hand edit is never served stale). It is rebuilt when missing or damaged and
may be deleted at any time. A file the store cannot fully understand is
quarantined: no read serves it, :meth:`EpisodeStore.doctor` names it with the reason.
Every read obeys the records' visibility table, inside the query, before the limit.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agent_memory.episodes._files import MAX_EPISODE_BYTES, MONTH, drop_index, entries, owned, read_episode, read_episode_file, scan, stamp
from agent_memory.episodes._model import (
    STATUSES,
    Episode,
    EpisodeParseError,
    ToolUse,
    episode_month,
    gated,
    parse_episode,
    validate_episode_id,
)
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.formats.atomic import RootLock, atomic_write, ensure_dir, private_file, storage_errors
from agent_memory.formats.quarantine import describe, is_corrupt
from agent_memory.model import scopes
from agent_memory.model.records import Scope
from agent_memory.model.values import shown
from agent_memory.search.text import STOP_WORDS, cjk_unigrams, default_tokenizer, phrase, split_cjk

__all__ = ["EpisodeStore", "MAX_EPISODE_BYTES", "purge_episodes", "stamp_namespace"]

log = logging.getLogger("agent_memory")

DIR = "episodes"
INDEX = ".index.db"
SCHEMA = "2"  # 2: the namespace column
MAX_LIMIT = 1000
_VISIBLE = scopes.sqlite_sql("e")  # scope, owners and the namespace view (bound for the call: scopes.viewing)


def _check_caller(**values: Any) -> None:
    for name, value in values.items():
        if value is not None and (not isinstance(value, str) or "\x00" in value):
            raise InvalidInputError(f"{name} must be a string")
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidInputError(f"{name} is not valid Unicode") from None


def query_terms(query: str) -> list[str]:
    """The query's distinct terms (the index's tokenizer and stop words; stop words kept if nothing else is left)."""
    tokens = list(dict.fromkeys(split_cjk(default_tokenizer(query))))
    content = [t for t in tokens if t not in STOP_WORDS]
    return (content or tokens)[:64]


OnChange = Callable[[str, Episode, "str | None", "str | None"], None]
"""Told of a deletion or restore: ``(event, episode, caller session_id, caller user_id)`` (the backend logs it)."""
DELETED = "deleted"  # episodes/deleted/<yyyy-mm>/<id>.md: deleted episodes, restorable, never listed


class EpisodeStore:
    """Episodes of one memory root: write, get, list (newest first), search by terms, doctor, purge."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        lock_timeout_s: float = 30.0,
        rescan_interval: float = 10.0,
        on_change: OnChange | None = None,
    ) -> None:
        self.root = Path(root)
        self.on_change = on_change
        self.rescan_interval = rescan_interval
        self.dir = self.root / DIR
        self.index_path = self.dir / INDEX
        self.lock = RootLock(self.dir / ".lock", lock_timeout_s)

    # -- paths --------------------------------------------------------------------------------
    def path_of(self, episode_id: str) -> Path:
        return self.dir / episode_month(episode_id) / f"{validate_episode_id(episode_id)}.md"

    # -- write --------------------------------------------------------------------------------
    def write(self, episode: Episode) -> Episode:
        """Store ``episode`` (a new file, atomically, under the lock) in the writer's namespace
        (:func:`stamp_namespace`); returns it with its ``path``."""
        episode = stamp_namespace(gated(episode))  # the write gate, whoever built the episode
        path = self.path_of(episode.id)
        text = episode.render()
        parse_episode(text, episode.id)  # never write what could not be read back
        with storage_errors("cannot write the episode"):
            ensure_dir(self.root, allow_symlink=True)
            ensure_dir(self.dir)
            with self.lock.hold():
                before = self._signature()
                ensure_dir(path.parent)
                if path.exists():
                    raise InvalidInputError(f"episode {episode.id} exists already")
                atomic_write(path, text.encode("utf-8"))
                st = os.stat(path)
                with contextlib.suppress(sqlite3.Error, OSError):  # else the next read's rescan catches up
                    self._index_one(f"{path.parent.name}/{path.name}", (st.st_mtime_ns, st.st_size), before)
        return episode if episode.path == str(path) else _with_path(episode, path)

    def replace(self, episode: Episode) -> Episode:
        """Rewrite an existing episode's file (a refinement: same id, owner and run facts); atomically, locked."""
        episode = gated(episode)  # the write gate, whoever built the episode
        path = self.path_of(episode.id)
        text = episode.render()
        parse_episode(text, episode.id)
        with storage_errors("cannot rewrite the episode"), self.lock.hold():
            if not path.exists():
                raise NotFoundError(f"no episode {episode.id}")
            current = parse_episode(path.read_text(encoding="utf-8"), episode.id)
            if (current.scope, current.session_id, current.user_id, current.namespace, current.started) != (
                episode.scope,
                episode.session_id,
                episode.user_id,
                episode.namespace,
                episode.started,
            ):
                raise InvalidInputError(f"episode {episode.id}: a refinement cannot change its owner or run")
            before = self._signature()
            atomic_write(path, text.encode("utf-8"))
            st = os.stat(path)
            with contextlib.suppress(sqlite3.Error, OSError):
                self._index_one(f"{path.parent.name}/{path.name}", (st.st_mtime_ns, st.st_size), before)
        return _with_path(episode, path)

    # -- delete and restore ---------------------------------------------------------------------
    def deleted_path(self, episode_id: str) -> Path:
        return self.dir / DELETED / episode_month(episode_id) / f"{validate_episode_id(episode_id)}.md"

    def delete(self, episode_id: str, *, session_id: str | None = None, user_id: str | None = None) -> Episode:
        """Move one episode the caller may see to ``episodes/deleted/`` (never listed; :meth:`restore` brings it
        back); :class:`NotFoundError` if the caller sees no such episode."""
        return self._move(episode_id, session_id, user_id, restore=False)

    def restore(self, episode_id: str, *, session_id: str | None = None, user_id: str | None = None) -> Episode:
        """Bring back an episode :meth:`delete` moved away, if the caller may see it."""
        return self._move(episode_id, session_id, user_id, restore=True)

    def _move(self, episode_id: str, session_id: str | None, user_id: str | None, *, restore: bool) -> Episode:
        _check_caller(session_id=session_id, user_id=user_id)
        live, gone = self.path_of(episode_id), self.deleted_path(episode_id)
        src, dst = (gone, live) if restore else (live, gone)
        hidden = NotFoundError(f"no {'deleted ' if restore else ''}episode {shown(episode_id)} visible to this caller")
        with storage_errors("cannot move the episode"), self.lock.hold():
            try:
                episode = read_episode_file(src, src.name)
            except (FileNotFoundError, EpisodeParseError):
                raise hidden from None
            if not visible(episode, session_id, user_id):
                raise hidden
            if dst.exists():
                raise InvalidInputError(f"episode {episode_id} exists already where it would go")
            before = self._signature()
            ensure_dir(self.dir / DELETED)
            ensure_dir(dst.parent)
            os.replace(src, dst)
            file = f"{live.parent.name}/{live.name}"
            with contextlib.suppress(sqlite3.Error, OSError):  # else the next read's rescan catches up
                if restore:
                    st = os.stat(dst)
                    self._index_one(file, (st.st_mtime_ns, st.st_size), before)
                else:
                    with self._conn() as conn:
                        self._forget(conn, file)
        if self.on_change is not None:  # outside the episodes lock: the log takes the root's (purge takes root, then ours)
            self.on_change("episode_restored" if restore else "episode_deleted", episode, session_id, user_id)
        return _with_path(episode, dst)

    # -- read ---------------------------------------------------------------------------------
    def get(self, episode_id: str, *, session_id: str | None = None, user_id: str | None = None) -> Episode:
        """One episode the caller may see; hidden, missing and quarantined are the same :class:`NotFoundError`."""
        _check_caller(session_id=session_id, user_id=user_id)
        path = self.path_of(episode_id)
        try:
            episode = read_episode_file(path, path.name)
        except (FileNotFoundError, EpisodeParseError):
            raise NotFoundError(f"no episode {shown(episode_id)} visible to this caller") from None
        if not visible(episode, session_id, user_id):
            raise NotFoundError(f"no episode {shown(episode_id)} visible to this caller")
        return episode

    def list(
        self,
        query: str | None = None,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        limit: int = 20,
        status: str | None = None,
    ) -> builtins.list[Episode]:
        """The caller's visible episodes: newest first, or, with ``query``, best match first (ties newest first)."""
        _check_caller(session_id=session_id, user_id=user_id, query=query)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise InvalidInputError(f"limit must be a whole number from 1 to {MAX_LIMIT}")
        if status is not None and status not in STATUSES:
            raise InvalidInputError(f"status must be one of {', '.join(STATUSES)}")
        if not self.dir.is_dir():
            return []
        terms = query_terms(query) if query else []
        params: dict[str, Any] = {**scopes.sqlite_params(session_id, user_id), "limit": limit, "status": status}
        where = f"{_VISIBLE} AND (:status IS NULL OR e.status = :status)"
        cols = "e.data, f.file, f.mtime_ns, f.size FROM"
        if terms:
            params["q"] = " OR ".join(phrase(t) for t in terms)
            sql = (
                f"SELECT {cols} fts JOIN episodes e ON e.rowid = fts.rowid JOIN files f ON f.file = e.file"
                f" WHERE fts MATCH :q AND {where} ORDER BY bm25(fts, 2.0, 1.0, 0.5), e.started DESC, e.id DESC"
                " LIMIT :limit"
            )
        else:
            sql = f"SELECT {cols} episodes e JOIN files f ON f.file = e.file WHERE {where} ORDER BY e.started DESC, e.id DESC LIMIT :limit"
        with self._conn() as conn:
            self._sync(conn)
            rows = conn.execute(sql, params).fetchall()
            if any(stamp(self.dir / file) != (m, z) for _, file, m, z in rows):  # a returned file changed by hand
                self._sync(conn, force=True)
                rows = conn.execute(sql, params).fetchall()
        return [_from_row(self.dir, row[0]) for row in rows]

    def count(self) -> int:
        """How many episode files are indexed (every scope; for status and tests)."""
        if not self.dir.is_dir():
            return 0
        with self._conn() as conn:
            self._sync(conn, force=True)
            return int(conn.execute("SELECT count(*) FROM episodes").fetchone()[0])

    def doctor(self) -> builtins.list[dict[str, str]]:
        """``[{path, reason}]`` for every episode file no read serves (quarantined), each with a fix."""
        if not self.dir.is_dir():
            return []
        with self._conn() as conn:
            self._sync(conn, force=True)
            rows = conn.execute("SELECT file, error FROM files WHERE error IS NOT NULL ORDER BY file").fetchall()
        out = [{"path": str(self.dir / f), "reason": e} for f, e in rows]
        for entry in entries(self.dir):
            if entry.is_file(follow_symlinks=False) and entry.name.endswith(".md"):
                out.append({"path": entry.path, "reason": "episode file outside a month directory; fix: move it to episodes/<yyyy-mm>/"})
        return out

    def reindex(self) -> int:
        """Drop the derived index and rebuild it from the files; returns the number of episodes."""
        if not self.dir.is_dir():
            return 0
        with self.lock.hold():
            drop_index(self.index_path)
        return self.count()

    # -- purge --------------------------------------------------------------------------------
    def drop_index(self) -> bool:
        """Delete the derived index (with its WAL): no copy of a purged episode's text stays in it; it is rebuilt
        from the files at the next read. Returns whether there was one."""
        if not self.dir.is_dir():
            return False
        with self.lock.hold(), storage_errors("cannot drop the episode index"):
            existed = any(os.path.lexists(f"{self.index_path}{s}") for s in ("", "-wal", "-shm", "-journal"))
            drop_index(self.index_path)
        return existed

    def purge(
        self, *, user_id: str | None = None, session_id: str | None = None, anonymous: bool = False, namespace: str | None = None
    ) -> int:
        """Delete every episode of ``user_id`` and/or ``session_id`` (both given: that user's episodes in that session;
        ``anonymous=True`` with a session alone: only the episodes of that session that name no user); ``namespace``:
        only those in that namespace and its descendants (alone: every episode there).

        Files go (quarantined ones too, matched by their owner lines), and the derived index is
        dropped so no copy of their text remains in it; it is rebuilt from the files at the next read.
        """
        if user_id is None and session_id is None and not namespace:
            raise InvalidInputError("purge_episodes needs a user_id, a session_id or a namespace")
        namespace = None if namespace is None else scopes.check_namespace(namespace)
        if anonymous and (user_id is not None or session_id is None):
            raise InvalidInputError("purge_episodes: anonymous=True takes a session_id and no user_id")
        _check_caller(user_id=user_id, session_id=session_id)
        if not self.dir.is_dir():
            return 0
        removed = 0
        with self.lock.hold(), storage_errors("cannot purge episodes"):
            for month in entries(self.dir):
                if not (month.is_dir(follow_symlinks=False) and MONTH.fullmatch(month.name)):
                    continue
                for entry in entries(Path(month.path)):
                    if entry.name.endswith(".md") and owned(
                        Path(entry.path), user_id, session_id, anonymous=anonymous, namespace=namespace
                    ):
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(entry.path)
                            removed += 1
                with contextlib.suppress(OSError):
                    os.rmdir(month.path)  # only when empty
            for month in entries(self.dir / DELETED):  # deleted episodes are the owner's bytes too
                for entry in entries(Path(month.path)):
                    if entry.name.endswith(".md") and owned(
                        Path(entry.path), user_id, session_id, anonymous=anonymous, namespace=namespace
                    ):
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(entry.path)
                            removed += 1
            drop_index(self.index_path)
        return removed

    # -- the index ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        with storage_errors("episode index"):
            ensure_dir(self.dir)
            conn = self._open()
            try:
                yield conn
            finally:
                conn.close()

    def _open(self) -> sqlite3.Connection:
        for attempt in (1, 2):
            conn = sqlite3.connect(private_file(self.index_path), timeout=30, isolation_level=None)
            try:
                self._schema(conn)
                return conn
            except sqlite3.DatabaseError as exc:
                conn.close()
                if attempt == 2 or not is_corrupt(exc):
                    raise
                drop_index(self.index_path)  # damaged: it is derived, rebuild it
        raise AssertionError("unreachable")  # pragma: no cover

    def _schema(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA secure_delete=ON")
        row = conn.execute("SELECT name FROM sqlite_master WHERE name = 'meta'").fetchone()
        if row is not None and conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == (SCHEMA,):
            return
        drop = (
            "" if row is None else "DROP TABLE IF EXISTS files; DROP TABLE IF EXISTS episodes; DROP TABLE IF EXISTS fts; DELETE FROM meta;"
        )
        conn.executescript(f"""
            BEGIN IMMEDIATE;
            {drop}
            CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
            CREATE TABLE IF NOT EXISTS files(file TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER, error TEXT);
            CREATE TABLE IF NOT EXISTS episodes(rowid INTEGER PRIMARY KEY, id TEXT UNIQUE, file TEXT UNIQUE, scope TEXT,
                session_id TEXT, user_id TEXT, started TEXT, status TEXT, data TEXT, namespace TEXT NOT NULL DEFAULT '');
            CREATE INDEX IF NOT EXISTS episodes_started ON episodes(started);
            CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(goal, body, context,
                tokenize = 'porter unicode61 remove_diacritics 2');
            INSERT OR REPLACE INTO meta VALUES ('schema', '{SCHEMA}');
            COMMIT;
        """)

    def _signature(self) -> str:
        """The month directories and their mtimes: any file added, renamed or removed changes it (cheap: one stat a month)."""
        parts = []
        for month in entries(self.dir):
            if MONTH.fullmatch(month.name) and month.is_dir(follow_symlinks=False):
                with contextlib.suppress(FileNotFoundError):
                    parts.append(f"{month.name}:{month.stat(follow_symlinks=False).st_mtime_ns}")
        return "|".join(sorted(parts))

    def _meta(self, conn: sqlite3.Connection, key: str) -> str | None:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _sync(self, conn: sqlite3.Connection, *, force: bool = False) -> None:
        """Bring the index in line with the files (new, changed, removed, judged by mtime and size) when the
        month directories changed, ``rescan_interval`` passed, or ``force``."""
        signature = self._signature()
        if not force and self._meta(conn, "signature") == signature:
            with contextlib.suppress(TypeError, ValueError):
                if time.time() - float(self._meta(conn, "scanned") or 0) < self.rescan_interval:
                    return
        seen = scan(self.dir)
        conn.execute("BEGIN IMMEDIATE")
        try:
            known = {f: (m, s) for f, m, s in conn.execute("SELECT file, mtime_ns, size FROM files")}
            for file in set(known) - set(seen):
                self._forget(conn, file)
            for file, stamp in seen.items():
                if known.get(file) != stamp:
                    self._load(conn, file, stamp)
            conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [("signature", signature), ("scanned", repr(time.time()))])
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _index_one(self, file: str, stamp: tuple[int, int], before: str) -> None:
        """Index one file just written; if nothing else had changed, the stored signature moves with it."""
        with self._conn() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._load(conn, file, stamp)
                if self._meta(conn, "signature") == before:
                    conn.execute("INSERT OR REPLACE INTO meta VALUES ('signature', ?)", (self._signature(),))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def _forget(self, conn: sqlite3.Connection, file: str) -> None:
        conn.execute("DELETE FROM fts WHERE rowid IN (SELECT rowid FROM episodes WHERE file = ?)", (file,))
        conn.execute("DELETE FROM episodes WHERE file = ?", (file,))
        conn.execute("DELETE FROM files WHERE file = ?", (file,))

    def _load(self, conn: sqlite3.Connection, file: str, stamp: tuple[int, int]) -> None:
        self._forget(conn, file)
        path = self.dir / file
        try:
            episode, body = read_episode(path, path.name)
        except FileNotFoundError:
            return
        except EpisodeParseError as exc:
            log.warning("agent_memory: episode file quarantined: %s (%s)", path, describe(exc))
            conn.execute("INSERT INTO files VALUES (?, ?, ?, ?)", (file, *stamp, describe(exc)))
            return
        conn.execute("DELETE FROM fts WHERE rowid IN (SELECT rowid FROM episodes WHERE id = ?)", (episode.id,))
        conn.execute("DELETE FROM episodes WHERE id = ?", (episode.id,))
        data = json.dumps({k: v for k, v in episode.to_dict().items() if k != "path"}, ensure_ascii=False)
        cur = conn.execute(
            "INSERT INTO episodes(id, file, scope, session_id, user_id, started, status, data, namespace) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                episode.id,
                file,
                episode.scope.value,
                episode.session_id,
                episode.user_id,
                episode.started,
                episode.status,
                data,
                episode.namespace,
            ),
        )
        body = body.strip() or episode.body()
        conn.execute(
            "INSERT INTO fts(rowid, goal, body, context) VALUES (?, ?, ?, ?)",
            (cur.lastrowid, episode.goal, body, cjk_unigrams(f"{episode.goal}\n{body}")),
        )
        conn.execute("INSERT INTO files VALUES (?, ?, ?, NULL)", (file, *stamp))


def visible(episode: Episode, session_id: str | None, user_id: str | None) -> bool:
    """The scope rule of records (:mod:`agent_memory.model.scopes`), for one episode, in the view bound for the call."""
    return scopes.may_see(
        episode.scope.value, episode.session_id, episode.user_id, session_id=session_id, user_id=user_id, namespace=episode.namespace
    )


def stamp_namespace(episode: Episode) -> Episode:
    """``episode`` in the writer's namespace: the caller's own, first of the view bound for the call
    (:func:`agent_memory.model.scopes.viewing`). An episode naming another namespace is refused, except from the
    root's operator (a restore keeps the namespaces its lines name)."""
    own = scopes.current_view()[0]
    if episode.namespace and episode.namespace != own and own:
        raise InvalidInputError(f"an episode names namespace {episode.namespace!r}; this caller writes in {own!r}")
    return episode if episode.namespace or not own else dataclasses.replace(episode, namespace=own)


def _with_path(episode: Episode, path: Path) -> Episode:
    return dataclasses.replace(episode, path=str(path))


def _from_row(base: Path, data: str) -> Episode:
    raw = json.loads(data)
    for name in ("approach", "tokens"):
        raw.pop(name, None)
    raw["scope"] = Scope(raw["scope"])
    raw["tools"] = tuple(ToolUse(**t) for t in raw.get("tools") or ())
    for name in ("sequence", "worked", "failed"):
        raw[name] = tuple(raw.get(name) or ())
    raw["path"] = str(base / episode_month(raw["id"]) / f"{raw['id']}.md")
    return Episode(**raw)


def purge_episodes(
    root: str | os.PathLike[str],
    *,
    user_id: str | None = None,
    session_id: str | None = None,
    anonymous: bool = False,
    namespace: str | None = None,
) -> int:
    """Delete every byte of the episodes of ``user_id`` and/or ``session_id`` (``namespace``: in that namespace and
    its descendants; alone, every episode there) under ``root``; returns how many."""
    return EpisodeStore(root).purge(user_id=user_id, session_id=session_id, anonymous=anonymous, namespace=namespace)
