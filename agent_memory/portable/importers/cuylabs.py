"""cuylabs filesystem memory: ``records/*.md`` with JSON (or YAML) frontmatter — and our own Markdown export tree.

``id``, ``title``, ``kind``, ``scope``, ``tags`` and ``metadata`` are read as written; camelCase metadata
(``sessionId``, ``userId``, ``memoryKey``, ``createdAt``, ``updatedAt``) becomes our fields. The file's own id is
kept when it is a valid one. A record without a timestamp gets its file's modification time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent_memory.backends.files.layout import enclosing_root
from agent_memory.errors import InvalidInputError
from agent_memory.model.records import parse_record
from agent_memory.portable.importers._common import Item, file_time, not_inside, refuse_link
from agent_memory.portable.report import ImportReport

_TIMES = {"createdAt": "created", "updatedAt": "updated", "created_at": "created", "updated_at": "updated"}


def files_of(path: Path) -> list[Path]:
    """The record files under ``path``: a memory root's ``records/`` (never what the root derives from them —
    ``MEMORY.md``, ``USER.md`` — nor its archive, episodes or session logs, also for roots inside ``path``)."""
    if path.is_file():
        return [path]
    base = path / "records" if (path / "records").is_dir() else path
    return sorted(p for p in base.rglob("*.md") if p.name != "README.md" and not p.name.startswith(".") and not _derived(base, p))


def _derived(base: Path, file: Path) -> bool:
    """Is ``file`` a file of a memory root at or under ``base`` that is not one of its record files?"""
    root = enclosing_root(file)
    if root is None:
        return False
    tops = {base.absolute(), base.resolve()}
    inside = any(root == top or top in root.parents for top in tops)
    return inside and (root / "records") not in {file.absolute().parent, file.resolve().parent}


def _header_id(text: str) -> str | None:
    if not text.startswith("---"):
        return None
    head = text[3:].lstrip()
    if head.startswith("{"):
        end = text.find("\n---", 3)
        try:
            data = json.loads(text[3:end] if end > 0 else "")
        except ValueError:
            return None
        value = data.get("id") if isinstance(data, dict) else None
        return value if isinstance(value, str) else None
    return None


def read(path: Path, report: ImportReport) -> Iterator[Item]:
    refuse_link(path)
    base = path.parent if path.is_file() else path
    for file in files_of(path):
        where = str(file.relative_to(base))
        why = not_inside(base, file)
        if why is not None:
            report.skip(where, "invalid", why)
            continue
        if not file.is_file():
            continue
        try:
            text = file.read_text(encoding="utf-8")
            mtime = file_time(file)
            rec = parse_record(text, file.stem, mtime_iso=mtime)
        except (OSError, UnicodeDecodeError, InvalidInputError) as exc:
            report.skip(where, "invalid", " ".join(str(exc).split())[:200])
            continue
        meta: dict[str, Any] = dict(rec.metadata)
        times = {ours: meta.pop(theirs) for theirs, ours in _TIMES.items() if theirs in meta}
        yield Item(
            where=where,
            ref=f"{rec.id}",
            content=rec.content,
            created=times.get("created") or rec.created,
            updated=times.get("updated") or rec.updated,
            title=rec.title,
            kind=rec.kind,
            scope=rec.scope.value,
            session_id=rec.session_id,
            user_id=rec.user_id,
            tags=list(rec.tags),
            memory_key=rec.memory_key,
            expires=rec.expires,
            importance=rec.importance,
            metadata=meta,
            id=_header_id(text) or rec.id,
            source=rec.source,
            happened_at=rec.happened_at,
            valid_from=rec.valid_from,
            valid_to=rec.valid_to,
            supersedes=rec.supersedes,
            superseded_by=rec.superseded_by,
        )
