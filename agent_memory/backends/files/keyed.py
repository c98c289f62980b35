"""The write policy of the files store, applied under the root lock: dedupe, ``memory_key``, ids.

- A ``memory_key`` (a key, or a record id) matches only a live record of the write's own
  partition (scope + session + user). A key or id from another partition, or an expired
  record, never matches: the write creates a new record in its own partition instead.
- A capture write (``turn_capture``/``compaction_capture``) may append to or replace only a
  record capture wrote in that partition; a tool-, user- or import-written record is never
  touched by it (it gets a record of its own).
- ``append`` adds the text (idempotently) and ``replace`` swaps it; both apply every field the
  write passes (title, kind, tags, expires, importance, clocks) and keep the others. A title the store
  derived from the text (none was ever given) follows the text on ``replace``. A ``replace``
  is a supersession: the previous state is kept as a superseded record (see :mod:`agent_memory.backends.files.supersede`).
- A key finds only the current record (never a superseded one); a record id that was superseded
  leads to the record that superseded it.
- Ids carry no words of a keyed record's content: a record created with a ``memory_key`` is
  named after its key (``2026-11-23-user-diet-1a2b3c4d``) and keeps its id through replaces,
  so citations and ``memory_key=<id>`` stay valid. A record whose id was made from its title
  (created without a key) gets a new id made from the new title when a replace changes its
  title, so its id never reveals a title that is gone; the result carries the new id.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import agent_memory.backends.files.supersede as _supersede
from agent_memory.backends.files.index import current_sql, live_sql
from agent_memory.backends.files.record_files import partition_sql, write, write_new
from agent_memory.errors import NotFoundError
from agent_memory.model.drafts import RememberResult, Status
from agent_memory.model.records import MemoryRecord, content_hash, default_title, now_iso, slugify
from agent_memory.model.supersession import CAPTURE_SOURCES, POINTER, UNDEDUPED_KINDS, holds_lines

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.files.parts import StoreParts

_NOT_UNDEDUPED = "r.kind NOT IN (" + ", ".join(f"'{k}'" for k in UNDEDUPED_KINDS) + ")"
Prepared = tuple[MemoryRecord, int, str, frozenset[str]]  # record, redactions, on_existing, fields passed


def find_duplicate(conn: Any, rec: MemoryRecord) -> Any:
    if rec.kind in UNDEDUPED_KINDS:
        return None
    sql, params = partition_sql(rec)
    params["h"] = rec.content_hash
    return conn.execute(
        f"SELECT * FROM records r WHERE r.content_hash = :h AND {sql} AND {live_sql('r')}"
        f" AND {current_sql('r')} AND {_NOT_UNDEDUPED} LIMIT 1",
        params,
    ).fetchone()


def find_keyed(conn: Any, rec: MemoryRecord, key: str, mode: str) -> Any:
    """The live, current record of ``rec``'s partition that ``key`` names (by id first, then by key), or None.

    An id that was superseded names the record that superseded it."""
    sql, params = partition_sql(rec)
    sql += f" AND {live_sql('r')}"
    if rec.source in CAPTURE_SOURCES and mode != "skip":  # skipping never destroys; writing only what capture wrote
        sql += " AND r.source IN ('turn_capture', 'compaction_capture')"
    params["k"] = key
    row = conn.execute(f"SELECT * FROM records r WHERE r.id = :k AND {sql}", params).fetchone()
    if row is not None and row["superseded_by"]:
        row = _supersede.current_row(conn, row)
        if row is not None:  # the successor must pass the same checks (partition, live, capture-written)
            params["k"] = row["id"]
            row = conn.execute(f"SELECT * FROM records r WHERE r.id = :k AND {sql}", params).fetchone()
            params["k"] = key
    if row is not None:
        return row
    return conn.execute(
        f"SELECT * FROM records r WHERE r.memory_key = :k AND {sql} AND {current_sql('r')} ORDER BY r.updated DESC, r.id LIMIT 1", params
    ).fetchone()


def remember_locked(store: StoreParts, conn: Any, item: Prepared, durable: bool) -> RememberResult:
    """Apply the policy to one prepared record (inside the lock and the index transaction)."""
    rec, redactions, mode, fields = item
    if POINTER in rec.metadata:  # history pointers are the store's to set
        rec = rec.replace(metadata={k: v for k, v in rec.metadata.items() if k != POINTER})
    if rec.supersedes is not None:
        return _supersede.supersede_locked(store, conn, rec, redactions, durable)
    if rec.memory_key is not None:
        row = find_keyed(conn, rec, rec.memory_key, mode)
        if row is not None:
            return apply_keyed(store, conn, row, rec, mode, fields, redactions, durable)
    dup = find_duplicate(conn, rec)
    if dup is not None:
        return RememberResult(dup["id"], "duplicate", os.path.join(store.records_str, dup["file"]), redactions)
    rec, path = write_new(store, conn, rec, durable=durable)
    store.event("created", rec, after=rec.content_hash, source=rec.source)
    return RememberResult(rec.id, "created", path, redactions)


def _reveals_title(rec: MemoryRecord) -> bool:
    """True if ``rec``'s id was made from its title (so it shows words of the current text)."""
    slug = slugify(rec.title)
    return slug != "memory" and f"-{slug}-" in f"-{rec.id}-" and not (rec.memory_key and f"-{slugify(rec.memory_key)}-" in f"-{rec.id}-")


def apply_keyed(
    store: StoreParts, conn: Any, row: Any, rec: MemoryRecord, mode: str, fields: frozenset[str], redactions: int, durable: bool
) -> RememberResult:
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
        if holds_lines(current.content, rec.content):  # a replayed append never doubles a line
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
        content=body,
        content_hash=content_hash(body),
        tags=tags,
        memory_key=key,
        title=title,
        kind=rec.kind if "kind" in fields else current.kind,
        expires=rec.expires if "expires" in fields else current.expires,
        importance=rec.importance if "importance" in fields else current.importance,
        metadata={**current.metadata, **rec.metadata},
        # a replaced text is a new fact: the old one's clocks do not carry over to it
        **{
            name: getattr(rec, name) if name in fields or status == "replaced" else getattr(current, name)
            for name in ("happened_at", "valid_from", "valid_to")
        },
    )
    if updated.frontmatter() | {"updated": None} == current.frontmatter() | {"updated": None} and body == current.content:
        return RememberResult(row["id"], "duplicate", path, redactions)  # nothing would change
    updated = updated.replace(updated=now_iso())
    if status == "replaced":
        result, version = _supersede.replace_keyed(
            store, conn, current, updated, path, redactions, durable, fresh_id=updated.title != current.title and _reveals_title(current)
        )
        store.event(
            status,
            updated.replace(id=result.id),
            before=current.content_hash,
            after=updated.content_hash,
            source=rec.source,
            caller=(rec.session_id, rec.user_id),
            previous_id=current.id if result.id != current.id else None,
            version=version,
        )
        return result
    write(store, conn, updated, durable=durable)
    store.event(
        status,
        updated,
        before=current.content_hash,
        after=updated.content_hash,
        source=rec.source,
        caller=(rec.session_id, rec.user_id),
        kept=len(current.content.rstrip("\n")),
    )
    return RememberResult(updated.id, status, path, redactions)
