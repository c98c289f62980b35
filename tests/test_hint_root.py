"""Recovery hints name the root they ran on, so the printed command works as printed from any folder (new-user
probe 6: hints never carried ``--root`` and failed with "no memory root at .agent-memory")."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from _matrix import cli_env

from agent_memory.cli._records import _same_root


def _am(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**cli_env(), "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-m", "agent_memory.cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_a_forget_hint_runs_as_printed_from_another_folder(tmp_path: Path) -> None:
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    made = _am(work, "--root", "mem", "remember", "Deploys happen on Fridays.", "--user", "ada", "--json")
    assert made.returncode == 0, made.stderr
    rid = re.search(r'"id": "([^"]+)"', made.stdout)
    assert rid
    gone = _am(work, "--root", "mem", "forget", rid.group(1), "--user", "ada")
    assert gone.returncode == 0, gone.stderr
    hint = re.search(r"`agent-memory ([^`]+)`", gone.stdout + gone.stderr)
    assert hint and f"--root {work / 'mem'}" in hint.group(1)
    back = _am(elsewhere, *shlex.split(hint.group(1)))
    assert back.returncode == 0, back.stderr
    listed = _am(elsewhere, "--root", str(work / "mem"), "search", "Deploys", "--user", "ada")
    assert "Fridays" in listed.stdout


def test_the_root_flag_is_left_out_where_the_default_finds_it_or_it_is_a_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENT_MEMORY_ROOT", raising=False)
    assert _same_root(argparse.Namespace(root=".agent-memory")) == ""
    assert _same_root(argparse.Namespace(root=str(tmp_path / ".agent-memory"))) == ""
    assert _same_root(argparse.Namespace(root="postgresql://u:secret@127.0.0.1/db")) == ""  # never print a password
    assert _same_root(argparse.Namespace(root="other")) == f" --root {tmp_path / 'other'}"
    monkeypatch.setenv("AGENT_MEMORY_ROOT", str(tmp_path / "other"))
    assert _same_root(argparse.Namespace(root=str(tmp_path / "other"))) == ""
