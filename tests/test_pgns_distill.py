"""The operator's distill (the root: no namespace) covers every namespace's session logs, as summarize_idle does.

It used to read only the root's logs: ``root.distill()`` returned nothing for a namespaced session on both
backends (and ``agent-memory sessions distill`` as the operator skipped them), while
``root.summarize_idle(now=later)`` summarised them. Each session is distilled in its own namespace: its facts
land there and its ``distilled`` event carries that ``owner_namespace``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _matrix import cli_env, fresh_database

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TALK = [
    {"role": "user", "text": "I moved to Lisbon last spring and I work on the billing team."},
    {"role": "assistant", "text": "Noted: Lisbon, billing team."},
]


def _distilled(events: Any) -> set[tuple[str, str | None]]:
    return {(e.id, e.owner_namespace) for e in events if e.event == "distilled"}


async def test_the_operators_distill_covers_every_namespace(backend: Any) -> None:
    root = backend.provider()
    acme = backend.provider(namespace="acme/support")
    await acme.log_messages(TALK, session_id="s-acme", user_id="alice")
    await root.log_messages(TALK, session_id="s-root", user_id="alice")
    report = await root.distill()
    assert sorted(s["session_id"] for s in report.sessions) == ["s-acme", "s-root"]
    assert report.messages == 4
    assert _distilled(await root.events(user_id="alice", namespace="acme/support", isolation="full")) == {
        ("session:s-acme", "acme/support")
    }
    assert _distilled(await root.events(user_id="alice")) == {("session:s-root", None)}
    for s in report.sessions:  # each session's facts in its own namespace
        want = "acme/support" if s["session_id"] == "s-acme" else ""
        for rid in s["ids"]:
            reader = acme if want else root
            assert ((await reader.get(rid, user_id="alice")).namespace or "") == want
    again = await root.distill()
    assert again.messages == 0 and again.sessions == []
    assert (await acme.distill(user_id="alice")).messages == 0  # read once, whoever asks


@pytest.fixture(params=["files", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        from _pg import require_psycopg, server

        require_psycopg()
        return fresh_database(server().url)
    root = str(tmp_path / "mem")
    subprocess.run([sys.executable, "-m", "agent_memory.cli", "init", root], check=True, capture_output=True, timeout=120, env=cli_env())
    return root


def _cli(root: str, *args: str) -> Any:
    proc = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", root, *args, "--json"],
        capture_output=True,
        text=True,
        timeout=180,
        env=cli_env(),
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_cli_sessions_distill_as_the_operator_covers_namespaces(store: str) -> None:
    _cli(store, "session", "append", "s1", TALK[0]["text"], "--user", "alice", "--namespace", "acme/support")
    _cli(store, "session", "append", "s1", TALK[1]["text"], "--role", "assistant", "--user", "alice", "--namespace", "acme/support")
    rep = _cli(store, "sessions", "distill")
    assert [s["session_id"] for s in rep["sessions"]] == ["s1"] and rep["messages"] == 2
    assert _cli(store, "sessions", "distill")["messages"] == 0
