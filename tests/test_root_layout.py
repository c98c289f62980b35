"""The registry of what a root holds: every store is named once, and purge visits every one of them.

The purge tests run the purge in a fresh process (the CLI as a real subprocess, and the Python API), so no
module the test imported can make a store join the purge by accident.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _doubles import letter_vectors as toy_vectors

import agent_memory.backends.files.layout as root_layout
from agent_memory.backends.files.purge import STEPS
from agent_memory.backends.files.store import MemoryStore
from agent_memory.consolidate.recalls import RecallLog
from agent_memory.embeddings import CallableEmbedder
from agent_memory.episodes import EpisodeStore, build_episode
from agent_memory.sessions import SessionStore

ALICE, BOB = "alice-q7", "bob-q7"
A_WORD, B_WORD = b"zorblaxian", b"quellimbic"  # porter stems keep the needle; the user ids are needles too
CLI = Path(sys.executable).with_name("agent-memory")


def holding(root: Path, needle: bytes) -> list[str]:
    """Every file under ``root`` (databases, their -wal and -shm included) whose bytes hold ``needle``, any case;
    directory names count too (session directories are named after their ids)."""
    found = []
    for path in root.rglob("*"):
        rel = str(path.relative_to(root))
        if needle.decode() in rel.lower() or (path.is_file() and needle in path.read_bytes().lower()):
            found.append(rel)
    return sorted(found)


def fill(root: Path) -> None:
    """Alice and Bob each write through every store a root has."""
    store = MemoryStore(root, durable=False, embedder=CallableEmbedder(toy_vectors, name="toy"))
    recalls = RecallLog(root)
    sessions = SessionStore(root)
    episodes = EpisodeStore(root)
    for user, word in ((ALICE, A_WORD.decode()), (BOB, B_WORD.decode())):
        first = store.remember(f"{word.title()} deploys on Friday.", memory_key="deploy", user_id=user)
        store.remember(f"{word.title()} deploys on Monday now.", memory_key="deploy", user_id=user, on_existing="replace")
        gone = store.remember(f"{word.title()} old note to forget.", user_id=user).id
        store.forget(gone, user_id=user)
        soon = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).isoformat()
        store.remember(f"{word.title()} expires soon.", user_id=user, expires=soon)
        sess = store.remember(f"{word.title()} in a session.", session_id=f"s-{user}", user_id=user, scope="session")
        recalls.note([first.id, sess.id])
        sessions.append(f"s-{user}", [{"role": "user", "text": f"I said {word} twice, {word}."}], user_id=user)
        sessions.write_summary(f"s-{user}", f"They talked about {word}.", user_id=user)
        episodes.write(build_episode(f"Plan the {word} launch", output=f"{word} done", tool_calls=["search"], user_id=user, cost_usd=5e-05))
    store.sweep(now=dt.datetime.now(dt.UTC) + dt.timedelta(days=1))
    store.embed()
    assert episodes.list(A_WORD.decode(), user_id=ALICE)  # builds episodes/.index.db
    (root / "USER.md").write_text("Prefers short answers.\n", encoding="utf-8")
    store.close()


def test_every_owned_store_has_a_purge_step_and_names_are_unique() -> None:
    names = [e.name for e in root_layout.ROOT_LAYOUT]
    assert len(names) == len(set(names))
    assert set(STEPS) == {e.name for e in root_layout.owned()}
    assert {e.export for e in root_layout.exported()} >= {"records", "archive", "sessions", "episodes", "events"}
    assert not any(e.export for e in root_layout.derived())  # derived stores are rebuilt, never exported
    assert root_layout.covers("episodes/.index.db-wal") is root_layout.entry("episode_index")
    assert root_layout.covers("episodes/2026-11/ep-x.md") is root_layout.entry("episodes")
    assert root_layout.covers("somewhere/else") is None


def test_a_fully_used_root_holds_nothing_the_registry_does_not_name(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    fill(root)
    unnamed = [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and root_layout.covers(str(p.relative_to(root))) is None]
    assert unnamed == []
    present = {row["name"] for row in root_layout.inventory(root) if row["present"]}
    assert present >= {
        "records",
        "archive",
        "index",
        "vectors",
        "events",
        "recall_log",
        "memory_md",
        "user_md",
        "sessions",
        "episodes",
        "episode_index",
        "locks",
    }


def _purge_in_a_fresh_process(root: Path, how: str, *args: str) -> dict:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    if how == "cli":
        cmd = [str(CLI), "--root", str(root), "purge", *args, "--json"]
    else:  # the API, in a process that never imported the sessions or episodes modules itself
        kw = dict(zip(("user_id" if args[0] == "--user" else "session_id",), args[1:], strict=True))
        code = (
            "import json, sys; from agent_memory.backends.files.store import MemoryStore; "
            f"r = MemoryStore(sys.argv[1]).purge(**{kw!r}); print(json.dumps(r.to_dict()))"
        )
        cmd = [sys.executable, "-c", code, str(root)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("how", ["cli", "api"])
def test_purge_of_a_user_in_a_fresh_process_leaves_no_byte_of_hers(tmp_path: Path, how: str) -> None:
    root = tmp_path / "mem"
    fill(root)
    for needle in (A_WORD, ALICE.encode()):
        found = holding(root, needle)
        for part in ("records/", "archive/", "sessions/", "episodes/", "events/", "index.db"):
            assert any(f.startswith(part) for f in found), (part, found)  # the test would see every copy
    assert "episodes/.index.db" in holding(root, A_WORD)
    vectors = MemoryStore(root, embedder=CallableEmbedder(toy_vectors, name="toy")).meaning.vectors  # type: ignore[union-attr]
    before = vectors.count()  # vectors are keyed by content hash: counted, not grepped
    vectors.close()
    a_recalled = [line for line in (root / "recalled.log").read_text().splitlines() if A_WORD.decode() in line]
    assert a_recalled

    report = _purge_in_a_fresh_process(root, how, "--user", ALICE)

    assert holding(root, A_WORD) == [] and holding(root, ALICE.encode()) == []
    stores = report["stores"]
    assert set(stores) == {e.name for e in root_layout.owned()}  # the report names every store it visited
    assert stores["sessions"] == 1 and stores["episodes"] == 1 and stores["recall_log"] == 2
    assert stores["vectors"] > 0 and stores["archive"] >= 2 and stores["episode_index"] == 1
    # bob's data is all there, and readable
    assert {f.split("/")[0] for f in holding(root, B_WORD)} >= {"records", "archive", "sessions", "episodes", "index.db", "events"}
    store = MemoryStore(root, embedder=CallableEmbedder(toy_vectors, name="toy"))
    assert 0 < store.meaning.vectors.count() == before - stores["vectors"]  # type: ignore[union-attr]
    assert store.search(B_WORD.decode(), user_id=BOB).hits and not store.search(A_WORD.decode(), user_id=ALICE).hits
    assert [s.user_id for s in SessionStore(root).sessions(user_id=BOB)] == [BOB]
    assert SessionStore(root).sessions(user_id=ALICE) == []
    assert len(EpisodeStore(root).list(B_WORD.decode(), user_id=BOB)) == 1
    assert EpisodeStore(root).list(user_id=ALICE) == []
    assert (root / "USER.md").read_text() == "Prefers short answers.\n"  # the root owner's file is not a user's


def test_purge_of_a_session_takes_its_logs_and_episodes_only(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    fill(root)
    EpisodeStore(root).write(build_episode(f"Other {A_WORD.decode()} run", session_id="s-other", user_id=ALICE))
    report = _purge_in_a_fresh_process(root, "cli", "--session", f"s-{ALICE}", "--user", ALICE)  # her session: one owner
    assert report["stores"]["sessions"] == 1 and report["stores"]["episodes"] == 0  # her episodes name no session
    assert SessionStore(root).sessions(user_id=ALICE) == []
    assert len(EpisodeStore(root).list(user_id=ALICE)) == 2  # not of that session: kept
    assert SessionStore(root).sessions(user_id=BOB)


def test_purge_of_one_record_does_not_touch_sessions_or_episodes(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    fill(root)
    store = MemoryStore(root, durable=False)
    rid = store.list(user_id=ALICE)[0].id
    report = store.purge(rid, user_id=ALICE)
    assert rid in report.records
    assert not {"sessions", "episodes", "episode_index"} & set(report.stores)
    assert {"records", "archive", "index", "events"} <= set(report.stores)
    assert SessionStore(root).sessions(user_id=ALICE)


def test_provider_accepts_the_old_root_keyword_with_a_deprecation_warning(tmp_path: Path) -> None:
    from agent_memory.errors import InvalidInputError
    from agent_memory.provider import MemoryProvider

    with pytest.warns(DeprecationWarning, match="target"):
        memory = MemoryProvider(root=tmp_path / "old")
    try:
        assert memory.root == (tmp_path / "old").absolute()
    finally:
        memory.close()
    with pytest.raises(InvalidInputError, match="target"):
        MemoryProvider(tmp_path / "a", root=tmp_path / "b")


def test_doctor_checks_every_store_the_registry_marks(tmp_path: Path) -> None:
    from agent_memory.cli._maint import LAYER_DOCTORS, STORE_DOCTOR, layer_problems

    assert {e.name for e in root_layout.ROOT_LAYOUT if e.doctor} == set(LAYER_DOCTORS) | STORE_DOCTOR
    root = tmp_path / "mem"
    fill(root)
    assert layer_problems(str(root)) == {}
    bad = root / "episodes" / "2026-01" / "ep-20260101-000000-0000abcd.md"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text("---\nid: nope\n---\n", encoding="utf-8")
    (root / "sessions" / "stray").write_text("x", encoding="utf-8")
    found = layer_problems(str(root))
    assert any(k.endswith(bad.name) for k in found) and any("stray" in k for k in found)


def test_a_purge_forgets_session_vectors_held_in_memory(tmp_path: Path) -> None:
    from agent_memory.sessions import _dense

    _dense._MEMORY[("somewhere", "toy")] = {"k": np.zeros(2, dtype=np.float32)}
    MemoryStore(tmp_path / "mem", durable=False).purge(user_id=ALICE)
    assert _dense._MEMORY == {}
