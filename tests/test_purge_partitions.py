"""A purge takes exactly one owner's partition, on both backends, through the API and the CLI.

Owners are the ones visibility knows (``agent_memory.model.scopes.owns``): a user; a user's session (the same
session id under two users is two sessions); a session without a user. ``purge(user_id=U)`` takes everything of
U, ``purge(user_id=U, session_id=S)`` only U's session S, ``purge(session_id=S)`` only the anonymous session S.
A purged owner's identity also leaves the provenance of shared records that stay, and a PostgreSQL password given
as a URL parameter reaches no hit path and no error message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from _doubles import fill_owners, owned_left

from agent_memory.backends.postgres.rows import redact_url, url_location
from agent_memory.model import scopes

# (user or None, session): a record, a log message and an episode each
OWNERS = [("alice", "chat-1"), ("bob", "chat-1"), (None, "chat-1"), ("bob", "chat-2")]


@pytest.mark.parametrize(
    ("who", "gone"),
    [
        ({"user_id": "bob", "session_id": "chat-1"}, {("bob", "chat-1")}),
        ({"session_id": "chat-1"}, {(None, "chat-1")}),
        ({"user_id": "bob"}, {("bob", "chat-1"), ("bob", "chat-2")}),
    ],
    ids=["user-and-session", "anonymous-session", "user"],
)
async def test_purge_takes_one_owner_and_never_another(backend: Any, who: dict[str, str], gone: set[tuple[str | None, str]]) -> None:
    provider = backend.provider()
    ids = await fill_owners(provider, OWNERS)
    everything = {(kind, u, s) for u, s in OWNERS for kind in ("log", "episode", "record")}
    assert await owned_left(provider, OWNERS) == everything
    report = await provider.purge(**who)
    assert await owned_left(provider, OWNERS) == {(k, u, s) for k, u, s in everything if (u, s) not in gone}
    assert sorted(report.records) == sorted(ids[o] for o in gone)
    assert (report.stores["sessions"], report.stores["episodes"], report.stores["records"]) == (len(gone),) * 3
    if backend.kind == "files":  # no byte of another owner went: alice's log file is still on disk
        assert (Path(backend.target) / "sessions" / "alice" / "chat-1" / "log.jsonl").is_file()


def _cli(root: str, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", root, "--json", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env or {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    assert out.returncode == 0, out.stderr + out.stdout
    return json.loads(out.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("kind", ["files", "postgres"])
def test_cli_purge_of_bobs_session_keeps_alices_session_of_the_same_id(kind: str, tmp_path: Path) -> None:
    if kind == "postgres":
        from _pg import require_psycopg, server

        require_psycopg()
        root = server().url  # the CLI's default schema: ids of this test's own
    else:
        root = str(tmp_path / "mem")
        _cli(root, "remember", "A project note that stays.", "--scope", "project")  # creates the root
    tag = uuid.uuid4().hex[:8]
    alice, bob, sid = f"alice-{tag}", f"bob-{tag}", f"chat-{tag}"
    for user in (alice, bob):
        _cli(root, "session", "append", sid, f"{user} was here", "--user", user)
        _cli(root, "remember", f"{user} keeps a note", "--user", user, "--session", sid, "--scope", "session")
    _cli(root, "session", "append", sid, "nobody was here", "--session", sid)  # the anonymous session of that id
    report = _cli(root, "purge", "--session", sid, "--user", bob)
    assert len(report["records"]) == 1 and report["stores"]["sessions"] == 1
    assert [m["text"] for m in _cli(root, "session", "show", sid, "--user", alice)["log"]] == [f"{alice} was here"]
    assert [r["content"] for r in _cli(root, "list", "--user", alice, "--session", sid)["records"] if r["session_id"] == sid] == [
        f"{alice} keeps a note"
    ]
    assert _cli(root, "sessions", "--user", bob)["sessions"] == []
    report = _cli(root, "purge", "--session", sid)  # the session alone: the anonymous one only
    assert report["records"] == [] and report["stores"]["sessions"] == 1
    assert [m["text"] for m in _cli(root, "session", "show", sid, "--user", alice)["log"]] == [f"{alice} was here"]
    _cli(root, "purge", "--user", alice)


def test_help_states_the_rule() -> None:
    out = subprocess.run([sys.executable, "-m", "agent_memory.cli", "purge", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "never another" in out.stdout and "without a user" in out.stdout


async def test_purge_of_a_user_leaves_no_trace_of_her_in_shared_records_that_stay(backend: Any) -> None:
    """alice replaced bob's project record: after purge(user_id=alice) it stays (it is the project's) with her
    text, and her identity is gone from its provenance (files: every byte of the root; PostgreSQL: the rows)."""
    provider = backend.provider()
    claimed = {
        "provenance": {
            "created": {"at": "2026-01-01T00:00:00Z", "session_id": "a1", "user_id": "alice"},
            "updated": {"at": "2026-01-02T00:00:00Z", "session_id": "a1", "user_id": "alice"},
        }
    }
    made = await provider.remember("Deploys happen on Fridays.", memory_key="deploy", scope="project", user_id="bob", session_id="b1")
    await provider.remember(
        "Deploys happen on Mondays.", memory_key="deploy", scope="project", user_id="alice", session_id="a1", on_existing="replace"
    )
    imported = await provider.remember("Imported with a claimed history.", scope="project", metadata=claimed)
    archived = await provider.remember("Archived with a claimed history.", scope="project", metadata=claimed)
    assert await provider.forget(archived.id) is True  # an archived copy naming her (PostgreSQL keeps the claim)
    retro = await provider.remember("Retro on Tuesdays.", memory_key="retro", scope="project", user_id="bob")
    await provider.remember(
        "Retro on Thursdays.", memory_key="retro", scope="project", user_id="alice", session_id="a1", on_existing="replace"
    )
    assert await provider.forget(retro.id, user_id="bob") is True  # files: an archived copy she last changed
    await provider.remember("Alice's own note.", user_id="alice", session_id="a1", scope="user")
    await provider.remember("Bob's other project note, written by bob alone.", scope="project", user_id="bob", session_id="b9")
    report = await provider.purge(user_id="alice")
    assert len(report.records) == 1  # her own note; the shared records stay
    rec = await provider.get(made.id, user_id="bob")
    assert rec.content == "Deploys happen on Mondays."  # her text in the project's record is the project's
    for rid in (made.id, imported.id):
        prov = json.dumps((await provider.get(rid, user_id="bob")).metadata)
        assert "alice" not in prov and '"a1"' not in prov, prov
    if backend.kind == "files":
        root = Path(backend.target)
        await provider.aclose()
        found = [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and b"alice" in p.read_bytes()]
        assert found == []
        from agent_memory.backends.files.store import MemoryStore

        store = MemoryStore(root, durable=False)
        events = store.events_for(made.id, user_id="bob")  # her replace is still in the record's history, anonymous
        assert [e.event for e in events] == ["created", "replaced"] and str(events[1].user_id).startswith("purged:")
        store.close()
    else:
        backend_ = provider.backend
        async with backend_.pool.connection() as conn:
            cur = await conn.execute(
                f"SELECT count(*) AS n FROM \"{backend_.schema}\".records WHERE metadata::text LIKE '%%alice%%' OR user_id = 'alice'"
            )
            assert (await cur.fetchone())["n"] == 0
            cur = await conn.execute(f"SELECT count(*) AS n FROM \"{backend_.schema}\".archive WHERE record::text LIKE '%%alice%%'")
            assert (await cur.fetchone())["n"] == 0
        await provider.restore(archived.id)  # the archived copy is still whole and restorable
        assert (await provider.get(archived.id)).content == "Archived with a claimed history."


def test_owner_rule_python_and_sql_agree() -> None:
    import sqlite3

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (session_id TEXT, user_id TEXT)")
    values = [None, "s1", "s2"], [None, "u1", "u2"]
    rows = [(s, u) for s in values[0] for u in values[1]]
    conn.executemany("INSERT INTO t VALUES (?, ?)", rows)
    for sid in values[0]:
        for uid in values[1]:
            if sid is None and uid is None:
                continue
            sql = scopes.owner_sql("session_id", "user_id", session_id=sid, user_id=uid)
            got = set(conn.execute(f"SELECT session_id, user_id FROM t WHERE {sql}", scopes.owner_params(sid, uid)))
            assert got == {r for r in rows if scopes.owns(*r, session_id=sid, user_id=uid)}, (sid, uid)
    assert not scopes.owns("s1", "u1", session_id="s1", user_id=None)  # a session alone is never a user's


@pytest.mark.parametrize(
    ("url", "secrets"),
    [
        ("postgresql://u:Pw0rd@h:5432/db", ["Pw0rd"]),
        ("postgresql://u@h/db?password=Pw0rd&sslmode=require", ["Pw0rd"]),
        ("postgresql://u@h/db?sslmode=require&PASSWORD=Pw0rd", ["Pw0rd"]),
        ("postgresql://u@h/db?sslpassword=Key0pw&password=Pw0rd", ["Pw0rd", "Key0pw"]),
        ("postgresql://u:Pw0rd@h1:5432,u2:Sec0nd@h2:5433/db", ["Pw0rd", "Sec0nd"]),
        ("postgresql://u:p%40ss@w0rd@h/db", ["ss", "w0rd"]),
        ("postgres://u:Pw0rd@[::1]:5432/db?password=Other1", ["Pw0rd", "Other1"]),
    ],
)
def test_redact_url_masks_every_password(url: str, secrets: list[str]) -> None:
    for shown in (redact_url(url), url_location(url)):
        assert not any(s in shown for s in secrets), shown
        assert shown.startswith(url.split("://")[0] + "://u")
    assert "?" not in url_location(url) and "sslmode" not in url_location(url)
    assert redact_url("postgresql://u@h/db?sslmode=require") == "postgresql://u@h/db?sslmode=require"


def test_a_password_parameter_reaches_no_hit_path_and_no_error(tmp_path: Path) -> None:
    from _pg import require_psycopg, server

    require_psycopg()
    url = server().url + ("&" if "?" in server().url else "?") + "password=Pw0rdParam"  # trust auth: accepted, unused
    tag = uuid.uuid4().hex[:8]
    made = _cli(url, "remember", f"Heron {tag} nests by the lake", "--user", f"u-{tag}")
    hits = _cli(url, "search", f"heron {tag}", "--user", f"u-{tag}")["hits"]
    assert [h["id"] for h in hits] == [made["id"]]
    for shown in (made["path"], hits[0]["path"], _cli(url, "get", made["id"], "--user", f"u-{tag}")["path"]):
        assert "Pw0rdParam" not in shown and "?" not in shown, shown
    _cli(url, "purge", "--user", f"u-{tag}")
    bad = "postgresql://u:Pw0rdUser@127.0.0.1:1,127.0.0.1:2/db?password=Pw0rdParam&connect_timeout=2"  # libpq multi-host
    out = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", bad, "--json", "search", "x"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    assert out.returncode != 0 and "127.0.0.1" in out.stdout + out.stderr
    assert "Pw0rd" not in out.stdout + out.stderr, out.stdout + out.stderr
