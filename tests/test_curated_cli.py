"""``agent-memory curate`` and ``inject`` as real subprocesses, on a files root and on PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

BIN = Path(sys.executable).parent / "agent-memory"


def _root(kind: str, tmp_path: Path) -> str:
    if kind == "files":
        return str(tmp_path / "mem")
    from _pg import require_psycopg, server

    require_psycopg()
    return server().url  # the default schema: users of this test's own keep it apart


def run(root: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEMORY_")}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    return subprocess.run([str(BIN), "--root", root, *args], capture_output=True, text=True, env=env, timeout=120, cwd=cwd)


def js(root: str, *args: str, cwd: Path) -> Any:
    out = run(root, "--json", *args, cwd=cwd)
    assert out.returncode == 0, out.stderr + out.stdout
    return json.loads(out.stdout)


@pytest.mark.parametrize("kind", ["files", "postgres"])
def test_curate_cli_add_list_inject_search_remove_undo_purge(kind: str, tmp_path: Path) -> None:
    root, tag = _root(kind, tmp_path), uuid.uuid4().hex[:8]
    alice, bob = f"alice-{tag}", f"bob-{tag}"

    def cli(*args: str) -> Any:
        return js(root, *args, cwd=tmp_path)

    low = cli("curate", f"Likes teal {tag}", "--user", alice, "--priority", "2")
    high = cli("curate", f"Never deploy on Fridays {tag}", "--user", alice, "--priority", "9")
    assert low["status"] == high["status"] == "created"
    cli("remember", f"Bob keeps notes in Obsidian {tag}", "--user", bob)
    listed = cli("curate", "--list", "--user", alice)["lines"]
    assert [(ln["id"], ln["priority"], ln["curated"]) for ln in listed if tag in ln["text"]] == [
        (high["id"], 9, True),
        (low["id"], 2, True),
    ]
    assert [ln for ln in cli("curate", "--list", "--user", bob)["lines"] if tag in ln["text"]] == []

    human = run(root, "inject", "--user", alice, cwd=tmp_path)
    assert human.returncode == 0, human.stderr
    assert human.stdout.startswith("## Curated memory\n")
    assert human.stdout.index(high["id"]) < human.stdout.index(low["id"])
    for who in (("--user", bob), ()):
        block = cli("inject", *who)["text"]
        assert f"Never deploy on Fridays {tag}" not in block and high["id"] not in block

    hits = cli("search", f"deploy Fridays {tag}", "--user", alice)["hits"]
    assert hits[0]["id"] == high["id"] and hits[0]["curated"] is True and hits[0]["priority"] == 9
    assert high["id"] not in [h["id"] for h in cli("search", f"deploy Fridays {tag}", "--user", bob)["hits"]]
    shown = run(root, "search", f"deploy Fridays {tag}", "--user", alice, cwd=tmp_path).stdout
    assert f"{high['id']}  " in shown and "curated (priority 9)" in shown

    refused = run(root, "--json", "curate", "--remove", high["id"], "--user", bob, cwd=tmp_path)
    assert refused.returncode == 1 and json.loads(refused.stdout)["error"]["type"] == "NotFoundError"
    assert cli("curate", "--remove", high["id"], "--user", alice)["removed"] is True
    assert high["id"] not in cli("inject", "--user", alice)["text"]
    assert cli("undo", "--user", alice)["undone"]["event"] == "forgotten"
    assert high["id"] in cli("inject", "--user", alice)["text"]

    replaced = cli("curate", f"Never deploy on Fridays or Mondays {tag}", "--replace", high["id"], "--user", alice)
    assert replaced["id"] == high["id"] and replaced["status"] == "replaced"
    assert f"Fridays or Mondays {tag}" in cli("inject", "--user", alice)["text"]

    assert high["id"] in cli("purge", "--user", alice)["records"]
    assert [ln for ln in cli("curate", "--list", "--user", alice)["lines"] if tag in ln["text"]] == []
    assert tag not in cli("inject", "--user", alice)["text"]


@pytest.mark.parametrize("kind", ["files", "postgres"])
def test_curate_cli_bad_input_is_one_error_line_and_nothing_written(kind: str, tmp_path: Path) -> None:
    root, user = _root(kind, tmp_path), f"carol-{uuid.uuid4().hex[:8]}"
    js(root, "curate", "seed line", "--user", user, cwd=tmp_path)
    usage = run(root, "curate", "a line", "--user", user, "--priority", "11", cwd=tmp_path)
    assert usage.returncode == 2 and "priority must be an integer from 1 to 10" in usage.stderr
    long = run(root, "--json", "curate", "x" * 400, "--user", user, cwd=tmp_path)
    assert long.returncode == 1 and json.loads(long.stdout)["error"]["type"] == "InvalidInputError"
    nobody = run(root, "curate", "a line without a user", cwd=tmp_path)
    assert nobody.returncode == 1 and "needs a user_id" in nobody.stderr and len(nobody.stderr.strip().splitlines()) == 1
    both = run(root, "curate", "--list", "--remove", "x", "--user", user, cwd=tmp_path)
    assert both.returncode == 2
    assert [ln["text"] for ln in js(root, "curate", "--list", "--user", user, cwd=tmp_path)["lines"]] == ["seed line"]
    shared = js(root, "curate", f"Shared rule {user}", "--shared", "--priority", "4", cwd=tmp_path)
    assert any(ln["id"] == shared["id"] for ln in js(root, "curate", "--list", "--shared", cwd=tmp_path)["lines"])
    assert js(root, "curate", "--remove", shared["id"], cwd=tmp_path)["removed"] is True
