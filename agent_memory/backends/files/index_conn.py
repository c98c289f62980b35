"""Opening the index database: one connection with the settings every reader and writer relies on."""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from pathlib import Path

from agent_memory.formats.atomic import FILE_MODE

log = logging.getLogger("agent_memory")


def open_connection(path: Path, busy_timeout_s: float) -> sqlite3.Connection:
    """A connection to the index file: WAL, a busy timeout, zeroed free pages; planted symlinks removed first."""
    for suffix in ("", "-wal", "-shm", "-journal"):  # derived files: a planted symlink is removed, never followed
        if os.path.islink(f"{path}{suffix}"):
            log.warning("removing symlink %s%s (the index never follows links out of the root)", path, suffix)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{path}{suffix}")
    conn = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
    deadline = time.monotonic() + busy_timeout_s
    while True:  # switching a new file to WAL fails at once (no busy handler) while another connection does it
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed: forgotten text leaves the file
    with contextlib.suppress(OSError):
        os.chmod(path, FILE_MODE)
    return conn
