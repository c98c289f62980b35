"""Which embedder made a root's vectors: the ``embedders`` table of ``<root>/vectors.db``, read without numpy.

:class:`~agent_memory.backends.files.vectors.VectorCache` writes a row per model it embeds with (the model's name
and the spec that rebuilds the embedder: ``local``, ``local:PATH`` or a litellm model id; none for a user
function). :func:`recorded` reads it back so a search can use the vectors without being told the embedder
(docs/meaning.md, "Search uses the vectors it finds"). A cache written before the table existed still names its
model on every vector row; the packaged MiniLM's name maps back to ``local``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agent_memory.backends.base import RecordedEmbedder

__all__ = ["EMBEDDERS_SCHEMA", "Recorded", "recorded"]

EMBEDDERS_SCHEMA = "CREATE TABLE IF NOT EXISTS embedders (model TEXT PRIMARY KEY, spec TEXT);"


Recorded = RecordedEmbedder  # the model a root's vectors were made with (its old name here)


def recorded(root: str | Path) -> Recorded | None:
    """The embedder of ``root``'s vectors (the model with the most vectors), or None when it has none.

    Opens ``vectors.db`` read-only and creates nothing; an unreadable file reads as no vectors."""
    path = Path(root) / "vectors.db"
    if not path.is_file():  # before any import: a cold search of a root without vectors stays light
        return None
    from agent_memory.embeddings import spec_for_model

    try:
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error:
        return None
    try:
        row = conn.execute("SELECT model, count(*) AS n FROM vectors GROUP BY model ORDER BY n DESC, model LIMIT 1").fetchone()
        if row is None:
            return None
        model, count = str(row[0]), int(row[1])
        try:
            spec_row = conn.execute("SELECT spec FROM embedders WHERE model = ?", (model,)).fetchone()
        except sqlite3.OperationalError:  # a cache from before the table: the name alone
            spec_row = None
        spec = spec_row[0] if spec_row is not None and spec_row[0] else spec_for_model(model)
        return Recorded(model, spec, count)
    except sqlite3.Error:
        return None
    finally:
        conn.close()
