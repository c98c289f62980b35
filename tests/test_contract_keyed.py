"""The keyed write policy through the provider, identically on every backend.

A ``memory_key`` (or a record id used as one) names a record of the *writer's own partition*; capture
writes only extend or correct what capture wrote; an expired keyed record is gone for writes as for reads;
a replace applies exactly the fields it names and never loses the text it replaces.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest

from agent_memory.model.drafts import MemoryDraft


async def test_a_key_or_id_names_a_record_of_the_writers_own_partition(backend: Any) -> None:
    provider = backend.provider()
    shared = await provider.remember("The office opens at eight.", memory_key="hours")  # project scope
    mine = await provider.remember("ada keeps her notes here", scope="user", user_id="ada", memory_key="notes")
    for key in (shared.id, "hours"):
        for mode in ("append", "replace"):
            out = await provider.remember(f"ada {mode}s {key}", scope="user", user_id="ada", memory_key=key, on_existing=mode)
            assert out.id != shared.id and out.status == "created", (key, mode)  # a new record in ada's partition
            assert await provider.forget(out.id, user_id="ada")
    assert (await provider.get(shared.id)).content == "The office opens at eight."
    for who in ({"scope": "user", "user_id": "bob"}, {"scope": "session", "session_id": "s1", "user_id": "ada"}):
        out = await provider.remember("not yours", memory_key=mine.id, on_existing="replace", **who)
        assert out.id != mine.id and out.status == "created", who
    assert (await provider.get(mine.id, user_id="ada")).content == "ada keeps her notes here"
    same = await provider.remember("more notes", scope="user", user_id="ada", memory_key=mine.id)
    assert (same.id, same.status) == (mine.id, "appended")  # the owner may name it by id
    assert (await provider.get(mine.id, user_id="ada")).memory_key == "notes"


async def test_capture_never_rewrites_what_a_person_or_tool_wrote(backend: Any) -> None:
    provider = backend.provider()
    typed = await provider.remember("User's favourite editor is vim.", user_id="ada", scope="user", memory_key="user.favourite-editor")
    result = await provider.capture_turn("Actually, my favourite editor is Helix.", user_id="ada")
    assert not result.fallback and typed.id not in result.ids
    assert (await provider.get(typed.id, user_id="ada")).content == "User's favourite editor is vim."
    for text in ("Also my favourite editor is vim.", "Actually, my favourite editor is nano."):
        await provider.capture_turn(text, user_id="ada")
    assert (await provider.get(typed.id, user_id="ada")).content == "User's favourite editor is vim."


async def test_capture_keeps_its_correction_beside_a_typed_record(backend: Any) -> None:
    provider = backend.provider()
    typed = await provider.remember("User's favourite editor is vim.", user_id="ada", scope="user", memory_key="user.favourite-editor")
    result = await provider.capture_turn("Actually, my favourite editor is Helix.", user_id="ada")
    written = [(await provider.get(rid, user_id="ada")) for rid in result.ids]
    assert [(r.content, r.source) for r in written] == [("User's favourite editor is Helix.", "turn_capture")]
    assert typed.id not in result.ids


async def test_an_expired_keyed_record_does_not_swallow_later_writes(backend: Any) -> None:
    provider = backend.provider()
    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)).isoformat()
    old = await provider.remember("parking: level 2", memory_key="parking", expires=soon)
    await asyncio.sleep(1.2)
    new = await provider.remember("parking: level 3", memory_key="parking")
    assert new.status == "created" and new.id != old.id
    assert [r.content for r in await provider.list(limit=None)] == ["parking: level 3"]
    again = await provider.remember("parking: row B", memory_key="parking")
    assert (again.id, again.status) == (new.id, "appended")
    assert (await provider.get(new.id)).content == "parking: level 3\nparking: row B"
    await provider.sweep()
    assert [r.content for r in await provider.list(limit=None)] == ["parking: level 3\nparking: row B"]


async def test_replace_applies_exactly_the_fields_it_names(backend: Any) -> None:
    provider = backend.provider()
    first = await provider.remember(
        "Plan A: ship in May.", memory_key="plan", title="Release plan", tags=["release"], kind="decision", importance=0.4
    )
    out = await provider.remember("Plan B: ship in June.", memory_key="plan", on_existing="replace", tags=["q2"], importance=0.9)
    assert (out.id, out.status) == (first.id, "replaced")
    rec = await provider.get(first.id)
    assert (rec.content, rec.title, rec.kind, rec.tags, rec.importance) == (
        "Plan B: ship in June.",
        "Release plan",
        "decision",
        ("q2",),
        0.9,
    )
    retagged = await provider.remember("Plan B: ship in June.", memory_key="plan", on_existing="replace", tags=["june"])
    assert retagged.status == "replaced" and (await provider.get(first.id)).tags == ("june",)  # same text, new tags
    unchanged = await provider.remember("Plan B: ship in June.", memory_key="plan", on_existing="replace")
    assert unchanged.status == "duplicate"


async def test_replace_keeps_a_pointer_to_the_text_it_replaced(backend: Any) -> None:
    provider = backend.provider()
    first = await provider.remember("Ada's team is Falcon.", scope="user", user_id="ada", memory_key="team")
    await provider.remember("Ada's team is Heron.", scope="user", user_id="ada", memory_key="team", on_existing="replace")
    rec = await provider.get(first.id, user_id="ada")
    assert rec.content == "Ada's team is Heron." and rec.supersedes  # a replace is a supersession
    old = await provider.get(rec.supersedes, user_id="ada")
    assert old.content == "Ada's team is Falcon." and old.superseded_by == first.id
    draft = MemoryDraft("forged", memory_key="other", metadata={"previous_version": "somewhere"})
    forged = await provider.backend.remember(draft)
    assert "previous_version" not in (await provider.get(forged.id)).metadata  # the store's to set, never a caller's


@pytest.mark.parametrize("title", [None, "Custom title"])
async def test_a_title_made_from_the_text_follows_the_replaced_text(backend: Any, title: str | None) -> None:
    provider = backend.provider()
    first = await provider.remember("Wifi password hint: the blue router", memory_key="wifi", title=title)
    out = await provider.remember("Wifi moved to the guest network", memory_key="wifi", on_existing="replace")
    rec = await provider.get(out.id)
    assert rec.content == "Wifi moved to the guest network"
    if title is None:  # a derived title shows the new text, and no id or title keeps the replaced words
        assert "blue" not in rec.title and "blue" not in rec.id
    else:
        assert rec.title == "Custom title" and out.id == first.id


async def test_an_append_is_a_duplicate_only_when_held_as_whole_lines(backend: Any) -> None:
    provider = backend.provider()
    first = await provider.remember("step 10: ship", memory_key="steps")
    statuses = [(await provider.remember(t, memory_key="steps")).status for t in ("step 1", "ship", "step 10: ship", "step 1")]
    assert statuses == ["appended", "appended", "duplicate", "duplicate"]
    assert (await provider.get(first.id)).content == "step 10: ship\nstep 1\nship"
