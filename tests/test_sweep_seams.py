"""Sweep where it meets namespaces and the event log, on files and PostgreSQL.

A sweep archives exact duplicates within one partition; a namespace is part of that partition (two agents that
happen to write the same sentence each keep theirs), and every record it archives is an event that undo reverses.
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


async def test_sweep_never_dedupes_across_namespaces(backend: Any) -> None:
    a = backend.provider(namespace="acme/a", isolation="full")
    b = backend.provider(namespace="acme/b", isolation="full")
    await a.remember("The deploy window is Friday.", scope="project")
    await b.remember("The deploy window is Friday.", scope="project")
    report = await backend.provider().sweep()
    assert report.duplicates == []
    assert len(await a.list()) == 1 and len(await b.list()) == 1


async def test_a_swept_record_is_evented_and_undo_brings_it_back(backend: Any) -> None:
    import asyncio
    import datetime as dt

    root = backend.provider()
    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)).isoformat()
    made = await root.remember("The office wifi rotates monthly.", scope="project", expires=soon)
    await asyncio.sleep(1.2)
    report = await root.sweep()
    assert report.expired == [made.id]
    assert [e.event for e in await root.events(record_id=made.id)] == ["created", "swept"]
    undone = await root.undo()
    assert undone.event == "swept" and undone.id == made.id


async def test_the_owner_undoes_the_sweep_of_their_record_and_it_is_visible_again(backend: Any) -> None:
    import asyncio
    import datetime as dt

    alice = backend.provider(namespace="acme/support")
    me = {"user_id": "alice"}
    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)).isoformat()
    made = await alice.remember("Alice's locker is 12.", scope="user", expires=soon, **me)
    other = await alice.remember("Alice's desk is 4.", scope="user", expires=soon, **me)
    await asyncio.sleep(1.2)
    assert sorted((await backend.provider().sweep()).expired) == sorted([made.id, other.id])
    undone = await alice.undo(**me)
    assert undone.event == "swept" and undone.id in {made.id, other.id}
    back = await alice.get(undone.id, **me)  # visible again: a past expiry is dropped on the way back
    assert back.expires is None
    left = ({made.id, other.id} - {undone.id}).pop()
    assert (await alice.restore(left, **me)).expires is None
    assert {r.id for r in await alice.list(**me)} == {made.id, other.id}
