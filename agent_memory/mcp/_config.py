"""Who the MCP server acts for: identity from flags/env (stdio, loopback HTTP) or per bearer token (HTTP).

Identity never comes from a tool argument. A tokens file maps each bearer token to one identity::

    {"tokens": {"tok-alice": {"user": "alice"}, "sha256:9f86d0…": {"user": "bob", "scope": "user"}}}

(JSON or TOML; a key ``sha256:<hex>`` holds the SHA-256 of the token instead of the token itself).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError

if TYPE_CHECKING:  # pragma: no cover
    from ..backend import Caller

__all__ = ["Identity", "ServerOptions", "TokenMap", "ConfigError", "is_loopback", "TOOL_SETS"]

TOOL_SETS: dict[str, tuple[str, ...]] = {
    "read": ("memory_search", "memory_get", "memory_list", "memory_recall"),
    "capture": ("memory_remember", "memory_supersede"),
    "foreground": ("memory_forget",),
}
SCOPES = ("session", "project", "user", "global")


class ConfigError(InvalidInputError):
    """The MCP server's configuration (flags, env, tokens file) is invalid or unsafe."""


@dataclass(frozen=True, slots=True)
class Identity:
    """The caller a connection acts as, and the scope its writes default to."""

    session_id: str | None = None
    user_id: str | None = None
    default_scope: str | None = None

    def __post_init__(self) -> None:
        if self.default_scope is not None and self.default_scope not in SCOPES:
            raise ConfigError(f"default scope must be one of {', '.join(SCOPES)}, not {self.default_scope!r}")
        if self.default_scope == "user" and not self.user_id:
            raise ConfigError("default scope 'user' needs a user")
        if self.default_scope == "session" and not self.session_id:
            raise ConfigError("default scope 'session' needs a session")

    @property
    def caller(self) -> Caller:
        from ..backend import Caller

        return Caller(session_id=self.session_id, user_id=self.user_id)

    @property
    def write_scope(self) -> str | None:
        return self.default_scope or ("user" if self.user_id else "session" if self.session_id else None)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], where: str) -> Identity:
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: an identity must be an object with user/session/scope")
        unknown = set(data) - {"user", "session", "scope"}
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {', '.join(sorted(unknown))} (user, session, scope)")
        values = {k: data.get(k) for k in ("user", "session", "scope")}
        for k, v in values.items():
            if v is not None and (not isinstance(v, str) or not v.strip()):
                raise ConfigError(f"{where}: {k} must be a non-empty string")
        return cls(session_id=values["session"], user_id=values["user"], default_scope=values["scope"])


class TokenMap:
    """Bearer token → :class:`Identity`; lookups compare in constant time."""

    def __init__(self, entries: Mapping[str, Identity]) -> None:
        self._plain: dict[str, Identity] = {}
        self._hashed: dict[str, Identity] = {}
        for key, ident in entries.items():
            if key.startswith("sha256:"):
                self._hashed[key[7:].lower()] = ident
            elif len(key) < 16:
                raise ConfigError("a token must be at least 16 characters long")
            else:
                self._plain[key] = ident

    def __len__(self) -> int:
        return len(self._plain) + len(self._hashed)

    def lookup(self, token: str) -> Identity | None:
        found: Identity | None = None
        for key, ident in self._plain.items():
            if hmac.compare_digest(key.encode(), token.encode()):
                found = ident
        digest = hashlib.sha256(token.encode()).hexdigest()
        for key, ident in self._hashed.items():
            if hmac.compare_digest(key, digest):
                found = ident
        return found

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TokenMap:
        """Read a tokens file (JSON, or TOML when it ends in ``.toml``)."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
            data: Any = tomllib.loads(text) if p.suffix == ".toml" else json.loads(text)
        except OSError as exc:
            raise ConfigError(f"cannot read tokens file {p}: {exc.strerror or exc}") from None
        except (ValueError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"tokens file {p} is not valid {'TOML' if p.suffix == '.toml' else 'JSON'}: {exc}") from None
        tokens = data.get("tokens") if isinstance(data, dict) else None
        if not isinstance(tokens, dict) or not tokens:
            raise ConfigError(f"tokens file {p} needs a non-empty \"tokens\" object")
        return cls({str(k): Identity.from_mapping(v, f"{p}: token entry") for k, v in tokens.items()})


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(slots=True)
class ServerOptions:
    """Everything ``agent-memory mcp`` is configured with."""

    root: str = ".agent-memory"
    transport: str = "stdio"  # "stdio" | "http"
    tools: tuple[str, ...] = ("read", "capture")
    identity: Identity = field(default_factory=Identity)
    host: str = "127.0.0.1"
    port: int = 8765
    path: str = "/mcp"
    tokens: TokenMap | None = None
    profile: str = "offline"
    max_output_chars: int = 20_000

    def __post_init__(self) -> None:
        if self.transport not in ("stdio", "http"):
            raise ConfigError(f"transport must be stdio or http, not {self.transport!r}")
        unknown = set(self.tools) - set(TOOL_SETS)
        if unknown or not self.tools:
            raise ConfigError(f"tool sets are {', '.join(TOOL_SETS)}; got {', '.join(sorted(unknown)) or 'none'}")
        if self.transport == "http" and not self.tokens and not is_loopback(self.host):
            raise ConfigError(f"refusing to serve HTTP on {self.host} without tokens: bind 127.0.0.1 "
                              "or pass --tokens FILE (a token maps to a user)")
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"port must be 0-65535, not {self.port}")

    @property
    def tool_names(self) -> tuple[str, ...]:
        """Sets are cumulative, as in :mod:`agent_memory.tools`: capture = read + remember, foreground = + forget."""
        order = ("read", "capture", "foreground")
        top = max(order.index(t) for t in self.tools)
        return tuple(name for group in order[:top + 1] for name in TOOL_SETS[group])
