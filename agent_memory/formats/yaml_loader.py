"""The hardened frontmatter handlers behind :func:`agent_memory.formats.frontmatter.split_text` (they import PyYAML
and python-frontmatter).

:class:`SafeYAMLHandler`, :class:`SafeJSONHandler` and :class:`SafeTOMLHandler` are python-frontmatter handlers
(subclasses of its ``BaseHandler``): python-frontmatter detects which one a text opens with and splits the header
off on its ``FM_BOUNDARY`` (our fences: a whole ``---``/``+++`` line with trailing spaces or tabs, ``{`` … the first
``}`` line), and their ``load`` is ours. YAML is loaded from parser events, refusing anchors, aliases and tags on
sight, iteratively with a depth and node limit; JSON and TOML values are checked for depth and size after loading;
every header is capped at :data:`~agent_memory.formats.yaml_writer.MAX_HEADER_BYTES` before it is parsed and must
be a mapping. They also work with python-frontmatter's own ``loads``/``dumps``
(``frontmatter.loads(text, handler=SafeYAMLHandler())``); :func:`read` is what ``split_text`` calls, keeping the
body exactly as written (``loads`` strips it).
"""

from __future__ import annotations

import json
import tomllib
from typing import Any

import frontmatter
import yaml
from frontmatter.default_handlers import BaseHandler
from yaml import events as ev
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from agent_memory.formats.yaml_writer import (
    JSON_CLOSE,
    JSON_OPEN,
    MAX_HEADER_BYTES,
    TOML_FENCE,
    YAML_FENCE,
    FrontmatterError,
    render_header,
)

try:  # the C event parser; the pure-Python one behaves the same, only slower
    from yaml.cyaml import CParser as _Parser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    from yaml import Loader as _Parser  # type: ignore[assignment]

MAX_DEPTH = 64
MAX_NODES = 10_000

__all__ = [
    "HANDLERS",
    "MAX_DEPTH",
    "MAX_NODES",
    "SafeJSONHandler",
    "SafeTOMLHandler",
    "SafeYAMLHandler",
    "json_load",
    "read",
    "safe_yaml_load",
    "toml_load",
]


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


def json_load(fm: str) -> Any:
    """JSON frontmatter; refuses over-deep values instead of recursing into them."""
    try:
        return _check_depth(json.loads(fm))
    except RecursionError:
        raise FrontmatterError("frontmatter is nested too deeply", "flatten the frontmatter") from None
    except ValueError as exc:
        raise FrontmatterError(f"unreadable JSON frontmatter: {exc}", "fix the JSON syntax") from None


def toml_load(fm: str) -> Any:
    """``+++`` fences; TOML through the standard library's :mod:`tomllib`."""
    try:
        return _check_depth(tomllib.loads(fm))
    except RecursionError:
        raise FrontmatterError("frontmatter is nested too deeply", "flatten the frontmatter") from None
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        raise FrontmatterError(f"unreadable TOML frontmatter: {exc}", "fix the TOML syntax") from None


_NOT_CLOSED = ("frontmatter block is not closed", "add the closing fence line ('---', '+++' or '}')")


class _SafeHandler(BaseHandler):
    """python-frontmatter's detect and split on our fences; the header comes back without the newlines around it
    and the content exactly as written after the closing fence line (its line end included)."""

    def split(self, text: str) -> tuple[str, str]:
        try:
            fm, content = super().split(text)
        except ValueError:  # no closing fence (a FrontmatterError is a ValueError too: python-frontmatter's
            raise FrontmatterError(*_NOT_CLOSED) from None  # ``parse`` then reads the text as having none)
        return fm[1:-1], content

    def load(self, fm: str, **kwargs: object) -> dict[str, Any]:
        """The header as a mapping (``{}`` when blank); refused if over the size cap, hostile or not a mapping."""
        if len(fm) > MAX_HEADER_BYTES:
            raise FrontmatterError(f"frontmatter is larger than {MAX_HEADER_BYTES} bytes", "move bulk data into the body")
        data = self._parse(fm) if fm.strip() else None
        if data is not None and not isinstance(data, dict):
            raise FrontmatterError("frontmatter is not a mapping", "write 'key: value' lines")
        return dict(data or {})

    def _parse(self, fm: str) -> Any:
        raise NotImplementedError


class SafeYAMLHandler(_SafeHandler):
    """``---`` fences; YAML through :func:`safe_yaml_load`, or JSON when the header is a ``{ … }`` object."""

    FM_BOUNDARY = YAML_FENCE
    START_DELIMITER = END_DELIMITER = "---"

    def _parse(self, fm: str) -> Any:
        return json_load(fm) if fm.lstrip().startswith("{") else safe_yaml_load(fm)

    def export(self, metadata: dict[str, object], **kwargs: object) -> str:
        """The renderer's YAML subset (what :func:`read` takes without a YAML parser)."""
        return render_header(dict(metadata))


class SafeTOMLHandler(_SafeHandler):
    """``+++`` fences; TOML through :func:`toml_load` (read only: the standard library writes no TOML)."""

    FM_BOUNDARY = TOML_FENCE
    START_DELIMITER = END_DELIMITER = "+++"

    def _parse(self, fm: str) -> Any:
        return toml_load(fm)

    def export(self, metadata: dict[str, object], **kwargs: object) -> str:
        raise FrontmatterError("TOML frontmatter is read, not written", "write YAML frontmatter")


class SafeJSONHandler(_SafeHandler):
    """A ``{`` line opens the header and the first ``}`` line closes it; JSON through :func:`json_load`."""

    FM_BOUNDARY = JSON_OPEN
    START_DELIMITER = END_DELIMITER = ""

    def split(self, text: str) -> tuple[str, str]:
        opened = JSON_OPEN.match(text)
        closed = None if opened is None else JSON_CLOSE.search(text, opened.end())
        if opened is None or closed is None:
            raise FrontmatterError(*_NOT_CLOSED)
        return "{" + text[opened.end() + 1 : closed.start()][:-1] + "}", text[closed.end() :]

    def _parse(self, fm: str) -> Any:
        return json_load(fm)

    def export(self, metadata: dict[str, object], **kwargs: object) -> str:
        text = json.dumps(metadata, ensure_ascii=False, indent=2, default=str)
        return text if metadata else "{\n}"  # the braces on lines of their own: they are the fences


HANDLERS: tuple[_SafeHandler, ...] = (SafeYAMLHandler(), SafeJSONHandler(), SafeTOMLHandler())


def read(text: str) -> tuple[dict[str, Any], str] | None:
    """``(frontmatter, content after the closing fence line)`` of a text that opens with a header, else ``None``.

    python-frontmatter picks the handler (``detect_format``) and the handler splits and loads."""
    handler = frontmatter.detect_format(text, HANDLERS)
    if handler is None:
        return None
    header, content = handler.split(text)
    return handler.load(header), content
