"""Session logs, summaries and episodes through the provider, identically on every backend (files and PostgreSQL).

The session store's visibility, validation and redaction are shared; only where the lines live differs
(``sessions/…/log.jsonl`` or the ``session_messages`` rows), so every behaviour here must match.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from agent_memory.agents.tools import memory_toolset
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.integrations.hooks import MemoryHooks

SECRET = "sk-abcdefghijklmnopqrstuvwxyz1234567890"


async def _say(provider: Any, sid: str, text: str, user: str | None = None, **kw: Any) -> Any:
    return await provider.log_messages([{"role": "user", "text": text, **kw}], session_id=sid, user_id=user)


async def test_append_numbers_messages_and_reads_them_back_in_order(backend: Any) -> None:
    provider = backend.provider()
    written = await provider.log_messages(
        [{"role": "user", "text": "hello"}, {"role": "assistant", "text": "hi Ada"}], session_id="chat-1", user_id="ada"
    )
    assert [m.id for m in written] == ["chat-1#1", "chat-1#2"]
    await _say(provider, "chat-1", "third", "ada", at="2026-01-02T03:04:05Z", speaker="Ada", turn_id="D1:3", metadata={"k": [1, 2]})
    info, msgs = await backend.provider().session("chat-1", user_id="ada")  # another app server reads it
    assert [(m.n, m.role, m.text) for m in msgs] == [(1, "user", "hello"), (2, "assistant", "hi Ada"), (3, "user", "third")]
    assert msgs[2].at.startswith("2026-01-02T03:04:05") and msgs[2].speaker == "Ada" and msgs[2].turn_id == "D1:3"
    assert msgs[2].metadata == {"k": [1, 2]}
    assert (info.session_id, info.user_id, info.messages, info.last_at) == ("chat-1", "ada", 3, msgs[2].at)
    _, last = await provider.session("chat-1", user_id="ada", limit=2)
    assert [m.n for m in last] == [2, 3]
    assert await provider.list(user_id="ada") == []  # session logs are apart from memory records


async def test_visibility_is_the_same_on_every_backend(backend: Any) -> None:
    provider = backend.provider()
    await _say(provider, "s-ada", "ada's private plans", "ada")
    await _say(provider, "s-anon", "anonymous chat")
    await _say(provider, "chat", "bob speaking", "bob")
    await _say(provider, "chat", "ada speaking", "ada")
    assert sorted(i.session_id for i in await provider.sessions(user_id="ada")) == ["chat", "s-ada"]
    assert await provider.sessions(session_id="s-ada") == []  # a user's session is that user's
    assert [i.session_id for i in await provider.sessions(session_id="s-anon")] == ["s-anon"]
    assert await provider.sessions(user_id="carol") == [] and await provider.sessions() == []
    for caller in ({"user_id": "bob"}, {"session_id": "s-anon"}, {"session_id": "s-ada", "user_id": "bob"}, {"session_id": "s-ada"}, {}):
        with pytest.raises(NotFoundError) as err:
            await provider.session("s-ada", **caller)
        assert "s-ada" in str(err.value) and "private" not in str(err.value)
    _, ada = await provider.session("chat", user_id="ada")
    _, bob = await provider.session("chat", user_id="bob")
    assert [m.text for m in ada] == ["ada speaking"] and [m.text for m in bob] == ["bob speaking"]
    with pytest.raises(NotFoundError):
        await provider.summarize_session("s-anon", user_id="ada", force=True)


async def test_redaction_before_the_line_is_stored(backend: Any) -> None:
    provider = backend.provider()
    await _say(provider, "s", f"my key is {SECRET}", "ada", metadata={"token": SECRET})
    _, msgs = await provider.session("s", user_id="ada")
    assert SECRET not in msgs[0].text and "REDACTED" in msgs[0].text and SECRET not in str(msgs[0].metadata)
    summary = await asyncio.to_thread(provider.session_store.write_summary, "s", f"summary with {SECRET}", user_id="ada")
    assert SECRET not in summary.text and SECRET not in (await provider.session("s", user_id="ada"))[0].summary.text
    if backend.kind == "postgres":  # and not in any row of any table
        assert await _rows_containing(provider, SECRET) == []


@pytest.mark.parametrize(
    "bad",
    [
        {"role": "", "text": "x"},
        {"role": "user", "text": 5},
        {"role": "user", "text": "x", "at": "yesterday"},
        {"role": "user", "text": "x", "metadata": "nope"},
    ],
)
async def test_bad_messages_are_typed_errors_and_write_nothing(backend: Any, bad: dict[str, Any]) -> None:
    provider = backend.provider()
    await _say(provider, "s", "kept", "ada")
    with pytest.raises(InvalidInputError):
        await provider.log_messages([{"role": "user", "text": "first of a bad batch"}, bad], session_id="s", user_id="ada")
    with pytest.raises(InvalidInputError):
        await provider.log_messages([{"role": "user", "text": "x"}], session_id="bad\x01id", user_id="ada")
    _, msgs = await provider.session("s", user_id="ada")
    assert [m.text for m in msgs] == ["kept"]


async def test_summaries_are_versioned_and_the_previous_kept(backend: Any) -> None:
    provider = backend.provider()
    await _say(provider, "s", "We decided to ship the release on Friday.", "ada", at="2026-03-02T10:00:00Z")
    first = await provider.summarize_session("s", user_id="ada", force=True)
    assert first is not None and first.version == 1 and first.messages == 1 and "Friday" in first.text
    assert await provider.summarize_session("s", user_id="ada") is None  # not due: nothing new
    await _say(provider, "s", "Then we moved it to Monday.", "ada", at="2026-03-03T10:00:00Z")
    second = await provider.summarize_session("s", user_id="ada", force=True)
    assert second is not None and second.version == 2 and second.messages == 2
    store = provider.session_store
    versions = await asyncio.to_thread(store.summaries, "s", user_id="ada")
    assert [v.version for v in versions] == [1, 2] and versions[0].text == first.text
    info = (await provider.sessions(user_id="ada"))[0]
    assert info.summary is not None and info.summary.version == 2


async def test_concurrent_appenders_on_many_app_servers_lose_and_double_no_line(backend: Any) -> None:
    stores = [backend.provider().session_store for _ in range(3)]

    def work(store: Any, who: str) -> None:
        for i in range(40):
            store.append("s", [{"role": "user", "text": f"{who}-{i}"}, {"role": "assistant", "text": f"{who}-{i}-r"}], user_id="ada")

    threads = [threading.Thread(target=work, args=(s, w)) for s, w in zip(stores, "abc", strict=True)]
    for t in threads:
        t.start()

    def join_all() -> None:
        for t in threads:
            t.join()

    await asyncio.to_thread(join_all)
    _, msgs = await backend.provider().session("s", user_id="ada")
    assert len(msgs) == 240 and [m.n for m in msgs] == list(range(1, 241))
    texts = [m.text for m in msgs]
    for who in "abc":  # each appender's lines in its own order, each batch's two lines adjacent
        assert [t for t in texts if t.startswith(f"{who}-")] == [x for i in range(40) for x in (f"{who}-{i}", f"{who}-{i}-r")]
        assert all(texts[texts.index(f"{who}-{i}") + 1] == f"{who}-{i}-r" for i in range(40))


async def test_contextual_search_and_the_sessions_tool_work_over_the_store(backend: Any) -> None:
    provider = backend.provider()
    await provider.log_messages(
        [
            {"role": "user", "text": "I adopted a greyhound called Biscuit last spring.", "at": "2026-04-01T09:00:00Z"},
            {"role": "assistant", "text": "Lovely, greyhounds are gentle.", "at": "2026-04-01T09:01:00Z"},
        ],
        session_id="pets",
        user_id="ada",
    )
    await _say(provider, "work", "The quarterly budget review is on Thursday.", "ada", at="2026-04-02T09:00:00Z")
    await _say(provider, "bobs", "Bob's greyhound is called Rocket.", "bob")
    await provider.remember("Ada walks Biscuit every morning.", scope="user", user_id="ada")
    for sid in ("pets", "work"):
        await provider.summarize_session(sid, user_id="ada", force=True)
    found = await provider.search_sessions("greyhound name", user_id="ada")
    assert found and found[0]["session_id"] == "pets"
    assert all(s["session_id"] != "bobs" for s in found)
    assert any("Biscuit" in m["snippet"] for m in found[0]["messages"])
    assert found[0]["messages"][0]["path"].endswith("log.jsonl")
    result = await provider.search("greyhound Biscuit", user_id="ada", mode="contextual")
    messages = [h for h in result.hits if h.kind == "message"]
    assert messages and messages[0].id == "pets#1" and messages[0].line_start == 1
    assert "Rocket" not in " ".join(h.snippet for h in result.hits)
    assert any(h.kind != "message" and "walks Biscuit" in h.snippet for h in result.hits)  # records too
    assert await provider.search("greyhound", session_id="pets", mode="contextual") == type(result)([])  # not ada
    tool = memory_toolset(provider.backend, session_id=None, user_id="ada")
    assert "memory_search_sessions" in tool.tools and "memory_episodes" in tool.tools


async def test_hooks_log_turns_and_record_episodes_on_every_backend(backend: Any) -> None:
    provider = backend.provider()
    hooks = MemoryHooks(provider, session_id="chat-9", user_id="ada", capture=False, recall=False)
    await hooks.on_turn_end(f"my token {SECRET}, I like pottery", "Pottery is lovely.")
    await hooks.on_turn_end("and painting", None)
    episode = await hooks.on_run_end("Plan a pottery class", "Booked Tuesday", tool_calls=["search", "book"])
    await provider.flush()
    info, msgs = await provider.session("chat-9", user_id="ada")
    assert [(m.role, m.text) for m in msgs] == [
        ("user", "my token [REDACTED:openai_key], I like pottery"),
        ("assistant", "Pottery is lovely."),
        ("user", "and painting"),
    ]
    assert info.messages == 3 and hooks.log_sessions
    assert episode is not None
    assert [e.id for e in await provider.episodes(user_id="ada")] == [episode.id]


async def test_episodes_newest_first_searchable_and_scoped(backend: Any) -> None:
    provider = backend.provider()
    made = []
    for i, (goal, who) in enumerate(
        [
            ("Book a table for dinner", {"user_id": "ada"}),
            ("Fix the flaky deployment pipeline", {"user_id": "ada"}),
            ("Plan bob's holiday in Rome", {"user_id": "bob"}),
            ("Summarise the anonymous chat", {"session_id": "anon"}),
        ]
    ):
        made.append(
            await provider.record_episode(
                goal, output="done", started=f"2026-05-0{i + 1}T10:00:00Z", ended=f"2026-05-0{i + 1}T10:05:00Z", **who
            )
        )
    ada = await provider.episodes(user_id="ada")
    assert [e.goal for e in ada] == ["Fix the flaky deployment pipeline", "Book a table for dinner"]  # newest first
    hits = await provider.episodes("deployment pipelines", user_id="ada")
    assert [e.goal for e in hits] == ["Fix the flaky deployment pipeline"]  # stemmed terms
    assert await provider.episodes("Rome holiday", user_id="ada") == []
    assert [e.goal for e in await provider.episodes(session_id="anon")] == ["Summarise the anonymous chat"]
    assert await provider.episodes(session_id="anon", user_id="ada") != []  # no-user session episode, named session
    got = await provider.episode(made[0].id, user_id="ada")
    assert got.goal == "Book a table for dinner" and got.user_id == "ada"
    for caller in ({"user_id": "bob"}, {}, {"session_id": "anon"}):
        with pytest.raises(NotFoundError):
            await provider.episode(made[0].id, **caller)


async def test_purge_of_a_user_or_session_removes_logs_summaries_and_episodes(backend: Any) -> None:
    provider = backend.provider()
    marker = "zq7marker"
    await _say(provider, "s1", f"ada one {marker}", "ada")
    await _say(provider, "s2", f"ada two {marker}", "ada")
    await provider.summarize_session("s1", user_id="ada", force=True)
    await provider.record_episode(f"ada's run {marker}", user_id="ada", session_id="s1")
    await _say(provider, "s3", "bob stays", "bob")
    await _say(provider, "anon", f"nobody {marker}")
    store = provider.session_store
    assert await asyncio.to_thread(store.purge, session_id="anon") == 1
    assert await provider.sessions(session_id="anon") == []
    assert await asyncio.to_thread(store.purge, user_id="ada") == 2
    assert await provider.sessions(user_id="ada") == [] and len(await provider.sessions(user_id="bob")) == 1
    from agent_memory.episodes import episode_store

    assert await asyncio.to_thread(episode_store(provider.backend).purge, user_id="ada") == 1
    assert await provider.episodes(user_id="ada", session_id="s1") == []
    if backend.kind == "postgres":
        assert await _rows_containing(provider, marker) == []
    with pytest.raises(InvalidInputError):
        await asyncio.to_thread(store.purge)


async def _rows_containing(provider: Any, text: str) -> list[str]:
    """Every table of the provider's PostgreSQL schema whose rows contain ``text`` (any case)."""
    backend = provider.backend
    found = []
    async with backend.pool.connection() as conn:
        cur = await conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (backend.schema,))
        for row in await cur.fetchall():
            t = row["table_name"]
            cur = await conn.execute(
                f'SELECT count(*) AS n FROM "{backend.schema}"."{t}" x WHERE position(lower(%s) in lower(x::text)) > 0', (text,)
            )
            if (await cur.fetchone())["n"]:
                found.append(t)
    return found


async def test_listing_many_sessions_reads_them_together_and_agrees_with_one_by_one(backend: Any) -> None:
    provider = backend.provider()
    for i in range(12):
        await _say(provider, f"s{i:02d}", f"message one of session {i}", "ada", at=f"2026-01-{i + 1:02d}T10:00:00Z")
        await _say(provider, f"s{i:02d}", f"message two of session {i}", "ada", at=f"2026-01-{i + 1:02d}T11:00:00Z")
        if i % 3 == 0:
            await provider.summarize_session(f"s{i:02d}", user_id="ada", force=True)
    await _say(provider, "s-bob", "bob's own session", "bob")
    store = provider.session_store
    one_by_one = {i.session_id: i.to_dict() for i in [store.session(f"s{i:02d}", user_id="ada") for i in range(12)]}
    log = store.files
    assert hasattr(log, "read_many") == (backend.kind == "postgres")
    if backend.kind == "postgres":  # listing never falls back to two statements per session

        def refuse(*_: Any, **__: Any) -> Any:
            raise AssertionError("a per-session read while listing sessions")

        log.read = log.summary = refuse  # type: ignore[method-assign]
    listed = await provider.sessions(user_id="ada")
    assert [i.session_id for i in listed] == [f"s{i:02d}" for i in reversed(range(12))]  # most recent first
    assert {i.session_id: i.to_dict() for i in listed} == one_by_one
    logs = store.visible_logs(session_id=None, user_id="ada")
    assert sorted(d.session_id for d, _, _ in logs) == sorted(one_by_one)
    assert all(len(msgs) == 2 and (summary is not None) == (int(d.session_id[1:]) % 3 == 0) for d, msgs, summary in logs)
