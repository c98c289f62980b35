"""The one rule for the supersession chains an import writes, for every backend's import path.

An import writes a record's ``supersedes``/``superseded_by`` only where they make one chain of one partition with
exactly one current value. :func:`plan_chains` says which records of an import break that, and why:

- a link naming a record of another partition (scope, session, user, namespace): ``invalid`` (a pointer may only
  name a record of its own partition; another owner's id or text is never reached through it);
- superseded by a record neither the import nor the target holds in the partition: ``unsupported`` (it would be
  written invisible);
- a cycle (each superseded by the next, none current): ``invalid``;
- a branch (two records superseding the same one, or superseding a record superseded by another): the second is
  ``invalid`` (two current values otherwise);
- superseded by a record the import skips: ``unsupported`` (its successor is not imported).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory.model.records import MemoryRecord
from agent_memory.portable.report import SkipReason

__all__ = ["Held", "partition_of", "plan_chains"]

Part = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Held:
    """A record the target already holds under an id an import names: its partition and its successor."""

    partition: Part
    superseded_by: str | None
    archived: bool = False  # an archived version: history, restorable by its owner; its links are not judged


def partition_of(rec: MemoryRecord) -> Part:
    return (rec.scope.value, rec.session_id or None, rec.user_id or None, rec.namespace or "")


def plan_chains(
    records: Sequence[MemoryRecord],
    held: Callable[[str, Part], Held | None],
    *,
    supersedes_stored: bool = False,
    declared: Mapping[str, str] | None = None,
) -> dict[int, tuple[SkipReason, str]]:
    """The records (by index) an import must skip, with the reason and message (see the module docstring).
    ``held(id, partition)``: the target's record under ``id`` as the import would see it, the one of ``partition``
    where the target holds several (None: none, or not the caller's).
    A record superseding a *current* record the target holds is refused (``invalid``: the import does not change
    that record, two current values otherwise), on every backend, unless ``supersedes_stored`` (the target's write
    supersedes a record it holds: a backend's ``remember_many``) and the import's own line for that record names
    this one as its successor (``declared``: a line's id -> its ``superseded_by``, for the lines of the import
    already there or written, e.g. a newer export imported over an older one). The files store writes whole
    records and never changes a stored one, so it passes False."""
    bad: dict[int, tuple[SkipReason, str]] = {}
    index: dict[str, int] = {}
    for i, rec in enumerate(records):
        index.setdefault(rec.id, i)
    parts = [partition_of(r) for r in records]
    cache: dict[tuple[str, Part], Held | None] = {}

    def target(rid: str, part: Part) -> Held | None:
        if (rid, part) not in cache:
            cache[rid, part] = held(rid, part)
        return cache[rid, part]

    claimed: dict[str, int] = {}  # a predecessor's id -> the record of the import superseding it
    for i, rec in enumerate(records):
        nxt = rec.superseded_by
        if nxt:
            j = index.get(nxt)
            where = parts[j] if j is not None else (h.partition if (h := target(nxt, parts[i])) is not None else None)
            if where is None:
                bad[i] = ("unsupported", f"superseded by {nxt}, which this import does not hold; not imported as a current value")
                continue
            if where != parts[i]:
                bad[i] = (
                    "invalid",
                    f"superseded by {nxt}, a record of another partition; a supersession link names only its own partition",
                )
                continue
        prev = rec.supersedes
        if not prev:
            continue
        j = index.get(prev)
        if j is not None:
            if parts[j] != parts[i]:
                bad[i] = ("invalid", f"supersedes {prev}, a record of another partition; a supersession link names only its own partition")
                continue
            other = records[j].superseded_by
        else:
            h = target(prev, parts[i])
            if h is not None and h.partition != parts[i]:
                bad[i] = ("invalid", f"supersedes {prev}, a record of another partition; a supersession link names only its own partition")
                continue
            other = h.superseded_by if h is not None else None
            if h is not None and other is None and not h.archived:
                other = (declared or {}).get(prev) if supersedes_stored else None  # the import's line for it
                if other is None:
                    bad[i] = ("invalid", f"supersedes {prev}, a current record this import does not change; not imported")
                    continue
        if other is not None and other != rec.id:
            bad[i] = ("invalid", f"supersedes {prev}, which is already superseded by {other}; not imported")
            continue
        if prev in claimed:
            bad[i] = ("invalid", f"supersedes {prev}, which is already superseded by {records[claimed[prev]].id}; not imported")
            continue
        claimed[prev] = i
    ends: set[int] = set()  # records whose superseded_by chain within the import ends (each walked once)
    for i in range(len(records)):  # a cycle: following superseded_by within the import never ends
        if i in bad or i in ends:
            continue
        path: list[int] = []
        on_path: set[int] = set()
        at: int | None = i
        while at is not None and at not in ends and at not in on_path:
            path.append(at)
            on_path.add(at)
            at = index.get(records[at].superseded_by or "")
        if at is not None and at in on_path:
            for k in path:
                bad.setdefault(k, ("invalid", "its supersession links form a cycle; not imported"))
        else:
            ends.update(path)
    changed = True
    while changed:  # superseded by a record not imported: it would be written invisible
        changed = False
        for i, rec in enumerate(records):
            j = index.get(rec.superseded_by or "")
            if i not in bad and j is not None and j in bad:
                bad[i] = ("unsupported", f"superseded by {rec.superseded_by}, which this import does not write; not imported")
                changed = True
    return bad
