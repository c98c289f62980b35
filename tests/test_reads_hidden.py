"""``get`` of a record the caller may not see answers from the index row, never opening the file, so a hidden id
costs what a missing one does (its timing does not tell that it exists); the file stays the truth for the rest."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import NotFoundError


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    s = MemoryStore(tmp_path / "mem", durable=False)
    yield s
    s.close()


def _count_opens(monkeypatch: pytest.MonkeyPatch, path: Path) -> list[str]:
    opened: list[str] = []
    real_os_open, real_open = os.open, open

    def os_open(p: Any, *a: Any, **k: Any) -> int:
        if os.fspath(p) == str(path):
            opened.append("os.open")
        return real_os_open(p, *a, **k)

    def b_open(p: Any, *a: Any, **k: Any) -> Any:
        if isinstance(p, (str, os.PathLike)) and os.fspath(p) == str(path):
            opened.append("open")
        return real_open(p, *a, **k)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr("builtins.open", b_open)
    return opened


def test_hidden_id_is_answered_without_opening_its_file(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    rid = store.remember("Alice likes green tea.", user_id="alice").id
    store.get(rid, user_id="alice")  # opened once the store is warm
    opened = _count_opens(monkeypatch, store.records_dir / f"{rid}.md")
    with pytest.raises(NotFoundError) as hidden:
        store.get(rid, user_id="bob")
    assert opened == []
    with pytest.raises(NotFoundError) as missing:
        store.get("no-such-record", user_id="bob")
    assert str(hidden.value).replace(rid, "X") == str(missing.value).replace("no-such-record", "X")
    assert store.get(rid, user_id="alice").content == "Alice likes green tea."
    assert opened  # the visible path does read the file (the counter sees it)


def test_the_file_stays_the_truth_when_the_index_row_is_stale(store: MemoryStore) -> None:
    rid = store.remember("Shared with alice only.", user_id="alice").id
    path = store.records_dir / f"{rid}.md"
    text = path.read_text(encoding="utf-8")
    assert "user_id: alice" in text
    with open(path, "w", encoding="utf-8") as fh:  # edited in place: the index still says alice
        fh.write(text.replace("user_id: alice", "user_id: carol"))
    with pytest.raises(NotFoundError):
        store.get(rid, user_id="alice")
