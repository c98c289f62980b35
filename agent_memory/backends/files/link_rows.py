"""The link tables of the files backend's derived index: ``record_links`` (what
:func:`agent_memory.model.links.parse_links` finds in each indexed record's body) and ``record_titles`` (the title key
of every indexed record). :meth:`~agent_memory.backends.files.index.Index.upsert` and ``delete`` call :func:`write` and
:func:`drop` beside the FTS rows, so every write path, a hand edit found by a rescan and ``reindex`` keep them in step;
:func:`ensure` is their own migration step (an index of an older version gets them filled from its indexed bodies).
"""

from __future__ import annotations

import sqlite3

from agent_memory.model.links import parse_links, title_key

__all__ = ["LINKS_VERSION", "current", "drop", "ensure", "write"]

LINKS_VERSION = "1"
_SCHEMA = """
DROP TABLE IF EXISTS record_links;
DROP TABLE IF EXISTS record_titles;
CREATE TABLE record_links (src TEXT NOT NULL, pos INTEGER NOT NULL, target TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (src, pos));
CREATE INDEX record_links_target ON record_links(target);
CREATE INDEX record_links_key ON record_links(key);
CREATE TABLE record_titles (id TEXT PRIMARY KEY, key TEXT NOT NULL);
CREATE INDEX record_titles_key ON record_titles(key);
"""


def current(conn: sqlite3.Connection) -> bool:
    """Whether the link tables exist at this version (``meta.links``)."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'links'").fetchone()
    except sqlite3.OperationalError:
        return False
    return row is not None and row[0] == LINKS_VERSION


def ensure(conn: sqlite3.Connection) -> None:
    """The link tables' migration step (call under the root lock): create them and fill them from the indexed bodies."""
    if current(conn):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        for stmt in filter(None, (s.strip() for s in _SCHEMA.split(";"))):
            conn.execute(stmt)
        rows = conn.execute("SELECT r.id, r.title, f.body FROM records r JOIN fts f ON f.rowid = r.rowid").fetchall()
        for row in rows:
            write(conn, row[0], row[1] or "", row[2] or "")
        conn.execute("INSERT INTO meta VALUES ('links', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (LINKS_VERSION,))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def write(conn: sqlite3.Connection, record_id: str, title: str, body: str, *, new: bool = False) -> None:
    """Replace the link rows and the title key of one record (in the caller's transaction); ``new``: the caller
    knows the id has no rows yet (nothing to drop)."""
    if not new:
        drop(conn, record_id)
    verb = "INSERT OR REPLACE" if new else "INSERT"  # a stray row of a new id (none is ever left) is replaced, not an error
    conn.execute(f"{verb} INTO record_titles VALUES (?, ?)", (record_id, title_key(title)))
    links = [(record_id, i, link.target, link.key) for i, link in enumerate(parse_links(body))]
    if links:
        conn.executemany(f"{verb} INTO record_links VALUES (?, ?, ?, ?)", links)


def drop(conn: sqlite3.Connection, record_id: str) -> None:
    """Remove one record's link rows and title key (its backlinks from others then resolve elsewhere, or not at all)."""
    conn.execute("DELETE FROM record_links WHERE src = ?", (record_id,))
    conn.execute("DELETE FROM record_titles WHERE id = ?", (record_id,))
