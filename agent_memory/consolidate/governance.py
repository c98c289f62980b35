"""Dream governance: every consolidation run in a history, drift found from the recall log, a digest of a period.

- :func:`record_run` appends one line per run (dry or applied) to the root's run log
  (:mod:`agent_memory.backends.files.runlog`): when, who asked, every change with its rule, reason and status
  (applied, planned, skipped or not applied, and why), why the run stopped, and the drift it found.
- :func:`drift` compares what the store now says with what recall keeps handing out (``recalled.log``, kept by a
  provider with ``track_recalls=True``): a superseded record recalled after the record that superseded it was
  written, and contradicting records (the lint's rule) that were both recalled.
- :func:`history` reads the runs as a caller may see them (only changes of records it may see);
  :func:`digest_text` turns the runs of a period into the text of one ordinary record.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agent_memory.backends.files.runlog import RunLog, visible_run
from agent_memory.consolidate.recalls import RecallLog
from agent_memory.consolidate.report import ConsolidationReport, Finding
from agent_memory.errors import InvalidInputError
from agent_memory.model.drafts import archive_note
from agent_memory.model.records import MemoryRecord, normalize_instant, now_iso
from agent_memory.model.values import shown

__all__ = ["record_run", "drift", "history", "digest_text", "MAX_DIGEST_LINES"]

MAX_DIGEST_LINES = 40
MAX_JUDGED = 300  # recalled records compared pairwise for drift (bounded work on a large store)


def _owner(rec: MemoryRecord | None) -> dict[str, Any]:
    if rec is None:
        return {"scope": "project", "namespace": ""}
    return {"scope": rec.scope.value, "session_id": rec.session_id, "user_id": rec.user_id, "namespace": rec.namespace}


def drift(records: Sequence[MemoryRecord], findings: Iterable[Finding], log: RecallLog) -> list[dict[str, Any]]:
    """Facts whose newest statement disagrees with what recall keeps returning (see the module docstring)."""
    if not log.exists:
        return []
    times = log.times()
    by_id = {r.id: r for r in records}
    out: list[dict[str, Any]] = []
    for rec in records:
        newer = by_id.get(rec.superseded_by or "")
        if newer is None or rec.id not in times:
            continue
        since = normalize_instant(newer.created) or newer.created
        late = [t for t in times[rec.id] if t >= since]
        if late:
            out.append(
                {
                    "kind": "superseded_recalled",
                    "record_ids": [rec.id, newer.id],
                    "detail": f"recalled {len(late)} time(s) after {newer.id} superseded it (last {late[-1]})",
                    **_owner(rec),
                }
            )
    groups = [list(f.record_ids) for f in findings if f.kind == "contradiction" and len(f.record_ids) >= 2]
    groups += [g for g in _judged([r for r in records if r.id in times and not r.superseded_by]) if g not in groups]
    for ids in groups:
        if all(i in times for i in ids):
            out.append(
                {
                    "kind": "contradiction_recalled",
                    "record_ids": ids,
                    "detail": "contradicting records, all recalled: which one holds now?",
                    **_owner(by_id.get(ids[0])),
                }
            )
    return out


def _judged(recalled: Sequence[MemoryRecord]) -> list[list[str]]:
    """Pairs of recalled current records in one partition that :func:`.contradict.judge` finds contradicting (the
    newest :data:`MAX_JUDGED` recalled records; only pairs that share two words are compared)."""
    from agent_memory.consolidate.contradict import judge
    from agent_memory.consolidate.similar import words

    recent = sorted(recalled, key=lambda r: r.updated, reverse=True)[:MAX_JUDGED]
    postings: dict[tuple[Any, ...], list[int]] = {}
    for i, rec in enumerate(recent):
        for w in words(rec.content):
            postings.setdefault((rec.scope.value, rec.session_id, rec.user_id, w), []).append(i)
    shared: dict[tuple[int, int], int] = {}
    for members in postings.values():
        for x, i in enumerate(members[:50]):
            for j in members[x + 1 : 50]:
                shared[(i, j)] = shared.get((i, j), 0) + 1
    out = []
    for (i, j), n in sorted(shared.items()):
        if n >= 2 and judge(recent[j].content, recent[i].content) is not None:
            out.append(sorted([recent[i].id, recent[j].id]))
    return out


def record_run(
    root: Any, report: ConsolidationReport, records: Sequence[MemoryRecord], caller: Any, *, durable: bool = True, worker: bool = False
) -> str:
    """Append ``report`` to the root's run history; returns the run id."""
    by_id = {r.id: r for r in records}
    run_id = uuid.uuid4().hex[:12]
    sid, uid = getattr(caller, "session_id", None), getattr(caller, "user_id", None)
    ns = getattr(caller, "namespace", None) or ""
    # a record not in the snapshot (a worker's run): shown to the caller's own partition only
    fallback = {"scope": "user", "user_id": uid} if uid else {"scope": "session", "session_id": sid} if sid else {"scope": "project"}
    fallback["namespace"] = ns
    changes = [
        {
            "id": c.record_id,
            "rule": c.rule,
            "action": c.action,
            "status": c.status,
            "reason": archive_note(c.reason),
            **({"note": archive_note(c.note)} if c.note else {}),
            **({"related": list(c.related)} if c.related else {}),
            **(_owner(by_id[c.record_id]) if c.record_id in by_id else fallback),
        }
        for c in report.changes
    ]
    RunLog(root, durable=durable).append(
        {
            "run": run_id,
            "at": now_iso(),
            "dry_run": report.dry_run,
            "worker": worker,
            "caller": {k: v for k, v in (("session_id", sid), ("user_id", uid), ("namespace", ns)) if v},
            "total": report.total,
            "limit": report.limit,
            "stopped": report.stopped,
            "stop_reason": archive_note(report.stop_reason) if report.stop_reason else None,
            "changes": changes,
            "drift": report.drift,
        }
    )
    return run_id


def history(
    root: Any,
    *,
    session_id: str | None,
    user_id: str | None,
    since: str | None = None,
    limit: int | None = None,
    namespace: str | None = None,
    view: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """The runs since ``since`` (an instant), newest first, as the caller (in ``namespace``, reading ``view``) may see them."""
    start = _instant(since) if since else None
    runs = [
        visible_run(r, session_id, user_id, namespace=namespace, view=view)
        for r in RunLog(root).read()
        if not start or str(r.get("at", "")) >= start
    ]
    runs.reverse()
    return runs[:limit] if limit else runs


def _instant(value: str) -> str:
    found = normalize_instant(value)
    if found is None:
        raise InvalidInputError(f"since: not a date or instant: {shown(value)} (e.g. 2026-11-01 or 2026-11-01T09:00:00Z)")
    return found


def _when(value: str | None, default: dt.timedelta) -> str:
    if value:
        return _instant(value)
    return (dt.datetime.now(dt.UTC) - default).isoformat().replace("+00:00", "Z")


def digest_text(runs: Sequence[Mapping[str, Any]], since: str, until: str) -> str | None:
    """The text of a digest record for ``runs`` (as the reader may see them); None when nothing changed or drifted."""
    applied = [c for r in runs if not r.get("dry_run") for c in r["changes"] if c.get("status") == "applied"]
    skipped = [c for r in runs if not r.get("dry_run") for c in r["changes"] if c.get("status") in ("skipped", "not_applied")]
    drifted = [d for r in runs[:1] for d in r.get("drift") or []]  # the newest run's drift is the current one
    if not applied and not skipped and not drifted:
        return None
    by_rule: dict[str, int] = {}
    for c in applied:
        by_rule[c["rule"]] = by_rule.get(c["rule"], 0) + 1
    head = (
        f"Memory maintenance digest, {since[:10]} to {until[:10]}: {len(runs)} consolidation run(s); "
        f"{len(applied)} record(s) archived"
        + (" (" + ", ".join(f"{n} {rule}" for rule, n in sorted(by_rule.items())) + ")" if by_rule else "")
        + f", {len(skipped)} skipped, {len(drifted)} drift finding(s). Archived records are restorable."
    )
    lines = [head, ""]
    lines += [f"- archived {c['id']} [{c['rule']}]: {c['reason']}" for c in applied]
    lines += [f"- {c['status'].replace('_', ' ')} {c['id']} [{c['rule']}]: {c.get('note') or c['reason']}" for c in skipped]
    lines += [f"- drift ({d['kind'].replace('_', ' ')}): {', '.join(d['record_ids'])}: {d['detail']}" for d in drifted]
    if len(lines) > MAX_DIGEST_LINES + 2:
        lines = lines[: MAX_DIGEST_LINES + 2] + [f"- … {len(lines) - MAX_DIGEST_LINES - 2} more (agent-memory consolidate --history)"]
    return "\n".join(lines)
