"""Record files of the files store: the partition a write goes to, new ids, and one atomic file + index write."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_memory.errors import InvalidInputError
from agent_memory.formats.atomic import atomic_write, create_new
from agent_memory.model.records import MemoryRecord, Scope, new_id, validate_id

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.files.parts import StoreParts


def partition_sql(rec: MemoryRecord) -> tuple[str, dict[str, Any]]:
    """The SQL predicate (alias ``r``) of the partition ``rec`` is written to, with its parameters: its scope and
    owners, in its namespace (a keyed write or a duplicate never reaches into another namespace)."""
    params: dict[str, Any] = {"scope": rec.scope.value, "pns": rec.namespace or ""}
    sql = "r.scope = :scope AND coalesce(r.namespace, '') = :pns"
    if rec.scope is Scope.SESSION:
        sql += " AND r.session_id = :psid AND r.user_id IS :puid"  # a session partition is per user too
        params["psid"] = rec.session_id
        params["puid"] = rec.user_id
    elif rec.scope is Scope.USER:
        sql += " AND r.user_id = :puid"
        params["puid"] = rec.user_id
    return sql, params


def id_source(rec: MemoryRecord) -> str:
    """What a new id is made from: the key of a keyed record, else the title."""
    return rec.memory_key or rec.title


def allocate_id(store: StoreParts, rec: MemoryRecord) -> str:
    for _ in range(20):
        rid = new_id(id_source(rec), rec.created)
        if not os.path.exists(os.path.join(store.records_str, f"{rid}.md")):
            return rid
    raise InvalidInputError("could not allocate a unique record id")  # pragma: no cover


def write_new(store: StoreParts, conn: Any, rec: MemoryRecord, *, durable: bool) -> tuple[MemoryRecord, str]:
    """Give ``rec`` a new id (:func:`new_id`) and write its file, never over another one (the file's creation
    refuses a name that exists: another id is minted), and its index rows; return ``rec`` with its id, and the
    path. :func:`allocate_id` and :func:`write` in one, without probing the name first."""
    rec = store.stamp(rec)  # once, not once per id tried (the stamp does not depend on the id; write keeps it)
    for _ in range(20):
        named = rec.replace(id=new_id(id_source(rec), rec.created))
        try:
            return named, write(store, conn, named, durable=durable, new=True, exclusive=True)
        except FileExistsError:
            continue
    raise InvalidInputError("could not allocate a unique record id")  # pragma: no cover


def write(store: StoreParts, conn: Any, rec: MemoryRecord, *, durable: bool, new: bool = False, exclusive: bool = False) -> str:
    """Write ``rec``'s file atomically and its index rows; return the file path. ``new``: the id has no index rows;
    ``exclusive``: a file of that name is refused (:class:`FileExistsError`, and nothing is written)."""
    validate_id(rec.id)
    rec = store.stamp(rec)  # metadata.provenance: who created and last changed it
    name = f"{rec.id}.md"
    path = os.path.join(store.records_str, name)
    text = rec.render()
    st = (create_new if exclusive else atomic_write)(Path(path), text.encode("utf-8"), durable=durable)
    body_line = text.count("\n", 0, len(text) - len(rec.content) - 1) + 1
    store.index.upsert(conn, rec, name, st.st_mtime_ns, st.st_size, body_line=body_line, new=new)
    return path
