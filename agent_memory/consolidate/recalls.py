"""Which records were ever recalled: an append-only ``recalled.log`` of record ids under the root.

Decay archives only records that were never recalled, so "recalled" must be observable and cheap: a
provider created with ``track_recalls=True`` registers :meth:`RecallLog.hook` as an ``on_memory_retrieved``
hook; each record id handed to a worker or the main model (a search hit, a listed or fetched record) is
appended once per process (``<id>\\t<UTC time>``, one short ``O_APPEND`` write per new id). The file holds ids
and times only, never content. Without the file, decay is skipped (the report says so).
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

from agent_memory.model.records import now_iso

__all__ = ["RecallLog", "RECALL_LOG"]

RECALL_LOG = "recalled.log"


class RecallLog:
    """The recall log of one root."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.path = Path(root) / RECALL_LOG
        self._noted: set[str] = set()
        self._lock = threading.Lock()

    @property
    def exists(self) -> bool:
        return self.path.is_file()

    def ids(self) -> set[str]:
        """Every id in the log (unreadable lines are ignored)."""
        try:
            with open(self.path, encoding="utf-8", errors="replace") as fh:
                return {line.split("\t", 1)[0].strip() for line in fh if line.strip()}
        except FileNotFoundError:
            return set()

    def times(self) -> dict[str, list[str]]:
        """When each id was recalled (one entry per process that recalled it), oldest first."""
        out: dict[str, list[str]] = {}
        try:
            with open(self.path, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    rid, _, when = line.rstrip("\n").partition("\t")
                    if rid.strip():
                        out.setdefault(rid.strip(), []).append(when.strip())
        except FileNotFoundError:
            return {}
        return {k: sorted(v) for k, v in out.items()}

    def note(self, ids: list[str]) -> int:
        """Append the ids not noted yet by this process; returns how many were written."""
        with self._lock:
            new = [i for i in dict.fromkeys(ids) if i and "\n" not in i and "\t" not in i and i not in self._noted]
            if not new:
                return 0
            stamp = now_iso()
            data = "".join(f"{i}\t{stamp}\n" for i in new).encode("utf-8")
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            self._noted.update(new)
            return len(new)

    async def hook(self, event: Any) -> None:
        """An ``on_memory_retrieved`` hook: note the ids (off the event loop), change nothing."""
        ids = [i for i in (str(getattr(item, "id", "")) for item in event.items) if i and i not in self._noted]
        if ids:
            await asyncio.to_thread(self.note, ids)
