"""A mem0 export: ``get_all`` output (``{"results": [...]}``, ``{"memories": [...]}`` or a list) as JSON, or JSONL.

Each memory object: ``id``, ``memory`` (the text), ``user_id``, ``agent_id``, ``app_id``, ``run_id``, ``hash``,
``metadata``, ``categories``, ``created_at``, ``updated_at``. ``user_id`` owns the record (``user`` scope);
``run_id`` is a session (``session`` scope when no user is named); neither → ``project``. ``agent_id`` and
``app_id`` are kept in metadata, ``categories`` become tags, mem0's id is kept as ``metadata.mem0_id``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..report import ImportReport
from ._common import Item, as_tags, mapping, str_or_none


def _objects(path: Path, report: ImportReport) -> Iterator[tuple[str, Any]]:
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        doc: Any = json.loads(text)
    elif stripped.startswith("{") and "\n{" not in stripped.rstrip():  # one JSON document (possibly pretty-printed)
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and ("memory" in doc or "text" in doc):
            doc = [doc]
    else:
        doc = None
    if doc is None:  # JSONL
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    yield f"line {n}", json.loads(line)
                except ValueError as exc:
                    report.skip(f"line {n}", "invalid", f"not JSON: {' '.join(str(exc).split())[:200]}")
        return
    if isinstance(doc, dict):
        doc = doc.get("results", doc.get("memories"))
    if not isinstance(doc, list):
        report.skip(path.name, "invalid", "expected a list of memories, or an object with 'results' or 'memories'")
        return
    for i, obj in enumerate(doc):
        yield f"item {i}", obj


def read(path: Path, report: ImportReport) -> Iterator[Item]:
    for where, obj in _objects(path, report):
        if not isinstance(obj, dict):
            report.skip(where, "invalid", "a memory must be a JSON object")
            continue
        text = obj.get("memory", obj.get("text", obj.get("content")))
        meta = mapping(obj.get("metadata"))
        for key in ("agent_id", "app_id"):
            if obj.get(key) is not None:
                meta[key] = str(obj[key])
        ref = str_or_none(obj.get("id")) or str_or_none(obj.get("hash")) or str(text)
        if obj.get("id") is not None:
            meta["mem0_id"] = str(obj["id"])
        try:
            tags = as_tags(obj.get("categories"))
        except ValueError as exc:
            report.skip(where, "invalid", str(exc))
            continue
        yield Item(where=where, ref=ref, content=text, created=obj.get("created_at"),
                   updated=obj.get("updated_at"), session_id=str_or_none(obj.get("run_id")),
                   user_id=str_or_none(obj.get("user_id")), tags=tags, metadata=meta)
