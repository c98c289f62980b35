"""Path rules and text formats of Claude's memory tool (``memory_20250818``), independent of storage.

Every path lives under ``/memories``; ``..``, ``.`` segments (also as look-alikes that NFKC folds to dots, such
as full-width ``．．`` or ``․․``), backslashes, NUL and other control characters, bidirectional overrides and
percent-encoded traversal (``%2e%2e``, ``%2f``) are refused. :func:`stored_path` redacts secrets from each segment,
so a secret in a file name never reaches disk and every command finds the file under the same redacted name. Output texts follow the reference implementation, so a
model sees the same answers whichever backend serves the tool.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping

from agent_memory.errors import InvalidInputError
from agent_memory.redaction.api import contains_secret, redact_text

__all__ = ["ROOT", "MemoryToolError", "check_path", "stored_path", "numbered", "size_text", "listing", "occurrence_lines"]

ROOT = "/memories"
LINE_WIDTH = 6
MAX_PATH_CHARS = 1024
_ENCODED = re.compile(r"%(2e|2f|5c|00|25)", re.IGNORECASE)
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


class MemoryToolError(InvalidInputError):
    """A memory-tool command was refused; its message is the text the model sees."""


def check_path(path: object, *, name: str = "path") -> str:
    """``path`` normalised (no trailing or doubled slash) if it is a legal path under ``/memories``."""
    if not isinstance(path, str) or not path:
        raise MemoryToolError(f"Missing or invalid `{name}` parameter: a string path under {ROOT} is required")
    if not (path == ROOT or path.startswith(ROOT + "/")):
        raise MemoryToolError(f"Path must start with {ROOT}, got: {path}")
    if len(path) > MAX_PATH_CHARS or "\x00" in path or "\\" in path or _ENCODED.search(path):
        raise MemoryToolError(f"Path {path} would escape {ROOT} directory")
    parts = [p for p in path[len(ROOT) :].split("/") if p]
    if any(p in (".", "..") or unicodedata.normalize("NFKC", p) in (".", "..") for p in parts):
        raise MemoryToolError(f"Path {path} would escape {ROOT} directory")
    if any(unicodedata.category(ch) == "Cc" or ch in _BIDI for ch in path):
        raise MemoryToolError(f"Path {path!r} contains a control character")
    return "/".join([ROOT, *parts])


def stored_path(path: object, *, name: str = "path") -> str:
    """:func:`check_path` of ``path`` with secrets in its segments redacted: the name the file is kept and found under.

    A secret that only shows across segments (``/memories/https://user:pw@host/x``) is refused instead."""
    check_path(path, name=name)
    assert isinstance(path, str)
    parts = [redact_text(p) for p in path[len(ROOT) :].split("/")]
    if contains_secret("/".join(parts)):
        raise MemoryToolError("The path looks like it holds a secret; choose a file name without it")
    return "/".join([ROOT, *(p for p in parts if p)])


def numbered(lines: Iterable[str], first: int) -> str:
    return "\n".join(f"{str(first + i).rjust(LINE_WIDTH)}\t{line}" for i, line in enumerate(lines))


def size_text(n: int) -> str:
    """``1.5K``-style sizes, as the reference listing shows them."""
    units = ("B", "K", "M", "G")
    step = 0
    value = float(n)
    while value >= 1024 and step < len(units) - 1:
        value /= 1024
        step += 1
    return f"{int(value)}{units[step]}" if value == int(value) else f"{value:.1f}{units[step]}"


def listing(base: str, files: Mapping[str, int]) -> str:
    """The two-levels-deep listing of directory ``base`` over ``files`` (path → size in bytes)."""
    prefix = base.rstrip("/") + "/"
    entries: dict[str, int] = {}  # relative path ("a/", "a/b.md") -> size
    total = 0
    for path, size in files.items():
        if not path.startswith(prefix):
            continue
        parts = path[len(prefix) :].split("/")
        if any(p.startswith(".") for p in parts[:2]):
            continue
        total += size
        for depth in range(min(len(parts), 2)):
            is_dir = depth < len(parts) - 1
            rel = "/".join(parts[: depth + 1]) + ("/" if is_dir else "")
            entries[rel] = entries.get(rel, 0) + size

    def order(rel: str) -> list[str]:
        return rel.rstrip("/").split("/")

    lines = [f"{size_text(total)}\t{base}"]
    lines += [f"{size_text(entries[rel])}\t{base}/{rel}" for rel in sorted(entries, key=order)]
    return f"Here're the files and directories up to 2 levels deep in {base}, excluding hidden items:\n" + "\n".join(lines)


def occurrence_lines(content: str, needle: str) -> list[int]:
    """1-based line numbers of every (overlapping) occurrence of ``needle`` in ``content``."""
    out: list[int] = []
    pos = content.find(needle)
    while pos != -1:
        out.append(content.count("\n", 0, pos) + 1)
        pos = content.find(needle, pos + 1)
    return out
