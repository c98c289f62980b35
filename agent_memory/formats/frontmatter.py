"""Safe frontmatter reading: a record file split into its frontmatter and body, never blowing up.

Record files are hand-editable, so their frontmatter is hostile input. python-frontmatter finds the header, with
our hardened handlers (:mod:`agent_memory.formats.yaml_loader`: YAML ``---``, TOML ``+++``, JSON ``{ … }`` or JSON
between ``---`` fences), which refuse YAML anchors, aliases and tags *before* anything is expanded (an alias bomb
costs one event), build values iteratively with a depth and node limit (never a ``RecursionError``), and cap the
header's size. Text is read leniently where that cannot change its meaning: a UTF-8 BOM, CRLF or CR-only line
ends, trailing spaces after a fence and blank lines before it. The body is returned exactly as written after the
closing fence line, with ``body_line`` the 1-based line it starts on.

One fast path stays: a header exactly as the record renderer writes it (or a blank one) is read by
:func:`agent_memory.formats.yaml_writer.fast_load`, on the same fence as the YAML handler's ``FM_BOUNDARY``, without
importing python-frontmatter or PyYAML; anything else goes to the handlers. It stays because one run measured that
it matters (3,000 rendered record files, 2 shared cores at load ≈ 5, ``docs/benchmarks.md``): ≈ 34 µs a file on the
fast path against ≈ 88–103 µs through the handlers (python-frontmatter ``detect_format`` + split + the safe YAML
loader), 2.6–3× slower, ≈ 0.2 s more per 3,000 files on a reindex; and importing python-frontmatter with PyYAML
costs a cold process ≈ 28–32 ms, which a search that re-reads a changed file never pays
(``tests/test_store_imports.py``). ``tests/test_frontmatter.py`` checks that both paths give the same result.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from agent_memory.formats.yaml_writer import MAX_HEADER_BYTES, YAML_FENCE, FrontmatterError, fast_load

__all__ = ["MAX_HEADER_BYTES", "FrontmatterError", "Split", "as_text", "split_text"]


def __getattr__(name: str) -> Any:  # the loaders, imported on first use (they pull in PyYAML)
    if name in ("safe_yaml_load", "MAX_DEPTH", "MAX_NODES"):
        import agent_memory.formats.yaml_loader as frontmatter_yaml

        return getattr(frontmatter_yaml, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_OWNER_HINT = re.compile(r"^\W*(?:user_?id|session_?id|scope)\s*[:=]", re.IGNORECASE | re.MULTILINE)
_MAX_BLANK_LINES = 64  # blank lines skipped before the opening fence


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


def _skip_blank_lines(text: str) -> tuple[int, int]:
    """``(offset, count)`` of the blank lines (whitespace only, at most 64) before the first other line."""
    start = count = 0
    while count < _MAX_BLANK_LINES:
        end = text.find("\n", start)
        if end < 0 or text[start:end].strip():
            break
        start, count = end + 1, count + 1
    return start, count


def _fast(text: str) -> tuple[dict[str, Any], str] | None:
    """``(data, content)`` when the header is the renderer's own output (or blank), else ``None``: the split the
    YAML handler makes (its fence), read without YAML."""
    opened = YAML_FENCE.match(text)
    closed = None if opened is None else YAML_FENCE.search(text, opened.end())
    if opened is None or closed is None:
        return None
    header = text[opened.end() + 1 : closed.start()][:-1]
    if len(header) > MAX_HEADER_BYTES:
        return None
    data = fast_load(header) if header.strip() else {}
    return None if data is None else (data, text[closed.end() :])


def split_text(text: str) -> Split:
    """Find and load the frontmatter of a record file's text; raise :class:`FrontmatterError` if refused."""
    text = _normalise_newlines(text[1:] if text.startswith("\ufeff") else text)
    offset, skipped = _skip_blank_lines(text)
    rest = text[offset:]
    found = _fast(rest)
    if found is None:
        from agent_memory.formats.yaml_loader import read

        found = read(rest)
    if found is None:
        if _OWNER_HINT.search("\n".join(text.split("\n", 12)[:12])):
            raise FrontmatterError(
                "owner or scope fields outside a frontmatter block", "put them between '---' lines at the very top of the file"
            )
        return Split({}, text, 1)
    data, content = found
    fence_line = rest.count("\n", 0, len(rest) - len(content))  # the closing fence's line, 0-based, in ``rest``
    return Split(data, content[1:], skipped + fence_line + 2)


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
