"""Supersession on the files store: a newer fact replaces an older one as the current fact; nothing is lost.

- ``supersede(old_id, draft)`` (a draft with ``supersedes``) writes the new record and marks the old one
  ``superseded_by`` it, with ``valid_to`` set to when the new fact starts (its ``valid_from``, else its
  ``happened_at``, else the moment of writing; never before the old one started, never later than an end
  it already had). The old record stays on disk, out of default reads; ``get``, ``include_superseded`` and
  ``as_of`` still reach it. Only a live, current record of the draft's own partition can be superseded, and a
  capture write may supersede only a record capture wrote.
- A keyed ``replace`` is a supersession that keeps the current id (citations and ``memory_key=<id>`` stay
  valid): the replaced state is kept as a record of its own (``superseded_by`` the current id) and the current
  record names it in ``supersedes``. When the current id was made from a title the replace changes, the old
  record keeps that id and the new fact gets a fresh one instead.
- ``versions`` follows ``supersedes`` back (then any version kept in ``history/`` by older releases); ``forget``
  of a record deletes that chain too (forgetting is deletion).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import agent_memory.backends.files.history as _history
from agent_memory.backends.files.index import live_sql
from agent_memory.backends.files.record_files import allocate_id, partition_sql, write
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.model.records import MemoryRecord, RecordParseError
from agent_memory.model.supersession import MAX_CHAIN, POINTER, check_supersede, ended
from agent_memory.model.values import shown

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.files.parts import StoreParts
    from agent_memory.model.drafts import RememberResult


def _partition_row(store: StoreParts, conn: Any, rec: MemoryRecord, record_id: str) -> Any:
    sql, params = partition_sql(rec)
    params["id"] = record_id
    return conn.execute(f"SELECT * FROM records r WHERE r.id = :id AND {sql} AND {live_sql('r')}", params).fetchone()


def mark_superseded(store: StoreParts, conn: Any, old: MemoryRecord, new: MemoryRecord, *, durable: bool) -> None:
    write(store, conn, old.replace(superseded_by=new.id, valid_to=ended(old, new)), durable=durable)


def supersede_locked(store: StoreParts, conn: Any, rec: MemoryRecord, redactions: int, durable: bool) -> RememberResult:
    """Write ``rec`` as the successor of ``rec.supersedes`` (inside the lock and the index transaction)."""
    from agent_memory.model.drafts import RememberResult  # drafts import the redaction package, which reads never need

    old_id = rec.supersedes or ""
    row = _partition_row(store, conn, rec, old_id)
    if row is None:
        raise NotFoundError(f"no live record {shown(old_id)} in this partition to supersede")
    check_supersede(
        old_id, kind=row["kind"], source=row["source"], superseded_by=row["superseded_by"], by_kind=rec.kind, by_source=rec.source
    )
    try:
        old = store.index.load_file(row["file"])[0]
    except (FileNotFoundError, RecordParseError):
        raise NotFoundError(f"no live record {shown(old_id)} in this partition to supersede") from None
    if old.content_hash == rec.content_hash:
        return RememberResult(old.id, "duplicate", str(store.records_dir / row["file"]), redactions)
    new = rec.replace(memory_key=rec.memory_key or old.memory_key)
    new = new.replace(id=allocate_id(store, new))
    path = write(store, conn, new, durable=durable, new=True)
    mark_superseded(store, conn, old, new, durable=durable)
    # in the log like every write (undo archives the new record and makes the old one current again)
    store.event(
        "superseded", new, before=old.content_hash, after=new.content_hash, source=rec.source, supersedes=old.id, valid_to=old.valid_to
    )
    return RememberResult(new.id, "superseded", path, redactions)


def replace_keyed(
    store: StoreParts, conn: Any, current: MemoryRecord, new: MemoryRecord, path: str, redactions: int, durable: bool, *, fresh_id: bool
) -> tuple[RememberResult, str]:
    """A keyed replace as supersession (see the module docstring); ``new`` is the new state under the current id.

    Returns the result and the id of the superseded record now holding the replaced state."""
    from agent_memory.model.drafts import RememberResult

    new = new.replace(created=new.updated, metadata={k: v for k, v in new.metadata.items() if k != POINTER})
    if fresh_id:  # the current id shows words of the replaced title: the old record keeps it
        new = new.replace(supersedes=current.id)
        new = new.replace(id=allocate_id(store, new))
        new_path = write(store, conn, new, durable=durable, new=True)
        mark_superseded(store, conn, current, new, durable=durable)
        return RememberResult(new.id, "replaced", new_path, redactions), current.id
    version = current.replace(superseded_by=current.id, valid_to=ended(current, new))
    version = version.replace(id=allocate_id(store, version))
    write(store, conn, version, durable=durable, new=True)
    write(store, conn, new.replace(supersedes=version.id), durable=durable)
    return RememberResult(current.id, "replaced", path, redactions), version.id


def predecessors(store: StoreParts, rec: MemoryRecord) -> list[MemoryRecord]:
    """The records ``rec`` superseded, newest first (stops at a missing, unreadable or foreign link)."""
    out: list[MemoryRecord] = []
    seen = {rec.id}
    pointer = rec.supersedes
    while pointer and pointer not in seen and len(out) < MAX_CHAIN:
        seen.add(pointer)
        try:
            old = store.index.load_file(f"{pointer}.md")[0]
        except (OSError, RecordParseError, InvalidInputError):
            break
        if (old.scope, old.session_id, old.user_id) != (rec.scope, rec.session_id, rec.user_id):
            break  # supersession stays in its partition, so a true chain never leaves it
        out.append(old)
        pointer = old.supersedes
    return out


def predecessors_anywhere(store: StoreParts, rec: MemoryRecord) -> list[tuple[MemoryRecord, Path]]:
    """The records ``rec`` superseded with their files, newest first, live (``records/``) or archived."""
    out: list[tuple[MemoryRecord, Path]] = []
    pointer, seen = rec.supersedes, {rec.id}
    while pointer and pointer not in seen and len(out) < MAX_CHAIN:
        seen.add(pointer)
        live = store.records_dir / f"{pointer}.md"
        try:
            old, path = (
                (store.index.load_file(live.name)[0], live)
                if live.is_file()
                else (_history.read_archived(store, pointer), _history.archived_file(store, pointer))
            )
        except (OSError, InvalidInputError):
            break
        if old is None or path is None or (old.scope, old.session_id, old.user_id) != (rec.scope, rec.session_id, rec.user_id):
            break
        out.append((old, path))
        pointer = old.supersedes
    return out


def versions(store: StoreParts, rec: MemoryRecord) -> list[MemoryRecord]:
    """Earlier versions of ``rec``, newest first: the records it superseded, then versions kept in ``history/``."""
    chain = predecessors(store, rec)
    last = chain[-1] if chain else rec
    return chain + [old for _, old in _history.chain(store, last)]


def drop_predecessors(store: StoreParts, conn: Any, rec: MemoryRecord) -> list[str]:
    """Delete the records ``rec`` superseded (files and index rows), on forget; returns their ids."""
    gone = []
    for old in predecessors(store, rec):
        with contextlib.suppress(OSError, InvalidInputError):
            _history.drop_chain(store, old)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(store.records_dir / f"{old.id}.md")
        store.index.delete(conn, old.id)
        gone.append(old.id)
    return gone


def current_row(conn: Any, row: Any) -> Any:
    """The record that ``row`` was (eventually) superseded by, following ``superseded_by``; ``row`` if current."""
    seen: set[str] = set()
    while row is not None and row["superseded_by"] and row["id"] not in seen and len(seen) < MAX_CHAIN:
        seen.add(row["id"])
        nxt = conn.execute("SELECT * FROM records r WHERE r.id = ?", (row["superseded_by"],)).fetchone()
        if nxt is None or (nxt["scope"], nxt["session_id"], nxt["user_id"]) != (row["scope"], row["session_id"], row["user_id"]):
            return None
        row = nxt
    return None if row is not None and row["superseded_by"] else row
