"""A whole root, exported and imported losslessly (issue 27): records (live, superseded, archived), session logs
and summaries, episodes and events, for two users, files→files, files→PostgreSQL and PostgreSQL→files, by the
API and by the CLI as a real subprocess. A whole-store export holds every user; a caller's export holds exactly
what that caller sees and says so; a second import writes nothing; no secret reaches any byte of the copy.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _matrix import cli_env, fresh_database, pg_blob

from agent_memory.backends import open_backend
from agent_memory.backends.base import Caller
from agent_memory.episodes import build_episode, episode_store
from agent_memory.model.drafts import MemoryDraft
from agent_memory.portable import export_records, import_file
from agent_memory.sessions.api import session_store
from agent_memory.sessions.store import SessionStore

USERS = ("alice", "bob")
SECRET = "ghp_" + "aB3xK9mQ2vL7pR4tW8yZ1cD5fG6hJ0nS2uE4"  # a GitHub token: redacted on every write
FAKE_EID = "0123456789abcdef"


def _open(target: str) -> Any:
    """A backend for the sync export/import API (PostgreSQL: a one-shot, unpooled, as the CLI opens it)."""
    return open_backend(target, pooled=False) if target.startswith("postgresql://") else open_backend(target, durable=False)


def _close(b: Any) -> None:
    close = getattr(b, "close", None)
    if close is not None:
        res = close()
        if asyncio.iscoroutine(res):
            asyncio.run(res)


def on(target: str, fn: Any) -> Any:
    """Open a backend, run ``await fn(b)`` and close it, all in one event loop (a pool belongs to its loop)."""

    async def main() -> Any:
        b = open_backend(target, durable=False)
        try:
            return await fn(b)
        finally:
            res = getattr(b, "close", lambda: None)()
            if asyncio.iscoroutine(res):
                await res

    return asyncio.run(main())


def _sessions(b: Any) -> SessionStore:
    root = getattr(b, "root", None)
    return SessionStore(root) if isinstance(root, Path) else session_store(b)


async def populate(b: Any) -> None:
    """Two users' records (one superseded, one forgotten into the archive), a shared record, a session log with
    two summary versions per user, an episode per user."""
    for u in USERS:
        first = await b.remember(MemoryDraft(content=f"{u} drinks tea", user_id=u, scope="user"))
        await b.supersede(first.id, MemoryDraft(content=f"{u} drinks coffee now", user_id=u, scope="user"))
        gone = await b.remember(MemoryDraft(content=f"{u} once lived in Oslo", user_id=u, scope="user"))
        assert await b.forget(gone.id, Caller(user_id=u))
        await b.remember(MemoryDraft(content=f"{u} keeps the key {SECRET}", user_id=u, scope="user"))
    await b.remember(MemoryDraft(content="The build uses make", scope="project"))
    sessions = _sessions(b)
    episodes = episode_store(b)
    for u in USERS:
        sessions.append(
            f"s-{u}",
            [
                {"role": "user", "text": f"hello from {u}", "at": "2026-01-02T10:00:00Z"},
                {"role": "assistant", "text": f"token {SECRET} for {u}", "at": "2026-01-02T10:00:05Z", "metadata": {"k": u}},
            ],
            user_id=u,
        )
        sessions.write_summary(f"s-{u}", f"{u} said hello", user_id=u, made_at="2026-01-02T10:01:00Z")
        sessions.write_summary(f"s-{u}", f"{u} said hello twice", user_id=u, made_at="2026-01-02T10:02:00Z")
        episodes.write(build_episode(f"help {u} with tea", output="done", tool_calls=["search"], user_id=u))


async def snapshot(b: Any, *, events: bool = True) -> dict[str, Any]:
    """Per user: record texts (live, superseded), archived ids' texts, sessions (messages, summaries), episodes, and
    the events that user sees — everything compared across a copy (ids only where the target keeps them)."""
    out: dict[str, Any] = {}
    sessions = _sessions(b)
    episodes = episode_store(b)
    for u in USERS:
        c = Caller(user_id=u)
        live = await b.list(c, limit=None)
        every = await b.list(c, limit=None, include_superseded=True)
        logs = sessions.visible_logs(session_id=None, user_id=u)
        out[u] = {
            "live": sorted(r.content for r in live),
            "superseded": sorted(r.content for r in every if r.superseded_by),
            "sessions": sorted(
                (
                    d.session_id,
                    [(m.role, m.text, m.at, dict(m.metadata)) for m in msgs],
                    [(s.version, s.text, s.made_at) for s in sessions.summaries(d.session_id, user_id=u)],
                )
                for d, msgs, _ in logs
            ),
            "episodes": sorted((e.id, e.goal, e.started, e.user_id) for e in episodes.list(user_id=u, limit=100)),
        }
        if events:
            out[u]["events"] = sorted((e.eid, e.event, e.id) for e in await b.events(c))
    return out


def copy_blob(target: str) -> bytes:
    if target.startswith("postgresql://"):
        return pg_blob(target)
    return b"\n".join(p.read_bytes() for p in sorted(Path(target).rglob("*")) if p.is_file())


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def _pg_url() -> str:
    from _pg import require_psycopg, server

    require_psycopg()
    return fresh_database(server().url)


def _target(kind: str, tmp_path: Path, name: str) -> str:
    return _pg_url() if kind == "postgres" else str(tmp_path / name)


@pytest.mark.parametrize(("src_kind", "dst_kind"), [("files", "files"), ("files", "postgres"), ("postgres", "files")])
def test_full_export_round_trip_by_the_api(tmp_path: Path, src_kind: str, dst_kind: str) -> None:
    src_t, dst_t = _target(src_kind, tmp_path, "src"), _target(dst_kind, tmp_path, "dst")
    keep_events = dst_kind == "files" and src_kind == "files"

    async def fill(b: Any) -> Any:
        await populate(b)
        return await snapshot(b, events=keep_events)

    before = on(src_t, fill)
    out = tmp_path / "root.jsonl"
    counts: dict[str, int] = {}
    src = _open(src_t)
    try:
        n = export_records(src, out, full=True, counts=counts)
    finally:
        _close(src)
    lines = _lines(out)
    assert lines[0] == {
        "format": "agent-memory",
        "version": 2,
        "sections": ["records", "archive", "namespaces", "sessions", "episodes", "events"],
    }
    # every user's records: 2 users x (superseded + current + secret one) + the shared one; the forgotten ones archived
    assert n == 7 and counts["archive"] == 2 and counts["session"] == 2 and counts["episode"] == 2
    assert counts["event"] >= 9  # per user: created, superseded, created, forgotten, created; + the shared one
    assert SECRET not in out.read_text(encoding="utf-8")
    reports = []
    for _ in range(2):
        dst = _open(dst_t)
        try:
            reports.append(import_file(dst, out).to_dict())
        finally:
            _close(dst)
    report, again = reports
    assert report["skipped_by_reason"].get("invalid", 0) == 0, report["skips"]
    after = on(dst_t, lambda b: snapshot(b, events=keep_events))
    if dst_kind == "postgres":  # superseded history is not re-created there (ids are the backend's own)
        for u in USERS:
            before[u]["superseded"] = after[u]["superseded"] = []
    assert after == before
    assert again["written"] == 0, again  # idempotent: a second import writes nothing
    assert SECRET.encode() not in copy_blob(dst_t)
    if dst_kind == "files":  # the archive came along: alice can restore what she forgot, bob cannot see it
        archived = sorted(p.name for p in (Path(dst_t) / "archive").glob("*.md"))
        assert len(archived) == 2


def test_whole_store_export_holds_every_user_and_a_callers_export_says_it_is_partial(tmp_path: Path) -> None:
    url = _pg_url()
    on(url, populate)
    whole, alice = tmp_path / "whole.jsonl", tmp_path / "alice.jsonl"
    b = _open(url)
    try:  # no caller: the operator's export, every user (was: project/global only)
        export_records(b, whole)
    finally:
        _close(b)
    rows = _lines(whole)
    assert rows[0] == {"format": "agent-memory", "version": 1}
    assert {r.get("user_id") for r in rows[1:]} == {None, "alice", "bob"} and len(rows) == 1 + 7
    b = _open(url)
    try:
        export_records(b, alice, caller=Caller(user_id="alice"), full=True)
    finally:
        _close(b)
    mine = _lines(alice)
    assert mine[0]["caller"] == {"session_id": None, "user_id": "alice"} and "archive" not in mine[0]["sections"]
    assert all(r.get("user_id") in (None, "alice") for r in mine[1:] if "section" not in r)
    assert [r["user_id"] for r in mine if r.get("section") == "session"] == ["alice"]
    assert [r["episode"]["user_id"] for r in mine if r.get("section") == "episode"] == ["alice"]
    assert "bob" not in alice.read_text(encoding="utf-8")


def _cli(*args: str, root: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", root, *args],
        cwd=cwd,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(("src_kind", "dst_kind"), [("files", "files"), ("postgres", "files")])
def test_full_export_round_trip_by_the_cli(tmp_path: Path, src_kind: str, dst_kind: str) -> None:
    src_t, dst_t = _target(src_kind, tmp_path, "src"), _target(dst_kind, tmp_path, "dst")

    async def fill(b: Any) -> Any:
        await populate(b)
        return await snapshot(b, events=src_kind == "files")

    before = on(src_t, fill)
    out = tmp_path / "root.jsonl"
    res = _cli("export", "--full", "--out", str(out), "--json", root=src_t, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["contents"] == "whole store" and doc["exported"] == 7 and doc["sections"]["session"] == 2
    assert _cli("init", root=dst_t, cwd=tmp_path).returncode == 0
    first = _cli("import", str(out), "--json", root=dst_t, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    kinds = json.loads(first.stdout)["written_by_kind"]  # what a whole root's import brought, by kind
    assert sum(kinds.values()) == json.loads(first.stdout)["written"] and kinds["session"] == 2
    said = _cli("import", str(out), root=str(tmp_path / "dst-said"), cwd=tmp_path)  # the human summary names them
    assert said.returncode == 0, said.stderr
    assert said.stdout.startswith(f"imported {kinds.get('record', 0)} records, ") and "2 session logs" in said.stdout
    second = json.loads(_cli("import", str(out), "--json", root=dst_t, cwd=tmp_path).stdout)
    assert second["written"] == 0
    assert on(dst_t, lambda b: snapshot(b, events=src_kind == "files")) == before
    assert SECRET.encode() not in copy_blob(dst_t)
    partial = _cli("export", "--user", "bob", "--out", str(tmp_path / "bob.jsonl"), "--json", root=src_t, cwd=tmp_path)
    assert json.loads(partial.stdout)["contents"] == {"caller": {"session_id": None, "user_id": "bob"}}
    assert "only what user bob may see" in partial.stderr


def test_section_lines_pass_the_write_gate(tmp_path: Path) -> None:
    """A hand-made section line: a secret in a message, a summary, an episode goal and an event detail is stored
    redacted; an owner id that is a secret is refused with its line; an import as a caller carries no section."""
    src = tmp_path / "hand.jsonl"
    ep = build_episode("find the key", output="ok", user_id="alice").to_dict()
    ep["goal"] = f"use {SECRET}"
    rows = [
        {"format": "agent-memory", "version": 2, "sections": ["sessions", "episodes", "events"]},
        {
            "section": "session",
            "session_id": "s1",
            "user_id": "alice",
            "messages": [{"role": "user", "text": f"my token {SECRET}", "at": "2026-01-01T00:00:00Z"}],
            "summaries": [
                {
                    "version": 1,
                    "text": f"shared {SECRET}",
                    "made_at": "2026-01-01T00:00:01Z",
                    "messages": 1,
                    "source": "offline",
                    "fallback": False,
                }
            ],
        },
        {"section": "session", "session_id": SECRET, "user_id": "alice", "messages": []},
        {"section": "episode", "episode": ep},
        {
            "section": "event",
            "event": {
                "event": "created",
                "id": "r1",
                "eid": FAKE_EID,
                "ts": "2026-01-01T00:00:00Z",
                "scope": "user",
                "owner_user": "alice",
                "detail": {"note": SECRET},
            },
        },
        {"section": "bogus"},
    ]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    root = tmp_path / "dst"
    b = open_backend(str(root), durable=False)
    try:
        report = import_file(b, src).to_dict()
        caller_report = import_file(open_backend(str(tmp_path / "other"), durable=False), src, user_id="mallory")
    finally:
        _close(b)
    reasons = {s["where"]: s["reason"] for s in report["skips"]}
    assert reasons == {"line 3": "invalid", "line 6": "invalid"}, report["skips"]
    assert SECRET not in json.dumps(report)
    assert SECRET.encode() not in copy_blob(str(root))
    assert report["written"] == 3
    assert caller_report.to_dict()["written"] == 0
    assert {s.reason for s in caller_report.skipped} == {"unsupported"}  # no section is planted by a caller
