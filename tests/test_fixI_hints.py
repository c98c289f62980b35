"""Probe round 6, finding 2: the recovery hints an operator's ``tidy``/``consolidate`` prints name the record
owner's namespace, and running the printed command (as printed) brings back exactly that change."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from _doubles import cli_json as cli
from _doubles import cli_target

NS = "acme/support"


_target = cli_target


def run(target: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent_memory.cli", "--root", target, *args], capture_output=True, text=True, timeout=120)


def hints(stderr: str) -> tuple[list[str], list[str]]:
    """The printed ``undo`` and ``restore`` commands (without ``agent-memory``, and without the ``--root`` a files
    root's hints end with: tests/test_hint_root.py checks that one)."""
    undos = [re.sub(r" --root \S+$", "", u) for u in re.findall(r"`agent-memory (undo[^`]*)`", stderr)]
    restores = [re.sub(r" --root \S+$", "", r) for r in re.findall(r"^\s+agent-memory (restore .*)$", stderr, re.M)]
    return undos, restores


def live(target: str, user: str, namespace: str | None) -> set[str]:
    ns = ("--namespace", namespace) if namespace else ()
    return {r["id"] for r in cli(target, "list", "--user", user, *ns)["records"]}


def seed(target: str) -> None:
    cli(target, "remember", "Alice ns dup kiwi.", "--user", "alice", "--namespace", NS)
    cli(target, "remember", "Alice ns  dup kiwi.", "--user", "alice", "--namespace", NS)
    cli(target, "remember", "Bob root note about herons.", "--user", "bob")
    cli(target, "remember", "Bob root note  about herons.", "--user", "bob")


@pytest.mark.parametrize("kind", ["files", "postgres"])
@pytest.mark.parametrize("follow", ["undo", "restore"])
def test_operator_tidy_hints_name_the_namespace_and_work_as_printed(kind: str, follow: str, tmp_path: Path) -> None:
    target = _target(kind, tmp_path)
    seed(target)
    alice, bob = live(target, "alice", NS), live(target, "bob", None)
    done = run(target, "tidy", "--max-share", "1")
    assert done.returncode == 0, done.stderr
    undos, restores = hints(done.stderr)
    assert len(live(target, "alice", NS)) == 1 and len(live(target, "bob", None)) == 1
    assert sorted(undos) == ["undo --user alice --namespace acme/support", "undo --user bob"], done.stderr
    assert len(restores) == 2 and all(("--namespace acme/support" in r) == ("--user alice" in r) for r in restores), restores
    printed = undos if follow == "undo" else restores
    for command in printed:
        again = run(target, *shlex.split(command))
        assert again.returncode == 0, (command, again.stderr)
    assert live(target, "alice", NS) == alice and live(target, "bob", None) == bob


def test_operator_consolidate_hints_name_the_namespace_and_work_as_printed(tmp_path: Path) -> None:
    target = _target("files", tmp_path)
    cli(target, "remember", "Alice keeps the spare office key in the blue drawer.", "--user", "alice", "--namespace", NS)
    cli(target, "remember", "Alice keeps the spare office key in the blue drawer now.", "--user", "alice", "--namespace", NS)
    alice = live(target, "alice", NS)
    done = run(target, "consolidate", "--rules", "merge", "--max-share", "1")
    assert done.returncode == 0, done.stderr
    undos, restores = hints(done.stderr)
    assert undos == ["undo --user alice --namespace acme/support"], done.stderr
    assert len(live(target, "alice", NS)) == 1
    again = run(target, *shlex.split(restores[0]))
    assert again.returncode == 0, again.stderr
    assert live(target, "alice", NS) == alice
