"""An MCP server over the memory store (``agent-memory mcp``): stdio and streamable HTTP.

The ``mcp`` SDK is imported only when a server is built, so importing this package stays cheap.
"""

from __future__ import annotations

from agent_memory.mcp._args import ToolArgumentError
from agent_memory.mcp._config import AccessDeniedError, ConfigError, Identity, ServerOptions, TokenMap
from agent_memory.mcp.cli import add_mcp_command, register, serve

__all__ = [
    "AccessDeniedError",
    "ConfigError",
    "Identity",
    "ServerOptions",
    "TokenMap",
    "ToolArgumentError",
    "add_mcp_command",
    "register",
    "serve",
]
