"""The vector cache's seam to the index: which records to embed, and which a caller may see (by content hash).

Split from :mod:`agent_memory.backends.files.vectors` (which re-exports these). Visibility is the index's own SQL predicate,
so the dense side sees exactly the records the lexical side may rank.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from agent_memory.backends.files.index import Index, live_sql, visibility_sql, visible_params

__all__ = ["live_items", "visible_hashes", "visible_for_hashes"]


def live_items(index: Index) -> Iterator[tuple[str, str]]:
    """``(content hash, body)`` of every live record in the index: what :meth:`VectorCache.backfill` embeds."""
    rows = index.guarded(
        lambda c: c.execute(
            f"SELECT r.content_hash, f.body FROM records r JOIN fts f ON f.rowid = r.rowid WHERE {live_sql('r')}"
        ).fetchall()
    )
    for h, body in rows:
        if h:
            yield h, body or ""


def visible_hashes(
    index: Index, *, session_id: str | None = None, user_id: str | None = None, where: str = "", params: Mapping[str, Any] | None = None
) -> dict[str, str]:
    """``{record id: content hash}`` of the records this caller may see (the scope table, live only).

    ``where`` adds more SQL conditions on alias ``r`` (tags, kinds, dates) with their ``params``.
    """
    bind: dict[str, Any] = {**visible_params(session_id, user_id), **(params or {})}
    sql = f"SELECT r.id, r.content_hash FROM records r WHERE {visibility_sql('r')}{' AND ' + where if where else ''}"
    rows = index.guarded(lambda c: c.execute(sql, bind).fetchall())
    return {r[0]: r[1] for r in rows if r[1]}


def visible_for_hashes(
    index: Index,
    hashes: Sequence[str],
    *,
    session_id: str | None = None,
    user_id: str | None = None,
    where: str = "",
    params: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """Like :func:`visible_hashes`, limited to records whose content hash is in ``hashes`` (one indexed lookup)."""
    if not hashes:
        return {}
    bind: dict[str, Any] = {**visible_params(session_id, user_id), **(params or {}), "_hashes": json.dumps(list(hashes))}
    sql = (
        f"SELECT r.id, r.content_hash FROM records r WHERE r.content_hash IN (SELECT value FROM json_each(:_hashes))"
        f" AND {visibility_sql('r')}{' AND ' + where if where else ''}"
    )
    return {r[0]: r[1] for r in index.guarded(lambda c: c.execute(sql, bind).fetchall())}
