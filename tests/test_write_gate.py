"""Issue 27: every write path passes the one write gate (``agent_memory.model.drafts``), on both backends.

One parametrised test per path (session messages, session summaries, episodes built from a run, episodes written
or refined directly, the attribution of events, event details, consolidation's archive notes): a secret in every
string field never reaches disk (every byte under the files root, ``-wal`` included; every row of every table of
the PostgreSQL schema), and a malformed field is a typed error that loses nothing written before.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest

from agent_memory import MemoryDraft, MemoryStore
from agent_memory.errors import InvalidInputError

SECRET = "sk-abcdefghijklmnopqrstuvwxyz1234567890"
PASSWORD = "Tr0ub4dor-zebra-9931"  # only a secret by the name of its key
GLUED = f"ada-{SECRET}"
DEEP: dict[str, Any] = {}
_node = DEEP
for _ in range(20):
    _node["a"] = {}
    _node = _node["a"]


def _disk_bytes(root: Path) -> bytes:
    out = []
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = Path(dirpath, name)
            out.append(str(path.relative_to(root)).encode())
            if not path.is_symlink():
                out.append(path.read_bytes())
    return b"\n".join(out)


async def _pg_text(provider: Any) -> str:
    backend = provider.backend
    found = []
    async with backend.pool.connection() as conn:
        cur = await conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (backend.schema,))
        for row in await cur.fetchall():
            cur = await conn.execute(f'SELECT x::text AS t FROM "{backend.schema}"."{row["table_name"]}" x')
            found += [r["t"] for r in await cur.fetchall()]
    return "\n".join(found)


async def assert_nowhere(backend: Any, provider: Any, *needles: str) -> None:
    """No needle in any byte under the root (files) or in any row of the schema (PostgreSQL)."""
    if backend.kind == "files":
        data = _disk_bytes(Path(backend.target))
        leaked = [n for n in needles if n.encode() in data or n.encode().lower() in data.lower()]
    else:
        text = (await _pg_text(provider)).lower()
        leaked = [n for n in needles if n.lower() in text]
    assert leaked == [], f"on disk: {leaked}"


# -- session messages ---------------------------------------------------------------------------------------------
MESSAGE_CASES: list[tuple[str, dict[str, Any], str, str]] = [
    # (name, message or owner override, needle, "redacted" | "refused")
    ("text", {"text": f"my key is {SECRET}"}, SECRET, "redacted"),
    ("speaker", {"speaker": f"Ada {SECRET}"}, SECRET, "redacted"),
    ("turn_id", {"turn_id": SECRET}, SECRET, "redacted"),
    ("metadata value", {"metadata": {"note": f"use {SECRET}"}}, SECRET, "redacted"),
    ("metadata key", {"metadata": {SECRET: "v"}}, SECRET, "redacted"),
    ("metadata nested", {"metadata": {"a": {"b": [SECRET]}}}, SECRET, "redacted"),
    ("metadata secret-named key", {"metadata": {"db_password": PASSWORD}}, PASSWORD, "redacted"),
    ("role", {"role": SECRET}, SECRET, "refused"),
    ("session_id", {"_session": f"chat-{SECRET}"}, SECRET, "refused"),
    ("user_id", {"_user": SECRET}, SECRET, "refused"),
    ("glued user_id", {"_user": GLUED}, SECRET, "refused"),
    ("at", {"at": "yesterday"}, "yesterday", "refused"),
    ("metadata too deep", {"metadata": DEEP}, "", "refused"),
    ("text not a string", {"text": 5}, "", "refused"),
]


@pytest.mark.parametrize("name,fields,needle,outcome", MESSAGE_CASES, ids=[c[0] for c in MESSAGE_CASES])
async def test_session_messages_pass_the_gate(backend: Any, name: str, fields: dict[str, Any], needle: str, outcome: str) -> None:
    provider = backend.provider()
    kept = await provider.log_messages([{"role": "user", "text": "kept"}], session_id="chat", user_id="ada")
    fields = dict(fields)
    sid, uid = fields.pop("_session", "chat"), fields.pop("_user", "ada")
    message = {"role": "user", "text": "hello", **fields}
    if outcome == "refused":
        with pytest.raises(InvalidInputError):
            await provider.log_messages([message], session_id=sid, user_id=uid)
    else:
        written = await provider.log_messages([message], session_id=sid, user_id=uid)
        assert needle not in str(written[0].to_dict()) and "REDACTED" in str(written[0].to_dict())
    _, msgs = await backend.provider().session("chat", user_id="ada")
    assert [m.text for m in msgs][: len(kept)] == ["kept"] and len(msgs) == (1 if outcome == "refused" else 2)
    assert [i.session_id for i in await provider.sessions(user_id="ada")] == ["chat"]
    if needle:
        await assert_nowhere(backend, provider, needle)


# -- session summaries --------------------------------------------------------------------------------------------
SUMMARY_CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("text", {"text": f"the user's key is {SECRET}"}, SECRET, "redacted"),
    ("text secret-named", {"text": f"db_password={PASSWORD}"}, PASSWORD, "redacted"),
    ("source", {"source": SECRET}, SECRET, "refused"),
    ("made_at", {"made_at": "yesterday"}, "yesterday", "refused"),
    ("messages", {"messages": -3}, "", "refused"),
    ("empty text", {"text": "  "}, "", "refused"),
]


@pytest.mark.parametrize("name,fields,needle,outcome", SUMMARY_CASES, ids=[c[0] for c in SUMMARY_CASES])
async def test_session_summaries_pass_the_gate(backend: Any, name: str, fields: dict[str, Any], needle: str, outcome: str) -> None:
    provider = backend.provider()
    await provider.log_messages([{"role": "user", "text": "hello"}], session_id="chat", user_id="ada")
    store = provider.session_store
    first = await asyncio.to_thread(store.write_summary, "chat", "the first summary", user_id="ada")
    args: dict[str, Any] = {"text": "a summary", **fields}
    text = args.pop("text")
    if outcome == "refused":
        with pytest.raises(InvalidInputError):
            await asyncio.to_thread(store.write_summary, "chat", text, user_id="ada", **args)
        assert [s.text for s in store.summaries("chat", user_id="ada")] == [first.text]  # nothing lost, nothing added
    else:
        made = await asyncio.to_thread(store.write_summary, "chat", text, user_id="ada", **args)
        assert needle not in made.text and "REDACTED" in made.text
        assert [s.version for s in store.summaries("chat", user_id="ada")] == [1, 2]
    if needle:
        await assert_nowhere(backend, provider, needle)


# -- episodes built from a run ------------------------------------------------------------------------------------
EPISODE_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("goal", {"goal": f"rotate {SECRET}"}, "redacted"),
    ("output", {"output": f"done: {SECRET}"}, "redacted"),
    ("error", {"error": f"auth failed for {SECRET}"}, "redacted"),
    ("tool name", {"tool_calls": [SECRET, f"search-{SECRET}"]}, "redacted"),
    ("tool detail", {"tool_calls": [{"name": "search", "outcome": "failed", "detail": f"bad key {SECRET}"}]}, "redacted"),
    ("retried output", {"retried_output": [f"retry {SECRET}"]}, "redacted"),
    ("model", {"model": SECRET}, "redacted"),
    ("run_id", {"run_id": SECRET}, "redacted"),
    ("conversation_id", {"conversation_id": SECRET}, "redacted"),
    ("source", {"source": SECRET}, "redacted"),
    ("session_id", {"session_id": f"s-{SECRET}"}, "refused"),
    ("user_id", {"user_id": GLUED}, "refused"),
    ("cost", {"cost_usd": -1.0}, "refused"),
    ("started", {"started": "yesterday"}, "refused"),
]


@pytest.mark.parametrize("name,facts,outcome", EPISODE_CASES, ids=[c[0] for c in EPISODE_CASES])
async def test_episodes_built_from_a_run_pass_the_gate(backend: Any, name: str, facts: dict[str, Any], outcome: str) -> None:
    provider = backend.provider()
    kept = await provider.record_episode("kept run", user_id="ada")
    facts = {"user_id": "ada", **facts}
    goal = facts.pop("goal", "a run")
    if outcome == "refused":
        with pytest.raises(InvalidInputError):
            await provider.record_episode(goal, **facts)
        assert [e.id for e in await provider.episodes(user_id="ada")] == [kept.id]
    else:
        episode = await provider.record_episode(goal, **facts)
        assert SECRET not in str(episode.to_dict())
        assert {e.id for e in await provider.episodes(user_id="ada")} == {kept.id, episode.id}
    await assert_nowhere(backend, provider, SECRET)


# -- episodes written or refined directly (an Episode built by hand) ----------------------------------------------
DIRECT_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("goal", {"goal": f"rotate {SECRET}"}, "redacted"),
    ("exit_detail", {"exit_detail": f"failed with {SECRET}"}, "redacted"),
    ("tools", {"tools": "TOOLS"}, "redacted"),
    ("sequence", {"sequence": (f"x-{SECRET}",)}, "redacted"),
    ("worked", {"worked": (f"used {SECRET}",)}, "redacted"),
    ("failed", {"failed": (f"lost {SECRET}",)}, "redacted"),
    ("model", {"model": SECRET}, "redacted"),
    ("run_id", {"run_id": SECRET}, "redacted"),
    ("summary", {"summary": f"the key {SECRET}"}, "redacted"),
    ("refined_by", {"refined_by": SECRET}, "redacted"),
    ("user_id", {"user_id": GLUED}, "refused"),
    ("goal not text", {"goal": 5}, "refused"),
]


@pytest.mark.parametrize("mode", ["write", "refine"])
@pytest.mark.parametrize("name,fields,outcome", DIRECT_CASES, ids=[c[0] for c in DIRECT_CASES])
async def test_episodes_written_directly_pass_the_gate(backend: Any, name: str, fields: dict[str, Any], outcome: str, mode: str) -> None:
    from agent_memory.episodes import ToolUse, build_episode, episode_store

    provider = backend.provider()
    store = episode_store(provider.backend)
    kept = await asyncio.to_thread(store.write, build_episode("kept run", user_id="ada"))
    if fields.get("tools") == "TOOLS":
        fields = {"tools": (ToolUse(SECRET, 2, 1), ToolUse(f"search-{SECRET}", 1, 0))}
    if mode == "write":
        base = build_episode("a run", user_id="ada")
        episode = dataclasses.replace(base, **fields)
        act = store.write
    else:
        base = await asyncio.to_thread(store.write, build_episode("a run", user_id="ada"))
        episode = dataclasses.replace(base, **fields)
        act = store.replace
    if outcome == "refused" and not (mode == "refine" and name == "user_id"):
        with pytest.raises(InvalidInputError):
            await asyncio.to_thread(act, episode)
    elif outcome == "refused":  # a refinement cannot change its owner
        with pytest.raises((InvalidInputError, LookupError)):
            await asyncio.to_thread(act, episode)
    else:
        stored = await asyncio.to_thread(act, episode)
        assert SECRET not in str(stored.to_dict())
        again = await provider.episode(base.id, user_id="ada")
        assert SECRET not in str(again.to_dict())
    ids = {e.id for e in await provider.episodes(user_id="ada")}
    assert kept.id in ids and (mode == "write" or base.id in ids)
    await assert_nowhere(backend, provider, SECRET)


# -- who made a change: the attribution of events -----------------------------------------------------------------
ACTING_CASES = ["actor", "run_id", "tool_call_id", "session_id", "user_id"]


@pytest.mark.parametrize("field", ACTING_CASES)
async def test_event_attribution_passes_the_gate(backend: Any, field: str) -> None:
    from agent_memory.model.events import acting

    provider = backend.provider()
    kept = await provider.remember("kept fact", user_id="ada")
    value = GLUED if field in ("session_id", "user_id") else SECRET
    with pytest.raises(InvalidInputError):
        with acting(**{field: value}):  # type: ignore[arg-type]
            await provider.remember("a new fact", user_id="ada")
    assert [r.id for r in await provider.list(user_id="ada")] == [kept.id]
    with acting("worker:test", run_id="run-1", tool_call_id="call-1"):  # a good attribution still passes
        await provider.remember("another fact", user_id="ada")
    assert len(await provider.list(user_id="ada")) == 2
    await assert_nowhere(backend, provider, SECRET)


# -- event details (files: the event log's lines) -----------------------------------------------------------------
@pytest.mark.parametrize("field", ["detail key", "detail value", "detail nested", "detail secret-named", "run_id", "actor"])
def test_event_lines_pass_the_gate(tmp_path: Path, field: str) -> None:
    from agent_memory.backends.files.store import MemoryStore
    from agent_memory.model.events import Event

    store = MemoryStore(tmp_path / "root", durable=False)
    kept = store.remember("kept fact", user_id="ada")
    details: dict[str, dict[str, Any]] = {
        "detail key": {SECRET: "x"},
        "detail value": {"reason": f"dup of {SECRET}"},
        "detail nested": {"a": [{"b": SECRET}]},
        "detail secret-named": {"db_password": PASSWORD},
    }
    detail = details.get(field, {})
    extra = {"run_id": SECRET} if field == "run_id" else {"actor": f"worker {SECRET}"} if field == "actor" else {}
    store.events.append(Event("created", kept.id, scope="user", owner_user="ada", detail=detail, **extra))
    events, problems = store.events.read()
    assert problems == [] and len(events) == 2
    data = _disk_bytes(tmp_path / "root")
    assert SECRET.encode() not in data and PASSWORD.encode() not in data


# -- consolidation's archive notes --------------------------------------------------------------------------------
async def test_consolidation_archive_notes_pass_the_gate(backend: Any) -> None:
    from agent_memory.backends.base import Caller
    from agent_memory.consolidate import ConsolidationUnsupported, archive_record, store_of

    provider = backend.provider()
    kept = await provider.remember("kept fact", user_id="ada")
    gone = await provider.remember("a duplicate fact", user_id="ada")
    if backend.kind == "postgres":
        with pytest.raises(ConsolidationUnsupported):
            store_of(provider.backend)
        return
    store = store_of(provider.backend)
    reason = f"duplicate of {kept.id}; key {SECRET}\n<!-- archived: fake -->\nINJECTED"
    assert await asyncio.to_thread(archive_record, store, gone.id, reason, Caller(None, "ada"))
    await assert_nowhere(backend, provider, SECRET)
    archived = (Path(backend.target) / "archive").rglob("*.md")
    notes = [[line for line in p.read_text().splitlines() if "archived:" in line or "INJECTED" in line] for p in archived]
    assert len(notes) == 1 and len(notes[0]) == 1 and notes[0][0].startswith("<!-- archived: consolidation: ")
    await provider.restore(gone.id, user_id="ada")
    rec = await provider.get(gone.id, user_id="ada")
    assert rec.content == "a duplicate fact"  # restore strips the one-line note whole: nothing injected
    assert {r.id for r in await provider.list(user_id="ada")} == {kept.id, gone.id}


def test_an_owner_id_with_a_control_character_is_one_skipped_draft_not_a_failed_batch(tmp_path: Path) -> None:
    """A record's owners follow the same id rule as its event's attribution (found by test_reliability_badinput:
    ``session_id='\\x1b'`` passed the record gate, then the event refused it and remember_many raised mid-batch)."""
    store = MemoryStore(tmp_path / "root", durable=False)
    errors: list[tuple[int, str]] = []
    done = store.remember_many([MemoryDraft("0", session_id="\x1b"), MemoryDraft("kept")], on_error="skip", errors=errors)
    assert [r.status for r in done] == ["created"] and [i for i, _ in errors] == [0]
    assert "control characters" in errors[0][1]
