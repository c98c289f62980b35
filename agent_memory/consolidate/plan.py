"""The deterministic plan: which records to archive and why, and what to report without acting.

Pure: it reads record snapshots and returns :class:`~.report.Change` and :class:`~.report.Finding` lists.
Rules never cross a partition (scope, session, user, namespace): a record is only ever merged into one its own readers see.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from pathlib import Path

import agent_memory.redaction.api as _redact
from agent_memory.consolidate import similar
from agent_memory.consolidate.report import Change, ConsolidateOptions, Finding
from agent_memory.model.drafts import _parse_when
from agent_memory.model.records import MemoryRecord
from agent_memory.model.scopes import SHARED_SCOPES
from agent_memory.model.supersession import UNDEDUPED_KINDS

__all__ = ["plan_changes", "partition_of", "MAX_FINDINGS"]

MAX_FINDINGS = 500  # contradiction groups reported; a store with more has a pattern worth a look, not a longer list
MAX_PATTERN_NOTES = 20


def partition_of(rec: MemoryRecord) -> tuple[str, str | None, str | None, str]:
    return (rec.scope.value, rec.session_id, rec.user_id, rec.namespace)


def _change(rule: str, rec: MemoryRecord, reason: str, **kw: object) -> Change:
    return Change(
        rule,
        rec.id,
        reason,
        content_hash=rec.content_hash,
        scope=rec.scope.value,
        owner=(rec.session_id, rec.user_id, rec.namespace or None),
        **kw,  # type: ignore[arg-type]
    )


def _keeper_rank(rec: MemoryRecord) -> tuple[object, ...]:
    """Which of a group of near-duplicates stays: keyed, the head of a version chain, most important, most words,
    newest."""
    return (
        rec.memory_key is not None,
        rec.supersedes is not None,
        rec.importance or 0.0,
        len(similar.words(rec.content)),
        len(rec.content.strip()),
        rec.updated,
        rec.id,
    )


def _merges(records: Sequence[MemoryRecord], threshold: float, taken: set[str], findings: list[Finding], notes: list[str]) -> list[Change]:
    """Near-duplicate merges among ``records`` (current records only: a superseded version is history, never a
    candidate, never the kept side), and the contradiction lint of the same pairs."""
    with similar.paused_gc():  # shingle sets, index buckets, pairs: millions of small objects (see paused_gc)
        return _merges_of(records, threshold, taken, findings, notes)


def _merges_of(
    records: Sequence[MemoryRecord], threshold: float, taken: set[str], findings: list[Finding], notes: list[str]
) -> list[Change]:
    # computed for the records the index pairs (a large store's others are read once, to index them, and not kept)
    sh = similar.Lazy(lambda i: similar.shingles(records[i].content), len(records))
    ws = similar.Lazy(lambda i: similar.word_counts(records[i].content), len(records))
    groups: dict[tuple[str, str | None, str | None, str], list[int]] = {}
    for i, rec in enumerate(records):
        if rec.id not in taken:
            groups.setdefault(partition_of(rec), []).append(i)
    floor = min(threshold, similar.CONFLICT_THRESHOLD)
    pairs = sorted(similar.candidate_pairs(groups.values(), sh, floor))
    parent = list(range(len(records)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    best: dict[tuple[int, int], float] = {}
    versions: list[tuple[int, int, tuple[str, ...]]] = []
    for i, j in pairs:
        pair = similar.compare(i, j, sh, ws, floor)
        a, b = records[i], records[j]
        if pair.conflict:
            if similar.is_contradiction(pair, a.content, b.content):
                versions.append((i, j, pair.conflict))
            continue
        if pair.similarity < threshold:
            continue
        if a.memory_key and b.memory_key and a.memory_key != b.memory_key:
            continue  # two keyed slots stay two slots
        best[(i, j)] = pair.similarity
        parent[find(i)] = find(j)
    clusters: dict[int, list[int]] = {}
    for i, j in best:
        for k in (i, j):
            members = clusters.setdefault(find(k), [])
            if k not in members:
                members.append(k)
    _contradictions(records, versions, findings, notes)
    changes: list[Change] = []
    for members in clusters.values():
        keep = max(members, key=lambda k: _keeper_rank(records[k]))
        kept_words = ws[keep]
        for k in sorted(members, key=lambda k: records[k].id):
            if k == keep:
                continue
            rec = records[k]
            if records[k].memory_key and records[keep].memory_key != records[k].memory_key:
                continue
            if similar.conflicting(ws[k], kept_words):
                continue  # chained through a third record but disagrees with the keeper: not a duplicate of it
            sim = similar.jaccard(sh[k], sh[keep])
            changes.append(
                _change(
                    "merge",
                    rec,
                    f"near-duplicate of {records[keep].id} (similarity {sim:.2f})",
                    related=[records[keep].id],
                    similarity=round(sim, 3),
                )
            )
    return changes


def _contradictions(
    records: Sequence[MemoryRecord], versions: list[tuple[int, int, tuple[str, ...]]], findings: list[Finding], notes: list[str]
) -> None:
    """One finding per group of records that are versions of one statement with different values (grouped by the
    statement's frame, never chained through a third record); a frame many records share is a pattern (a note)."""
    groups, patterns = similar.group_versions(versions, [r.content for r in records])
    for members, differ in sorted(groups, key=lambda g: min(records[k].id for k in g[0]))[:MAX_FINDINGS]:
        findings.append(
            Finding(
                "contradiction",
                sorted(records[k].id for k in members),
                f"{len(members)} versions of one statement that differ on: {', '.join(differ[:8])}; review them, keep the true one(s)",
            )
        )
    for text, size in patterns[:MAX_PATTERN_NOTES]:
        notes.append(
            f"{size} records follow one pattern ({text[:80]!r}): many records of one template, "
            "not versions of one statement (not reported as a contradiction)"
        )


def _scope_path_gone(rec: MemoryRecord, base: Path) -> str | None:
    value = rec.metadata.get("scope_path") if isinstance(rec.metadata, dict) or hasattr(rec.metadata, "get") else None
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        return None
    path = Path(os.path.expanduser(value.strip()))
    path = path if path.is_absolute() else base / path
    try:
        return None if path.exists() else str(path)
    except OSError:
        return None


def plan_changes(
    records: Sequence[MemoryRecord],
    opts: ConsolidateOptions,
    *,
    now: dt.datetime,
    root: Path | None,
    recalled: set[str] | None,
    problems: dict[str, str] | None = None,
) -> tuple[list[Change], list[Finding], list[str]]:
    """Plan a pass over ``records`` (every partition). ``recalled``: ids ever recalled (None: unknown → no decay)."""
    changes: list[Change] = []
    findings: list[Finding] = []
    notes: list[str] = []
    taken: set[str] = set()

    def add(change: Change) -> None:
        changes.append(change)
        taken.add(change.record_id)

    rules = set(opts.rules)
    current = [r for r in records if not r.superseded_by]  # superseded versions are history: no merge, decay, lint
    if "ttl" in rules:
        for rec in records:
            when = _parse_when(rec.expires) if rec.expires else None
            if when is not None and when <= now:
                add(_change("ttl", rec, f"expired (expires {rec.expires})"))
    if "scope_path" in rules:
        base = Path(opts.workspace) if opts.workspace else (root.parent if root is not None else Path.cwd())
        for rec in records:
            if rec.id not in taken:
                gone = _scope_path_gone(rec, base)
                if gone:
                    add(_change("scope_path", rec, f"scope_path {rec.metadata.get('scope_path')!r} no longer exists ({gone})"))
    if "merge" in rules:
        threshold = opts.merge_threshold or similar.MERGE_THRESHOLD
        # a curated line is someone's choice, a memory-tool file is addressed by its path: never merged away (nor
        # merged into), as tidy and sweep leave them out of duplicate detection (UNDEDUPED_KINDS, one list)
        mergeable = [r for r in current if r.kind not in UNDEDUPED_KINDS]
        for change in _merges(mergeable, threshold, taken, findings, notes):
            if change.record_id not in taken and not set(change.related) & taken:
                add(change)
    if "decay" in rules:
        if recalled is None:
            notes.append("decay skipped: no recall log yet (MemoryProvider(..., track_recalls=True) records recalls)")
        else:
            cutoff = now - dt.timedelta(days=opts.decay_days)
            for rec in current:
                last = _parse_when(rec.updated or rec.created)
                if (
                    rec.id in taken
                    or rec.id in recalled
                    or rec.importance is None
                    or rec.importance >= opts.decay_importance
                    or last is None
                    or last > cutoff
                ):
                    continue
                add(_change("decay", rec, f"not recalled, importance {rec.importance:g}, unchanged since {rec.updated[:10]}"))
    _lint(records, opts, findings, problems or {})
    return changes, findings, notes


def _lint(records: Sequence[MemoryRecord], opts: ConsolidateOptions, findings: list[Finding], problems: dict[str, str]) -> None:
    for name, reason in sorted(problems.items()):
        findings.append(Finding("unreadable", [name], f"quarantined: {reason}"))
    keyed: dict[str, list[MemoryRecord]] = {}
    verdicts: dict[str, bool] = {}  # each distinct text through the redaction engine once (titles repeat, copies too)

    def secret(text: str) -> bool:
        found = verdicts.get(text)
        if found is None:
            found = verdicts[text] = _redact.contains_secret(text)
        return found

    for rec in records:
        if len(rec.content) > opts.oversized_chars:
            findings.append(
                Finding(
                    "oversized", [rec.id], f"{len(rec.content)} characters (limit {opts.oversized_chars}); split it into smaller records"
                )
            )
        if opts.lint_secrets and (secret(rec.content) or secret(rec.title)):
            findings.append(
                Finding("secret", [rec.id], "holds what looks like a secret (hand edit?); rewrite it without the secret or forget it")
            )
        if rec.memory_key and not rec.superseded_by:  # a replaced value is history, not a second value
            keyed.setdefault(rec.memory_key, []).append(rec)
    for key, recs in sorted(keyed.items()):
        shared = [r for r in recs if r.scope.value in SHARED_SCOPES]
        if not shared:
            continue  # different users' (or sessions') values for one key are not seen together: no conflict
        clash = sorted({i for r in recs for s in shared if r.id != s.id and r.content_hash != s.content_hash for i in (r.id, s.id)})
        if clash:
            findings.append(
                Finding(
                    "contradiction",
                    clash,
                    f"memory_key {key!r} holds different values that one reader sees together (shared and private, or two shared records)",
                )
            )
