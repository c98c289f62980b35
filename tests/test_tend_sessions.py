"""Session logs tended by themselves: idle sessions summarised by one call (and on a schedule), raw and imported logs
distilled into facts exactly once, in the owner's partition; on both backends, through the API and the CLI."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_memory import MemoryProvider
from agent_memory.consolidate.tend import IdleSummaries
from agent_memory.errors import InvalidInputError
from agent_memory.sessions import SummaryPolicy

KINDS = ["files", "postgres"]
T0 = dt.datetime(2026, 5, 1, 10, 0, tzinfo=dt.UTC)


def _at(minutes: float) -> str:
    return (T0 + dt.timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")


def _target(kind: str, tmp_path: Path) -> str:
    if kind == "postgres":
        from _matrix import fresh_database
        from _pg import require_psycopg, server

        require_psycopg()
        return fresh_database(server().url)
    return str(tmp_path / "root")


def _open(target: str) -> MemoryProvider:
    return MemoryProvider(target) if target.startswith("postgresql://") else MemoryProvider(target, durable=False)


def _cli(root: str, *args: str) -> Any:
    proc = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", root, *args, "--json"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


async def _log(p: MemoryProvider, sid: str, user: str | None, texts: list[str], start: float) -> None:
    await p.log_messages(
        [{"role": "user" if i % 2 == 0 else "assistant", "text": t, "at": _at(start + i)} for i, t in enumerate(texts)],
        session_id=sid,
        user_id=user,
    )


async def _versions(p: MemoryProvider, sid: str, user: str | None) -> int:
    info = [i for i in await p.sessions(session_id=sid, user_id=user) if i.session_id == sid]
    return info[0].summary.version if info and info[0].summary else 0


@pytest.mark.parametrize("kind", KINDS)
async def test_summarize_idle_summarises_every_due_session_once_bounded_and_evented(kind: str, tmp_path: Path) -> None:
    p = _open(_target(kind, tmp_path))
    try:
        await _log(p, "a-idle", "alice", ["We ship the otter release on Friday.", "Noted."], 0)
        await _log(p, "a-busy", "alice", ["Still talking about kelp."], 55)  # active 5 minutes before "now"
        await _log(p, "b-idle", "bob", ["Bob's kelp farm needs a permit."], 0)
        now = T0 + dt.timedelta(minutes=60)
        only_alice = await p.summarize_idle(user_id="alice", now=now)
        assert [s["session_id"] for s in only_alice.summarized] == ["a-idle"] and only_alice.checked == 2
        assert await _versions(p, "b-idle", "bob") == 0  # another user's session is not touched by alice's call
        everyone = await p.summarize_idle(now=now)
        assert [s["session_id"] for s in everyone.summarized] == ["b-idle"]  # a-idle is summarised, a-busy not idle yet
        again = await p.summarize_idle(now=now)
        assert again.due == 0 and not again.summarized
        later = await p.summarize_idle(now=now + dt.timedelta(minutes=30))
        assert [s["session_id"] for s in later.summarized] == ["a-busy"]
        events = [e for e in await p.events(user_id="alice") if e.event == "summarized"]
        assert sorted(e.id for e in events) == ["session:a-busy", "session:a-idle"]
        assert not [e for e in await p.events(user_id="bob") if e.event == "summarized" and e.id != "session:b-idle"]
        assert [e.id for e in await p.events(user_id="bob") if e.event == "summarized"] == ["session:b-idle"]
        # 20 new messages make a session due without idling; limit bounds one call
        await _log(p, "a-long", "alice", [f"message {i} about otters" for i in range(20)], 200)
        await _log(p, "a-long2", "alice", [f"message {i} about kelp" for i in range(20)], 200)
        bounded = await p.summarize_idle(user_id="alice", now=T0 + dt.timedelta(minutes=221), limit=1)
        assert len(bounded.summarized) == 1 and bounded.due == 2 and bounded.remaining == 1
        with pytest.raises(InvalidInputError):
            await p.summarize_idle(limit=0)
    finally:
        await p.aclose()


@pytest.mark.parametrize("kind", KINDS)
async def test_distill_captures_raw_logs_once_and_new_messages_next_time(kind: str, tmp_path: Path) -> None:
    p = _open(_target(kind, tmp_path))
    try:
        await _log(p, "a1", "alice", ["I live in Lisbon.", "Nice city!", "My favourite colour is green."], 0)
        await _log(p, "b1", "bob", ["I live in Oslo."], 0)
        first = await p.distill(user_id="alice")
        assert first.messages == 3 and first.written == 2 and [s["session_id"] for s in first.sessions] == ["a1"]
        alice = sorted(r.content for r in await p.list(user_id="alice"))
        assert alice == ["User lives in Lisbon.", "User's favourite colour is green."]
        assert await p.list(user_id="bob") == []  # bob's log was not read by alice's call
        second = await p.distill(user_id="alice")
        assert second.messages == 0 and second.written == 0
        assert len(await p.list(user_id="alice")) == 2  # run again: nothing stored twice
        await _log(p, "a1", "alice", ["I work at Acme Corp."], 10)
        third = await p.distill()
        by = {s["session_id"]: s for s in third.sessions}
        assert by["a1"]["from"] == 4 and by["a1"]["through"] == 4 and set(by) == {"a1", "b1"}
        assert "User works at Acme Corp." in {r.content for r in await p.list(user_id="alice")}
        assert [r.content for r in await p.list(user_id="bob")] == ["User lives in Oslo."]
        assert not {r.id for r in await p.list(user_id="bob")} & {r.id for r in await p.list(user_id="alice")}
        marks = [e for e in await p.events(user_id="alice") if e.event == "distilled"]
        assert [e.detail["through"] for e in marks] == [3, 4]
        assert not [e for e in await p.events(user_id="bob") if e.event == "distilled" and e.id == "session:a1"]
    finally:
        await p.aclose()


@pytest.mark.parametrize("kind", KINDS)
async def test_distill_is_bounded_per_call_and_continues(kind: str, tmp_path: Path) -> None:
    p = _open(_target(kind, tmp_path))
    try:
        await _log(p, "a1", "alice", ["I live in Lisbon.", "Nice!", "My favourite colour is green.", "Ok.", "I work at Acme Corp."], 0)
        one = await p.distill(limit=2)
        assert one.messages == 2 and one.remaining == 3 and one.sessions[0]["through"] == 2
        rest = await p.distill(limit=10)
        assert rest.messages == 3 and rest.sessions[0]["from"] == 3
        assert len(await p.list(user_id="alice")) == 3
    finally:
        await p.aclose()


def _history(tmp_path: Path, name: str, turns: list[str]) -> Path:
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "text": t, "at": _at(i)} for i, t in enumerate(turns)]
    lines = [
        {"format": "agent-memory", "version": 1},
        {"section": "session", "session_id": "hist", "user_id": "alice", "messages": messages},
    ]
    path = tmp_path / name
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("kind", KINDS)
def test_cli_distill_an_imported_history_yields_its_facts_once(kind: str, tmp_path: Path) -> None:
    target = _target(kind, tmp_path)
    if kind == "files":
        _cli(target, "init")
    turns = ["I live in Lisbon.", "Lovely.", "My favourite colour is green.", "Noted."]
    assert _cli(target, "import", str(_history(tmp_path, "h1.jsonl", turns)))["written"]
    first = _cli(target, "sessions", "distill", "--user", "alice")
    assert first["written"] == 2 and first["messages"] == 4
    assert _cli(target, "sessions", "distill", "--user", "alice")["written"] == 0
    assert _cli(target, "sessions", "distill")["messages"] == 0
    contents = sorted(r["content"] for r in _cli(target, "list", "--user", "alice")["records"])
    assert contents == ["User lives in Lisbon.", "User's favourite colour is green."]
    assert _cli(target, "list", "--user", "bob")["records"] == []
    # the same history imported again with one more turn: only that turn is read
    _cli(target, "import", str(_history(tmp_path, "h2.jsonl", [*turns, "I work at Acme Corp."])))
    more = _cli(target, "sessions", "distill")
    assert more["messages"] == 1 and more["written"] == 1
    assert len(_cli(target, "list", "--user", "alice")["records"]) == 3


@pytest.mark.parametrize("kind", KINDS)
def test_cli_sessions_summarize_idle(kind: str, tmp_path: Path) -> None:
    target = _target(kind, tmp_path)
    if kind == "files":
        _cli(target, "init")
    old = "2026-01-01T10:00:00Z"  # long idle by now
    _cli(target, "session", "append", "a1", "We ship the otter release on Friday.", "--user", "alice", "--at", old)
    _cli(target, "session", "append", "b1", "Bob's kelp farm needs a permit.", "--user", "bob", "--at", old)
    mine = _cli(target, "sessions", "summarize", "--idle", "--user", "alice")
    assert [(s["session_id"], s["user_id"]) for s in mine["summarized"]] == [("a1", "alice")]
    rest = _cli(target, "sessions", "summarize", "--idle")
    assert [(s["session_id"], s["user_id"]) for s in rest["summarized"]] == [("b1", "bob")]
    assert _cli(target, "sessions", "summarize", "--idle")["due"] == 0
    shown = _cli(target, "session", "show", "a1", "--user", "alice")
    assert shown["summary"]["version"] == 1 and "otter" in shown["summary"]["text"]
    proc = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", target, "sessions", "summarize"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and "--idle" in proc.stderr


class Clock:
    """A sleep the test controls: each ``tick()`` lets the schedule's loop run one pass."""

    def __init__(self) -> None:
        self.ticks: asyncio.Queue[None] = asyncio.Queue()
        self.asked: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.asked.append(seconds)
        await self.ticks.get()

    def tick(self) -> None:
        self.ticks.put_nowait(None)


async def _until(cond: Any) -> None:
    for _ in range(2000):
        if cond():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("condition never held")


async def test_idle_schedule_runs_on_its_clock_and_stops_with_the_provider(tmp_path: Path) -> None:
    p = _open(str(tmp_path / "root"))
    clock = Clock()
    await _log(p, "a1", "alice", ["We ship the otter release on Friday."], 0)
    schedule = p.schedule_idle_summaries(60, sleep=clock.sleep, now=T0 + dt.timedelta(hours=1), policy=SummaryPolicy())
    assert schedule.running and schedule.passes == 0
    await _until(lambda: clock.asked == [60.0])
    assert await _versions(p, "a1", "alice") == 0  # nothing before the first tick
    clock.tick()
    await _until(lambda: schedule.passes == 1)
    assert schedule.last is not None and [s["session_id"] for s in schedule.last.summarized] == ["a1"]
    clock.tick()
    await _until(lambda: schedule.passes == 2)
    assert schedule.last is not None and not schedule.last.summarized  # nothing new: nothing summarised twice
    await p.aclose()
    assert not schedule.running
    with pytest.raises(InvalidInputError):
        IdleSummaries(lambda: asyncio.sleep(0), 0)  # type: ignore[arg-type, return-value]


async def test_a_failing_pass_keeps_the_schedule_alive() -> None:
    clock = Clock()
    calls = 0

    async def run() -> Any:
        nonlocal calls
        calls += 1
        raise RuntimeError("database down")

    schedule = IdleSummaries(run, 5, sleep=clock.sleep).start()
    clock.tick()
    clock.tick()
    await _until(lambda: schedule.passes == 2)
    assert calls == 2 and schedule.running
    await schedule.stop()
    assert not schedule.running


async def test_mcp_flag_starts_the_idle_schedule(tmp_path: Path) -> None:
    import argparse

    from agent_memory.mcp.cli import configure_parser, options_from_args, start_idle_summaries

    parser = configure_parser(argparse.ArgumentParser())
    options = options_from_args(parser.parse_args(["--summarize-idle-every", "120", "--user", "alice"]), env={})
    assert options.summarize_idle_every == 120
    p = _open(str(tmp_path / "root"))
    clock = Clock()
    await _log(p, "a1", "alice", ["We ship the otter release on Friday."], 0)
    await _log(p, "b1", "bob", ["Bob's kelp farm needs a permit."], 0)
    schedule = start_idle_summaries(p, options, sleep=clock.sleep)
    clock.tick()
    await _until(lambda: schedule.passes == 1)
    assert [s["session_id"] for s in schedule.last.summarized] == ["a1"]  # the server's user only
    await p.aclose()
    assert not schedule.running
    off = options_from_args(parser.parse_args([]), env={})
    assert start_idle_summaries(p, off) is None


@pytest.mark.parametrize("kind", KINDS)
async def test_purging_a_user_takes_their_session_events_and_leaves_the_others(kind: str, tmp_path: Path) -> None:
    p = _open(_target(kind, tmp_path))
    try:
        await _log(p, "a1", "alice", ["I live in Lisbon."], 0)
        await _log(p, "b1", "bob", ["I live in Oslo."], 0)
        await p.distill()
        await p.summarize_idle(now=T0 + dt.timedelta(hours=1))
        await p.purge(user_id="alice")
        assert [e for e in await p.events(user_id="alice") if e.id.startswith("session:")] == []
        assert sorted(e.event for e in await p.events(user_id="bob") if e.id == "session:b1") == ["distilled", "summarized"]
        assert (await p.distill()).messages == 0  # bob's log stays read; alice's is gone with her
        await _log(p, "a1", "alice", ["I work at Acme Corp."], 5)  # alice starts again: her new log is read from 1
        again = await p.distill(user_id="alice")
        assert again.sessions[0]["from"] == 1 and [r.content for r in await p.list(user_id="alice")] == ["User works at Acme Corp."]
    finally:
        await p.aclose()
