"""What a maintenance or lifecycle operation reports back, whatever backend ran it.

Sweep and doctor, an index sync, a purge, a vector backfill and a record's history share these shapes, so the
CLI, the provider and both backends read one report type per operation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_memory.model.events import Event
from agent_memory.model.records import MemoryRecord

__all__ = ["BackfillReport", "DoctorReport", "History", "PurgeReport", "SweepReport", "SyncReport"]


@dataclass
class SweepReport:
    """What one sweep removed: expired records and exact duplicates."""

    expired: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"expired": self.expired, "duplicates": self.duplicates}


@dataclass
class DoctorReport:
    records: int
    indexed: int
    problems: dict[str, str]
    drift: dict[str, int]
    ok: bool

    def to_dict(self) -> dict[str, Any]:
        return {"records": self.records, "indexed": self.indexed, "problems": self.problems, "drift": self.drift, "ok": self.ok}


@dataclass
class PurgeReport:
    records: list[str] = field(default_factory=list)
    files: int = 0
    vectors: int = 0
    events: int = 0
    others: dict[str, int] = field(default_factory=dict)
    stores: dict[str, int] = field(default_factory=dict)  # every root store visited -> items removed from it
    skipped: list[str] = field(default_factory=list)  # registered purgers a namespace purge could not call (no namespace=)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "records": self.records,
            "files": self.files,
            "vectors": self.vectors,
            "events": self.events,
            "stores": self.stores,
            "others": self.others,
        }
        if self.skipped:
            out["skipped"] = self.skipped
        return out


# -- history ------------------------------------------------------------------------------
@dataclass
class History:
    """Every version of one record, oldest first (the last is the current one), with its events."""

    id: str
    state: str  # "live" or "archived" (a live record a newer one replaced names it: ``superseded_by``)
    versions: list[MemoryRecord]
    events: list[Event] = field(default_factory=list)

    @property
    def superseded_by(self) -> str | None:
        """The record that replaced this one (``remember --supersede``), when one did: none of its versions is current."""
        return self.versions[-1].superseded_by if self.versions else None

    def to_dict(self) -> dict[str, Any]:
        n = len(self.versions)
        successor = self.superseded_by
        return {
            "id": self.id,
            "state": self.state,
            **({"superseded_by": successor} if successor else {}),
            "versions": [
                {
                    "version": i,
                    "current": i == n and not successor,
                    "updated": v.updated,
                    "title": v.title,
                    "content_hash": v.content_hash,
                    "content": v.content,
                }
                for i, v in enumerate(self.versions, 1)
            ],
            "events": [e.to_dict() for e in self.events],
        }


@dataclass
class SyncReport:
    """What one synchronisation pass did."""

    scanned: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    problems: dict[str, str] = field(default_factory=dict)
    rebuilt: bool = False


@dataclass(slots=True)
class BackfillReport:
    """What one :meth:`VectorCache.backfill` did."""

    model: str
    total: int = 0
    cached: int = 0
    embedded: int = 0
    pruned: int = 0
    seconds: float = 0.0
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}  # type: ignore[attr-defined]
