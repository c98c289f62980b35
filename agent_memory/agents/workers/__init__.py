"""The provider's private worker agents and what they share.

:mod:`.recall` answers "what does memory know about this message?" with a cited summary;
:mod:`.capture` stores durable facts from a turn or from messages about to be compacted.
Both run a pydantic-ai ``Agent`` whose only tools are memory tools bound to the caller, under
the profile's step and time limits, and both fail open: they never raise into the caller.
What they share lives in :mod:`.runner` (re-exported here); the workers import it from there, never
from this package, so the package and its workers form no import cycle.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agent_memory.agents.workers.runner import (
    _MODELS,
    TOOLSET_CACHE_SIZE,
    RecordingToolset,
    ToolCallRecord,
    UnusableOutput,
    abandon,
    bound_toolset,
    describe_error,
    resolve_worker,
    run_worker,
    trim_to_tokens,
    usage_dict,
    warm_up,
    worker_model,
    worker_model_async,
)

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.agents.workers.capture import CaptureContext, CaptureResult, capture_before_compaction, capture_turn, rule_extractor
    from agent_memory.agents.workers.recall import RecallResult, lexical_summary, run_recall

__all__ = [
    "RecallResult",
    "run_recall",
    "lexical_summary",
    "CaptureResult",
    "CaptureContext",
    "capture_turn",
    "capture_before_compaction",
    "rule_extractor",
    "trim_to_tokens",
    "usage_dict",
    "RecordingToolset",
    "ToolCallRecord",
    "UnusableOutput",
    "TOOLSET_CACHE_SIZE",
    "abandon",
    "bound_toolset",
    "describe_error",
    "resolve_worker",
    "run_worker",
    "warm_up",
    "worker_model",
    "worker_model_async",
    "_MODELS",
]
_LAZY = {
    "RecallResult": "recall",
    "run_recall": "recall",
    "lexical_summary": "recall",
    "CaptureResult": "capture",
    "CaptureContext": "capture",
    "capture_turn": "capture",
    "capture_before_compaction": "capture",
    "rule_extractor": "capture",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
