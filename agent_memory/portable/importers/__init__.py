"""One module per foreign format; :func:`detect` tells them apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from agent_memory.errors import InvalidInputError
from agent_memory.portable.importers import alfred_py, alfred_v2, cuylabs, mem0
from agent_memory.portable.importers._common import refuse_link

Format = Literal["auto", "agent-memory", "alfred-v2", "alfred-py", "cuylabs", "mem0"]
FORMATS: tuple[str, ...] = ("agent-memory", "alfred-v2", "alfred-py", "cuylabs", "mem0")
READERS = {"alfred-v2": alfred_v2.read, "alfred-py": alfred_py.read, "cuylabs": cuylabs.read, "mem0": mem0.read}

__all__ = ["FORMATS", "Format", "READERS", "detect", "is_export_start"]


def is_export_start(first: object) -> bool:
    """Is ``first`` (the first JSON object of a file or stream) the start of our export: its header line, or a
    whole record (an export without its header)?"""
    return isinstance(first, dict) and (first.get("format") == "agent-memory" or {"id", "created", "content"} <= set(first))


def _first_object(path: Path) -> object:
    with open(path, "rb") as fh:  # a bad byte is the importer's to report, per line: it does not hide the format
        head = fh.read(1 << 20).decode("utf-8", "replace")
    stripped = head.lstrip()
    if stripped.startswith("["):
        return "list"
    for line in stripped.splitlines():
        if line.strip():
            try:
                return json.loads(line)
            except ValueError:
                break
    try:
        return json.loads(head)  # one pretty-printed document
    except ValueError:
        return None


def detect(path: Path) -> str:
    """The format of ``path`` (a file or a directory); InvalidInputError when it cannot tell or ``path`` is a
    symbolic link (no importer follows one: see :func:`._common.refuse_link`)."""
    refuse_link(path)
    if path.is_dir():
        if alfred_v2.root_of(path) is not None:
            return "alfred-v2"
        if alfred_py.file_of(path) != path:
            return "alfred-py"
        if cuylabs.files_of(path):
            return "cuylabs"
        raise InvalidInputError(f"{path}: no facts/, episodes/, memories.jsonl or *.md records found; pass a format")
    if path.suffix == ".md":
        return "cuylabs"
    try:
        first = _first_object(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path}: cannot read it ({exc})") from None
    if first == "list":
        return "mem0"
    if isinstance(first, dict):
        if is_export_start(first):
            return "agent-memory"
        if "results" in first or "memories" in first or "memory" in first:
            return "mem0"
        if "content" in first and ("timestamp" in first or "role" in first or "embedding" in first):
            return "alfred-py"
    raise InvalidInputError(f"{path}: cannot tell its format from its first record; pass format= one of {', '.join(FORMATS)}")
