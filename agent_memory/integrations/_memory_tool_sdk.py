"""Adapters of :class:`~agent_memory.integrations.anthropic.MemoryToolHandler` to the ``anthropic`` SDK's
abstract memory tools, so ``client.beta.messages.tool_runner(tools=[...])`` can run it. Imported on demand.

The adapters need only the handler's two entry points, named by :class:`MemoryCommands`, so this module
does not import the handler's module (which imports this one)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from agent_memory.errors import AgentMemoryError

try:
    from anthropic.lib.tools import ToolError
    from anthropic.tools.memory import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool
except ImportError as exc:  # pragma: no cover - exercised only without the optional SDK
    raise ImportError("the anthropic SDK is needed for as_sdk_tool(): pip install anthropic") from exc

__all__ = ["MemoryCommands", "sync_tool", "async_tool"]


class MemoryCommands(Protocol):
    """What the adapters call: run one tool-use input, raising a typed error when it is refused."""

    def execute_sync(self, command: Mapping[str, Any]) -> str: ...

    async def execute(self, command: Mapping[str, Any]) -> str: ...


def _plain(command: Any) -> dict[str, Any]:
    dump = getattr(command, "model_dump", None)
    return dict(dump(exclude_none=True)) if dump is not None else dict(command)


class StoreMemoryTool(BetaAbstractMemoryTool):  # type: ignore[misc]
    """The SDK's synchronous memory tool, served from the memory store."""

    def __init__(self, handler: MemoryCommands) -> None:
        super().__init__()
        self.handler = handler

    def _run(self, command: Any) -> str:
        try:
            return self.handler.execute_sync(_plain(command))
        except AgentMemoryError as exc:
            raise ToolError(str(exc)) from None

    view = create = str_replace = insert = delete = rename = _run


class AsyncStoreMemoryTool(BetaAsyncAbstractMemoryTool):  # type: ignore[misc]
    """The SDK's asynchronous memory tool, served from the memory store."""

    def __init__(self, handler: MemoryCommands) -> None:
        super().__init__()
        self.handler = handler

    async def _run(self, command: Any) -> str:
        try:
            return await self.handler.execute(_plain(command))
        except AgentMemoryError as exc:
            raise ToolError(str(exc)) from None

    view = create = str_replace = insert = delete = rename = _run


def sync_tool(handler: MemoryCommands) -> StoreMemoryTool:
    return StoreMemoryTool(handler)


def async_tool(handler: MemoryCommands) -> AsyncStoreMemoryTool:
    return AsyncStoreMemoryTool(handler)
