"""The shared path of every foreign import: an :class:`Item` read from a source becomes a verified record.

Each item goes through the write gate (:func:`agent_memory.model.drafts.apply_override` for whose it is, then
:func:`agent_memory.model.drafts.prepare_draft`: validation and the same redaction as every write), keeps its original timestamps (normalised to UTC), and gets a deterministic id made from the source
format, the item's identity in its source, its text and its owner (scope, session, user, namespace: the same memory
imported for two owners is two records, and neither import can tell the other exists), so re-running an import
finds it and writes nothing. An import as a caller never keeps a source's own ids (one could be another owner's).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_memory.errors import InvalidInputError
from agent_memory.model.drafts import MemoryDraft, Override, apply_override, check_id, prepare_draft, stamp_override, utc_text
from agent_memory.model.records import SOURCES, slugify
from agent_memory.model.values import shown
from agent_memory.portable._write import Guard, Pending, Target, batch_size, write_records
from agent_memory.portable.report import ImportReport

__all__ = ["Item", "Overrides", "file_time", "import_items", "not_inside", "refuse_link", "to_utc"]


@dataclass
class Item:
    """One memory read from a foreign source, before verification."""

    where: str  # file and line, for the report
    ref: str  # its stable identity in the source (slug, entry id, mem0 id, file name …)
    content: Any  # must be a non-empty string to be imported
    created: Any = None  # the original timestamp (ISO text, or epoch seconds); None: the source file's mtime
    updated: Any = None
    title: str | None = None
    kind: str | None = None
    scope: str | None = None
    session_id: str | None = None
    user_id: str | None = None
    tags: list[str] = field(default_factory=list)
    memory_key: str | None = None
    expires: Any = None
    importance: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str | None = None  # keep this id when it is a valid one (sources with ids like ours)
    source: str | None = None  # keep this source when it is one of ours
    # the clocks and the supersession link of a source that has them (a memory root, our Markdown export): a value
    # that was replaced comes in as the history it was, never as a second current value (docs/export.md)
    happened_at: Any = None
    valid_from: Any = None
    valid_to: Any = None
    supersedes: str | None = None
    superseded_by: str | None = None


Overrides = Override  # the old name: ownership an application imposes on a whole import


def to_utc(value: Any) -> str | None:
    """An ISO date/datetime or epoch seconds as our UTC text; None if absent; InvalidInputError if unreadable."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            when = dt.datetime.fromtimestamp(float(value) / (1000 if value > 1e11 else 1), dt.UTC)
        elif isinstance(value, dt.datetime):
            when = value
        elif isinstance(value, dt.date):
            when = dt.datetime(value.year, value.month, value.day)
        else:
            when = dt.datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        return utc_text(when)
    except (ValueError, OverflowError, OSError):
        raise InvalidInputError(f"not a date or time: {shown(value)}") from None


def refuse_link(path: Path) -> None:
    """The path an import was given is never a symbolic link: it could point anywhere (pass what it points to)."""
    if path.is_symlink():
        raise InvalidInputError(f"{path}: a symbolic link; an import never follows one (pass the file it points to)")


def not_inside(base: Path, file: Path) -> str | None:
    """Why ``file``, found in the imported directory ``base``, is not read (None: it may be): a symbolic link, or a
    path that leads out of ``base`` (through a linked folder). An uploaded directory never makes us read elsewhere."""
    if file.is_symlink():
        return "a symbolic link: an import never follows one"
    try:
        file.resolve(strict=True).relative_to(base.resolve(strict=True))
    except (OSError, RuntimeError, ValueError):
        return "outside the imported directory (through a linked folder): not read"
    return None


def file_time(path: Path) -> str:
    return utc_text(dt.datetime.fromtimestamp(os.stat(path).st_mtime, dt.UTC))


def _record_of(item: Item, fmt: str, fallback_time: str, over: Override, report: ImportReport) -> Pending | None:
    if item.content is not None and not isinstance(item.content, str):
        report.skip(item.where, "invalid", f"the text must be a string, not {type(item.content).__name__}")
        return None
    if not item.content or not item.content.strip():
        report.skip(item.where, "empty", "no text to remember")
        return None
    try:
        created = to_utc(item.created) or fallback_time
        updated = to_utc(item.updated) or created
        expires = to_utc(item.expires)
        if expires is not None and expires <= utc_text(dt.datetime.now(dt.UTC)):
            report.skip(item.where, "expired", f"expired at {expires}; an expired memory is never visible")
            return None
        owned = apply_override(item.scope, item.session_id, item.user_id, over)
        metadata = {**item.metadata, "import": {"format": fmt, "ref": item.ref}}
        draft = MemoryDraft(
            item.content,
            item.title,
            item.kind,
            owned.scope,
            owned.session_id,
            owned.user_id,
            tuple(item.tags),
            item.memory_key,
            "skip",
            None,
            item.importance,
            metadata,
            namespace=over.namespace,  # another memory's files land in the importer's namespace
            happened_at=to_utc(item.happened_at),
            valid_from=to_utc(item.valid_from),
            valid_to=to_utc(item.valid_to),
            supersedes=item.supersedes or None,
        )
        rec, redactions = prepare_draft(draft, "import")
        if item.superseded_by:
            rec = rec.replace(superseded_by=check_id("superseded_by", item.superseded_by))
    except InvalidInputError as exc:
        report.skip(item.where, "invalid", str(exc))
        return None
    rid = None
    if item.id and over.caller:
        report.ids_kept = False
    if item.id and not over.caller:  # an import as a caller never keeps a file's id: it could be another owner's
        try:
            rid = check_id("id", item.id)
        except InvalidInputError:
            rid = None  # not a safe id (or a secret): a deterministic one instead
    if rid is None:
        # the owner is part of the identity: the same memory imported for two owners is two records, never a
        # `conflict` that tells one of them the other holds it
        owner = f"{rec.scope.value}\0{rec.session_id or ''}\0{rec.user_id or ''}\0{rec.namespace or ''}"
        ident = f"{fmt}\0{item.ref}\0{item.content}\0{owner}"
        digest = hashlib.sha256(ident.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        rid = f"{created[:10]}-{slugify(rec.memory_key or rec.title)}-{digest}"
    source = item.source if item.source in SOURCES else rec.source
    if owned.rescoped is not None:
        report.rescope(item.where, rid, owned.rescoped.value, rec.scope.value, over.describe())
    updated = max(updated, created)
    metadata = stamp_override(rec.metadata, over, created, updated)
    return item.where, rec.replace(id=rid, created=created, updated=updated, expires=expires, source=source, metadata=metadata), redactions


def import_items(
    target: Target,
    items: Iterable[Item],
    report: ImportReport,
    *,
    fmt: str,
    fallback_time: str,
    overrides: Override | None = None,
    allow_purged: bool = False,
) -> ImportReport:
    """Verify ``items`` and write the new ones (in batches), reporting each one not written (a record purged from
    the target is skipped as ``purged`` unless ``allow_purged``)."""
    batch: list[Pending] = []
    size = batch_size(target)
    over = Override() if overrides is None else overrides  # a namespace alone is a caller's import too (Override.caller)
    guard = Guard(allow_purged=allow_purged)  # not `private`: as a caller, every id is derived with its owner already
    linked: list[Pending] = []  # records of a supersession chain: written last, their links to the ids written
    ids: dict[str, str] = {}  # a linked item's id in its source -> the id it is written under
    for item in items:
        pending = _record_of(item, fmt, fallback_time, over, report)
        if pending is not None and (pending[1].supersedes or pending[1].superseded_by):
            linked.append(pending)
            if item.id:
                ids[item.id] = pending[1].id
        elif pending is not None:
            batch.append(pending)
        if len(batch) >= size:
            write_records(target, batch, report, dedupe=True, guard=guard)
            batch.clear()
    write_records(target, batch, report, dedupe=True, guard=guard)
    if linked:  # one call: the chain rule (portable._chains) judges a chain whole, never half of it per batch
        write_records(target, [_relinked(p, ids) for p in linked], report, dedupe=True, guard=guard)
    return report


def _relinked(pending: Pending, ids: Mapping[str, str]) -> Pending:
    """A chain record with its ``supersedes``/``superseded_by`` naming the ids its neighbours are written under (an
    import as a caller derives new ids); a link to a record not in the import is kept as the source wrote it."""
    where, rec, redactions = pending
    return (
        where,
        rec.replace(
            supersedes=ids.get(rec.supersedes, rec.supersedes) if rec.supersedes else None,
            superseded_by=ids.get(rec.superseded_by, rec.superseded_by) if rec.superseded_by else None,
        ),
        redactions,
    )


def as_tags(value: Any) -> list[str]:
    """Tags given as a list or a comma-separated string."""
    if value is None:
        return []
    if isinstance(value, str):
        return [t.strip() for t in value.split(",") if t.strip()]
    if isinstance(value, (list, tuple)):
        return [str(t).strip() for t in value if str(t).strip()]
    raise InvalidInputError("tags must be a list or a comma-separated string")


def str_or_none(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}
