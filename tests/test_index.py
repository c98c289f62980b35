"""The derived index: incremental sync, hand edits, self-healing, doctor, search basics."""

import os
import time
from typing import Any

import pytest

from agent_memory.backends.files.store import MemoryStore


@pytest.fixture
def store(tmp_path):
    return MemoryStore(tmp_path / "mem")


def test_index_is_created_on_first_use_with_wal(store):
    store.remember("hello index")
    assert (store.root / "index.db").exists()
    assert store.index.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_file_added_by_hand_is_found(store):
    store.remember("something else")
    (store.records_dir / "hand-note.md").write_text("---\ntitle: Kayak\ntags: [outdoors]\n---\nWe kayak on Saturdays.\n")
    [hit] = store.search("when do we kayak").hits
    assert hit.id == "hand-note" and hit.line_start == 5 and hit.snippet == "We kayak on Saturdays."
    assert store.get("hand-note").tags == ("outdoors",)


def test_a_file_edited_in_place_by_hand_is_found(store):
    r = store.remember("The office is in Lisbon.")
    path = store.records_dir / f"{r.id}.md"
    text = path.read_text()
    with open(path, "r+") as fh:  # in place, like many editors: the directory mtime does not change
        fh.write(text.replace("Lisbon", "Porto, near the river"))
        fh.truncate()
    assert store.get(r.id).content == "The office is in Porto, near the river."
    hits = store.search("office").hits
    assert hits[0].id == r.id and "Porto" in hits[0].snippet
    assert store.search("river").hits[0].id == r.id


def test_in_place_edit_is_found_by_a_new_process_view(store, tmp_path):
    r = store.remember("Cats are named Miso.")
    path = store.records_dir / f"{r.id}.md"
    path.write_text(path.read_text().replace("Miso", "Tofu"))
    fresh = MemoryStore(store.root)  # a new provider (e.g. the CLI) always does a full stat scan on open
    assert fresh.search("tofu").hits[0].id == r.id


def test_a_file_deleted_by_hand_disappears(store):
    r = store.remember("ephemeral walrus")
    os.unlink(r.path)
    assert store.search("walrus").hits == []


@pytest.mark.parametrize("damage", ["delete", "truncate", "garbage"])
def test_damaged_index_is_rebuilt_from_files(store, damage):
    ids = [store.remember(f"persistent fact {i} about otters").id for i in range(5)]
    store.close()
    db = store.root / "index.db"
    for suffix in ("-wal", "-shm"):
        if os.path.exists(f"{db}{suffix}"):
            os.unlink(f"{db}{suffix}")
    if damage == "delete":
        os.unlink(db)
    elif damage == "truncate":
        with open(db, "r+b") as fh:
            fh.truncate(1000)
    else:
        db.write_bytes(os.urandom(64 * 1024))
    fresh = MemoryStore(store.root)
    assert {h.id for h in fresh.search("otters").hits} == set(ids)


def test_broken_frontmatter_is_skipped_reported_and_never_stops_search(store):
    good = store.remember("Reliable content about penguins.")
    (store.records_dir / "broken.md").write_text("---\ntitle: [oops\n---\npenguins too\n")
    (store.records_dir / "binary.md").write_bytes(b"\xff\xfe\x00garbage")
    hits = store.search("penguins").hits
    assert [h.id for h in hits] == [good.id]
    report = store.doctor()
    assert set(report.problems) == {"broken.md", "binary.md"} and not report.ok


def test_doctor_reports_drift_and_reindex_repairs_it(store):
    store.remember("alpha record")
    time.sleep(0.01)
    (store.records_dir / "late.md").write_text("added behind the index's back\n")
    report = store.doctor()
    assert report.drift["missing_from_index"] == 1 and not report.ok
    rebuilt = store.reindex()
    assert rebuilt.rebuilt and rebuilt.added == 2
    assert store.doctor().ok


def test_temp_and_hidden_files_are_never_records(store):
    (store.records_dir / ".tmp-x.md.123.1").write_text("half written")
    (store.records_dir / ".hidden.md").write_text("hidden")
    (store.records_dir / "notes.txt").write_text("not markdown")
    assert store.search("half written hidden markdown").hits == []


def test_symlinks_are_not_followed(store, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("secret outside content zebra")
    os.symlink(outside, store.records_dir / "link.md")
    assert store.search("zebra").hits == []
    assert "link.md" in store.doctor().problems


def test_doctor_reads_only_files_that_changed_since_indexing(store, monkeypatch):
    ids = [store.remember(f"doctor speed fact {i}").id for i in range(30)]
    calls: list[str] = []
    real = store.index.load_file

    def counted(name: str) -> Any:
        calls.append(name)
        return real(name)

    monkeypatch.setattr(store.index, "load_file", counted)
    assert store.doctor().ok and calls == []  # in sync: one stat per file, no parsing
    path = store.records_dir / f"{ids[3]}.md"
    path.write_text(path.read_text().replace("fact 3", "fact three, edited"))
    report = store.doctor()
    assert calls == [f"{ids[3]}.md"] and report.drift["stale_in_index"] == 1


def test_doctor_problems_name_a_fix(store):
    store.remember("fine")
    (store.records_dir / "bad.md").write_text("---\nscope: user\n---\nno owner\n")
    problem = store.doctor().problems["bad.md"]
    assert "scope user without a user_id" in problem and "fix: add user_id" in problem
