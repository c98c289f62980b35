"""The events and history of a superseded record tell its whole story, on both backends: the supersession that
replaced it (logged under the record that replaced it) and the undo of that supersession, to its own callers only."""

from __future__ import annotations

from typing import Any

from agent_memory.model.events import Event


def told(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.event, e.id) for e in events]


async def test_events_and_history_of_a_superseded_record_show_the_supersession_and_its_undo(backend: Any) -> None:
    provider = backend.provider()
    other = await provider.remember("Ada's cat is Tom.", user_id="ada", scope="user")
    old = await provider.remember("Ada lives in Paris.", user_id="ada", scope="user")
    await provider.remember("Ada's cat is Tim.", user_id="ada", scope="user", supersedes=other.id)  # not old's story
    new = await provider.remember("Ada lives in Berlin.", user_id="ada", scope="user", supersedes=old.id)
    story = [("created", old.id), ("superseded", new.id)]
    assert told(await provider.events(user_id="ada", record_id=old.id)) == story
    assert told((await provider.history(old.id, user_id="ada")).events) == story

    undone = await provider.undo(user_id="ada")
    assert (undone.event, undone.id) == ("superseded", new.id)
    story.append(("undone", new.id))
    assert told(await provider.events(user_id="ada", record_id=old.id)) == story
    after = await provider.history(old.id, user_id="ada")
    assert after.state == "live" and after.superseded_by is None and told(after.events) == story
    assert told(await provider.events(user_id="ada", record_id=old.id, limit=1)) == [("undone", new.id)]

    again = await provider.remember("Ada lives in Rome.", user_id="ada", scope="user", supersedes=old.id)
    story.append(("superseded", again.id))
    assert told((await provider.history(old.id, user_id="ada")).events) == story

    # another user sees none of it: neither the record's events nor the ids of the records that replaced it
    assert await provider.events(user_id="bob", record_id=old.id) == []
    shown = repr([e.to_dict() for e in await provider.events(user_id="bob")])
    assert new.id not in shown and again.id not in shown and old.id not in shown
