"""Claude's memory tool in a child namespace: an ancestor's files are read-only there, and the answers say so."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_memory.integrations.anthropic import MemoryToolHandler
from agent_memory.provider import MemoryProvider


@pytest.fixture
def trees(tmp_path: Path) -> tuple[MemoryToolHandler, MemoryToolHandler]:
    provider = MemoryProvider(tmp_path / "root")
    parent = MemoryToolHandler(provider, user_id="alice", namespace="acme")
    child = MemoryToolHandler(provider, user_id="alice", namespace="acme/team", isolation="inherited")
    out = parent.handle({"command": "create", "path": "/memories/plan.md", "file_text": "parent plan\n"})
    assert "Error" not in out, out
    return parent, child


def test_child_sees_the_parents_file_but_cannot_delete_it(trees: tuple[MemoryToolHandler, MemoryToolHandler]) -> None:
    parent, child = trees
    assert "parent plan" in child.handle({"command": "view", "path": "/memories/plan.md"})
    out = child.handle({"command": "delete", "path": "/memories/plan.md"})
    assert out.startswith("Error") and "read-only" in out and "'acme'" in out, out
    assert "parent plan" in parent.handle({"command": "view", "path": "/memories/plan.md"})
    assert "parent plan" in child.handle({"command": "view", "path": "/memories/plan.md"})


def test_child_cannot_rename_the_parents_file_into_its_own(trees: tuple[MemoryToolHandler, MemoryToolHandler]) -> None:
    parent, child = trees
    out = child.handle({"command": "rename", "old_path": "/memories/plan.md", "new_path": "/memories/mine.md"})
    assert out.startswith("Error") and "read-only" in out, out
    assert "does not exist" in child.handle({"command": "view", "path": "/memories/mine.md"})
    assert "parent plan" in parent.handle({"command": "view", "path": "/memories/plan.md"})


def test_child_deletes_its_own_file_that_shadows_the_parents(trees: tuple[MemoryToolHandler, MemoryToolHandler]) -> None:
    parent, child = trees
    child.handle({"command": "create", "path": "/memories/notes/x.md", "file_text": "child note\n"})
    assert child.handle({"command": "delete", "path": "/memories/notes"}) == "Successfully deleted /memories/notes"
    assert "does not exist" in child.handle({"command": "view", "path": "/memories/notes/x.md"})
    assert "parent plan" in parent.handle({"command": "view", "path": "/memories/plan.md"})
