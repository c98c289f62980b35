"""Roots around roots, eval's kept roots, and the export path check of the Python API (probe findings, fixK 1, 2, 4).

- ``init OUTER`` (or any write) made a folder holding a memory root into a root: refused now, naming the inner root
  (``layout.contained_root``: bounded to the folder's children and its ``records/``-like folders).
- ``eval locomo --root ROOT`` kept its per-conversation roots inside a memory root: refused before anything is made.
- ``export_records(target, path)`` wrote anywhere, a memory root's own files included: it now applies the CLI's
  ``--out`` rule (``layout.outside_roots``, the rule's one home).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest
from test_eval_locomo import SAMPLE

from agent_memory import export_records
from agent_memory.backends.files.store import MemoryStore
from agent_memory.cli import main
from agent_memory.errors import InvalidInputError
from agent_memory.eval.locomo import evaluate


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_no_write_makes_a_root_around_a_root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outer, inner = tmp_path / "outer", tmp_path / "outer" / "inner"
    assert run(capsys, "init", str(inner), "-p")[0] == 0
    before = tree(outer)
    for args in (("init", str(outer)), ("--root", str(outer), "init"), ("--root", str(outer), "remember", "a fact")):
        code, doc = run(capsys, *args)
        assert code == 1 and doc["error"]["type"] == "InvalidInputError", args
        assert f"holds the memory root {inner}" in doc["error"]["message"] and f"--root {inner}" in doc["error"]["message"]
    assert tree(outer) == before  # nothing was created
    code, doc = run(capsys, "--root", str(inner), "remember", "The inner root still works.")
    assert code == 0 and doc["status"] == "created"
    code, doc = run(capsys, "--root", str(inner), "list")
    assert code == 0 and [r["content"] for r in doc["records"]] == ["The inner root still works."]

    # a records/ folder nobody opened yet holding a root: opening it (a read too) would make it a root around one
    project = tmp_path / "project"
    assert run(capsys, "init", str(project / "records" / "mine"), "-p")[0] == 0
    for args in (("init", str(project)), ("--root", str(project), "list")):
        code, doc = run(capsys, *args)
        assert code == 1 and f"holds the memory root {project / 'records' / 'mine'}" in doc["error"]["message"], args
    assert tree(project) == ["records", "records/mine", *(f"records/mine/{p}" for p in tree(project / "records" / "mine"))]


def test_contained_root_looks_at_children_and_root_folders_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agent_memory.backends.files.layout import contained_root

    assert run(capsys, "init", str(tmp_path / "a" / "b" / "deep"), "-p")[0] == 0
    assert contained_root(tmp_path / "a" / "b") == tmp_path / "a" / "b" / "deep"
    assert contained_root(tmp_path / "a") is None  # two levels down: beyond the documented bound
    assert contained_root(tmp_path / "missing") is None
    (tmp_path / "a" / "notes").mkdir()
    (tmp_path / "a" / "notes" / "records").mkdir()  # a folder named records/ alone is not a root
    assert contained_root(tmp_path / "a") is None
    assert run(capsys, "init", str(tmp_path / "x" / "archive" / "kept"), "-p")[0] == 0
    assert contained_root(tmp_path / "x") == tmp_path / "x" / "archive" / "kept"


def test_eval_never_keeps_its_roots_in_a_memory_root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    root = tmp_path / "mem"
    assert run(capsys, "init", str(root))[0] == 0
    before = tree(root)
    for keep in (root, root / "records", root / "eval-roots"):
        with pytest.raises(InvalidInputError, match="memory root") as err:
            evaluate(data, ks=(3,), root=keep)
        assert str(err.value).startswith(f"root {keep} ")
        code, doc = run(capsys, "--root", str(keep), "eval", "locomo", str(data), "--k", "3")
        assert code == 1 and doc["error"]["message"].startswith(f"--root {keep} "), keep
    assert tree(root) == before  # no conversation root was made inside it


async def test_the_api_export_never_writes_into_a_memory_root(backend: Any, tmp_path: Path) -> None:
    provider = backend.provider()
    await provider.remember("Alice's exported fact.", user_id="alice", scope="user")
    root = tmp_path / "theirs"
    with MemoryStore(root) as theirs:
        theirs.remember("Bob's own record.", user_id="bob", scope="user")
    (root / "USER.md").write_text("Bob prefers tea.\n", encoding="utf-8")
    record = next((root / "records").glob("*.md"))
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and p.suffix == ".md"}
    cases: list[tuple[Path, Literal["jsonl", "markdown"]]] = [
        (record, "jsonl"),
        (root / "USER.md", "jsonl"),
        (root / "index.db", "jsonl"),
        (root, "markdown"),
        (root / "tree", "markdown"),
    ]
    for out, fmt in cases:
        with pytest.raises(InvalidInputError, match="memory root") as err:
            export_records(provider.backend, out, format=fmt)
        assert str(err.value).startswith(f"export path {out} ") and "nothing was written" in str(err.value)
        with pytest.raises(InvalidInputError, match="memory root"):
            export_records(provider.backend, str(out), format=fmt)
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and p.suffix == ".md"} == before
    assert not (root / "tree").exists()
