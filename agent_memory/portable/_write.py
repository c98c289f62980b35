"""Writing whole records (ids and timestamps included) into a target.

The files store gets each record file written with :func:`agent_memory.formats.atomic.atomic_write` and
``MemoryRecord.render()``, and its index rows in the same locked transaction. Any other
:class:`~agent_memory.backends.base.MemoryBackend` gets drafts through ``remember_many``: the text, scope and fields
survive, ids and timestamps are the backend's own (the report says so with ``ids_kept=False``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import hashlib
import os
import threading
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import agent_memory.backends.files.keyed as _keyed
from agent_memory.backends.base import Caller, MemoryBackend, innermost
from agent_memory.backends.files.backend import FilesBackend
from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import InvalidInputError
from agent_memory.formats.atomic import atomic_write
from agent_memory.model.drafts import RESTORING, MemoryDraft, _parse_when, passed_gate
from agent_memory.model.events import tombstone_id
from agent_memory.model.links import imported_id
from agent_memory.model.records import MemoryRecord
from agent_memory.portable._chains import Held, partition_of, plan_chains
from agent_memory.portable.report import ImportReport

T = TypeVar("T")
Pending = tuple[str, MemoryRecord, int]  # where it came from, the record (id set), redactions applied
Target = MemoryStore | FilesBackend | MemoryBackend
Owned = tuple[str, str | None, str | None, str | None]  # a record's id, the id it was imported with, its session, user

__all__ = ["Guard", "Owned", "Pending", "Target", "batch_size", "files_store", "purged_ids", "run_sync", "write_records"]


@dataclass
class Guard:
    """How one import run writes (shared by its batches).

    ``private``: an import as a caller (``--as-user``/``--as-session``/``--namespace``): a file's id is kept only
    where a record of the caller's own partition holds it (a re-run); any other record is written under an id made
    for its owner (:func:`own_id`), so no outcome tells the caller that another owner's record holds an id. ``allow_purged``: re-import records whose purge tombstone the
    target holds (by default they are skipped as ``purged``: a purge is the right to be forgotten).
    ``log_events``: log one ``imported`` event per record written into a files root (off only for the operator's
    restore of a full export, whose own event lines are restored). ``tombstones``: the hashed ids of purged
    records the target holds, read once per run."""

    private: bool = False
    allow_purged: bool = False
    log_events: bool = True
    tombstones: set[str] | None = None


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


def write_records(target: Target, items: Sequence[Pending], report: ImportReport, *, dedupe: bool, guard: Guard | None = None) -> None:
    """Write ``items`` unless already there; every item not written is reported with its reason.

    ``dedupe`` (foreign imports): also skip a text the partition already holds, and a ``memory_key`` another
    live record of the partition holds. A restore of our own export passes False: it writes exactly its records.
    ``guard``: see :class:`Guard` (None: the operator's import, tombstones honoured, events logged).
    """
    guard = Guard() if guard is None else guard
    store = files_store(target)
    if store is None:
        run_sync(_write_backend(target, items, report, guard))  # type: ignore[arg-type]
        return
    if items:
        store.open()
        if guard.tombstones is None:
            guard.tombstones = set() if guard.allow_purged else purged_ids(store)
        store.index.healing(lambda: _write_files(store, items, report, dedupe, guard))


def purged_ids(target: Target) -> set[str]:
    """The hashed ids (:func:`~agent_memory.model.events.tombstone_id`) of every record purged from ``target``: a
    purge leaves one ``purged`` event per record (files and PostgreSQL alike) and nothing else of it."""
    store = files_store(target)
    if store is not None:
        store.open()
        return {e.id for e in store.events.read()[0] if e.event == "purged"}
    return run_sync(_pg_tombstones(target))  # type: ignore[arg-type]


async def _pg_tombstones(backend: MemoryBackend) -> set[str]:
    inner = innermost(backend)
    if type(inner).__name__ != "PostgresBackend":
        return set()  # a backend without a readable event log keeps no tombstones we can read
    from agent_memory.backends.postgres import dump  # type: ignore[import-not-found,unused-ignore]

    return {e.id for e in await dump.all_events(inner) if e.event == "purged"}


def was_purged(rec: MemoryRecord, tombstones: set[str]) -> bool:
    """Does ``tombstones`` hold ``rec`` (by its id, or by the id it had where it was first imported from)?"""
    if not tombstones:
        return False
    first = rec.metadata.get("imported_id")
    return tombstone_id(rec.id) in tombstones or (isinstance(first, str) and tombstone_id(first) in tombstones)


def first_id(rec: MemoryRecord) -> str:
    """The id ``rec`` was first written under, which every store it passes through keeps as ``metadata.imported_id``
    (so a ``[[id]]`` link written there resolves after each hop): its own ``imported_id`` when it has one, else its
    id. A store's id minted in between (a backend's, an owner-qualified one) is not kept: a link naming it does not
    survive a further id-minting hop."""
    return imported_id(rec.metadata) or rec.id


def skip_purged(report: ImportReport, where: str, rec: MemoryRecord) -> None:
    report.skip(
        where,
        "purged",
        f"record {rec.id} was purged from this store (its purge tombstone is here); not re-imported "
        "(pass allow_purged=True / --allow-purged to bring it back deliberately)",
        rec.id,
    )


def _partition(scope: object, session_id: object, user_id: object, namespace: object) -> tuple[Any, ...]:
    return (getattr(scope, "value", scope), session_id or None, user_id or None, namespace or "")


def _holder(store: MemoryStore, conn: Any, rid: str) -> tuple[Any, ...] | None:
    """The partition of the live or archived record ``rid`` (None: no record has this id)."""
    row = conn.execute("SELECT scope, session_id, user_id, namespace FROM records WHERE id = ?", (rid,)).fetchone()
    if row is not None:
        return _partition(row["scope"], row["session_id"], row["user_id"], row["namespace"])
    name = f"{rid}.md"
    for folder in (store.records_dir, store.archive_dir):
        if os.path.lexists(Path(folder, name)):
            try:
                from agent_memory.formats.quarantine import read_record_file

                held = read_record_file(Path(folder), name)[0]
            except Exception:  # noqa: BLE001 - unreadable: nobody's partition we can tell; treat as someone else's
                return ("?",)
            return _partition(held.scope, held.session_id, held.user_id, held.namespace)
    return None


def own_id(rec: MemoryRecord) -> str:
    """An id for ``rec`` made for its owner: its id with a short hash of its partition (scope, session, user,
    namespace), so an id another owner holds is never reported to a caller who cannot see that record."""
    part = "\0".join(str(x) for x in _partition(rec.scope, rec.session_id, rec.user_id, rec.namespace))
    tag = hashlib.sha256(f"{rec.id}\0{part}".encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{rec.id[:200]}-{tag}"


def _own_links(store: MemoryStore, conn: Any, rec: MemoryRecord) -> MemoryRecord:
    """``rec``'s supersession links naming the ids its neighbours get in the same caller's import (the rule above,
    applied to each linked id: kept where the caller's own record holds it, else made for the owner), so the chain
    a file carries stays one chain."""
    part = _partition(rec.scope, rec.session_id, rec.user_id, rec.namespace)

    def mapped(rid: str | None) -> str | None:
        if not rid or _holder(store, conn, rid) == part:
            return rid
        return own_id(rec.replace(id=rid))

    return rec.replace(supersedes=mapped(rec.supersedes), superseded_by=mapped(rec.superseded_by))


def _sound_chains(store: MemoryStore, conn: Any, items: list[Pending], report: ImportReport) -> list[Pending]:
    """``items`` without the records whose supersession links break a chain (:func:`plan_chains`, the rule every
    backend's import applies), each of those reported."""

    def held(rid: str, _part: Any) -> Held | None:  # ids are unique in a files root
        row = conn.execute("SELECT superseded_by FROM records WHERE id = ?", (rid,)).fetchone()
        where = _holder(store, conn, rid)
        if where is None:
            return None
        if row is None:  # an archived (or unreadable) record: its partition counts, not its links
            return Held(where, None, archived=True)
        return Held(where, row["superseded_by"])

    bad = plan_chains([rec for _, rec, _ in items], held)
    for i, (reason, message) in sorted(bad.items()):
        report.skip(items[i][0], reason, message, items[i][1].id)
    return [item for i, item in enumerate(items) if i not in bad]


def _write_files(store: MemoryStore, items: Sequence[Pending], report: ImportReport, dedupe: bool, guard: Guard) -> None:
    written: list[MemoryRecord] = []
    linked: list[Path] = []  # this batch's new files: removed again if the batch fails before its rows commit
    tombstones = guard.tombstones or set()
    with store.lock.hold():
        store.index.refresh(periodic=False)
        try:
            _write_batch(store, items, report, dedupe, guard, tombstones, written, linked)
        except BaseException:  # Ctrl-C or a failure mid-batch: the rows rolled back, so do its files (all or nothing)
            for path in linked:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            raise
        for rec in written:  # committed: counted at once, so an interrupt from here on still reports them
            report.wrote(rec.id)
        if written and guard.log_events:  # one `imported` event per record, undoable as on PostgreSQL
            with store.events.batch():
                for rec in written:
                    store.event("created", rec, after=rec.content_hash, source="import")
        if written:
            store.write_memory_md()


def _write_batch(
    store: MemoryStore,
    items: Sequence[Pending],
    report: ImportReport,
    dedupe: bool,
    guard: Guard,
    tombstones: set[str],
    written: list[MemoryRecord],
    linked: list[Path],
) -> None:
    """Write ``items``' files and index rows in one index transaction (see :func:`_write_files`)."""
    with store.index.transaction() as conn:
        mine: list[Pending] = []
        for where, rec, redactions in items:
            if not guard.private and not guard.allow_purged and was_purged(rec, tombstones):
                skip_purged(report, where, rec)
                continue
            if guard.private and _holder(store, conn, rec.id) != _partition(rec.scope, rec.session_id, rec.user_id, rec.namespace):
                # an import as a caller keeps a file's id only where the caller's own record holds it (a re-run);
                # any other id gets the owner's suffix, free or not, so the outcome never tells the caller whether
                # someone else's record holds it; the file's id stays in metadata.imported_id, which its [[id]]
                # links resolve through (model.links), as on a backend that mints its own ids
                rec = rec.replace(id=own_id(rec), metadata={**rec.metadata, "imported_id": first_id(rec)})
                report.ids_kept = False
            if guard.private and (rec.supersedes or rec.superseded_by):
                rec = _own_links(store, conn, rec)
            if guard.private and not guard.allow_purged and tombstone_id(rec.id) in tombstones:
                # a caller's import checks only the id it would write (the caller's own): another owner's
                # tombstone (of the file's id or its imported_id) is never observable
                skip_purged(report, where, rec)
                continue
            mine.append((where, rec, redactions))
        if any(rec.supersedes or rec.superseded_by for _, rec, _ in mine):
            mine = _sound_chains(store, conn, mine, report)
        for where, rec, redactions in mine:
            name = f"{rec.id}.md"
            path = Path(store.records_dir, name)
            data = rec.render().encode("utf-8")
            if os.path.lexists(path):
                if _same_record(store, name, path, data, rec):
                    report.skip(where, "exists", "already imported (the same record, lifecycle stamps aside)", rec.id)
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
            linked.append(path)
            body_line = data.count(b"\n", 0, len(data) - len(rec.content.encode("utf-8")) - 1) + 1
            store.index.upsert(conn, rec, name, st.st_mtime_ns, st.st_size, body_line=body_line, new=True)
            written.append(rec)
            report.redactions += redactions
        if written and store.durable:
            os.sync()  # one flush for the batch instead of an fsync per file
        store.index.mark_synced(conn)


def _unstamped(rec: MemoryRecord) -> bytes:
    """``rec`` without its lifecycle stamps: ``updated`` and ``metadata.provenance`` (who changed it when: an undo
    restamps them, an import as a caller writes its own)."""
    meta = {k: v for k, v in rec.metadata.items() if k != "provenance"}
    return rec.replace(updated=rec.created, metadata=meta).render().encode("utf-8")


def _same_record(store: MemoryStore, name: str, path: Path, data: bytes, rec: MemoryRecord) -> bool:
    """Does the record file ``name`` hold ``rec`` (rendered ``data``): the same bytes, or the same record apart
    from its lifecycle stamps (:func:`_unstamped`)? Then a re-import finds it (``exists``), never a ``conflict``."""
    try:
        if path.read_bytes() == data:
            return True
        from agent_memory.formats.quarantine import read_record_file

        return _unstamped(read_record_file(Path(store.records_dir), name)[0]) == _unstamped(rec)
    except Exception:  # noqa: BLE001 - unreadable or gone: not the same record
        return False


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
        # the id this record has for its owner (see own_id): a backend that mints its own ids tombstones it on purge,
        # so a caller's re-import of the same line stays purged
        metadata={**rec.metadata, "imported_id": first_id(rec), "imported_owner_id": own_id(rec), "imported_created": rec.created},
        happened_at=rec.happened_at,
        valid_from=rec.valid_from,
        valid_to=rec.valid_to,
        namespace=rec.namespace or None,  # the importer's (or, for the root's operator, the line's): never dropped
    )


async def _write_backend(backend: MemoryBackend, items: Sequence[Pending], report: ImportReport, guard: Guard) -> None:
    report.ids_kept = False
    todo: list[Pending] = []
    if guard.tombstones is None:
        guard.tombstones = set() if guard.allow_purged or not items else await _pg_tombstones(backend)
    seen: dict[tuple[str, str | None, str | None, str], set[tuple[Any, str]]] = {}
    held: dict[str, str] = {}  # an original id an earlier import wrote -> its id in the backend (a re-run's chain)
    stored: dict[str, Held] = {}  # an original id an earlier import wrote -> its partition and successor there
    stored_in: dict[tuple[str, Any], Held] = {}  # the same, per partition (an id several partitions imported)
    stored_expired = await _expired_imports(backend) if any(_expired(rec) for _, rec, _ in items) else set()
    for item in items:
        where, rec, _ = item
        if not guard.private and not guard.allow_purged and was_purged(rec, guard.tombstones or set()):
            # (a caller's import: the file's ids may be another owner's tombstones, never observable to the caller)
            skip_purged(report, where, rec)
            continue
        if guard.private and not guard.allow_purged and tombstone_id(own_id(rec)) in (guard.tombstones or set()):
            # a caller's import checks only its own id for this line (what the purge of its import tombstoned)
            skip_purged(report, where, rec)
            continue
        if _expired(rec) and (first_id(rec), rec.content, rec.namespace or "") in stored_expired:  # no read shows it: a re-run
            report.skip(where, "exists", "already imported (same original id and text, expired)", rec.id)
            continue
        part = (rec.scope.value, rec.session_id, rec.user_id, rec.namespace or "")
        if part not in seen:  # a re-run finds what it wrote before (superseded versions too) by the original id kept
            hits = await _partition_records(backend, rec)
            seen[part] = {(h.metadata.get("imported_id"), h.content) for h in hits} | {(h.id, h.content) for h in hits}
            held.update((str(h.metadata["imported_id"]), h.id) for h in hits if isinstance(h.metadata.get("imported_id"), str))
            for h in hits:  # what each original id is in the target, per partition (for the chain rule)
                first = h.metadata.get("imported_id")
                if isinstance(first, str):
                    where_held = Held(partition_of(rec), h.superseded_by)
                    stored.setdefault(first, where_held)
                    stored_in[first, where_held.partition] = where_held
        if (first_id(rec), rec.content) in seen[part] or (rec.id, rec.content) in seen[part]:
            report.skip(where, "exists", "already imported (same original id and text)", rec.id)
            continue
        todo.append(item)
    # a link names a line's id in its source; the target knows that record by its first id (first_id)
    aliases = {rec.id: first for _, rec, _ in items if (first := first_id(rec)) != rec.id}
    if aliases:
        by_first: dict[str, list[tuple[Any, Held]]] = {}
        for (first, where_part), had in stored_in.items():
            by_first.setdefault(first, []).append((where_part, had))
        for rid, first in aliases.items():
            if first in held:
                held.setdefault(rid, held[first])
            if first in stored:
                stored.setdefault(rid, stored[first])
            for where_part, had in by_first.get(first, ()):
                stored_in.setdefault((rid, where_part), had)
    if any(rec.supersedes or rec.superseded_by for _, rec, _ in todo):
        bad = plan_chains(
            [rec for _, rec, _ in todo],
            lambda rid, part: stored_in.get((rid, part)) or stored.get(rid),
            supersedes_stored=True,
            declared={rec.id: rec.superseded_by for _, rec, _ in items if rec.superseded_by},
        )
        for i, (reason, message) in sorted(bad.items()):
            report.skip(todo[i][0], reason, message, todo[i][1].id)
        todo = [item for i, item in enumerate(todo) if i not in bad]
    await _write_chains(backend, todo, report, held)


async def _partition_records(backend: MemoryBackend, rec: MemoryRecord) -> list[MemoryRecord]:
    """Every record of ``rec``'s partition, superseded versions included (empty for a backend without the filters:
    it relies on its own dedupe)."""
    for filters in ({"include_superseded": True}, {}):
        try:
            return await backend.list(owner_of(rec), limit=None, scope=rec.scope.value, **filters)
        except Exception:  # noqa: BLE001 - a backend without this filter: try without it, then rely on its own dedupe
            continue
    return []


async def _write_chains(backend: MemoryBackend, todo: Sequence[Pending], report: ImportReport, held: dict[str, str]) -> None:
    """Write ``todo`` through ``remember_many`` with its supersession kept: a backend mints its own ids, so a chain
    is written oldest first, one ``remember_many`` per step, each successor superseding the id its predecessor got
    (the predecessor becomes the superseded version it was; the backend stamps the supersession time). A superseded
    record whose successor neither this import nor the target holds is skipped as ``unsupported``."""
    index = {rec.id: i for i, (_, rec, _) in enumerate(todo)}
    pred: dict[int, int] = {}
    for i, (_, rec, _) in enumerate(todo):
        j = index.get(rec.supersedes or "")
        if j is not None and j != i:
            pred[i] = j
    for j, (_, rec, _) in enumerate(todo):
        after = index.get(rec.superseded_by or "")
        if after is not None and after != j and after not in pred and j not in pred.values():
            pred[after] = j
    succ: dict[int, list[int]] = {}
    for i, j in pred.items():
        succ.setdefault(j, []).append(i)
    level: list[int] = []
    for i, (where, rec, _) in enumerate(todo):
        if i in pred:
            continue
        if rec.superseded_by and i not in succ and rec.superseded_by not in held:
            report.skip(
                where,
                "unsupported",
                f"superseded by {rec.superseded_by}, which this import does not hold; not imported as a current value",
                rec.id,
            )
            continue
        level.append(i)
    got: dict[int, str] = {}  # index in todo -> the id the backend gave it
    reached = set(level) | {i for i, (_, rec, _) in enumerate(todo) if i not in pred and i not in level}
    keep = RESTORING.set(True)  # expired records stay (invisible, swept later), as on files; imported_* metadata kept
    try:
        with passed_gate(r for _, r, _ in todo):  # each record passed the gate once already (prepare_record): not twice
            while level:
                drafts = []
                for i in level:
                    rec = todo[i][1]
                    before = got.get(pred[i]) if i in pred else held.get(rec.supersedes or "")
                    drafts.append(dataclasses.replace(draft_of(rec), supersedes=before))
                errors: list[tuple[int, str]] = []
                results = await backend.remember_many(drafts, source="import", on_error="skip", errors=errors)
                failed = {k for k, _ in errors}
                for k, msg in errors:
                    report.skip(todo[level[k]][0], "invalid", msg, todo[level[k]][1].id)
                ok = [i for k, i in enumerate(level) if k not in failed]
                for i, res in zip(ok, results, strict=False):
                    where, _rec, redactions = todo[i]
                    got[i] = res.id  # a duplicate's successor supersedes the record the backend kept
                    if res.status in ("created", "superseded"):
                        report.wrote(res.id)
                        report.redactions += redactions
                    else:
                        report.skip(where, "duplicate", f"the backend answered {res.status!r} (kept {res.id})", res.id)
                # the next step of every chain (after a refused predecessor, its successor is written as the current value)
                level = [n for i in level for n in succ.get(i, ())]
                reached.update(level)
    finally:
        RESTORING.reset(keep)
    for i, (where, rec, _) in enumerate(todo):
        if i not in reached:  # a chain that loops back on itself has no oldest version to start from
            report.skip(where, "invalid", "its supersession links form a cycle; not imported", rec.id)


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


def owner_of(rec: MemoryRecord) -> Caller:
    """The record's own partition and namespace (``full``: an ancestor's copy is not this one)."""
    return Caller(session_id=rec.session_id, user_id=rec.user_id, namespace=rec.namespace or None, isolation="full")
