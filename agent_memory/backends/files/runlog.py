"""The consolidation run history of a files root: ``consolidation.log``, one JSON line per run (dry or applied).

A line says when the run was, who asked (``caller``), whether it was a dry run, how many records it could change,
every change with its rule, reason and status (``applied``, ``planned``, ``skipped``/``not_applied`` with why), the
owner of each changed record (so a reader sees only the changes of records it may see: :mod:`agent_memory.model.scopes`),
why it stopped, and the drift it found. It holds record ids and reasons, never record text; reasons pass the write
gate's archive note (:func:`agent_memory.model.drafts.archive_note`). A purge drops the purged records' changes and
the purged owner's caller fields (:meth:`RunLog.strip`).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agent_memory.formats.atomic import atomic_write
from agent_memory.model.scopes import may_see, owns

__all__ = ["RUN_LOG", "RunLog", "visible_run"]

RUN_LOG = "consolidation.log"
MAX_RUNS_READ = 10_000  # the newest runs a history read looks at


class RunLog:
    """The run history of one root."""

    def __init__(self, root: str | os.PathLike[str], *, durable: bool = True) -> None:
        self.path = Path(root) / RUN_LOG
        self.durable = durable
        self._lock = threading.Lock()

    def append(self, run: Mapping[str, Any]) -> None:
        """Append one run (one line, ``O_APPEND``: concurrent runs never interleave within a line)."""
        data = (json.dumps(dict(run), ensure_ascii=False, separators=(",", ":"), default=str) + "\n").encode("utf-8")
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, data)
                if self.durable:
                    os.fsync(fd)
            finally:
                os.close(fd)

    def read(self) -> list[dict[str, Any]]:
        """Every readable run, oldest first (a torn or foreign line is skipped)."""
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()[-MAX_RUNS_READ:]
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            try:
                run = json.loads(line)
            except ValueError:
                continue
            if isinstance(run, dict) and isinstance(run.get("changes"), list):
                out.append(run)
        return out

    def strip(self, ids: Iterable[str], session_id: str | None, user_id: str | None) -> int:
        """Purge: drop the changes of ``ids`` (and, for an owner purge, of that owner's records) and blank the caller
        of that owner's runs; returns how many changes went."""
        gone, removed, lines = set(ids), 0, []
        owner_purge = bool(session_id or user_id)
        for run in self.read():
            kept = []
            for c in run["changes"]:
                mine = owner_purge and owns(c.get("session_id"), c.get("user_id"), session_id=session_id, user_id=user_id)
                if c.get("id") in gone or mine:
                    removed += 1
                else:
                    kept.append(c)
            run["changes"] = kept
            run["drift"] = [d for d in run.get("drift") or [] if not gone & set(d.get("record_ids") or [])]
            who = run.get("caller") or {}
            if owner_purge and (who.get("session_id") or who.get("user_id")):
                if owns(who.get("session_id"), who.get("user_id"), session_id=session_id, user_id=user_id):
                    run["caller"] = {"purged": True}
            lines.append(json.dumps(run, ensure_ascii=False, separators=(",", ":"), default=str) + "\n")
        if self.path.exists():
            atomic_write(self.path, "".join(lines).encode("utf-8"), durable=self.durable)
        return removed


def visible_run(
    run: Mapping[str, Any],
    session_id: str | None,
    user_id: str | None,
    *,
    namespace: str | None = None,
    view: Iterable[str] | None = None,
) -> dict[str, Any]:
    """``run`` as a caller may read it: only the changes (and drift) of records it may see (its namespace ``view``
    included: a change without a namespace is the root's); the owner fields dropped; the run's size (how many records
    it looked at, its cap) only to the caller that ran it, since it tells how big another partition is."""
    seen = tuple(view) if view is not None else ((namespace or ""),)

    def sees(item: Mapping[str, Any]) -> bool:
        return may_see(
            str(item.get("scope") or "project"),
            item.get("session_id"),
            item.get("user_id"),
            session_id=session_id,
            user_id=user_id,
            namespace=str(item.get("namespace") or ""),
            view=seen,
        )

    hidden = ("session_id", "user_id", "namespace")
    changes = [{k: v for k, v in c.items() if k not in hidden} for c in run.get("changes") or [] if sees(c)]
    drift = [{k: v for k, v in d.items() if k not in hidden} for d in run.get("drift") or [] if sees(d)]
    who = run.get("caller") or {}
    mine = (who.get("session_id"), who.get("user_id"), who.get("namespace") or "") == (session_id, user_id, namespace or "")
    out = {k: v for k, v in run.items() if k not in ("changes", "drift", "caller") and (mine or k not in ("total", "limit"))}
    return {**out, "changes": changes, "drift": drift}
