"""The write policy of the files store, applied under the root lock: dedupe, ``memory_key``, ids.

- A ``memory_key`` (a key, or a record id) matches only a live record of the write's own
  partition (scope + session + user). A key or id from another partition, or an expired
  record, never matches: the write creates a new record in its own partition instead.
- A capture write (``turn_capture``/``compaction_capture``) may append to or replace only a
  record capture wrote in that partition; a tool-, user- or import-written record is never
  touched by it (it gets a record of its own).
- ``append`` adds the text (idempotently) and ``replace`` swaps it; both apply every field the
  write passes (title, kind, tags, expires, importance) and keep the others. A title the store
  derived from the text (none was ever given) follows the text on ``replace``. A ``replace``
  keeps the previous version in ``history/`` (see :mod:`agent_memory._history`).
- Ids carry no words of a keyed record's content: a record created with a ``memory_key`` is
  named after its key (``2026-11-23-user-diet-1a2b3c4d``) and keeps its id through replaces,
  so citations and ``memory_key=<id>`` stay valid. A record whose id was made from its title
  (created without a key) gets a new id made from the new title when a replace changes its
  title, so its id never reveals a title that is gone; the result carries the new id.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._history import POINTER, save_version
from .drafts import RememberResult, Status
from .errors import InvalidInputError, NotFoundError
from .index import live_sql
from .records import MemoryRecord, Scope, content_hash, default_title, new_id, now_iso, slugify, validate_id

if TYPE_CHECKING:  # pragma: no cover
    from .store import MemoryStore

CAPTURE_SOURCES = ("turn_capture", "compaction_capture")
Prepared = tuple[MemoryRecord, int, str, frozenset[str]]  # record, redactions, on_existing, fields passed


def partition_sql(rec: MemoryRecord) -> tuple[str, dict[str, Any]]:
    """The SQL predicate (alias ``r``) of the partition ``rec`` is written to, with its parameters."""
    params: dict[str, Any] = {"scope": rec.scope.value}
    sql = "r.scope = :scope"
    if rec.scope is Scope.SESSION:
        sql += " AND r.session_id = :psid AND r.user_id IS :puid"  # a session partition is per user too
        params["psid"] = rec.session_id
        params["puid"] = rec.user_id
    elif rec.scope is Scope.USER:
        sql += " AND r.user_id = :puid"
        params["puid"] = rec.user_id
    return sql, params


def find_duplicate(conn: Any, rec: MemoryRecord) -> Any:
    sql, params = partition_sql(rec)
    params["h"] = rec.content_hash
    return conn.execute(f"SELECT * FROM records r WHERE r.content_hash = :h AND {sql} AND {live_sql('r')} LIMIT 1",
                        params).fetchone()


def find_keyed(conn: Any, rec: MemoryRecord, key: str, mode: str) -> Any:
    """The live record of ``rec``'s partition that ``key`` names (by id first, then by key), or None."""
    sql, params = partition_sql(rec)
    sql += f" AND {live_sql('r')}"
    if rec.source in CAPTURE_SOURCES and mode != "skip":  # skipping never destroys; writing only what capture wrote
        sql += " AND r.source IN ('turn_capture', 'compaction_capture')"
    params["k"] = key
    row = conn.execute(f"SELECT * FROM records r WHERE r.id = :k AND {sql}", params).fetchone()
    if row is not None:
        return row
    return conn.execute(f"SELECT * FROM records r WHERE r.memory_key = :k AND {sql} ORDER BY r.updated DESC, r.id LIMIT 1",
                        params).fetchone()


def id_source(rec: MemoryRecord) -> str:
    """What a new id is made from: the key of a keyed record, else the title."""
    return rec.memory_key or rec.title


def allocate_id(store: MemoryStore, rec: MemoryRecord) -> str:
    for _ in range(20):
        rid = new_id(id_source(rec), rec.created)
        if not os.path.exists(os.path.join(store._records_str, f"{rid}.md")):
            return rid
    raise InvalidInputError("could not allocate a unique record id")  # pragma: no cover


def write(store: MemoryStore, conn: Any, rec: MemoryRecord, *, durable: bool, new: bool = False) -> str:
    """Write ``rec``'s file atomically and its index rows; return the file path."""
    validate_id(rec.id)
    rec = store._stamp(rec)  # metadata.provenance: who created and last changed it
    name = f"{rec.id}.md"
    path = os.path.join(store._records_str, name)
    text = rec.render()
    from ._fs import atomic_write

    st = atomic_write(Path(path), text.encode("utf-8"), durable=durable)
    body_line = text.count("\n", 0, len(text) - len(rec.content) - 1) + 1
    store.index.upsert(conn, rec, name, st.st_mtime_ns, st.st_size, body_line=body_line, new=new)
    return path


def remember_locked(store: MemoryStore, conn: Any, item: Prepared, durable: bool) -> RememberResult:
    """Apply the policy to one prepared record (inside the lock and the index transaction)."""
    rec, redactions, mode, fields = item
    if POINTER in rec.metadata:  # history pointers are the store's to set
        rec = rec.replace(metadata={k: v for k, v in rec.metadata.items() if k != POINTER})
    if rec.memory_key is not None:
        row = find_keyed(conn, rec, rec.memory_key, mode)
        if row is not None:
            return apply_keyed(store, conn, row, rec, mode, fields, redactions, durable)
    dup = find_duplicate(conn, rec)
    if dup is not None:
        return RememberResult(dup["id"], "duplicate", os.path.join(store._records_str, dup["file"]), redactions)
    rec = rec.replace(id=allocate_id(store, rec))
    path = write(store, conn, rec, durable=durable, new=True)
    store._event("created", rec, after=rec.content_hash, source=rec.source)
    return RememberResult(rec.id, "created", path, redactions)


def _reveals_title(rec: MemoryRecord) -> bool:
    """True if ``rec``'s id was made from its title (so it shows words of the current text)."""
    slug = slugify(rec.title)
    return slug != "memory" and f"-{slug}-" in f"-{rec.id}-" and not (rec.memory_key and f"-{slugify(rec.memory_key)}-" in f"-{rec.id}-")


def apply_keyed(store: MemoryStore, conn: Any, row: Any, rec: MemoryRecord, mode: str, fields: frozenset[str],
                redactions: int, durable: bool) -> RememberResult:
    path = str(store.records_dir / row["file"])
    if mode == "skip":
        return RememberResult(row["id"], "skipped", path, redactions)
    try:
        current, _, _ = store.index.load_file(row["file"])
    except FileNotFoundError:
        store.index.delete(conn, row["id"])
        raise NotFoundError(f"record {row['id']} vanished") from None
    status: Status
    if mode == "append":
        if rec.content.replace("\r\n", "\n").strip() in current.content.replace("\r\n", "\n"):
            return RememberResult(row["id"], "duplicate", path, redactions)  # a replayed append never doubles a line
        body, status = current.content.rstrip("\n") + "\n" + rec.content.strip("\n"), "appended"
        tags = tuple(dict.fromkeys(current.tags + rec.tags))
    else:
        body, status = rec.content, "replaced"
        tags = rec.tags if "tags" in fields else current.tags
    key = current.memory_key or (rec.memory_key if rec.memory_key != current.id else None)
    derived = current.title == default_title(current.content)  # a title made from the text follows the text
    title = rec.title if "title" in fields else default_title(body) if derived else current.title
    updated = current.replace(
        content=body, content_hash=content_hash(body), tags=tags, memory_key=key, title=title,
        kind=rec.kind if "kind" in fields else current.kind,
        expires=rec.expires if "expires" in fields else current.expires,
        importance=rec.importance if "importance" in fields else current.importance,
        metadata={**current.metadata, **rec.metadata},
    )
    if updated.frontmatter() | {"updated": None} == current.frontmatter() | {"updated": None} and body == current.content:
        return RememberResult(row["id"], "duplicate", path, redactions)  # nothing would change
    updated = updated.replace(updated=now_iso())
    if status == "replaced":
        old_text = (store.records_dir / row["file"]).read_text(encoding="utf-8")
        updated = updated.replace(metadata={**updated.metadata, POINTER: save_version(store, current, old_text)})
        if updated.title != current.title and _reveals_title(current):
            fresh = updated.replace(id=allocate_id(store, updated))
            new_path = write(store, conn, fresh, durable=durable, new=True)
            os.unlink(path)
            store.index.delete(conn, current.id)
            store._event(status, fresh, before=current.content_hash, after=fresh.content_hash, source=rec.source,
                         caller=(rec.session_id, rec.user_id), previous_id=current.id, version=updated.metadata[POINTER])
            return RememberResult(fresh.id, status, new_path, redactions)
    write(store, conn, updated, durable=durable)
    store._event(status, updated, before=current.content_hash, after=updated.content_hash, source=rec.source,
                 caller=(rec.session_id, rec.user_id), version=updated.metadata.get(POINTER) if status == "replaced" else None,
                 kept=len(current.content.rstrip("\n")) if status == "appended" else None)
    return RememberResult(updated.id, status, path, redactions)
