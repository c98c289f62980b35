"""Path rules and text formats of Claude's memory tool (``memory_20250818``), independent of storage.

Every path lives under ``/memories`` and is kept NFKC-normalised, so names that look the same are one name
(composed and decomposed ``café``, ``ﬁle`` and ``file``); ``..``, ``.`` segments (also as look-alikes that NFKC folds
to dots, such as full-width ``．．`` or ``․․``), backslashes, NUL and other control characters, invisible ones
(zero-width, bidirectional overrides and other format characters, default-ignorable code points) and
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
# control, format, surrogate, private use, line and paragraph separators
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})
# Unicode's Default_Ignorable_Code_Point ranges (DerivedCoreProperties.txt) not already in those categories:
# combining grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian variation selectors, variation
# selectors, the half-width Hangul filler, reserved ignorables and tags
_IGNORABLE = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)


class MemoryToolError(InvalidInputError):
    """A memory-tool command was refused; its message is the text the model sees."""


def _invisible(ch: str) -> bool:
    """A character a reader cannot see or that changes nothing visible: control, format (zero-width, bidi, soft
    hyphen), surrogate, private-use, line/paragraph separator, or another default-ignorable code point."""
    return unicodedata.category(ch) in _INVISIBLE_CATEGORIES or any(lo <= ord(ch) <= hi for lo, hi in _IGNORABLE)


def _escaped(ch: str) -> str:
    return f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}"


def _refuse_invisible(path: str) -> None:
    bad = next((ch for ch in path if _invisible(ch)), None)
    if bad is None:
        return
    label = unicodedata.name(bad, "") if unicodedata.category(bad) != "Cs" else "a lone surrogate"
    shown = redact_text("".join(_escaped(ch) if _invisible(ch) else ch for ch in path[:MAX_PATH_CHARS]))
    what = "a control character" if unicodedata.category(bad) == "Cc" else "an invisible control character"
    raise MemoryToolError(
        f"Path {shown} contains {what} (U+{ord(bad):04X}{' ' + label if label else ''}); "
        "file names must be visible text, so that two names that look the same are the same file"
    )


def check_path(path: object, *, name: str = "path") -> str:
    """``path`` normalised (NFKC, no trailing or doubled slash) if it is a legal path under ``/memories``.

    NFKC makes names that look the same one name (``café`` composed or decomposed, ``ﬁle`` and ``file``, full-width
    letters); a name with an invisible character (zero-width, format, control: :func:`_invisible`) is refused."""
    if not isinstance(path, str) or not path:
        raise MemoryToolError(f"Missing or invalid `{name}` parameter: a string path under {ROOT} is required")
    if "\x00" in path:  # the reference implementation's answer to a NUL
        raise MemoryToolError(f"Path {path} would escape {ROOT} directory")
    _refuse_invisible(path)
    path = unicodedata.normalize("NFKC", path)
    _refuse_invisible(path)  # nothing NFKC makes is invisible today; checked again so that stays true
    if not (path == ROOT or path.startswith(ROOT + "/")):
        raise MemoryToolError(f"Path must start with {ROOT}, got: {path}")
    if len(path) > MAX_PATH_CHARS or "\\" in path or _ENCODED.search(path):
        raise MemoryToolError(f"Path {path} would escape {ROOT} directory")
    parts = [p for p in path[len(ROOT) :].split("/") if p]
    if any(p in (".", "..") for p in parts):  # after NFKC: also the look-alikes of dots (``．．``, ``․․``)
        raise MemoryToolError(f"Path {path} would escape {ROOT} directory")
    return "/".join([ROOT, *parts])


def stored_path(path: object, *, name: str = "path") -> str:
    """:func:`check_path` of ``path`` with secrets in its segments redacted: the name the file is kept and found under.

    A secret that only shows across segments (``/memories/https://user:pw@host/x``) is refused instead."""
    check_path(path, name=name)
    assert isinstance(path, str)
    normal = unicodedata.normalize("NFKC", path)  # as check_path keeps it, empty segments still in (``https://``)
    parts = [redact_text(p) for p in normal[len(ROOT) :].split("/")]
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
