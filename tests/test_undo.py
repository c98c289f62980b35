"""Reversible changes: forget archives, history lists versions, restore brings them back, undo walks back."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _doubles import cli_json as jrun

from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.model.events import NotSupportedError
from agent_memory.provider import MemoryProvider


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    s = MemoryStore(tmp_path / "mem", durable=False)
    yield s
    s.close()


def test_forget_is_reversible(store: MemoryStore) -> None:
    a = store.remember("The staging database is called heron.", user_id="ada", tags=["ops"])
    assert store.forget(a.id, user_id="bob") is False  # not visible to bob: nothing moves
    assert store.forget(a.id, user_id="ada") is True
    with pytest.raises(NotFoundError):
        store.get(a.id, user_id="ada")
    assert store.search("heron", user_id="ada").hits == []
    assert (store.archive_dir / f"{a.id}.md").is_file()
    with pytest.raises(NotFoundError):
        store.restore(a.id, user_id="bob")  # an archived record obeys visibility too
    back = store.restore(a.id, user_id="ada")
    assert back.content == "The staging database is called heron." and back.tags == ("ops",)
    assert store.get(a.id, user_id="ada").content == back.content
    assert [h.id for h in store.search("heron", user_id="ada").hits] == [a.id]
    assert not (store.archive_dir / f"{a.id}.md").exists()
    with pytest.raises(InvalidInputError):
        store.restore(a.id, user_id="ada")  # live, with no earlier version


def test_history_lists_every_version_and_restore_picks_one(store: MemoryStore) -> None:
    a = store.remember("v1: deploys on Friday.", memory_key="deploy", user_id="ada")
    store.remember("v2: deploys on Monday.", memory_key="deploy", user_id="ada", on_existing="replace")
    store.remember("v3: deploys on Tuesday.", memory_key="deploy", user_id="ada", on_existing="replace")
    h = store.history(a.id, user_id="ada")
    assert h.state == "live" and [v.content for v in h.versions] == [
        "v1: deploys on Friday.",
        "v2: deploys on Monday.",
        "v3: deploys on Tuesday.",
    ]
    assert [e.event for e in h.events] == ["created", "replaced", "replaced"]
    doc = h.to_dict()
    assert [v["version"] for v in doc["versions"]] == [1, 2, 3] and doc["versions"][-1]["current"] is True
    with pytest.raises(NotFoundError):
        store.history(a.id, user_id="bob")
    store.restore(a.id, version=1, user_id="ada")
    assert store.get(a.id, user_id="ada").content == "v1: deploys on Friday."
    assert [v.content for v in store.history(a.id, user_id="ada").versions][-2:] == [
        "v3: deploys on Tuesday.",
        "v1: deploys on Friday.",
    ]  # restoring is a new version: nothing is lost
    store.restore(a.id, user_id="ada")  # default: the previous version
    assert store.get(a.id, user_id="ada").content == "v3: deploys on Tuesday."
    for bad in (0, 99):
        with pytest.raises(InvalidInputError):
            store.restore(a.id, version=bad, user_id="ada")
    store.forget(a.id, user_id="ada")
    assert store.history(a.id, user_id="ada").state == "archived"
    assert len(store.history(a.id, user_id="ada").versions) == 5  # v1, v2, v3, restored v1, restored v3


def test_undo_walks_back_the_callers_changes(store: MemoryStore) -> None:
    a = store.remember("Tea with milk.", memory_key="drink", user_id="ada")
    store.remember("No sugar.", memory_key="drink", user_id="ada")
    store.remember("Black coffee.", memory_key="drink", user_id="ada", on_existing="replace")
    b = store.remember("Bob likes cocoa.", user_id="bob")
    assert store.undo(user_id="ada").event == "replaced"
    assert store.get(a.id, user_id="ada").content == "Tea with milk.\nNo sugar."
    assert store.undo(user_id="ada").event == "appended"
    assert store.get(a.id, user_id="ada").content == "Tea with milk."
    assert store.undo(user_id="ada").event == "created"
    with pytest.raises(NotFoundError):
        store.get(a.id, user_id="ada")
    with pytest.raises(NotFoundError):
        store.undo(user_id="ada")  # nothing left of ada's
    assert store.get(b.id, user_id="bob").content == "Bob likes cocoa."  # bob's change was never ada's to undo
    store.forget(b.id, user_id="bob")
    assert store.undo(user_id="bob").event == "forgotten"
    assert store.get(b.id, user_id="bob").content == "Bob likes cocoa."


def test_undo_refuses_when_the_record_changed_since(store: MemoryStore) -> None:
    a = store.remember("Shared rule: tabs.", memory_key="style", scope="project", session_id="s1")
    store.remember("Shared rule: spaces.", memory_key="style", scope="project", session_id="s1", on_existing="replace")
    path = store.records_dir / f"{a.id}.md"
    path.write_text(path.read_text(encoding="utf-8").replace("spaces", "both"), encoding="utf-8")
    os.utime(path, ns=(5, 5))
    store.index.refresh(force=True)
    with pytest.raises(InvalidInputError, match="changed after"):
        store.undo(session_id="s1")
    assert store.get(a.id).content == "Shared rule: both."  # nothing was touched


def test_swept_records_come_back_without_their_expiry(store: MemoryStore) -> None:
    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).isoformat()
    a = store.remember("Temporary parking in bay 14.", expires=soon)
    rep = store.sweep(now=dt.datetime.now(dt.UTC) + dt.timedelta(days=2))
    assert rep.expired == [a.id]
    back = store.restore(a.id)
    assert back.expires is not None  # still in the future right now: kept
    assert store.get(a.id).content == "Temporary parking in bay 14."


def test_provider_lifecycle_and_unsupported_backends(tmp_path: Path) -> None:
    async def main() -> None:
        async with MemoryProvider(tmp_path / "mem") as p:
            r = await p.remember("Kestrels hover.", user_id="ada")
            assert await p.forget(r.id, user_id="ada") is True
            assert (await p.history(r.id, user_id="ada")).state == "archived"
            assert (await p.undo(user_id="ada")).event == "forgotten"
            assert (await p.get(r.id, user_id="ada")).content == "Kestrels hover."
            assert [e.event for e in await p.events(user_id="ada")] == ["created", "forgotten", "undone"]
            assert (await p.provenance(r.id, user_id="ada"))["created"]["actor"] == "tool"

        class Bare:  # a backend without lifecycle methods (e.g. PostgreSQL today)
            async def close(self) -> None:
                return None

        bare = MemoryProvider.__new__(MemoryProvider)
        bare.backend = Bare()  # type: ignore[assignment]
        for call in (bare.undo(), bare.history("x"), bare.purge(user_id="u"), bare.restore("x")):
            with pytest.raises(NotSupportedError):
                await call

    asyncio.run(main())


def test_cli_history_restore_undo(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    r = jrun(root, "remember", "Wrens sing loudly.", "--key", "wren", "--user", "ada")
    jrun(root, "remember", "Wrens are tiny.", "--key", "wren", "--on-existing", "replace", "--user", "ada")
    h = jrun(root, "history", r["id"], "--user", "ada")
    assert [v["content"] for v in h["versions"]] == ["Wrens sing loudly.", "Wrens are tiny."]
    assert jrun(root, "restore", r["id"], "--version", "1", "--user", "ada")["restored"] is True
    assert jrun(root, "get", r["id"], "--user", "ada")["content"] == "Wrens sing loudly."
    assert jrun(root, "undo", "--user", "ada")["undone"]["event"] == "restored"
    assert jrun(root, "get", r["id"], "--user", "ada")["content"] == "Wrens are tiny."
    assert jrun(root, "forget", r["id"], "--user", "ada")["forgotten"] is True
    assert jrun(root, "restore", r["id"], "--user", "ada")["restored"] is True
    err = jrun(root, "undo", "--user", "nobody", ok=False)
    assert err["error"]["type"] == "NotFoundError"
    err = jrun(root, "history", r["id"], "--user", "bob", ok=False)
    assert err["error"]["type"] == "NotFoundError"


def test_undo_and_provenance_follow_the_writer_not_the_owner(store: MemoryStore) -> None:
    a = store.remember("Shared: lint before merge.", memory_key="rules", scope="project", session_id="s1")
    store.remember("Shared: and run the tests.", memory_key="rules", scope="project", session_id="s2")
    prov = store.provenance(a.id)
    assert prov["created"]["session_id"] == "s1" and prov["updated"]["session_id"] == "s2"
    with pytest.raises(NotFoundError):
        store.undo(session_id="s3")  # s3 changed nothing
    assert store.undo(session_id="s2").event == "appended"  # s2 undoes its own append, not s1's create
    assert store.get(a.id).content == "Shared: lint before merge."
    assert store.undo(session_id="s1").event == "created"
    with pytest.raises(NotFoundError):
        store.get(a.id)


def test_a_user_undoes_their_changes_from_any_session(store: MemoryStore) -> None:
    a = store.remember("Ada drinks tea.", memory_key="drink", user_id="ada", session_id="s1", scope="user")
    store.remember("Ada drinks coffee.", memory_key="drink", user_id="ada", session_id="s2", scope="user", on_existing="replace")
    with pytest.raises(NotFoundError):
        store.undo(session_id="s2")  # an anonymous caller of session s2 is not ada
    assert store.undo(user_id="ada").event == "replaced"
    assert store.get(a.id, user_id="ada").content == "Ada drinks tea."


@pytest.mark.parametrize("args", [("history", "abc"), ("undo",), ("purge", "--user", "u"), ("events",)])
def test_database_roots_run_lifecycle_commands_and_say_when_the_server_is_unusable(tmp_path: Path, args: tuple[str, ...]) -> None:
    url = "postgresql://nobody@127.0.0.1:1/none"  # supported there; this server does not exist
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", url, "--json", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )
    assert out.returncode == 1
    err = json.loads(out.stdout)["error"]
    assert err["type"] == "BackendError" and "127.0.0.1:1" in err["message"]


def test_undo_of_forgetting_a_replaced_record_brings_back_the_current_version_with_its_history(store: MemoryStore) -> None:
    first = store.remember("Deploys on Friday.", memory_key="deploy", user_id="ada")
    current = store.remember("Deploys on Monday.", memory_key="deploy", user_id="ada", on_existing="replace")
    assert current.id == first.id
    assert store.forget(current.id, user_id="ada") is True
    undone = store.undo(user_id="ada")
    assert (undone.event, undone.id) == ("forgotten", current.id)  # the forget, not one of its parts
    assert store.get(current.id, user_id="ada").content == "Deploys on Monday."
    assert [h.id for h in store.search("deploys", user_id="ada").hits] == [current.id]
    assert [v["content"] for v in store.history(current.id, user_id="ada").to_dict()["versions"]] == [
        "Deploys on Friday.",
        "Deploys on Monday.",
    ]
    assert not list(store.archive_dir.glob("*.md"))  # nothing of it is left in the archive
    assert store.undo(user_id="ada").event == "replaced"  # the next undo walks back the replace
    assert store.get(current.id, user_id="ada").content == "Deploys on Friday."
