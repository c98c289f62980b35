"""Tool-argument normalisation: accept the names models commonly use, reject the rest with the right call shown.

Models misname arguments (``q`` for ``query``, ``top_k`` for ``limit``) and tend to abandon a tool after one
validation error, so every tool accepts a few aliases, and a wrong call is answered with an error that spells
out the correct call instead of a bare schema failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_memory.errors import InvalidInputError

__all__ = ["Param", "ToolArgumentError", "normalise_args"]


class ToolArgumentError(InvalidInputError):
    """A tool call named unknown or missing arguments, or gave one a value of the wrong type."""


@dataclass(frozen=True, slots=True)
class Param:
    """One tool parameter: its JSON type, aliases and bounds."""

    name: str
    type: str  # "string" | "integer" | "number" | "array" | "boolean"
    description: str
    required: bool = False
    aliases: tuple[str, ...] = ()
    enum: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None
    default: Any = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "description": self.description}
        if self.type == "array":
            out["items"] = {"type": "string"}
        if self.enum:
            out["enum"] = list(self.enum)
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        if self.default is not None:
            out["default"] = self.default
        return {**out, **self.extra}


def usage(tool: str, params: tuple[Param, ...]) -> str:
    """``tool(query: string, limit?: integer)``: the correct call shape, for error messages."""
    parts = [f"{p.name}{'' if p.required else '?'}: {p.type}" for p in params]
    return f"{tool}({', '.join(parts)})"


def _coerce(tool: str, p: Param, value: Any, params: tuple[Param, ...]) -> Any:
    def bad(why: str) -> ToolArgumentError:
        return ToolArgumentError(f"{tool}: argument {p.name!r} {why}. Call it as {usage(tool, params)}")

    if p.type == "string":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise bad(f"must be a string, not {type(value).__name__}")
        if p.enum and value not in p.enum:
            raise bad(f"must be one of {', '.join(p.enum)}, not {value!r}")
        return value
    if p.type == "integer":
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value.strip())
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad(f"must be an integer, not {value!r}")
        if p.minimum is not None and value < p.minimum or p.maximum is not None and value > p.maximum:
            raise bad(f"must be between {p.minimum} and {p.maximum}, not {value}")
        return value
    if p.type == "number":
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                raise bad(f"must be a number, not {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise bad(f"must be a number, not {value!r}")
        if p.minimum is not None and value < p.minimum or p.maximum is not None and value > p.maximum:
            raise bad(f"must be between {p.minimum} and {p.maximum}, not {value}")
        return float(value)
    if p.type == "boolean":
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if not isinstance(value, bool):
            raise bad(f"must be true or false, not {value!r}")
        return value
    if isinstance(value, str):  # "a, b" or a single tag for a list
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise bad("must be a list of strings")
    return value


def normalise_args(tool: str, params: tuple[Param, ...], arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """Map aliases to canonical names, coerce obvious types, fill defaults; raise a helpful error otherwise."""
    given = dict(arguments or {})
    if not isinstance(arguments, (Mapping, type(None))):
        raise ToolArgumentError(f"{tool}: arguments must be an object. Call it as {usage(tool, params)}")
    by_name: dict[str, Param] = {}
    for p in params:
        by_name[p.name.lower()] = p
        for alias in p.aliases:
            by_name[alias.lower()] = p
    out: dict[str, Any] = {}
    unknown: list[str] = []
    for key, value in given.items():
        found = by_name.get(str(key).lower().replace("-", "_"))
        if found is None:
            unknown.append(str(key))
            continue
        p = found
        if value is None:
            continue
        if p.name in out:
            raise ToolArgumentError(
                f"{tool}: {key!r} and another name both give {p.name!r}; pass it once. Call it as {usage(tool, params)}"
            )
        out[p.name] = _coerce(tool, p, value, params)
    if unknown:
        hints = ", ".join(sorted(unknown))
        raise ToolArgumentError(f"{tool}: unknown argument(s) {hints}. Call it as {usage(tool, params)}")
    missing = [p.name for p in params if p.required and p.name not in out]
    if missing:
        raise ToolArgumentError(f"{tool}: missing required argument(s) {', '.join(missing)}. Call it as {usage(tool, params)}")
    for p in params:
        if p.name not in out and p.default is not None:
            out[p.name] = p.default
    return out
