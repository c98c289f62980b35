"""history, restore, undo and events from the CLI (a real subprocess) in a namespace, on a files root.

The command's namespace view was bound by a generator context manager that was garbage-collected with the
command's target, so these commands read as the root (a namespaced record was "not visible"); and restore/undo,
being changes, must act in the command's own namespace only, never an ancestor's it may read.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _am(root: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AGENT_MEMORY_ROOT": str(root)}
    out = subprocess.run([sys.executable, "-m", "agent_memory.cli", *args], capture_output=True, text=True, env=env, timeout=120)
    assert (out.returncode == 0) == ok, (args, out.stdout, out.stderr)
    return out


def test_lifecycle_commands_act_in_the_commands_namespace(tmp_path: Path) -> None:
    root = tmp_path / "m"
    me = ("--user", "alice", "--namespace", "acme/support")
    rid = _am(root, "remember", "Alice ticket 7 open", "--scope", "user", "-q", *me).stdout.strip()
    hint = _am(root, "forget", rid, *me).stdout
    assert f"agent-memory restore {rid} --user alice --namespace acme/support" in hint
    _am(root, "restore", rid, *me)
    assert [line.split()[1] for line in _am(root, "events", *me).stdout.splitlines()] == ["created", "forgotten", "restored"]
    assert "(live)" in _am(root, "history", rid, *me).stdout
    assert "undone: restored" in _am(root, "undo", *me).stdout
    _am(root, "history", rid, "--user", "alice", "--namespace", "acme/coding", "--isolation", "full", ok=False)


def test_a_child_namespace_cannot_restore_or_undo_its_parents_change(tmp_path: Path) -> None:
    root = tmp_path / "m"
    rid = _am(root, "remember", "Acme ticket 7 open", "--scope", "project", "--namespace", "acme", "-q").stdout.strip()
    _am(root, "forget", rid, "--namespace", "acme")
    _am(root, "restore", rid, "--namespace", "acme/support", ok=False)  # inherited: it reads acme, it does not change it
    _am(root, "undo", "--namespace", "acme/support", ok=False)
    _am(root, "restore", rid, "--namespace", "acme")
