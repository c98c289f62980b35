"""Search that knows no backend: request/hit/result types, query text, lexical parsing, fusion, stages, focus.

Each backend answers a :class:`SearchRequest` with a :class:`SearchResult` its own way (the files backend with SQLite
FTS5 in :mod:`agent_memory.backends.files.fts`, PostgreSQL with ``tsvector``), using what lives here to rank alike.
"""

from __future__ import annotations

import warnings
from typing import Any

from agent_memory.search.types import MIN_SCORE, SearchHit, SearchRequest, SearchResult, readable_score

__all__ = ["MIN_SCORE", "SearchHit", "SearchRequest", "SearchResult", "readable_score"]

#: Names the flat ``agent_memory.search`` module had, now in the files backend's engine (one release, with a warning).
_MOVED = {"Fts5Engine", "SearchEngine", "STOP_WORDS", "Tokenizer", "default_tokenizer", "light_stem", "term_key",
          "term_matcher", "dates_text"}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        warnings.warn(f"agent_memory.search.{name} moved to agent_memory.backends.files.fts; the old path goes away in "
                      "agent-memory 0.3", DeprecationWarning, stacklevel=2)
        from agent_memory.backends.files import fts

        return getattr(fts, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
