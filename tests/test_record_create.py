"""A new record's file is created, never written over another (issue 32): an unnamed file linked in under its name
(``O_TMPFILE`` + ``linkat``) where the platform has it, else a probe and the atomic temp + rename."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_memory.backends.files import record_files
from agent_memory.backends.files.store import MemoryStore
from agent_memory.formats import atomic
from agent_memory.model.drafts import MemoryDraft

LINKS = hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd")


@pytest.fixture(params=["link", "fallback"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "link" and not LINKS:
        pytest.skip("no O_TMPFILE here")
    monkeypatch.setattr(atomic, "_LINKABLE", [] if request.param == "link" else [False])
    yield request.param


def test_create_new_writes_a_private_file(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "a.md"
    st = atomic.create_new(path, b"hello\n", durable=True)
    assert path.read_bytes() == b"hello\n"
    assert st.st_size == 6 and os.stat(path).st_mtime_ns == st.st_mtime_ns
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert sorted(os.listdir(tmp_path)) == ["a.md"]


def test_create_new_never_writes_over_a_file(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "a.md"
    path.write_bytes(b"theirs")
    with pytest.raises(FileExistsError):
        atomic.create_new(path, b"ours", durable=False)
    assert path.read_bytes() == b"theirs"
    os.symlink(tmp_path / "nowhere", tmp_path / "b.md")  # a dangling link is a name taken, never followed
    with pytest.raises(FileExistsError):
        atomic.create_new(tmp_path / "b.md", b"ours", durable=False)
    assert not (tmp_path / "nowhere").exists()
    assert sorted(os.listdir(tmp_path)) == ["a.md", "b.md"]


def test_a_minted_id_whose_file_exists_is_minted_again(tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStore(tmp_path / "mem")
    store.open()
    taken = "2026-11-27-lisbon-trip-0a1b2c3d"
    (store.records_dir / f"{taken}.md").write_text("not a record of ours\n")
    ids = iter([taken, "2026-11-27-lisbon-trip-0a1b2c3e"])
    monkeypatch.setattr(record_files, "new_id", lambda title, created: next(ids))
    res = store.remember("We go to Lisbon in June.", title="Lisbon trip")
    assert res.id == "2026-11-27-lisbon-trip-0a1b2c3e" and res.status == "created"
    assert (store.records_dir / f"{taken}.md").read_text() == "not a record of ours\n"
    assert store.get(res.id).content == "We go to Lisbon in June."
    assert not [n for n in os.listdir(store.records_dir) if n.startswith(atomic.TMP_PREFIX)]


@pytest.mark.skipif(not LINKS, reason="no O_TMPFILE here")
def test_new_record_files_are_linked_in_without_a_temp_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One directory insert per new record: no temp file renamed into ``records/``, no probe of the name."""
    monkeypatch.setattr(atomic, "_LINKABLE", [])
    store = MemoryStore(tmp_path / "mem")
    store.open()
    records = str(store.records_dir)
    renamed: list[str] = []
    probed: list[str] = []
    real_replace, real_exists = os.replace, os.path.exists

    def replace(src: Any, dst: Any, **kw: Any) -> None:
        renamed.append(str(dst))
        real_replace(src, dst, **kw)

    def exists(p: Any) -> bool:
        probed.append(str(p))
        return real_exists(p)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os.path, "exists", exists)
    drafts = [MemoryDraft(content=f"Fact number {i} about the garden.", title=f"Garden fact {i}") for i in range(5)]
    res = store.remember_many(drafts, source="import")
    assert [r.status for r in res] == ["created"] * 5
    assert not [p for p in renamed + probed if p.startswith(records + os.sep) and p.endswith(".md")]
    assert sorted(os.listdir(store.records_dir)) == sorted(f"{r.id}.md" for r in res)
