"""One behavioural suite, run identically against every backend (files + SQLite, PostgreSQL).

Each test receives a fresh backend; the PostgreSQL one lives in its own schema on a real server (tests/_pg.py).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _pg import fresh_schema, pg_url  # noqa: F401  (pytest fixture)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_memory.backends import open_backend
from agent_memory.backends.base import Caller, MemoryBackend
from agent_memory.backends.files.backend import FilesBackend
from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import InvalidIdError, InvalidInputError, NotFoundError
from agent_memory.model.drafts import MemoryDraft

BACKENDS = ["files", "postgres"]
ANYONE = Caller()


@pytest.fixture(params=BACKENDS)
def make_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], MemoryBackend]]:
    """A factory of fresh backends of one kind (construction does no I/O: the first call opens it)."""
    kind = request.param
    url = request.getfixturevalue("pg_url") if kind == "postgres" else None
    count = iter(range(1000))

    def make() -> MemoryBackend:
        if url is not None:
            return open_backend(url, schema=fresh_schema())
        return FilesBackend(MemoryStore(tmp_path / f"root{next(count)}"))

    yield make


@pytest.fixture
async def backend(make_backend: Callable[[], MemoryBackend]) -> AsyncIterator[MemoryBackend]:
    b = make_backend()
    yield b
    await b.close()


def d(content: str, **kw: Any) -> MemoryDraft:
    return MemoryDraft(content, **kw)


SOON_S = 1.2


def soon() -> str:
    """An expiry just ahead (a past one is refused on write); tests sleep ``SOON_S`` to let it pass."""
    return (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)).isoformat()


def future(days: int = 30) -> str:
    return (dt.datetime.now(dt.UTC) + dt.timedelta(days=days)).isoformat()


async def test_open_backend_routes_by_target(make_backend: Callable[[], MemoryBackend]) -> None:
    b = make_backend()
    assert isinstance(b, MemoryBackend)
    assert type(b).__name__ in ("FilesBackend", "PostgresBackend")
    await b.close()


async def test_remember_then_duplicate_then_get(backend: MemoryBackend) -> None:
    first = await backend.remember(d("The deploy window is Tuesday 10:00 UTC", tags=["ops"], kind="decision"))
    again = await backend.remember(d("  The deploy window is Tuesday 10:00 UTC\n"))
    assert first.status == "created" and again.status == "duplicate" and again.id == first.id
    rec = await backend.get(first.id, ANYONE)
    assert rec.content == "The deploy window is Tuesday 10:00 UTC"
    assert rec.tags == ("ops",) and rec.kind == "decision" and rec.source == "tool"
    assert await backend.count(ANYONE) == 1


async def test_same_content_in_other_partitions_is_not_a_duplicate(backend: MemoryBackend) -> None:
    a = await backend.remember(d("likes green tea", scope="user", user_id="u1"))
    b = await backend.remember(d("likes green tea", scope="user", user_id="u2"))
    c = await backend.remember(d("likes green tea", scope="session", session_id="s1", user_id="u1"))
    e = await backend.remember(d("likes green tea"))
    assert [r.status for r in (a, b, c, e)] == ["created"] * 4
    assert len({a.id, b.id, c.id, e.id}) == 4


async def test_keyed_append_is_idempotent_and_replace_and_skip(backend: MemoryBackend) -> None:
    r1 = await backend.remember(d("step one", memory_key="plan"))
    r2 = await backend.remember(d("step two", memory_key="plan"))
    r3 = await backend.remember(d("step two", memory_key="plan"))  # a replayed tool call
    assert (r1.status, r2.status, r3.status) == ("created", "appended", "duplicate")
    assert r1.id == r2.id == r3.id
    assert (await backend.get(r1.id, ANYONE)).content == "step one\nstep two"
    skipped = await backend.remember(d("ignored", memory_key="plan", on_existing="skip"))
    assert skipped.status == "skipped" and (await backend.get(r1.id, ANYONE)).content == "step one\nstep two"
    replaced = await backend.remember(d("a new plan", memory_key="plan", on_existing="replace", title="Plan v2"))
    rec = await backend.get(r1.id, ANYONE)
    assert replaced.status == "replaced" and rec.content == "a new plan" and rec.title == "Plan v2"
    assert (await backend.remember(d("a new plan", memory_key="plan", on_existing="replace"))).status == "duplicate"
    assert await backend.count(ANYONE) == 1


async def test_keys_are_per_partition(backend: MemoryBackend) -> None:
    a = await backend.remember(d("alpha", memory_key="prefs", scope="user", user_id="u1"))
    b = await backend.remember(d("beta", memory_key="prefs", scope="user", user_id="u2"))
    assert a.status == b.status == "created" and a.id != b.id
    assert (await backend.get(a.id, Caller(user_id="u1"))).content == "alpha"


async def test_remember_many_matches_one_by_one_semantics(backend: MemoryBackend) -> None:
    drafts = [d(f"bulk fact number {i} about kestrels") for i in range(120)]
    drafts.insert(50, d("bulk fact number 7 about kestrels"))  # an in-batch duplicate
    drafts.append(d("keyed line a", memory_key="bulk-key"))
    drafts.append(d("keyed line b", memory_key="bulk-key"))
    seen: list[int] = []
    results = await backend.remember_many(drafts, progress=seen.append)
    assert [r.status for r in results].count("created") == 121
    assert results[50].status == "duplicate" and results[50].id == results[7].id
    assert results[-1].status == "appended" and results[-1].id == results[-2].id
    assert sum(seen) == len(drafts)
    assert await backend.count(ANYONE) == 121
    again = await backend.remember_many(drafts)  # a retried import writes nothing new
    assert {r.status for r in again} == {"duplicate"}
    assert [r.id for r in again[:120]] == [r.id for r in results[:120]]
    assert await backend.count(ANYONE) == 121


async def test_bad_input_is_typed_and_writes_nothing(backend: MemoryBackend) -> None:
    with pytest.raises(InvalidInputError):
        await backend.remember(d(""))
    with pytest.raises(InvalidInputError):
        await backend.remember(d("x", scope="session"))  # no session_id
    with pytest.raises(InvalidInputError):
        await backend.remember(d("x", scope="galaxy"))
    with pytest.raises(InvalidIdError):
        await backend.remember(d("x", memory_key="../etc"))
    with pytest.raises(InvalidInputError):
        await backend.remember(d("x", expires="next tuesday"))
    with pytest.raises(InvalidInputError):  # one bad draft: the whole batch is refused before any write
        await backend.remember_many([d("good one"), d("bad \x00 one"), d("good two")])
    assert await backend.count(ANYONE) == 0
    errors: list[tuple[int, str]] = []
    done = await backend.remember_many([d("good one"), d(""), d("good two")], on_error="skip", errors=errors)
    assert [r.status for r in done] == ["created", "created"] and [e[0] for e in errors] == [1]
    with pytest.raises(InvalidIdError):
        await backend.get("../../etc/passwd", ANYONE)
    with pytest.raises(InvalidInputError):
        await backend.search("x", ANYONE, limit=0)
    with pytest.raises(InvalidInputError):
        await backend.list(ANYONE, limit=0)
    with pytest.raises(InvalidInputError):
        await backend.list(ANYONE, created_after="yesterday-ish")
    with pytest.raises(NotFoundError):
        await backend.get("no-such-record", ANYONE)


async def test_secrets_are_redacted_before_storage(backend: MemoryBackend) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    res = await backend.remember(d(f"the CI token is {token}"))
    assert res.redactions >= 1
    rec = await backend.get(res.id, ANYONE)
    assert token not in rec.content and "CI token" in rec.content
    with pytest.raises(InvalidInputError):
        await backend.remember(d("x", tags=[token]))


async def test_search_natural_language_question(backend: MemoryBackend) -> None:
    want = await backend.remember(d("We decided to migrate the billing database to PostgreSQL 15 in March"))
    await backend.remember(d("The office plants need watering on Mondays"))
    await backend.remember(d("Lunch order: the team prefers tacos"))
    res = await backend.search("What did we decide about the database migration?", ANYONE)
    assert res.hits and res.hits[0].id == want.id
    assert "billing database" in res.hits[0].snippet and res.hits[0].line_end == res.hits[0].line_start
    assert isinstance((await backend.search("the of and ?!", ANYONE, limit=5)).hits, list)  # stop words only: no error
    assert (await backend.search("", ANYONE)).hits == []
    assert (await backend.search("zebra quasar", ANYONE)).hits == []


async def test_search_coverage_beats_repetition(backend: MemoryBackend) -> None:
    repeat = await backend.remember(d("invoice invoice invoice invoice invoice invoice reminder list"))
    both = await backend.remember(d("the invoice for the Lisbon conference arrived"))
    hits = (await backend.search("Lisbon conference invoice", ANYONE, limit=2)).hits
    assert [h.id for h in hits] == [both.id, repeat.id]


async def test_search_title_weight_and_tag_hints(backend: MemoryBackend) -> None:
    body = await backend.remember(d("notes mention kayaking once among many other words here", title="weekend notes"))
    titled = await backend.remember(d("routes and gear for the river trip", title="kayaking plan"))
    hits = (await backend.search("kayaking", ANYONE)).hits
    assert [h.id for h in hits] == [titled.id, body.id]
    tagged = await backend.remember(d("gear list for the river", tags=["paddling"]))
    hits = (await backend.search("river", ANYONE, tags=["paddling"])).hits
    assert hits[0].id == tagged.id


async def test_hidden_records_never_use_up_the_limit(backend: MemoryBackend) -> None:
    await backend.remember_many([d(f"quarterly forecast draft {i}", scope="session", session_id=f"other{i}") for i in range(40)])
    mine = await backend.remember(d("quarterly forecast final", scope="user", user_id="me"))
    hits = (await backend.search("quarterly forecast", Caller(user_id="me"), limit=1)).hits
    assert [h.id for h in hits] == [mine.id]


async def test_scope_table(backend: MemoryBackend) -> None:
    ids = {
        "project": (await backend.remember(d("marker project"))).id,
        "global": (await backend.remember(d("marker global", scope="global"))).id,
        "user": (await backend.remember(d("marker user", scope="user", user_id="u1"))).id,
        "session": (await backend.remember(d("marker session", scope="session", session_id="s1"))).id,
        "session_u1": (await backend.remember(d("marker session of u1", scope="session", session_id="s1", user_id="u1"))).id,
    }
    cases = {
        Caller(): {"project", "global"},
        Caller(session_id="s1"): {"project", "global", "session"},
        Caller(session_id="s1", user_id="u1"): set(ids),
        Caller(session_id="s1", user_id="u2"): {"project", "global", "session"},
        Caller(user_id="u1"): {"project", "global", "user"},
        Caller(session_id="s2", user_id="u1"): {"project", "global", "user"},
    }
    for caller, names in cases.items():
        want = {ids[n] for n in names}
        assert {r.id for r in await backend.list(caller, limit=None)} == want, caller
        assert await backend.count(caller) == len(want)
        assert {h.id for h in (await backend.search("marker", caller, limit=50)).hits} == want, caller
        assert {line.split("]")[0][3:] for line in await backend.core_lines(caller, None)} == want
        for name, rid in ids.items():
            if name in names:
                assert (await backend.get(rid, caller)).id == rid
            else:
                with pytest.raises(NotFoundError):
                    await backend.get(rid, caller)
    assert await backend.forget(ids["user"], Caller(user_id="u2")) is False
    assert (await backend.get(ids["user"], Caller(user_id="u1"))).id == ids["user"]


async def test_list_filters_order_and_count(backend: MemoryBackend) -> None:
    a = await backend.remember(d("alpha", tags=["x", "y"], kind="preference"))
    b = await backend.remember(d("beta", tags=["x"]))
    c = await backend.remember(d("gamma", scope="global"))
    assert [r.id for r in await backend.list(ANYONE)] == [c.id, b.id, a.id]
    assert [r.id for r in await backend.list(ANYONE, tags=["x", "y"])] == [a.id]
    assert {r.id for r in await backend.list(ANYONE, tags=["x"])} == {a.id, b.id}
    assert [r.id for r in await backend.list(ANYONE, kind="preference")] == [a.id]
    assert [r.id for r in await backend.list(ANYONE, scope="global")] == [c.id]
    assert [r.id for r in await backend.list(ANYONE, limit=1)] == [c.id]
    assert await backend.count(ANYONE, tags=["x"]) == 2
    assert await backend.count(ANYONE, created_after=future(1)) == 0
    assert await backend.count(ANYONE, created_before=future(1)) == 3
    assert await backend.core_lines(ANYONE, 1) == [f"- [{c.id}] (fact): gamma"]


async def test_forget(backend: MemoryBackend) -> None:
    r = await backend.remember(d("temporary note about hamsters"))
    assert await backend.forget(r.id, ANYONE) is True
    with pytest.raises(NotFoundError):
        await backend.get(r.id, ANYONE)
    assert await backend.forget(r.id, ANYONE) is False
    assert (await backend.search("hamsters", ANYONE)).hits == []
    assert (await backend.remember(d("temporary note about hamsters"))).status == "created"


async def test_expired_records_are_invisible_and_swept(backend: MemoryBackend) -> None:
    with pytest.raises(InvalidInputError, match="already expired"):  # a past expiry is refused on write
        await backend.remember(d("born expired", expires=(dt.datetime.now(dt.UTC) - dt.timedelta(days=1)).isoformat()))
    old = await backend.remember(d("expired coupon code list", expires=soon()))
    live = await backend.remember(d("valid coupon code list", expires=future()))
    await asyncio.sleep(SOON_S)
    with pytest.raises(NotFoundError):
        await backend.get(old.id, ANYONE)
    assert [h.id for h in (await backend.search("coupon", ANYONE)).hits] == [live.id]
    assert [r.id for r in await backend.list(ANYONE)] == [live.id]
    assert (await backend.get(live.id, ANYONE)).expires is not None
    report = await backend.sweep()
    assert report.expired == [old.id]
    assert (await backend.sweep()).expired == []
    again = await backend.remember(d("expired coupon code list"))  # expired content may be written anew
    assert again.status == "created" and again.id != old.id
    assert await backend.count(ANYONE) == 2


async def test_expired_content_may_be_written_again_before_sweep(backend: MemoryBackend) -> None:
    old = await backend.remember(d("stale parking permit", expires=soon()))
    await asyncio.sleep(SOON_S)
    again = await backend.remember(d("stale parking permit"))
    assert again.status == "created" and again.id != old.id
    assert [r.id for r in await backend.list(ANYONE)] == [again.id]
    await backend.sweep()
    assert [r.id for r in await backend.list(ANYONE)] == [again.id]


async def test_doctor_reindex_and_user_md(backend: MemoryBackend) -> None:
    await backend.remember(d("doctor sample"))
    rep = await backend.doctor()
    assert rep.ok and rep.records == 1 and rep.indexed == 1
    await backend.reindex()
    assert (await backend.search("doctor sample", ANYONE)).hits
    assert await backend.user_md() == ""


NAMES = st.sampled_from(["a", "b", "c"])
RECORD = st.tuples(st.sampled_from(["session", "project", "user", "global"]), NAMES, st.one_of(st.none(), NAMES))
CALLER = st.tuples(st.one_of(st.none(), NAMES), st.one_of(st.none(), NAMES))


def _may_see(scope: str, sid: str, uid: str | None, caller: tuple[str | None, str | None]) -> bool:
    csid, cuid = caller
    if scope in ("project", "global"):
        return True
    if scope == "session":
        return csid == sid and (uid is None or uid == cuid)
    return uid is not None and uid == cuid


def test_scope_isolation_property(make_backend: Callable[[], MemoryBackend]) -> None:
    """Over random mixes of scopes, sessions and users: every read returns exactly what the caller may see."""
    loop = asyncio.new_event_loop()
    backend = make_backend()

    @settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(records=st.lists(RECORD, min_size=1, max_size=8), callers=st.lists(CALLER, min_size=1, max_size=3))
    def check(records: list[tuple[str, str, str | None]], callers: list[tuple[str | None, str | None]]) -> None:
        tag = uuid.uuid4().hex[:10]  # this example's names: earlier examples' rows never match

        def ns(v: str | None) -> str | None:
            return None if v is None else f"{tag}{v}"

        async def run() -> None:
            written: dict[str, tuple[str, str, str | None]] = {}
            for i, (scope, sid, uid) in enumerate(records):
                if scope == "user" and uid is None:
                    uid = "a"
                res = await backend.remember(d(f"probe{tag} item {i}", scope=scope, session_id=ns(sid), user_id=ns(uid)))
                written[res.id] = (scope, sid, uid)
            for csid, cuid in callers:
                caller = Caller(ns(csid), ns(cuid))
                want = {rid for rid, (s, sid, uid) in written.items() if _may_see(s, sid, uid, (csid, cuid))}
                hits = {h.id for h in (await backend.search(f"probe{tag}", caller, limit=50)).hits}
                listed = {r.id for r in await backend.list(caller, limit=None)} & set(written)
                assert hits == want and listed == want
                for rid in written:
                    try:
                        await backend.get(rid, caller)
                        assert rid in want
                    except NotFoundError:
                        assert rid not in want

        loop.run_until_complete(run())

    try:
        check()
    finally:
        loop.run_until_complete(backend.close())
        loop.close()


async def test_a_write_without_a_scope_stays_in_the_callers_partition(backend: MemoryBackend) -> None:
    mine = await backend.remember(d("ada's locker code is on the blue card", user_id="ada"))
    sess = await backend.remember(d("draft agenda for this chat only", session_id="chat-1"))
    shared = await backend.remember(d("the office opens at eight"))
    assert (await backend.get(mine.id, Caller(user_id="ada"))).scope.value == "user"
    assert (await backend.get(sess.id, Caller(session_id="chat-1"))).scope.value == "session"
    assert (await backend.get(shared.id, ANYONE)).scope.value == "project"
    bob = Caller(user_id="bob", session_id="chat-2")
    assert {h.id for h in (await backend.search("locker agenda office", bob)).hits} == {shared.id}


async def test_a_date_given_as_an_end_includes_that_whole_day(backend: MemoryBackend) -> None:
    rec = await backend.remember(d("today's note about otters"))
    day = (await backend.get(rec.id, ANYONE)).created[:10]
    assert [r.id for r in await backend.list(ANYONE, created_before=day)] == [rec.id]
    assert await backend.list(ANYONE, created_before=f"{day}T00:00:00Z") == []
