"""The write policy keeps its word: partitions, capture limits, expiry, replace fields, history, ids, default scope."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_memory.backends.files.store import MemoryDraft, MemoryStore, read_jsonl
from agent_memory.errors import InvalidInputError, NotFoundError, StorageError
from agent_memory.model.records import Scope


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    s = MemoryStore(tmp_path / "mem", durable=False)
    yield s
    s.close()


def files(store: MemoryStore) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in store.records_dir.glob("*.md")}


def expire_by_hand(store: MemoryStore, rid: str) -> None:
    path = store.records_dir / f"{rid}.md"
    text = re.sub(r"(?m)^expires: .*$", "expires: '2020-01-01T00:00:00.000000Z'", path.read_text(encoding="utf-8"))
    path.with_suffix(".edit").write_text(text, encoding="utf-8")
    os.replace(path.with_suffix(".edit"), path)


# -- 11.3: a keyed write stays in its partition ---------------------------------------------
@pytest.mark.parametrize("mode", ["append", "replace"])
def test_a_private_keyed_write_never_touches_a_shared_record(store, mode):
    shared = store.remember("The office wifi is on floor 2.", memory_key="office.wifi")
    before = files(store)
    by_id = store.remember("my own note", scope="user", user_id="ada", memory_key=shared.id, on_existing=mode)
    by_key = store.remember("my other note", scope="session", session_id="s1", memory_key="office.wifi", on_existing=mode)
    assert by_id.status == by_key.status == "created"
    assert shared.id not in (by_id.id, by_key.id)
    assert {k: v for k, v in files(store).items() if k in before} == before  # the shared file is byte-identical
    assert store.get(by_id.id, user_id="ada").scope is Scope.USER
    with pytest.raises(NotFoundError):
        store.get(by_id.id, user_id="bob")


def test_ids_from_another_users_partition_never_match(store):
    bob = store.remember("bob's diet: vegan", scope="user", user_id="bob", memory_key="diet")
    ada = store.remember("ada's diet: none", scope="user", user_id="ada", memory_key=bob.id, on_existing="replace")
    assert ada.status == "created" and store.get(bob.id, user_id="bob").content == "bob's diet: vegan"
    # the same user in another session: a session write with that user's id never reaches the user record
    s = store.remember("session scratch", scope="session", session_id="s1", user_id="bob", memory_key=bob.id)
    assert s.status == "created" and store.get(bob.id, user_id="bob").content == "bob's diet: vegan"


def test_capture_may_only_change_what_capture_wrote_in_that_partition(store):
    tool = store.remember("Allergic to peanuts. Favourite colour orange.", scope="user", user_id="ada", memory_key="profile")
    before = files(store)
    cap = store.remember_many(
        [MemoryDraft("Favourite colour is green now.", scope="user", user_id="ada", memory_key="profile", on_existing="replace")],
        source="turn_capture",
    )[0]
    assert cap.status == "created" and cap.id != tool.id
    assert files(store)[f"{tool.id}.md"] == before[f"{tool.id}.md"]
    again = store.remember_many(
        [MemoryDraft("Likes tea.", scope="user", user_id="ada", memory_key="profile")], source="compaction_capture"
    )[0]
    assert (again.status, again.id) == ("appended", cap.id)  # capture extends what capture wrote
    skip = store.remember_many(
        [MemoryDraft("x", scope="user", user_id="ada", memory_key=tool.id, on_existing="skip")], source="turn_capture"
    )[0]
    assert (skip.status, skip.id) == ("skipped", tool.id)  # skipping destroys nothing, so it may see any record
    assert store.get(tool.id, user_id="ada").content == "Allergic to peanuts. Favourite colour orange."


# -- 11.8: expiry, write side ------------------------------------------------------------------
def test_expires_is_one_utc_instant_and_a_past_one_is_refused(store):
    r = store.remember("offer ends", expires="2099-12-31T23:59:59+02:00")
    assert store.get(r.id).expires == "2099-12-31T21:59:59.000000Z"
    assert (
        "expires: '2099-12-31T21:59:59.000000Z'" in Path(r.path).read_text()
        or 'expires: "2099-12-31T21:59:59.000000Z"' in Path(r.path).read_text()
    )
    assert store.get(store.remember("date only", expires="2099-01-01").id).expires == "2099-01-01T00:00:00.000000Z"
    past = (dt.datetime.now(dt.UTC) - dt.timedelta(seconds=5)).isoformat()
    for bad in (past, "2020-01-01", "0001-01-01T00:00:00+05:00", "tomorrow", "9999-12-31T23:59:59-23:59"):
        with pytest.raises(InvalidInputError, match="expired|ISO"):
            store.remember(f"refused {bad}", expires=bad)
    with pytest.raises(InvalidInputError, match="already expired"):
        store.remember("too late", expires="2020-01-01")
    assert len(files(store)) == 2


def test_an_append_to_an_expired_keyed_record_creates_a_visible_one(store):
    old = store.remember("promo code SPRING", memory_key="promo", expires="2099-01-01")
    expire_by_hand(store, old.id)
    new = store.remember("promo code SUMMER", memory_key="promo")
    assert new.status == "created" and new.id != old.id
    assert [h.id for h in store.search("promo code").hits] == [new.id]


def test_get_says_expired_only_to_a_caller_who_could_see_the_record(store):
    mine = store.remember("ada's temporary note", scope="user", user_id="ada", expires="2099-01-01")
    expire_by_hand(store, mine.id)
    with pytest.raises(NotFoundError, match="expired"):
        store.get(mine.id, user_id="ada")
    with pytest.raises(NotFoundError) as other:
        store.get(mine.id, user_id="bob")
    assert "expired" not in str(other.value)


# -- 12: replace and append apply every field passed; a replace never loses text --------------
def test_replace_applies_every_field_and_keeps_the_title_when_none_is_given(store):
    a = store.remember("Colour: orange", title="Favourite colour", kind="preference", tags=["colour"], memory_key="colour", importance=0.2)
    store.remember("Colour: green", memory_key="colour", on_existing="replace")
    rec = store.get(a.id)
    assert (rec.content, rec.title, rec.kind, rec.tags, rec.importance) == (
        "Colour: green",
        "Favourite colour",
        "preference",
        ("colour",),
        0.2,
    )
    store.remember(
        "Colour: blue",
        memory_key="colour",
        on_existing="replace",
        title="Colour now",
        kind="fact",
        tags=["current"],
        importance=0.9,
        expires="2099-06-01",
    )
    rec = store.get(a.id)
    assert (rec.content, rec.title, rec.kind, rec.tags, rec.importance, rec.expires) == (
        "Colour: blue",
        "Colour now",
        "fact",
        ("current",),
        0.9,
        "2099-06-01T00:00:00.000000Z",
    )


def test_an_append_with_a_title_applies_it(store):
    a = store.remember("line one", title="Old title", memory_key="log")
    b = store.remember("line two", title="New title", memory_key="log", importance=0.5)
    rec = store.get(a.id)
    assert (b.status, rec.content, rec.title, rec.importance) == ("appended", "line one\nline two", "New title", 0.5)


def test_a_replace_keeps_the_previous_version_in_history_and_forget_deletes_it(store):
    a = store.remember("Allergic to peanuts; favourite colour orange.", memory_key="profile", scope="user", user_id="ada")
    store.remember("Favourite colour green.", memory_key="profile", scope="user", user_id="ada", on_existing="replace")
    store.remember("Favourite colour blue.", memory_key="profile", scope="user", user_id="ada", on_existing="replace")
    rec = store.get(a.id, user_id="ada")  # the replaced text is kept as a superseded record (docs/time.md)
    assert rec.supersedes and store.get(rec.supersedes, user_id="ada").superseded_by == a.id
    versions = store.versions(a.id, user_id="ada")
    assert [v.content for v in versions] == ["Favourite colour green.", "Allergic to peanuts; favourite colour orange."]
    with pytest.raises(NotFoundError):
        store.versions(a.id, user_id="bob")  # history is read through the same visibility
    assert store.search("peanuts", user_id="ada").hits == []  # history is not searched
    restored = store.remember(versions[-1].content, memory_key="profile", scope="user", user_id="ada", on_existing="replace")
    assert store.get(restored.id, user_id="ada").content == "Allergic to peanuts; favourite colour orange."
    assert store.forget(a.id, user_id="ada") is True
    assert list(store.records_dir.glob("*.md")) == []  # forget archives the record and the versions it superseded
    assert len(list(store.archive_dir.glob("*.md"))) == 4  # three replaces: four states
    store.restore(a.id, user_id="ada")  # ... and restore brings the whole chain back
    assert len(store.versions(a.id, user_id="ada")) == 3
    assert store.forget(a.id, user_id="ada", purge=True) is True
    assert list(store.records_dir.glob("*.md")) == [] and list(store.archive_dir.glob("*.md")) == []  # a purge deletes


# -- 11.13: ids never reveal replaced text ------------------------------------------------------
def test_keyed_ids_carry_the_key_and_replaced_ids_never_keep_old_words(store):
    keyed = store.remember("PIN of the garage is 1234", memory_key="garage.code")
    assert "garage-code" in keyed.id and "pin" not in keyed.id
    again = store.remember("The garage code changed", memory_key="garage.code", on_existing="replace")
    assert again.id == keyed.id  # a stable handle: citations and memory_key=<id> keep working
    plain = store.remember("Secret launch codename is walrus", title="Launch codename walrus")
    assert "walrus" in plain.id
    kept = store.remember("Launch codename is still walrus", memory_key=plain.id, on_existing="replace")
    assert kept.id == plain.id  # no title given: the explicit title stays, and so does the id made from it
    moved = store.remember("Launch is postponed", title="Launch date", memory_key=plain.id, on_existing="replace")
    assert moved.status == "replaced" and "walrus" not in moved.id
    assert store.get(moved.id).content == "Launch is postponed"
    assert store.get(plain.id).superseded_by == moved.id  # the old record keeps its own id, superseded
    assert [v.content for v in store.versions(moved.id)] == ["Launch codename is still walrus", "Secret launch codename is walrus"]
    derived = store.remember("PIN of the door is 4821")  # no title: the title (and id) come from the text
    changed = store.remember("The door has a key now", memory_key=derived.id, on_existing="replace")
    assert "4821" not in changed.id and store.get(changed.id).title == "The door has a key now"


# -- 12: the default scope follows the caller -------------------------------------------------
def test_the_default_scope_is_the_callers_own_partition(store, tmp_path):
    cases = {("s1", None): Scope.SESSION, (None, "ada"): Scope.USER, ("s1", "ada"): Scope.USER, (None, None): Scope.PROJECT}
    for (sid, uid), scope in cases.items():
        r = store.remember(f"default scope for {sid} {uid}", session_id=sid, user_id=uid)
        assert store.get(r.id, session_id=sid, user_id=uid).scope is scope
    only_ada = store.remember("ada likes tea", user_id="ada")
    with pytest.raises(NotFoundError):
        store.get(only_ada.id, user_id="bob")
    assert "ada likes tea" not in (store.root / "MEMORY.md").read_text()
    shared = store.remember("shared on purpose", user_id="ada", scope="project")
    assert store.get(shared.id, user_id="bob").scope is Scope.PROJECT
    explicit = MemoryStore(tmp_path / "explicit", default_scope="project", durable=False)
    assert explicit.get(explicit.remember("app chose project", user_id="ada").id).scope is Scope.PROJECT


# -- 11.13: absurd filters and nesting give typed errors -----------------------------------------
@pytest.mark.parametrize("value", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-23:59", "9" * 5000, "2026-01-01" * 50])
def test_absurd_date_filters_are_typed_errors(store, value):
    store.remember("dated")
    with pytest.raises(InvalidInputError):
        store.list(created_after=value)
    with pytest.raises(InvalidInputError):
        store.search("dated", updated_before=value)
    with pytest.raises(InvalidInputError):
        store.count(created_before=value)


def test_deeply_nested_input_is_a_typed_error(store, tmp_path):
    deep: dict = {}
    node = deep
    for _ in range(5000):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(InvalidInputError, match="nested"):
        store.remember("deep metadata", metadata=deep)
    jsonl = tmp_path / "deep.jsonl"
    jsonl.write_text('{"content": "fine"}\n' + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    out = list(read_jsonl(jsonl))
    assert isinstance(out[0][1], MemoryDraft) and out[1] == (2, "line 2: JSON nested too deeply")
    assert files(store) == {}
    assert json.dumps([r.to_dict() for r in store.list()]) == "[]"


def test_store_is_a_context_manager(tmp_path):
    with MemoryStore(tmp_path / "cm", durable=False) as s:
        rid = s.remember("inside the with block").id
        conn = s.index.conn
    with pytest.raises(Exception, match="closed"):
        conn.execute("SELECT 1")
    assert MemoryStore(tmp_path / "cm").get(rid).content == "inside the with block"


def test_new_roots_are_private_directories(tmp_path):
    s = MemoryStore(tmp_path / "fresh" / "mem", durable=False)
    assert (s.root.stat().st_mode & 0o777) == 0o700 and (s.records_dir.stat().st_mode & 0o777) == 0o700
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "linked")
    (tmp_path / "linked-root").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "linked-root" / "records")
    linked = MemoryStore(tmp_path / "linked-root")  # opens, so that doctor can name the problem …
    with pytest.raises(StorageError, match="symlink"):  # … but nothing is read through the link
        linked.search("anything")
    assert any("symlink" in why for why in linked.doctor().problems.values())


def test_a_date_given_as_an_end_includes_that_whole_day(tmp_path):
    s = MemoryStore(tmp_path / "m", durable=False)
    rec = s.remember("today's note about otters")
    day = rec.id[:10]  # ids start with the creation date (UTC)
    assert [r.id for r in s.list(created_before=day)] == [rec.id]
    assert [h.id for h in s.search("otters", created_after=day, created_before=day).hits] == [rec.id]
    assert s.count(updated_before=day) == 1
    assert s.list(created_before=f"{day}T00:00:00Z") == []  # a datetime end stays exclusive
    with pytest.raises(InvalidInputError):
        s.list(created_before="9999-12-31")
