"""Safe frontmatter reading: python-frontmatter handlers that can never be made to blow up.

Record files are hand-editable, so their frontmatter is hostile input. The handlers here
(YAML ``---``, TOML ``+++``, JSON ``{ … }`` or JSON between ``---`` fences) are
:mod:`frontmatter` handlers whose loaders refuse YAML anchors, aliases and tags *before*
anything is expanded (an alias bomb costs one event), build values iteratively with a
depth and node limit (never a ``RecursionError``), and cap the header's size. Text is
read leniently where that cannot change its meaning: a UTF-8 BOM, CRLF or CR-only line
ends, trailing spaces after a fence and blank lines before it.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import tomllib
from typing import Any

import yaml
from frontmatter.default_handlers import BaseHandler, JSONHandler, YAMLHandler
from yaml import events as ev
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

try:  # the C event parser; the pure-Python one behaves the same, only slower
    from yaml.cyaml import CParser as _Parser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    from yaml import Loader as _Parser  # type: ignore[assignment]

MAX_HEADER_BYTES = 256 * 1024  # the writer does not cap metadata yet: stay above what it accepts
MAX_DEPTH = 64
MAX_NODES = 10_000

__all__ = ["FrontmatterError", "SafeJSONHandler", "SafeTOMLHandler", "SafeYAMLHandler", "Split", "split_text",
           "safe_yaml_load"]


class FrontmatterError(ValueError):
    """Frontmatter that is refused: malformed, hostile (aliases, tags, bombs) or over a limit."""

    def __init__(self, reason: str, fix: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.fix = fix


_RESOLVER = Resolver()
_CONSTRUCTOR = SafeConstructor()
_T = "tag:yaml.org,2002:"
_BUILD = {
    _T + "null": lambda n: None,
    _T + "bool": _CONSTRUCTOR.construct_yaml_bool,
    _T + "int": _CONSTRUCTOR.construct_yaml_int,
    _T + "float": _CONSTRUCTOR.construct_yaml_float,
    _T + "timestamp": _CONSTRUCTOR.construct_yaml_timestamp,
}
_UNSET = object()
_NO_ALIAS = "remove YAML anchors (&), aliases (*) and tags (!); write the values out plainly"


def _scalar(event: Any) -> Any:
    if event.tag is not None:
        raise FrontmatterError("YAML tags (!) are not allowed", _NO_ALIAS)
    if not event.implicit[0]:  # quoted or block scalar: always a string
        return event.value
    tag = _RESOLVER.resolve(ScalarNode, event.value, (True, False))  # type: ignore[no-untyped-call]
    build = _BUILD.get(tag)
    if build is None:
        return event.value
    try:
        return build(ScalarNode(tag, event.value))
    except (ValueError, OverflowError, TypeError):
        raise FrontmatterError("unreadable YAML value (a number or date out of range)", "quote the value") from None


def safe_yaml_load(text: str, *, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> Any:
    """Load one YAML document from parser events, refusing anchors, aliases and tags on sight.

    Iterative (no recursion), so nesting depth and node count are checked, never overflowed."""
    parser = _Parser(text)
    stack: list[list[Any]] = []  # [container, pending mapping key]
    root: Any = _UNSET
    nodes = documents = 0

    def add(value: Any) -> None:
        nonlocal root
        if not stack:
            root = value
            return
        top = stack[-1]
        if isinstance(top[0], list):
            top[0].append(value)
        elif top[1] is _UNSET:
            if isinstance(value, (dict, list)):
                raise FrontmatterError("YAML mapping keys must be plain values", "use plain text keys")
            top[1] = value
        else:
            top[0][top[1]] = value
            top[1] = _UNSET

    try:
        while (event := parser.get_event()) is not None:
            kind = type(event)
            if kind is ev.AliasEvent:
                raise FrontmatterError("YAML aliases (*) are not allowed", _NO_ALIAS)
            if kind in (ev.ScalarEvent, ev.MappingStartEvent, ev.SequenceStartEvent):
                nodes += 1
                if nodes > max_nodes:
                    raise FrontmatterError(f"frontmatter has more than {max_nodes} values", "move bulk data into the body")
                if event.anchor is not None:  # type: ignore[attr-defined]
                    raise FrontmatterError("YAML anchors (&) are not allowed", _NO_ALIAS)
                if kind is ev.ScalarEvent:
                    add(_scalar(event))
                    continue
                if event.tag is not None:  # type: ignore[attr-defined]
                    raise FrontmatterError("YAML tags (!) are not allowed", _NO_ALIAS)
                if len(stack) >= max_depth:
                    raise FrontmatterError(f"frontmatter is nested deeper than {max_depth} levels", "flatten the frontmatter")
                stack.append([{} if kind is ev.MappingStartEvent else [], _UNSET])
            elif kind in (ev.MappingEndEvent, ev.SequenceEndEvent):
                add(stack.pop()[0])
            elif kind is ev.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    raise FrontmatterError("frontmatter holds more than one YAML document", "keep one document")
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"unreadable frontmatter: {str(exc).splitlines()[0]}", "fix the YAML syntax") from None
    except TypeError as exc:  # an unhashable key (e.g. a sequence used as a key)
        raise FrontmatterError(f"unreadable frontmatter: {exc}", "use plain text keys") from None
    finally:
        dispose = getattr(parser, "dispose", None)
        if dispose is not None:
            dispose()
    return None if root is _UNSET else root


def _check_depth(value: Any, max_depth: int = MAX_DEPTH) -> Any:
    """Refuse over-deep or over-large JSON/TOML values (iteratively)."""
    todo = [(value, 1)]
    nodes = 0
    while todo:
        item, depth = todo.pop()
        nodes += 1
        if depth > max_depth or nodes > MAX_NODES:
            raise FrontmatterError("frontmatter is nested too deeply or too large", "flatten the frontmatter")
        if isinstance(item, dict):
            todo.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            todo.extend((v, depth + 1) for v in item)
    return value


class SafeYAMLHandler(YAMLHandler):
    """``---`` fences; YAML through :func:`safe_yaml_load` (JSON between the fences is read as JSON)."""

    FM_BOUNDARY = re.compile(r"^---[ \t]*$", re.MULTILINE)

    def load(self, fm: str, **kwargs: object) -> Any:
        if fm.lstrip().startswith("{"):
            return SafeJSONHandler().load(fm)
        return safe_yaml_load(fm)


class SafeJSONHandler(JSONHandler):
    """JSON frontmatter; refuses over-deep values instead of recursing into them."""

    def load(self, fm: str, **kwargs: object) -> Any:
        try:
            return _check_depth(json.loads(fm))
        except RecursionError:
            raise FrontmatterError("frontmatter is nested too deeply", "flatten the frontmatter") from None
        except ValueError as exc:
            raise FrontmatterError(f"unreadable JSON frontmatter: {exc}", "fix the JSON syntax") from None


class SafeTOMLHandler(BaseHandler):
    """``+++`` fences; TOML through the standard library's :mod:`tomllib`."""

    FM_BOUNDARY = re.compile(r"^\+\+\+[ \t]*$", re.MULTILINE)
    START_DELIMITER = END_DELIMITER = "+++"

    def load(self, fm: str, **kwargs: object) -> Any:
        try:
            return _check_depth(tomllib.loads(fm))
        except RecursionError:
            raise FrontmatterError("frontmatter is nested too deeply", "flatten the frontmatter") from None
        except (tomllib.TOMLDecodeError, ValueError) as exc:
            raise FrontmatterError(f"unreadable TOML frontmatter: {exc}", "fix the TOML syntax") from None


_YAML, _TOML, _JSON = SafeYAMLHandler(), SafeTOMLHandler(), SafeJSONHandler()
_OWNER_HINT = re.compile(r"^\W*(?:user_?id|session_?id|scope)\s*[:=]", re.IGNORECASE | re.MULTILINE)


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
    handler: BaseHandler | None = None
    for candidate in (_YAML, _TOML):
        assert candidate.FM_BOUNDARY is not None
        if candidate.FM_BOUNDARY.fullmatch(first):
            handler = candidate
    if handler is None and first.rstrip() == "{":
        handler = _JSON
    if handler is None:
        if _OWNER_HINT.search("\n".join(lines[:12])):
            raise FrontmatterError("owner or scope fields outside a frontmatter block",
                                   "put them between '---' lines at the very top of the file")
        return Split({}, text, 1)
    assert handler.FM_BOUNDARY is not None
    end = next((i for i in range(skip + 1, len(lines))
                if (lines[i].rstrip() == "}" if handler is _JSON else handler.FM_BOUNDARY.fullmatch(lines[i]))), None)
    if end is None:
        raise FrontmatterError("frontmatter block is not closed", "add the closing fence line ('---', '+++' or '}')")
    header = "\n".join(lines[skip + 1:end])
    if handler is _JSON:
        header = "{" + header + "}"
    if len(header) > MAX_HEADER_BYTES:
        raise FrontmatterError(f"frontmatter is larger than {MAX_HEADER_BYTES} bytes", "move bulk data into the body")
    data = handler.load(header) if header.strip() else None
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
