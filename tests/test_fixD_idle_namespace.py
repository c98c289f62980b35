"""Idle-session summaries obey the namespace rule distill obeys (issue 27, attacker finding idle1): a namespaced
provider's ``summarize_idle()`` and ``agent-memory sessions summarize --idle --namespace NS`` summarise that
namespace's logs only (never the root's or a sibling's); the root (the operator) covers every namespace."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _matrix import cli_env, fresh_database

from agent_memory import MemoryProvider

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

AT = "2026-04-20T10:00:00Z"
LATER = dt.datetime(2026, 4, 20, 12, 0, tzinfo=dt.UTC)
LOGS = [  # (namespace, session, user, text)
    (None, "root-s", "alice", "Root log: the vault code is in the blue binder."),
    ("acme/sales", "sales-s", "bob", "Sales log: pricing talks with Initech."),
    ("acme/support", "sup-s", "carol", "Support log: ticket 42."),
]


async def _log(p: Any) -> None:
    for ns, sid, uid, text in LOGS:
        await p.log_messages([{"role": "user", "text": text, "at": AT}], session_id=sid, user_id=uid, namespace=ns)


def _ids(report: Any) -> list[str]:
    return sorted(s["session_id"] for s in report.summarized)


async def test_a_namespaced_provider_summarizes_its_own_namespaces_idle_logs_only(backend: Any) -> None:
    root = backend.provider()
    await _log(root)
    support = backend.provider(namespace="acme/support", isolation="full")
    assert _ids(await support.summarize_idle(now=LATER)) == ["sup-s"]
    sales = backend.provider(namespace="acme/sales", isolation="full")
    assert _ids(await sales.summarize_idle(now=LATER, user_id="alice")) == []  # alice's log is the root's
    assert _ids(await root.summarize_idle(now=LATER, namespace="acme/sales")) == ["sales-s"]  # per call, as distill
    assert _ids(await root.summarize_idle(now=LATER)) == ["root-s"]  # the operator: what is left, every namespace


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


def test_cli_sessions_summarize_idle_obeys_namespace(store: str) -> None:
    async def seed() -> None:
        async with MemoryProvider(store) as p:
            await _log(p)

    asyncio.run(seed())
    rep = _cli(store, "sessions", "summarize", "--idle", "--namespace", "acme/support", "--isolation", "full")
    assert [s["session_id"] for s in rep["summarized"]] == ["sup-s"]
    assert _cli(store, "sessions", "summarize", "--idle", "--namespace", "acme/sales", "--user", "alice")["summarized"] == []
    rest = _cli(store, "sessions", "summarize", "--idle")  # the operator: every namespace's remaining logs
    assert sorted(s["session_id"] for s in rest["summarized"]) == ["root-s", "sales-s"]
