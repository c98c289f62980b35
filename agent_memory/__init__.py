"""agent_memory: durable, searchable memory for LLM agents, run by small private worker agents.

Public names are imported lazily, so store-only users (and the CLI) never pay for
importing pydantic-ai or litellm.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "MemoryProvider": "provider",
    "MemoryStore": "store",
    "MemoryBackend": "backend",
    "FilesBackend": "backend",
    "Caller": "backend",
    "open_backend": "backends",
    "PendingCaptureWarning": "provider",
    "RecordParseError": "records",
    "StorageError": "errors",
    "ReadOnlyError": "errors",
    "BackendError": "errors",
    "MemoryDraft": "drafts",
    "RememberResult": "drafts",
    "SweepReport": "store",
    "DoctorReport": "store",
    "MemoryRecord": "records",
    "Scope": "records",
    "MemoryBlock": "core",
    "SearchHit": "search",
    "SearchResult": "search",
    "SearchRequest": "search",
    "SearchEngine": "search",
    "Fts5Engine": "search",
    "AgentMemoryError": "errors",
    "InvalidInputError": "errors",
    "InvalidIdError": "errors",
    "NotFoundError": "errors",
    "LockTimeoutError": "errors",
    "ProfileError": "errors",
    "count_tokens": "tokens",
    "RecallResult": "workers.recall",
    "CaptureResult": "workers.capture",
    "CaptureContext": "workers.capture",
    "Profile": "profiles",
    "WorkerProfile": "profiles",
    "load_profile": "profiles",
    "MemoryHooks": "hooks",
    "MemoryContext": "hooks",
    "MemoryCapability": "integrations.pydantic_ai",
    "MemoryToolHandler": "integrations.anthropic",
    "export_records": "portable",
    "Embedder": "embeddings",
    "LocalEmbedder": "embeddings",
    "LiteLLMEmbedder": "embeddings",
    "CallableEmbedder": "embeddings",
    "make_embedder": "embeddings",
    "VectorCache": "vectors",
    "import_file": "portable",
    "ImportReport": "portable",
    "OfflineModel": "models.offline",
    "LiteLLMModel": "models.litellm",
    "memory_toolset": "tools",
    "SessionStore": "sessions",
    "SessionLog": "sessions.store",
    "SessionInfo": "sessions",
    "SessionMessage": "sessions",
    "SessionSummary": "sessions",
    "SummaryPolicy": "sessions",
    "purge_sessions": "sessions",
    "contextual_search": "sessions",
    "SessionsNotSupportedError": "sessions.api",
    "Episode": "episodes",
    "EpisodeStore": "episodes",
    "build_episode": "episodes",
    "purge_episodes": "episodes",
    "EpisodesUnsupportedError": "episodes",
    "ConsolidationReport": "consolidate",
    "ConsolidateOptions": "consolidate",
    "ConsolidationUnsupported": "consolidate",
    "Reflection": "workers.reflect",
    "Hooks": "extensions",
    "ExtendedBackend": "extensions",
    "Written": "extensions",
    "Retrieved": "extensions",
    "SessionEnded": "extensions",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from .backend import Caller, FilesBackend, MemoryBackend
    from .backends import open_backend
    from .consolidate import ConsolidateOptions, ConsolidationReport, ConsolidationUnsupported
    from .core import MemoryBlock
    from .drafts import MemoryDraft, RememberResult
    from .embeddings import CallableEmbedder, Embedder, LiteLLMEmbedder, LocalEmbedder, make_embedder
    from .episodes import Episode, EpisodeStore, EpisodesUnsupportedError, build_episode, purge_episodes
    from .errors import (
        AgentMemoryError,
        BackendError,
        InvalidIdError,
        InvalidInputError,
        LockTimeoutError,
        NotFoundError,
        ProfileError,
        ReadOnlyError,
        StorageError,
    )
    from .extensions import ExtendedBackend, Hooks, Retrieved, SessionEnded, Written
    from .hooks import MemoryContext, MemoryHooks
    from .integrations.anthropic import MemoryToolHandler
    from .integrations.pydantic_ai import MemoryCapability
    from .models.litellm import LiteLLMModel
    from .models.offline import OfflineModel
    from .portable import ImportReport, export_records, import_file
    from .profiles import Profile, WorkerProfile, load_profile
    from .provider import MemoryProvider, PendingCaptureWarning
    from .records import MemoryRecord, RecordParseError, Scope
    from .search import Fts5Engine, SearchEngine, SearchHit, SearchRequest, SearchResult
    from .sessions import (
        SessionInfo,
        SessionMessage,
        SessionStore,
        SessionSummary,
        SummaryPolicy,
        contextual_search,
        purge_sessions,
    )
    from .sessions.api import SessionsNotSupportedError
    from .sessions.store import SessionLog
    from .store import DoctorReport, MemoryStore, SweepReport
    from .tokens import count_tokens
    from .tools import memory_toolset
    from .vectors import VectorCache
    from .workers.capture import CaptureContext, CaptureResult
    from .workers.recall import RecallResult
    from .workers.reflect import Reflection


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_memory' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
