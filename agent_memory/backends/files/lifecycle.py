"""Reversible changes of the files store: events, provenance, forget-to-archive, history, restore and undo.

- Every mutation goes through :func:`emit` (``MemoryStore.event``): one line in the event log.
- Every record file the store writes carries ``metadata.provenance``: ``created`` and ``updated``, each
  ``{at, actor, session_id, user_id, run_id, tool_call_id}`` (the fields known at the time).
- ``forget`` moves the record to ``archive/`` (its kept versions stay in ``history/``): :func:`restore`
  brings it back. Only :mod:`agent_memory.backends.files.purge` deletes.
- Versions are numbered oldest first: ``1`` is the first kept version, the highest is the current one.
- :func:`undo` reverses the caller's last change that is not undone yet, only if the record is still
  as that change left it (its content hash says so); otherwise it refuses and names ``restore``.
- :func:`restore` and :func:`undo` read, decide and write under the root lock, so a version another
  process writes meanwhile is either seen (and kept in history) or waits for them; never written over.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import agent_memory.backends.files.history as _history
import agent_memory.backends.files.supersede as _supersede
from agent_memory.backends.files.history import archived_file, read_archived
from agent_memory.backends.files.record_files import write
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.model.curated import restored_metadata
from agent_memory.model.events import Event, current_acting, part_of_another, story, visible
from agent_memory.model.links import parse_links
from agent_memory.model.records import MemoryRecord, RecordParseError, content_hash, now_iso, validate_id
from agent_memory.model.reports import History
from agent_memory.model.supersession import MAX_CHAIN
from agent_memory.model.wording import record_not_found

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.files.parts import StoreParts

log = logging.getLogger("agent_memory")
PROVENANCE = "provenance"
UNDOABLE = ("created", "imported", "appended", "replaced", "superseded", "restored", "forgotten", "swept", "archived", "undone")


def _owner(rec: Any) -> tuple[str, str, str | None, str | None, str | None]:
    if isinstance(rec, MemoryRecord):
        return rec.id, rec.scope.value, rec.session_id, rec.user_id, rec.namespace or None
    ns = rec["namespace"] if "namespace" in rec.keys() else None
    return rec["id"], rec["scope"], rec["session_id"], rec["user_id"], ns or None


#: Events whose record text was just written: their ``detail.links`` counts the ``[[links]]`` in it.
LINKED_EVENTS = frozenset({"created", "imported", "appended", "replaced", "superseded", "hand_edit"})


def emit(
    store: StoreParts,
    kind: str,
    rec: Any,
    *,
    before: str | None = None,
    after: str | None = None,
    source: str | None = None,
    caller: tuple[str | None, str | None] | None = None,
    **detail: Any,
) -> Event | None:
    """Append one event about ``rec`` (a record or an index row). Never fails the change it reports."""
    rid, scope, osid, ouid, ons = _owner(rec)
    if kind in LINKED_EVENTS and isinstance(rec, MemoryRecord) and "links" not in detail:
        detail["links"] = len(parse_links(rec.content)) or None  # how many [[links]] the written text holds
    who = current_acting()
    if kind == "created" and source == "import":
        kind = "imported"
    if who.step and "step" not in detail:
        detail["step"] = who.step  # one undoable step (model.events.acting)
    csid, cuid = caller if caller is not None else (osid, ouid)
    sid, uid = who.session_id or csid, who.user_id or cuid
    ev = Event(
        kind,
        rid,
        actor=who.actor or source or "api",
        session_id=sid,
        user_id=uid,
        run_id=who.run_id,
        tool_call_id=who.tool_call_id,
        before=before,
        after=after,
        scope=scope,
        owner_session=osid,
        owner_user=ouid,
        detail={k: v for k, v in detail.items() if v is not None},
        owner_namespace=ons,
    )
    try:
        return store.events.append(ev)
    except OSError as exc:  # the change is made and durable; its line is what failed
        log.warning("could not append the %s event of %s: %s", kind, rid, exc)
        return None


def stamp(rec: MemoryRecord) -> MemoryRecord:
    """``rec`` with ``metadata.provenance`` (``created`` kept when present, ``updated`` now).

    Provenance that already describes this very version (its ``updated.at`` is ``rec.updated``, as in a
    lossless import) is kept as it is."""
    prov = rec.metadata.get(PROVENANCE)
    if isinstance(prov, dict) and isinstance(prov.get("updated"), dict) and prov["updated"].get("at") == rec.updated:
        return rec
    who = current_acting()
    entry = {
        k: v
        for k, v in (
            ("at", rec.updated),
            ("actor", who.actor or rec.source),
            ("session_id", who.session_id or rec.session_id),
            ("user_id", who.user_id or rec.user_id),
            ("run_id", who.run_id),
            ("tool_call_id", who.tool_call_id),
        )
        if v
    }
    created = prov.get("created") if isinstance(prov, dict) and isinstance(prov.get("created"), dict) else entry
    return rec.replace(metadata={**rec.metadata, PROVENANCE: {"created": created, "updated": entry}})


# -- forget / archive ---------------------------------------------------------------------
def forget(store: StoreParts, record_id: str, session_id: str | None, user_id: str | None) -> bool:
    """Move a visible record to ``archive/`` (event ``forgotten``); False if the caller sees no such record."""
    store.open()
    with store.lock.hold():
        store.index.refresh()
        row = store.visible_row(record_id, session_id, user_id)
        if row is None:
            return False

        try:  # the versions it superseded leave with it (restore brings them back)
            older = _supersede.predecessors(store, store.index.load_file(row["file"])[0])
        except (OSError, InvalidInputError):
            older = []

        def run() -> None:
            with store.index.transaction() as conn:
                _history.archive(store, conn, row, "forgotten", event="forgotten", caller=(session_id, user_id))
                for old in older:
                    old_row = store.index.get_row(old.id)
                    if old_row is not None:
                        _history.archive(
                            store,
                            conn,
                            old_row,
                            f"forgotten with {record_id}",
                            event="archived",
                            caller=(session_id, user_id),
                            part_of=record_id,
                        )
                store.index.mark_synced(conn)

        store.index.healing(run)
        store.write_memory_md()
    return True


def _sees(rec: MemoryRecord, session_id: str | None, user_id: str | None) -> bool:
    ev = Event(
        "archived",
        rec.id,
        scope=rec.scope.value,
        owner_session=rec.session_id,
        owner_user=rec.user_id,
        owner_namespace=rec.namespace or None,
    )
    return visible(ev, session_id, user_id)


def _current(store: StoreParts, record_id: str, session_id: str | None, user_id: str | None) -> tuple[MemoryRecord, str]:
    validate_id(record_id)
    try:
        return store.get(record_id, session_id=session_id, user_id=user_id), "live"
    except NotFoundError:
        rec = read_archived(store, record_id)
        if rec is None or not _sees(rec, session_id, user_id):
            raise record_not_found(record_id, what="(live or archived) ") from None
        return rec, "archived"


def history(store: StoreParts, record_id: str, session_id: str | None, user_id: str | None) -> History:
    rec, state = _current(store, record_id, session_id, user_id)
    older = _supersede.versions(store, rec) if state == "live" else [old for old, _ in _supersede.predecessors_anywhere(store, rec)]
    events = [e for e in story_of(store, record_id, store.events.read()[0], rec) if visible(e, session_id, user_id)]
    return History(record_id, state, [*reversed(older), rec], events)


def story_of(store: StoreParts, record_id: str, events: Sequence[Event], rec: MemoryRecord | None = None) -> list[Event]:
    """The events of ``record_id``'s whole story (:func:`agent_memory.model.events.story`): its own, each supersession
    that replaced it (logged under the record that replaced it, which names it in ``detail.supersedes``; an older
    line that names none counts when it is of the record ``superseded_by`` names) and each undo of one. Not yet
    filtered by visibility: the caller does that, event by event."""
    if rec is None:
        row = store.index.get_row(record_id)
        successor = row["superseded_by"] if row is not None else None
    else:
        successor = rec.superseded_by
    return story(events, record_id, (successor,) if successor else ())


# -- restore ------------------------------------------------------------------------------
def _write_version(
    store: StoreParts, current: MemoryRecord, content: str, kind: str, old: MemoryRecord | None, **detail: Any
) -> MemoryRecord:
    """Make ``content`` (and ``old``'s title/tags/kind) the current version, keeping ``current`` in history.

    Under the lock, ``current`` must still be what the record file holds: a version written since the caller
    read it (another process's keyed replace) is never dropped; the change is refused instead."""
    with store.lock.hold():
        store.index.refresh(periodic=False)
        row = store.index.get_row(current.id)
        if row is None:
            raise NotFoundError(f"record {current.id} vanished")
        try:
            on_disk = store.index.load_file(row["file"])[0]
        except (OSError, RecordParseError):
            raise NotFoundError(f"record {current.id} vanished") from None
        if (on_disk.content_hash, on_disk.updated, on_disk.supersedes) != (current.content_hash, current.updated, current.supersedes):
            raise InvalidInputError(
                f"record {current.id} changed while it was being {kind}; nothing was changed: see `history` and try again"
            )
        fields: dict[str, Any] = {"content": content, "content_hash": content_hash(content), "updated": now_iso()}
        if old is not None:
            fields.update(title=old.title, tags=old.tags, kind=old.kind)
            if carried := restored_metadata(old.kind, old.metadata):  # a curated line's priority comes back with it
                fields["metadata"] = {**on_disk.metadata, **carried}
        new = on_disk.replace(**fields)  # the current state is kept as a superseded version record (see .supersede)
        path = str(store.records_dir / row["file"])

        def run() -> None:
            with store.index.transaction() as conn:
                _supersede.replace_keyed(store, conn, on_disk, new, path, 0, store.durable, fresh_id=False)
                store.index.mark_synced(conn)

        store.index.healing(run)
        emit(store, kind, new, before=on_disk.content_hash, after=new.content_hash, **detail)
        store.write_memory_md()
    return new


def unarchive(store: StoreParts, rec: MemoryRecord, **detail: Any) -> MemoryRecord:
    """Bring an archived record back to ``records/`` (an expired one loses its expiry)."""
    from agent_memory.backends.files.record_files import write

    with store.lock.hold():
        store.index.refresh(periodic=False)
        if store.index.get_row(rec.id) is not None or (store.records_dir / f"{rec.id}.md").exists():
            raise InvalidInputError(f"record {rec.id} is live; restore a version with --version N (see history)")
        expires = rec.expires
        if expires is not None and expires <= now_iso():
            expires = None
        back = rec.replace(expires=expires, updated=now_iso(), path=None)

        def run() -> None:
            with store.index.transaction() as conn:
                write(store, conn, back, durable=store.durable, new=True)
                store.index.mark_synced(conn)

        store.index.healing(run)
        path = archived_file(store, rec.id)
        if path is not None:
            os.unlink(path)
        _unarchive_versions(store, back)
        emit(store, detail.pop("kind", "restored"), back, after=back.content_hash, **{"from": "archive", **detail})
        store.write_memory_md()
    return back


def _write_back(store: StoreParts, rec: MemoryRecord) -> None:
    from agent_memory.backends.files.record_files import write

    with store.index.transaction() as conn:
        write(store, conn, rec, durable=store.durable, new=True)
        store.index.mark_synced(conn)


def _unarchive_versions(store: StoreParts, rec: MemoryRecord) -> None:
    """Bring back the superseded versions archived with ``rec`` (by ``forget``), following ``supersedes``."""
    pointer, seen = rec.supersedes, {rec.id}
    while pointer and pointer not in seen and len(seen) <= MAX_CHAIN:
        seen.add(pointer)
        old, path = read_archived(store, pointer), archived_file(store, pointer)
        if old is None or path is None or (old.scope, old.session_id, old.user_id) != (rec.scope, rec.session_id, rec.user_id):
            return
        if store.index.get_row(old.id) is None:
            store.index.healing(functools.partial(_write_back, store, old.replace(path=None)))
            os.unlink(path)
        pointer = old.supersedes


def restore(store: StoreParts, record_id: str, version: int | None, session_id: str | None, user_id: str | None) -> MemoryRecord:
    """Unarchive a forgotten/swept record, or make version ``version`` (default: the previous one) current."""
    store.open()
    with store.lock.hold():  # decide with what the files hold while no other writer can change them
        store.index.refresh(periodic=False)
        return _restore_locked(store, record_id, version, session_id, user_id)


def _restore_locked(store: StoreParts, record_id: str, version: int | None, session_id: str | None, user_id: str | None) -> MemoryRecord:
    rec, state = _current(store, record_id, session_id, user_id)
    if state == "archived":
        if version is not None:
            raise InvalidInputError(f"record {record_id} is archived: restore it first (without --version)")
        return unarchive(store, rec)
    versions = [*reversed(_supersede.versions(store, rec)), rec]
    if len(versions) == 1:
        raise InvalidInputError(f"record {record_id} has no earlier version to restore")
    n = len(versions) - 1 if version is None else version
    if not isinstance(n, int) or not 1 <= n < len(versions):
        raise InvalidInputError(f"version must be between 1 and {len(versions) - 1} (version {len(versions)} is current)")
    old = versions[n - 1]
    return _write_version(store, rec, old.content, "restored", old, version=n)


# -- undo ---------------------------------------------------------------------------------
def _by(ev: Event, session_id: str | None, user_id: str | None) -> bool:
    """Was ``ev`` made by this caller? A user's changes from any of their sessions count when no session is given."""
    if user_id is not None:
        return ev.user_id == user_id and (session_id is None or ev.session_id in (session_id, None))
    return ev.user_id is None and ev.session_id == session_id


def last_change(store: StoreParts, session_id: str | None, user_id: str | None) -> Event | None:
    """The caller's latest undoable change that is not undone yet."""
    events = store.events.read()[0]
    undone = {e.detail.get("undo_of") for e in events if e.detail.get("undo_of")}
    for ev in reversed(events):
        if ev.detail.get("undo_of") or ev.eid in undone or ev.event not in UNDOABLE or part_of_another(ev):
            continue
        if _by(ev, session_id, user_id) and visible(ev, session_id, user_id):
            return ev
    return None


def undo(store: StoreParts, session_id: str | None, user_id: str | None) -> Event:
    """Reverse the caller's last change (see the module docstring); returns the event it reversed."""
    store.open()
    with store.lock.hold():  # the precondition (the record is as that change left it) is checked and acted on here
        store.index.refresh(periodic=False)
        ev = _undo_locked(store, session_id, user_id)
        step = ev.detail.get("step")
        while step:  # the rest of the same step (acting(step=…)): one undo reverses it whole
            nxt = last_change(store, session_id, user_id)
            if nxt is None or nxt.detail.get("step") != step:
                break
            _undo_locked(store, session_id, user_id)
        return ev


def _undo_locked(store: StoreParts, session_id: str | None, user_id: str | None) -> Event:
    ev = last_change(store, session_id, user_id)
    if ev is None:
        raise NotFoundError("nothing to undo for this caller (no change of theirs that is not undone yet)")
    tag = {"undo_of": ev.eid}
    if ev.event in ("forgotten", "swept", "archived"):
        rec = read_archived(store, ev.id)
        if rec is None:
            raise NotFoundError(f"record {ev.id} is no longer in the archive")
        unarchive(store, rec, kind="undone", **tag)
        return ev
    try:
        rec = store.get(ev.id, session_id=session_id, user_id=user_id)
    except NotFoundError:
        raise NotFoundError(f"record {ev.id} is gone since that change ({ev.event}); see `history`") from None
    if rec.content_hash != ev.after:
        raise InvalidInputError(f"record {ev.id} changed after that {ev.event}; pick a version with `restore --version`")
    if ev.event == "superseded" and isinstance(ev.detail.get("supersedes"), str):
        _undo_supersede(store, ev, rec)
        return ev
    if ev.event in ("created", "imported") or (ev.event in ("restored", "undone") and ev.detail.get("from") == "archive"):
        with store.lock.hold():
            store.open()
            row = store.index.get_row(ev.id)
            if row is None:
                raise NotFoundError(f"record {ev.id} vanished")

            def run() -> None:
                with store.index.transaction() as conn:
                    _history.archive(store, conn, row, f"undo of {ev.event}", event="undone", undo_of=ev.eid)
                    store.index.mark_synced(conn)

            store.index.healing(run)
            store.write_memory_md()
        return ev
    if ev.event == "appended" and isinstance(ev.detail.get("kept"), int):
        kept = rec.content[: ev.detail["kept"]]
        for body in (kept, kept + "\n", kept + "\n\n"):
            if content_hash(body) == ev.before:
                _write_version(store, rec, body, "undone", None, **tag)
                return ev
        raise InvalidInputError(f"cannot rebuild {ev.id} as it was before that append; use `restore --version`")
    for old in _supersede.versions(store, rec):
        if old.content_hash == ev.before:
            _write_version(store, rec, old.content, "undone", old, **tag)
            return ev
    raise InvalidInputError(f"the version of {ev.id} before that {ev.event} is not kept; see `history`")


def _undo_supersede(store: StoreParts, ev: Event, rec: MemoryRecord) -> None:
    """Undo a supersession: the new record goes to the archive, the one it superseded is current again."""
    old_id = str(ev.detail["supersedes"])
    row, old_row = store.index.get_row(ev.id), store.index.get_row(old_id)
    if row is None or old_row is None or old_row["superseded_by"] != ev.id:
        raise InvalidInputError(f"record {old_id} is no longer the one {ev.id} superseded; see `history`")
    old = store.index.load_file(old_row["file"])[0]
    valid_to = ev.detail.get("valid_to")

    def run() -> None:
        with store.index.transaction() as conn:
            _history.archive(store, conn, row, "undo of superseded", event="undone", undo_of=ev.eid)
            write(
                store,
                conn,
                old.replace(superseded_by=None, valid_to=valid_to if isinstance(valid_to, str) else None),
                durable=store.durable,
            )
            store.index.mark_synced(conn)

    store.index.healing(run)
    store.write_memory_md()


# -- search traces ---------------------------------------------------------------------------
def trace_stage(store: StoreParts, hits: Sequence[Any]) -> dict[str, Any]:
    """The ``provenance`` stage a search trace ends with: who created and last changed each hit, in rank order."""
    top: list[dict[str, Any]] = []
    for hit in hits:
        row = store.index.get_row(hit.id)
        try:
            prov = json.loads(row["metadata"]).get(PROVENANCE) if row is not None else None
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            prov = None
        who = (
            {k: {f: v for f, v in e.items() if f != "at"} for k, e in prov.items() if isinstance(e, dict)} if isinstance(prov, dict) else {}
        )  # times are the record's own (get shows them)
        top.append({"id": hit.id, **who})
    return {"stage": "provenance", "top": top}
