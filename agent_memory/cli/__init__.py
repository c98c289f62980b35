"""``agent-memory``: a thin command line over the store and the provider.

One module per command group: ``_records`` (remember, search, get, list, forget, inject), ``_maint`` (init,
import, reindex, doctor, sweep), ``_workers`` (recall, capture), ``_eval`` (eval). Store commands never import
pydantic-ai or litellm. Every command takes ``--json`` and then prints exactly one JSON document; errors are one
line on stderr (plus ``{"error": {"type", "message"}}`` with ``--json``), exit 2 for usage errors and 1 otherwise.
The reference is docs/cli.md.
"""

from __future__ import annotations

from agent_memory.cli._app import COMMANDS, build_parser, main
from agent_memory.cli._base import DEFAULT_ROOT, UsageError

__all__ = ["COMMANDS", "DEFAULT_ROOT", "UsageError", "build_parser", "main"]
