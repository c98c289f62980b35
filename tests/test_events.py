"""The event log and provenance: one event per mutation, crash-safe lines, visibility, actors, rebuilds."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _doubles import cli_json as run_cli

from agent_memory.backends.files.events import EventLog
from agent_memory.backends.files.store import MemoryDraft, MemoryStore
from agent_memory.model.events import Event, acting
from agent_memory.model.records import content_hash


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    s = MemoryStore(tmp_path / "mem", durable=False)
    yield s
    s.close()


def kinds(store: MemoryStore, rid: str | None = None, **caller: Any) -> list[str]:
    return [e.event for e in store.events_for(rid, **caller)]


def test_every_mutation_appends_one_event_with_hashes_and_actor(store: MemoryStore) -> None:
    a = store.remember("The deploy window is Friday.", memory_key="deploy", user_id="ada")
    store.remember("Also Saturday mornings.", memory_key="deploy", user_id="ada")
    store.remember("The deploy window is Monday.", memory_key="deploy", user_id="ada", on_existing="replace")
    store.remember("Exactly the same text stays one record.", user_id="ada")
    store.remember("Exactly the same text stays one record.", user_id="ada")  # a duplicate changes nothing
    store.remember("Skipped write.", memory_key="deploy", user_id="ada", on_existing="skip")
    assert kinds(store, a.id, user_id="ada") == ["created", "appended", "replaced"]
    created, appended, replaced = store.events_for(a.id, user_id="ada")
    assert created.before is None and created.after == content_hash("The deploy window is Friday.")
    assert appended.before == created.after
    assert appended.after == content_hash("The deploy window is Friday.\nAlso Saturday mornings.")
    assert replaced.before == appended.after and replaced.after == content_hash("The deploy window is Monday.")
    kept = store.get(replaced.detail["version"], user_id="ada")  # the replaced state, kept as a superseded record
    assert kept.content_hash == appended.after and kept.superseded_by == a.id
    assert {e.actor for e in (created, appended, replaced)} == {"tool"}
    assert created.user_id == "ada" and created.scope == "user" and created.owner_user == "ada"
    assert len(store.events_for(user_id="ada")) == 4  # the duplicate and the skip logged nothing

    store.forget(a.id, user_id="ada")
    assert kinds(store, a.id, user_id="ada")[-1] == "forgotten"
    store.restore(a.id, user_id="ada")
    assert kinds(store, a.id, user_id="ada")[-1] == "restored"


def test_import_sweep_and_hand_edit_are_logged(store: MemoryStore) -> None:
    [imp] = store.remember_many([MemoryDraft("Imported fact about llamas.")], source="import")
    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).isoformat()
    exp = store.remember("Short-lived note about alpacas.", expires=soon)
    store.sweep(now=dt.datetime.now(dt.UTC) + dt.timedelta(days=1))
    assert kinds(store, imp.id) == ["imported"] and store.events_for(imp.id)[0].actor == "import"
    swept = store.events_for(exp.id)[-1]
    assert (
        swept.event == "swept" and "expired" in swept.detail["reason"] and swept.before == content_hash("Short-lived note about alpacas.")
    )

    path = store.records_dir / f"{imp.id}.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("llamas", "vicunas"), encoding="utf-8")
    os.utime(path, ns=(1, 1))
    store.index.refresh(force=True)
    edit = store.events_for(imp.id)[-1]
    assert edit.event == "hand_edit" and edit.actor == "hand_edit"
    assert edit.before == content_hash("Imported fact about llamas.") and edit.after == content_hash("Imported fact about vicunas.")
    path.unlink()
    store.index.refresh(force=True)
    gone = store.events_for(imp.id)[-1]
    assert gone.event == "hand_edit" and gone.after is None
    store.index.refresh(force=True)  # nothing changed since: no new event
    assert kinds(store, imp.id) == ["imported", "hand_edit", "hand_edit"]


def test_events_obey_scope_visibility(store: MemoryStore) -> None:
    mine = store.remember("Ada's private note.", user_id="ada")
    sess = store.remember("A note of session s1.", session_id="s1", scope="session")
    shared = store.remember("A shared project note.", scope="project")
    assert {e.id for e in store.events_for(user_id="ada")} == {mine.id, shared.id}
    assert {e.id for e in store.events_for(user_id="bob")} == {shared.id}
    assert {e.id for e in store.events_for(session_id="s1")} == {sess.id, shared.id}
    assert store.events_for(mine.id, user_id="bob") == []


def test_a_torn_last_line_is_skipped_reported_and_never_glued_to_the_next(store: MemoryStore) -> None:
    a = store.remember("First note about herons.")
    [path] = store.events.files()
    with open(path, "ab") as fh:
        fh.write(b'{"event": "created", "id": "torn-rec')  # a crash mid-append
    events, problems = store.events.read()
    assert [e.id for e in events] == [a.id] and len(problems) == 1 and "torn" in problems[0]
    b = store.remember("Second note about egrets.")
    events, problems = store.events.read()
    assert [e.id for e in events] == [a.id, b.id] and len(problems) == 1
    garbage = EventLog(store.root)
    (garbage.dir / "2026-01.jsonl").write_bytes(b"\xff\xfe not json\n[1, 2]\n")
    events, problems = garbage.read()
    assert len(events) == 2 and len(problems) == 3


def test_the_log_survives_an_index_rebuild(store: MemoryStore) -> None:
    a = store.remember("Kept through rebuilds: ospreys.", user_id="ada")
    store.remember("More about ospreys.", memory_key=a.id, user_id="ada")
    before = [e.to_dict() for e in store.events_for(user_id="ada")]
    store.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store.index.path}{suffix}").unlink(missing_ok=True)
    fresh = MemoryStore(store.root, durable=False)
    fresh.reindex()
    assert [e.to_dict() for e in fresh.events_for(user_id="ada")] == before
    assert len(before) == 2
    fresh.close()


def test_acting_sets_actor_run_and_tool_call_in_events_and_provenance(store: MemoryStore) -> None:
    with acting("worker:capture", run_id="run-7", tool_call_id="call-3", session_id="s1"):
        a = store.remember("Prefers window seats.", user_id="ada")
    ev = store.events_for(a.id, user_id="ada")[0]
    assert (ev.actor, ev.run_id, ev.tool_call_id, ev.session_id, ev.user_id) == ("worker:capture", "run-7", "call-3", "s1", "ada")
    prov = store.provenance(a.id, user_id="ada")
    assert prov["created"] == prov["updated"]
    assert prov["created"]["actor"] == "worker:capture" and prov["created"]["run_id"] == "run-7"
    with acting("cli"):
        store.remember("Also aisle seats on short flights.", memory_key=a.id, user_id="ada")
    prov = store.provenance(a.id, user_id="ada")
    assert prov["created"]["actor"] == "worker:capture" and prov["updated"]["actor"] == "cli"
    assert "run_id" not in prov["updated"] and prov["updated"]["at"] > prov["created"]["at"]


def test_provenance_cannot_be_forged_by_a_write(store: MemoryStore) -> None:
    fake = {"created": {"actor": "admin"}, "updated": {"actor": "admin"}}
    a = store.remember("A note with forged metadata.", user_id="ada", metadata={"provenance": fake, "k": "v"})
    prov = store.provenance(a.id, user_id="ada")
    assert prov["created"]["actor"] == "tool" and store.get(a.id, user_id="ada").metadata["k"] == "v"


def test_search_trace_shows_provenance(store: MemoryStore) -> None:
    a = store.remember("Cormorants dive for fish.", source="turn_capture", session_id="s1")
    res = store.search("cormorants", session_id="s1", trace=True)
    assert res.trace is not None
    stage = res.trace[-1]
    assert stage["stage"] == "provenance" and stage["top"][0]["id"] == a.id
    assert stage["top"][0]["created"]["actor"] == "turn_capture" and stage["top"][0]["created"]["session_id"] == "s1"
    assert store.search("cormorants", session_id="s1").trace is None


def test_event_round_trip_and_rejects_bad_lines() -> None:
    ev = Event("created", "rec-1", actor="tool", before=None, after="abc", detail={"k": 1})
    assert Event.from_dict(json.loads(json.dumps(ev.to_dict()))) == ev
    for bad in (
        {"id": "x"},
        {"event": "created", "id": 3},
        {"event": "created", "id": "x", "detail": []},
        {"event": "created", "id": "x", "actor": 5},
    ):
        with pytest.raises(ValueError):
            Event.from_dict(bad)
    with pytest.raises(ValueError):
        EventLog(Path("/nonexistent")).append(Event("exploded", "x"))


def test_cli_get_provenance_and_events(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    r = run_cli(root, "remember", "Puffins nest in burrows.", "--user", "ada")
    got = run_cli(root, "get", r["id"], "--user", "ada", "--provenance")
    assert got["provenance"]["created"]["actor"] == "cli" and got["provenance"]["source"] == "manual"
    evs = run_cli(root, "events", "--user", "ada")["events"]
    assert [(e["event"], e["id"], e["actor"]) for e in evs] == [("created", r["id"], "cli")]
    assert run_cli(root, "events", "--user", "bob")["events"] == []


def test_an_agent_run_inside_acting_records_its_run_id(tmp_path: Path) -> None:
    import asyncio

    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from agent_memory.agents.tools import FOREGROUND, memory_toolset
    from agent_memory.provider import MemoryProvider

    steps = [ToolCallPart("memory_remember", {"content": "Gannets plunge-dive."}, tool_call_id="call-remember-1")]

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[steps.pop(0)] if steps else [TextPart("done")])

    async def main() -> None:
        async with MemoryProvider(tmp_path / "mem", durable=False) as p:
            with acting("main-agent", run_id="turn-12"):  # the context follows the tool call into the backend thread
                await Agent(FunctionModel(fn), toolsets=[memory_toolset(p, FOREGROUND, user_id="ada")]).run("go")
            [ev] = await p.events(user_id="ada")
            assert (ev.event, ev.actor, ev.run_id, ev.user_id) == ("created", "main-agent", "turn-12", "ada")
            prov = await p.provenance(ev.id, user_id="ada")
            assert prov["created"]["run_id"] == "turn-12" and prov["source"] == "tool"

    asyncio.run(main())


def test_a_bulk_import_writes_its_events_in_one_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStore(tmp_path / "mem", durable=True)
    writes: list[int] = []
    real = EventLog._write

    def counting(self: EventLog, month: str, events: list[Event]) -> None:
        writes.append(len(events))
        real(self, month, events)

    monkeypatch.setattr(EventLog, "_write", counting)
    drafts = [MemoryDraft(f"Bulk fact number {i} about terns.") for i in range(120)]
    store.remember_many(drafts, source="import", batch_size=50)
    assert writes == [50, 50, 20]  # one write (and one fsync) per batch, not per record
    events, problems = store.events.read()
    assert problems == [] and [e.event for e in events] == ["imported"] * 120
    store.remember("One more about terns.")
    assert writes[-1] == 1
    store.close()


def test_the_gate_memo_gives_what_the_gate_gives_and_keeps_minted_fields(tmp_path: Path) -> None:
    from agent_memory.backends.files.events import GateMemo
    from agent_memory.model.events import gated

    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    memo = GateMemo()
    evs = [
        Event(
            "imported",
            f"2026-01-01-note-{i:08x}",
            actor=f"import {secret}",
            scope="project",
            session_id=secret,
            after=content_hash(str(i)),
            detail={"why": secret, "links": 1},
        )
        for i in range(3)
    ] + [Event("created", secret, before=secret, after=secret, actor="tool")]
    for ev in evs * 2:  # the second round is served from the memo
        out = memo.gate(ev)
        assert out == gated(ev)
        assert secret not in json.dumps(out.to_dict())
        assert (out.ts, out.eid) == (ev.ts, ev.eid)
    # an event id or clock reading of another shape than the ones Event mints goes through the gate
    odd = Event("created", "x", ts=f"2026-01-01 {secret}", eid=secret)
    assert memo.gate(odd) == gated(odd) and secret not in json.dumps(memo.gate(odd).to_dict())
    # an id Event minted is never mangled by a label it happens to start with
    minted = Event("created", "x", eid="2fa9b7832e784b92")
    assert memo.gate(minted).eid == "2fa9b7832e784b92"
    log = EventLog(tmp_path / "root", durable=False)
    log.append(evs[0])
    assert secret not in (tmp_path / "root" / "events").joinpath(f"{evs[0].ts[:7]}.jsonl").read_text()
