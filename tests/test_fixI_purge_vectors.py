"""Probe round 6, finding 1: ``purge --user bob`` left the vectors of bob's forgotten (archived) records in
``vectors.db`` and its snapshot (the archive copy's text carries the archive note, so purge collected the hash of
the annotated text instead of the hash the vectors are keyed by). A content hash another owner's live record still
holds keeps its vector."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from _doubles import cli_json as cli
from _doubles import letter_vectors

from agent_memory.backends.files import vectors as vectors_mod
from agent_memory.backends.files.store import MemoryStore
from agent_memory.embeddings import CallableEmbedder

BOB = "Bob zeppelin hangar ballet."
SHARED = "Shared walrus lantern quote."


def vector_hashes(root: Path) -> set[str]:
    conn = sqlite3.connect(root / "vectors.db")
    try:
        return {row[0] for row in conn.execute("SELECT hash FROM vectors")}
    finally:
        conn.close()


def snapshot_holds(root: Path, needle: str) -> list[str]:
    folder = root / "vectors.db-snap"
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_file() and needle.encode() in p.read_bytes())


def test_purge_user_drops_vectors_of_forgotten_records_and_their_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors_mod, "SNAPSHOT_MIN", 2)  # a snapshot for a test-sized cache (in this process)
    root = tmp_path / "mem"
    store = MemoryStore(root, durable=False, embedder=CallableEmbedder(letter_vectors, name="toy"))
    bob = store.get(store.remember(BOB, user_id="bob").id, user_id="bob")
    bob_shared = store.get(store.remember(SHARED, user_id="bob").id, user_id="bob")
    alice_shared = store.get(store.remember(SHARED, user_id="alice").id, user_id="alice")  # same text, another owner
    other = store.get(store.remember("Other project note about herons.", scope="project").id)
    assert bob_shared.content_hash == alice_shared.content_hash
    store.embed()
    assert store.search("zeppelin hangar", user_id="bob", mode="dense").hits  # maps the snapshot
    assert snapshot_holds(root, bob.content_hash)
    store.close()

    cli(root, "forget", bob.id, "--user", "bob")
    cli(root, "forget", bob_shared.id, "--user", "bob")
    report = cli(root, "purge", "--user", "bob")
    assert report["vectors"] == 1, report  # bob's own hash; the shared one is alice's too

    left = vector_hashes(root)
    assert bob.content_hash not in left
    assert {alice_shared.content_hash, other.content_hash} <= left
    assert snapshot_holds(root, bob.content_hash) == []
    again = MemoryStore(root, durable=False, embedder=CallableEmbedder(letter_vectors, name="toy"))
    again.search("walrus lantern", user_id="alice", mode="dense")  # rebuilds the snapshot from vectors.db
    assert snapshot_holds(root, bob.content_hash) == []
    assert snapshot_holds(root, alice_shared.content_hash)
    again.close()


def test_purge_namespace_user_drops_vectors_of_forgotten_records(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    bob_id = cli(root, "remember", BOB, "--user", "bob", "--namespace", "acme")["id"]
    store = MemoryStore(root, durable=False, embedder=CallableEmbedder(letter_vectors, name="toy"))
    store.embed()
    left = vector_hashes(root)
    store.close()
    cli(root, "forget", bob_id, "--user", "bob", "--namespace", "acme")
    assert cli(root, "purge", "--user", "bob", "--namespace", "acme")["vectors"] == 1
    assert len(left) == 1 and vector_hashes(root) == set()
