"""An MCP server over the memory store (``agent-memory mcp``): stdio and streamable HTTP.

The ``mcp`` SDK is imported only when a server is built, so importing this package stays cheap.
"""

from __future__ import annotations

from ._args import ToolArgumentError
from ._config import AccessDeniedError, ConfigError, Identity, ServerOptions, TokenMap
from .cli import add_mcp_command, register, serve

__all__ = ["AccessDeniedError", "ConfigError", "Identity", "ServerOptions", "TokenMap", "ToolArgumentError",
           "add_mcp_command", "register", "serve"]
