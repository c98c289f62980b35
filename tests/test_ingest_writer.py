"""The writer side of a big ``remember_many`` (issue 32): the bulk settings of its index connection, and the index
rows of new records written without the drops a rewrite needs. Checks rows and settings, never time."""

from __future__ import annotations

import dataclasses
import pickle
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import agent_memory.backends.files.record_files as record_files
from agent_memory.backends.files.index import BULK_CHECKPOINT_PAGES
from agent_memory.backends.files.store import MemoryStore
from agent_memory.model.drafts import MemoryDraft
from agent_memory.model.records import MemoryRecord, Scope


@dataclasses.dataclass(frozen=True, slots=True)
class Tagged(MemoryRecord):
    """A subclass: replaced and pickled as dataclasses does it."""

    label: str = ""


def _pragma(conn: sqlite3.Connection, name: str) -> int:
    return int(conn.execute(f"PRAGMA {name}").fetchone()[0])


def test_a_write_of_many_batches_defers_checkpoints_then_restores_the_connection(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "root", rescan_interval=None)
    store.open()
    conn = store.index.conn
    before = (_pragma(conn, "wal_autocheckpoint"), _pragma(conn, "cache_size"))
    seen: list[tuple[int, int]] = []
    drafts = [MemoryDraft(content=f"Fact {i} about the orchard and its pears.", tags=("orchard",)) for i in range(7)]
    store.remember_many(
        drafts, batch_size=3, progress=lambda _n: seen.append((_pragma(conn, "wal_autocheckpoint"), _pragma(conn, "cache_size")))
    )
    assert len(seen) == 3
    # checkpoints far apart (not after each batch's commit: SQLite's default 1,000 pages), never off (a bounded WAL)
    assert all(every == BULK_CHECKPOINT_PAGES > before[0] > 0 for every, _ in seen)
    assert all(cache < before[1] for _, cache in seen)  # a bigger cache (negative: KiB)
    assert (_pragma(conn, "wal_autocheckpoint"), _pragma(conn, "cache_size")) == before
    assert store.index.count() == 7
    # a single batch is left as it is
    seen.clear()
    store.remember_many(
        [MemoryDraft(content="One more fact about the pears.")], progress=lambda _n: seen.append((_pragma(conn, "wal_autocheckpoint"), 0))
    )
    assert seen == [(before[0], 0)]


def _link_rows(root: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    db = sqlite3.connect(root / "index.db")
    try:
        titles = sorted(db.execute("SELECT r.id, t.key FROM record_titles t JOIN records r ON r.rowid = t.rid").fetchall())
        links = sorted(db.execute("SELECT src, pos, target, key FROM record_links").fetchall())
    finally:
        db.close()
    return titles, links


def test_new_records_get_the_link_rows_a_reindex_makes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store = MemoryStore(root, rescan_interval=None)
    drafts = [
        MemoryDraft(content=f"Note {i} points at [[Garden plan]] and [[pear-tree-{i % 3}]].", title=f"Note about pears {i}")
        for i in range(6)
    ]
    store.remember_many([MemoryDraft(content="The garden plan.", title="Garden plan"), *drafts], batch_size=4)
    written = _link_rows(root)
    assert len(written[0]) == 7 and len(written[1]) == 12
    store.reindex()
    assert _link_rows(root) == written


def test_a_stray_title_row_of_a_new_id_is_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    store = MemoryStore(root, rescan_interval=None)
    store.open()
    rid = "2026-11-28-stray-0a1b2c3d"
    with store.index.transaction() as conn:  # a row no write leaves behind, as a damaged index might hold
        next_rowid = conn.execute("SELECT coalesce(max(rowid), 0) + 1 FROM records").fetchone()[0]
        conn.execute("INSERT INTO record_titles VALUES (?, ?)", (next_rowid, "stale"))  # the row the new record takes
        conn.execute("INSERT INTO record_links VALUES (?, 0, 'x', 'x')", (rid,))
    monkeypatch.setattr(record_files, "new_id", lambda _source, _created: rid)
    res = store.remember_many([MemoryDraft(content="Fresh text with a link to [[Elsewhere]].", title="Stray")])
    assert res[0].id == rid and res[0].status == "created"
    titles, links = _link_rows(root)
    assert titles == [(rid, "stray")]
    assert links == [(rid, 0, "Elsewhere", "elsewhere")]


def test_a_record_replaced_or_pickled_is_the_record_dataclasses_makes() -> None:
    rec = MemoryRecord(
        id="2026-11-28-pears-0a1b2c3d",
        content="Pears ripen in September.",
        title="Pears",
        scope=Scope.USER,
        user_id="ada",
        tags=("orchard", "pears"),
        metadata={"provenance": {"created": {"actor": "import"}}},
        namespace="garden",
        importance=0.5,
    )
    tried: list[dict[str, Any]] = [{"id": "2026-11-28-other-0a1b2c3d"}, {"metadata": {}, "tags": ()}, {}]
    for changes in tried:
        assert rec.replace(**changes) == dataclasses.replace(rec, **changes)
    with pytest.raises(TypeError):
        rec.replace(colour="red")
    back = pickle.loads(pickle.dumps(rec, protocol=pickle.HIGHEST_PROTOCOL))
    assert back == rec and type(back) is MemoryRecord

    sub = Tagged(id="r", content="x", label="kept")
    assert sub.replace(id="s") == Tagged(id="s", content="x", label="kept")
    assert pickle.loads(pickle.dumps(sub)) == sub


def test_memory_md_is_refreshed_at_most_once_a_second_during_a_big_write_and_at_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write of many batches does not rewrite MEMORY.md after each batch (a million-record import has thousands):
    at most once per ``MEMORY_MD_EVERY`` and once at the end, so it lists the last record written; a write that fails
    part-way still lists the batches written before the failure."""
    from agent_memory.backends.files import batch
    from agent_memory.errors import InvalidInputError

    store = MemoryStore(tmp_path / "root", rescan_interval=None)
    store.open()
    written: list[int] = []
    real = store.write_memory_md

    def counting() -> Path:
        written.append(store.index.count())
        return real()

    monkeypatch.setattr(store, "write_memory_md", counting)
    monkeypatch.setattr(batch, "MEMORY_MD_EVERY", 3600.0)  # no refresh mid-way: only the end's
    drafts = [MemoryDraft(content=f"Shared fact {i} about the orchard.", scope="project") for i in range(40)]
    res = store.remember_many(drafts, batch_size=5)
    assert written == [40]
    assert res[-1].id in (store.root / "MEMORY.md").read_text()
    monkeypatch.setattr(batch, "MEMORY_MD_EVERY", 0.0)  # every batch may refresh it
    written.clear()
    store.remember_many([MemoryDraft(content=f"Later fact {i} about pears.", scope="project") for i in range(10)], batch_size=5)
    assert written == [45, 50]
    monkeypatch.setattr(batch, "MEMORY_MD_EVERY", 3600.0)
    written.clear()
    bad = [MemoryDraft(content=f"Plum fact {i}.", scope="project") for i in range(10)] + [MemoryDraft(content="")]
    with pytest.raises(InvalidInputError):
        store.remember_many(bad, batch_size=5)
    assert written == [60]  # the two batches written before the bad one are listed
    assert "Plum fact 9" in (store.root / "MEMORY.md").read_text()
    # a single batch still refreshes it at once, as before
    written.clear()
    store.remember_many([MemoryDraft(content="One more about figs.", scope="project")])
    assert written == [61]
