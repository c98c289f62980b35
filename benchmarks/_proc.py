"""CPU time of a PostgreSQL server's processes, read from /proc (Linux), for per-CPU-second ingest figures."""

from __future__ import annotations

import os
from pathlib import Path


def server_cpu_s(data: Path) -> float:
    """CPU seconds (user + system) of the server's processes so far (postmaster and its live children)."""
    tick = os.sysconf("SC_CLK_TCK")
    try:
        master = int((data / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError):
        return 0.0
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(pid) == master or int(fields[1]) == master:
            total += int(fields[11]) + int(fields[12])
    return total / tick
