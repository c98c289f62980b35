"""Safe frontmatter reading: a record file split into its frontmatter and body, never blowing up.

Record files are hand-editable, so their frontmatter is hostile input. The loaders
(:mod:`agent_memory.formats.yaml_loader`: YAML ``---``, TOML ``+++``, JSON ``{ … }`` or JSON between ``---``
fences) refuse YAML anchors, aliases and tags *before* anything is expanded (an alias bomb costs one event),
build values iteratively with a depth and node limit (never a ``RecursionError``), and cap the header's size.
A header exactly as the record renderer writes it is read by :func:`agent_memory.formats.yaml_writer.fast_load`
instead (same result, several times faster; anything else falls back to the safe loader). Text is read leniently
where that cannot change its meaning: a UTF-8 BOM, CRLF or CR-only line ends, trailing spaces after a fence and
blank lines before it. This module imports no YAML library: a search never needs one.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from agent_memory.formats.yaml_writer import FrontmatterError

MAX_HEADER_BYTES = 256 * 1024  # the writer does not cap metadata yet: stay above what it accepts

__all__ = ["FrontmatterError", "Split", "as_text", "split_text"]


def __getattr__(name: str) -> Any:  # the loaders, imported on first use (they pull in PyYAML)
    if name in ("safe_yaml_load", "MAX_DEPTH", "MAX_NODES"):
        import agent_memory.formats.yaml_loader as frontmatter_yaml

        return getattr(frontmatter_yaml, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_YAML_FENCE = re.compile(r"---[ \t]*")
_TOML_FENCE = re.compile(r"\+\+\+[ \t]*")
_OWNER_HINT = re.compile(r"^\W*(?:user_?id|session_?id|scope)\s*[:=]", re.IGNORECASE | re.MULTILINE)


def _load(kind: str, header: str) -> Any:
    if kind == "yaml" and not header.lstrip().startswith("{"):
        from agent_memory.formats.yaml_writer import fast_load

        data = fast_load(header)  # the renderer's own output; None for anything else
        if data is not None:
            return data
    import agent_memory.formats.yaml_loader as fy

    if kind == "toml":
        return fy.toml_load(header)
    if kind == "json" or header.lstrip().startswith("{"):  # JSON between '---' fences is read as JSON
        return fy.json_load(header)
    return fy.safe_yaml_load(header)


class Split:
    """A file split into its frontmatter (loaded) and body; ``body_line`` is where the body starts (1-based)."""

    __slots__ = ("data", "body", "body_line")

    def __init__(self, data: dict[str, Any], body: str, body_line: int) -> None:
        self.data, self.body, self.body_line = data, body, body_line


def _normalise_newlines(text: str) -> str:
    """CRLF or CR-only files (judged by their first line end) become LF; LF files are left exactly as they are."""
    first = re.search(r"\r\n|\r|\n", text)
    if first is None or first.group() == "\n":
        return text
    return text.replace("\r\n", "\n") if first.group() == "\r\n" else text.replace("\r", "\n")


def split_text(text: str) -> Split:
    """Find and load the frontmatter of a record file's text; raise :class:`FrontmatterError` if refused."""
    text = _normalise_newlines(text[1:] if text.startswith("\ufeff") else text)
    lines = text.split("\n")
    skip = 0
    while skip < len(lines) - 1 and not lines[skip].strip() and skip < 64:
        skip += 1
    first = lines[skip]
    kind = "yaml" if _YAML_FENCE.fullmatch(first) else "toml" if _TOML_FENCE.fullmatch(first) else None
    if kind is None and first.rstrip() == "{":
        kind = "json"
    if kind is None:
        if _OWNER_HINT.search("\n".join(lines[:12])):
            raise FrontmatterError("owner or scope fields outside a frontmatter block",
                                   "put them between '---' lines at the very top of the file")
        return Split({}, text, 1)
    fence = _TOML_FENCE if kind == "toml" else _YAML_FENCE
    end = next((i for i in range(skip + 1, len(lines))
                if (lines[i].rstrip() == "}" if kind == "json" else fence.fullmatch(lines[i]))), None)
    if end is None:
        raise FrontmatterError("frontmatter block is not closed", "add the closing fence line ('---', '+++' or '}')")
    header = "\n".join(lines[skip + 1:end])
    if kind == "json":
        header = "{" + header + "}"
    if len(header) > MAX_HEADER_BYTES:
        raise FrontmatterError(f"frontmatter is larger than {MAX_HEADER_BYTES} bytes", "move bulk data into the body")
    data = _load(kind, header) if header.strip() else None
    if data is not None and not isinstance(data, dict):
        raise FrontmatterError("frontmatter is not a mapping", "write 'key: value' lines")
    return Split(dict(data or {}), "\n".join(lines[end + 1:]), end + 2)


def as_text(value: Any) -> str | None:
    """A frontmatter scalar as text (dates and datetimes in ISO form)."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return str(value.isoformat()).replace("+00:00", "Z")
    if isinstance(value, (dt.date, dt.time)):
        return str(value.isoformat())
    return str(value)
