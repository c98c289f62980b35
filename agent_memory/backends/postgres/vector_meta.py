"""Which embedder made a schema's vectors: the ``embedders`` table (migration 12), read without numpy.

The PostgreSQL side of ``vectors.db``'s ``embedders`` table on a files root
(:mod:`agent_memory.backends.files.vector_meta`): :meth:`PgVectors.embed
<agent_memory.backends.postgres.vectors.PgVectors.embed>` writes a row per model it embeds with (its name, the spec
that rebuilds the embedder — ``local``, ``local:PATH``, a litellm model id; none for a user function — and when it
last embedded); :func:`recorded` reads back the latest one that still has vectors, so a search without an embedder
uses them (:mod:`agent_memory.backends.vector_choice`). The migration records the models of vectors stored before
the table existed (the packaged MiniLM's name maps back to ``local``).
"""

from __future__ import annotations

from typing import Any

from agent_memory.backends.base import RecordedEmbedder

__all__ = ["MIGRATION_VERSION", "migration", "note", "recorded"]

MIGRATION_VERSION = 12
LOCAL_MODEL = "all-MiniLM-L6-v2"  # embeddings.LOCAL_MODEL, spelled here: the cold one-shot search imports no embedder


def migration(s: str) -> list[tuple[int, str, list[str]]]:
    """Migration 12: the ``embedders`` table, filled from the vectors already stored."""
    return [
        (
            MIGRATION_VERSION,
            "the embedder recorded with the vectors (a search without an embedder uses it)",
            [
                f"""CREATE TABLE IF NOT EXISTS "{s}".embedders (
                model text PRIMARY KEY,
                spec text,
                updated timestamptz NOT NULL DEFAULT now()
            )""",
                f'INSERT INTO "{s}".embedders (model, spec) SELECT DISTINCT model,'
                f" CASE WHEN model = '{LOCAL_MODEL}' THEN 'local' END FROM \"{s}\".record_vectors ON CONFLICT (model) DO NOTHING",
            ],
        )
    ]


async def note(conn: Any, schema: str, model: str, spec: str | None) -> None:
    """Record that ``model`` (rebuilt by ``spec``) makes vectors in ``schema``, as the latest embedder."""
    await conn.execute(
        f'INSERT INTO "{schema}".embedders (model, spec, updated) VALUES (%(m)s, %(s)s, now())'
        " ON CONFLICT (model) DO UPDATE SET spec = excluded.spec, updated = excluded.updated",
        {"m": model, "s": spec},
    )


async def recorded(conn: Any, schema: str) -> RecordedEmbedder | None:
    """The latest recorded embedder that still has vectors in ``schema``, or None when there are none."""
    cur = await conn.execute(
        f'SELECT e.model, e.spec FROM "{schema}".embedders e'
        f' WHERE EXISTS (SELECT 1 FROM "{schema}".record_vectors v WHERE v.model = e.model)'
        " ORDER BY e.updated DESC, e.model LIMIT 1"
    )
    row = await cur.fetchone()
    if row is None:
        return None
    return RecordedEmbedder(str(row["model"]), row["spec"] or None)
