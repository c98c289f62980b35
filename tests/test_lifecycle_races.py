"""Restore and undo against a concurrent keyed replace (files backend): an acknowledged write is never lost.

Restore and undo decide under the root lock with what the record file holds then; a precondition that
changed between their first look and the lock either applies on top of the newest version (keeping it in
history) or refuses with a typed error, never writing over it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import agent_memory.backends.files.lifecycle as lifecycle
from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import InvalidInputError

INTERLOPER = "v3 INTERLOPER"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    s = MemoryStore(tmp_path / "mem", durable=False)
    yield s
    s.close()


def _all_texts(root: Path) -> str:
    """Every record, archive and history file's text under ``root``."""
    return "\n".join(
        p.read_text(encoding="utf-8") for d in ("records", "archive", "history") for p in sorted((root / d).rglob("*")) if p.is_file()
    )


def _once_in_versions(monkeypatch: pytest.MonkeyPatch, action: Callable[[], None]) -> list[bool]:
    """Run ``action`` the first time restore/undo lists the record's versions: after it read the record."""
    real = lifecycle._supersede.versions
    fired: list[bool] = []

    def hooked(store: Any, rec: Any) -> Any:
        if not fired:
            fired.append(True)
            action()
        return real(store, rec)

    monkeypatch.setattr(lifecycle._supersede, "versions", hooked)
    return fired


def _interloper(store: MemoryStore, done: list[str], *, own_store: bool) -> Callable[[], None]:
    """A keyed replace to v3: through ``store`` itself (same thread: it re-enters the lock restore may hold, so
    it lands between restore's read and its write), or through a store object of its own (its own lock
    descriptor, as another process has: it waits for the lock)."""

    def run() -> None:
        other = MemoryStore(store.root, durable=False) if own_store else store
        try:
            done.append(other.remember(INTERLOPER, memory_key="k", user_id="alice", on_existing="replace").status)
        finally:
            if own_store:
                other.close()

    return run


def _two_versions(store: MemoryStore) -> str:
    rid = store.remember("v1 first", memory_key="k", user_id="alice").id
    assert store.remember("v2 second", memory_key="k", user_id="alice", on_existing="replace").status == "replaced"
    return rid


def test_replace_between_restores_read_and_its_write_is_kept(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    rid = _two_versions(store)
    done: list[str] = []
    fired = _once_in_versions(monkeypatch, _interloper(store, done, own_store=False))
    try:
        store.restore(rid, user_id="alice")
    except InvalidInputError as exc:  # refused: the record changed under it
        assert "changed" in str(exc)
    assert fired and done == ["replaced"]
    versions = [v.content for v in store.history(rid, user_id="alice").versions]
    assert INTERLOPER in versions, versions
    assert INTERLOPER in _all_texts(store.root)


def test_replace_from_another_thread_waits_for_restore(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second writer started while restore decides waits for the lock, then replaces on top of the restored v1."""
    rid = _two_versions(store)
    done: list[str] = []
    threads: list[threading.Thread] = []

    def start() -> None:
        t = threading.Thread(target=_interloper(store, done, own_store=True))
        threads.append(t)
        t.start()
        t.join(1.0)  # the old code let it finish here, between restore's read and its write

    _once_in_versions(monkeypatch, start)
    restored = store.restore(rid, user_id="alice")
    threads[0].join(30)
    assert done == ["replaced"]
    versions = [v.content for v in store.history(rid, user_id="alice").versions]
    assert INTERLOPER in versions and versions[-1] == INTERLOPER, versions
    assert restored.content in ("v1 first", "v2 second")


def test_undo_rechecks_under_the_lock(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    rid = _two_versions(store)
    done: list[str] = []
    _once_in_versions(monkeypatch, _interloper(store, done, own_store=False))
    try:
        store.undo(user_id="alice")  # would put v1 back over v3
    except InvalidInputError as exc:
        assert "changed" in str(exc)
    assert done == ["replaced"]
    assert INTERLOPER in [v.content for v in store.history(rid, user_id="alice").versions]
    assert INTERLOPER in _all_texts(store.root)


_WORKER = r"""
import json, random, sys
from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import AgentMemoryError
root, me, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rnd = random.Random(me)
s = MemoryStore(root, durable=False, lock_timeout_s=60)
acked = []
for i in range(n):
    op = rnd.choice(["replace", "replace", "restore", "restore", "undo", "undo", "forget"])
    try:
        if op == "replace":
            text = f"text {me}-{i}"
            if s.remember(text, memory_key="k", user_id="alice", on_existing="replace").status in ("replaced", "created"):
                acked.append(text)
        else:
            rows = s.list(user_id="alice")
            if op == "restore" and rows:
                s.restore(rows[0].id, user_id="alice")
            elif op == "undo":
                s.undo(user_id="alice")
            elif op == "forget" and rows:
                s.forget(rows[0].id, user_id="alice")
    except AgentMemoryError:
        pass
print(json.dumps(acked))
"""


def test_stress_every_acknowledged_replace_is_kept(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    MemoryStore(root, durable=False).remember("seed", memory_key="k", user_id="alice")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(lifecycle.__file__).parents[3]), os.environ.get("PYTHONPATH", "")])}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(root), f"w{i}", "40"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for i in range(4)
    ]
    acked: list[str] = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        acked += json.loads(out)
    assert acked
    texts = _all_texts(root)
    lost = [t for t in acked if t not in texts]
    assert not lost, lost
