"""Who may see what: the one visibility rule, compiled to a Python predicate, SQLite SQL and PostgreSQL SQL.

A caller is ``(session_id, user_id)``; a record (or a session log, an episode, an event about a record) has a
``scope`` and an owner ``(owner_session, owner_user)``:

=========  ================================================================================
scope      visible to
=========  ================================================================================
session    the same session, when the record names no user or the caller's user
user       the same user
project    anyone using this root
global     anyone
=========  ================================================================================

Every read path of every backend asks this module, never its own copy: :func:`may_see` for objects already in
memory, :func:`sqlite_sql` inside the files backend's queries and :func:`postgres_sql` inside PostgreSQL's, so
visibility acts before ranking and limits. ``tests/test_scopes.py`` checks on random owners and callers that the
three agree. Expiry is not visibility: each backend adds its own "not expired" clause next to this one.

Namespaces (``docs/namespaces.md``) compose with scopes: an object is in one namespace (``''`` is the root) *and*
one scope, and a caller sees it only when both agree. What namespaces a caller sees is its *view*, computed once
by :func:`visible_namespaces` from the caller's namespace, its isolation (``full``: its own; ``inherited``, the
default: its own and its ancestors' up to the root; ``shared``: inherited plus its siblings marked shared in the
root's namespace registry) and bound as a parameter (``:ns`` / ``%(ns)s``). A backend sets the view for the
duration of one call with :func:`viewing`; without one the view is the root's (today's behaviour).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any, Literal

from agent_memory.errors import InvalidInputError
from agent_memory.model.values import looks_secret, looks_secret_glued

__all__ = [
    "ISOLATIONS",
    "ROOT_VIEW",
    "SHARED_SCOPES",
    "Isolation",
    "ancestors",
    "check_isolation",
    "check_namespace",
    "current_view",
    "in_view",
    "may_see",
    "owner_params",
    "owner_sql",
    "owns",
    "postgres_params",
    "postgres_sql",
    "sqlite_params",
    "sqlite_sql",
    "viewing",
    "visible_namespaces",
]

#: Scopes everyone using the root may see.
SHARED_SCOPES = ("project", "global")

# -- namespaces ------------------------------------------------------------------------------------------------------
Isolation = Literal["full", "inherited", "shared"]
#: What a namespaced caller sees: its own namespace; and its ancestors'; and also its siblings marked shared.
ISOLATIONS: tuple[Isolation, ...] = ("full", "inherited", "shared")
#: The view of a caller in the root namespace (and of every read no backend gave a view): root objects only.
ROOT_VIEW: tuple[str, ...] = ("",)
MAX_SEGMENTS = 8
_SEGMENT = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")
_RULE = "a namespace is 1-8 '/'-separated segments of [a-z0-9][a-z0-9._-]{0,62} (lowercase), with no empty segment and no '..'"
_VIEW: ContextVar[tuple[str, ...]] = ContextVar("agent_memory_namespace_view", default=ROOT_VIEW)


def check_namespace(value: object) -> str:
    """``value`` as a namespace path (``''``/None is the root), or :class:`InvalidInputError` naming the rule."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        raise InvalidInputError(f"namespace must be text, not {type(value).__name__}; {_RULE}")
    parts = value.split("/")
    if len(parts) > MAX_SEGMENTS or ".." in value or not all(_SEGMENT.fullmatch(p) for p in parts):
        raise InvalidInputError(f"invalid namespace {_shown_namespace(value, parts)}: {_RULE}")
    if _secret_namespace(value, parts):  # a name is written to disk and shown
        raise InvalidInputError("namespace looks like a secret; refusing to store it")
    return value


def _secret_namespace(value: str, parts: list[str]) -> bool:
    return any(looks_secret(p) for p in (value, value.replace("/", " "), *parts))


def _shown_namespace(value: str, parts: list[str]) -> str:
    """A refused namespace as its error shows it: quoted and cut to 80 characters, never a secret in it (the text
    reaches stderr, JSON errors and logs): one that looks like a secret is not echoed at all."""
    if _secret_namespace(value, parts) or any(looks_secret_glued(p) for p in parts if p):
        return "(a value that looks like a secret, not shown)"
    return repr(value[:80]) + ("…" if len(value) > 80 else "")


def check_isolation(value: object) -> Isolation | None:
    """``value`` as an isolation (None: not set), or :class:`InvalidInputError` listing the three."""
    if value is None or value == "":
        return None
    if value not in ISOLATIONS:
        bad = str(value)[:40]
        shown = "(a value that looks like a secret, not shown)" if looks_secret_glued(bad) else repr(bad)
        raise InvalidInputError(f"isolation must be one of {', '.join(ISOLATIONS)}, not {shown}")
    return value  # type: ignore[return-value]


def ancestors(namespace: str) -> list[str]:
    """The namespaces above ``namespace``, nearest first, ending with the root ``''`` (none for the root)."""
    parts = check_namespace(namespace).split("/") if namespace else []
    return ["/".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)] + ([""] if parts else [])


def visible_namespaces(namespace: str | None, isolation: str | None = None, shared: Iterable[str] = ()) -> tuple[str, ...]:
    """The view: the namespaces a caller in ``namespace`` with ``isolation`` (default ``inherited``) may read.

    ``shared`` are the namespaces the root's registry marks shared; under ``shared`` isolation those that are
    siblings of the caller's namespace (same parent, another name) join the view. A sibling's children do not."""
    ns = check_namespace(namespace)
    iso = check_isolation(isolation) or "inherited"
    if iso == "full":
        return (ns,)
    view = [ns, *ancestors(ns)]
    if iso == "shared" and ns:
        parent = ns.rpartition("/")[0]
        for other in sorted(set(shared)):
            if other != ns and other and other.rpartition("/")[0] == parent:
                view.append(check_namespace(other))
    return tuple(view)


def current_view() -> tuple[str, ...]:
    """The view of the call in progress (set by :func:`viewing`), else :data:`ROOT_VIEW`."""
    return _VIEW.get()


@contextmanager
def viewing(view: Iterable[str]) -> Iterator[tuple[str, ...]]:
    """Read as a caller whose view is ``view`` (from :func:`visible_namespaces`) until the block ends."""
    token = _VIEW.set(tuple(view) or ROOT_VIEW)
    try:
        yield _VIEW.get()
    finally:
        _VIEW.reset(token)


def bind(view: Iterable[str]) -> Token[tuple[str, ...]]:
    """Read as a caller whose view is ``view`` until :func:`unbind` (for an owner whose lifetime is not a block,
    like a CLI command's target: a :func:`viewing` generator left open would reset when garbage-collected)."""
    return _VIEW.set(tuple(view) or ROOT_VIEW)


def unbind(token: Token[tuple[str, ...]]) -> None:
    _VIEW.reset(token)


def in_view(namespace: str | None, view: Iterable[str] | None = None) -> bool:
    """Whether an object of ``namespace`` is in ``view`` (default: the current one)."""
    return (namespace or "") in (current_view() if view is None else tuple(view))


def may_see(
    scope: str | None,
    owner_session: str | None,
    owner_user: str | None,
    *,
    session_id: str | None,
    user_id: str | None,
    namespace: str | None = None,
    view: Iterable[str] | None = None,
) -> bool:
    """Whether the caller ``(session_id, user_id)`` with ``view`` (default: the current one) may see an object of
    ``scope`` owned by ``(owner_session, owner_user)`` in ``namespace`` (``''`` the root; None: an object that has
    no namespace yet — session logs, episodes — so only its scope and owners are tested)."""
    if namespace is not None and not in_view(namespace, view):
        return False
    if scope in SHARED_SCOPES:
        return True
    if scope == "session":
        return owner_session is not None and owner_session == session_id and (owner_user is None or owner_user == user_id)
    if scope == "user":
        return owner_user is not None and owner_user == user_id
    return False


def _sql(alias: str, sid: str, uid: str) -> str:
    a = f"{alias}." if alias else ""
    shared = ", ".join(f"'{s}'" for s in SHARED_SCOPES)
    return (
        f"({a}scope IN ({shared})"
        f" OR ({a}scope = 'session' AND {a}session_id = {sid} AND ({a}user_id IS NULL OR {a}user_id = {uid}))"
        f" OR ({a}scope = 'user' AND {a}user_id = {uid}))"
    )


def sqlite_sql(alias: str = "r", *, namespaced: bool = True) -> str:
    """The rule as an SQLite predicate over ``alias.scope/session_id/user_id`` (and, with ``namespaced``,
    ``alias.namespace``); binds ``:sid``, ``:uid`` and ``:ns`` (fill them with :func:`sqlite_params`)."""
    rule = _sql(alias, ":sid", ":uid")
    if not namespaced:
        return rule
    a = f"{alias}." if alias else ""
    return f"(coalesce({a}namespace, '') IN (SELECT value FROM json_each(:ns)) AND {rule})"


def sqlite_params(session_id: str | None, user_id: str | None, view: Iterable[str] | None = None) -> dict[str, Any]:
    """The parameters :func:`sqlite_sql` binds (``view`` defaults to the current one)."""
    return {"sid": session_id, "uid": user_id, "ns": json.dumps(list(current_view() if view is None else view))}


def postgres_sql(alias: str = "r", *, tenants: bool = True, namespaced: bool = True) -> str:
    """The rule as a PostgreSQL predicate; binds ``%(sid)s``, ``%(uid)s``, ``%(ns)s`` (with ``namespaced``) and
    ``%(tenants)s`` (with ``tenants``).

    PostgreSQL rows also carry a ``tenant`` column (``''`` for shared rows, else the owner's user) that partitions
    the indexes; the tenant test is implied by the rule and only narrows the scan (fill it with :func:`postgres_params`).
    """
    rule = _sql(alias, "%(sid)s", "%(uid)s")
    a = f"{alias}." if alias else ""
    if namespaced:
        rule = f"(coalesce({a}namespace, '') = ANY(%(ns)s) AND {rule})"
    if not tenants:
        return rule
    return f"({a}tenant = ANY(%(tenants)s) AND {rule})"


def postgres_params(params: dict[str, Any], view: Iterable[str] | None = None) -> dict[str, Any]:
    """Fill ``tenants`` from ``params['uid']``, ``ns`` from ``view`` (default: the current one) and default
    ``sid``/``uid`` to None, for :func:`postgres_sql`."""
    params.setdefault("sid", None)
    params.setdefault("uid", None)
    params["tenants"] = ["", params["uid"]] if params.get("uid") else [""]
    if view is not None or "ns" not in params:
        params["ns"] = list(current_view() if view is None else view)
    return params


# -- owners: what one purge takes ------------------------------------------------------------------------------------
def owns(owner_session: str | None, owner_user: str | None, *, session_id: str | None, user_id: str | None) -> bool:
    """Whether an object owned by ``(owner_session, owner_user)`` is in the partition of the owner a purge names.

    Owners are the ones visibility knows (a user; a session, which is per user: the same session id under two users
    is two sessions): ``user_id`` alone is everything of that user (every scope, every session of theirs);
    ``user_id`` and ``session_id`` are that user's session only; ``session_id`` alone is the session *without* a
    user. Never another owner's: a purge of bob's ``chat-1`` keeps alice's ``chat-1``. Neither given: nothing."""
    user_id, session_id = user_id or None, session_id or None
    if user_id is not None:
        return owner_user == user_id and (session_id is None or owner_session == session_id)
    return session_id is not None and owner_user is None and owner_session == session_id


def owner_sql(session_col: str, user_col: str, *, session_id: str | None, user_id: str | None, dialect: str = "sqlite") -> str:
    """:func:`owns` as an SQL predicate over two columns (or expressions); binds ``osid``/``ouid`` as ``:name``
    (``dialect="sqlite"``) or ``%(name)s`` (``"postgres"``): fill them with :func:`owner_params`."""
    sid, uid = (":osid", ":ouid") if dialect == "sqlite" else ("%(osid)s", "%(ouid)s")
    if user_id:
        return f"({user_col} = {uid} AND {session_col} = {sid})" if session_id else f"({user_col} = {uid})"
    if session_id:
        return f"({user_col} IS NULL AND {session_col} = {sid})"
    return "(1 = 0)"


def owner_params(session_id: str | None, user_id: str | None) -> dict[str, Any]:
    """The parameters :func:`owner_sql` binds."""
    return {"osid": session_id or None, "ouid": user_id or None}
