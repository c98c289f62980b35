"""An id the store mints is never one its own id gate reads as a secret (a slug cut short can look like a token)."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_memory.errors import InvalidInputError
from agent_memory.model.drafts import check_id, looks_secret, prepare_event
from agent_memory.model.values import new_id
from agent_memory.redaction import engine
from agent_memory.redaction.samples import SECRET_SAMPLES_BY_KIND

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


@pytest.fixture
def passes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The texts the redaction engine was asked about (engine passes are counted, never timed)."""
    seen: list[str] = []
    real = engine.find_spans

    def counting(text: str, **kw: bool) -> list[tuple[int, int, str]]:
        seen.append(text)
        return real(text, **kw)

    monkeypatch.setattr(engine, "find_spans", counting)
    yield seen


def _fresh_title() -> str:
    words = " ".join(secrets.choice(["pear", "plum", "fig", "kale", "leek", "oat"]) for _ in range(4))
    return f"Garden notes {words} {secrets.token_hex(3)}0"  # a digit in the slug: outside the plain-stem acceptor


def test_a_minted_id_costs_its_event_no_engine_pass(passes: list[str]) -> None:
    seen = passes
    rid = new_id(_fresh_title(), "2026-11-27T10:00:00Z")
    assert seen, "new_id checks the id it mints"
    seen.clear()
    assert prepare_event({"id": rid, "event": "created"})["id"] == rid
    assert seen == []


def test_ids_minted_from_one_title_on_one_day_are_checked_once(passes: list[str]) -> None:
    """A re-mint after a name clash, or the same title again that day: the verdict is the id's stem's (date and
    slug), the random suffix is never read, so the engine does not run again."""
    seen = passes
    title = _fresh_title()
    first = new_id(title, "2026-11-27T10:00:00Z")
    assert seen
    seen.clear()
    second = new_id(title, "2026-11-27T18:30:00Z")
    assert second != first and second[:-8] == first[:-8]
    assert seen == []
    new_id(title, "2026-11-28T10:00:00Z")  # another day is another stem: checked
    assert seen


def test_a_supplied_id_of_our_shape_is_still_checked_in_full(passes: list[str]) -> None:
    """The memo never lets a supplied id through on another id's verdict: a secret in the stem is found whatever
    the suffix, and an id of another shape is checked as it is."""
    seen = passes
    clean = new_id(_fresh_title(), "2026-11-27T10:00:00Z")
    token = SECRET_SAMPLES_BY_KIND["github_token"][0]
    forged = f"{clean[:11]}{token}-{clean[-8:]}"  # a minted id's date and suffix around a secret
    seen.clear()
    with pytest.raises(InvalidInputError):
        check_id("id", forged)
    assert seen, "a supplied id runs the engine"
    assert token not in json.dumps(prepare_event({"id": forged, "event": "imported"}))
    glued = f"{clean[:-9]}-{token}"  # not our shape: checked whole, glued suffixes too
    assert looks_secret(glued)
