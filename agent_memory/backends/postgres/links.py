"""Links between records on PostgreSQL: two tables beside ``records``, kept in step by every write, and the read.

``record_links`` holds what :func:`agent_memory.model.links.parse_links` finds in each row's body and
``record_titles`` each row's title key; both reference ``records`` with ``ON DELETE CASCADE``, so archiving
(forget, sweep), purge and every other delete drop a record's rows with it. Every statement that inserts a row
or changes its text calls :func:`sync` in the same transaction (``writes``, ``supersede``, ``lifecycle``'s restore,
``ingest``); ``reindex`` rebuilds them (:func:`rebuild`), and the migration that adds them fills them
(:func:`migration`, then :func:`rebuild` or :func:`rebuild_sync` on the rows already there). Resolution is :mod:`agent_memory.model.links`'s, over the records the
caller may see (:func:`agent_memory.backends.postgres.rows.visibility`, the scope rule of
:mod:`agent_memory.model.scopes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agent_memory.backends.postgres.rows import tenant_part, visibility
from agent_memory.model.links import (
    MAX_BACKLINKS,
    PARTITION_SQL,
    LinkRef,
    ParsedLink,
    RecordLinks,
    backlinks_of,
    ids_of,
    imported_id,
    parse_links,
    resolve,
    title_key,
)
from agent_memory.model.records import MemoryRecord

__all__ = [
    "IMPORTED_VERSION",
    "MIGRATION_VERSION",
    "add",
    "imported_migration",
    "links_for",
    "migration",
    "rebuild",
    "rebuild_sync",
    "sync",
]

#: The schema version that adds the link tables (its own step: other columns are other steps' business).
MIGRATION_VERSION = 8
#: The schema version that indexes the ids records were imported under (:func:`imported_migration`).
IMPORTED_VERSION = 13
#: The rows that were imported under another id: the partial index's predicate, which every lookup by that id
#: repeats (the planner uses a partial index only for a query that implies its predicate).
IMPORTED_SQL = "{a}metadata ? 'imported_id'"


def migration(s: str) -> tuple[int, str, list[str]]:
    """The migration step adding the link tables to schema ``s``."""
    return (
        MIGRATION_VERSION,
        "links between records: record_links, record_titles",
        [
            f"""CREATE TABLE IF NOT EXISTS "{s}".record_links (
            tenant text NOT NULL,
            src text NOT NULL,
            pos integer NOT NULL,
            target text NOT NULL,
            key text NOT NULL,
            PRIMARY KEY (tenant, src, pos),
            FOREIGN KEY (tenant, src) REFERENCES "{s}".records (tenant, id) ON DELETE CASCADE
        )""",
            f'CREATE INDEX IF NOT EXISTS record_links_target ON "{s}".record_links (target)',
            f'CREATE INDEX IF NOT EXISTS record_links_key ON "{s}".record_links (key)',
            f"""CREATE TABLE IF NOT EXISTS "{s}".record_titles (
            tenant text NOT NULL,
            id text NOT NULL,
            key text NOT NULL,
            PRIMARY KEY (tenant, id),
            FOREIGN KEY (tenant, id) REFERENCES "{s}".records (tenant, id) ON DELETE CASCADE
        )""",
            f'CREATE INDEX IF NOT EXISTS record_titles_key ON "{s}".record_titles (key)',
        ],
    )


def imported_migration(s: str) -> tuple[int, str, list[str]]:
    """The migration step indexing ``metadata->>'imported_id'`` per tenant, over the imported rows only: an ``[[id]]``
    that names no visible record looks there (:meth:`_Reader.by_id`), an index probe instead of a scan of the table."""
    return (
        IMPORTED_VERSION,
        "the ids records were imported under, indexed for [[id]] links",
        [
            f"CREATE INDEX IF NOT EXISTS records_imported_id ON \"{s}\".records (tenant, (metadata->>'imported_id'))"
            f" WHERE {IMPORTED_SQL.format(a='')}"
        ],
    )


def _rows(records: Iterable[Mapping[str, Any]]) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, int, str, str]]]:
    """Title rows and link rows of ``records`` (each with ``tenant``, ``id``, ``title``, ``content``)."""
    titles: list[tuple[str, str, str]] = []
    links: list[tuple[str, str, int, str, str]] = []
    for r in records:
        titles.append((r["tenant"], r["id"], title_key(r["title"] or "")))
        links.extend((r["tenant"], r["id"], i, link.target, link.key) for i, link in enumerate(parse_links(r["content"] or "")))
    return titles, links


def _inserts(s: str, records: Iterable[Mapping[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The (at most two) statements writing the title and link rows of ``records``: one ``INSERT … SELECT FROM unnest``
    per table, whatever the number of rows (a bulk import pays two statements, not one per row)."""
    titles, links = _rows(records)
    out: list[tuple[str, dict[str, Any]]] = []
    if titles:
        columns = {"t": [r[0] for r in titles], "i": [r[1] for r in titles], "k": [r[2] for r in titles]}
        out.append(
            (
                f'INSERT INTO "{s}".record_titles (tenant, id, key) SELECT * FROM unnest(%(t)s::text[], %(i)s::text[], %(k)s::text[])',
                columns,
            )
        )
    if links:
        cols: dict[str, list[Any]] = {name: [r[n] for r in links] for n, name in enumerate(("t", "i", "p", "g", "k"))}
        out.append(
            (
                f'INSERT INTO "{s}".record_links (tenant, src, pos, target, key)'
                " SELECT * FROM unnest(%(t)s::text[], %(i)s::text[], %(p)s::int[], %(g)s::text[], %(k)s::text[])",
                cols,
            )
        )
    return out


async def _write(conn: Any, s: str, records: Sequence[Mapping[str, Any]]) -> None:
    for sql, params in _inserts(s, records):
        await conn.execute(sql, params)


async def add(conn: Any, s: str, records: Iterable[MemoryRecord], ids: Iterable[str] | None = None) -> None:
    """Write the link and title rows of rows just inserted from ``records`` (``ids``: their ids, if not the records'),
    in the caller's transaction."""
    recs = list(records)
    rids = list(ids) if ids is not None else [r.id for r in recs]
    await _write(
        conn, s, [{"tenant": tenant_part(r)[0], "id": i, "title": r.title, "content": r.content} for r, i in zip(recs, rids, strict=True)]
    )


async def sync(conn: Any, s: str, keys: Iterable[tuple[str, str]]) -> None:
    """Rewrite the link and title rows of the records ``keys`` (``(tenant, id)``) from their current text, in the
    caller's transaction (a key whose row is gone just loses its rows)."""
    pairs = sorted(set(keys))
    if not pairs:
        return
    params = {"t": [p[0] for p in pairs], "i": [p[1] for p in pairs]}
    keyed = "(tenant, {col}) IN (SELECT * FROM unnest(%(t)s::text[], %(i)s::text[]))"
    await conn.execute(f'DELETE FROM "{s}".record_links WHERE {keyed.format(col="src")}', params)
    await conn.execute(f'DELETE FROM "{s}".record_titles WHERE {keyed.format(col="id")}', params)
    cur = await conn.execute(f'SELECT tenant, id, title, content FROM "{s}".records WHERE {keyed.format(col="id")}', params)
    await _write(conn, s, await cur.fetchall())


async def rebuild(conn: Any, s: str) -> int:
    """Rebuild both tables from every row (``reindex``, in the caller's transaction); returns the link rows written."""
    await conn.execute(f'DELETE FROM "{s}".record_links')
    await conn.execute(f'DELETE FROM "{s}".record_titles')
    written = 0
    async with conn.cursor(name="agent_memory_links") as cur:  # server side: a large store is not held in memory
        await cur.execute(f'SELECT tenant, id, title, content FROM "{s}".records')
        while batch := await cur.fetchmany(2000):
            await _write(conn, s, batch)
            written += sum(len(parse_links(r["content"] or "")) for r in batch)
    return written


def rebuild_sync(conn: Any, s: str) -> None:
    """:func:`rebuild` over a synchronous connection (the migration of the session logs' pool)."""
    conn.execute(f'DELETE FROM "{s}".record_links')
    conn.execute(f'DELETE FROM "{s}".record_titles')
    for sql, params in _inserts(s, conn.execute(f'SELECT tenant, id, title, content FROM "{s}".records').fetchall()):
        conn.execute(sql, params)


_REF_COLS = "r.id, r.title, r.superseded_by, r.scope, r.user_id, r.session_id"


def _ref(row: Mapping[str, Any]) -> LinkRef:
    return LinkRef(row["id"], row["title"] or "", row["superseded_by"], row["scope"] or "", row["user_id"], row["session_id"])


class _Reader:
    """Lookups among the rows one caller may see (visibility before anything is returned)."""

    def __init__(self, conn: Any, table: str, s: str, caller: dict[str, Any]) -> None:
        self.conn, self.t, self.s, self.params = conn, table, s, dict(caller)
        self.vis = visibility(self.params)

    async def by_id(self, ids: Sequence[str]) -> dict[str, tuple[LinkRef, ...]]:
        """Per target, the visible record with that id, else a visible record imported under it
        (:func:`~agent_memory.model.links.ids_of`: this backend gives imported records new ids)."""
        if not ids:
            return {}
        cur = await self.conn.execute(
            f"SELECT {_REF_COLS} FROM {self.t} r WHERE r.id = ANY(%(ids)s) AND {self.vis}",
            {**self.params, "ids": list(ids)},
        )
        exact = {r["id"]: _ref(r) for r in await cur.fetchall()}
        rest = [i for i in ids if i not in exact]
        imported: list[tuple[str, LinkRef]] = []
        if rest:  # only targets no visible record has as its id (most links resolve above)
            cur = await self.conn.execute(
                f"SELECT {_REF_COLS}, r.metadata->>'imported_id' AS imported FROM {self.t} r"
                f" WHERE r.metadata->>'imported_id' = ANY(%(ids)s) AND {IMPORTED_SQL.format(a='r.')} AND {self.vis}"
                " ORDER BY (r.superseded_by IS NULL) DESC, r.updated DESC, r.id DESC",
                {**self.params, "ids": rest},
            )
            imported = [(r["imported"], _ref(r)) for r in await cur.fetchall()]
        return ids_of(ids, exact, imported)

    async def by_title(self, keys: Sequence[str]) -> dict[str, list[LinkRef]]:
        """Per title key, the newest visible current record of each partition (:func:`~agent_memory.model.links.tier`
        chooses among them per linking record), newest first."""
        if not keys:
            return {}
        cur = await self.conn.execute(
            f"SELECT DISTINCT ON (k.key, {PARTITION_SQL.format(a='r')}) k.key, {_REF_COLS}, r.updated"
            f' FROM "{self.s}".record_titles k JOIN {self.t} r ON r.tenant = k.tenant AND r.id = k.id'
            f" WHERE k.key = ANY(%(keys)s) AND {self.vis} AND r.superseded_by IS NULL"
            f" ORDER BY k.key, {PARTITION_SQL.format(a='r')}, r.updated DESC, r.id DESC",
            {**self.params, "keys": list(keys)},
        )
        rows = sorted(await cur.fetchall(), key=lambda r: (r["updated"], r["id"]), reverse=True)  # the newest first
        out: dict[str, list[LinkRef]] = {}
        for r in rows:
            out.setdefault(r["key"], []).append(_ref(r))
        return out


async def links_for(b: Any, record_id: str, caller: Any) -> RecordLinks:
    """The links of ``record_id`` for ``caller`` (:meth:`PostgresBackend.get` decides whether it may see it)."""
    rec = await b.get(record_id, caller)
    s = b.schema
    async with b.pool.connection() as conn:
        reader = _Reader(conn, b.table, s, b._caller(caller))
        cur = await conn.execute(
            f'SELECT l.target, l.key FROM "{s}".record_links l JOIN {b.table} r ON r.tenant = l.tenant AND r.id = l.src'
            f" WHERE l.src = %(id)s AND {reader.vis} ORDER BY l.pos",
            {**reader.params, "id": rec.id},
        )
        parsed = [ParsedLink(r["target"], r["key"]) for r in await cur.fetchall()]
        me = LinkRef(rec.id, rec.title, rec.superseded_by, rec.scope.value, rec.user_id, rec.session_id)
        outgoing = resolve(
            parsed, await reader.by_id(sorted({p.target for p in parsed})), await reader.by_title(sorted({p.key for p in parsed})), me
        )
        cur = await conn.execute(
            f'SELECT {_REF_COLS}, l.target, l.key FROM "{s}".record_links l'
            f" JOIN {b.table} r ON r.tenant = l.tenant AND r.id = l.src"
            f" WHERE (l.target = %(id)s OR l.target = %(old)s OR l.key = %(key)s) AND r.id <> %(id)s AND {reader.vis}"
            f" AND r.superseded_by IS NULL ORDER BY r.updated DESC, r.id DESC, l.pos LIMIT {MAX_BACKLINKS * 4}",
            {**reader.params, "id": rec.id, "old": imported_id(rec.metadata) or rec.id, "key": title_key(rec.title)},
        )
        candidates = [(_ref(c), ParsedLink(c["target"], c["key"])) for c in await cur.fetchall()]
        ids = await reader.by_id(sorted({link.target for _, link in candidates}))
        titles = await reader.by_title(sorted({link.key for _, link in candidates}))
    back = backlinks_of(me, candidates, lambda _: ids, lambda _: titles)
    return RecordLinks(rec.id, rec.title, outgoing, back[:MAX_BACKLINKS])
