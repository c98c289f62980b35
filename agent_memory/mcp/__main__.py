"""``python -m agent_memory.mcp [options]``: the same server as ``agent-memory mcp``."""

from __future__ import annotations

import os
import sys

from agent_memory.errors import AgentMemoryError
from agent_memory.mcp.cli import serve

if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        serve(sys.argv[1:])
    except AgentMemoryError as exc:
        print(f"agent-memory mcp: error: {exc}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
