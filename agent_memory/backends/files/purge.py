"""Real deletion: every byte of a record's content goes, wherever the files store keeps it.

:func:`purge` removes a record (or every record of one owner) from ``records/``,
``history/`` (all kept versions) and ``archive/``; its rows and stemmed terms from the FTS index (segments
rewritten, ``VACUUM`` for free pages, WAL checkpointed and truncated); its vectors from ``vectors.db``
(same cleanup); and turns its event lines into tombstones (record id, session and user replaced by hashes,
details dropped; the content hashes stay). ``MEMORY.md`` is regenerated. A user or session purge also removes
their session logs and episodes (and drops the episode index).

A purge without a record id takes exactly one owner's partition (:func:`agent_memory.model.scopes.owns`), never
another owner's: ``user_id`` alone is everything of that user (records of every scope they own, all their
sessions' logs, their episodes); ``user_id`` and ``session_id`` are that user's session only (its records, the log
``sessions/<user>/<session>``, its episodes); ``session_id`` alone is the session *without* a user. Records that
stay but name the owner in ``metadata.provenance`` (e.g. a shared project record she last replaced) keep their
text, which is the record owner's, and lose her identity: those entries' session and user become hashes, as in
the event log; her events on such records keep the record's id with her session and user hashed.

Which stores a root holds is declared once, in :data:`agent_memory.backends.files.layout.ROOT_LAYOUT`: :func:`purge`
runs one step (:data:`STEPS`) per entry that holds owned data, in the table's order, and its report names
every store it visited with how many items it removed (``PurgeReport.stores``). No store joins by being
imported. Stores an application keeps itself may still join a user/session/namespace purge explicitly with
:func:`register_purger` (``fn(root, user_id, session_id) -> int``, or with a ``namespace`` keyword to be told a
namespace purge's namespace; reported under ``others``).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_memory.backends.files.history import archived_file, chain, read_archived
from agent_memory.backends.files.layout import PurgeJob, owned
from agent_memory.backends.files.runlog import RunLog
from agent_memory.backends.files.supersede import predecessors_anywhere
from agent_memory.errors import InvalidInputError
from agent_memory.formats.atomic import atomic_write, fsync_dir
from agent_memory.model import scopes
from agent_memory.model.events import Event, tombstone_id, tombstone_provenance, visible
from agent_memory.model.records import MemoryRecord, RecordParseError, parse_record, validate_id
from agent_memory.model.reports import PurgeReport
from agent_memory.model.wording import record_not_found

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.files.meaning import StoreWithMeaning
    from agent_memory.backends.files.parts import StoreParts

__all__ = ["PurgeReport", "Purger", "STEPS", "knows_namespaces", "purge", "register_purger", "unregister_purger"]

Purger = Callable[[Path, "str | None", "str | None"], int]
PURGERS: list[Purger] = []


def register_purger(fn: Purger) -> Purger:
    """Have every owner purge call ``fn`` too (usable as a decorator): for stores an application keeps itself. The
    library's own stores are in :mod:`agent_memory.backends.files.layout`.

    The rule: a purger that takes a ``namespace`` keyword (:func:`knows_namespaces`) is called on every purge of an
    owner or a namespace as ``fn(root, user_id, session_id, namespace=...)`` (``namespace`` None: every namespace,
    as before; a path: only that namespace and its descendants, of that owner when one is given, or of everyone).
    An older purger, ``fn(root, user_id, session_id)``, is called as before on a user/session purge without a
    namespace, and is **not** called by a namespace purge (it cannot tell the namespace's items from the others':
    called with the user it would take theirs in every namespace); that purge's report lists it in ``skipped``.
    """
    if not callable(fn):
        raise InvalidInputError(f"a purger must be callable, not {type(fn).__name__}")
    if fn not in PURGERS:
        PURGERS.append(fn)
    return fn


def knows_namespaces(fn: Callable[..., Any]) -> bool:
    """Whether a registered purger takes the ``namespace`` keyword (a parameter of that name, or ``**kwargs``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: an older purger
        return False
    return any((p.name == "namespace" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)) or p.kind is p.VAR_KEYWORD for p in params)


def unregister_purger(fn: Purger) -> None:
    with contextlib.suppress(ValueError):
        PURGERS.remove(fn)


def _md_files(folder: Path) -> list[Path]:
    if not folder.is_dir() or folder.is_symlink():
        return []
    return [p for p in folder.iterdir() if p.suffix == ".md" and p.is_file() and not p.is_symlink()]


def under(namespace: str | None, root: str | None) -> bool:
    """Whether ``namespace`` is ``root`` or one of its descendants (``root`` None: no namespace purge, any)."""
    ns = namespace or ""
    return root is None or ns == root or ns.startswith(root + "/")


def _under_sql(column: str) -> str:
    """:func:`under` over an SQLite column; binds ``:pns`` and ``:punder`` (:func:`_under_params`)."""
    return f"(coalesce({column}, '') = :pns OR substr(coalesce({column}, ''), 1, length(:punder)) = :punder)"


def _under_params(namespace: str) -> dict[str, Any]:
    return {"pns": namespace, "punder": namespace + "/"}


def _owned(path: Path, session_id: str | None, user_id: str | None, namespace: str | None = None) -> tuple[str, str] | None:
    """``(record id, content hash)`` of a kept file of the purged owner (:func:`scopes.owns`) and/or namespace,
    else None."""
    try:
        rec = parse_record(path.read_text(encoding="utf-8"), path.name.split(".", 1)[0], path=str(path))
    except (OSError, UnicodeDecodeError, RecordParseError):
        return None
    if not under(rec.namespace, namespace):
        return None
    if (namespace is not None and not (session_id or user_id)) or scopes.owns(
        rec.session_id, rec.user_id, session_id=session_id, user_id=user_id
    ):
        return rec.id, rec.content_hash
    return None


def _targets(
    store: StoreParts, record_id: str | None, session_id: str | None, user_id: str | None, namespace: str | None = None
) -> tuple[set[str], set[Path], set[str]]:
    """The record ids, the files and the content hashes to remove."""
    ids: set[str] = set()
    files: set[Path] = set()
    hashes: set[str] = set()
    if record_id is not None:
        row = store.visible_row(record_id, session_id, user_id)
        rec = store.index.load_file(row["file"])[0] if row is not None else read_archived(store, record_id)
        if rec is None or (row is None and not _caller_sees(rec, session_id, user_id)):
            raise record_not_found(record_id, what="(live or archived) ")
        ids.add(rec.id)
        hashes.add(rec.content_hash)
        if row is not None:
            files.add(store.records_dir / row["file"])
        for path, old in chain(store, rec):
            files.add(path)
            hashes.add(old.content_hash)
        for old, path in predecessors_anywhere(store, rec):  # the versions it superseded (live or archived)
            ids.add(old.id)
            hashes.add(old.content_hash)
            files.add(path)
    else:
        where = [scopes.owner_sql("r.session_id", "r.user_id", session_id=session_id, user_id=user_id)] if session_id or user_id else []
        params = scopes.owner_params(session_id, user_id)
        if namespace is not None:
            where.append(_under_sql("r.namespace"))
            params.update(_under_params(namespace))
        rows = store.index.rows_where(" AND ".join(where), params, limit=None)
        for row in rows:
            ids.add(row["id"])
            hashes.add(row["content_hash"])
            files.add(store.records_dir / row["file"])
        for path in _md_files(store.archive_dir) + _md_files(store.history_dir):
            owned = _owned(path, session_id, user_id, namespace)
            if owned is not None:
                ids.add(owned[0])
                hashes.add(owned[1])
                files.add(path)
                if path.parent == store.archive_dir:  # its vectors are keyed by the text without the archive note
                    kept = read_archived(store, owned[0])
                    if kept is not None:
                        hashes.add(kept.content_hash)
    for rid in ids:
        archived = archived_file(store, rid)
        if archived is not None:
            files.add(archived)
        files.update(p for p in _md_files(store.history_dir) if p.name.startswith(f"{rid}."))
    return ids, files, hashes


def _caller_sees(rec: Any, session_id: str | None, user_id: str | None) -> bool:
    ev = Event(
        "archived",
        rec.id,
        scope=rec.scope.value,
        owner_session=rec.session_id,
        owner_user=rec.user_id,
        owner_namespace=rec.namespace or None,
    )
    return visible(ev, session_id, user_id)


def _tombstone(ids: set[str], session_id: str | None, user_id: str | None, namespace: str | None = None) -> Callable[[Event], Event | None]:
    """The rewrite of one event line: an event about a purged record, or about a record of the purged owner,
    becomes a tombstone (record id, actor and owner hashed, details dropped); an event the purged owner made on a
    record that stays (e.g. her replace of a shared record) keeps the record's id and owner, with her session and
    user hashed and its details dropped. ``session_id``/``user_id`` name one owner (:func:`scopes.owns`);
    ``namespace``: only events about records in that namespace (and its descendants) count as the owner's, and a
    namespace alone takes every such event (a namespace is no person: no actor is hashed for it alone)."""
    person = bool(session_id or user_id)

    def owner(sid: str | None, uid: str | None) -> bool:
        return person and scopes.owns(sid, uid, session_id=session_id, user_id=user_id)

    def change(ev: Event) -> Event | None:
        inside = namespace is None or under(ev.owner_namespace, namespace)
        record_gone = ev.id in ids or (inside and (owner(ev.owner_session, ev.owner_user) or (namespace is not None and not person)))
        actor_gone = inside and owner(ev.session_id, ev.user_id)
        if not (record_gone or actor_gone):
            if ev.detail and any(rid in json.dumps(ev.detail, ensure_ascii=False) for rid in ids):
                ev.detail = {"purged": True}  # e.g. "duplicate of <purged id>"
                return ev
            return None
        names = ("id", "session_id", "user_id", "owner_session", "owner_user") if record_gone else ("session_id", "user_id")
        values = {k: getattr(ev, k) for k in ("id", "session_id", "user_id", "owner_session", "owner_user")}
        hashed = {k: tombstone_id(v) if k in names and isinstance(v, str) and not v.startswith("purged:") else v for k, v in values.items()}
        if hashed == values and ev.detail in ({}, {"purged": True}):
            return None  # a tombstone already
        return Event(
            ev.event,
            hashed["id"] or ev.id,
            ts=ev.ts,
            eid=ev.eid,
            actor=ev.actor,
            session_id=hashed["session_id"],
            user_id=hashed["user_id"],
            before=ev.before,
            after=ev.after,
            scope=ev.scope,
            owner_session=hashed["owner_session"],
            owner_user=hashed["owner_user"],
            detail={"purged": True},
            owner_namespace=ev.owner_namespace,
        )

    return change


def _scrub_provenance(store: StoreParts, job: PurgeJob) -> int:
    """Rewrite the kept files (live, versions, archive, history) that stay but whose ``metadata.provenance`` names
    the purged owner: those entries' session and user become hashes (:func:`tombstone_provenance`). The record's
    text is the record owner's and stays. Index rows of live files are updated in the same transaction (the index
    step then VACUUMs the old pages away). Returns how many files were rewritten."""
    if job.record_id is not None or not (job.session_id or job.user_id):
        return 0  # one record, or a namespace alone (no person to scrub)
    sid, uid = job.session_id, job.user_id
    todo: list[tuple[Path, MemoryRecord, dict[str, Any]]] = []
    entries = [
        scopes.owner_sql(
            f"json_extract(r.metadata, '$.provenance.{e}.session_id')",
            f"json_extract(r.metadata, '$.provenance.{e}.user_id')",
            session_id=sid,
            user_id=uid,
        )
        for e in ("created", "updated")
    ]
    where, params = "(" + " OR ".join(entries) + ")", scopes.owner_params(sid, uid)
    if job.namespace is not None:  # only the records of that namespace (and its descendants) forget the owner there
        where += " AND " + _under_sql("r.namespace")
        params.update(_under_params(job.namespace))
    for row in store.index.rows_where(where, params, limit=None):
        path = store.records_dir / row["file"]
        if path not in job.files:
            todo.extend(_needs_scrub(path, sid, uid))
    for path in _md_files(store.archive_dir) + _md_files(store.history_dir):
        if path not in job.files:
            todo.extend(_needs_scrub(path, sid, uid, job.namespace))
    if not todo:
        return 0

    def run() -> None:
        with store.index.transaction() as conn:
            for path, rec, metadata in todo:
                new = rec.replace(metadata=metadata)
                text = new.render()
                st = atomic_write(path, text.encode("utf-8"), durable=store.durable)
                if path.parent == store.records_dir:
                    body_line = text.count("\n", 0, len(text) - len(new.content) - 1) + 1
                    store.index.upsert(conn, new, path.name, st.st_mtime_ns, st.st_size, body_line=body_line)
            store.index.mark_synced(conn)

    store.index.healing(run)
    return len(todo)


def _needs_scrub(
    path: Path, session_id: str | None, user_id: str | None, namespace: str | None = None
) -> list[tuple[Path, MemoryRecord, dict[str, Any]]]:
    try:
        rec = parse_record(path.read_text(encoding="utf-8"), path.name.split(".", 1)[0], path=str(path))
    except (OSError, UnicodeDecodeError, RecordParseError):
        return []
    if not under(rec.namespace, namespace):
        return []
    metadata = tombstone_provenance(rec.metadata, session_id=session_id, user_id=user_id)
    return [] if metadata is None else [(path, rec, metadata)]


def _compact(path: Path) -> None:
    """VACUUM a SQLite file and truncate its WAL (free pages and old frames hold deleted text)."""
    if not path.is_file():
        return
    conn = sqlite3.connect(path, timeout=30.0)
    try:
        conn.execute("PRAGMA secure_delete = ON")
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _drop_vectors(store: StoreWithMeaning, hashes: set[str]) -> int:
    path = store.root / "vectors.db"
    if not hashes or not path.is_file():
        return 0
    live = {r["content_hash"] for r in store.index.rows_where("1 = 1", {}, limit=None)}
    gone = sorted(hashes - live)
    if not gone:
        return 0
    meaning = store.meaning
    if meaning is not None:
        n = meaning.vectors.drop(gone)
        meaning.vectors.close()
    else:
        from agent_memory.backends.files.vectors import VectorCache

        cache = VectorCache(path)
        n = cache.drop(gone)
        cache.close()
    _compact(path)
    return n


def _unlink(job: PurgeJob, folder: Path) -> int:
    """Delete the job's files in ``folder``; returns how many went."""
    n = 0
    for path in sorted(p for p in job.files if p.parent == folder):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
            n += 1
    if n and job.store.durable and folder.is_dir():
        fsync_dir(folder)
    return n


def _step_index(job: PurgeJob) -> int:
    store = job.store

    def drop_rows() -> None:
        with store.index.transaction() as conn:
            for rid in job.ids:
                store.index.delete(conn, rid)
            store.index.mark_synced(conn)

    store.index.healing(drop_rows)
    store.index.close()
    _compact(store.index.path)
    return len(job.ids)


def _step_events(job: PurgeJob) -> int:
    store = job.store
    partition = (None, None) if job.record_id is not None else (job.session_id, job.user_id)
    changed = store.events.rewrite(_tombstone(set(job.ids), *partition, job.namespace if job.record_id is None else None))
    with store.events.batch():
        for rid in sorted(job.ids):
            store.event(
                "purged",
                {"id": tombstone_id(rid), "scope": None, "session_id": None, "user_id": None},
                caller=(None, None),
                files=len(job.files),
            )
    return int(changed)


def _step_memory_md(job: PurgeJob) -> int:
    job.store.write_memory_md()
    return 1


def _owner(job: PurgeJob) -> dict[str, Any]:
    """The one owner a user/session purge takes (:func:`scopes.owns`), as session logs' and episodes' purge take it:
    a user (all their sessions), a user's session, or (a session alone) the session without a user; with a
    namespace purge, only in that namespace and its descendants (a namespace alone: everything there)."""
    ns = {} if job.namespace is None else {"namespace": job.namespace}
    if job.user_id:
        return {"user_id": job.user_id, "session_id": job.session_id or None, **ns}
    if job.session_id:
        return {"session_id": job.session_id, "anonymous": True, **ns}
    return ns


def _step_sessions(job: PurgeJob) -> int | None:
    if job.record_id is not None:
        return None  # one record: session logs are not records
    from agent_memory.sessions.store import purge_sessions

    return purge_sessions(job.root, **_owner(job))


def _step_episode_index(job: PurgeJob) -> int | None:
    if job.record_id is not None:
        return None
    from agent_memory.episodes._store import EpisodeStore

    return int(EpisodeStore(job.root).drop_index())


def _step_episodes(job: PurgeJob) -> int | None:
    if job.record_id is not None:
        return None
    from agent_memory.episodes._store import EpisodeStore

    episodes = EpisodeStore(job.root)
    return episodes.purge(**_owner(job))


Step = Callable[[PurgeJob], "int | None"]
#: One purge step per owned entry of :data:`agent_memory.backends.files.layout.ROOT_LAYOUT` (a step returns how many items it
#: removed, or None when the purge does not concern its store, e.g. session logs for a one-record purge).
STEPS: dict[str, Step] = {
    "records": lambda job: _unlink(job, job.store.records_dir),
    "archive": lambda job: _unlink(job, job.store.archive_dir),
    "history": lambda job: _unlink(job, job.store.history_dir),
    "index": _step_index,
    "vectors": lambda job: _drop_vectors(job.store, set(job.hashes)),
    "events": _step_events,
    "recall_log": lambda job: _strip_recalled(job.store, set(job.ids)),
    "consolidation_runs": lambda job: RunLog(job.root, durable=job.store.durable).strip(
        job.ids,
        *((job.session_id, job.user_id) if job.namespace is None else (None, None)),  # a namespace purge: its records' changes
    ),
    "memory_md": _step_memory_md,
    "sessions": _step_sessions,
    "episode_index": _step_episode_index,
    "episodes": _step_episodes,
}


def purge(
    store: StoreWithMeaning,
    record_id: str | None = None,
    *,
    session_id: str | None = None,
    user_id: str | None = None,
    namespace: str | None = None,
) -> PurgeReport:
    """Delete content for good. With ``record_id``: that record, which the caller (``session_id``/``user_id``)
    must see, live or archived. Without: everything of one owner (see the module docstring: a user; a user's
    session; a session without a user) in every store of the root (records, versions, archive, index, vectors,
    events, recall log, session logs, episodes; provenance naming the owner is hashed), then every explicitly
    registered purger (called with the same ``user_id``/``session_id``: it must take that owner only).

    ``namespace`` (no record id): only what is in that namespace and its descendants (``acme/support`` takes
    ``acme/support/agent-7`` too): alone, every record, session log and episode there, whoever owns them, and the
    events about those records; with ``user_id``/``session_id``, that owner's items there. Registered purgers
    that take ``namespace`` are told it; older ones are not called and are named in ``report.skipped``
    (:func:`register_purger`). The root (``''``) is refused: that would be every namespace's data."""
    if namespace is not None:
        namespace = scopes.check_namespace(namespace)
        if not namespace:
            raise InvalidInputError("purge by namespace needs a namespace: the root ('') would be the whole memory")
        if record_id is not None:
            raise InvalidInputError("purge takes a record id or a namespace, not both")
    if record_id is not None:
        validate_id(record_id)
    elif not session_id and not user_id and namespace is None:
        raise InvalidInputError("purge needs a record id, a user, a session or a namespace")
    store.open()
    report = PurgeReport()
    with store.lock.hold():
        store.index.refresh(force=True)
        ids, files, hashes = _targets(store, record_id, session_id, user_id, namespace)
        job = PurgeJob(store.root, store, record_id, session_id, user_id, frozenset(ids), frozenset(files), frozenset(hashes), namespace)
        _scrub_provenance(store, job)  # before the index step, whose VACUUM then drops the old pages
        for entry in owned():  # every store the root holds, in the registry's order
            n = STEPS[entry.name](job)
            if n is not None:
                report.stores[entry.name] = n
        report.files = sum(report.stores.get(name, 0) for name in ("records", "archive", "history"))
        report.vectors = report.stores.get("vectors", 0)
        report.events = report.stores.get("events", 0)
        report.records = sorted(ids)
    if record_id is None:
        for fn in list(PURGERS):  # stores an application registered itself (the rule: register_purger)
            name = getattr(fn, "__name__", repr(fn))
            if knows_namespaces(fn):
                report.others[name] = int(fn(store.root, user_id, session_id, namespace=namespace))  # type: ignore[call-arg]
            elif namespace is None:
                report.others[name] = int(fn(store.root, user_id, session_id))
            else:
                report.skipped.append(name)
    return report


def _strip_recalled(store: StoreParts, ids: set[str]) -> int:
    """Drop purged ids (they hold a slug of the title) from ``recalled.log`` (consolidation's decay input)."""
    path = store.root / "recalled.log"
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    except FileNotFoundError:
        return 0
    kept = [line for line in lines if line.split("\t", 1)[0].strip() not in ids]
    if len(kept) != len(lines):
        atomic_write(path, "".join(kept).encode("utf-8"), durable=store.durable)
    return len(lines) - len(kept)
