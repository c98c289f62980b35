"""The open-time freshness check: its cost does not grow with the store, and hand edits are still found.

The stores here are small; the bounded check's slice is shrunk to a few files so that they behave as a
store of millions does with the real sizes (``CHECK_SLICE`` files per open, the whole store within
``CHECK_ROUNDS`` opens)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import agent_memory.backends.files.index_sync as index_sync
from agent_memory.backends.files.store import MemoryStore

N = 24


@pytest.fixture
def big(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make a 24-record store behave as a large one: 4 files per check, the whole store within 6 checks."""
    monkeypatch.setattr(index_sync, "CHECK_SLICE", 4)
    monkeypatch.setattr(index_sync, "CHECK_ROUNDS", 6)


def _fill(root: Path) -> tuple[MemoryStore, list[str]]:
    store = MemoryStore(root, durable=False)
    ids = [store.remember(f"fact number {i} about the harbour").id for i in range(N)]
    store.close()
    return store, ids


def _edit_in_place(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    with open(path, "r+") as fh:  # in place: the directory's mtime does not change
        fh.write(text.replace(old, new))
        fh.truncate()


def test_slice_size_covers_small_stores_whole_and_large_ones_within_the_rounds() -> None:
    assert index_sync.slice_size(0) == index_sync.CHECK_SLICE
    assert index_sync.slice_size(index_sync.CHECK_SLICE) == index_sync.CHECK_SLICE
    big_store = 1_000_000
    size = index_sync.slice_size(big_store)
    assert size * index_sync.CHECK_ROUNDS >= big_store and size < big_store


def test_a_cold_open_of_an_unchanged_store_stats_one_slice_and_never_lists_records(tmp_path, big, monkeypatch):
    _fill(tmp_path / "m")
    real_scandir = os.scandir

    def no_listing(path=".", *a, **k):  # noqa: ANN001, ANN002, ANN003
        assert not str(path).endswith("records"), "the open listed records/"
        return real_scandir(path, *a, **k)

    monkeypatch.setattr(os, "scandir", no_listing)
    fresh = MemoryStore(tmp_path / "m", durable=False)
    report = fresh.open()
    assert report is not None and report.scanned == 4
    assert [h.id for h in fresh.search("harbour", limit=3).hits]


def test_an_in_place_edit_in_a_large_store_is_found_within_the_rounds(tmp_path, big):
    store, ids = _fill(tmp_path / "m")
    target = ids[-1]  # the last rowid: the cursor reaches it last
    _edit_in_place(Path(store.records_dir / f"{target}.md"), "harbour", "lighthouse")
    found_at = None
    for opening in range(1, 7):
        fresh = MemoryStore(tmp_path / "m", durable=False)
        hits = fresh.search("lighthouse").hits
        fresh.close()
        if hits:
            assert [h.id for h in hits] == [target]
            found_at = opening
            break
    assert found_at is not None and found_at > 1, found_at  # not the first slice, but within ⌈24 / 4⌉ = 6 opens


def test_small_stores_keep_the_old_guarantee_every_open_checks_every_file(tmp_path):
    store, ids = _fill(tmp_path / "m")  # 24 ≤ CHECK_SLICE: one open covers the whole store
    _edit_in_place(Path(store.records_dir / f"{ids[-1]}.md"), "harbour", "lighthouse")
    assert [h.id for h in MemoryStore(tmp_path / "m").search("lighthouse").hits] == [ids[-1]]


def test_added_removed_and_renamed_files_are_found_at_once_in_a_large_store(tmp_path, big):
    store, ids = _fill(tmp_path / "m")
    records = store.records_dir
    (records / "hand-added.md").write_text("---\ntitle: added\n---\nthe walrus arrived\n")
    os.unlink(records / f"{ids[-1]}.md")
    # an editor that saves by writing a new file and renaming it over the old one
    tmp = records / "editor-save.tmp"
    tmp.write_text((records / f"{ids[-2]}.md").read_text().replace("harbour", "pelican"))
    os.replace(tmp, records / f"{ids[-2]}.md")
    fresh = MemoryStore(tmp_path / "m", durable=False)
    assert [h.id for h in fresh.search("walrus").hits] == ["hand-added"]
    assert [h.id for h in fresh.search("pelican").hits] == [ids[-2]]
    assert ids[-1] not in {h.id for h in fresh.search("harbour", limit=100).hits}


def test_a_hit_edited_in_place_is_reread_alone_not_by_a_full_scan(tmp_path, big, monkeypatch):
    store, ids = _fill(tmp_path / "m")
    fresh = MemoryStore(tmp_path / "m", durable=False)
    fresh.open()
    _edit_in_place(Path(store.records_dir / f"{ids[-1]}.md"), "number 23", "number 23 with a lighthouse")

    def no_full_scan(*a, **k):  # noqa: ANN002, ANN003
        raise AssertionError("a full scan ran")

    monkeypatch.setattr(index_sync, "full_sync", no_full_scan)
    hits = fresh.search("fact number 23").hits
    assert hits[0].id == ids[-1] and "lighthouse" in hits[0].snippet
    assert [h.id for h in fresh.search("lighthouse").hits] == [ids[-1]]


def test_a_quarantined_file_fixed_in_place_comes_back_on_the_next_open(tmp_path, big):
    store, _ = _fill(tmp_path / "m")
    bad = store.records_dir / "broken-note.md"
    bad.write_text("---\ntitle: [oops\n---\nbody\n")
    s2 = MemoryStore(tmp_path / "m", durable=False)
    assert "broken-note.md" in s2.doctor().problems
    s2.open()
    _edit_in_place(bad, "title: [oops", "title: fine")
    fresh = MemoryStore(tmp_path / "m", durable=False)
    fresh.open()
    assert [h.id for h in fresh.search("body").hits] == ["broken-note"]
    assert "broken-note.md" not in fresh.doctor().problems


def test_a_file_made_unreadable_is_withdrawn_by_the_check_that_reaches_it(tmp_path, big):
    store, ids = _fill(tmp_path / "m")
    os.link(store.records_dir / f"{ids[0]}.md", tmp_path / "second-link")  # a hard link: never served
    fresh = MemoryStore(tmp_path / "m", durable=False)
    fresh.open()  # the cursor starts at the first rowid
    assert ids[0] not in {r.id for r in fresh.list(limit=None)}
    assert f"{ids[0]}.md" in fresh.index.stored_problems()


def test_cli_search_imports_no_model_or_server_library(tmp_path):
    root = tmp_path / "m"
    MemoryStore(root, durable=False).remember("the kayak is in the shed")
    code = (
        "import sys; from agent_memory.cli import main\n"
        f"rc = main(['--root', {str(root)!r}, 'search', 'kayak', '--json'])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic_ai', 'litellm', 'tiktoken', 'mcp', 'psycopg')"
        " or m.startswith('agent_memory.mcp'))\n"
        "print('HEAVY', heavy, rc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert "kayak" in out and "HEAVY [] 0" in out, out


def test_a_symlink_keeps_its_problem_and_raises_no_warning_on_each_open(tmp_path, big, caplog):
    store, _ = _fill(tmp_path / "m")
    (tmp_path / "outside.md").write_text("secret outside text\n")
    os.symlink(tmp_path / "outside.md", store.records_dir / "linked.md")
    MemoryStore(tmp_path / "m", durable=False).open()  # the directory changed: a full scan names the link
    caplog.clear()
    fresh = MemoryStore(tmp_path / "m", durable=False)
    fresh.open()
    assert "symlink" in fresh.index.stored_problems()["linked.md"]
    assert not [r for r in caplog.records if "quarantined" in r.getMessage()]
    assert fresh.search("secret outside").hits == []


def test_a_writer_killed_holding_the_lock_makes_the_next_open_a_full_scan(tmp_path, big):
    """A writer that died between writing a file and indexing it may leave no trace in any mtime
    (same clock tick): the lock file says its holder never let go, and the next open scans everything."""
    store, ids = _fill(tmp_path / "m")
    lock = store.root / ".lock"
    assert lock.read_bytes()[:1] == b"0"  # released cleanly
    index = store.index
    stamp = index.guarded(lambda c: index.meta(c, "dir_mtime"))
    (store.records_dir / "orphan-write.md").write_text("---\ntitle: orphan\n---\nthe unindexed albatross\n")
    (store.records_dir / ".tmp-orphan-write.md.1.2").write_text("half")
    mtime = int(stamp)
    os.utime(store.records_dir, ns=(mtime, mtime))  # as if both landed in the tick of the last sync
    with open(lock, "r+b") as fh:  # and the writer was killed while holding the lock
        fh.write(b"1")
    fresh = MemoryStore(tmp_path / "m", durable=False)
    report = fresh.open()
    assert report is not None and report.scanned == N + 1
    assert [h.id for h in fresh.search("albatross").hits] == ["orphan-write"]
    assert not (store.records_dir / ".tmp-orphan-write.md.1.2").exists()
    assert lock.read_bytes()[:1] == b"0" and not fresh.lock.unclean
    again = MemoryStore(tmp_path / "m", durable=False).open()
    assert again is not None and again.scanned == index_sync.slice_size(N + 1)  # back to one slice


def test_without_the_unclean_mark_a_same_tick_change_waits_for_a_full_check(tmp_path, big):
    """The counterpart: the same leftovers with a cleanly released lock are not looked for by the open."""
    store, _ = _fill(tmp_path / "m")
    index = store.index
    mtime = int(index.guarded(lambda c: index.meta(c, "dir_mtime")))
    (store.records_dir / "orphan-write.md").write_text("---\ntitle: orphan\n---\nthe unindexed albatross\n")
    os.utime(store.records_dir, ns=(mtime, mtime))
    fresh = MemoryStore(tmp_path / "m", durable=False)
    report = fresh.open()
    assert report is not None and report.scanned == 4 and fresh.search("albatross").hits == []
    assert fresh.doctor().drift["missing_from_index"] == 1  # doctor (a full check) names it


def test_the_lock_is_marked_only_by_a_holder_that_writes(tmp_path):
    from agent_memory.formats.atomic import atomic_write

    store, _ = _fill(tmp_path / "m")
    lock = store.root / ".lock"
    before = lock.stat().st_mtime_ns
    with store.lock.hold():  # a reader holding the lock leaves the file as it was
        store.index.full_sync()
    assert lock.stat().st_mtime_ns == before and lock.read_bytes()[:1] == b"0"
    with store.lock.hold():
        atomic_write(store.root / "scratch.md", b"x", durable=False)
        assert lock.read_bytes()[:1] == b"1"  # what a writer killed now would leave behind
    assert lock.read_bytes()[:1] == b"0" and not store.lock.unclean


def test_an_open_of_an_unchanged_store_writes_nothing_to_the_index_and_the_cursor_still_moves(tmp_path, big):
    """The check's cursor is a note in the lock file: an unchanged store's open runs no index transaction (so no WAL
    is created or synced), and successive opens by new processes still walk the store slice by slice."""
    _fill(tmp_path / "m")
    MemoryStore(tmp_path / "m", durable=False).open()  # the first check records the archive's state once
    wal = tmp_path / "m" / "index.db-wal"
    wal_before = wal.stat().st_size if wal.exists() else 0
    for _ in range(3):
        fresh = MemoryStore(tmp_path / "m", durable=False)
        statements: list[str] = []
        fresh.index.conn.set_trace_callback(statements.append)
        report = fresh.open()
        fresh.index.conn.set_trace_callback(None)
        assert report is not None and report.scanned == 4
        assert not [s for s in statements if s.split()[0].upper() in ("BEGIN", "INSERT", "UPDATE", "DELETE", "COMMIT")]
        fresh.close()
    assert (wal.stat().st_size if wal.exists() else 0) == wal_before  # nothing appended to the WAL
    assert fresh.lock.note() == b""  # only readable while held
    with fresh.lock.hold():
        assert fresh.lock.note() == b"cursor 16"  # four slices of 4 rows


def test_a_lost_or_garbled_cursor_note_restarts_the_walk(tmp_path, big):
    store, _ = _fill(tmp_path / "m")
    with store.lock.hold():
        store.lock.set_note(b"cursor x!")
    fresh = MemoryStore(tmp_path / "m", durable=False)
    assert fresh.open() is not None
    with fresh.lock.hold():
        assert fresh.lock.note() == b"cursor 4"
