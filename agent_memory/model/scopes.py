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
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "SHARED_SCOPES",
    "may_see",
    "owner_params",
    "owner_sql",
    "owns",
    "postgres_params",
    "postgres_sql",
    "sqlite_params",
    "sqlite_sql",
]

#: Scopes everyone using the root may see.
SHARED_SCOPES = ("project", "global")


def may_see(scope: str | None, owner_session: str | None, owner_user: str | None, *, session_id: str | None, user_id: str | None) -> bool:
    """Whether the caller ``(session_id, user_id)`` may see an object of ``scope`` owned by ``(owner_session, owner_user)``."""
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


def sqlite_sql(alias: str = "r") -> str:
    """The rule as an SQLite predicate over ``alias.scope/session_id/user_id``; binds ``:sid`` and ``:uid``."""
    return _sql(alias, ":sid", ":uid")


def sqlite_params(session_id: str | None, user_id: str | None) -> dict[str, Any]:
    """The parameters :func:`sqlite_sql` binds."""
    return {"sid": session_id, "uid": user_id}


def postgres_sql(alias: str = "r", *, tenants: bool = True) -> str:
    """The rule as a PostgreSQL predicate; binds ``%(sid)s``, ``%(uid)s`` and (with ``tenants``) ``%(tenants)s``.

    PostgreSQL rows also carry a ``tenant`` column (``''`` for shared rows, else the owner's user) that partitions
    the indexes; the tenant test is implied by the rule and only narrows the scan (fill it with :func:`postgres_params`).
    """
    rule = _sql(alias, "%(sid)s", "%(uid)s")
    if not tenants:
        return rule
    a = f"{alias}." if alias else ""
    return f"({a}tenant = ANY(%(tenants)s) AND {rule})"


def postgres_params(params: dict[str, Any]) -> dict[str, Any]:
    """Fill ``tenants`` from ``params['uid']`` (and default ``sid``/``uid`` to None) for :func:`postgres_sql`."""
    params.setdefault("sid", None)
    params.setdefault("uid", None)
    params["tenants"] = ["", params["uid"]] if params.get("uid") else [""]
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
