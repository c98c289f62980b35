"""Runtime integrations.

* :mod:`agent_memory.integrations.pydantic_ai` — :class:`MemoryCapability` for pydantic-ai v2 agents.
* :mod:`agent_memory.integrations.hooks` — :class:`~agent_memory.integrations.hooks.MemoryHooks`, plain lifecycle hooks for any
  other runtime or a hand-written loop.

Submodules are imported on demand, so importing this package never imports pydantic-ai.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "MemoryCapability": "agent_memory.integrations.pydantic_ai",
    "MemoryTurn": "agent_memory.integrations.pydantic_ai",
    "keep_recent_turns": "agent_memory.integrations.pydantic_ai",
    "MemoryHooks": "agent_memory.integrations.hooks",
    "MemoryContext": "agent_memory.integrations.hooks",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.integrations.hooks import MemoryContext, MemoryHooks
    from agent_memory.integrations.pydantic_ai import MemoryCapability, MemoryTurn, keep_recent_turns


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_memory.integrations' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
