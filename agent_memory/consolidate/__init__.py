"""Offline consolidation ("dream"): merge near-duplicates, sweep expired and orphaned records, decay, lint.

A deterministic pass over a files store that **never destroys**:

- every change is an *archive* through the store's archive path (``archive/<file>`` keeps the whole record with an
  annotation ``consolidation: <reason>``; restorable), made under the root lock, in one index transaction;
- a run changes at most ``max_share`` of the store's current records (default 10%; superseded versions do not
  count), and at least one when ``max_share`` > 0 (a small store can change too); a plan that wants more applies
  the first ones in rule order (ttl, scope_path, merge, decay), marks the rest ``not_applied`` and reports
  ``stopped`` with the reason — the next run continues;
- ``dry_run=True`` returns the plan and changes nothing; the :class:`ConsolidationReport` lists every change with
  its rule and reason, and lint findings (oversized, unreadable, secret-bearing, contradictory) that are only
  reported.

Rules: **ttl** (expired), **scope_path** (``metadata.scope_path`` names a path that no longer exists; relative paths
are resolved against ``workspace``, default the root's parent), **merge** (near-duplicates in one partition, see
:mod:`.similar`; the most complete record stays; superseded versions are history and never take part, so the
current statement always survives), **decay** (importance set below ``decay_importance``, unchanged for
``decay_days``, never recalled — needs the recall log of :mod:`.recalls`). The PostgreSQL backend does not support
consolidation yet (:class:`ConsolidationUnsupported`).

Every run, dry or applied, is a line of the root's run history, with the drift it found (facts whose newest statement
disagrees with what recall keeps returning); see :mod:`.governance` (``consolidate --history``, ``--digest``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import math
from typing import TYPE_CHECKING, Any

import agent_memory.backends.files.history as _history
from agent_memory.backends.base import capability, innermost
from agent_memory.backends.files.backend import FilesBackend
from agent_memory.backends.files.index import row_to_record, visibility_sql, visible_params
from agent_memory.consolidate.plan import plan_changes
from agent_memory.consolidate.recalls import RecallLog
from agent_memory.consolidate.report import RULES, Change, ConsolidateOptions, ConsolidationReport, Finding
from agent_memory.consolidate.similar import MERGE_THRESHOLD
from agent_memory.errors import UnsupportedError
from agent_memory.model.drafts import archive_note
from agent_memory.model.records import MemoryRecord
from agent_memory.model.scopes import sqlite_params

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.base import Caller
    from agent_memory.backends.files.store import MemoryStore

__all__ = [
    "consolidate",
    "consolidate_backend",
    "archive_record",
    "ConsolidationReport",
    "ConsolidateOptions",
    "Change",
    "Finding",
    "RecallLog",
    "fire_archived",
    "ConsolidationUnsupported",
    "MERGE_THRESHOLD",
    "RULES",
    "store_of",
    "share_limit",
]

REASON_PREFIX = "consolidation: "


class ConsolidationUnsupported(UnsupportedError):
    """The backend cannot consolidate (yet): the PostgreSQL backend, or a backend without a files store. Kept for one
    release under this name: catch :class:`~agent_memory.errors.UnsupportedError`."""


def _snapshot(store: MemoryStore, caller: Caller | None) -> list[MemoryRecord]:
    store.open()
    where: str = "1=1"
    params: dict[str, Any] = {}
    if caller is not None:
        # what the caller sees, expired records included (the ttl rule archives them)
        where = visibility_sql("r", include_expired=True)
        # a pass changes what it finds: the caller's own namespace only (an agent never archives its parent's records)
        params = sqlite_params(caller.session_id, caller.user_id, caller.own_view())
    sql = f"SELECT r.*, f.body AS body FROM records r JOIN fts f ON f.rowid = r.rowid WHERE {where} ORDER BY r.id"
    rows = store.index.guarded(lambda c: c.execute(sql, params).fetchall())
    return [row_to_record(r, store.records_dir, r["body"] or "") for r in rows]


def _options(options: ConsolidateOptions | None, max_share: float | None, kw: dict[str, Any]) -> ConsolidateOptions:
    opts = options or ConsolidateOptions()
    changes = dict(kw)
    if max_share is not None:
        changes["max_share"] = max_share
    if "rules" in changes:
        changes["rules"] = tuple(changes["rules"])
    return dataclasses.replace(opts, **changes) if changes else opts


def consolidate(
    store: MemoryStore,
    *,
    dry_run: bool = False,
    max_share: float | None = None,
    options: ConsolidateOptions | None = None,
    caller: Caller | None = None,
    now: dt.datetime | None = None,
    **option_values: Any,
) -> ConsolidationReport:
    """Plan and (unless ``dry_run``) apply one consolidation pass over ``store``; see the module docstring.

    ``caller`` limits the pass to what that caller sees (default: every partition). Keyword options are
    :class:`ConsolidateOptions` fields (``merge_threshold``, ``decay_days``, ``rules``, ``workspace``, ...)."""
    opts = _options(options, max_share, option_values)
    when = now or dt.datetime.now(dt.UTC)
    records = _snapshot(store, caller)
    log = RecallLog(store.root)
    problems = store.index.stored_problems() if caller is None else {}
    changes, findings, notes = plan_changes(
        records, opts, now=when, root=store.root, recalled=log.ids() if log.exists else None, problems=problems
    )
    total = sum(1 for r in records if not r.superseded_by)  # what readers see; history does not widen the limit
    limit = share_limit(opts.max_share, total)
    report = ConsolidationReport(total, limit, dry_run, changes, findings, notes=notes)
    if len(changes) > limit:
        report.stopped = True
        report.stop_reason = (
            f"the plan changes {len(changes)} of {total} records, more than max_share "
            f"{opts.max_share:g} allows ({limit}); the first {limit} in rule order "
            f"{'would be' if dry_run else 'were'} applied, the rest were not"
        )
    if not dry_run:
        _apply(store, report, caller)
    elif report.stopped:
        for change in changes[limit:]:
            change.status = "not_applied"
    from agent_memory.consolidate.governance import drift, record_run

    report.drift = drift(records, findings, log)
    report.run_id = record_run(store.root, report, records, caller, durable=store.durable)  # dry runs too: the history
    return report


def share_limit(max_share: float, total: int) -> int:
    """How many changes one run may make: ``max_share`` of ``total``, rounded down, but at least one when both are
    above zero (else a store under 1/max_share records could never change); ``max_share=0`` changes nothing."""
    if max_share <= 0 or total <= 0:
        return 0
    return max(1, math.floor(max_share * total + 1e-9))


def _apply(store: MemoryStore, report: ConsolidationReport, caller: Caller | None = None) -> None:
    # each archive is the run's caller's change (its `undo` brings it back); an operator's pass (no caller) acts in
    # each owner's partition, so the owner's. The actor is whoever runs the pass (the CLI's "cli"), else "consolidation".
    who = (caller.session_id, caller.user_id) if caller is not None else None
    applied = 0
    with store.lock.hold(), store.events.batch():
        store.index.refresh(force=True)
        with store.index.transaction() as conn:
            archived: set[str] = set()
            for change in report.changes:
                if applied >= report.limit:
                    change.status = "not_applied"
                    continue
                row = conn.execute("SELECT * FROM records WHERE id = ?", (change.record_id,)).fetchone()
                if row is None or row["content_hash"] != change.content_hash:
                    change.status, change.note = "skipped", "changed or removed since it was planned"
                    continue
                if change.rule == "merge" and any(
                    r in archived or conn.execute("SELECT 1 FROM records WHERE id = ? AND superseded_by IS NULL", (r,)).fetchone() is None
                    for r in change.related
                ):
                    change.status, change.note = "skipped", "the record it duplicates is gone or superseded"
                    continue
                if change.rule == "merge" and row["superseded_by"]:
                    change.status, change.note = "skipped", "superseded since it was planned (history is kept)"
                    continue
                _history.archive(store, conn, row, REASON_PREFIX + archive_note(change.reason), caller=who, source="consolidation")
                archived.add(change.record_id)
                change.status = "applied"
                applied += 1
            store.index.mark_synced(conn)
        store.write_memory_md()


def archive_record(store: MemoryStore, record_id: str, reason: str, caller: Caller) -> bool:
    """Archive one record ``caller`` may see (the consolidate worker's ``memory_archive``); False if not visible.

    ``reason`` (a model's text) passes the write gate (:func:`agent_memory.model.drafts.archive_note`: one line,
    redacted, trimmed) before it reaches the archive file's annotation and the event."""
    from agent_memory.model.records import validate_id

    validate_id(record_id)
    store.open()
    with store.lock.hold():
        store.index.refresh()
        with store.index.transaction() as conn:
            row = conn.execute(
                f"SELECT r.* FROM records r WHERE r.id = :id AND {visibility_sql('r')}",
                {"id": record_id, **visible_params(caller.session_id, caller.user_id)},
            ).fetchone()
            if row is None:
                return False
            _history.archive(store, conn, row, REASON_PREFIX + archive_note(reason))
            store.index.mark_synced(conn)
        store.write_memory_md()
    return True


def store_of(backend: Any) -> MemoryStore:
    """The files store behind ``backend`` (through an extension wrapper), else :class:`ConsolidationUnsupported`."""
    files = capability(backend, FilesBackend)
    if files is None:
        raise ConsolidationUnsupported.of(
            "consolidation",
            innermost(backend),
            "files backend only; PostgreSQL: export --full, consolidate a files copy, export --full, import",
        )
    return files.store


async def consolidate_backend(
    backend: Any, *, dry_run: bool = False, max_share: float | None = None, **options: Any
) -> ConsolidationReport:
    """:func:`consolidate` for a :class:`~agent_memory.backends.base.MemoryBackend` (off the event loop); extension hooks
    see each applied archive as an ``on_memory_written`` event."""
    store = store_of(backend)
    report = await asyncio.to_thread(consolidate, store, dry_run=dry_run, max_share=max_share, **options)
    await fire_archived(backend, report)
    return report


async def fire_archived(backend: Any, report: ConsolidationReport) -> None:
    """Tell ``on_memory_written`` hooks of ``backend`` (an extension wrapper) about each applied archive."""
    from agent_memory.backends.extended import ExtendedBackend, Written

    if not isinstance(backend, ExtendedBackend) or not report.applied:
        return
    hooks = backend.hooks

    for change in report.applied:
        await hooks.fire("on_memory_written", Written("archive", change.record_id, "archived", source="consolidation"))
