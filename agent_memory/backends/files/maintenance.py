"""Index maintenance for the files backend: rebuild the index from the files, and check them against it."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from agent_memory.errors import StorageError
from agent_memory.formats.atomic import TMP_PREFIX
from agent_memory.formats.quarantine import check_name, check_stat, describe
from agent_memory.model.records import RecordParseError
from agent_memory.model.reports import DoctorReport, SyncReport

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.files.parts import StoreParts


def reindex(store: StoreParts) -> SyncReport:
    """Rebuild the index from the files aside and swap it in atomically (readers never see it empty)."""
    with store.lock.hold():
        report: SyncReport = store.index.healing(store.index.rebuild_aside)
        store.write_memory_md()
    return report


def _directory_problems(store: StoreParts) -> dict[str, str]:
    problems: dict[str, str] = {}
    for folder in (store.records_dir, store.archive_dir):
        if folder.is_symlink():
            problems[f"{folder.name}/"] = (
                f"{folder.name}/ is a symlink (it may lead outside the root); fix: replace it with a real directory holding the files"
            )
    archive = store.archive_dir
    if archive.is_dir() and not archive.is_symlink():
        for name in sorted(os.listdir(archive)):
            if name.startswith(TMP_PREFIX):
                problems[f"archive/{name}"] = (
                    "temp file of an interrupted sweep (holds a record's full text); "
                    "fix: run `agent-memory reindex` (it removes such files)"
                )
    return problems


def doctor(store: StoreParts) -> DoctorReport:
    """Check files against the index without fixing anything first.

    Fast: a file whose size and mtime match its index row was parsed when indexed, so only its
    name and metadata are checked (one ``stat``); only new or changed files are read and parsed.
    Every problem names its file, the reason and a suggested fix."""
    problems = _directory_problems(store)
    if "records/" in problems:
        return DoctorReport(0, 0, problems, {}, ok=False)
    index = store.index
    try:
        rows = index.guarded(lambda c: c.execute("SELECT file, mtime_ns, size FROM records").fetchall())
    except StorageError as exc:
        problems["index.db"] = f"{exc}; fix: check the disk, then run `agent-memory reindex`"
        rows = []
    indexed = {file: (mtime_ns, size) for file, mtime_ns, size in rows}
    on_disk: dict[str, tuple[int, int]] = {}
    for entry in index.record_files():
        name = entry.name
        try:
            st = entry.stat(follow_symlinks=False)
            on_disk[name] = (st.st_mtime_ns, st.st_size)
            check_name(name)
            check_stat(st)
            if indexed.get(name) != on_disk[name]:
                index.load_file(name)
        except FileNotFoundError:
            on_disk.pop(name, None)
        except (OSError, RecordParseError) as exc:
            problems[name] = describe(exc)
    problems.update({k: v for k, v in index.problems.items() if k not in on_disk and k not in problems})
    for line in store.events.read()[1]:  # a torn event line (a crash mid-append) is skipped by every reader
        where, _, why = line.partition(": ")
        problems[where] = f"{why}; fix: none needed (readers skip it); delete that line to silence this"
    readable = {k for k in on_disk if k not in problems}
    drift = {
        "missing_from_index": len(readable - set(indexed)),
        "stale_in_index": sum(1 for k in readable & set(indexed) if indexed[k] != on_disk[k]),
        "orphaned_in_index": len(set(indexed) - set(on_disk)),
    }
    return DoctorReport(len(on_disk), len(indexed), problems, drift, ok=not problems and not any(drift.values()))
