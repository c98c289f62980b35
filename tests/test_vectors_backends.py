"""Dense and hybrid search on every backend: files (vectors.db) and PostgreSQL (record_vectors).

A toy embedder maps synonyms to one dimension, so "vehicle" finds "car" with no shared word; the same
assertions run on both backends: meaning is found, visibility holds before any top-k, writes never wait for
embedding (deferred catch-up), a changed record is re-embedded, the dense side reads the asked point in time,
and an embedder failure answers lexically.
"""

from __future__ import annotations

from typing import Any

import pytest
from _doubles import concept_vectors_for
from _pg import fresh_db, pg_url  # noqa: F401

from agent_memory.backends import open_backend
from agent_memory.backends.base import Caller
from agent_memory.embeddings import CallableEmbedder, EmbeddingError
from agent_memory.errors import InvalidInputError
from agent_memory.model.drafts import MemoryDraft

CONCEPTS = {
    "car": 0,
    "automobile": 0,
    "vehicle": 0,
    "buy": 1,
    "bought": 1,
    "purchase": 1,
    "purchased": 1,
    "dog": 2,
    "puppy": 2,
    "soup": 3,
    "broth": 3,
}
QUERY = "which vehicle did they purchase?"  # shares no word with "I bought a car"
MINE = Caller(session_id="mine")


concept_vectors = concept_vectors_for(CONCEPTS)


def open_with(target: Any, embedder: Any) -> Any:
    return open_backend(target.target, **target.options, embedder=embedder)


async def embed(b: Any) -> Any:
    if hasattr(b, "store"):  # files: the store's vector cache
        return b.store.embed()
    return await b.embed()


async def ids(b: Any, query: str, caller: Caller = MINE, **options: Any) -> list[str]:
    return [h.id for h in (await b.search(query, caller, **options)).hits]


async def test_meaning_is_found_and_visibility_holds_on_every_backend(backend: Any) -> None:
    b = open_with(backend, CallableEmbedder(concept_vectors, name="concepts"))
    try:
        car = await b.remember(MemoryDraft("I bought a car last week", scope="project"))
        secret = await b.remember(MemoryDraft("she purchased an automobile secretly", scope="session", session_id="other"))
        await b.remember(MemoryDraft("we adopted a puppy", scope="project"))
        await b.remember(MemoryDraft("the broth was salty", scope="project"))
        assert car.id not in await ids(b, QUERY, mode="lexical")  # no shared word
        await embed(b)
        for mode in ("dense", "hybrid"):
            got = await ids(b, QUERY, mode=mode)
            assert got[0] == car.id and secret.id not in got, (mode, got)
        assert (await ids(b, QUERY, Caller(session_id="other"), mode="dense"))[0] in {car.id, secret.id}
        assert secret.id in await ids(b, QUERY, Caller(session_id="other"), mode="dense")
        res = await b.search(QUERY, MINE, mode="hybrid", trace=True)
        assert res.trace is not None and any(step.get("stage") == "dense" for step in res.trace)
        # the best hit's figure is the query's match quality (search/floor.py), no longer always 1
        assert all(0 < h.score <= res.hits[0].score <= 1 for h in res.hits) and res.hits[0].score > 0.5
        with pytest.raises(InvalidInputError):
            await b.search(QUERY, MINE, mode="sideways")
    finally:
        await b.close()


async def test_writes_never_wait_and_changed_records_are_re_embedded(backend: Any) -> None:
    b = open_with(backend, CallableEmbedder(concept_vectors, name="concepts"))
    try:
        rec = await b.remember(MemoryDraft("we adopted a puppy", scope="project", memory_key="pet"))
        assert rec.id in await ids(b, "puppy", mode="lexical")  # searchable lexically at once
        await embed(b)
        assert await ids(b, QUERY, mode="dense") == [rec.id]
        assert (await b.search(QUERY, MINE, mode="dense")).hits[0].snippet.startswith("we adopted")
        await b.remember(MemoryDraft("I bought a car", scope="project", memory_key="pet", on_existing="replace"))
        rep = await embed(b)
        assert rep.error is None  # (on PostgreSQL the write already scheduled this catch-up in the background)
        res = await b.search(QUERY, MINE, mode="dense", trace=True)
        assert res.hits[0].snippet.startswith("I bought a car")
        [step] = [s for s in res.trace or [] if s.get("stage") == "dense"]
        assert step["top"][0]["id"] == rec.id and step["top"][0]["cosine"] > 0.8  # the new content's vector, not the puppy's
        again = await embed(b)
        assert again.embedded == 0  # nothing stale left
    finally:
        await b.close()


async def test_dense_side_reads_the_asked_point_in_time(backend: Any) -> None:
    b = open_with(backend, CallableEmbedder(concept_vectors, name="concepts"))
    try:
        old = await b.remember(MemoryDraft("I bought a car", scope="project", valid_from="2023-01-01"))
        new = await b.supersede(old.id, MemoryDraft("we adopted a puppy", scope="project", valid_from="2023-07-01"))
        await embed(b)
        assert old.id not in await ids(b, QUERY, mode="dense")
        assert (await ids(b, QUERY, mode="dense", include_superseded=True))[0] == old.id
        assert await ids(b, QUERY, mode="dense", as_of="2023-03-01") == [old.id]
        assert await ids(b, QUERY, mode="dense", as_of="2023-08-01") == [new.id]
    finally:
        await b.close()


async def test_an_embedder_failure_answers_lexically(backend: Any) -> None:
    calls = {"n": 0}

    def flaky(texts: list[str]) -> list[list[float]]:
        calls["n"] += 1
        if calls["n"] > 1:
            raise EmbeddingError("model server down")
        return concept_vectors(texts)

    b = open_with(backend, CallableEmbedder(flaky, name="flaky"))
    try:
        rec = await b.remember(MemoryDraft("we adopted a puppy", scope="project"))
        await embed(b)  # first call succeeds
        res = await b.search("puppy", MINE, mode="hybrid", trace=True)
        assert [h.id for h in res.hits] == [rec.id]
        assert res.trace is not None and res.trace[-1].get("fallback") == "lexical"
    finally:
        await b.close()


async def test_dense_without_an_embedder_is_a_typed_error(backend: Any) -> None:
    b = open_with(backend, None)
    try:
        rec = await b.remember(MemoryDraft("we adopted a puppy", scope="project"))
        assert await ids(b, "puppy") == [rec.id]  # default: lexical
        for mode in ("dense", "hybrid", "sideways"):
            with pytest.raises(InvalidInputError):
                await b.search("puppy", MINE, mode=mode)
    finally:
        await b.close()


def name_heavy_vectors(texts: list[str]) -> list[list[float]]:
    """A toy model in which a name dominates a short question (weight 3); each known word is one axis."""
    vocab = ["melanie", "pottery", "vase", "status"]
    out = []
    for t in texts:
        toks = t.lower().replace("?", " ").replace(":", " ").split()
        out.append([(3.0 if w == "melanie" else 1.0) * toks.count(w) + 0.01 for w in vocab])
    return out


async def test_a_name_most_records_carry_is_not_embedded_on_every_backend(backend: Any) -> None:
    b = open_with(backend, CallableEmbedder(name_heavy_vectors, name="names"))
    try:
        await b.remember_many([MemoryDraft(f"Melanie: status {i} of the day") for i in range(30)])
        vase = await b.remember(MemoryDraft("I made a vase in my pottery class", scope="project"))
        await embed(b)
        res = await b.search("What did Melanie make in pottery?", MINE, mode="dense", trace=True)
        assert res.hits[0].id == vase.id  # embedded whole, the name ranks her 30 status lines first
        step = next(s for s in res.trace or [] if s.get("stage") == "dense")
        assert step["focus"] == {"embedded": "What did make in pottery?", "left_out": ["Melanie"]}
        assert (await b.search("What did Melanie make in pottery?", MINE, mode="hybrid")).hits[0].id == vase.id
    finally:
        await b.close()


CITIES = {"lisbon": 0, "porto": 0, "portugal": 0, "city": 0, "peanuts": 1, "fridays": 2}


async def test_a_record_written_after_embed_is_found_first_by_its_keyword(backend: Any) -> None:
    """New-user probe: after one ``embed``, a record written without an embedder (the CLI, MCP, ``capture``) had no
    vector, so hybrid search gave the only exact keyword match the worst cosine and an embedded neighbour came first.
    The search now embeds such lexical candidates (at most 32) and stores their vectors (search/fusion.py ``to_embed``)."""
    b = open_with(backend, CallableEmbedder(concept_vectors_for(CITIES), name="cities"))
    plain = open_backend(backend.target, **backend.options)  # a write that never embeds, as the CLI's
    try:
        porto = await b.remember(MemoryDraft("The office is in Porto, Portugal, by the old river bridge downtown", scope="project"))
        await b.remember(MemoryDraft("Deploys happen on Fridays", scope="project"))
        await b.remember(MemoryDraft("Ada is allergic to peanuts", scope="project"))
        await embed(b)
        lisbon = await plain.remember(MemoryDraft("Ada moved to Lisbon", scope="project"))
        res = await b.search("Lisbon", MINE, mode="hybrid", trace=True)
        assert res.hits[0].id == lisbon.id and porto.id in [h.id for h in res.hits], res.hits
        assert res.hits[0].score > max(h.score for h in res.hits[1:])
        step = next(s for s in res.trace or [] if s.get("stage") == "dense")
        assert step["embedded_now"] == 1
        assert (await embed(b)).embedded == 0  # stored by the search: the next one finds it
        assert (await b.search("Lisbon", MINE, mode="hybrid")).hits[0].id == lisbon.id
    finally:
        await plain.close()
        await b.close()


async def test_a_read_only_postgres_transaction_uses_the_new_vectors_and_stores_none(
    fresh_db: str,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    """On a replica (every transaction read-only) the search embeds the candidate for itself and stores nothing,
    without a failed INSERT (and its warning) on every search (the last probe of 2026-11-28)."""
    import psycopg

    from agent_memory.backends.postgres import PostgresBackend

    cities = CallableEmbedder(concept_vectors_for(CITIES), name="cities")
    b = PostgresBackend(fresh_db, embedder=cities)
    plain = PostgresBackend(fresh_db)
    try:
        await b.remember(MemoryDraft("The office is in Porto, Portugal, by the old river bridge downtown", scope="project"))
        await embed(b)
        lisbon = await plain.remember(MemoryDraft("Ada moved to Lisbon", scope="project"))
    finally:
        await plain.close()
        await b.close()
    name = fresh_db.rsplit("/", 1)[1]
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    replica = PostgresBackend(fresh_db, embedder=cities)
    try:
        with caplog.at_level("WARNING", logger="agent_memory"):
            res = await replica.search("Lisbon", MINE, mode="hybrid", trace=True)
        assert res.hits[0].id == lisbon.id
        assert not [r for r in caplog.records if "could not store" in r.getMessage()]
        assert next(s for s in res.trace or [] if s.get("stage") == "dense")["embedded_now"] == 1
    finally:
        await replica.close()
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        conn.execute("SET default_transaction_read_only = off")  # this session only: the database stays read-only
        conn.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = off')
        (count,) = conn.execute("SELECT count(*) FROM agent_memory.record_vectors WHERE id = %s", (lisbon.id,)).fetchone()  # type: ignore[misc]
    assert count == 0
