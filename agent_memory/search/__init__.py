"""Search that knows no backend: request/hit/result types, query text, lexical parsing, fusion, stages, focus.

Each backend answers a :class:`SearchRequest` with a :class:`SearchResult` its own way (the files backend with SQLite
FTS5 in :mod:`agent_memory.backends.files.fts`, PostgreSQL with ``tsvector``), using what lives here to rank alike.
"""

from __future__ import annotations

import warnings
from typing import Any

from agent_memory.search.types import MIN_SCORE, SearchHit, SearchRequest, SearchResult, readable_score

__all__ = ["MIN_SCORE", "SearchHit", "SearchRequest", "SearchResult", "readable_score"]

#: Names the flat ``agent_memory.search`` module had that live elsewhere now (one release, with a warning).
_MOVED = {
    "Fts5Engine": "agent_memory.backends.files.fts",
    "SearchEngine": "agent_memory.backends.files.fts",
    "date_filter_sql": "agent_memory.backends.files.index_schema",
    "dates_text": "agent_memory.model.lines",
    **{
        name: "agent_memory.search.text"
        for name in ("STOP_WORDS", "Tokenizer", "default_tokenizer", "light_stem", "term_key", "term_matcher")
    },
}


def __getattr__(name: str) -> Any:
    home = _MOVED.get(name)
    if home is not None:
        warnings.warn(
            f"agent_memory.search.{name} moved to {home}; the old path goes away in agent-memory 0.3", DeprecationWarning, stacklevel=2
        )
        import importlib

        return getattr(importlib.import_module(home), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
