"""The sessions layer: per-conversation message logs, versioned summaries, and two-stage contextual retrieval.

Session logs live under ``<root>/sessions/`` as append-only files, apart from memory records. See
``docs/sessions.md``.
"""

from __future__ import annotations

from agent_memory.sessions._files import SessionMessage, SessionProblem, SessionSummary
from agent_memory.sessions.contextual import ContextualOptions, contextual_search, rank_sessions, search_sessions
from agent_memory.sessions.store import SessionInfo, SessionStore, SummaryPolicy, purge_sessions, visible

__all__ = [
    "ContextualOptions",
    "SessionInfo",
    "SessionMessage",
    "SessionProblem",
    "SessionStore",
    "SessionSummary",
    "SummaryPolicy",
    "contextual_search",
    "purge_sessions",
    "rank_sessions",
    "search_sessions",
    "visible",
]
