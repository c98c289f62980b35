"""Probe round 6 (fixJ): error messages name the flag that is wrong (and usage errors exit 2), through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ENV = {k: v for k, v in os.environ.items() if k != "AGENT_MEMORY_EMBEDDER"} | {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", str(root), *args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fixJ") / "m"
    assert cli(path, "init").returncode == 0
    for text in ("the deploy day is friday", "the deploy day is monday"):  # two versions of one record
        made = cli(path, "remember", text, "--key", "deploy", "--on-existing", "replace", "--json")
        assert made.returncode == 0, made.stderr
    return path


def _rid(root: Path) -> str:
    return str(json.loads(cli(root, "list", "--json").stdout)["records"][0]["id"])


@pytest.mark.parametrize(
    ("args", "code", "wanted"),
    [
        (("consolidate", "--history", "--since", "x"), 2, "argument --since: not a date or instant: 'x'"),
        (("mcp", "--port", "99999"), 2, "argument --port: must be 0-65535, not 99999"),
        (("session", "append", "c1", "hi", "--user", "u", "--at", "x"), 2, "argument --at: not an ISO date or datetime: 'x'"),
        (("sessions", "summarize", "--idle", "abc"), 2, "unrecognized arguments: abc (see agent-memory sessions --help)"),
        (
            ("export", "--out", "/nonexistent/d/x.jsonl"),
            1,
            "cannot write /nonexistent/d/x.jsonl: its directory /nonexistent/d does not exist",
        ),
    ],
)
def test_the_message_names_the_flag(root: Path, args: tuple[str, ...], code: int, wanted: str) -> None:
    proc = cli(root, *args)
    assert proc.returncode == code, proc.stderr
    assert wanted in proc.stderr and "Traceback" not in proc.stderr
    assert ".tmp-" not in proc.stderr


def test_restore_of_a_version_out_of_range_is_a_usage_error(root: Path) -> None:
    proc = cli(root, "restore", _rid(root), "--version", "99")
    assert proc.returncode == 2, proc.stderr  # was 1
    assert "--version must be between" in proc.stderr and "agent-memory history" in proc.stderr


def test_an_unknown_embedder_spec_says_how_it_was_read(root: Path) -> None:
    pytest.importorskip("numpy")
    if __import__("importlib").util.find_spec("litellm") is not None:
        pytest.skip("litellm is installed: 'nosuch' is then a model id litellm itself refuses")
    for args in (("search", "deploy", "--embedder", "nosuch"), ("embed", "--embedder", "nosuch")):
        proc = cli(root, *args)
        assert proc.returncode == 1, proc.stderr
        assert "embedder 'nosuch'" in proc.stderr and "'local', 'local:PATH' or 'none'" in proc.stderr
        assert "litellm model id" in proc.stderr and "pip install 'agent-memory[litellm]'" in proc.stderr
