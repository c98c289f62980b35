"""The run's-end tidy pass: expired, orphaned and exactly duplicated records archived (evented, undoable), bounded,
one user's pass never touching another's records; on both backends, through the API, the hooks, the capability and
the CLI as a subprocess."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory import MemoryProvider
from agent_memory.consolidate.tidy import normalized, plan_tidy, tidy_limit
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.integrations.hooks import MemoryHooks
from agent_memory.integrations.pydantic_ai import MemoryCapability
from agent_memory.model.records import MemoryRecord, Scope

LATER = dt.datetime(2031, 1, 1, tzinfo=dt.UTC)
SOON = "2030-06-01"

KINDS = ["files", "postgres"]


def _target(kind: str, tmp_path: Path) -> str:
    """A store the API and the CLI share: a root directory, or a fresh PostgreSQL database (the CLI's default schema)."""
    if kind == "postgres":
        from _matrix import fresh_database
        from _pg import require_psycopg, server

        require_psycopg()
        return fresh_database(server().url)
    return str(tmp_path / "root")


def _open(target: str) -> MemoryProvider:
    return MemoryProvider(target, durable=False) if not target.startswith("postgresql://") else MemoryProvider(target)


async def _seed(p: MemoryProvider) -> dict[str, str]:
    """alice: a fact, a whitespace copy of it (older), a record expiring in 2030; bob: the same pair (his own)."""
    ids = {}
    ids["a_old"] = (await p.remember("Alice  drinks green tea.", user_id="alice", scope="user")).id
    ids["a_new"] = (await p.remember("Alice drinks green tea.", user_id="alice", scope="user")).id
    ids["a_exp"] = (await p.remember("The staging server is db-old.", user_id="alice", scope="user", expires=SOON)).id
    ids["b_old"] = (await p.remember("Bob  rides a red bike.", user_id="bob", scope="user")).id
    ids["b_new"] = (await p.remember("Bob rides a red bike.", user_id="bob", scope="user")).id
    ids["b_exp"] = (await p.remember("Bob's badge is 42.", user_id="bob", scope="user", expires=SOON)).id
    return ids


async def _ids(p: MemoryProvider, user: str) -> set[str]:
    return {r.id for r in await p.list(user_id=user, limit=None)}


@pytest.mark.parametrize("kind", KINDS)
async def test_tidy_archives_expired_and_duplicates_of_the_caller_only_evented_and_undoable(kind: str, tmp_path: Path) -> None:
    target = _target(kind, tmp_path)
    p = _open(target)
    try:
        ids = await _seed(p)
        report = await p.tidy(user_id="alice", max_share=1.0, now=LATER)
        assert {(c.rule, c.record_id) for c in report.applied} == {("duplicate", ids["a_old"]), ("ttl", ids["a_exp"])}
        assert {c.related[0] for c in report.applied if c.rule == "duplicate"} == {ids["a_new"]}  # the newer copy stays
        assert await _ids(p, "alice") == {ids["a_new"]}
        assert await _ids(p, "bob") == {ids["b_old"], ids["b_new"], ids["b_exp"]}  # bob's pair and expiry untouched
        events = [e for e in await p.events(user_id="alice") if e.event == "archived"]
        assert {e.id for e in events} == {ids["a_old"], ids["a_exp"]}
        assert all(str(e.detail.get("reason", "")).startswith("tidy: ") and e.user_id == "alice" for e in events)
        assert not [e for e in await p.events(user_id="bob") if e.event == "archived"]
        # undo brings them back, one change at a time; restore works too
        first = await p.undo(user_id="alice")
        second = await p.undo(user_id="alice")
        assert {first.id, second.id} == {ids["a_old"], ids["a_exp"]}
        assert ids["a_old"] in await _ids(p, "alice")
        assert (await p.get(ids["a_old"], user_id="alice")).content == "Alice  drinks green tea."
        with pytest.raises(NotFoundError):
            await p.get(ids["a_old"], user_id="bob")  # back in alice's partition, never bob's
        # what someone brought back stays: the next pass never undoes an undo; a new copy is still tidied
        again = await p.tidy(user_id="alice", max_share=1.0, now=LATER)
        assert again.applied == [] and again.changes == []
        third = (await p.remember("Alice drinks green  tea.", user_id="alice", scope="user")).id
        last = await p.tidy(user_id="alice", max_share=1.0, now=LATER)
        assert [(c.rule, c.record_id) for c in last.applied] == [("duplicate", ids["a_new"])]  # the newest (third) stays
        assert third in await _ids(p, "alice")
        await p.forget(third, user_id="alice")
        assert (await p.restore(third, user_id="alice")).id == third  # restore: also left alone afterwards
        assert (await p.tidy(user_id="alice", max_share=1.0, now=LATER)).applied == []
    finally:
        await p.aclose()


@pytest.mark.parametrize("kind", KINDS)
async def test_tidy_is_bounded_with_a_floor_of_one_and_the_next_pass_continues(kind: str, tmp_path: Path) -> None:
    p = _open(_target(kind, tmp_path))
    try:
        for i in range(3):
            await p.remember(f"Note {i} about otters.", user_id="alice", scope="user")
            await p.remember(f"Note {i}  about otters.", user_id="alice", scope="user")
        dry = await p.tidy(user_id="alice", dry_run=True)
        assert dry.limit == 1 and len(dry.changes) == 3 and dry.stopped and not dry.applied
        assert len(await _ids(p, "alice")) == 6  # a dry run changes nothing
        first = await p.tidy(user_id="alice")  # 1% of 6 records is 0: the floor of one applies
        assert len(first.applied) == 1 and first.stopped and "next pass" in (first.stop_reason or "")
        assert [c.status for c in first.changes].count("not_applied") == 2
        second = await p.tidy(user_id="alice")
        assert len(second.applied) == 1 and second.applied[0].record_id != first.applied[0].record_id
        assert len(await _ids(p, "alice")) == 4
        with pytest.raises(InvalidInputError):
            await p.tidy(max_share=0)
    finally:
        await p.aclose()


@pytest.mark.parametrize("kind", KINDS)
async def test_scope_path_and_shared_records(kind: str, tmp_path: Path) -> None:
    """At a run's end a gone scope_path archives the caller's own record, never a shared one (another machine may
    have the path); a shared duplicate in one shared partition goes; an operator's pass takes the shared orphan too."""
    gone = tmp_path / "deleted-module"
    p = _open(_target(kind, tmp_path))
    try:
        mine = (await p.remember("The parser lives here.", user_id="alice", scope="user", metadata={"scope_path": str(gone)})).id
        shared = (await p.remember("Team note on the parser.", scope="project", metadata={"scope_path": str(gone)})).id
        old = (await p.remember("Deploys  go out on Tuesdays.", scope="project")).id
        new = (await p.remember("Deploys go out on Tuesdays.", scope="project")).id
        keyed = (await p.remember("Deploys go out on  Tuesdays.", scope="project", memory_key="deploy-day")).id
        report = await p.tidy(user_id="alice", max_share=1.0)
        assert {(c.rule, c.record_id) for c in report.applied} == {("scope_path", mine), ("duplicate", old), ("duplicate", new)}
        visible = await _ids(p, "alice")
        assert shared in visible and keyed in visible  # the shared orphan waits; a keyed slot always stays
        operator = await p.tidy(max_share=1.0)
        assert [(c.rule, c.record_id) for c in operator.applied] == [("scope_path", shared)]
    finally:
        await p.aclose()


@pytest.mark.parametrize("kind", KINDS)
async def test_hooks_run_end_tidies_in_the_background_and_flush_awaits_it(kind: str, tmp_path: Path) -> None:
    p = _open(_target(kind, tmp_path))
    try:
        ids = await _seed(p)
        hooks = MemoryHooks(p, session_id="s1", user_id="alice", recall=False, capture=False)
        await hooks.on_run_end("check the tea", "done")
        await p.flush()
        assert await _ids(p, "alice") == {ids["a_new"], ids["a_exp"]}  # 1% of 3 records → one change: the duplicate
        assert await _ids(p, "bob") == {ids["b_old"], ids["b_new"], ids["b_exp"]}
        off = MemoryHooks(p, session_id="s2", user_id="bob", recall=False, capture=False, tidy=False)
        await off.on_run_end("nothing", "done")
        await p.flush()
        assert await _ids(p, "bob") == {ids["b_old"], ids["b_new"], ids["b_exp"]}
        undone = await p.undo(user_id="alice")
        assert undone.id == ids["a_old"] and undone.event == "archived"
    finally:
        await p.aclose()


def _reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart("Noted.")])


@pytest.mark.parametrize("kind", KINDS)
async def test_capability_run_end_tidies_and_the_option_turns_it_off(kind: str, tmp_path: Path) -> None:
    p = _open(_target(kind, tmp_path))
    try:
        ids = await _seed(p)
        agent = Agent(
            FunctionModel(_reply), capabilities=[MemoryCapability(p, session_id="s1", user_id="alice", recall=False, capture=False)]
        )
        await agent.run("hello")
        await p.flush()
        assert ids["a_old"] not in await _ids(p, "alice")
        assert [e.id for e in await p.events(user_id="alice") if e.event == "archived"] == [ids["a_old"]]
        quiet = Agent(
            FunctionModel(_reply),
            capabilities=[MemoryCapability(p, session_id="s2", user_id="bob", recall=False, capture=False, tidy=False)],
        )
        await quiet.run("hello")
        await p.flush()
        assert await _ids(p, "bob") == {ids["b_old"], ids["b_new"], ids["b_exp"]}
    finally:
        await p.aclose()


def _cli(root: str, *args: str) -> Any:
    proc = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", root, *args, "--json"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _line(rid: str, user: str, content: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": rid,
        "title": content[:20],
        "kind": "fact",
        "scope": "user",
        "user_id": user,
        "content": content,
        "created": "2026-01-01T00:00:00.000000Z",
        "updated": fields.pop("updated", "2026-01-01T00:00:00.000000Z"),
        **fields,
    }


def _expire(target: str, content: str) -> None:
    """Make the record holding ``content`` expired, as time passing would (a past expiry is refused on write)."""
    if target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute("UPDATE agent_memory.records SET expires = now() - interval '1 day' WHERE content = %s", (content,))
        return
    [path] = [f for f in (Path(target) / "records").rglob("*.md") if content in f.read_text(encoding="utf-8")]
    path.write_text(
        re.sub(r"(?m)^expires: .*$", "expires: '2026-02-01T00:00:00.000000Z'", path.read_text(encoding="utf-8")), encoding="utf-8"
    )


@pytest.mark.parametrize("kind", KINDS)
def test_cli_tidy_archives_an_expired_record_and_a_duplicate_and_undo_brings_them_back(kind: str, tmp_path: Path) -> None:
    target = _target(kind, tmp_path)
    lines = [
        _line("2026-01-01-exp-00000001", "alice", "The staging server is db-old.", expires="2030-02-01T00:00:00.000000Z"),
        _line("2026-01-01-dup-00000002", "alice", "Alice  drinks green tea."),
        _line("2026-01-01-dup-00000003", "alice", "Alice drinks green tea.", updated="2026-03-01T00:00:00.000000Z"),
        _line("2026-01-01-bob-00000004", "bob", "Bob  rides a red bike."),
        _line("2026-01-01-bob-00000005", "bob", "Bob rides a red bike.", updated="2026-03-01T00:00:00.000000Z"),
    ]
    src = tmp_path / "in.jsonl"
    src.write_text('{"format":"agent-memory","version":1}\n' + "".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    if kind == "files":
        _cli(target, "init")
    imported = _cli(target, "import", str(src))
    assert imported["written"] == 5, imported
    _expire(target, "The staging server is db-old.")

    def alice() -> dict[str, str]:
        return {r["content"]: r["id"] for r in _cli(target, "list", "--user", "alice")["records"]}

    before = alice()
    assert len(before) == 2  # the expired one is already invisible
    plan = _cli(target, "tidy", "--user", "alice", "--dry-run", "--max-share", "1")
    assert plan["applied"] == 0 and len(plan["changes"]) == 2
    done = _cli(target, "tidy", "--user", "alice", "--max-share", "1")
    applied = {c["rule"]: c["record_id"] for c in done["changes"] if c["status"] == "applied"}
    assert set(applied) == {"ttl", "duplicate"} and applied["duplicate"] == before["Alice  drinks green tea."]
    assert alice() == {"Alice drinks green tea.": before["Alice drinks green tea."]}
    assert len(_cli(target, "list", "--user", "bob")["records"]) == 2  # bob's copies are his, untouched
    events = _cli(target, "events", "--user", "alice")["events"]
    assert {e["id"] for e in events if e["event"] == "archived"} == set(applied.values())
    _cli(target, "undo", "--user", "alice")
    _cli(target, "undo", "--user", "alice")
    assert before["Alice  drinks green tea."] in alice().values()


def test_plan_is_pure_and_normalizes_only_whitespace_and_unicode() -> None:
    def rec(i: int, content: str, **kw: Any) -> MemoryRecord:
        return MemoryRecord(
            id=f"r{i}", content=content, scope=Scope.USER, user_id=kw.pop("user_id", "alice"), updated=f"2026-01-0{i}", **kw
        )

    records = [
        rec(1, "Café  au lait"),
        rec(2, "Cafe\u0301 au lait"),  # the same text in NFD
        rec(3, "café au lait"),  # case differs: not the same content
        rec(4, "Café au lait", user_id="bob"),  # another partition
        rec(5, "Café au lait", superseded_by="r2"),  # history, never a duplicate
    ]
    changes = plan_tidy(records, now=LATER, base=Path("/"))
    assert [(c.rule, c.record_id, c.related) for c in changes] == [("duplicate", "r1", ["r2"])]
    assert normalized(" a \t b\n") == "a b"
    assert tidy_limit(0.01, 0) == 0 and tidy_limit(0.01, 10) == 1 and tidy_limit(0.01, 1000) == 10
    with pytest.raises(InvalidInputError):
        plan_tidy(records, now=LATER, base=Path("/"), rules=("merge",))


async def test_run_end_never_waits_for_the_tidy_pass(tmp_path: Path) -> None:
    p = _open(str(tmp_path / "root"))
    gate = asyncio.Event()
    real = p.tidy

    async def slow(**kw: Any) -> Any:
        await gate.wait()
        return await real(**kw)

    p.tidy = slow  # type: ignore[method-assign]
    try:
        hooks = MemoryHooks(p, session_id="s1", user_id="alice", recall=False, capture=False)
        await asyncio.wait_for(hooks.on_run_end("a goal", "done"), 10)  # returns while the pass still waits
        assert p.pending == 1
        gate.set()
        [report] = [r for r in await p.flush() if r is not None]
        assert report.total == 0 and report.index_refreshed
    finally:
        await p.aclose()


async def test_tidy_in_background_coalesces_one_pass_per_caller(tmp_path: Path) -> None:
    p = _open(str(tmp_path / "root"))
    try:
        a = p.tidy_in_background(user_id="alice")
        b = p.tidy_in_background(user_id="alice")
        c = p.tidy_in_background(user_id="bob")
        assert a is b and a is not c
        await p.flush()
        assert a.done() and c.done()
        await asyncio.sleep(0)
    finally:
        await p.aclose()


@pytest.mark.parametrize("kind", KINDS)
async def test_after_runs_end_an_expired_record_and_a_duplicate_are_archived_with_events_and_undo_restores(
    kind: str, tmp_path: Path
) -> None:
    """The issue's minimum, end to end: real agent runs through the capability, a record whose expiry passed (as time
    passing makes it: edited in the store) and a duplicate; one change per run end on this small store."""
    target = _target(kind, tmp_path)
    p = _open(target)
    try:
        ids = await _seed(p)
        await asyncio.to_thread(_expire, target, "The staging server is db-old.")
        if kind == "files":
            await p.reindex()  # the in-place edit seen now rather than at the next periodic rescan
        agent = Agent(FunctionModel(_reply), capabilities=[MemoryCapability(p, session_id="s1", user_id="alice", recall=False)])
        await agent.run("first run")
        await p.flush()
        await agent.run("second run")
        await p.flush()
        archived = {e.id: e for e in await p.events(user_id="alice") if e.event == "archived"}
        assert set(archived) == {ids["a_exp"], ids["a_old"]}
        assert {e.detail.get("rule") for e in archived.values()} == {"ttl", "duplicate"}
        assert ids["a_old"] not in await _ids(p, "alice") and ids["a_new"] in await _ids(p, "alice")
        assert await _ids(p, "bob") == {ids["b_old"], ids["b_new"], ids["b_exp"]}
        await p.undo(user_id="alice")
        await p.undo(user_id="alice")
        assert ids["a_old"] in await _ids(p, "alice")
        assert {e.id for e in await p.events(user_id="alice") if e.event == "undone"} == {ids["a_exp"], ids["a_old"]}
    finally:
        await p.aclose()


def test_under_run_sync_the_pass_runs_inside_the_run(tmp_path: Path) -> None:
    """``run_sync`` ends its loop with the run: a background pass would be lost, so it is awaited inside the run."""
    p = _open(str(tmp_path / "root"))
    ids = asyncio.run(_seed(p))
    agent = Agent(FunctionModel(_reply), capabilities=[MemoryCapability(p, session_id="s1", user_id="alice", recall=False, capture=False)])
    agent.run_sync("hello")
    assert p.pending == 0
    assert ids["a_old"] not in asyncio.run(_ids(p, "alice"))
    p.close()
