"""The renderer's YAML subset: how a record's frontmatter is written, and a fast reader for exactly that.

:func:`yaml_scalar` writes one value (a plain scalar when YAML cannot read it as anything else, else JSON,
which is YAML flow syntax). :func:`fast_load` reads a header made only of ``key: value`` lines and
``key:`` + ``- item`` lists whose every value is written exactly as :func:`yaml_scalar` would write it, and
returns ``None`` for anything else (the caller then uses the safe YAML loader). Its result is the safe
loader's for every header it accepts (``tests/test_frontmatter_fast.py`` compares both on generated and
hostile headers); it only avoids the YAML machinery, which dominates ``reindex``.

The fences (:data:`YAML_FENCE`, :data:`TOML_FENCE`, :data:`JSON_OPEN`, :data:`JSON_CLOSE`) and the header cap
(:data:`MAX_HEADER_BYTES`) live here too, because both readers need them: the python-frontmatter handlers in
:mod:`.yaml_loader` (their ``FM_BOUNDARY``) and the YAML-free fast path of :func:`.frontmatter.split_text`.
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any

__all__ = [
    "JSON_CLOSE",
    "JSON_OPEN",
    "MAX_HEADER_BYTES",
    "TOML_FENCE",
    "YAML_FENCE",
    "FrontmatterError",
    "fast_load",
    "render_header",
    "yaml_scalar",
]

MAX_HEADER_BYTES = 256 * 1024  # the writer does not cap metadata yet: stay above what it accepts

# A fence is a whole line: '---' or '+++' and trailing spaces/tabs; a JSON header opens with a line '{' and closes
# with the first line '}' (either with trailing whitespace). Lines end in LF: the reader normalises CRLF/CR first.
YAML_FENCE = re.compile(r"^---[ \t]*$", re.MULTILINE)
TOML_FENCE = re.compile(r"^\+\+\+[ \t]*$", re.MULTILINE)
JSON_OPEN = re.compile(r"^\{[^\S\n]*$", re.MULTILINE)
JSON_CLOSE = re.compile(r"^\}[^\S\n]*$", re.MULTILINE)


class FrontmatterError(ValueError):
    """Frontmatter that is refused: malformed, hostile (aliases, tags, bombs) or over a limit.

    Defined here, the one frontmatter module every other imports (re-exported by :mod:`.frontmatter_safe`)."""

    def __init__(self, reason: str, fix: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.fix = fix


_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9 _.,/@()'+-]*")
_RESERVED = frozenset("true false yes no on off null none y n".split())
_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")
_QUOTED_AS_IS = re.compile(r"[\x20-\x21\x23-\x5b\x5d-\x7e]*")  # printable ASCII but '"' and '\\': JSON adds only quotes


def yaml_scalar(value: Any) -> str:
    """Render one YAML value: plain when unambiguous, else a JSON string or flow collection.

    JSON is valid YAML flow syntax; characters YAML would reject or fold are escaped.
    """
    if isinstance(value, str) and _PLAIN.fullmatch(value) and value.lower() not in _RESERVED and not value.endswith(" "):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and _QUOTED_AS_IS.fullmatch(value):  # ids, instants: what json.dumps writes, without it
        return f'"{value}"'
    text = json.dumps(value, ensure_ascii=False, default=str, separators=(", ", ": "))
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def render_header(data: dict[str, Any]) -> str:
    """The lines between a record's ``---`` fences: ``key: value``, a non-empty list as ``key:`` + ``- item`` lines."""
    out: list[str] = []
    for key, value in data.items():
        if isinstance(value, list) and value:
            out.append(f"{key}:")
            out.extend(f"- {yaml_scalar(v)}" for v in value)
        else:
            out.append(f"{key}: {yaml_scalar(value)}")
    return "\n".join(out)


# Anything but LF and the characters every YAML reader takes literally: tabs, CR, NEL, line/paragraph
# separators, BOMs, C0/C1 controls, surrogates and non-characters all send the header to the safe loader.
@functools.cache
def _odd() -> re.Pattern[str]:  # compiled on first read (~7 ms): a search process never reads a header
    return re.compile("[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")


_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?")
_MAX_DEPTH = 32  # well inside the safe loader's limits, so a deep value is refused by it, not accepted here
_MAX_NODES = 5_000
_MAX_LINES = 1_000


class _Decline(Exception):
    """Not the renderer's subset: leave it to the safe loader."""


def _plain_json(value: Any, depth: int, budget: list[int]) -> None:
    """Raise :class:`_Decline` for a JSON value YAML would read differently (exponents, NaN, ∞) or a big one."""
    budget[0] -= 1
    if depth > _MAX_DEPTH or budget[0] < 0:
        raise _Decline
    if isinstance(value, float):
        if not math.isfinite(value) or "e" in repr(value):  # YAML 1.1 reads '1e-05' and 'NaN' as strings
            raise _Decline
    elif isinstance(value, dict):
        budget[0] -= len(value)  # keys are YAML nodes too
        for item in value.values():
            _plain_json(item, depth + 1, budget)
    elif isinstance(value, list):
        for item in value:
            _plain_json(item, depth + 1, budget)


def _value(raw: str, budget: list[int]) -> Any:
    budget[0] -= 1
    first = raw[:1]
    if first == '"' and raw[-1:] == '"' and len(raw) > 1 and "\\" not in raw and '"' not in raw[1:-1]:
        return raw[1:-1]  # a double-quoted string without escapes is its text, in YAML as in JSON
    if _PLAIN.fullmatch(raw):
        if raw.lower() in _RESERVED or raw.endswith(" "):
            raise _Decline
        return raw
    if _NUMBER.fullmatch(raw):
        try:
            return float(raw) if "." in raw else int(raw)  # YAML 1.1 reads these decimal forms as Python does
        except ValueError:  # e.g. an integer over Python's digit limit: the safe loader decides
            raise _Decline from None
    if raw == "true" or raw == "false":
        return raw == "true"
    if first not in '"[{':
        raise _Decline
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise _Decline from None
    if yaml_scalar(value) != raw:  # not what the renderer writes for this value (spacing, escapes, key order…)
        raise _Decline
    _plain_json(value, 2, budget)
    return value


def fast_load(header: str) -> dict[str, Any] | None:
    """The mapping of a header written by the renderer, or ``None`` if it is anything else."""
    if _odd().search(header):
        return None
    lines = header.split("\n")
    if len(lines) > _MAX_LINES:
        return None
    data: dict[str, Any] = {}
    budget = [_MAX_NODES]
    items: list[Any] | None = None  # the list being filled by '- ' lines
    try:
        for line in lines:
            if line.startswith("- "):
                if items is None:
                    raise _Decline
                items.append(_value(line[2:], budget))
                continue
            if items is not None and not items:  # 'key:' with no item: YAML null, never written
                raise _Decline
            key, sep, raw = line.partition(": ")
            if not sep:
                if not line.endswith(":"):
                    raise _Decline
                key, raw = line[:-1], ""
            if not _KEY.fullmatch(key) or key.lower() in _RESERVED:
                raise _Decline
            if raw:
                data[key] = _value(raw, budget)
                items = None
            else:
                items = data[key] = []
        if items is not None and not items:
            raise _Decline
    except _Decline:
        return None
    return data
