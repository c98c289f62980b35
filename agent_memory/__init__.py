"""agent_memory: durable, searchable memory for LLM agents, run by small private worker agents.

Public names are imported lazily, so store-only users (and the CLI) never pay for
importing pydantic-ai or litellm.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agent_memory import _compat

__version__ = "0.2.0"
_compat.install()  # old flat import paths (agent_memory.store, …) warn and still work for one release

_EXPORTS = {
    "MemoryProvider": "provider",
    "MemoryStore": "backends.files.store",
    "MemoryBackend": "backends.base",
    "FilesBackend": "backends.files.backend",
    "Caller": "backends.base",
    "LifecycleBackend": "backends.base",
    "SessionsBackend": "backends.base",
    "EpisodesBackend": "backends.base",
    "VectorsBackend": "backends.base",
    "open_backend": "backends",
    "PendingCaptureWarning": "provider",
    "RecordParseError": "model.record_fields",
    "StorageError": "errors",
    "ReadOnlyError": "errors",
    "BackendError": "errors",
    "UnsupportedError": "errors",
    "MissingExtraError": "errors",
    "MemoryDraft": "model.drafts",
    "RememberResult": "model.drafts",
    "SweepReport": "model.reports",
    "DoctorReport": "model.reports",
    "MemoryRecord": "model.records",
    "Scope": "model.values",
    "MemoryBlock": "agents.core_block",
    "CuratedLine": "model.curated",
    "CuratedLimitError": "errors",
    "SearchHit": "search.types",
    "SearchResult": "search.types",
    "SearchRequest": "search.types",
    "SearchEngine": "backends.files.fts",
    "Fts5Engine": "backends.files.fts",
    "AgentMemoryError": "errors",
    "InvalidInputError": "errors",
    "InvalidIdError": "errors",
    "NotFoundError": "errors",
    "PermissionDeniedError": "errors",
    "LockTimeoutError": "errors",
    "ProfileError": "errors",
    "count_tokens": "agents.tokens",
    "RecallResult": "agents.workers.recall",
    "CaptureResult": "agents.workers.capture",
    "CaptureContext": "agents.workers.capture",
    "Profile": "agents.profiles",
    "WorkerProfile": "agents.profiles",
    "load_profile": "agents.profiles",
    "MemoryHooks": "integrations.hooks",
    "MemoryContext": "integrations.hooks",
    "MemoryCapability": "integrations.pydantic_ai",
    "MemoryToolHandler": "integrations.anthropic",
    "export_records": "portable.export",
    "Embedder": "embeddings.base",
    "LocalEmbedder": "embeddings.local",
    "LiteLLMEmbedder": "embeddings.litellm",
    "CallableEmbedder": "embeddings.callable",
    "make_embedder": "embeddings",
    "VectorCache": "backends.files.vectors",
    "import_file": "portable",
    "ImportReport": "portable.report",
    "OfflineModel": "agents.models.offline",
    "LiteLLMModel": "agents.models.litellm",
    "memory_toolset": "agents.tools",
    "SessionStore": "sessions.store",
    "SessionLog": "sessions.store",
    "SessionInfo": "sessions.store",
    "SessionMessage": "sessions",
    "SessionSummary": "sessions",
    "SummaryPolicy": "sessions.store",
    "purge_sessions": "sessions.store",
    "contextual_search": "sessions.contextual",
    "SessionsNotSupportedError": "sessions.api",
    "Episode": "episodes",
    "EpisodeStore": "episodes",
    "build_episode": "episodes",
    "purge_episodes": "episodes",
    "EpisodesUnsupportedError": "episodes",
    "ConsolidationReport": "consolidate.report",
    "Contradiction": "consolidate.contradict",
    "ConsolidateOptions": "consolidate.report",
    "ConsolidationUnsupported": "consolidate",
    "TidyReport": "consolidate.tidy",
    "IdleReport": "consolidate.tend",
    "DistillReport": "consolidate.tend",
    "IdleSummaries": "consolidate.tend",
    "Reflection": "agents.workers.reflect",
    "Hooks": "backends.extended",
    "ExtendedBackend": "backends.extended",
    "Written": "backends.extended",
    "Retrieved": "backends.extended",
    "SessionEnded": "backends.extended",
    "LinksBackend": "backends.base",
    "RecordLinks": "model.links",
    "Link": "model.links",
    "Backlink": "model.links",
    # ranking users can tune (docs/search.md) and workers users can extend (docs/workers.md)
    "RecencyBoost": "search.stages",
    "TimeDecay": "search.stages",
    "ImportanceWeight": "search.stages",
    "LengthNorm": "search.stages",
    "MinScore": "search.stages",
    "MMR": "search.stages",
    "Stage": "search.stages",
    "search_stages": "search.tuning",
    "ToolCall": "agents.extensions",
}

# A literal list, so type checkers see the re-exports (mypy cannot read a computed __all__).
__all__ = [
    "AgentMemoryError",
    "BackendError",
    "Backlink",
    "CallableEmbedder",
    "Caller",
    "CaptureContext",
    "CaptureResult",
    "ConsolidateOptions",
    "ConsolidationReport",
    "ConsolidationUnsupported",
    "Contradiction",
    "CuratedLimitError",
    "CuratedLine",
    "DistillReport",
    "DoctorReport",
    "Embedder",
    "Episode",
    "EpisodeStore",
    "EpisodesBackend",
    "EpisodesUnsupportedError",
    "ExtendedBackend",
    "FilesBackend",
    "Fts5Engine",
    "Hooks",
    "IdleReport",
    "IdleSummaries",
    "ImportReport",
    "ImportanceWeight",
    "InvalidIdError",
    "InvalidInputError",
    "LengthNorm",
    "LifecycleBackend",
    "Link",
    "LinksBackend",
    "LiteLLMEmbedder",
    "LiteLLMModel",
    "LocalEmbedder",
    "LockTimeoutError",
    "MMR",
    "MemoryBackend",
    "MemoryBlock",
    "MemoryCapability",
    "MemoryContext",
    "MemoryDraft",
    "MemoryHooks",
    "MemoryProvider",
    "MemoryRecord",
    "MemoryStore",
    "MemoryToolHandler",
    "MinScore",
    "MissingExtraError",
    "NotFoundError",
    "OfflineModel",
    "PendingCaptureWarning",
    "PermissionDeniedError",
    "Profile",
    "ProfileError",
    "ReadOnlyError",
    "RecallResult",
    "RecencyBoost",
    "RecordLinks",
    "RecordParseError",
    "Reflection",
    "RememberResult",
    "Retrieved",
    "Scope",
    "SearchEngine",
    "SearchHit",
    "SearchRequest",
    "SearchResult",
    "SessionEnded",
    "SessionInfo",
    "SessionLog",
    "SessionMessage",
    "SessionStore",
    "SessionSummary",
    "SessionsBackend",
    "SessionsNotSupportedError",
    "Stage",
    "StorageError",
    "SummaryPolicy",
    "SweepReport",
    "TidyReport",
    "TimeDecay",
    "ToolCall",
    "UnsupportedError",
    "VectorCache",
    "VectorsBackend",
    "WorkerProfile",
    "Written",
    "build_episode",
    "contextual_search",
    "count_tokens",
    "export_records",
    "import_file",
    "load_profile",
    "make_embedder",
    "memory_toolset",
    "open_backend",
    "purge_episodes",
    "purge_sessions",
    "search_stages",
]

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.agents.core_block import MemoryBlock
    from agent_memory.agents.extensions import ToolCall
    from agent_memory.agents.models.litellm import LiteLLMModel
    from agent_memory.agents.models.offline import OfflineModel
    from agent_memory.agents.profiles import Profile, WorkerProfile, load_profile
    from agent_memory.agents.tokens import count_tokens
    from agent_memory.agents.tools import memory_toolset
    from agent_memory.agents.workers.capture import CaptureContext, CaptureResult
    from agent_memory.agents.workers.recall import RecallResult
    from agent_memory.agents.workers.reflect import Reflection
    from agent_memory.backends import open_backend
    from agent_memory.backends.base import (
        Caller,
        EpisodesBackend,
        LifecycleBackend,
        LinksBackend,
        MemoryBackend,
        SessionsBackend,
        VectorsBackend,
    )
    from agent_memory.backends.extended import ExtendedBackend, Hooks, Retrieved, SessionEnded, Written
    from agent_memory.backends.files.backend import FilesBackend
    from agent_memory.backends.files.fts import Fts5Engine, SearchEngine
    from agent_memory.backends.files.store import MemoryStore
    from agent_memory.backends.files.vectors import VectorCache
    from agent_memory.consolidate import ConsolidateOptions, ConsolidationReport, ConsolidationUnsupported
    from agent_memory.consolidate.contradict import Contradiction
    from agent_memory.consolidate.tend import DistillReport, IdleReport, IdleSummaries
    from agent_memory.consolidate.tidy import TidyReport
    from agent_memory.embeddings import CallableEmbedder, Embedder, LiteLLMEmbedder, LocalEmbedder, make_embedder
    from agent_memory.episodes import Episode, EpisodeStore, EpisodesUnsupportedError, build_episode, purge_episodes
    from agent_memory.errors import (
        AgentMemoryError,
        BackendError,
        CuratedLimitError,
        InvalidIdError,
        InvalidInputError,
        LockTimeoutError,
        MissingExtraError,
        NotFoundError,
        ProfileError,
        ReadOnlyError,
        StorageError,
        UnsupportedError,
    )
    from agent_memory.integrations.anthropic import MemoryToolHandler
    from agent_memory.integrations.hooks import MemoryContext, MemoryHooks
    from agent_memory.integrations.pydantic_ai import MemoryCapability
    from agent_memory.model.curated import CuratedLine
    from agent_memory.model.drafts import MemoryDraft, RememberResult
    from agent_memory.model.links import Backlink, Link, RecordLinks
    from agent_memory.model.records import MemoryRecord, RecordParseError, Scope
    from agent_memory.model.reports import DoctorReport, SweepReport
    from agent_memory.portable import ImportReport, export_records, import_file
    from agent_memory.provider import MemoryProvider, PendingCaptureWarning
    from agent_memory.search.stages import MMR, ImportanceWeight, LengthNorm, MinScore, RecencyBoost, Stage, TimeDecay
    from agent_memory.search.tuning import search_stages
    from agent_memory.search.types import SearchHit, SearchRequest, SearchResult
    from agent_memory.sessions import (
        SessionInfo,
        SessionMessage,
        SessionStore,
        SessionSummary,
        SummaryPolicy,
        contextual_search,
        purge_sessions,
    )
    from agent_memory.sessions.api import SessionsNotSupportedError
    from agent_memory.sessions.store import SessionLog


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_memory' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
