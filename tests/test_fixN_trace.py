"""``search --trace`` counts only what the caller may see: the dense stage never says how many vectors the whole store
holds (files), and a lax search never lists each term's document count over the whole table (PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from _doubles import letter_vectors
from _pg import fresh_schema, pg_url, require_psycopg  # noqa: F401  (pytest fixture)

from agent_memory.backends.base import Caller
from agent_memory.backends.files.hybrid import hybrid_search
from agent_memory.backends.files.store import MemoryDraft, MemoryStore
from agent_memory.backends.files.vectors import VectorCache, live_items
from agent_memory.embeddings import CallableEmbedder
from agent_memory.search.lexical import LexicalEngine


def _dense_stage(tmp_path: Path, hidden: int) -> dict[str, Any]:
    store = MemoryStore(tmp_path / f"m{hidden}", durable=False, rescan_interval=None)
    try:
        store.remember("the garden shed key hangs by the door", scope="project")
        if hidden:
            store.remember_many(
                [MemoryDraft(content=f"garden shed note {i}", scope="session", session_id="other") for i in range(hidden)], source="import"
            )
        emb = CallableEmbedder(letter_vectors, name="letters")
        cache = VectorCache.for_root(store.root)
        cache.backfill(live_items(store.index), emb)
        res = hybrid_search(store, cache, emb, "garden shed", mode="dense", session_id="mine", trace=True)
    finally:
        store.close()
    assert res.trace is not None and len(res.hits) == 1
    stage = next(t for t in res.trace if t["stage"] == "dense")
    return {**stage, "top": [t["cosine"] for t in stage["top"]]}  # ids are random: their cosines compared


def test_the_dense_trace_is_the_same_whatever_the_caller_cannot_see(tmp_path: Path) -> None:
    alone = _dense_stage(tmp_path, hidden=0)
    crowded = _dense_stage(tmp_path, hidden=3)  # it said "checked on the nearest 4" here, "… 1" above
    assert crowded == alone and "4" not in json.dumps(crowded["visibility"])


async def _write(url: str, schema: str, drafts: list[MemoryDraft]) -> None:
    from agent_memory.backends.postgres import PostgresBackend

    b = PostgresBackend(url, schema=schema)
    try:
        await b.remember_many(drafts)
    finally:
        await b.close()


def test_a_lax_postgres_trace_lists_no_whole_table_counts(pg_url: str) -> None:  # noqa: F811
    require_psycopg()
    from agent_memory.backends.postgres import PostgresBackend

    schema = fresh_schema()
    ada = [MemoryDraft(f"alpha gamma note {i}", scope="user", user_id="ada") for i in range(3)]
    bob = [MemoryDraft(f"alpha planted {i}", scope="user", user_id="bob") for i in range(20)]
    asyncio.run(_write(pg_url, schema, [*ada, *bob]))

    async def stages(strict: bool) -> dict[str, dict[str, Any]]:
        b = PostgresBackend(pg_url, schema=schema, engine=LexicalEngine(candidate_budget=5, coordination=0))
        try:
            res = await b.search("alpha gamma", Caller(None, "ada"), limit=3, trace=True, strict_visibility=strict)
        finally:
            await b.close()
        assert len(res.hits) == 3 and res.trace is not None
        return {s["stage"]: s for s in res.trace}

    lax = asyncio.run(stages(False))
    # alpha matches 23 rows, 3 of them ada's: the lax trace shows no count at all
    assert "documents_per_term" not in lax["candidates"] and lax["candidates"]["visible_only"] is False
    strict = asyncio.run(stages(True))
    assert strict["candidates"]["documents_per_term"] == {"alpha": 3, "gamma": 3}  # her own rows: shown
