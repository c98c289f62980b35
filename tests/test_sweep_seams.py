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
