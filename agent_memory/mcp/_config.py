"""Who the MCP server acts for: identity from flags/env (stdio, loopback HTTP) or per bearer token (HTTP).

Identity never comes from a tool argument. A tokens file maps each bearer token to one identity::

    {"tokens": {"tok-alice": {"user": "alice"}, "sha256:9f86d0…": {"user": "bob", "scope": "user", "access": "read"}}}

(JSON or TOML; a key ``sha256:<64 hex digits>`` holds the SHA-256 of the token instead of the token itself).

``access`` limits what a connection may change: ``read`` (no writes), ``own`` (writes, supersedes and forgets only
its own user/session records) or ``shared`` (also project and global records, which every user reads). A tokens
file whose tokens act for more than one identity defaults to ``own``; a single identity defaults to ``shared``.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_memory.errors import AgentMemoryError, InvalidInputError

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.base import Caller

__all__ = ["ACCESS", "AccessDeniedError", "Identity", "ServerOptions", "TokenMap", "ConfigError", "is_loopback", "TOOL_SETS"]

TOOL_SETS: dict[str, tuple[str, ...]] = {
    "read": ("memory_search", "memory_get", "memory_list", "memory_recall", "memory_links"),
    "capture": ("memory_remember", "memory_supersede", "memory_curate"),
    "foreground": ("memory_forget",),
}
SCOPES = ("session", "project", "user", "global")
SHARED_SCOPES = ("project", "global")
ACCESS = ("read", "own", "shared")
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


class ConfigError(InvalidInputError):
    """The MCP server's configuration (flags, env, tokens file) is invalid or unsafe."""


class AccessDeniedError(AgentMemoryError, PermissionError):
    """The connection's access (``read``, ``own``) does not allow this write."""


def _token_chars_ok(token: str) -> bool:
    """Printable ASCII without spaces: what an ``Authorization: Bearer`` header can carry (RFC 6750)."""
    return bool(token) and all(33 <= ord(c) <= 126 for c in token)


@dataclass(frozen=True, slots=True)
class Identity:
    """The caller a connection acts as, the scope its writes default to, and what it may change (``access``)."""

    session_id: str | None = None
    user_id: str | None = None
    default_scope: str | None = None
    access: str = "shared"
    namespace: str | None = None  # the token's namespace (docs/namespaces.md): its writes land there; never a tool argument
    isolation: str | None = None  # what else it reads: full, inherited (default) or shared

    def __post_init__(self) -> None:
        from agent_memory.model.scopes import check_isolation, check_namespace

        try:
            object.__setattr__(self, "namespace", check_namespace(self.namespace) or None)
            object.__setattr__(self, "isolation", check_isolation(self.isolation))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if self.default_scope is not None and self.default_scope not in SCOPES:
            raise ConfigError(f"default scope must be one of {', '.join(SCOPES)}, not {self.default_scope!r}")
        if self.default_scope == "user" and not self.user_id:
            raise ConfigError("default scope 'user' needs a user")
        if self.default_scope == "session" and not self.session_id:
            raise ConfigError("default scope 'session' needs a session")
        if self.access not in ACCESS:
            raise ConfigError(f"access must be one of {', '.join(ACCESS)}, not {self.access!r}")
        if self.access == "own" and self.default_scope in SHARED_SCOPES:
            raise ConfigError(
                f"default scope {self.default_scope!r} writes records every user reads: it needs "
                "access 'shared' (access 'own' writes only the caller's user/session records)"
            )

    def check_writable(self, tool: str) -> None:
        """Refuse (:class:`AccessDeniedError`) any write from a read-only identity."""
        if self.access == "read":
            raise AccessDeniedError(f"{tool}: this connection is read-only (access 'read'); it cannot change memory")

    def check_write(self, tool: str, scope: str | None) -> None:
        """Refuse (:class:`AccessDeniedError`) a write of a ``scope`` record this identity may not make."""
        self.check_writable(tool)
        if self.access == "shared":
            return
        if scope in SHARED_SCOPES:
            raise AccessDeniedError(
                f"{tool}: a {scope} record is shared with every user; changing it needs access "
                "'shared' (this connection may change only its own user/session records)"
            )
        if scope is None or (scope == "user" and not self.user_id) or (scope == "session" and not self.session_id):
            raise AccessDeniedError(
                f"{tool}: this connection may write only its own records; give scope 'user' or 'session' (of an identity that has one)"
            )

    @property
    def caller_key(self) -> tuple[str | None, ...]:
        return (self.user_id, self.session_id, self.namespace, self.isolation)

    @property
    def caller(self) -> Caller:
        from agent_memory.backends.base import Caller

        return Caller(session_id=self.session_id, user_id=self.user_id, namespace=self.namespace, isolation=self.isolation)  # type: ignore[arg-type]

    @property
    def write_scope(self) -> str | None:
        return self.default_scope or ("user" if self.user_id else "session" if self.session_id else None)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], where: str, default_access: str = "shared") -> Identity:
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: an identity must be an object with user/session/scope/access")
        fields = ("user", "session", "scope", "access", "namespace", "isolation")
        unknown = set(data) - set(fields)
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {', '.join(sorted(map(str, unknown)))} ({', '.join(fields)})")
        values = {k: data.get(k) for k in fields}
        for k, v in values.items():
            if v is not None and (not isinstance(v, str) or not v.strip()):
                raise ConfigError(f"{where}: {k} must be a non-empty string")
        try:
            return cls(
                session_id=values["session"],
                user_id=values["user"],
                default_scope=values["scope"],
                access=values["access"] or default_access,
                namespace=values["namespace"],
                isolation=values["isolation"],
            )
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None


class TokenMap:
    """Bearer token → :class:`Identity`; lookups compare in constant time.

    Every entry is checked when the map is built: a plain token is printable ASCII (what an HTTP header carries)
    of at least 16 characters, a ``sha256:`` key holds exactly 64 hex digits. Errors name the entry by its
    position (and user), never by the token.
    """

    def __init__(self, entries: Mapping[str, Identity], where: str = "tokens") -> None:
        self._plain: dict[bytes, Identity] = {}
        self._hashed: dict[bytes, Identity] = {}
        for n, (key, ident) in enumerate(entries.items(), 1):
            label = _entry_label(where, n, ident)
            if not isinstance(key, str):
                raise ConfigError(f"{label}: a token must be a string")
            if key.startswith("sha256:"):
                digest = key[7:]
                if not _HEX64.fullmatch(digest):
                    raise ConfigError(
                        f"{label}: a 'sha256:' key must be followed by exactly 64 hex digits "
                        "(the SHA-256 of the token, e.g. from `printf %s TOKEN | sha256sum`)"
                    )
                slot, table = digest.lower().encode("ascii"), self._hashed
            elif not _token_chars_ok(key):
                raise ConfigError(
                    f"{label}: a token must be printable ASCII without spaces (letters, digits, "
                    "punctuation): HTTP cannot send other characters in an Authorization header"
                )
            elif len(key) < 16:
                raise ConfigError(f"{label}: a token must be at least 16 characters long")
            else:
                slot, table = key.encode("ascii"), self._plain
            if slot in table:
                raise ConfigError(f"{label}: the same token is listed twice")
            table[slot] = ident
        for raw, ident in self._plain.items():
            twin = self._hashed.get(hashlib.sha256(raw).hexdigest().encode("ascii"))
            if twin is not None and twin != ident:
                raise ConfigError(f"{where}: one token is listed both plain and as sha256: with different identities")

    def __len__(self) -> int:
        return len(self._plain) + len(self._hashed)

    @property
    def identities(self) -> list[Identity]:
        return [*self._plain.values(), *self._hashed.values()]

    @property
    def multi_user(self) -> bool:
        """Whether the tokens act for more than one caller (user, session): then each must not rank by the others."""
        return len({i.caller_key for i in self.identities}) > 1

    def lookup(self, token: str) -> Identity | None:
        if len(token) < 16 or not _token_chars_ok(token):  # no plain token can be so; a hashed one may not be either
            return None
        raw = token.encode("ascii")
        found: Identity | None = None
        for key, ident in self._plain.items():
            if hmac.compare_digest(key, raw):
                found = ident
        digest = hashlib.sha256(raw).hexdigest().encode("ascii")
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
        except UnicodeDecodeError:
            raise ConfigError(f"tokens file {p} is not UTF-8 text") from None
        except (ValueError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"tokens file {p} is not valid {'TOML' if p.suffix == '.toml' else 'JSON'}: {exc}") from None
        tokens = data.get("tokens") if isinstance(data, dict) else None
        if not isinstance(tokens, dict) or not tokens:
            raise ConfigError(f'tokens file {p} needs a non-empty "tokens" object')
        callers = {(v.get("user"), v.get("session")) if isinstance(v, Mapping) else None for v in tokens.values()}
        default_access = "own" if len(callers) > 1 else "shared"  # several users: each changes only its own records
        entries: dict[str, Identity] = {}
        for n, (k, v) in enumerate(tokens.items(), 1):
            who = v.get("user") if isinstance(v, Mapping) else None
            where = f"{p}: token entry #{n}" + (f" (user {who!r})" if isinstance(who, str) else "")
            entries[str(k)] = Identity.from_mapping(v, where, default_access)
        return cls(entries, where=str(p))


def _entry_label(where: str, n: int, ident: Identity) -> str:
    return f"{where}: token entry #{n}" + (f" (user {ident.user_id!r})" if ident.user_id else "")


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
    strict_visibility: bool | None = None  # None: on when the tokens act for more than one user or session
    summarize_idle_every: float | None = None  # seconds between idle-session summary passes (None: off)

    def __post_init__(self) -> None:
        if self.transport not in ("stdio", "http"):
            raise ConfigError(f"transport must be stdio or http, not {self.transport!r}")
        unknown = set(self.tools) - set(TOOL_SETS)
        if unknown or not self.tools:
            raise ConfigError(f"tool sets are {', '.join(TOOL_SETS)}; got {', '.join(sorted(unknown)) or 'none'}")
        if self.transport == "http" and not self.tokens and not is_loopback(self.host):
            raise ConfigError(
                f"refusing to serve HTTP on {self.host} without tokens: bind 127.0.0.1 or pass --tokens FILE (a token maps to a user)"
            )
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"port must be 0-65535, not {self.port}")
        if self.summarize_idle_every is not None and not self.summarize_idle_every > 0:
            raise ConfigError(f"--summarize-idle-every must be a number of seconds > 0, not {self.summarize_idle_every}")

    @property
    def strict(self) -> bool:
        """Rank with statistics from each caller's visible records only (no cross-user ranking oracle)."""
        if self.strict_visibility is not None:
            return self.strict_visibility
        return self.transport == "http" and self.tokens is not None and self.tokens.multi_user

    @property
    def tool_names(self) -> tuple[str, ...]:
        """Sets are cumulative, as in :mod:`agent_memory.agents.tools`: capture = read + remember, foreground = + forget."""
        order = ("read", "capture", "foreground")
        top = max(order.index(t) for t in self.tools)
        return tuple(name for group in order[: top + 1] for name in TOOL_SETS[group])
