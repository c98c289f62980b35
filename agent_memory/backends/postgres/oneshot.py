"""One lexical search from a fresh process (the command line) without importing psycopg or asyncio.

A cold ``agent-memory --root postgresql://… search`` used to spend most of its time importing psycopg
(≈ 110 ms on a quiet machine). This path runs the *same* :class:`~.search.PgSearch` — same SQL, same
ranking, snippets and trace — over :mod:`._libpq`, on one connection, in one transaction. It answers only
when it can answer exactly as the backend would: with no libpq, a schema that still needs migrating, a
schema whose vectors a search without a mode uses (an ``embedders`` row), a column type the client does not
decode, or ``AGENT_MEMORY_PG_ONESHOT=0``, :func:`search_once` returns
``None`` and the caller takes the backend. Server failures raise the backend's :class:`BackendError`.
"""

from __future__ import annotations

import os
from collections.abc import Coroutine
from typing import Any

from agent_memory.backends.postgres import _libpq
from agent_memory.backends.postgres.rows import check_strings, redact_url, url_location
from agent_memory.backends.postgres.schema import LATEST, TEXT_CONFIG, check_schema
from agent_memory.backends.postgres.search import PgSearch, checked_query
from agent_memory.errors import BackendError
from agent_memory.model.records import normalize_tags
from agent_memory.search.lexical import LexicalEngine
from agent_memory.search.types import SearchResult

__all__ = ["search_once"]

ENV = "AGENT_MEMORY_PG_ONESHOT"


def _drive(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never suspends (its awaits are :mod:`._libpq` calls) to its result."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise _libpq.Unsupported("the search suspended")


def search_once(
    url: str,
    query: str,
    *,
    session_id: str | None = None,
    user_id: str | None = None,
    limit: int = 10,
    schema: str = "agent_memory",
    **options: Any,
) -> SearchResult | None:
    """The backend's lexical ``search`` result, or ``None`` when this path cannot give exactly that."""
    if os.environ.get(ENV, "").strip().lower() in ("0", "off", "false", "no"):
        return None
    if options.get("mode") not in (None, "lexical") or options.get("stages"):
        return None
    query = checked_query(query, limit)
    check_strings(session_id=session_id, user_id=user_id)
    schema = check_schema(schema)
    mode = options.pop("mode", None)
    tags = normalize_tags(options.pop("tags", ()) or ())
    trace = bool(options.pop("trace", False))
    try:
        conn = _libpq.Connection(url)
    except _libpq.Unsupported:
        return None
    except _libpq.ServerError as exc:
        raise BackendError(f"PostgreSQL at {redact_url(url)} is not usable: {exc}") from None
    try:
        try:
            rows = conn.run(f'SELECT max(version) AS v FROM "{schema}".schema_version')
        except _libpq.ServerError as exc:
            if exc.sqlstate == "42P01":  # no schema yet: the backend creates it
                return None
            raise
        if int((rows[0]["v"] if rows else 0) or 0) < LATEST:  # migrations are due: the backend runs them
            return None
        if mode is None and conn.run(f'SELECT 1 AS x FROM "{schema}".embedders LIMIT 1'):
            return None  # vectors were made here: the backend searches with their embedder (backends/vector_choice.py)
        where = f"{url_location(url)}#{schema}"
        searcher = PgSearch(f'"{schema}".records', LexicalEngine(), TEXT_CONFIG, lambda rid: f"{where}/{rid}")
        conn.run("BEGIN READ ONLY")
        result: SearchResult = _drive(
            searcher.run(conn, query, sid=session_id, uid=user_id, limit=limit, tags=tags, trace=trace, **options)
        )
        conn.run("COMMIT")
        return result
    except _libpq.Unsupported:
        return None
    except _libpq.ServerError as exc:
        if exc.sqlstate == "57014":
            raise BackendError(f"PostgreSQL statement timed out: {exc}") from None
        raise BackendError(f"PostgreSQL at {redact_url(url)} failed: {exc}") from None
    finally:
        conn.close()
