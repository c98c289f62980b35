"""Tool calls written as text, the way small local models write them, parsed tolerantly.

A small instruct model asked to call a tool often answers with the call as *text* content:
``{"name": "memory_search", "arguments": {"query": "vim"}}``, sometimes in a ```json fence, inside
``<tool_call>…</tool_call>`` tags, after a sentence, as ``memory_search(query="vim")``, with a near-miss tool name
(``search``, ``memory-search``) or with a wrong argument type (``"limit": "5"``). :func:`parse_tool_calls` turns such
text into calls against the known tools' JSON schemas and says what it had to fix; text that is no call at all is a
final answer. Pure functions, no model: :mod:`agent_memory.agents.models.tool_mode` uses them.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ParsedCalls", "parse_tool_calls", "coerce_args", "resolve_tool_name", "tools_prompt"]

_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)```", re.S)
_TAGGED = re.compile(r"<(?:tool_call|function_call|tool|call)>\s*(.*?)\s*(?:</(?:tool_call|function_call|tool|call)>|$)", re.S | re.I)
_NAME_KEYS = ("name", "tool", "tool_name", "function", "function_name", "action")
_ARG_KEYS = ("arguments", "args", "parameters", "params", "input", "action_input", "tool_input")
_PY_CALL = re.compile(r"\b([A-Za-z_][\w.-]*)\s*\((.*)\)", re.S)


@dataclass
class ParsedCalls:
    """What :func:`parse_tool_calls` found: ``calls`` as ``(name, args)``, the ``fixes`` it made, and ``error``
    when the text tried to call a tool (``attempted``) but no usable call came out of it."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    attempted: bool = False
    error: str | None = None


def resolve_tool_name(name: str, known: Mapping[str, Any]) -> str | None:
    """``name`` if it is a known tool, else the one it nearly spells (case, ``-``/``.``, a missing ``memory_`` prefix,
    a ``functions.`` prefix or a close misspelling); None when nothing is close."""
    if name in known:
        return name
    plain = name.strip().lower().replace("-", "_").replace(" ", "_")
    plain = plain.rsplit(".", 1)[-1] if "." in plain else plain
    for candidate in (plain, f"memory_{plain}", plain.removeprefix("memory_")):
        if candidate in known:
            return candidate
    close = difflib.get_close_matches(plain, list(known), n=1, cutoff=0.8)
    return close[0] if close else None


def coerce_args(args: Mapping[str, Any], schema: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``args`` fitted to ``schema``'s properties: ``"5"`` → 5 for an integer, ``"true"`` → True, a number → a
    string, one value → a one-item list; keys the schema does not have are dropped. Returns the args and the fixes."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(props, Mapping) or not props:
        return dict(args), []
    out: dict[str, Any] = {}
    fixes: list[str] = []
    for key, value in args.items():
        if key not in props:
            fixes.append(f"dropped unknown argument {key!r}")
            continue
        fixed = _coerce(value, props[key])
        if fixed is not _NO_CHANGE:
            fixes.append(f"{key}: {type(value).__name__} → {type(fixed).__name__}")
            value = fixed
        out[key] = value
    return out, fixes


_NO_CHANGE = object()


def _types(prop: Any) -> list[str]:
    if not isinstance(prop, Mapping):
        return []
    kind = prop.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    found: list[str] = []
    for alt in prop.get("anyOf") or prop.get("oneOf") or []:
        found += _types(alt)
    return found


def _coerce(value: Any, prop: Any) -> Any:
    kinds = _types(prop)
    if not kinds or value is None and "null" in kinds:
        return _NO_CHANGE
    if "integer" in kinds and not isinstance(value, bool):
        if isinstance(value, int):
            return _NO_CHANGE
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and re.fullmatch(r"\s*-?\d+(?:\.0*)?\s*", value):
            return int(float(value))
    if "number" in kinds and not isinstance(value, bool):
        if isinstance(value, (int, float)):
            return _NO_CHANGE
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
    if "boolean" in kinds:
        if isinstance(value, bool):
            return _NO_CHANGE
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no"):
            return value.strip().lower() in ("true", "yes")
    if "string" in kinds:
        if isinstance(value, str):
            return _NO_CHANGE
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        if isinstance(value, list) and "array" not in kinds and all(isinstance(v, str) for v in value):
            return " ".join(value)
    if "array" in kinds:
        if isinstance(value, list):
            return _NO_CHANGE
        if isinstance(value, str) and "," in value and "string" not in kinds:
            return [v.strip() for v in value.split(",") if v.strip()]
        return [value]
    return _NO_CHANGE


def _json_values(text: str) -> list[Any]:
    """Every JSON object or array in ``text``, left to right (a value inside another is not listed again)."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    i = 0
    while i < len(text):
        if text[i] in "{[":
            try:
                value, end = decoder.raw_decode(text, i)
            except ValueError:
                i += 1
                continue
            values.append(value)
            i = end
        else:
            i += 1
    return values


def _as_call(value: Any, known: Mapping[str, Any]) -> tuple[str, Any] | None:
    """``(raw name, raw args)`` of one call-shaped dict, else None."""
    if not isinstance(value, Mapping):
        return None
    if value.get("type") == "function" and isinstance(value.get("function"), Mapping):
        value = value["function"]
    for nkey in _NAME_KEYS:
        name = value.get(nkey)
        if isinstance(name, Mapping):  # {"function": {"name": ..., "arguments": ...}}
            return _as_call(name, known)
        if isinstance(name, str) and name.strip():
            for akey in _ARG_KEYS:
                if akey in value:
                    return name, value[akey]
            return name, {k: v for k, v in value.items() if k != nkey}  # {"name": "memory_search", "query": "vim"}
    if len(value) == 1:  # {"memory_search": {"query": "vim"}}
        ((key, args),) = value.items()
        if isinstance(args, Mapping) and resolve_tool_name(str(key), known):
            return str(key), args
    return None


def _bare_args_tool(value: Any, tools: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The one tool whose arguments ``value`` is (its keys among the tool's properties, its required keys all there):
    small models write ``{"query": "editor for ada", "limit": 10}`` without the tool's name."""
    if not isinstance(value, Mapping) or not value:
        return None
    fits = []
    for name, schema in tools.items():
        props = schema.get("properties") if isinstance(schema, Mapping) else None
        required = schema.get("required") or [] if isinstance(schema, Mapping) else []
        if isinstance(props, Mapping) and set(value) <= set(props) and set(required) <= set(value):
            fits.append(name)
    return fits[0] if len(fits) == 1 else None


def _py_calls(text: str, known: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """``memory_search(query="vim", limit=5)`` written as Python: its literal keyword arguments."""
    out: list[tuple[str, Any]] = []
    for m in _PY_CALL.finditer(text):
        if resolve_tool_name(m.group(1), known) is None:
            continue
        try:
            node = ast.parse(f"f({m.group(2)})", mode="eval").body
        except SyntaxError:
            continue
        if not isinstance(node, ast.Call) or node.args and len(node.args) > 1:
            continue
        try:
            args = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
            if node.args:  # one positional argument: the tool's first required parameter
                args[""] = ast.literal_eval(node.args[0])
        except (ValueError, SyntaxError):
            continue
        out.append((m.group(1), args))
    return out


def _first_required(schema: Any) -> str | None:
    if not isinstance(schema, Mapping):
        return None
    required = schema.get("required") or list((schema.get("properties") or {}).keys())
    return str(required[0]) if required else None


def parse_tool_calls(text: str, tools: Mapping[str, Mapping[str, Any]]) -> ParsedCalls:
    """The tool calls written in ``text``, fitted to ``tools`` (name → parameters JSON schema).

    No call and no attempt at one: a final answer (``calls`` empty, ``error`` None).
    """
    result = ParsedCalls()
    if not text or not tools:
        return result
    pieces = [m.group(1) for m in _TAGGED.finditer(text)] or [m.group(1) for m in _FENCE.finditer(text)] or [text]
    raw: list[tuple[str, Any]] = []
    for piece in pieces:
        for value in _json_values(piece):
            items = value if isinstance(value, list) else [value]
            for v in items:
                call = _as_call(v, tools)
                bare = None if call is not None else _bare_args_tool(v, tools)
                if bare is not None:
                    call = (bare, v)
                    result.fixes.append(f"arguments without a tool name → {bare!r}")
                if call is not None:
                    raw.append(call)
    if not raw:
        raw = _py_calls(text, tools)
    names = "|".join(re.escape(n) for n in tools)
    result.attempted = bool(raw) or bool(re.search(rf'"(?:name|arguments|tool)"\s*:|\b(?:{names})\b\s*[({{]', text))
    if not raw:
        if result.attempted:
            result.error = "the reply looks like a tool call but holds no JSON object with a tool name and arguments"
        return result
    errors: list[str] = []
    for name, args in raw:
        tool = resolve_tool_name(name, tools)
        if tool is None:
            errors.append(f"unknown tool {name!r} (tools: {', '.join(tools)})")
            continue
        if tool != name:
            result.fixes.append(f"tool name {name!r} → {tool!r}")
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
                result.fixes.append("arguments given as a JSON string")
            except ValueError:
                key = _first_required(tools[tool])
                args = {key: args} if key else {}
                result.fixes.append("arguments given as a bare string")
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            errors.append(f"{tool}: arguments must be a JSON object, not {type(args).__name__}")
            continue
        if "" in args:  # a positional argument of a Python-style call
            key = _first_required(tools[tool])
            args = {**{k: v for k, v in args.items() if k}, **({key: args[""]} if key else {})}
        fitted, fixes = coerce_args(args, tools[tool])
        result.fixes += fixes
        result.calls.append((tool, fitted))
    if not result.calls:
        result.error = "; ".join(errors)
    return result


def tools_prompt(tools: Mapping[str, tuple[str, Mapping[str, Any]]], *, optional: int = 2) -> str:
    """The tool list a prompted-mode request gives the model: each tool's required arguments and its first
    ``optional`` optional ones (every argument listed is prompt a small model must read), a one-line description,
    and the one JSON shape a call must take."""
    lines = [
        'Tools (to call one, reply with only a JSON object {"name": "<tool name>", "arguments": {...}}; '
        "the result comes in the next message; when you have what you need, reply with plain text, no JSON):"
    ]
    for name, (description, schema) in tools.items():
        found = schema.get("properties") if isinstance(schema, Mapping) else None
        props: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        required = set(schema.get("required") or []) if isinstance(schema, Mapping) else set()
        shown = [k for k in props if k in required] + [k for k in props if k not in required][:optional]
        args = ", ".join(
            f"{key}: {'/'.join(t for t in _types(props[key]) if t != 'null') or 'any'}{'' if key in required else ' (optional)'}"
            for key in shown
        )
        summary = " ".join((description or "").split())
        summary = summary.split(". ")[0][:120]
        lines.append(f"- {name}({args}): {summary}")
    return "\n".join(lines)
