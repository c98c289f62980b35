"""``python -m agent_memory.cli``."""

import sys

from ._app import main

sys.exit(main())
