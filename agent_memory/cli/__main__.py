"""``python -m agent_memory.cli``."""

import sys

from agent_memory.cli._app import main

sys.exit(main())
