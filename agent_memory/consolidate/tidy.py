"""The run's-end tidy pass (the seeds' ``extract()``): a light, bounded clean-up after an agent run.

When a run ends, :class:`~agent_memory.integrations.hooks.MemoryHooks` and
:class:`~agent_memory.integrations.pydantic_ai.MemoryCapability` schedule :func:`tidy_backend` in the background
(``provider.flush()`` / ``aclose()`` await it); ``provider.tidy()`` and ``agent-memory tidy`` run the same pass by hand.
It archives — never deletes — three kinds of records:

- **ttl**: expired (``expires`` has passed; readers no longer see them);
- **scope_path**: ``metadata.scope_path`` names a file or directory that no longer exists (relative paths resolve
  against ``workspace``, default the root's parent, as in ``consolidate``);
- **duplicate**: exact duplicates in one partition (same scope, session and user; same kind family) whose content
  is the same after Unicode NFC and whitespace collapsing: the newest stays, older copies are archived. A record
  with a ``memory_key`` is a slot someone addresses and always stays; "newer" is the later ``created`` (a restore
  does not make an old copy new); superseded versions are history, never
  duplicates; memory-tool files may repeat each other and are left alone.

Bounds: one pass changes at most ``max_share`` of the records it looked at (default 1%), with a floor of one change
so a small store is not frozen; the rest waits for the next run's end (``stopped`` says so). Each change is an
``archived`` event (reason ``tidy: …``, rule in its detail) attributed to the caller, so ``undo`` and ``restore`` bring
it back, on the files and the PostgreSQL backend alike, and a record once brought back (a ``restored`` or ``undone``
event) is left alone by later passes: the pass never undoes an undo. The files backend's ``MEMORY.md`` index is
rewritten at the end of every pass.

Whose records: with a caller (a run's ``session_id``/``user_id``) the pass sees only what that caller sees. Its own
partitions (its user's, its session's) get every rule. Shared records (``project``/``global`` scope) get only the
ttl and duplicate rules — an expired shared record is invisible to every reader already, and a duplicate is archived
only against a copy in the same shared partition — while scope_path, which depends on the machine the run is on,
is left to an explicit pass. Another user's records are invisible to the caller, so they are never planned, and no
rule compares two partitions. Without a caller (an operator's ``agent-memory tidy``) every partition is tidied,
still partition by partition.

Namespaces (``docs/namespaces.md``): a caller's pass changes only its own namespace (it reads its ancestors' records
and never archives them). The pass without a caller covers every namespace; a namespace is part of the partition
(:func:`~agent_memory.consolidate.plan.partition_of`), so a duplicate is archived only against a copy in its own
namespace, and each archive's event carries the record's namespace (its namespace reads, restores and undoes it).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_memory.backends.base import Caller, capability, innermost
from agent_memory.backends.files.backend import FilesBackend
from agent_memory.consolidate.plan import _scope_path_gone, partition_of
from agent_memory.consolidate.report import Change
from agent_memory.errors import InvalidInputError, UnsupportedError
from agent_memory.model import scopes
from agent_memory.model.drafts import _parse_when, archive_note
from agent_memory.model.events import acting
from agent_memory.model.records import MemoryRecord
from agent_memory.model.scopes import SHARED_SCOPES
from agent_memory.model.supersession import UNDEDUPED_KINDS

__all__ = ["TIDY_RULES", "TIDY_SHARE", "TidyReport", "plan_tidy", "tidy_backend", "tidy_limit"]

TIDY_RULES: tuple[str, ...] = ("ttl", "scope_path", "duplicate")  # the order changes are applied in
TIDY_SHARE = 0.01
REASON_PREFIX = "tidy: "
ACTOR = "tidy"
BROUGHT_BACK = ("restored", "undone")  # events of a record brought back from the archive: the pass leaves it alone


@dataclass
class TidyReport:
    """What one tidy pass planned and did: each change with its rule, reason and status."""

    total: int
    limit: int
    dry_run: bool
    changes: list[Change] = field(default_factory=list)
    stopped: bool = False
    stop_reason: str | None = None
    index_refreshed: bool = False

    @property
    def applied(self) -> list[Change]:
        return [c for c in self.changes if c.status == "applied"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "limit": self.limit,
            "dry_run": self.dry_run,
            "applied": len(self.applied),
            "stopped": self.stopped,
            "stop_reason": self.stop_reason,
            "index_refreshed": self.index_refreshed,
            "changes": [c.to_dict() for c in self.changes],
        }

    def text(self) -> str:
        head = (
            f"{'plan' if self.dry_run else 'tidied'}: {len(self.changes)} change(s) planned, {len(self.applied)} applied"
            f" (limit {self.limit} of {self.total} records)"
        )
        lines = [head] + ([f"stopped: {self.stop_reason}"] if self.stopped else [])
        lines += [
            f"  {c.status:<11} archive {c.record_id}  [{c.rule}] {c.reason}" + (f" ({c.note})" if c.note else "") for c in self.changes
        ]
        return "\n".join(lines)


def tidy_limit(max_share: float, total: int) -> int:
    """At most ``max_share`` of ``total`` changes, rounded down, and at least one (a small store is not frozen)."""
    if isinstance(max_share, bool) or not isinstance(max_share, (int, float)) or not 0 < max_share <= 1:
        raise InvalidInputError("max_share must be a number in (0, 1]")
    return max(1, int(max_share * total + 1e-9)) if total > 0 else 0


def normalized(text: str) -> str:
    """What "the same content" means here: Unicode NFC, whitespace runs collapsed, ends trimmed (case kept)."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def _change(rule: str, rec: MemoryRecord, reason: str, related: Sequence[str] = ()) -> Change:
    return Change(
        rule,
        rec.id,
        reason,
        related=list(related),
        content_hash=rec.content_hash,
        scope=rec.scope.value,
        owner=(rec.session_id, rec.user_id, rec.namespace or None),
    )


def _own(rec: MemoryRecord, caller: Caller | None) -> bool:
    """Is ``rec`` in one of the caller's own partitions (every rule applies), rather than a shared one?"""
    return caller is None or rec.scope.value not in SHARED_SCOPES


def plan_tidy(
    records: Sequence[MemoryRecord], *, now: dt.datetime, base: Path, caller: Caller | None = None, rules: Sequence[str] = TIDY_RULES
) -> list[Change]:
    """The pass's changes over ``records`` (what the caller sees, expired ones included), in rule order. Pure."""
    unknown = set(rules) - set(TIDY_RULES)
    if unknown:
        raise InvalidInputError(f"unknown tidy rule(s): {', '.join(sorted(unknown))} (use {', '.join(TIDY_RULES)})")
    changes: list[Change] = []
    taken: set[str] = set()
    if "ttl" in rules:
        for rec in records:
            when = _parse_when(rec.expires) if rec.expires else None
            if when is not None and when <= now:
                changes.append(_change("ttl", rec, f"expired (expires {rec.expires})"))
                taken.add(rec.id)
    if "scope_path" in rules:
        for rec in records:
            if rec.id in taken or not _own(rec, caller):
                continue
            gone = _scope_path_gone(rec, base)
            if gone:
                changes.append(_change("scope_path", rec, f"scope_path {rec.metadata.get('scope_path')!r} no longer exists"))
                taken.add(rec.id)
    if "duplicate" in rules:
        groups: dict[tuple[Any, ...], list[MemoryRecord]] = {}
        for rec in records:
            if rec.id in taken or rec.superseded_by or rec.kind in UNDEDUPED_KINDS:
                continue
            groups.setdefault((*partition_of(rec), normalized(rec.content)), []).append(rec)
        for group in groups.values():
            if len(group) < 2:
                continue
            group.sort(key=lambda r: (r.memory_key is not None, r.created, r.updated, r.id), reverse=True)  # written last
            keeper = group[0]
            for rec in group[1:]:
                if rec.memory_key is None:
                    changes.append(_change("duplicate", rec, f"exact duplicate of {keeper.id} (the newer copy is kept)", [keeper.id]))
    order = {r: i for i, r in enumerate(TIDY_RULES)}
    changes.sort(key=lambda c: order[c.rule])
    return changes


def _base(workspace: str | Path | None, root: Path | None) -> Path:
    if workspace is not None:
        return Path(workspace)
    return root.parent if root is not None else Path.cwd()


def _bound(report: TidyReport) -> list[Change]:
    """The changes this pass may apply; the rest are marked ``not_applied`` (the next pass continues)."""
    if len(report.changes) > report.limit:
        report.stopped = True
        report.stop_reason = (
            f"the pass found {len(report.changes)} changes among {report.total} records, more than its share allows"
            f" ({report.limit}); the rest wait for the next pass"
        )
        for change in report.changes[report.limit :]:
            change.status = "not_applied"
    return report.changes[: report.limit]


# -- files backend --------------------------------------------------------------------------------------------------
def _tidy_files(
    store: Any, caller: Caller | None, max_share: float, dry_run: bool, now: dt.datetime, workspace: Any, rules: Sequence[str]
) -> TidyReport:
    import agent_memory.backends.files.history as _history
    from agent_memory.consolidate import _snapshot

    records = _snapshot(store, caller)
    total = sum(1 for r in records if not r.superseded_by)
    changes = plan_tidy(records, now=now, base=_base(workspace, store.root), caller=caller, rules=rules)
    if changes:  # a record someone brought back from the archive stays: the pass never undoes an undo
        planned = {c.record_id for c in changes}
        back = {e.id for e in store.events.read()[0] if e.event in BROUGHT_BACK and e.id in planned}
        changes = [c for c in changes if c.record_id not in back]
    report = TidyReport(total, tidy_limit(max_share, total), dry_run, changes)
    todo = _bound(report)
    if dry_run:
        return report
    who = (caller.session_id, caller.user_id) if caller is not None else None
    with store.lock.hold(), store.events.batch():
        store.index.refresh()
        with store.index.transaction() as conn:
            for change in todo:
                row = conn.execute("SELECT * FROM records WHERE id = ?", (change.record_id,)).fetchone()
                if row is None or row["content_hash"] != change.content_hash:
                    change.status, change.note = "skipped", "changed or removed since it was planned"
                    continue
                reason = REASON_PREFIX + archive_note(change.reason)
                _history.archive(store, conn, row, reason, caller=who, rule=change.rule)
                change.status = "applied"
            store.index.mark_synced(conn)
        store.write_memory_md()
        report.index_refreshed = True
    return report


# -- PostgreSQL backend ---------------------------------------------------------------------------------------------
async def _tidy_postgres(
    pg: Any, caller: Caller | None, max_share: float, dry_run: bool, now: dt.datetime, workspace: Any, rules: Sequence[str]
) -> TidyReport:
    from agent_memory.backends.postgres.events import record_event
    from agent_memory.backends.postgres.rows import SELECT, iso, row_to_record
    from agent_memory.model import scopes

    params: dict[str, Any] = {}
    where = "TRUE"
    if caller is not None:  # what the caller sees, expired records included (the ttl rule archives them)
        params = scopes.postgres_params({"sid": caller.session_id, "uid": caller.user_id})
        where = scopes.postgres_sql("r")
    async with pg.pool.connection() as conn:
        rows = await (await conn.execute(f"SELECT {SELECT} FROM {pg.table} r WHERE {where} ORDER BY r.id", params)).fetchall()
    by_id = {r["id"]: r for r in rows}
    # expiry as the database judges it (the ``expires`` instant readers filter on, not the text it was given as)
    records = [row_to_record(r, pg.path_of(r["id"])).replace(expires=iso(r["expires"]) if r["expires"] else None) for r in rows]
    total = sum(1 for r in records if not r.superseded_by)
    changes = plan_tidy(records, now=now, base=_base(workspace, None), caller=caller, rules=rules)
    if changes:  # a record someone brought back from the archive stays: the pass never undoes an undo
        async with pg.pool.connection() as conn:
            cur = await conn.execute(
                f'SELECT DISTINCT id FROM "{pg.schema}".events WHERE id = ANY(%s) AND event = ANY(%s)',
                ([c.record_id for c in changes], list(BROUGHT_BACK)),
            )
            back = {r["id"] for r in await cur.fetchall()}
        changes = [c for c in changes if c.record_id not in back]
    report = TidyReport(total, tidy_limit(max_share, total), dry_run, changes)
    todo = _bound(report)
    if dry_run:
        return report
    for change in todo:
        row = by_id[change.record_id]
        who = caller if caller is not None else Caller(row["session_id"], row["user_id"])
        reason = REASON_PREFIX + archive_note(change.reason)
        async with pg.pool.connection() as conn, conn.transaction():
            gone = await pg.writer._archive_where(
                conn,
                "tenant = %(t)s AND id = %(id)s AND content_hash = %(h)s",
                {"t": row["tenant"], "id": row["id"], "h": change.content_hash},
                reason,
            )
            if gone:
                await record_event(
                    pg, conn, "archived", row, who, before=change.content_hash, source=ACTOR, reason=reason, rule=change.rule
                )
        if gone:
            change.status = "applied"
        else:
            change.status, change.note = "skipped", "changed or removed since it was planned"
    return report


async def tidy_backend(
    backend: Any,
    *,
    caller: Caller | None = None,
    max_share: float = TIDY_SHARE,
    dry_run: bool = False,
    now: dt.datetime | None = None,
    workspace: str | Path | None = None,
    rules: Sequence[str] = TIDY_RULES,
) -> TidyReport:
    """One tidy pass over ``backend`` (files or PostgreSQL; through extension wrappers); see the module docstring.

    ``caller`` limits it to what that caller sees (``None``: every partition). Sync I/O runs off the event loop.
    Extension hooks hear each archive as an ``on_memory_written`` event."""
    tidy_limit(max_share, 1)  # a bad share is refused before anything is read
    when = now or dt.datetime.now(dt.UTC)
    rules = tuple(rules)
    with acting(ACTOR):
        # a pass changes what it finds: a caller's sees its own namespace only; the operator's (no caller) reads every
        # namespace unfiltered (_snapshot / the PostgreSQL query take no view) and keeps them apart by partition
        view = caller.own_view() if caller is not None else scopes.ROOT_VIEW
        files = capability(backend, FilesBackend)
        if files is not None:

            def run() -> TidyReport:
                with scopes.viewing(view):
                    return _tidy_files(files.store, caller, max_share, dry_run, when, workspace, rules)

            report = await asyncio.to_thread(run)
        else:
            inner = innermost(backend)
            if not _is_postgres(inner):
                raise UnsupportedError.of("tidy", inner, "files and PostgreSQL backends only")
            with scopes.viewing(view):
                report = await _tidy_postgres(inner, caller, max_share, dry_run, when, workspace, rules)
    await _fire(backend, report)
    return report


def _is_postgres(backend: object) -> bool:
    try:
        from agent_memory.backends.postgres.backend import PostgresBackend
    except ImportError:  # the postgres extra is not installed: it cannot be one
        return False
    return isinstance(backend, PostgresBackend)


async def _fire(backend: Any, report: TidyReport) -> None:
    from agent_memory.backends.extended import ExtendedBackend, Written

    if isinstance(backend, ExtendedBackend):
        for change in report.applied:
            await backend.hooks.fire("on_memory_written", Written("archive", change.record_id, "archived", source=ACTOR))
