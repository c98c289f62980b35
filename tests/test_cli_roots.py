"""Roots: a mistyped --root never creates a directory tree, init does it on purpose, URLs go to open_backend."""

from __future__ import annotations

import json
import sys

import pytest

from agent_memory.cli import main


def jmain(capsys, *args):
    code = main([*args, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else None, err


def test_a_write_refuses_a_root_whose_parent_is_missing(tmp_path, capsys):
    code, doc, err = jmain(capsys, "--root", str(tmp_path / "typo" / "deeper" / "mem"), "remember", "x")
    assert code == 1 and doc["error"]["type"] == "NotFoundError"
    assert "parent directory" in doc["error"]["message"] and "init -p" in doc["error"]["message"]
    assert not (tmp_path / "typo").exists()


@pytest.mark.parametrize("command", [("remember", "hello"), ("capture", "--input", "Remember that the VPN is vpn-2")])
def test_a_write_creates_a_missing_root_whose_parent_exists_and_says_so(tmp_path, capsys, command):
    root = tmp_path / "mem"
    code, doc, err = jmain(capsys, "--root", str(root), *command)
    assert code == 0 and (root / "records").is_dir()
    assert err.strip() == f"agent-memory: created memory root {root}"
    code, doc, err = jmain(capsys, "--root", str(root), "list")
    assert code == 0 and err == ""  # no notice once it exists


def test_a_write_refuses_a_non_empty_directory_that_is_not_a_root(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    (src / "main.py").write_text("print('hi')\n")
    code, doc, err = jmain(capsys, "--root", str(src), "remember", "x")
    assert code == 1 and "not a memory root" in doc["error"]["message"] and "init" in doc["error"]["message"]
    assert sorted(p.name for p in src.iterdir()) == ["main.py"]


def test_init_creates_roots_and_parents_on_purpose(tmp_path, capsys):
    deep = tmp_path / "a" / "b" / "mem"
    code, doc, _ = jmain(capsys, "init", str(deep))
    assert code == 1 and not (tmp_path / "a").exists()  # like mkdir: no parents without -p
    code, doc, _ = jmain(capsys, "init", str(deep), "-p")
    assert code == 0 and doc == {"root": str(deep), "created": True} and (deep / "records").is_dir()
    code, doc, _ = jmain(capsys, "init", str(deep))
    assert code == 0 and doc["created"] is False
    code, doc, _ = jmain(capsys, "--root", str(deep), "remember", "now it works")
    assert code == 0 and doc["status"] == "created"
    src = tmp_path / "project"
    src.mkdir()
    (src / "notes.txt").write_text("x")
    code, doc, _ = jmain(capsys, "--root", str(src), "init")
    assert code == 0 and doc["created"] is True and (src / "notes.txt").exists()


@pytest.mark.parametrize(
    "command",
    [("search", "x"), ("list",), ("get", "abc"), ("inject",), ("doctor",), ("forget", "a"), ("reindex",), ("sweep",), ("recall", "x")],
)
def test_read_and_maintenance_commands_never_create_a_root(tmp_path, capsys, command):
    code, doc, _ = jmain(capsys, "--root", str(tmp_path / "typo"), *command)
    assert code == 1 and doc["error"]["type"] == "NotFoundError" and "init" in doc["error"]["message"]
    assert not (tmp_path / "typo").exists()


def test_a_postgres_url_needs_the_extra_and_never_becomes_a_directory(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "agent_memory.backends.postgres", None)  # as without the extra installed
    monkeypatch.setitem(sys.modules, "psycopg", None)  # (the one-shot search path checks for psycopg itself)
    for command in (("remember", "x"), ("list",), ("init",), ("capture", "--input", "remember x")):
        code, doc, err = jmain(capsys, "--root", "postgresql://user@127.0.0.1:1/memory", *command)
        assert code == 1 and doc["error"]["type"] == "MissingExtraError", command
        assert "agent-memory[postgres]" in doc["error"]["message"]
    monkeypatch.setenv("AGENT_MEMORY_ROOT", "postgres://127.0.0.1:1/memory")
    code, doc, _ = jmain(capsys, "search", "x")
    assert code == 1 and doc["error"]["type"] == "MissingExtraError"
    assert list(tmp_path.iterdir()) == []  # no "postgresql:" directory, nothing at all


def test_an_unknown_url_scheme_is_a_usage_error(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, doc, _ = jmain(capsys, "--root", "s3://bucket/mem", "remember", "x")
    assert code == 2 and doc["error"]["type"] == "UsageError" and list(tmp_path.iterdir()) == []


def test_eval_honours_root_and_says_when_it_uses_temporary_roots(tmp_path, capsys):
    sample = {
        "sample_id": "demo",
        "conversation": {"session_1": [{"speaker": "Ada", "dia_id": "D1:1", "text": "I adopted a kitten named Pixel."}]},
        "qa": [{"question": "What is the kitten called?", "evidence": ["D1:1"], "category": 4}],
    }
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps([sample]))
    code = main(["eval", "locomo", str(data), "--k", "1"])
    out, _ = capsys.readouterr()
    assert code == 0 and "temporary roots" in out
    code, doc, _ = jmain(capsys, "--root", str(tmp_path / "kept"), "eval", "locomo", str(data), "--k", "1")
    assert code == 0 and doc["root"] == str(tmp_path / "kept") and doc["overall"]["recall@1"] == 1.0
    assert len(list((tmp_path / "kept" / "demo" / "records").glob("*.md"))) == 1
    code, doc, _ = jmain(capsys, "--root", str(tmp_path / "no" / "such"), "eval", "locomo", str(data))
    assert code == 1 and not (tmp_path / "no").exists()
