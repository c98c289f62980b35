"""Where replaced and retired text goes: ``history/`` (previous versions) and ``archive/`` (expired, duplicates).

A keyed ``replace`` never loses text: the file it overwrites is kept whole as
``history/<id>.<UTC timestamp>.md`` and the new version's metadata points at it
(``previous_version``); each kept version carries the pointer to the one before, so the chain
can be read back with :meth:`MemoryStore.versions` / :meth:`MemoryStore.history` and restored with
:meth:`MemoryStore.restore`. ``forget`` and ``sweep`` move a record to ``archive/`` (restorable) and keep
its chain; only a purge (:mod:`agent_memory.backends.files.purge`) deletes a record's files.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_memory.formats.atomic import atomic_write, ensure_dir
from agent_memory.model.records import MemoryRecord, RecordParseError, content_hash, now_iso, parse_record
from agent_memory.model.supersession import POINTER

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.files.parts import StoreParts
    from agent_memory.model.reports import SweepReport

# the note is written after the record file's text as it was (its content's own trailing newlines kept) and one
# blank line: reading it back takes that line and no more, so a memory-tool file's last newline survives
_ANNOTATION = re.compile(r"\n{0,2}<!-- archived: [^\n]*-->\s*\Z")


def save_version(store: StoreParts, current: MemoryRecord, text: str) -> str:
    """Keep ``text`` (the whole current file of ``current``) in ``history/``; return its root-relative path."""
    ensure_dir(store.history_dir)
    stamp = now_iso().replace(":", "").replace("-", "").replace(".", "")
    name = f"{current.id}.{stamp}.md"
    atomic_write(store.history_dir / name, text.encode("utf-8"), durable=store.durable)
    return f"history/{name}"


def _pointed(store: StoreParts, pointer: object) -> Path | None:
    """The history file a pointer names, if it is one (never a path outside ``history/``)."""
    if not isinstance(pointer, str) or not pointer.startswith("history/"):
        return None
    name = pointer[len("history/") :]
    if not name or "/" in name or "\\" in name or name.startswith(".") or not name.endswith(".md"):
        return None
    return store.history_dir / name


def chain(store: StoreParts, rec: MemoryRecord, limit: int = 1000) -> list[tuple[Path, MemoryRecord]]:
    """The kept versions behind ``rec``, newest first (stops at a missing or unreadable link)."""
    out: list[tuple[Path, MemoryRecord]] = []
    pointer = rec.metadata.get(POINTER)
    seen: set[Path] = set()
    while len(out) < limit:
        path = _pointed(store, pointer)
        if path is None or path in seen or path.is_symlink():
            break
        seen.add(path)
        try:
            text = path.read_text(encoding="utf-8")
            old = parse_record(text, rec.id, path=str(path))
        except (OSError, UnicodeDecodeError, RecordParseError):
            break
        if (old.scope, old.session_id, old.user_id) != (rec.scope, rec.session_id, rec.user_id):
            break  # a replace stays in its partition, so a true chain never leaves it
        out.append((path, old))
        pointer = old.metadata.get(POINTER)
    return out


def drop_chain(store: StoreParts, rec: MemoryRecord) -> int:
    """Delete every kept version behind ``rec`` (on purge)."""
    n = 0
    for path, _ in chain(store, rec):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
            n += 1
    return n


def archive(
    store: StoreParts,
    conn: Any,
    row: Any,
    reason: str,
    *,
    event: str = "archived",
    caller: tuple[str | None, str | None] | None = None,
    **detail: Any,
) -> None:
    """Move one record file to ``archive/`` with an annotation, drop its index rows, and log ``event``."""
    ensure_dir(store.archive_dir)
    src = store.records_dir / row["file"]
    try:
        text = src.read_text(encoding="utf-8")
    except FileNotFoundError:
        store.index.delete(conn, row["id"])
        return
    note = f"\n<!-- archived: {reason} at {now_iso()} -->\n"
    atomic_write(
        store.archive_dir / row["file"], ((text if text.endswith("\n") else text + "\n") + note).encode("utf-8"), durable=store.durable
    )
    os.unlink(src)
    store.index.delete(conn, row["id"])
    store.event(event, row, before=row["content_hash"], caller=caller, reason=reason, **detail)


def sweep(store: StoreParts, now: dt.datetime, report: SweepReport) -> SweepReport:
    """Archive expired records (TTL) and exact duplicates (keeping the newest), under the lock."""
    from agent_memory.model.drafts import _parse_when
    from agent_memory.model.supersession import UNDEDUPED_KINDS

    with store.lock.hold(), store.events.batch():
        store.index.refresh(force=True)
        with store.index.transaction() as conn:
            for row in conn.execute("SELECT * FROM records WHERE expires IS NOT NULL").fetchall():
                when = _parse_when(row["expires"])
                if when is not None and when <= now:
                    archive(store, conn, row, f"expired (expires {row['expires']})", event="swept")
                    report.expired.append(row["id"])
            groups: dict[tuple[Any, ...], list[Any]] = {}
            # a superseded record is history, never a duplicate of the current fact that repeats its words
            for row in conn.execute("SELECT * FROM records WHERE superseded_by IS NULL ORDER BY updated DESC, id").fetchall():
                if row["kind"] in UNDEDUPED_KINDS:  # files of the memory tool may repeat each other's words
                    continue
                owner = (row["scope"], row["session_id"], row["user_id"], row["namespace"] or "")  # one partition, one namespace
                groups.setdefault((row["content_hash"], *owner), []).append(row)
            for rows in groups.values():
                for row in rows[1:]:
                    archive(store, conn, row, f"duplicate of {rows[0]['id']}", event="swept")
                    report.duplicates.append(row["id"])
            store.index.mark_synced(conn)
        store.write_memory_md()
    return report


def archived_file(store: StoreParts, record_id: str) -> Path | None:
    path = store.archive_dir / f"{record_id}.md"
    if store.archive_dir.is_symlink() or path.is_symlink() or not path.is_file():
        return None
    return path


def read_archived(store: StoreParts, record_id: str) -> MemoryRecord | None:
    """The archived record ``record_id`` with its archive note removed, or None."""
    path = archived_file(store, record_id)
    if path is None:
        return None
    try:
        rec = parse_record(path.read_text(encoding="utf-8"), record_id, path=str(path))
    except (OSError, UnicodeDecodeError, RecordParseError):
        return None
    body = _ANNOTATION.sub("", rec.content)
    while body != (body := _ANNOTATION.sub("", body)):
        pass
    return rec.replace(content=body, content_hash=content_hash(body))
