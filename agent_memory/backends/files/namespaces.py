"""The namespace registry of a files root: ``namespaces.json`` (declared in :mod:`~agent_memory.backends.files.layout`).

One JSON object ``{"namespaces": {"acme/coding": {"shared": true, "isolation": "inherited"}, …}}``, written
atomically under the root lock. It holds configuration only: which namespaces are *marked shared* (their siblings
with ``shared`` isolation read them) and a namespace's default isolation (a ``Caller`` that names none gets it).
A root without the file has no namespace configured: every namespace is unshared with ``inherited`` isolation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_memory.backends.files.layout import entry
from agent_memory.errors import InvalidInputError
from agent_memory.formats.atomic import RootLock, atomic_write
from agent_memory.model.scopes import check_isolation, check_namespace

if TYPE_CHECKING:
    from agent_memory.backends.base import Caller

__all__ = ["caller_view", "configure", "read_registry"]

MAX_NAMESPACES = 10_000


def _path(root: str | Path) -> Path:
    return entry("namespaces").location(root)


def read_registry(root: str | Path) -> dict[str, dict[str, Any]]:
    """``{namespace: {"shared": bool, "isolation": str | None}}`` of the root (empty without the file).

    An unreadable or malformed file is an :class:`InvalidInputError` naming it (never a silently wider view)."""
    path = _path(root)
    if not path.is_file() or path.is_symlink():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        items = data["namespaces"].items()
        return {
            check_namespace(ns): {"shared": bool(cfg.get("shared")), "isolation": check_isolation(cfg.get("isolation"))}
            for ns, cfg in items
            if ns
        }
    except (OSError, ValueError, KeyError, AttributeError, TypeError) as exc:
        raise InvalidInputError(f"{path} is not a namespace registry ({exc}); fix or remove it") from None


def caller_view(root: str | Path, caller: Caller) -> tuple[str, ...]:
    """The namespaces ``caller`` reads in the root (its namespace, isolation and the root's registry): the view
    :class:`~agent_memory.backends.files.backend.FilesBackend` binds for a call, and a synchronous
    :class:`~agent_memory.backends.files.store.MemoryStore` caller binds the same way."""
    return caller.view(read_registry(root) if caller.namespace else None)


def configure(
    root: str | Path, namespace: str, *, shared: bool | None = None, isolation: str | None = None, lock: RootLock | None = None
) -> dict[str, Any]:
    """Mark ``namespace`` shared or not and/or set its default isolation; returns its entry. The root namespace
    has no siblings and no ancestors, so it cannot be configured."""
    ns = check_namespace(namespace)
    if not ns:
        raise InvalidInputError("the root namespace cannot be configured (it has no siblings and no ancestors)")
    iso = check_isolation(isolation)
    root = Path(root)
    with (lock or RootLock(root / ".lock")).hold():
        reg = read_registry(root)
        cfg = dict(reg.get(ns) or {"shared": False, "isolation": None})
        if shared is not None:
            cfg["shared"] = bool(shared)
        if isolation is not None:
            cfg["isolation"] = iso
        reg[ns] = cfg
        if len(reg) > MAX_NAMESPACES:
            raise InvalidInputError(f"a root configures at most {MAX_NAMESPACES} namespaces")
        doc = {"namespaces": {k: reg[k] for k in sorted(reg)}}
        atomic_write(_path(root), (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    return {"namespace": ns, **cfg}
