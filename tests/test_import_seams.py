"""Import/export seams an attacker and a demanding user found (issue 27), each through the CLI (a real subprocess)
where it was found there, on both backends where it applies:

1. a foreign import's ids include the owner: two users importing the same mem0 file never collide, and the second
   never learns (a `conflict` naming a record id) that the first holds that memory;
2. a files import logs one `imported` event per record, listed by `events` and undone by `undo`;
3. a purged user is not resurrected by re-importing an old full export (`purged`), unless `--allow-purged`;
4. a full export carries an archived record's stored `content_hash`: re-importing it is `exists`, and an import into
   an empty root writes the very same archive file;
5. the consolidation workaround for PostgreSQL (export --full, consolidate a files copy, import) archives there;
6. a session's distill cursor goes files → PostgreSQL with a full export.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _matrix import cli_env, fresh_database

from agent_memory.backends import open_backend
from agent_memory.backends.base import Caller
from agent_memory.episodes import build_episode, episode_store
from agent_memory.model.drafts import MemoryDraft
from agent_memory.sessions.store import SessionStore

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def run(root: str, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", root, *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=cli_env(),
    )
    if ok:
        assert proc.returncode == 0, proc.stderr
    return proc


def cli(root: str, *args: str) -> Any:
    out = run(root, *args, "--json").stdout
    return json.loads(out) if out.strip() else None


def pg_url() -> str:
    from _pg import require_psycopg, server

    require_psycopg()
    return fresh_database(server().url)


def target(kind: str, tmp_path: Path, name: str) -> str:
    return str(tmp_path / name) if kind == "files" else pg_url()


def on(root: str, fn: Any) -> Any:
    """Open ``root`` (a path or a URL), run ``await fn(b)`` and close it, in one event loop."""

    async def main() -> Any:
        b = open_backend(root, durable=False)
        try:
            return await fn(b)
        finally:
            res = getattr(b, "close", lambda: None)()
            if asyncio.iscoroutine(res):
                await res

    return asyncio.run(main())


# -- 1. foreign ids include the owner -----------------------------------------------------------------------------------
def test_two_users_importing_the_same_mem0_file_never_collide_nor_learn_of_each_other(tmp_path: Path) -> None:
    m1 = tmp_path / "m1.json"
    m1.write_text(json.dumps({"results": [{"id": "m-1", "memory": "Alice has diagnosis X", "created_at": "2024-07-20T10:00:00Z"}]}))
    root, empty = str(tmp_path / "root"), str(tmp_path / "empty")
    alice = cli(root, "import", str(m1), "--format", "mem0", "--as-user", "alice")
    bob = cli(root, "import", str(m1), "--format", "mem0", "--as-user", "bob")
    assert alice["written"] == 1 and bob["written"] == 1 and bob["skipped"] == 0, bob
    assert alice["ids"][0] not in json.dumps(bob)  # nothing of alice's record in bob's report
    alone = cli(empty, "import", str(m1), "--format", "mem0", "--as-user", "bob")
    assert {**alone, "path": None} == {**bob, "path": None}  # bob's outcome does not depend on alice's record
    assert [r["content"] for r in cli(root, "list", "--user", "bob")["records"]] == ["Alice has diagnosis X"]
    again = cli(root, "import", str(m1), "--format", "mem0", "--as-user", "bob")
    assert again["written"] == 0 and again["skipped_by_reason"] == {"exists": 1}  # a re-run still writes nothing


def test_an_import_as_a_caller_never_reveals_that_another_owner_holds_an_id(tmp_path: Path) -> None:
    """Our own format with an id alice's record holds, imported as bob: written under an id of bob's, with the
    report an empty root gives; the operator's import of the same line still meets the id (`conflict`)."""
    root = str(tmp_path / "root")
    rid = cli(root, "remember", "Alice's plan", "--user", "alice")["id"]
    export = tmp_path / "a.jsonl"
    cli(root, "export", "--out", str(export))
    line = json.loads(export.read_text().splitlines()[1])
    steal = tmp_path / "steal.jsonl"
    steal.write_text(json.dumps({"format": "agent-memory", "version": 1}) + "\n" + json.dumps({**line, "content": "Bob's"}) + "\n")
    bob = cli(root, "import", str(steal), "--as-user", "bob")
    assert bob["written"] == 1 and bob["skipped"] == 0 and bob["ids"] != [rid]
    alone = cli(str(tmp_path / "empty"), "import", str(steal), "--as-user", "bob")
    assert {**alone, "path": None} == {**bob, "path": None}
    assert cli(root, "get", rid, "--user", "alice")["content"] == "Alice's plan"
    assert cli(root, "import", str(steal))["skipped_by_reason"] == {"conflict": 1}  # the operator sees every record


# -- 2. a files import logs its events ----------------------------------------------------------------------------------
def test_a_files_import_logs_one_imported_event_per_record_and_undo_takes_it_back(tmp_path: Path) -> None:
    src, root = str(tmp_path / "src"), str(tmp_path / "root")
    cli(src, "remember", "Support ticket 1 is about billing", "--user", "sam")
    cli(src, "remember", "Support ticket 2 is about login", "--user", "sam")
    sup = tmp_path / "sup.jsonl"
    cli(src, "export", "--out", str(sup))
    report = cli(root, "import", str(sup), "--as-user", "alice")
    assert report["written"] == 2
    events = cli(root, "events", "--user", "alice")
    kinds = [(e["event"], e["id"]) for e in (events["events"] if isinstance(events, dict) else events)]
    assert sorted(kinds) == sorted(("imported", i) for i in report["ids"])
    undone = cli(root, "undo", "--user", "alice")
    assert undone is not None
    left = [r["id"] for r in cli(root, "list", "--user", "alice")["records"]]
    assert len(left) == 1 and left[0] in report["ids"]
    assert cli(root, "import", str(sup), "--as-user", "alice")["written"] == 0  # undone = archived: its id is taken
    # the operator's restore of a full export brings the export's own event lines back, and adds none
    full = tmp_path / "full.jsonl"
    cli(root, "export", "--full", "--out", str(full))
    copy = str(tmp_path / "copy")
    cli(copy, "import", str(full))
    mine = cli(copy, "events", "--user", "alice")
    theirs = cli(root, "events", "--user", "alice")
    assert mine == theirs


# -- 3. purge, then re-import an old export -----------------------------------------------------------------------------
def _populate(root: str) -> dict[str, str]:
    async def fill(b: Any) -> dict[str, str]:
        ids = {}
        for u in ("alice", "bob"):
            ids[u] = (await b.remember(MemoryDraft(content=f"{u} drinks tea", user_id=u, scope="user"))).id
            gone = await b.remember(MemoryDraft(content=f"{u} once lived in Oslo", user_id=u, scope="user"))
            assert await b.forget(gone.id, Caller(user_id=u))
            SessionStore(Path(root)).append(
                f"s-{u}", [{"role": "user", "text": f"hello from {u}", "at": "2026-01-02T10:00:00Z"}], user_id=u
            )
            episode_store(b).write(build_episode(f"help {u} with tea", output="done", tool_calls=["search"], user_id=u))
        return ids

    return on(root, fill)  # type: ignore[no-any-return]


@pytest.mark.parametrize("kind", ["files", "postgres"])
def test_a_purged_user_is_not_resurrected_by_an_old_export(kind: str, tmp_path: Path) -> None:
    src = str(tmp_path / "src")
    _populate(src)
    old = tmp_path / "full.jsonl"
    cli(src, "export", "--full", "--out", str(old))
    root = target(kind, tmp_path, "root")
    first = cli(root, "import", str(old))
    assert first["written"] > 0
    if kind == "postgres":  # ids are PostgreSQL's own there: the export to re-import is that backend's
        cli(root, "export", "--full", "--out", str(old))
    run(root, "purge", "--user", "alice")
    assert cli(root, "list", "--user", "alice")["records"] == []
    proc = run(root, "import", str(old))  # the human output names and counts them
    again = cli(root, "import", str(old))
    purged = [s for s in again["skips"] if s["reason"] == "purged"]
    assert again["written"] == 0, again
    lines = old.read_text().splitlines()
    alices = {(json.loads(x).get("record") or json.loads(x)).get("id") for x in lines if '"user_id":"alice"' in x}
    assert purged and {s["id"] for s in purged if s["id"]} <= alices
    assert "purged" in proc.stdout and "--allow-purged" in proc.stderr
    for s in purged:
        if s["id"]:
            assert s["id"] in proc.stdout
    assert cli(root, "list", "--user", "alice")["records"] == []
    assert len(cli(root, "list", "--user", "bob")["records"]) == 1  # bob's are there, untouched (exists)
    wheres = {s["where"] for s in purged}
    for n, line in enumerate(lines, 1):
        data = json.loads(line)
        rec = data.get("record") or data.get("episode") or data
        if rec.get("user_id") == "alice" and "format" not in data and data.get("section") != "event":
            assert f"line {n}" in wheres, (n, line[:120])  # every record, archived copy, session log, episode of alice
    back = cli(root, "import", str(old), "--allow-purged")  # deliberately
    assert {s["reason"] for s in back["skips"]} <= {"exists", "unsupported", "duplicate"}
    assert [r["content"] for r in cli(root, "list", "--user", "alice")["records"]] == ["alice drinks tea"]


# -- 4. a full export keeps an archived record's hash ---------------------------------------------------------------
def test_an_archived_record_round_trips_byte_for_byte(tmp_path: Path) -> None:
    root = str(tmp_path / "root")
    rid = cli(root, "remember", "The VPN host is vpn-7", "--user", "alice")["id"]
    cli(root, "forget", rid, "--user", "alice")
    q = tmp_path / "q.jsonl"
    cli(root, "export", "--full", "--out", str(q))
    line = next(json.loads(x) for x in q.read_text().splitlines() if '"section":"archive"' in x)
    original = (Path(root) / "archive" / f"{rid}.md").read_bytes()
    assert f'content_hash: "{line["record"]["content_hash"]}"'.encode() in original  # the stored hash
    again = cli(root, "import", str(q))
    assert again["skipped_by_reason"].get("conflict") is None and again["written"] == 0, again
    assert {s["reason"] for s in again["skips"]} == {"exists"}
    empty = str(tmp_path / "empty")
    assert cli(empty, "import", str(q))["written"] >= 1
    assert (Path(empty) / "archive" / f"{rid}.md").read_bytes() == original
    q2 = tmp_path / "q2.jsonl"
    cli(empty, "export", "--full", "--out", str(q2))
    assert q2.read_bytes() == q.read_bytes()
    cli(empty, "restore", rid, "--user", "alice")
    assert cli(empty, "get", rid, "--user", "alice")["content"] == "The VPN host is vpn-7"


# -- 5. the consolidation workaround for PostgreSQL -----------------------------------------------------------------
def test_consolidating_a_files_copy_archives_the_duplicate_in_postgres(tmp_path: Path) -> None:
    url = pg_url()
    keep = cli(url, "remember", "The staging cluster runs in eu-west-1 since March.", "--scope", "project")["id"]
    dup = cli(url, "remember", "the staging cluster runs in eu-west-1 since march", "--scope", "project")["id"]
    refused = run(url, "consolidate", ok=False)  # files only: the message says what to do, and that works
    assert refused.returncode != 0 and "export --full" in refused.stderr + refused.stdout
    pg_out, copy, back = tmp_path / "pg.jsonl", str(tmp_path / "copy"), tmp_path / "consolidated.jsonl"
    cli(url, "export", "--full", "--out", str(pg_out))
    cli(copy, "import", str(pg_out))
    rep = cli(copy, "consolidate", "--max-share", "1")
    assert dup in json.dumps(rep)
    cli(copy, "export", "--full", "--out", str(back))
    done = cli(url, "import", str(back))
    assert f"archived:{dup}" in done["ids"], done
    assert [r["id"] for r in cli(url, "list")["records"]] == [keep]
    assert cli(url, "import", str(back))["written"] == 0  # a re-run changes nothing


# -- 6. the distill cursor into PostgreSQL --------------------------------------------------------------------------
def test_the_distill_cursor_goes_files_to_postgres(tmp_path: Path) -> None:
    root, url = str(tmp_path / "root"), pg_url()
    run(root, "init", root)
    SessionStore(Path(root)).append(
        "s-1",
        [
            {"role": "user", "text": "I moved to Lisbon last year.", "at": "2026-01-02T10:00:00Z"},
            {"role": "assistant", "text": "Noted.", "at": "2026-01-02T10:00:05Z"},
        ],
        user_id="alice",
    )
    first = cli(root, "sessions", "distill", "--user", "alice")
    assert first is not None
    full = tmp_path / "full.jsonl"
    cli(root, "export", "--full", "--out", str(full))
    assert '"event":"distilled"' in full.read_text()
    report = cli(url, "import", str(full))
    assert "cursor:s-1" in report["ids"], report
    second = cli(url, "sessions", "distill", "--user", "alice")
    assert not second.get("sessions"), second  # nothing re-read
    assert "cursor:s-1" not in cli(url, "import", str(full))["ids"]
