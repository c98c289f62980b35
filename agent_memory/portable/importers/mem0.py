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

from agent_memory.model.drafts import decode_line
from agent_memory.portable.importers._common import Item, as_tags, mapping, refuse_link, str_or_none
from agent_memory.portable.report import ImportReport


def _objects(path: Path, report: ImportReport) -> Iterator[tuple[str, Any]]:
    data = path.read_bytes()
    text = data.decode("utf-8", "replace")  # strict per line below; a JSON document must be valid UTF-8 as a whole
    stripped = text.lstrip()
    doc: Any = None
    whole = stripped.startswith("[") or (stripped.startswith("{") and "\n{" not in stripped.rstrip())
    if whole and "\ufffd" in text and decode_line(data) is None:
        report.skip(path.name, "invalid", "not valid UTF-8 (a JSON document is read whole; JSONL is read per line)")
        return
    if stripped.startswith("["):
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError) as exc:
            report.skip(path.name, "invalid", f"not JSON: {' '.join(str(exc).split())[:200]}")
            return
    elif whole:  # one JSON document (possibly pretty-printed), or one JSONL line
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):
            doc = None
        if isinstance(doc, dict) and ("memory" in doc or "text" in doc):
            doc = [doc]
    if doc is None:  # JSONL
        for n, raw in enumerate(data.splitlines(), 1):
            line = decode_line(raw)
            if line is None:
                report.skip(f"line {n}", "invalid", "not valid UTF-8")
            elif line.strip():
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
    refuse_link(path)
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
        yield Item(
            where=where,
            ref=ref,
            content=text,
            created=obj.get("created_at"),
            updated=obj.get("updated_at"),
            session_id=str_or_none(obj.get("run_id")),
            user_id=str_or_none(obj.get("user_id")),
            tags=tags,
            metadata=meta,
        )
