"""The export/import command module (agent_memory/cli/export.py), driven through argparse as the CLI does."""

from __future__ import annotations

import argparse
import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import InvalidInputError, NotFoundError

FIX = Path(__file__).parent / "fixtures" / "portable"
MODULE = Path(__file__).parent.parent / "agent_memory" / "cli" / "export.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("agent_memory._cli_under_test.export", MODULE)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


CLI = _module()


def _run(argv: Sequence[str]) -> Any:
    """Parse like agent-memory's main (common --root/--json, one subparser per command) and run the handler."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", default=".agent-memory")
    common.add_argument("--json", action="store_true")
    parser = argparse.ArgumentParser(prog="agent-memory")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, text: str, examples: Sequence[str], epilog_extra: str = "") -> argparse.ArgumentParser:
        return sub.add_parser(name, help=text, epilog="\n".join(examples) + epilog_extra, parents=[common])

    handlers = CLI.register(add)
    imp = add("import", "import", [])
    imp.add_argument("file")
    CLI.add_import_format(imp)
    args = parser.parse_args(list(argv))
    if args.command == "import":
        assert CLI.wants_portable(args)
        return CLI.cmd_import_format(args)
    return handlers[args.command](args)


def test_export_to_stdout_then_import_round_trips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = MemoryStore(tmp_path / "a")
    store.remember("Alpha fact", tags=["x"])
    store.remember("Alice only", user_id="alice")
    _run(["export", "--root", str(tmp_path / "a")])
    out = capsys.readouterr().out
    assert out.startswith('{"format":"agent-memory","version":1}\n') and out.count("\n") == 3
    (tmp_path / "e.jsonl").write_text(out)
    _run(["import", str(tmp_path / "e.jsonl"), "--root", str(tmp_path / "b"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "agent-memory" and doc["written"] == 2 and doc["skipped"] == 0
    _run(["export", "--root", str(tmp_path / "b")])
    assert capsys.readouterr().out == out
    _run(["import", str(tmp_path / "e.jsonl"), "--root", str(tmp_path / "b")])
    assert "imported 0 records" in capsys.readouterr().out


def test_export_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = MemoryStore(tmp_path / "a")
    store.remember("Alpha fact")
    store.remember("Bob only", user_id="bob")
    _run(["export", "--root", str(tmp_path / "a"), "--user", "alice", "--out", str(tmp_path / "alice.jsonl"), "--json"])
    out = capsys.readouterr()
    assert json.loads(out.out) == {
        "exported": 1,
        "format": "jsonl",
        "out": str(tmp_path / "alice.jsonl"),
        "unreadable": {},
        "contents": {"caller": {"session_id": None, "user_id": "alice"}},
        "sections": {"records": 1},
    }
    assert "only what user alice may see" in out.err  # a caller's export says it is partial
    assert "Bob only" not in (tmp_path / "alice.jsonl").read_text()
    _run(["export", "--root", str(tmp_path / "a"), "--format", "markdown", "--out", str(tmp_path / "tree")])
    assert "exported 2 records" in capsys.readouterr().out and (tmp_path / "tree" / "README.md").is_file()
    with pytest.raises(InvalidInputError):
        _run(["export", "--root", str(tmp_path / "a"), "--format", "markdown"])
    with pytest.raises(NotFoundError):
        _run(["export", "--root", str(tmp_path / "missing")])
    assert not (tmp_path / "missing").exists()


def test_import_foreign_formats_and_ownership(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(["import", str(FIX / "mem0_export.json"), "--root", str(tmp_path / "r")])
    text = capsys.readouterr().out
    assert "imported 3 records" in text and "(mem0)" in text and "skipped item 4: invalid" in text
    _run(["import", str(FIX / "alfred_v2"), "--root", str(tmp_path / "r"), "--format", "alfred-v2", "--as-user", "sam", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["written"] == 4 and doc["skipped_by_reason"]["expired"] == 1
    assert len(MemoryStore(tmp_path / "r").list(limit=None, user_id="sam", scope="user")) == 4


def test_plain_drafts_stay_with_the_drafts_importer(tmp_path: Path) -> None:
    (tmp_path / "drafts.jsonl").write_text('{"content": "just a draft"}\n')
    ns = argparse.Namespace(file=str(tmp_path / "drafts.jsonl"), format="auto")
    assert CLI.wants_portable(ns) is False
    assert CLI.wants_portable(argparse.Namespace(file="-", format="auto")) is False
    assert CLI.wants_portable(argparse.Namespace(file=str(FIX / "alfred_memories.jsonl"), format="auto")) is True


def test_unreadable_record_files_are_named_not_silently_dropped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = MemoryStore(tmp_path / "a")
    store.remember("Alpha fact")
    (store.records_dir / "broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    _run(["export", "--root", str(tmp_path / "a"), "--out", str(tmp_path / "e.jsonl"), "--json"])
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["exported"] == 1 and list(doc["unreadable"]) == ["broken.md"]
    assert "not exported: records/broken.md" in captured.err
