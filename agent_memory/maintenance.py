"""Index maintenance for the files backend: rebuild the index from the files, and check them against it."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .index import SyncReport
from .records import RecordParseError

if TYPE_CHECKING:  # pragma: no cover
    from .store import DoctorReport, MemoryStore


def reindex(store: "MemoryStore") -> SyncReport:
    """Drop and rebuild the index from the files."""
    def rebuild() -> SyncReport:
        with store.index.transaction() as conn:
            conn.execute("DELETE FROM records")
            conn.execute("DELETE FROM record_tags")
            conn.execute("DELETE FROM fts")
        return store.index.full_sync()

    with store.lock.hold():
        report = store.index.healing(rebuild)
        report.rebuilt = True
        store.write_memory_md()
    store._opened = True
    return report

def doctor(store: "MemoryStore") -> DoctorReport:
    """Check files against the index: unreadable files and drift (without fixing first)."""
    indexed = {r["file"]: (r["mtime_ns"], r["size"]) for r in store.index.rows_where("1", {}, order="id")}
    on_disk: dict[str, tuple[int, int]] = {}
    problems: dict[str, str] = {}
    for entry in store.index.record_files():
        st = entry.stat(follow_symlinks=False)
        on_disk[entry.name] = (st.st_mtime_ns, st.st_size)
        try:
            store.index.load_file(entry.name)
        except (OSError, RecordParseError) as exc:
            problems[entry.name] = str(exc)
    problems.update({k: v for k, v in store.index.problems.items() if k not in on_disk})
    for name in os.listdir(store.records_dir):
        if name.endswith(".md") and (store.records_dir / name).is_symlink():
            problems[name] = "symlink ignored (records must be regular files)"
    readable = {k for k in on_disk if k not in problems}
    drift = {
        "missing_from_index": len(readable - set(indexed)),
        "stale_in_index": sum(1 for k in readable & set(indexed) if indexed[k] != on_disk[k]),
        "orphaned_in_index": len(set(indexed) - set(on_disk)),
    }
    from .store import DoctorReport

    return DoctorReport(len(on_disk), len(indexed), problems, drift, ok=not problems and not any(drift.values()))
