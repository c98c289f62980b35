"""The files index at schema 7 / link tables at version 2 (issue 32: writes into a big store are bound by the index
pages they dirty): no index row per file by name for files named after their record, title keys keyed by the records
rowid. An index an older version wrote is migrated in place (no rebuild from the files) and answers as before."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agent_memory.backends.files.index import SCHEMA_VERSION
from agent_memory.backends.files.link_rows import LINKS_VERSION
from agent_memory.backends.files.store import MemoryStore
from agent_memory.model.drafts import MemoryDraft


def _meta(root: Path, key: str) -> str:
    with sqlite3.connect(root / "index.db") as db:
        return str(db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()[0])


def _as_version_6(root: Path) -> None:
    """Make the index what schema 6 with link tables of version 1 left (a full index of ``records(file)``, title rows
    keyed by record id)."""
    db = sqlite3.connect(root / "index.db", isolation_level=None)
    tok = _meta(root, "schema").split("|", 1)[1]
    db.executescript(
        f"""BEGIN;
        DROP INDEX records_odd_file;
        CREATE INDEX records_file ON records(file);
        CREATE TABLE old_titles (id TEXT PRIMARY KEY, key TEXT NOT NULL);
        INSERT INTO old_titles SELECT r.id, t.key FROM record_titles t JOIN records r ON r.rowid = t.rid;
        DROP TABLE record_titles;
        ALTER TABLE old_titles RENAME TO record_titles;
        CREATE INDEX record_titles_key ON record_titles(key);
        UPDATE meta SET value = '6|{tok}' WHERE key = 'schema';
        UPDATE meta SET value = '1' WHERE key = 'links';
        COMMIT;"""
    )
    db.close()


def test_a_version_6_index_is_migrated_in_place_and_links_still_resolve(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store = MemoryStore(root, rescan_interval=None)
    store.open()
    target = store.remember("Pears ripen in September.", title="Pear harvest", scope="project")
    linker = store.remember("See [[Pear harvest]] before picking.", title="Picking", scope="project")
    store.close()
    _as_version_6(root)
    with sqlite3.connect(root / "index.db") as db:  # a row only an in-place migration keeps (a rebuild re-reads bodies)
        db.execute("INSERT INTO record_links VALUES ('2026-01-01-gone-0a1b2c3d', 0, 'x', 'sentinel')")
    store = MemoryStore(root, rescan_interval=None)
    store.open()
    assert (_meta(root, "schema").split("|")[0], _meta(root, "links")) == (SCHEMA_VERSION, LINKS_VERSION)
    with sqlite3.connect(root / "index.db") as db:
        assert db.execute("SELECT count(*) FROM record_links WHERE key = 'sentinel'").fetchone()[0] == 1  # in place
    links = store.links(linker.id)
    assert [link.record_id for link in links.outgoing] == [target.id]
    assert [b.record_id for b in store.links(target.id).backlinks] == [linker.id]
    # the migrated index takes new writes and title keys of new records
    fresh = store.remember_many(
        [MemoryDraft(content=f"Fact {i} about [[Pear harvest]].", title=f"Note {i}", scope="project") for i in range(3)]
    )
    assert {b.record_id for b in store.links(target.id).backlinks} == {linker.id, *(r.id for r in fresh)}
    with sqlite3.connect(root / "index.db") as db:
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        titles = db.execute("SELECT count(*) FROM record_titles t JOIN records r ON r.rowid = t.rid").fetchone()[0]
    assert "records_file" not in names and "records_odd_file" in names
    assert titles == 5
    store.close()


def test_files_are_found_by_name_through_the_id_and_a_hand_edit_is_still_seen(tmp_path: Path) -> None:
    """A rescan finds a changed file's index row by its name: through the id for ``<id>.md`` (no index by file name
    holds it), and a hand edit is still reported with the hash it had before."""
    root = tmp_path / "root"
    store = MemoryStore(root, rescan_interval=None)
    store.open()
    rec = store.remember("The shed key hangs by the door.", scope="project")
    with sqlite3.connect(root / "index.db") as db:
        assert db.execute("SELECT count(*) FROM records INDEXED BY records_odd_file WHERE file <> id || '.md'").fetchone()[0] == 0
    path = Path(rec.path)
    path.write_text(path.read_text().replace("by the door", "in the drawer"))
    store.index.refresh(force=True)
    events, _ = store.events.read()
    edit = [e for e in events if e.event == "hand_edit"]
    assert len(edit) == 1 and edit[0].id == rec.id and edit[0].before is not None and edit[0].before != edit[0].after
    assert store.get(rec.id).content.startswith("The shed key hangs in the drawer")
    store.close()
