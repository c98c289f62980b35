"""The Alfred Python memory: ``memories.jsonl`` lines with ``timestamp``, ``role``, ``content``, ``importance``,
``tags`` (a list or a comma-separated string), optional ``session_id`` and ``entry_id``, and an ``embedding``.

Embeddings are dropped (their model is not ours; the report counts them). ``role`` is kept as ``metadata.role``.
Alfred's ``session_id`` links a curated memory to the conversation it came from, so it is kept as
``metadata.source_session_id`` and the record stays ``project``-scoped: scoping it to a session that will never
come back would hide it. Pass ``user_id=`` to import the file as one person's memories.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from agent_memory.model.drafts import decode_line
from agent_memory.portable.importers._common import Item, as_tags, not_inside, refuse_link, str_or_none
from agent_memory.portable.report import ImportReport


def file_of(path: Path) -> Path:
    for cand in (path, path / "memories.jsonl", path / "memory" / "memories.jsonl", path / "data" / "memory" / "memories.jsonl"):
        if cand.is_file():
            return cand
    return path


def read(path: Path, report: ImportReport) -> Iterator[Item]:
    refuse_link(path)
    file = file_of(path)
    if file != path:  # found in the directory given: a regular file inside it, never a link out of it
        why = not_inside(path, file)
        if why is not None:
            report.skip(str(file.relative_to(path)), "invalid", why)
            return
    fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW)  # not swapped for a link since the check
    with open(fd, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            line = decode_line(raw)
            where = f"line {n}"
            if line is None:
                report.skip(where, "invalid", "not valid UTF-8")
                continue
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if not isinstance(data, dict):
                    raise ValueError("a line must be a JSON object")
                tags = as_tags(data.get("tags"))
            except (ValueError, RecursionError) as exc:
                report.skip(where, "invalid", " ".join(str(exc).split())[:200])
                continue
            if data.get("embedding") is not None:
                report.drop("embedding")
            content = data.get("content")
            meta = {
                k: v
                for k, v in (
                    ("role", data.get("role")),
                    ("source_session_id", str_or_none(data.get("session_id"))),
                    ("alfred_entry_id", str_or_none(data.get("entry_id"))),
                )
                if v is not None
            }
            ref = (
                str_or_none(data.get("entry_id"))
                or hashlib.sha256(f"{data.get('timestamp')}\0{content}".encode("utf-8", "surrogatepass")).hexdigest()[:16]
            )
            importance = data.get("importance")
            yield Item(
                where=where,
                ref=ref,
                content=content,
                created=data.get("timestamp"),
                scope="project",
                tags=tags,
                importance=importance,
                metadata=meta,
            )
