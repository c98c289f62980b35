"""History, restore and purge through the provider, identically on every backend (files and PostgreSQL).

Purge is checked the hard way: a marker written through every path (records, keyed versions, archive,
session logs and summaries, episodes) is found nowhere afterwards — no file under a files root holds it,
no row of any table of a PostgreSQL schema holds it.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.model.events import NotSupportedError

MARKER = "Zanzibarquetting"


async def test_forget_then_history_and_restore_bring_it_back(backend: Any) -> None:
    provider = backend.provider()
    r = await provider.remember("Kestrels hover over the ridge.", user_id="ada", scope="user")
    assert await provider.forget(r.id, user_id="ada") is True
    with pytest.raises(NotFoundError):
        await provider.get(r.id, user_id="ada")
    h = await provider.history(r.id, user_id="ada")
    assert h.state == "archived" and [v.content for v in h.versions] == ["Kestrels hover over the ridge."]
    for caller in ({"user_id": "bob"}, {}):
        with pytest.raises(NotFoundError):
            await provider.history(r.id, **caller)
        with pytest.raises(NotFoundError):
            await provider.restore(r.id, **caller)
    with pytest.raises(InvalidInputError):
        await provider.restore(r.id, version=1, user_id="ada")
    back = await provider.restore(r.id, user_id="ada")
    assert back.id == r.id and back.content == "Kestrels hover over the ridge."
    assert (await provider.history(r.id, user_id="ada")).state == "live"
    assert [x.id for x in (await provider.search("kestrels ridge", user_id="ada")).hits] == [r.id]


async def test_history_lists_versions_and_restore_makes_an_old_one_current(backend: Any) -> None:
    provider = backend.provider()
    first = await provider.remember("The launch is on Friday.", user_id="ada", scope="user", memory_key="launch")
    await provider.remember("The launch moved to Monday.", user_id="ada", scope="user", memory_key="launch", on_existing="replace")
    h = await provider.history(first.id, user_id="ada")
    assert h.state == "live" and [v.content for v in h.versions] == ["The launch is on Friday.", "The launch moved to Monday."]
    assert h.versions[-1].id == first.id
    with pytest.raises(InvalidInputError):
        await provider.restore(first.id, version=2, user_id="ada")  # version 2 is the current one
    back = await provider.restore(first.id, version=1, user_id="ada")
    assert back.id == first.id and back.content == "The launch is on Friday."
    after = await provider.history(first.id, user_id="ada")
    assert [v.content for v in after.versions] == ["The launch is on Friday.", "The launch moved to Monday.", "The launch is on Friday."]
    plain = await provider.remember("A single fact.", user_id="ada", scope="user")
    with pytest.raises(InvalidInputError):
        await provider.restore(plain.id, user_id="ada")


async def _write_everywhere(provider: Any) -> dict[str, str]:
    ids = {}
    ids["tool"] = (await provider.remember(f"{MARKER} lives in the garden shed.", user_id="u1", scope="user")).id
    ids["keyed"] = (await provider.remember(f"{MARKER} first version.", memory_key="plan", user_id="u1", scope="user")).id
    await provider.remember(f"{MARKER} appended line.", memory_key="plan", user_id="u1", scope="user")
    await provider.remember("A replacement without the word.", memory_key="plan", user_id="u1", scope="user", on_existing="replace")
    ids["forgotten"] = (await provider.remember(f"{MARKER} to be forgotten.", user_id="u1", scope="user")).id
    await provider.forget(ids["forgotten"], user_id="u1")
    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).isoformat()
    ids["expiring"] = (await provider.remember(f"{MARKER} expires soon.", user_id="u1", scope="user", expires=soon)).id
    ids["session"] = (await provider.remember(f"{MARKER} in a session.", session_id="s9", user_id="u1", scope="session")).id
    await provider.log_messages([{"role": "user", "text": f"I said {MARKER} out loud"}], session_id="s9", user_id="u1")
    await provider.summarize_session("s9", user_id="u1", force=True)
    await provider.record_episode(f"Find the {MARKER}", user_id="u1", session_id="s9", output=f"found {MARKER}")
    return ids


async def _where(backend: Any, provider: Any, needle: str) -> list[str]:
    """Files under the root, or tables of the schema, that hold ``needle`` (any case)."""
    if backend.kind == "files":
        root = Path(backend.target)
        return sorted(
            str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and needle.lower().encode() in p.read_bytes().lower()
        )
    b = provider.backend
    found = []
    async with b.pool.connection() as conn:
        cur = await conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (b.schema,))
        for row in await cur.fetchall():
            cur = await conn.execute(
                f'SELECT count(*) AS n FROM "{b.schema}"."{row["table_name"]}" x WHERE position(lower(%s) in lower(x::text)) > 0', (needle,)
            )
            if (await cur.fetchone())["n"]:
                found.append(row["table_name"])
    return found


async def test_purge_user_leaves_no_trace_of_the_marker_anywhere(backend: Any) -> None:
    provider = backend.provider()
    ids = await _write_everywhere(provider)
    keep = await provider.remember("Bob keeps this.", user_id="bob", scope="user")
    await provider.log_messages([{"role": "user", "text": "bob's chat"}], session_id="b1", user_id="bob")
    assert await _where(backend, provider, MARKER)  # written somewhere first
    report = await provider.purge(user_id="u1")
    assert set(ids.values()) <= set(report.records)
    assert report.stores.get("sessions") == 1 and report.stores.get("episodes") == 1  # named in the report
    assert await _where(backend, provider, MARKER) == []
    assert await provider.sessions(user_id="u1") == [] and await provider.episodes(user_id="u1") == []
    assert (await provider.get(keep.id, user_id="bob")).content == "Bob keeps this."
    assert len(await provider.sessions(user_id="bob")) == 1
    with pytest.raises(InvalidInputError):
        await provider.purge()


async def test_purge_one_record_takes_its_versions_and_nothing_else(backend: Any) -> None:
    provider = backend.provider()
    keyed = await provider.remember(f"{MARKER} version one.", memory_key="k", user_id="ada", scope="user")
    await provider.remember("Version two, no marker.", memory_key="k", user_id="ada", scope="user", on_existing="replace")
    other = await provider.remember(f"{MARKER} unrelated but same word.", user_id="ada", scope="user")
    with pytest.raises(NotFoundError):
        await provider.purge(keyed.id, user_id="bob")  # the caller must see it
    report = await provider.purge(keyed.id, user_id="ada")
    assert keyed.id in report.records and len(report.records) == 2
    with pytest.raises(NotFoundError):
        await provider.get(keyed.id, user_id="ada")
    assert (await provider.get(other.id, user_id="ada")).content.startswith(MARKER)
    assert await provider.forget(other.id, user_id="ada", purge=True) is True
    assert await _where(backend, provider, MARKER) == [] or backend.kind == "files"  # files keep hashed event tombstones
    with pytest.raises(NotFoundError):
        await provider.forget(other.id, user_id="ada", purge=True)


async def test_events_and_undo_walk_back_the_callers_changes(backend: Any) -> None:
    provider = backend.provider()
    keyed = await provider.remember("Tea at four.", user_id="ada", scope="user", memory_key="tea")
    await provider.remember("Tea at five.", user_id="ada", scope="user", memory_key="tea", on_existing="replace")
    other = await provider.remember("Coffee at nine.", user_id="ada", scope="user")
    await provider.remember("Bob's own note.", user_id="bob", scope="user")
    assert await provider.forget(other.id, user_id="ada")
    events = await provider.events(user_id="ada")
    assert [(e.event, e.id) for e in events] == [
        ("created", keyed.id),
        ("replaced", keyed.id),
        ("created", other.id),
        ("forgotten", other.id),
    ]
    assert events[1].before == events[0].after != events[1].after and events[0].user_id == "ada"
    assert [e.event for e in await provider.events(user_id="bob")] == ["created"]  # nobody else's
    assert [e.event for e in await provider.events(user_id="ada", record_id=keyed.id, limit=1)] == ["replaced"]
    assert [e.event for e in (await provider.history(keyed.id, user_id="ada")).events] == ["created", "replaced"]
    with pytest.raises(NotFoundError):
        await provider.undo(user_id="carol")
    assert (await provider.undo(user_id="ada")).event == "forgotten"  # the forget is undone: it is back
    assert (await provider.get(other.id, user_id="ada")).content == "Coffee at nine."
    assert (await provider.undo(user_id="ada")).event == "created"  # then its creation: archived again
    with pytest.raises(NotFoundError):
        await provider.get(other.id, user_id="ada")
    assert (await provider.undo(user_id="ada")).event == "replaced"
    assert (await provider.get(keyed.id, user_id="ada")).content == "Tea at four."
    await provider.remember("Tea at six.", user_id="ada", scope="user", memory_key="tea", on_existing="replace")
    await provider.remember("A later change by hand.", user_id="ada", scope="user", memory_key="tea", on_existing="replace")
    assert (await provider.undo(user_id="ada")).event == "replaced"
    assert (await provider.get(keyed.id, user_id="ada")).content == "Tea at six."
    if backend.kind == "postgres":
        with pytest.raises(NotSupportedError, match="Postgres backend"):
            await provider.provenance(keyed.id, user_id="ada")


def test_cli_on_a_postgresql_root_logs_sessions_and_purges_a_user(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys
    import uuid

    from _pg import require_psycopg, server

    require_psycopg()
    url, user = server().url, f"cli-{uuid.uuid4().hex[:8]}"  # the default schema, a user of this test's own
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

    def cli(*args: str) -> dict[str, Any]:
        out = subprocess.run(
            [sys.executable, "-m", "agent_memory.cli", "--root", url, "--json", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            cwd=tmp_path,
        )
        assert out.returncode == 0, out.stderr + out.stdout
        return json.loads(out.stdout)  # type: ignore[no-any-return]

    assert cli("session", "append", "s1", f"{MARKER} said here", "--user", user)["messages"][0]["id"] == "s1#1"
    shown = cli("session", "show", "s1", "--user", user)
    assert [m["text"] for m in shown["log"]] == [f"{MARKER} said here"]
    assert [s["session_id"] for s in cli("sessions", "--user", user)["sessions"]] == ["s1"]
    rid = cli("remember", f"{MARKER} kept as a record", "--user", user, "--scope", "user")["id"]
    assert [e["event"] for e in cli("events", "--user", user)["events"]] == ["created"]
    assert cli("history", rid, "--user", user)["state"] == "live"
    assert cli("undo", "--user", user)["undone"]["event"] == "created"
    assert cli("restore", rid, "--user", user)["restored"] is True
    assert rid in cli("purge", "--user", user)["records"]
    assert cli("sessions", "--user", user)["sessions"] == []
    assert cli("episodes", "--user", user)["episodes"] == []
