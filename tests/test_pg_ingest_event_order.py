"""The events of one PostgreSQL ``remember_many`` follow the input order, though its batches commit in any order.

``remember_many`` writes up to ``ingest_connections`` batches at once, each in its own transaction with its events.
Events list by time, then ``seq``: when a later batch wrote its events first (it ran faster), they listed before the
earlier batch's, so ``events``/``history`` and ``undo`` ("the last change") did not follow the import. Each batch
now takes its events' time in input order before it starts. The test makes the first batch write its events only
after the second has written its own (no timing: the first waits for the second's signal).
"""

from __future__ import annotations

import asyncio
import contextvars

import pytest
from _pg import fresh_schema, pg_url, require_psycopg  # noqa: F401  (pytest fixture)

require_psycopg()

from agent_memory.backends.base import Caller  # noqa: E402
from agent_memory.backends.postgres import PostgresBackend  # noqa: E402
from agent_memory.model.drafts import MemoryDraft  # noqa: E402


@pytest.mark.parametrize("threshold", [1, 10_000])  # COPY, and one remember at a time
async def test_events_of_parallel_batches_follow_the_input_order(pg_url: str, threshold: int, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    from agent_memory.backends.postgres import backend as pg_backend

    b = PostgresBackend(pg_url, schema=fresh_schema(), batch_size=4, copy_threshold=threshold, ingest_connections=2)
    real, real_batch = pg_backend.record_writes, b._write_batch
    batch: contextvars.ContextVar[int] = contextvars.ContextVar("batch")  # which batch a task writes (0: the first)
    second_done = asyncio.Event()

    async def tagged(prepared: list, *args: object, **kw: object) -> object:  # type: ignore[type-arg]
        batch.set(int(prepared[0][0].content.rsplit(" ", 1)[1]) // 4)
        return await real_batch(prepared, *args, **kw)  # type: ignore[arg-type]

    async def reordered(*args: object, **kw: object) -> None:
        if batch.get() == 0:
            await asyncio.wait_for(second_done.wait(), 30)  # the first batch's events go in after the second's
        await real(*args, **kw)  # type: ignore[arg-type]
        if batch.get() == 1:
            second_done.set()

    monkeypatch.setattr(b, "_write_batch", tagged)
    monkeypatch.setattr(pg_backend, "record_writes", reordered)
    try:
        drafts = [MemoryDraft(f"imported fact number {i}") for i in range(8)]  # two batches of four
        results = await b.remember_many(drafts, source="import")
        assert second_done.is_set()  # the second batch did write first
        events = await b.events(Caller())
        assert [e.id for e in events] == [r.id for r in results]  # was the second batch's four first
        assert [e.event for e in events] == ["imported"] * 8
        undone = await b.undo(Caller())
        assert undone.id == results[-1].id  # the last change is the input's last record
    finally:
        await b.close()
