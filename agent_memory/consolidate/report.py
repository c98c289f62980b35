"""What a consolidation run plans, changes and finds: :class:`ConsolidationReport`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = ["Change", "Finding", "ConsolidationReport", "ConsolidateOptions", "RULES"]

Rule = Literal["ttl", "scope_path", "merge", "decay"]
RULES: tuple[str, ...] = ("ttl", "scope_path", "merge", "decay")  # the order changes are applied in


@dataclass(frozen=True)
class ConsolidateOptions:
    """Settings of a pass. ``max_share``: at most this share of the store's records changes in one run."""

    max_share: float = 0.10
    merge_threshold: float | None = None  # default: similar.MERGE_THRESHOLD
    decay_days: float = 180.0
    decay_importance: float = 0.3  # records below it (when set) may decay; unset importance never decays
    oversized_chars: int = 16_000
    workspace: str | None = None  # base of relative metadata.scope_path (default: the root's parent)
    rules: tuple[str, ...] = RULES
    #: The ``secret`` lint: every record's text and title through the redaction engine (≈ 0.4 ms a record: 40 s of
    #: CPU at 100k records). The write gate redacted whatever the API wrote; the lint finds hand edits.
    lint_secrets: bool = True

    def __post_init__(self) -> None:
        from agent_memory.errors import InvalidInputError

        if isinstance(self.max_share, bool) or not isinstance(self.max_share, (int, float)) or not 0 <= self.max_share <= 1:
            raise InvalidInputError("max_share must be a number between 0 and 1")
        if self.merge_threshold is not None and not 0 < self.merge_threshold <= 1:
            raise InvalidInputError("merge_threshold must be in (0, 1]")
        if not isinstance(self.lint_secrets, bool):
            raise InvalidInputError("lint_secrets must be true or false")
        unknown = set(self.rules) - set(RULES)
        if unknown:
            raise InvalidInputError(f"unknown consolidation rule(s): {', '.join(sorted(unknown))} (use {', '.join(RULES)})")


@dataclass
class Change:
    """One planned change: ``archive`` a record (never a deletion), with the rule and reason that asked for it."""

    rule: str
    record_id: str
    reason: str
    action: str = "archive"
    related: list[str] = field(default_factory=list)
    similarity: float | None = None
    status: Literal["planned", "applied", "skipped", "not_applied"] = "planned"
    note: str | None = None
    content_hash: str = ""
    scope: str = ""
    # the record's owner (session, user, namespace): whom an operator's pass attributes the archive to, so that
    # owner's `undo`/`restore` in that namespace brings it back (the CLI's hint names all three); never in to_dict
    # (a shared record's creator)
    owner: tuple[str | None, str | None, str | None] = (None, None, None)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("content_hash")
        data.pop("owner")
        return data


@dataclass
class Finding:
    """A lint finding: reported, never acted on (a person or the consolidate worker decides)."""

    kind: Literal["oversized", "unreadable", "secret", "contradiction"]
    record_ids: list[str]
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ConsolidationReport:
    """Every change (planned or applied) with its reason, the lint findings, and whether the run stopped."""

    total: int
    limit: int
    dry_run: bool
    changes: list[Change] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    stopped: bool = False
    stop_reason: str | None = None
    notes: list[str] = field(default_factory=list)
    fallback: bool = False  # the consolidate worker failed part-way (what it archived stays, restorable)
    reason: str | None = None
    usage: dict[str, Any] | None = None
    drift: list[dict[str, Any]] = field(default_factory=list)  # see agent_memory.consolidate.governance.drift
    run_id: str | None = None  # this run in the run history (consolidate --history)

    @property
    def applied(self) -> list[Change]:
        return [c for c in self.changes if c.status == "applied"]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.changes:
            out[f"{c.rule}_{c.status}"] = out.get(f"{c.rule}_{c.status}", 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "limit": self.limit,
            "dry_run": self.dry_run,
            "stopped": self.stopped,
            "stop_reason": self.stop_reason,
            "applied": len(self.applied),
            "counts": self.counts(),
            "changes": [c.to_dict() for c in self.changes],
            "findings": [f.to_dict() for f in self.findings],
            "notes": list(self.notes),
            "fallback": self.fallback,
            "reason": self.reason,
            "usage": self.usage,
            "drift": [{k: v for k, v in d.items() if k not in ("session_id", "user_id")} for d in self.drift],
            "run_id": self.run_id,
        }

    def text(self) -> str:
        """A human-readable summary: one line per change and finding."""
        head = (
            f"{'plan' if self.dry_run else 'consolidated'}: {len(self.changes)} change(s) planned, "
            f"{len(self.applied)} applied (limit {self.limit} of {self.total} records)"
        )
        lines = [head]
        if self.stopped:
            lines.append(f"stopped: {self.stop_reason}")
        for c in self.changes:
            lines.append(f"  {c.status:<11} {c.action} {c.record_id}  [{c.rule}] {c.reason}" + (f" ({c.note})" if c.note else ""))
        for f in self.findings:
            lines.append(f"  lint {f.kind:<13} {', '.join(f.record_ids)}  {f.detail}")
        for d in self.drift:
            lines.append(f"  drift {d['kind']:<22} {', '.join(d['record_ids'])}  {d['detail']}")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)
