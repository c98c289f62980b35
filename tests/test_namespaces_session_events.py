"""Session events (``summarized``/``distilled``) carry their log's namespace as every event does (``owner_namespace``).

They used to name it inside their id (``session:<id>@<namespace>``) with no ``owner_namespace``: ``events`` then
showed a namespaced log's events to the root (and hid them from the namespace itself under ``full``), and a purge
by namespace left them behind, session and user in clear. Events written that way stay readable: they are read as
today's shape (and purged by namespace, and honoured by ``distill``). Both backends, from the API and the CLI.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from _matrix import cli_env, fresh_database

from agent_memory.backends.base import innermost
from agent_memory.errors import NotFoundError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SID = "chat-lisbon-42"
LATER = dt.datetime.now(dt.UTC) + dt.timedelta(days=2)
TALK = [
    {"role": "user", "text": "I moved to Lisbon last spring and I work on the billing team."},
    {"role": "assistant", "text": "Noted: Lisbon, billing team."},
]


def _session_events(events: Any) -> set[tuple[str, str, str | None]]:
    return {(e.event, e.id, e.owner_namespace) for e in events if e.event in ("summarized", "distilled")}


async def _raw_events(backend: Any) -> str:
    """Every stored event, as text (files: the event log's bytes; PostgreSQL: every row of the table)."""
    inner: Any = innermost(backend.backend)
    if hasattr(inner, "pool"):
        async with inner.pool.connection() as conn:
            rows = await (await conn.execute(f'SELECT * FROM "{inner.schema}".events')).fetchall()
        return json.dumps(rows, default=str)
    folder = Path(inner.store.root) / "events"
    return "".join(p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.jsonl")))


async def _legacy_event(provider: Any, kind: str, namespace: str, **detail: Any) -> None:
    """An event as it was written before: the namespace in the id, none in ``owner_namespace``."""
    inner: Any = innermost(provider.backend)
    row = {
        "eid": uuid.uuid4().hex[:16],
        "event": kind,
        "id": f"session:{SID}@{namespace}",
        "actor": kind,
        "session_id": SID,
        "user_id": "alice",
        "scope": "user",
        "owner_session": SID,
        "owner_user": "alice",
        "detail": detail,
    }
    if hasattr(inner, "pool"):
        from psycopg.types.json import Jsonb

        async with inner.pool.connection() as conn:
            await conn.execute(
                f'INSERT INTO "{inner.schema}".events (tenant, eid, event, id, actor, session_id, user_id, scope, owner_session,'
                " owner_user, detail) VALUES ('alice', %(eid)s, %(event)s, %(id)s, %(actor)s, %(session_id)s, %(user_id)s,"
                " %(scope)s, %(owner_session)s, %(owner_user)s, %(detail)s)",
                {**row, "detail": Jsonb(detail)},
            )
        return
    from agent_memory.model.events import Event

    inner.store.events.append(Event.from_dict(row))


async def test_session_events_are_in_their_logs_namespace(backend: Any) -> None:
    root = backend.provider()
    acme = backend.provider(namespace="acme")
    await acme.log_messages(TALK, session_id=SID, user_id="alice")
    await acme.distill(user_id="alice")
    assert (await acme.summarize_idle(user_id="alice", now=LATER)).summarized
    mine = await root.events(user_id="alice", namespace="acme", isolation="full")
    assert _session_events(mine) == {("distilled", f"session:{SID}", "acme"), ("summarized", f"session:{SID}", "acme")}
    assert _session_events(await root.events(user_id="alice")) == set()  # the root never reads its children
    assert _session_events(await root.events(user_id="alice", namespace="other")) == set()
    assert _session_events(await root.events(user_id="alice", namespace="acme/support")) == _session_events(mine)  # inherited
    assert SID in await _raw_events(root)
    report = await root.purge(namespace="acme")
    assert report.stores["sessions"] >= 1
    assert SID not in await _raw_events(root)  # its events went with the log (files: tombstones, PostgreSQL: deleted)


async def test_older_session_events_read_as_todays_shape(backend: Any) -> None:
    root = backend.provider()
    acme = backend.provider(namespace="acme")
    await acme.log_messages(TALK, session_id=SID, user_id="alice")
    await _legacy_event(root, "distilled", "acme", through=2, messages=2, written=0)
    await _legacy_event(root, "summarized", "acme/support", version=1, messages=2)
    assert _session_events(await root.events(user_id="alice", namespace="acme", isolation="full")) == {
        ("distilled", f"session:{SID}", "acme")
    }
    assert _session_events(await root.events(user_id="alice")) == set()
    again = await acme.distill(user_id="alice")  # the older event still marks what was read
    assert again.messages == 0 and again.sessions == []
    await root.purge(namespace="acme")
    assert SID not in await _raw_events(root)


@pytest.fixture(params=["files", "postgres"])
def root(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        from _pg import require_psycopg, server

        require_psycopg()
        return fresh_database(server().url)
    return str(tmp_path / "mem")


def cli(root: str, *args: str) -> Any:
    proc = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", root, *args, "--json"],
        capture_output=True,
        text=True,
        timeout=180,
        env=cli_env(),
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_cli_session_events_follow_the_namespace(root: str) -> None:
    me = ("--user", "alice", "--namespace", "acme")
    cli(root, "remember", "Alice's team is billing.", "--scope", "user", *me)  # makes the root
    cli(root, "session", "append", SID, TALK[0]["text"], *me, "--session", SID)
    cli(root, "sessions", "distill", *me)
    shown = cli(root, "events", *me, "--isolation", "full")["events"]
    assert [(e["event"], e["id"], e.get("owner_namespace")) for e in shown if e["event"] == "distilled"] == [
        ("distilled", f"session:{SID}", "acme")
    ]
    assert [e for e in cli(root, "events", "--user", "alice")["events"] if e["event"] == "distilled"] == []
    cli(root, "purge", "--namespace", "acme")
    assert [e for e in cli(root, "events", *me)["events"] if e["event"] == "distilled"] == []
    assert [e for e in cli(root, "events", "--user", "alice")["events"] if SID in json.dumps(e)] == []


async def test_episode_events_are_in_the_episodes_namespace(backend: Any) -> None:
    """``episode_deleted``/``episode_restored`` carry the episode's namespace too (they had none: the root saw them)."""
    root = backend.provider()
    acme = backend.provider(namespace="acme")
    made = await acme.record_episode("help alice with the lisbon move", output="done", session_id=SID, user_id="alice")
    for outsider in ("acme/support", "other", None):  # a child (it reads acme, it does not change it), a sibling, the root
        with pytest.raises(NotFoundError):
            await backend.provider(namespace=outsider).delete_episode(made.id, session_id=SID, user_id="alice")
    await acme.delete_episode(made.id, session_id=SID, user_id="alice")  # its own namespace's (it was "not visible")
    await acme.restore_episode(made.id, session_id=SID, user_id="alice")
    kinds = {(e.event, e.owner_namespace) for e in await root.events(user_id="alice", namespace="acme", isolation="full")}
    assert kinds >= {("episode_deleted", "acme"), ("episode_restored", "acme")}
    assert [e for e in await root.events(user_id="alice") if e.id == made.id] == []  # the root never reads its children
    await root.purge(namespace="acme")
    assert made.id not in await _raw_events(root)
