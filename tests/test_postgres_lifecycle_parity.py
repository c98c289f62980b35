"""PostgreSQL's record lifecycle matches the files backend's, step for step (the files backend is right).

Each case runs the same steps on both backends twice: through the command line as a real subprocess (as a new
user would), and through the backend API.

1. ``undo`` after a replace then an append goes back one step (the ``appended`` event had the replaced version's
   hash as its "before", so undo went back two).
2. ``forget`` then ``undo``/``restore`` brings back the superseded predecessor too (it stayed in the archive:
   ``get``/``history``/``--as-of`` of the old version were wrong).
3. A command on a ``postgresql://`` root leaves nothing pending: stderr is empty (was "Task was destroyed but it
   is pending! … agent-memory-postgres-pool-guard"), and its connections are closed when it returns.
4. ``get --provenance`` on PostgreSQL says it is not supported (an ``UnsupportedError``, non-zero exit) instead of
   printing nothing.
5. ``doctor`` on PostgreSQL counts rows, not files.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _pg import fresh_schema, make_target, pg_url, require_psycopg  # noqa: F401  (pytest fixture)

from agent_memory.backends.base import Caller
from agent_memory.errors import UnsupportedError
from agent_memory.model.drafts import MemoryDraft, OnExisting

KINDS = ("files", "postgres")


@pytest.fixture(params=KINDS)
def root(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh root of each backend kind for the command line: a directory, or a fresh database (the CLI uses the
    default schema)."""
    if request.param == "files":
        yield str(tmp_path / "mem")
        return
    require_psycopg()
    url = request.getfixturevalue("pg_url")
    import psycopg

    name = f"lp_{fresh_schema()}"
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield url.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def am(root: str, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    """``agent-memory --root ROOT ARGS`` in a new process (PYTHONPATH inherited: this tree is the one imported)."""
    done = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", root, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
        check=False,
    )
    if ok:
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done


def am_json(root: str, *args: str) -> Any:
    return json.loads(am(root, "--json", *args).stdout)


def contents(root: str, *args: str) -> list[str]:
    return [r["content"] for r in am_json(root, "list", *args)["records"]]


# -- 1. undo after replace then append ----------------------------------------------------------
def test_undo_after_replace_then_append_goes_back_one_step_cli(root: str) -> None:
    am(root, "remember", "Eve drinks tea.", "--user", "eve", "--key", "drink")
    am(root, "remember", "Eve drinks coffee.", "--user", "eve", "--key", "drink", "--on-existing", "replace")
    am(root, "remember", "Eve also drinks water.", "--user", "eve", "--key", "drink")
    [rid] = [r["id"] for r in am_json(root, "list", "--user", "eve")["records"]]
    events = {e["event"]: e for e in am_json(root, "history", rid, "--user", "eve")["events"]}
    assert events["appended"]["before"] == events["replaced"]["after"]  # was the hash before the replace
    assert am_json(root, "undo", "--user", "eve")["undone"]["event"] == "appended"
    assert contents(root, "--user", "eve") == ["Eve drinks coffee."]  # was "Eve drinks tea." on PostgreSQL
    assert am_json(root, "undo", "--user", "eve")["undone"]["event"] == "replaced"
    assert contents(root, "--user", "eve") == ["Eve drinks tea."]


@pytest.mark.parametrize("kind", KINDS)
def test_undo_after_replace_then_append_goes_back_one_step_api(kind: str, tmp_path: Path) -> None:
    target = make_target(kind, tmp_path)
    eve = Caller(user_id="eve")

    async def run() -> list[str]:
        backend = target.backend()
        try:
            steps: tuple[tuple[str, OnExisting], ...] = (
                ("Eve drinks tea.", "append"),
                ("Eve drinks coffee.", "replace"),
                ("Eve also drinks water.", "append"),
            )
            for text, mode in steps:
                await backend.remember(MemoryDraft(text, user_id="eve", memory_key="drink", on_existing=mode))
            [rec] = await backend.list(eve)
            by = {e.event: e for e in await backend.events(eve, record_id=rec.id)}
            assert by["appended"].before == by["replaced"].after  # was the hash before the replace
            assert (await backend.undo(eve)).event == "appended"
            return [r.content for r in await backend.list(eve)]
        finally:
            await backend.close()

    assert asyncio.run(run()) == ["Eve drinks coffee."]


# -- 2. forget, then undo or restore ------------------------------------------------------------
@pytest.mark.parametrize("back", ["undo", "restore"])
def test_forget_then_undo_or_restore_brings_back_the_predecessor_cli(root: str, back: str) -> None:
    am(root, "remember", "Dana lives in Oslo.", "--user", "dana", "--key", "home")
    am(root, "remember", "Dana lives in Rome.", "--user", "dana", "--key", "home", "--on-existing", "replace")
    every = am_json(root, "list", "--user", "dana", "--include-superseded")["records"]
    [old] = [r for r in every if r["superseded_by"]]
    [cur] = [r for r in every if not r["superseded_by"]]
    am(root, "forget", cur["id"], "--user", "dana")
    assert contents(root, "--user", "dana", "--include-superseded") == []
    am(root, back, *(["--user", "dana"] if back == "undo" else [cur["id"], "--user", "dana"]))
    assert sorted(contents(root, "--user", "dana", "--include-superseded")) == ["Dana lives in Oslo.", "Dana lives in Rome."]
    assert am_json(root, "get", old["id"], "--user", "dana")["content"] == "Dana lives in Oslo."
    assert am_json(root, "history", old["id"], "--user", "dana")["state"] == "live"  # was "archived"
    assert contents(root, "--user", "dana", "--as-of", old["created"]) == ["Dana lives in Oslo."]
    assert contents(root, "--user", "dana") == ["Dana lives in Rome."]


@pytest.mark.parametrize("back", ["undo", "restore"])
@pytest.mark.parametrize("kind", KINDS)
def test_forget_then_undo_or_restore_brings_back_the_predecessor_api(kind: str, back: str, tmp_path: Path) -> None:
    target = make_target(kind, tmp_path)
    dana = Caller(user_id="dana")

    async def run() -> None:
        backend = target.backend()
        try:
            await backend.remember(MemoryDraft("Dana lives in Oslo.", user_id="dana", memory_key="home"))
            await backend.remember(MemoryDraft("Dana lives in Rome.", user_id="dana", memory_key="home", on_existing="replace"))
            every = await backend.list(dana, include_superseded=True)
            [old] = [r for r in every if r.superseded_by]
            [cur] = [r for r in every if not r.superseded_by]
            assert [r.content for r in await backend.list(dana, as_of=old.created)] == ["Dana lives in Oslo."]
            assert await backend.forget(cur.id, dana)
            assert await backend.list(dana, include_superseded=True) == []
            if back == "undo":
                assert (await backend.undo(dana)).event == "forgotten"
            else:
                await backend.restore(cur.id, dana)
            assert sorted(r.content for r in await backend.list(dana, include_superseded=True)) == [
                "Dana lives in Oslo.",
                "Dana lives in Rome.",
            ]
            assert (await backend.get(old.id, dana)).superseded_by == cur.id
            assert (await backend.history(old.id, dana)).state == "live"
            assert [r.content for r in await backend.list(dana, as_of=old.created)] == ["Dana lives in Oslo."]
        finally:
            await backend.close()

    asyncio.run(run())


# -- 3. nothing pending after a command ----------------------------------------------------------
READS = [
    ["list", "--user", "eve"],
    ["inject", "--user", "eve"],
    ["doctor"],
    ["search", "tea", "--user", "eve"],
    ["events", "--user", "eve"],
    ["sweep"],
    ["reindex"],
]


def test_commands_leave_nothing_pending_cli(root: str) -> None:
    first = am(root, "remember", "Eve drinks tea.", "--user", "eve", "--key", "drink")
    assert "Task was destroyed" not in first.stderr and "pending" not in first.stderr
    [rid] = [r["id"] for r in am_json(root, "list", "--user", "eve")["records"]]
    for args in [
        *READS,
        ["get", rid, "--user", "eve"],
        ["history", rid, "--user", "eve"],
        ["remember", "Eve drinks coffee.", "--user", "eve", "--key", "drink"],
    ]:
        done = am(root, *args)
        assert done.stderr == "", (args, done.stderr)  # was "Task was destroyed but it is pending! …" on PostgreSQL
    done = am(root, "forget", rid, "--user", "eve")
    assert done.stderr == ""


def test_commands_close_their_connections_in_process(
    root: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In process: when a command returns, every pool it made holds no open connections (no loop left holding
    them), and the loop it ran on is closed."""
    if "://" not in root:
        pytest.skip("a database root's connections (the files root has no pool)")
    from agent_memory.backends.postgres.pool import Pool
    from agent_memory.cli import main

    pools: list[Pool] = []
    real_init = Pool.__init__

    def init(self: Pool, *args: Any, **kw: Any) -> None:
        real_init(self, *args, **kw)
        pools.append(self)

    monkeypatch.setattr(Pool, "__init__", init)
    assert main(["--root", root, "remember", "Eve drinks tea.", "--user", "eve"]) == 0
    rid = capsys.readouterr().out.split()[-1]
    for args in [
        *READS,
        ["get", rid, "--user", "eve"],
        ["remember", "Eve drinks coffee.", "--user", "eve"],
        ["forget", rid, "--user", "eve"],
    ]:
        pools.clear()
        assert main(["--root", root, *args]) == 0, args
        assert all(p.loops == 0 for p in pools), args  # was 1: the command's loop still held them (search may
        # answer without a pool: agent_memory.backends.postgres.oneshot)


# -- 4. provenance ----------------------------------------------------------------------------
def test_get_provenance_says_unsupported_on_postgres_cli(root: str) -> None:
    rid = am(root, "remember", "Eve drinks tea.", "--user", "eve", "-q").stdout.strip()
    human = am(root, "get", rid, "--user", "eve", "--provenance", ok="://" not in root)
    as_json = am(root, "--json", "get", rid, "--user", "eve", "--provenance", ok="://" not in root)
    if "://" not in root:
        assert "source: manual" in human.stdout
        assert json.loads(as_json.stdout)["provenance"]["source"] == "manual"
        return
    assert human.returncode == 1 and human.stdout == ""  # was: the record, no provenance, exit 0
    assert "provenance: not supported on the Postgres backend" in human.stderr
    assert as_json.returncode == 1
    error = json.loads(as_json.stdout)["error"]
    assert error["type"] in ("UnsupportedError", "NotSupportedError")  # the latter: its old name, a subclass
    assert error["message"].startswith("provenance: not supported on the Postgres backend")


@pytest.mark.parametrize("kind", KINDS)
def test_provenance_api(kind: str, tmp_path: Path) -> None:
    target = make_target(kind, tmp_path)

    async def run() -> None:
        backend = target.backend()
        try:
            rid = (await backend.remember(MemoryDraft("Eve drinks tea.", user_id="eve"))).id
            if kind == "files":
                assert (await backend.provenance(rid, Caller(user_id="eve")))["id"] == rid
            else:
                with pytest.raises(UnsupportedError, match="provenance: not supported on the Postgres backend"):
                    await backend.provenance(rid, Caller(user_id="eve"))
        finally:
            await backend.close()

    asyncio.run(run())


# -- 5. doctor's words ----------------------------------------------------------------------------
def test_doctor_counts_rows_on_postgres_and_files_on_files(root: str) -> None:
    for n in range(3):
        am(root, "remember", f"Fact number {n} about deploys.")
    out = am(root, "doctor").stdout
    if "://" in root:
        assert out.startswith("ok: 3 rows, 3 indexed") and "files" not in out  # was "ok: 3 files, 3 indexed"
    else:
        assert out.startswith("ok: 3 files, 3 indexed")
    assert am_json(root, "doctor")["records"] == 3


# -- 6. forget logs an `archived` event per version that went with the record ---------------------
def _forget_story(events: list[dict[str, Any]], cur: str, old: str) -> list[tuple[Any, ...]]:
    """The events as ``(event, which record, before is whose hash, detail)``, ids named by role (ids differ by backend)."""
    name = {cur: "cur", old: "old"}
    return [(e["event"], name.get(e["id"], e["id"]), e.get("before") is not None, e.get("detail", {}).get("reason")) for e in events]


def test_forget_logs_the_archived_versions_as_the_files_backend_does_cli(root: str) -> None:
    am(root, "remember", "Dana lives in Oslo.", "--user", "dana", "--key", "home")
    am(root, "remember", "Dana lives in Rome.", "--user", "dana", "--key", "home", "--on-existing", "replace")
    every = am_json(root, "list", "--user", "dana", "--include-superseded")["records"]
    [old] = [r["id"] for r in every if r["superseded_by"]]
    [cur] = [r["id"] for r in every if not r["superseded_by"]]
    am(root, "forget", cur, "--user", "dana")
    events = am_json(root, "events", "--user", "dana")["events"]
    assert _forget_story(events, cur, old)[-2:] == [
        ("forgotten", "cur", True, "forgotten"),
        ("archived", "old", True, f"forgotten with {cur}"),  # was missing on PostgreSQL
    ]
    assert events[-1]["detail"]["part_of"] == cur
    assert [e["event"] for e in am_json(root, "history", old, "--user", "dana")["events"]][-1] == "archived"
    assert am_json(root, "undo", "--user", "dana")["undone"]["event"] == "forgotten"  # one step: the version comes back with it
    assert sorted(contents(root, "--user", "dana", "--include-superseded")) == ["Dana lives in Oslo.", "Dana lives in Rome."]


@pytest.mark.parametrize("kind", KINDS)
def test_forget_logs_the_archived_versions_as_the_files_backend_does_api(kind: str, tmp_path: Path) -> None:
    target = make_target(kind, tmp_path)
    dana = Caller(user_id="dana")

    async def run() -> None:
        backend = target.backend()
        try:
            for text in ("Dana lives in Oslo.", "Dana lives in Rome.", "Dana lives in Pisa."):
                await backend.remember(MemoryDraft(text, user_id="dana", memory_key="home", on_existing="replace"))
            every = await backend.list(dana, include_superseded=True)
            [cur] = [r for r in every if not r.superseded_by]
            assert await backend.forget(cur.id, dana)
            tail = [e for e in await backend.events(dana) if e.event in ("forgotten", "archived")]
            by_id = {r.id: r for r in every}
            assert [(e.event, e.id, e.before) for e in tail] == [
                ("forgotten", cur.id, cur.content_hash),
                *(("archived", rid, by_id[rid].content_hash) for rid in _chain(by_id, cur.id)),  # newest first
            ]
            assert len(tail) == 3
            assert all(e.detail == {"reason": f"forgotten with {cur.id}", "part_of": cur.id} for e in tail[1:])
            assert (await backend.undo(dana)).event == "forgotten"
            assert len(await backend.list(dana, include_superseded=True)) == 3
        finally:
            await backend.close()

    asyncio.run(run())


def _chain(by_id: dict[str, Any], rid: str) -> list[str]:
    out, pointer = [], by_id[rid].supersedes
    while pointer:
        out.append(pointer)
        pointer = by_id[pointer].supersedes
    return out
