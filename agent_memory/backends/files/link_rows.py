"""The link tables of the files backend's derived index: ``record_links`` (what
:func:`agent_memory.model.links.parse_links` finds in each indexed record's body) and ``record_titles`` (the title key
of every indexed record, keyed by its ``records`` rowid: a new record's row goes at the end of that table, not at a
random place of an index by id). :meth:`~agent_memory.backends.files.index.Index.upsert` and ``delete`` call
:func:`write` and :func:`drop` beside the FTS rows, so every write path, a hand edit found by a rescan and ``reindex``
keep them in step; :func:`ensure` is their own migration step (an index without them gets them filled from its indexed
bodies; one of version 1, whose titles were keyed by record id, gets them re-keyed in place).
"""

from __future__ import annotations

import sqlite3

from agent_memory.model.links import parse_links, title_key

__all__ = ["LINKS_VERSION", "current", "drop", "ensure", "write"]

LINKS_VERSION = "2"  # 2: record_titles keyed by the records rowid (1: by record id)
_TITLES = """
CREATE TABLE record_titles (rid INTEGER PRIMARY KEY, key TEXT NOT NULL);
CREATE INDEX record_titles_key ON record_titles(key);
"""
_SCHEMA = f"""
DROP TABLE IF EXISTS record_links;
DROP TABLE IF EXISTS record_titles;
CREATE TABLE record_links (src TEXT NOT NULL, pos INTEGER NOT NULL, target TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (src, pos));
CREATE INDEX record_links_target ON record_links(target);
CREATE INDEX record_links_key ON record_links(key);
{_TITLES}
"""
#: Version 1's titles re-keyed by rowid (the link rows and every title key are kept; no body is read again).
_FROM_V1 = f"""
ALTER TABLE record_titles RENAME TO record_titles_v1;
DROP INDEX IF EXISTS record_titles_key;
{_TITLES}
INSERT INTO record_titles SELECT r.rowid, t.key FROM record_titles_v1 t JOIN records r ON r.id = t.id ORDER BY r.rowid;
DROP TABLE record_titles_v1;
"""


def _version(conn: sqlite3.Connection) -> str | None:
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'links'").fetchone()
    except sqlite3.OperationalError:
        return None
    return None if row is None else str(row[0])


def current(conn: sqlite3.Connection) -> bool:
    """Whether the link tables exist at this version (``meta.links``)."""
    return _version(conn) == LINKS_VERSION


def ensure(conn: sqlite3.Connection) -> None:
    """The link tables' migration step (call under the root lock): create them and fill them from the indexed bodies."""
    version = _version(conn)
    if version == LINKS_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        for stmt in filter(None, (s.strip() for s in (_FROM_V1 if version == "1" else _SCHEMA).split(";"))):
            conn.execute(stmt)
        if version != "1":
            rows = conn.execute("SELECT r.rowid, r.id, r.title, f.body FROM records r JOIN fts f ON f.rowid = r.rowid").fetchall()
            for row in rows:
                write(conn, row[0], row[1], row[2] or "", row[3] or "")
        conn.execute("INSERT INTO meta VALUES ('links', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (LINKS_VERSION,))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def write(conn: sqlite3.Connection, rid: int, record_id: str, title: str, body: str, *, new: bool = False) -> None:
    """Replace the link rows and the title key of one record (rowid ``rid``, in the caller's transaction); ``new``:
    the caller knows the record has no rows yet (nothing to drop)."""
    if not new:
        drop(conn, rid, record_id)
    links = [(record_id, i, link.target, link.key) for i, link in enumerate(parse_links(body))]
    try:  # a plain INSERT: ``INSERT OR REPLACE`` costs several times as much in a big index (measured: 9 vs 60+ µs)
        conn.execute("INSERT INTO record_titles VALUES (?, ?)", (rid, title_key(title)))
        if links:
            conn.executemany("INSERT INTO record_links VALUES (?, ?, ?, ?)", links)
    except sqlite3.IntegrityError:
        if not new:
            raise
        drop(conn, rid, record_id)  # a stray row of a new record (none is ever left; a damaged index): replaced
        conn.execute("INSERT INTO record_titles VALUES (?, ?)", (rid, title_key(title)))
        if links:
            conn.executemany("INSERT INTO record_links VALUES (?, ?, ?, ?)", links)


def drop(conn: sqlite3.Connection, rid: int, record_id: str) -> None:
    """Remove one record's link rows and title key (its backlinks from others then resolve elsewhere, or not at all)."""
    conn.execute("DELETE FROM record_links WHERE src = ?", (record_id,))
    conn.execute("DELETE FROM record_titles WHERE rid = ?", (rid,))
