"""Probe fixP: an import writes only sound supersession chains, by one rule for every backend (portable._chains).

A link may name only a record of its own partition (alice's record superseded by bob's would print bob's id to
alice and hide her record); a cycle, a missing successor, a successor outside a caller's import and a branch (two
current values) are skipped and reported the same on the files backend and PostgreSQL, with ``--skip-invalid``
(``strict=False``) listing each and ``strict=True`` writing nothing where the file alone shows the chain is broken.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agent_memory.backends.base import Caller
from agent_memory.portable import BadLine, import_file

BACKENDS = ["files", "postgres"]
V1, V2, V3 = "2026-11-28-v1-00000001", "2026-11-28-v2-00000002", "2026-11-28-v3-00000003"


def _line(rid: str, *, by: str | None = None, sup: str | None = None, user: str | None = None) -> dict[str, Any]:
    return {
        "id": rid,
        "title": f"Staging region {rid[-1]}",
        "kind": "fact",
        "scope": "user" if user else "project",
        "user_id": user,
        "source": "manual",
        "created": "2026-11-28T10:29:36.839550Z",
        "updated": "2026-11-28T10:29:36.839550Z",
        "superseded_by": by,
        "supersedes": sup,
        "metadata": {},
        "content": f"The staging region is r{rid[-1]}.",
    }


def _file(tmp_path: Path, *lines: dict[str, Any]) -> Path:
    path = tmp_path / "export.jsonl"
    rows = [{"format": "agent-memory", "version": 1}, *lines]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _target(kind: str, tmp_path: Path) -> Any:
    from _pg import make_target

    return make_target(kind, tmp_path)


def _current(backend: Any, caller: Caller) -> list[str]:
    async def go() -> list[str]:
        try:
            return sorted(r.content for r in await backend.list(caller, limit=None))
        finally:
            await backend.close()

    return asyncio.run(go())


CASES = {
    # name: (lines, the reasons skipped in file order, the current texts left)
    "cycle": ([_line(V1, by=V2, sup=V2), _line(V2, by=V1, sup=V1)], ["invalid", "invalid"], []),
    "missing_middle": ([_line(V1, by=V2), _line(V3, sup=V2)], ["unsupported"], ["The staging region is r3."]),
    "branch": (
        [_line(V1, by=V2), _line(V2, sup=V1), _line(V3, sup=V1)],
        ["invalid"],
        ["The staging region is r2."],
    ),
    "cross_user": ([_line(V1, by=V2, user="alice"), _line(V2, sup=V1, user="bob")], ["invalid", "invalid"], []),
}


@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_broken_chain_is_skipped_and_listed_the_same_on_every_backend(kind: str, case: str, tmp_path: Path) -> None:
    lines, reasons, current = CASES[case]
    target = _target(kind, tmp_path)
    report = import_file(target.backend(), _file(tmp_path, *lines))
    assert sorted(s.reason for s in report.skipped) == sorted(reasons), report.to_dict()
    assert len(report.written) == len(lines) - len(reasons), report.to_dict()
    owner = Caller(user_id="alice") if case == "cross_user" else Caller()
    assert _current(target.backend(), owner) == current


@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.parametrize("case", ["branch", "cross_user", "cycle"])
def test_a_strict_import_of_a_broken_chain_writes_nothing(kind: str, case: str, tmp_path: Path) -> None:
    lines, _, _ = CASES[case]
    target = _target(kind, tmp_path)
    with pytest.raises(BadLine):
        import_file(target.backend(), _file(tmp_path, *lines), strict=True)
    for owner in (Caller(), Caller(user_id="alice"), Caller(user_id="bob")):
        assert _current(target.backend(), owner) == []


def test_alice_never_sees_bobs_id_through_a_supersession_pointer(tmp_path: Path) -> None:
    """The probe's file: alice's record superseded by bob's (his title in the id) is refused, neither written."""
    from agent_memory.backends.files.store import MemoryStore

    bob = "2026-11-28-bob-quits-in-march-22222222"
    lines = [
        {**_line("2026-11-28-team-lunch-11111111", by=bob, user="alice"), "content": "Team lunch is Tuesday."},
        {**_line(bob, sup="2026-11-28-team-lunch-11111111", user="bob"), "content": "I am quitting in March."},
    ]
    store = MemoryStore(tmp_path / "root")
    report = import_file(store, _file(tmp_path, *lines))
    assert not report.written and {s.reason for s in report.skipped} == {"invalid"}, report.to_dict()
    assert store.list(user_id="alice") == [] and store.list(user_id="bob") == []


@pytest.mark.parametrize("kind", BACKENDS)
def test_an_import_as_a_user_skips_a_record_superseded_outside_the_import(kind: str, tmp_path: Path) -> None:
    report = import_file(_target(kind, tmp_path).backend(), _file(tmp_path, _line(V1, by=V2)), user_id="alice")
    assert not report.written and [s.reason for s in report.skipped] == ["unsupported"], report.to_dict()


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_sound_chain_of_three_is_written_whole(kind: str, tmp_path: Path) -> None:
    lines = [_line(V1, by=V2), _line(V2, by=V3, sup=V1), _line(V3, sup=V2)]
    target = _target(kind, tmp_path)
    report = import_file(target.backend(), _file(tmp_path, *lines))
    assert len(report.written) == 3 and not report.skipped, report.to_dict()
    assert _current(target.backend(), Caller()) == ["The staging region is r3."]


@pytest.mark.parametrize("form", ["root", "jsonl"])
def test_a_chain_longer_than_a_batch_is_judged_whole(form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One record per batch: a chain's links still find each other (its records are written together, last)."""
    import agent_memory.portable.importers._common as common
    import agent_memory.portable.restore as restore
    from agent_memory.backends.files.store import MemoryStore

    monkeypatch.setattr(common, "batch_size", lambda _target: 1)
    monkeypatch.setattr(restore, "batch_size", lambda _target: 1)
    lines = [_line(V1, by=V2), _line(V2, by=V3, sup=V1), _line(V3, sup=V2), {**_line(V1[:-1] + "9"), "content": "Lunch."}]
    src = _file(tmp_path, *lines)
    if form == "root":
        assert len(import_file(MemoryStore(tmp_path / "src"), src).written) == 4
        src = tmp_path / "src"
    store = MemoryStore(tmp_path / "dst")
    report = import_file(store, src)
    assert len(report.written) == 4 and not report.skipped, report.to_dict()
    assert sorted(r.content for r in store.list()) == ["Lunch.", "The staging region is r3."]
