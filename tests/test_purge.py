"""Purge: a marker written through every path is gone from every byte under the root afterwards."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from _doubles import cli_json as cli
from _doubles import letter_vectors as toy_vectors

from agent_memory.backends.files.purge import register_purger, unregister_purger
from agent_memory.backends.files.store import MemoryDraft, MemoryStore
from agent_memory.embeddings import CallableEmbedder
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.model.events import acting

MARKER = "Quixotrebuchetings"  # porter stem: quixotrebuchet; every form contains the needle below
NEEDLE = b"quixotrebuchet"


def where(root: Path, needle: bytes = NEEDLE) -> list[str]:
    """Every file under ``root`` holding ``needle`` in any letter case (db, wal and shm included)."""
    found = []
    for path in root.rglob("*"):
        if path.is_file() and needle in path.read_bytes().lower():
            found.append(str(path.relative_to(root)))
    return sorted(found)


def write_everywhere(store: MemoryStore) -> dict[str, str]:
    """Write the marker (in text, title and so in ids) through every path the store has; returns the ids."""
    ids = {}
    ids["tool"] = store.remember(f"{MARKER} live in the garden shed.", user_id="u1").id
    k = store.remember(f"{MARKER} first version.", memory_key="plan", user_id="u1").id
    store.remember(f"{MARKER} appended line.", memory_key="plan", user_id="u1")
    store.remember("A replacement without the word.", memory_key="plan", user_id="u1", on_existing="replace")
    ids["keyed"] = k
    ids["forgotten"] = store.remember(f"{MARKER} to be forgotten.", user_id="u1").id
    store.forget(ids["forgotten"], user_id="u1")
    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).isoformat()
    ids["swept"] = store.remember(f"{MARKER} expires soon.", user_id="u1", expires=soon).id
    store.sweep(now=dt.datetime.now(dt.UTC) + dt.timedelta(days=1))
    ids["session"] = store.remember(f"{MARKER} in a session.", session_id="s9", user_id="u1", scope="session").id
    with acting("worker:capture", run_id="run-1"):
        ids["capture"] = store.remember(f"Capture saw {MARKER.lower()}.", user_id="u1", source="turn_capture").id
    [imp] = store.remember_many([MemoryDraft(f"Imported {MARKER.upper()} fact.", user_id="u1")], source="import")
    ids["import"] = imp.id
    hand = store.remember("Hand edited later.", user_id="u1").id
    path = store.records_dir / f"{hand}.md"
    path.write_text(path.read_text(encoding="utf-8").replace("Hand edited later.", f"Hand edited {MARKER}."), "utf-8")
    os.utime(path, ns=(7, 7))
    store.index.refresh(force=True)
    ids["hand"] = hand
    store.embed()
    return ids


def test_purge_user_leaves_no_byte_of_the_marker(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    store = MemoryStore(root, durable=False, embedder=CallableEmbedder(toy_vectors, name="toy"))
    keep = store.remember("Unrelated project note about herons.", scope="project").id
    ids = write_everywhere(store)
    cli_id = cli(root, "remember", f"CLI wrote {MARKER} too.", "--user", "u1")["id"]
    ids["cli"] = cli_id
    store.embed()
    vectors_before = store.meaning.vectors.count()  # type: ignore[union-attr]
    found = where(root)
    for part in ("records/", "archive/", "events/", "index.db", "MEMORY.md"):  # a replace keeps versions in records/
        if part == "MEMORY.md":
            continue  # user records are not listed there
        assert any(f.startswith(part) for f in found), (part, found)  # the test would notice each copy
    assert store.search(MARKER, user_id="u1").hits

    calls: list[tuple[Path, str | None, str | None]] = []

    def sessions_purger(r: Path, user_id: str | None, session_id: str | None) -> int:
        calls.append((r, user_id, session_id))
        return 3

    register_purger(sessions_purger)
    try:
        report = store.purge(user_id="u1")
    finally:
        unregister_purger(sessions_purger)
    store.close()
    assert where(root) == []
    assert set(ids.values()) <= set(report.records)
    assert report.others["sessions_purger"] == 3 and calls == [(store.root, "u1", None)]
    assert report.others == {"sessions_purger": 3}  # only what the application registered itself
    assert {"sessions", "episodes", "episode_index", "index", "vectors", "events"} <= set(report.stores)  # every store
    assert report.vectors > 0 and store.meaning.vectors.count() < vectors_before  # type: ignore[union-attr]
    # what was not u1's is intact, searchable, and its history readable
    assert [h.id for h in store.search("herons").hits] == [keep]
    assert [e.event for e in store.events_for(keep)] == ["created"]
    assert store.search(MARKER, user_id="u1", mode="lexical").hits == []
    assert [e.id for e in store.events_for(user_id="u1")] == [keep]  # u1's lines are tombstones now, owned by no one
    # tombstones keep the hashes: the log still says that changes happened
    events, problems = store.events.read()
    assert problems == [] and sum(e.event == "purged" for e in events) == len(report.records)
    assert all(e.before or e.after or e.event == "purged" for e in events if e.id.startswith("purged:"))


def test_forget_purge_one_record_via_cli(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    store = MemoryStore(root, durable=False)
    a = store.remember(f"{MARKER} shared once.", memory_key="note", scope="project")
    store.remember("Now it says something else.", memory_key="note", scope="project", on_existing="replace")
    other = store.remember("Another shared record about kites.", scope="project").id
    store.close()
    assert where(root)
    out = cli(root, "forget", a.id, "--purge")
    assert out["purged"] is True and a.id in out["records"] and len(out["records"]) == 2  # with the version it superseded
    assert where(root) == []
    assert cli(root, "search", "kites")["hits"][0]["id"] == other
    assert not (root / "history").exists() or not list((root / "history").iterdir())


def test_purge_session_keeps_other_sessions_and_checks_visibility(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "mem", durable=False)
    a = store.remember(f"{MARKER} in session one.", session_id="s1", scope="session")
    b = store.remember("Session two keeps its falcons.", session_id="s2", scope="session")
    with pytest.raises(NotFoundError):
        store.purge(a.id, session_id="s2")  # a caller purges only what it may see
    with pytest.raises(InvalidInputError):
        store.purge()
    assert store.get(a.id, session_id="s1")
    report = store.purge(session_id="s1")
    assert report.records == [a.id]
    store.close()
    assert where(store.root) == []
    assert store.get(b.id, session_id="s2").content == "Session two keeps its falcons."


def test_purge_of_an_archived_record_and_idempotence(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "mem", durable=False)
    a = store.remember(f"{MARKER} archived before purge.", user_id="u1")
    store.forget(a.id, user_id="u1")
    assert store.forget(a.id, user_id="u1", purge=True) is True
    store.close()
    assert where(store.root) == []
    with pytest.raises(NotFoundError):
        store.restore(a.id, user_id="u1")
    with pytest.raises(NotFoundError):
        store.purge(a.id, user_id="u1")
    assert store.purge(user_id="u1").records == []


def test_purge_of_a_user_and_a_session_takes_only_that_users_session_in_every_store(tmp_path: Path) -> None:
    """One owner: ``user_id`` and ``session_id`` together are that user's session, never the user's other sessions
    nor another user's session of the same id (this test used to say "either": u1's and s2's of every user)."""
    from agent_memory.episodes import EpisodeStore, build_episode
    from agent_memory.sessions import SessionStore

    root = tmp_path / "mem"
    store = MemoryStore(root, durable=False)
    sessions, episodes = SessionStore(root), EpisodeStore(root)
    owners = (("s1", "u1"), ("s2", "u1"), ("s1", "u2"), ("s1", None))
    for sid, uid in owners:
        gone = (sid, uid) == ("s1", "u1")
        store.remember(f"{MARKER} of {uid}." if gone else f"Keep {sid} of {uid}.", session_id=sid, user_id=uid, scope="session")
        sessions.append(sid, [{"role": "user", "text": f"{MARKER} said by {uid}" if gone else "keep"}], user_id=uid)
        episodes.write(build_episode(f"{MARKER} run" if gone else f"Keep run {sid} {uid}", session_id=sid, user_id=uid, scope="session"))
    report = store.purge(user_id="u1", session_id="s1")
    assert (report.stores["sessions"], report.stores["episodes"], len(report.records)) == (1, 1, 1)
    assert where(root) == []
    for sid, uid in owners[1:]:
        assert [s.session_id for s in sessions.sessions(session_id=sid, user_id=uid) if s.user_id == uid] == [sid]
        assert [e.goal for e in episodes.list(session_id=sid, user_id=uid) if e.user_id == uid] == [f"Keep run {sid} {uid}"]
        assert [r.content for r in store.list(session_id=sid, user_id=uid) if r.user_id == uid] == [f"Keep {sid} of {uid}."]
