"""Writing whole records (ids and timestamps included) into a target.

The files store gets each record file written with :func:`agent_memory.formats.atomic.atomic_write` and
``MemoryRecord.render()``, and its index rows in the same locked transaction. Any other
:class:`~agent_memory.backends.base.MemoryBackend` gets drafts through ``remember_many``: the text, scope and fields
survive, ids and timestamps are the backend's own (the report says so with ``ids_kept=False``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import threading
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

import agent_memory.backends.files.keyed as _keyed
from agent_memory.backends.base import Caller, MemoryBackend, innermost
from agent_memory.backends.files.backend import FilesBackend
from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import InvalidInputError
from agent_memory.formats.atomic import atomic_write
from agent_memory.model.drafts import KEEP_PAST_EXPIRES, MemoryDraft, _parse_when
from agent_memory.model.records import MemoryRecord
from agent_memory.portable.report import ImportReport

T = TypeVar("T")
Pending = tuple[str, MemoryRecord, int]  # where it came from, the record (id set), redactions applied
Target = MemoryStore | FilesBackend | MemoryBackend

__all__ = ["Pending", "Target", "batch_size", "files_store", "run_sync", "write_records"]


def batch_size(target: object) -> int:
    """Records per write: batches for the files store; one call (one event loop) for any other backend."""
    return 1000 if files_store(target) is not None else 2**62


def files_store(target: object) -> MemoryStore | None:
    """The files store behind ``target``, or None for another backend."""
    if isinstance(target, MemoryStore):
        return target
    if isinstance(target, FilesBackend):
        return target.store
    if isinstance(target, (str, os.PathLike)):
        return MemoryStore(target)
    if isinstance(target, MemoryBackend):
        return None
    raise InvalidInputError(f"not a memory store or backend: {type(target).__name__}")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code (in a helper thread when a loop is already running)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def main() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    t = threading.Thread(target=main, name="agent-memory-portable")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def write_records(target: Target, items: Sequence[Pending], report: ImportReport, *, dedupe: bool) -> None:
    """Write ``items`` unless already there; every item not written is reported with its reason.

    ``dedupe`` (foreign imports): also skip a text the partition already holds, and a ``memory_key`` another
    live record of the partition holds. A restore of our own export passes False: it writes exactly its records.
    """
    store = files_store(target)
    if store is None:
        run_sync(_write_backend(target, items, report))  # type: ignore[arg-type]
        return
    if items:
        store.open()
        store.index.healing(lambda: _write_files(store, items, report, dedupe))


def _write_files(store: MemoryStore, items: Sequence[Pending], report: ImportReport, dedupe: bool) -> None:
    written: list[str] = []
    with store.lock.hold():
        store.index.refresh(periodic=False)
        with store.index.transaction() as conn:
            for where, rec, redactions in items:
                name = f"{rec.id}.md"
                path = Path(store.records_dir, name)
                data = rec.render().encode("utf-8")
                if os.path.lexists(path):
                    try:
                        same = path.read_bytes() == data
                    except OSError:
                        same = False
                    if same:
                        report.skip(where, "exists", "already imported (identical record file)", rec.id)
                    else:
                        report.skip(where, "conflict", "a different record with this id exists; it is never overwritten", rec.id)
                    continue
                if os.path.lexists(Path(store.archive_dir, name)):  # its owner could never restore it
                    report.skip(where, "conflict", "an archived record has this id (restorable by its owner); it is never taken", rec.id)
                    continue
                if dedupe and rec.superseded_by is None:  # a superseded record is history: never a duplicate
                    dup = _keyed.find_duplicate(conn, rec)
                    if dup is not None:
                        report.skip(where, "duplicate", f"the same text is already stored as {dup['id']}", dup["id"])
                        continue
                    if rec.memory_key is not None:
                        row = _keyed.find_keyed(conn, rec, rec.memory_key, "skip")
                        if row is not None:
                            report.skip(
                                where,
                                "key_conflict",
                                f"memory_key {rec.memory_key!r} is already held by {row['id']} (different text); not merged",
                                row["id"],
                            )
                            continue
                st = atomic_write(path, data, durable=False)
                body_line = data.count(b"\n", 0, len(data) - len(rec.content.encode("utf-8")) - 1) + 1
                store.index.upsert(conn, rec, name, st.st_mtime_ns, st.st_size, body_line=body_line, new=True)
                written.append(rec.id)
                report.redactions += redactions
            if written and store.durable:
                os.sync()  # one flush for the batch instead of an fsync per file
            store.index.mark_synced(conn)
        if written:
            store.write_memory_md()
    report.written.extend(written)


def draft_of(rec: MemoryRecord) -> MemoryDraft:
    return MemoryDraft(
        content=rec.content,
        title=rec.title or None,
        kind=rec.kind,
        scope=rec.scope,
        session_id=rec.session_id,
        user_id=rec.user_id,
        tags=rec.tags,
        memory_key=rec.memory_key,
        on_existing="skip",
        expires=rec.expires,
        importance=rec.importance,
        metadata={**rec.metadata, "imported_id": rec.id, "imported_created": rec.created},
        happened_at=rec.happened_at,
        valid_from=rec.valid_from,
        valid_to=rec.valid_to,
        namespace=rec.namespace or None,  # the importer's (or, for the root's operator, the line's): never dropped
    )


async def _write_backend(backend: MemoryBackend, items: Sequence[Pending], report: ImportReport) -> None:
    report.ids_kept = False
    todo: list[Pending] = []
    seen: dict[tuple[str, str | None, str | None, str], set[tuple[Any, str]]] = {}
    stored_expired = await _expired_imports(backend) if any(_expired(rec) for _, rec, _ in items) else set()
    for item in items:
        where, rec, _ = item
        if _expired(rec) and (rec.id, rec.content, rec.namespace or "") in stored_expired:  # no read shows it: a re-run
            report.skip(where, "exists", "already imported (same original id and text, expired)", rec.id)
            continue
        part = (rec.scope.value, rec.session_id, rec.user_id, rec.namespace or "")
        if part not in seen:  # a re-run finds what it wrote before by the original id kept in metadata
            try:
                hits = await backend.list(_owner(rec), limit=None, scope=rec.scope.value)
            except Exception:  # noqa: BLE001 - a backend without this filter: rely on its own dedupe
                hits = []
            seen[part] = {(h.metadata.get("imported_id"), h.content) for h in hits}
        if (rec.id, rec.content) in seen[part]:
            report.skip(where, "exists", "already imported (same original id and text)", rec.id)
            continue
        if rec.superseded_by:  # it would come back as a current fact: not until backends import supersession
            report.skip(where, "unsupported", f"superseded by {rec.superseded_by}; not imported into this backend", rec.id)
            continue
        todo.append(item)
    errors: list[tuple[int, str]] = []
    keep = KEEP_PAST_EXPIRES.set(True)  # an expired record of the source stays one (invisible, swept later), as on files
    try:
        results = await backend.remember_many([draft_of(r) for _, r, _ in todo], source="import", on_error="skip", errors=errors)
    finally:
        KEEP_PAST_EXPIRES.reset(keep)
    failed = {i for i, _ in errors}
    ok = [item for i, item in enumerate(todo) if i not in failed]
    for i, msg in errors:
        report.skip(todo[i][0], "invalid", msg, todo[i][1].id)
    for (where, _rec, redactions), res in zip(ok, results, strict=False):
        if res.status == "created":
            report.written.append(res.id)
            report.redactions += redactions
        else:
            report.skip(where, "duplicate", f"the backend answered {res.status!r} (kept {res.id})", res.id)


def _expired(rec: MemoryRecord) -> bool:
    when = _parse_when(rec.expires) if rec.expires else None
    return when is not None and when <= dt.datetime.now(dt.UTC)


async def _expired_imports(backend: MemoryBackend) -> set[tuple[Any, str, str]]:
    """``(original id, text, namespace)`` of the expired records an earlier import stored (no caller's read shows
    them, so a re-run finds them here: the operator's whole-store rows, PostgreSQL only); empty elsewhere."""
    inner = innermost(backend)
    if type(inner).__name__ != "PostgresBackend":
        return set()
    from agent_memory.backends.postgres import dump  # type: ignore[import-not-found,unused-ignore]

    rows = await dump.all_records(inner)
    return {(r.metadata.get("imported_id"), r.content, r.namespace or "") for r in rows if _expired(r)}


def _owner(rec: MemoryRecord) -> Caller:
    """The record's own partition and namespace (``full``: an ancestor's copy is not this one)."""
    return Caller(session_id=rec.session_id, user_id=rec.user_id, namespace=rec.namespace or None, isolation="full")
