"""The namespace registry on PostgreSQL (the ``namespaces`` table, migration 7) and the view of a caller.

The same registry as a files root's ``namespaces.json`` (:mod:`agent_memory.backends.files.namespaces`): which
namespaces are marked shared and a namespace's default isolation. :func:`reads_as_caller` wraps each backend read
that takes a :class:`~agent_memory.backends.base.Caller`: the caller's view (``model/scopes.py``) is computed once
per call (one small query when the caller has a namespace) and bound for the call, so every visibility test of
the call (:func:`agent_memory.model.scopes.postgres_sql`) binds it as ``%(ns)s``.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from agent_memory.backends.base import Caller
from agent_memory.errors import InvalidInputError
from agent_memory.model import scopes

__all__ = ["changes_as_caller", "configure", "reads_as_caller", "registry", "view_of"]

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


async def registry(b: Any) -> dict[str, dict[str, Any]]:
    """``{namespace: {"shared": bool, "isolation": str | None}}`` of the backend's schema."""
    async with b.pool.connection() as conn:
        cur = await conn.execute(f'SELECT name, shared, isolation FROM "{b.schema}".namespaces ORDER BY name')
        rows = await cur.fetchall()
    return {r["name"]: {"shared": bool(r["shared"]), "isolation": r["isolation"]} for r in rows}


async def view_of(b: Any, caller: Caller) -> tuple[str, ...]:
    """The namespaces ``caller`` reads (no query for a caller in the root namespace)."""
    return caller.view(await registry(b) if caller.namespace else None)


async def configure(b: Any, namespace: str, *, shared: bool | None = None, isolation: str | None = None) -> dict[str, Any]:
    """Mark ``namespace`` shared (or not) and/or set its default isolation; returns its entry."""
    ns = scopes.check_namespace(namespace)
    if not ns:
        raise InvalidInputError("the root namespace cannot be configured (it has no siblings and no ancestors)")
    iso = scopes.check_isolation(isolation)
    async with b.pool.connection() as conn:
        cur = await conn.execute(
            f'INSERT INTO "{b.schema}".namespaces AS n (name, shared, isolation) VALUES (%(ns)s, coalesce(%(shared)s, false), %(iso)s)'
            " ON CONFLICT (name) DO UPDATE SET shared = coalesce(%(shared)s, n.shared),"
            " isolation = CASE WHEN %(set_iso)s THEN %(iso)s ELSE n.isolation END, updated = now()"
            " RETURNING name, shared, isolation",
            {"ns": ns, "shared": shared, "iso": iso, "set_iso": isolation is not None},
        )
        row = await cur.fetchone()
    return {"namespace": row["name"], "shared": bool(row["shared"]), "isolation": row["isolation"]}


def _caller_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Caller | None:
    return next((a for a in (*args, *kwargs.values()) if isinstance(a, Caller)), None)


def reads_as_caller(fn: F) -> F:
    """Run a backend method with the view of the :class:`Caller` among its arguments bound (root view without one)."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:  # args[0] is the backend
        caller = _caller_of(args[1:], kwargs)
        view = await view_of(args[0], caller) if caller is not None else scopes.ROOT_VIEW
        with scopes.viewing(view):
            return await fn(*args, **kwargs)

    return cast(F, wrapper)


def changes_as_caller(fn: F) -> F:
    """Run a method that changes what it finds (forget, restore, undo) seeing the caller's own namespace only."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:  # args[0] is the backend
        caller = _caller_of(args[1:], kwargs)
        with scopes.viewing(caller.own_view() if caller is not None else scopes.ROOT_VIEW):
            return await fn(*args, **kwargs)

    return cast(F, wrapper)
