"""Output paths and new roots never land inside a memory root (attacker findings of probe round 6, fixH 1-2).

``export --out ROOT/records/<bob's id>.md`` replaced Bob's record with Alice's export (and planted it as a record
the index served); ``--out ROOT/USER.md``, ``ROOT/index.db``, ``ROOT/MEMORY.md`` wrote over the root's own files.
Every option naming a file a command writes now goes through one rule (``agent_memory.cli._target.check_output``,
built on ``layout.enclosing_root``): a path inside a memory root (symlinks followed), or the root itself, is an
``InvalidInputError`` naming the flag, and nothing is written. Write commands (remember, import, capture, curate,
init) made a new root inside an existing one (``--root ROOT/history``); they now refuse it with the message the
reads give ("it is inside the memory root ROOT").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _matrix import cli_env, fresh_database

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def am(root: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", root, *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=cli_env(),
        input=stdin,
    )


def ok(root: str, *args: str) -> str:
    proc = am(root, *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (the index's -wal/-shm aside: SQLite's own bookkeeping)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.name.endswith(("-wal", "-shm", ".lock")):
            out[str(p.relative_to(root))] = p.read_bytes()
    return out


@pytest.fixture
def root(tmp_path: Path) -> Path:
    from agent_memory import MemoryStore

    r = tmp_path / "m"
    with MemoryStore(r) as store:  # set up in process: the commands under test run as subprocesses
        store.remember("Alice plan: sail to Madeira.", user_id="alice")
    return r


def test_export_out_inside_the_root_is_refused_and_nothing_changes(root: Path, tmp_path: Path) -> None:
    bob = json.loads(ok(str(root), "remember", "Bob's only copy of the launch checklist.", "--user", "bob", "--json"))["id"]
    (root / "USER.md").write_text("I prefer tea.\n")
    ok(str(root), "inject")  # MEMORY.md and the index exist
    link = tmp_path / "innocent.jsonl"
    link.symlink_to(root / "records" / "planted.md")  # a link out of the root pointing into it
    before = tree(root)
    targets = [f"records/{bob}.md", "USER.md", "index.db", "MEMORY.md", ""]
    for rel in targets:
        out = str(root / rel) if rel else str(root)
        proc = am(str(root), "export", "--user", "alice", "--out", out, "--json")
        assert proc.returncode == 1, (rel, proc.stdout, proc.stderr)
        assert json.loads(proc.stdout)["error"]["type"] == "InvalidInputError"
        assert f"--out {out} " in proc.stderr, proc.stderr
        assert "is the memory root" in proc.stderr if not rel else f"inside the memory root {root}" in proc.stderr
    proc = am(str(root), "export", "--out", str(link))
    assert proc.returncode == 1 and "inside the memory root" in proc.stderr, proc.stderr
    proc = am(str(root), "export", "--format", "markdown", "--out", str(root / "tree"))
    assert proc.returncode == 1 and "--out" in proc.stderr, proc.stderr
    assert tree(root) == before  # Bob's record, USER.md, MEMORY.md, the index: untouched; nothing planted
    assert "Bob's only copy" in ok(str(root), "get", bob, "--user", "bob")
    assert "Madeira" not in ok(str(root), "inject", "--user", "bob")
    outside = tmp_path / "alice.jsonl"  # outside every root: exported as before
    ok(str(root), "export", "--user", "alice", "--out", str(outside))
    assert "Madeira" in outside.read_text()


def test_export_out_through_a_symlinked_root_is_refused(root: Path, tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(root)  # the same root reached through a link: resolved before the check
    proc = am(str(alias), "export", "--out", str(alias / "records" / "x.md"))
    assert proc.returncode == 1 and "inside the memory root" in proc.stderr, proc.stderr
    assert not (root / "records" / "x.md").exists()


def test_postgres_export_out_into_a_files_root_is_refused(root: Path) -> None:
    from _pg import require_psycopg, server

    require_psycopg()
    url = fresh_database(server().url)
    ok(url, "remember", "Alice plan: sail to Madeira.", "--user", "alice")
    before = tree(root)
    out = root / "records" / "from-postgres.md"
    proc = am(url, "export", "--out", str(out))
    assert proc.returncode == 1 and f"--out {out} is inside the memory root {root}" in proc.stderr, proc.stderr
    assert tree(root) == before


NESTED = ["history", "archive", "records/sub", "anything"]


@pytest.mark.parametrize(
    "command",
    [
        ["remember", "Alice walrus plan", "--user", "alice"],
        ["import", "-"],
        ["capture", "--input", "I moved to Lisbon and I prefer tea.", "--user", "alice"],
        ["curate", "Alice likes walruses", "--user", "alice"],
        ["init"],
    ],
    ids=lambda c: c[0],
)
def test_a_write_never_creates_a_root_inside_a_root(root: Path, command: list[str]) -> None:
    before = sorted(str(p) for p in root.rglob("*"))
    line = json.dumps({"content": "Alice walrus plan", "user_id": "alice"}) + "\n"
    for rel in NESTED if command[0] == "remember" else NESTED[:1]:
        nested = str(root / rel)
        args = [*command[:1], nested] if command == ["init"] else command
        proc = subprocess.run(
            [sys.executable, "-m", "agent_memory.cli", *(args if command == ["init"] else ["--root", nested, *args])],
            capture_output=True,
            text=True,
            timeout=180,
            env=cli_env(),
            input=line,
        )
        assert proc.returncode == 1, (rel, proc.stdout, proc.stderr)
        assert f"no memory root at {nested}: it is inside the memory root {root} (pass --root {root})" in proc.stderr
        assert "created memory root" not in proc.stderr + proc.stdout
    assert sorted(str(p) for p in root.rglob("*")) == before  # no folder made, nothing written
    assert "walrus" not in b"".join(tree(root).values()).decode("utf-8", "replace")


def test_a_write_still_creates_a_new_root_beside_one(root: Path) -> None:
    beside = root.parent / "other"
    proc = am(str(beside), "remember", "A note.")
    assert proc.returncode == 0 and "created memory root" in proc.stderr, proc.stderr
    assert (beside / "records").is_dir() and os.path.isdir(root / "records")


def test_a_project_folder_named_records_is_not_a_memory_root(tmp_path: Path) -> None:
    """A project with its own ``records/`` folder (no index, events, MEMORY.md or lock) does not make the default
    root ``.agent-memory`` beside it "a root inside a root": the write creates it (regression of the nested-root rule)."""
    project = tmp_path / "project"
    (project / "records").mkdir(parents=True)
    (project / "records" / "README.md").write_text("Meeting notes.\n")  # even of notes: not a memory root
    proc = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "remember", "Deploys happen on Fridays."],
        cwd=project,
        capture_output=True,
        text=True,
        env={**cli_env(), "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert proc.returncode == 0, proc.stderr
    assert len(list((project / ".agent-memory" / "records").glob("*.md"))) == 1
