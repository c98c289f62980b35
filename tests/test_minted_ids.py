"""An id the store mints is never one its own id gate reads as a secret (a slug cut short can look like a token)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agent_memory.model.drafts import looks_secret
from agent_memory.model.values import new_id

# a title whose 40-character slug ends "…-for-the-ap": the engine reads the cut slug as a token
TITLE = "Token bucket 10 refill policy for the api"


def test_new_id_never_mints_an_id_the_gate_refuses() -> None:
    rid = new_id(TITLE, "2026-11-27T10:00:00Z")
    assert not looks_secret(rid), rid
    assert rid.startswith("2026-11-27-") and len(rid.rsplit("-", 1)[1]) == 8


def test_an_ordinary_title_keeps_its_slug() -> None:
    assert new_id("Lisbon trip in June", "2026-11-27T10:00:00Z").startswith("2026-11-27-lisbon-trip-in-june-")


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", str(root), *args], capture_output=True, text=True, timeout=120
    )


def test_events_history_and_undo_keep_such_a_records_id(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    made = _cli(root, "remember", TITLE, "--user", "ada", "--json")
    assert made.returncode == 0, made.stderr
    events = _cli(root, "events", "--user", "ada")
    assert events.returncode == 0 and "REDACTED" not in events.stdout and "created" in events.stdout, events.stdout + events.stderr
    undo = _cli(root, "undo", "--user", "ada")
    assert undo.returncode == 0, undo.stdout + undo.stderr
    listed = _cli(root, "list", "--user", "ada")
    assert "Token bucket" not in listed.stdout, listed.stdout
