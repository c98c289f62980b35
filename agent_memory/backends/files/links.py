"""The read of one record's links in the files backend, over the link tables of
:mod:`agent_memory.backends.files.link_rows`. Resolution is :mod:`agent_memory.model.links`'s, over records the caller may see (the scope rule of
:mod:`agent_memory.model.scopes` via :func:`~agent_memory.backends.files.index_schema.visibility_sql`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agent_memory.backends.files.index_schema import current_sql, visibility_sql
from agent_memory.model.links import (
    MAX_BACKLINKS,
    PARTITION_SQL,
    LinkRef,
    ParsedLink,
    RecordLinks,
    backlinks_of,
    ids_of,
    imported_id,
    resolve,
    title_key,
)
from agent_memory.model.scopes import sqlite_params

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.files.parts import StoreParts

__all__ = ["links_for", "links_of"]


_REF_COLS = "r.id, r.title, r.superseded_by, r.scope, r.user_id, r.session_id"


def _ref(row: Any) -> LinkRef:
    return LinkRef(row["id"], row["title"] or "", row["superseded_by"], row["scope"] or "", row["user_id"], row["session_id"])


class _Reader:
    """Lookups among the records one caller may see (visibility before anything is returned)."""

    def __init__(self, conn: sqlite3.Connection, session_id: str | None, user_id: str | None) -> None:
        self.conn = conn
        self.params: dict[str, Any] = sqlite_params(session_id, user_id)  # the call's namespace view included

    def _rows(self, sql: str, values: Sequence[str]) -> list[Any]:
        params = {**self.params, **{f"v{i}": v for i, v in enumerate(values)}}
        marks = ",".join(f":v{i}" for i in range(len(values)))
        return self.conn.execute(sql.replace("{in}", marks), params).fetchall()

    def by_id(self, ids: Sequence[str]) -> Mapping[str, tuple[LinkRef, ...]]:
        """Per target, the visible record with that id, else a visible record imported under it
        (:func:`~agent_memory.model.links.ids_of`: a record imported from PostgreSQL keeps the id it was first
        imported with in ``metadata.imported_id``)."""
        if not ids:
            return {}
        rows = self._rows(f"SELECT {_REF_COLS} FROM records r WHERE r.id IN ({{in}}) AND {visibility_sql('r')}", ids)
        exact = {r["id"]: _ref(r) for r in rows}
        rest = [i for i in ids if i not in exact]
        imported: list[tuple[str, LinkRef]] = []
        if rest:  # only targets no visible record has as its id (most links resolve above)
            rows = self._rows(
                f"SELECT {_REF_COLS}, json_extract(r.metadata, '$.imported_id') AS imported FROM records r"
                f" WHERE json_extract(r.metadata, '$.imported_id') IN ({{in}}) AND {visibility_sql('r')}"
                " ORDER BY (r.superseded_by IS NULL) DESC, r.updated DESC, r.id DESC",
                rest,
            )
            imported = [(r["imported"], _ref(r)) for r in rows]
        return ids_of(ids, exact, imported)

    def by_title(self, keys: Sequence[str]) -> Mapping[str, Sequence[LinkRef]]:
        """Per title key, the newest visible current record of each partition (:func:`~agent_memory.model.links.tier`
        chooses among them per linking record), newest first."""
        if not keys:
            return {}
        rows = self._rows(
            f"SELECT * FROM (SELECT t.key, {_REF_COLS}, r.updated, row_number() OVER (PARTITION BY t.key, {PARTITION_SQL.format(a='r')}"
            f" ORDER BY r.updated DESC, r.id DESC) AS n FROM record_titles t JOIN records r ON r.rowid = t.rid"
            f" WHERE t.key IN ({{in}}) AND {visibility_sql('r')} AND {current_sql('r')}) WHERE n = 1 ORDER BY updated DESC, id DESC",
            keys,
        )
        out: dict[str, list[LinkRef]] = {}
        for r in rows:
            out.setdefault(r["key"], []).append(_ref(r))  # the newest first
        return out


def links_of(store: StoreParts, record: LinkRef, session_id: str | None, user_id: str | None, old: str | None = None) -> RecordLinks:
    """The outgoing links and backlinks of ``record`` (one the caller may see) for this caller; ``old``: the id it
    was imported under (``metadata.imported_id``), which a link written before the import names."""

    def read(conn: sqlite3.Connection) -> RecordLinks:
        reader = _Reader(conn, session_id, user_id)
        parsed = [
            ParsedLink(r["target"], r["key"])
            for r in conn.execute("SELECT target, key FROM record_links WHERE src = ? ORDER BY pos", (record.id,)).fetchall()
        ]
        outgoing = resolve(
            parsed, reader.by_id(sorted({p.target for p in parsed})), reader.by_title(sorted({p.key for p in parsed})), record
        )
        candidates = conn.execute(
            f"SELECT {_REF_COLS}, l.target, l.key FROM record_links l JOIN records r ON r.id = l.src"
            f" WHERE (l.target = :id OR l.target = :old OR l.key = :key) AND r.id <> :id AND {visibility_sql('r')}"
            f" AND {current_sql('r')} ORDER BY r.updated DESC, r.id DESC, l.pos LIMIT {MAX_BACKLINKS * 4}",
            {**reader.params, "id": record.id, "old": old or record.id, "key": title_key(record.title)},
        ).fetchall()
        back = backlinks_of(record, [(_ref(c), ParsedLink(c["target"], c["key"])) for c in candidates], reader.by_id, reader.by_title)
        return RecordLinks(record.id, record.title, outgoing, back[:MAX_BACKLINKS])

    store.open()
    result: RecordLinks = store.index.guarded(read)
    return result


def links_for(store: StoreParts, record_id: str, session_id: str | None, user_id: str | None) -> RecordLinks:
    """The links of ``record_id`` for this caller; :class:`~agent_memory.errors.NotFoundError` if it may not see it."""
    from agent_memory.backends.files.reads import get

    rec = get(store, record_id, session_id, user_id)
    ref = LinkRef(rec.id, rec.title, rec.superseded_by, rec.scope.value, rec.user_id, rec.session_id)
    return links_of(store, ref, session_id, user_id, imported_id(rec.metadata))
