"""The sessions layer: per-conversation message logs, versioned summaries, and two-stage contextual retrieval.

Session logs live under ``<root>/sessions/`` as append-only files, apart from memory records. See
``docs/sessions.md``.
"""

from __future__ import annotations

from pathlib import Path

from ..purge import register_purger
from ._files import SessionMessage, SessionProblem, SessionSummary
from .contextual import ContextualOptions, contextual_search, rank_sessions, search_sessions
from .store import SessionInfo, SessionStore, SummaryPolicy, purge_sessions, visible

__all__ = [
    "ContextualOptions", "SessionInfo", "SessionMessage", "SessionProblem", "SessionStore", "SessionSummary",
    "SummaryPolicy", "contextual_search", "purge_sessions", "rank_sessions", "search_sessions", "visible",
]


def purge_session_logs(root: Path, user_id: str | None, session_id: str | None) -> int:
    """A user/session purge (:mod:`agent_memory.purge`) removes their session logs and summaries too."""
    return purge_sessions(root, user_id=user_id, session_id=session_id)


register_purger(purge_session_logs)
