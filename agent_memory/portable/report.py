"""What an import did: the ids it wrote and, per line or file, what it skipped and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

SkipReason = Literal[
    "invalid",  # unreadable or failing validation (the message says which field)
    "exists",  # a record with this id is already there, byte-identical (a re-run)
    "conflict",  # a record with this id is already there with different content: never overwritten
    "duplicate",  # the same text already lives in the same partition (scope + session + user)
    "key_conflict",  # another live record of the partition already holds this memory_key
    "expired",  # its expiry date has passed: an expired memory is never visible, so it is not imported
    "empty",  # nothing to remember (no text)
    "unsupported",  # a file or line this format does not describe (e.g. a stray file)
    "purged",  # purged from the target (its purge tombstone is there): not re-imported without allow_purged
]


@dataclass(frozen=True, slots=True)
class Skip:
    """One line or file an import did not write: where it was, a typed reason and a readable message."""

    where: str
    reason: SkipReason
    message: str
    id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"where": self.where, "reason": self.reason, "message": self.message, "id": self.id}


@dataclass(frozen=True, slots=True)
class Rescope:
    """One record an import put in another scope than its source asked for (an import as a user or session
    lands every record in that caller's partition: a ``global``/``project`` record is downgraded)."""

    where: str
    id: str | None
    asked: str
    scope: str
    caller: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "where": self.where,
            "id": self.id,
            "asked": self.asked,
            "scope": self.scope,
            "message": f"scope {self.asked} -> {self.scope}: imported as {self.caller}",
        }


@dataclass
class ImportReport:
    """The outcome of one :func:`~agent_memory.portable.import_file` (``to_dict()`` is the CLI's JSON)."""

    format: str
    path: str
    written: list[str] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    redactions: int = 0
    ids_kept: bool = True
    dropped: dict[str, int] = field(default_factory=dict)
    rescoped: list[Rescope] = field(default_factory=list)
    kinds: dict[str, int] = field(default_factory=dict)

    def wrote(self, ident: str, kind: str = "record") -> None:
        """Note that ``ident`` was written; ``kind`` (record, archived, session, episode, event, namespace, cursor)
        lets the summary say what an import of a whole root brought, not only a count of lines."""
        self.written.append(ident)
        self.kinds[kind] = self.kinds.get(kind, 0) + 1

    def rescope(self, where: str, record_id: str | None, asked: str, scope: str, caller: str) -> None:
        """Note that the record at ``where`` was put in ``scope`` although its source asked for ``asked``."""
        self.rescoped.append(Rescope(where, record_id, asked, scope, caller))

    def settle(self) -> None:
        """Keep only the rescope notes of records that were written (a skipped line changed nothing)."""
        skipped = {s.where for s in self.skipped}
        self.rescoped = [r for r in self.rescoped if r.where not in skipped]

    def skip(self, where: str, reason: SkipReason, message: str, record_id: str | None = None) -> None:
        self.skipped.append(Skip(where, reason, message, record_id))

    def drop(self, what: str, n: int = 1) -> None:
        """Count a field the target has no place for (e.g. embeddings), so the report says it was left out."""
        self.dropped[what] = self.dropped.get(what, 0) + n

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.skipped:
            out[s.reason] = out.get(s.reason, 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "path": self.path,
            "written": len(self.written),
            "written_by_kind": dict(self.kinds),
            "ids": list(self.written),
            "skipped": len(self.skipped),
            "skipped_by_reason": self.counts(),
            "skips": [s.to_dict() for s in self.skipped],
            "redactions": self.redactions,
            "ids_kept": self.ids_kept,
            "dropped": dict(self.dropped),
            "rescoped": [r.to_dict() for r in self.rescoped],
        }
