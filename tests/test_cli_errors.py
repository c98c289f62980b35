"""The CLI never prints a traceback: every failure is one line (and a JSON error), with the right exit code."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import sys

import pytest

from agent_memory.cli import _records as records_cmds
from agent_memory.cli import main
from agent_memory.cli._base import dumps

ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def run(root, *args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", str(root), *args],
        capture_output=True,
        text=True,
        input=stdin,
        env=ENV,
        timeout=120,
    )


def strict(text: str):
    def refuse(name: str):
        raise ValueError(f"non-strict JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    "args",
    [
        ("frobnicate",),
        (),
        ("search",),
        ("search", "x", "--limit", "0"),
        ("search", "x", "--limit", "ten"),
        ("list", "--scope", "galaxy"),
        ("remember", "x", "--importance", "2"),
        ("remember", "x", "--importance", "nan"),
        ("remember", "x", "--expires", "yesterday"),
        ("remember", "x", "--expires", "2001-01-01T00:00:00Z"),
        ("remember", "x", "--on-existing", "replace"),
        ("inject", "--budget", "-5"),
        ("eval", "nosuchbench", "f.json"),
        ("import", "x.jsonl", "--batch-size", "0"),
        ("get", "a", "--no-such-option"),
    ],
)
def test_every_usage_error_exits_2_with_one_line(tmp_path, args, capsys):
    assert main(["--root", str(tmp_path / "m"), *args, "--json"]) == 2
    out, err = capsys.readouterr()
    assert strict(out)["error"]["type"] == "UsageError"
    assert len(err.strip().splitlines()) == 1 and err.startswith("agent-memory: error:")
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(
    "exc, kind, code",
    [
        (TypeError("unhashable type: 'list'"), "InternalError", 1),
        (RecursionError("maximum recursion depth exceeded"), "InvalidInputError", 1),
        (OverflowError("int too large to convert"), "InvalidInputError", 1),
        (sqlite3.OperationalError("database or disk is full"), "StorageError", 1),
        (sqlite3.OperationalError("attempt to write a readonly database"), "ReadOnlyError", 1),
        (sqlite3.DatabaseError("file is not a database"), "StorageError", 1),
        (OSError(errno.ENOSPC, "No space left on device", "/m/records/x.md"), "StorageError", 1),
        (OSError(errno.EROFS, "Read-only file system", "/m/records/x.md"), "ReadOnlyError", 1),
        (PermissionError(errno.EACCES, "Permission denied", "/m/index.db"), "StorageError", 1),
        (KeyboardInterrupt(), "Interrupted", 130),
    ],
)
def test_unexpected_exceptions_become_one_typed_line(tmp_path, monkeypatch, capsys, exc, kind, code):
    def boom(args):
        raise exc

    monkeypatch.setattr(records_cmds, "cmd_list", boom)
    assert main(["--root", str(tmp_path), "list", "--json"]) == code
    out, err = capsys.readouterr()
    doc = strict(out)["error"]
    assert doc["type"] == kind
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    if isinstance(exc, OSError) and not isinstance(exc, sqlite3.Error):
        assert exc.filename in doc["message"]  # names the file


def test_full_disk_during_a_write_is_a_storage_error(tmp_path, monkeypatch, capsys):
    import agent_memory.formats.atomic as _fs

    root = tmp_path / "m"
    assert main(["--root", str(root), "remember", "first"]) == 0
    capsys.readouterr()

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_fs.os, "write", full)
    assert main(["--root", str(root), "remember", "second", "--json"]) == 1
    out, err = capsys.readouterr()
    assert strict(out)["error"]["type"] == "StorageError" and "no space left" in err.lower()
    assert len(err.strip().splitlines()) == 1


def test_strict_json_never_prints_nan():
    text = dumps({"importance": float("nan"), "scores": [float("inf"), -float("inf"), 0.5]})
    assert strict(text) == {"importance": None, "scores": [None, None, 0.5]}


HOSTILE = {
    "tags-int.md": "---\nid: tags-int\ntitle: t\ntags: 2024\n---\nbody one\n",
    "importance-huge.md": "---\nid: importance-huge\ntitle: t\nimportance: " + "9" * 400 + "\n---\nbody two\n",
    "importance-nan.md": "---\nid: importance-nan\ntitle: t\nimportance: .nan\n---\nbody three\n",
    "deep.md": "---\nid: deep\ntitle: t\nmeta: " + "[" * 3000 + "]" * 3000 + "\n---\nbody four\n",
}


@pytest.mark.parametrize(
    "command",
    [
        ("search", "body"),
        ("list",),
        ("get", "importance-nan"),
        ("get", "tags-int"),
        ("inject",),
        ("doctor",),
        ("reindex",),
        ("remember", "body five"),
    ],
)
def test_hostile_record_files_never_crash_the_cli(tmp_path, command):
    root = tmp_path / "m"
    assert run(root, "remember", "a fine record about body text").returncode == 0
    for name, text in HOSTILE.items():
        (root / "records" / name).write_text(text, encoding="utf-8")
    proc = run(root, *command, "--json")
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) <= 1, proc.stderr
    assert proc.returncode in (0, 1)
    doc = strict(proc.stdout)  # one strict JSON document, whatever happened
    assert proc.returncode == 0 or "error" in doc or command == ("doctor",)


def test_import_of_deeply_nested_json_names_the_line(tmp_path):
    src = tmp_path / "deep.jsonl"
    src.write_text('{"content": "ok"}\n' + '{"content": ' + "[" * 100000 + "]" * 100000 + "}\n", encoding="utf-8")
    proc = run(tmp_path / "m", "import", str(src), "--json")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    message = strict(proc.stdout)["error"]["message"]
    assert "deep.jsonl: line 2" in message and "nothing imported" in message
