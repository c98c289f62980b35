"""Links between memories (``[[id]]``/``[[Title]]``): parsing, resolution for the caller, every write path, both backends.

Each backend test runs on files and on PostgreSQL (the ``backend`` fixture); alice never learns of bob's records
through a link, and the link table follows replace, append, supersede, forget, undo, restore, purge, reindex and an
export/import round trip.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agent_memory.backends.base import Caller
from agent_memory.errors import NotFoundError
from agent_memory.model.drafts import MemoryDraft
from agent_memory.model.links import MAX_LINKS, MAX_TARGET, RecordLinks, parse_links, title_key


def out(links: RecordLinks) -> list[tuple[str, str | None]]:
    return [(x.target, x.record_id) for x in links.outgoing]


def back(links: RecordLinks) -> list[str]:
    return sorted(x.record_id for x in links.backlinks)


# -- parsing ------------------------------------------------------------------------------------------------------


def test_parse_links_skips_code_keeps_order_and_is_bounded() -> None:
    text = (
        "See [[Sea otters]] and [[Kelp|the kelp]], again [[Sea otters]].\n"
        "Inline `[[not a link]]` is code.\n"
        "```\n[[fenced]]\n```\n"
        "[[ Two   words ]] [[]] [[split\nline]] [[a [[nested]] b]]"
    )
    assert [x.target for x in parse_links(text)] == ["Sea otters", "Kelp", "Two words", "nested"]
    assert parse_links("no links here") == ()
    assert parse_links("[[" + "x" * (MAX_TARGET + 1) + "]]") == ()
    many = " ".join(f"[[t{i}]]" for i in range(MAX_LINKS + 10))
    assert [x.target for x in parse_links(many)] == [f"t{i}" for i in range(MAX_LINKS)]
    assert title_key(" Sea   OTTERS ") == title_key("sea otters") == "sea otters"
    assert title_key("Ｓｅａ") == title_key("sea")  # NFKC: full-width letters


# -- resolution and visibility --------------------------------------------------------------------------------------


async def test_links_resolve_only_among_records_the_caller_may_see(backend: Any) -> None:
    m = backend.provider()
    kelp = await m.remember("Kelp forests shelter [[Sea otters]]; compare [[Bob plan]].", title="Kelp", scope="user", user_id="alice")
    early = await m.links(kelp.id, user_id="alice")
    assert out(early) == [("Sea otters", None), ("Bob plan", None)]  # written before its targets: unresolved

    otters = await m.remember(f"Otters eat urchins; see [[{kelp.id}]].", title="Sea otters", scope="user", user_id="alice")
    plan = await m.remember("Bob's private plan.", title="Bob plan", scope="user", user_id="bob")
    team = await m.remember("Team notes: [[Bob plan]] and [[kelp]].", title="Team notes", scope="project")

    alice = await m.links(kelp.id, user_id="alice")
    assert out(alice) == [("Sea otters", otters.id), ("Bob plan", None)]  # resolved once the target exists
    assert {(b.record_id, b.by) for b in alice.backlinks} == {(otters.id, "id"), (team.id, "title")}  # the shared record too
    # the shared record links alice's Kelp by title (case-insensitive) and bob's plan: each user sees only their own
    assert out(await m.links(team.id, user_id="alice")) == [("Bob plan", None), ("kelp", kelp.id)]
    assert out(await m.links(team.id, user_id="bob")) == [("Bob plan", plan.id), ("kelp", None)]
    assert back(await m.links(plan.id, user_id="bob")) == [team.id]  # alice's Kelp also names "Bob plan": hidden from bob
    assert plan.id not in json.dumps((await m.links(team.id, user_id="alice")).to_dict())

    with pytest.raises(NotFoundError):
        await m.links(kelp.id, user_id="bob")  # a hidden record's links: not found, as get says
    with pytest.raises(NotFoundError):
        await m.links(plan.id, user_id="alice")

    newer = await m.remember("Kelp, again", title="Kelp", scope="user", user_id="alice")  # a newer "Kelp": title links move
    assert out(await m.links(team.id, user_id="alice")) == [("Bob plan", None), ("kelp", newer.id)]
    assert back(await m.links(newer.id, user_id="alice")) == [team.id]
    assert back(await m.links(kelp.id, user_id="alice")) == [otters.id]  # the id link stays on the old one


async def test_links_follow_replace_append_supersede_forget_undo_restore_purge(backend: Any) -> None:
    m = backend.provider()
    me: dict[str, Any] = {"user_id": "alice"}
    target = await m.remember("Sea otters live in kelp.", title="Sea otters", scope="user", memory_key="otters", **me)
    src = await m.remember("Notes: [[Sea otters]].", title="Notes", scope="user", memory_key="notes", **me)
    assert back(await m.links(target.id, **me)) == [src.id]

    r = await m.remember("Notes: nothing linked.", scope="user", memory_key="notes", on_existing="replace", **me)
    assert r.status == "replaced" and r.id == src.id
    assert back(await m.links(target.id, **me)) == [] and out(await m.links(src.id, **me)) == []

    r = await m.remember(f"then [[{target.id}]]", scope="user", memory_key="notes", on_existing="append", **me)
    assert r.status == "appended"
    assert out(await m.links(src.id, **me)) == [(target.id, target.id)]
    assert [(b.record_id, b.by) for b in (await m.links(target.id, **me)).backlinks] == [(src.id, "id")]

    more = await m.remember("More on [[Sea otters]].", title="More", scope="user", **me)
    new = await m.supersede(target.id, MemoryDraft("Sea otters also live in estuaries.", title="Sea otters", scope="user", user_id="alice"))
    assert new.status == "superseded"
    assert out(await m.links(more.id, **me)) == [("Sea otters", new.id)]  # a title link follows the current fact
    assert back(await m.links(new.id, **me)) == [more.id]
    assert back(await m.links(target.id, **me)) == [src.id]  # an id link keeps naming the version it names

    assert await m.forget(new.id, **me)  # forgets the version it superseded too
    assert out(await m.links(more.id, **me)) == [("Sea otters", None)]
    assert out(await m.links(src.id, **me)) == [(target.id, None)]
    await m.undo(**me)
    assert out(await m.links(more.id, **me)) == [("Sea otters", new.id)]
    assert out(await m.links(src.id, **me)) == [(target.id, target.id)]

    assert await m.forget(more.id, **me)  # a forgotten source links nothing
    assert back(await m.links(new.id, **me)) == []
    await m.restore(more.id, **me)
    assert back(await m.links(new.id, **me)) == [more.id]

    report = await m.purge(new.id, **me)
    assert new.id in report.records
    with pytest.raises(NotFoundError):
        await m.links(new.id, **me)
    assert out(await m.links(more.id, **me)) == [("Sea otters", None)]  # purge leaves its backlinks unresolved
    assert out(await m.links(src.id, **me)) == [(target.id, None)]
    again = await m.remember("Sea otters, written anew.", title="Sea otters", scope="user", **me)
    assert out(await m.links(more.id, **me)) == [("Sea otters", again.id)]  # and they resolve when one appears


async def test_write_events_count_the_links_written(backend: Any) -> None:
    m = backend.provider()
    a = await m.remember("[[One]] and [[Two]] and `[[code]]`", title="Linker", scope="user", user_id="alice")
    b = await m.remember("no links", title="Plain", scope="user", user_id="alice")
    details = {e.id: e.detail for e in await m.events(user_id="alice")}
    assert details[a.id].get("links") == 2
    assert "links" not in details[b.id]


async def _drop_link_tables(backend: Any, m: Any) -> None:
    """Make the store look as if written before links existed (tables gone, migration step not applied)."""
    if backend.kind == "files":
        m.close()
        db = sqlite3.connect(Path(backend.target) / "index.db")
        db.executescript("DROP TABLE record_links; DROP TABLE record_titles; DELETE FROM meta WHERE key = 'links';")
        db.close()
        return
    import psycopg

    schema = backend.options["schema"]
    await m.aclose()
    async with await psycopg.AsyncConnection.connect(backend.target, autocommit=True) as conn:
        await conn.execute(f'DROP TABLE "{schema}".record_links, "{schema}".record_titles')
        await conn.execute(
            f'DELETE FROM "{schema}".schema_version WHERE version >= 8'
        )  # and every later one: migrate runs what is above the max


async def test_links_are_rebuilt_by_reindex_and_by_the_migration_of_an_older_store(backend: Any) -> None:
    m = backend.provider()
    kelp = await m.remember("Kelp: see [[Sea otters]].", title="Kelp", scope="user", user_id="alice")
    otters = await m.remember("Otters.", title="Sea otters", scope="user", user_id="alice")
    await m.reindex()
    assert out(await m.links(kelp.id, user_id="alice")) == [("Sea otters", otters.id)]
    await _drop_link_tables(backend, m)
    fresh = backend.provider()
    assert out(await fresh.links(kelp.id, user_id="alice")) == [("Sea otters", otters.id)]
    assert back(await fresh.links(otters.id, user_id="alice")) == [kelp.id]


async def test_links_come_back_after_export_and_import(backend: Any, tmp_path: Path) -> None:
    from _pg import make_target

    from agent_memory.portable import export_records, import_file

    m = backend.provider()
    kelp = await m.remember("Kelp: see [[Sea otters]].", title="Kelp", scope="user", user_id="alice")
    otters = await m.remember(f"Otters; back to [[{kelp.id}]].", title="Sea otters", scope="user", user_id="alice")
    await m.remember("Bob's [[Kelp]]", title="Bob", scope="user", user_id="bob")
    dump = tmp_path / "alice.jsonl"
    assert await asyncio.to_thread(export_records, m.backend, dump, caller=Caller(user_id="alice")) == 2
    other = make_target(backend.kind, tmp_path)
    try:
        dst = other.provider()
        report = await asyncio.to_thread(import_file, dst.backend, dump)
        assert report.to_dict()["written"] == 2
        found = {r.title: r.id for r in await dst.list(user_id="alice")}
        got = await dst.links(found["Kelp"], user_id="alice")
        assert out(got) == [("Sea otters", found["Sea otters"])]  # a [[Title]] link survives on both backends
        assert await dst.count(user_id="bob") == 0
        if backend.kind == "files":  # a files import keeps ids: [[id]] links still lead home
            assert found == {"Kelp": kelp.id, "Sea otters": otters.id}
            assert [(b.record_id, b.target) for b in got.backlinks] == [(found["Sea otters"], kelp.id)]
        else:  # PostgreSQL gives imported records ids of its own: an [[id]] link resolves through metadata.imported_id
            assert kelp.id not in found.values()
            assert out(await dst.links(found["Sea otters"], user_id="alice")) == [(kelp.id, found["Kelp"])]
            assert [(b.record_id, b.target) for b in got.backlinks] == [(found["Sea otters"], kelp.id)]
    finally:
        await other.close()


# -- files: a hand edit ------------------------------------------------------------------------------------------


async def test_a_hand_edited_record_file_updates_its_links(tmp_path: Path) -> None:
    from agent_memory import MemoryProvider

    m = MemoryProvider(tmp_path / "root")
    kelp = await m.remember("Kelp.", title="Kelp", scope="project")
    note = await m.remember("A note.", title="Note", scope="project")
    path = Path(str((await m.get(note.id)).path))
    path.write_text(path.read_text(encoding="utf-8").replace("A note.", "A note about [[Kelp]]."), encoding="utf-8")
    m.close()
    again = MemoryProvider(tmp_path / "root")
    assert back(await again.links(kelp.id)) == [note.id]
    assert back(again.store.links(kelp.id)) == [note.id]  # the synchronous store answers the same
    again.close()


# -- the CLI (a subprocess) and the tool --------------------------------------------------------------------------


def test_cli_get_links_on_both_backends_for_two_users(backend: Any) -> None:
    import subprocess
    import sys
    import uuid

    from _doubles import cli_json

    root = backend.target  # PostgreSQL: the URL's default schema, so users of this test's own
    alice, bob = f"alice-{uuid.uuid4().hex[:6]}", f"bob-{uuid.uuid4().hex[:6]}"
    kelp = cli_json(root, "remember", "Kelp shelters [[Sea otters]].", "--title", "Kelp", "--scope", "user", "--user", alice)["id"]
    otters = cli_json(root, "remember", f"Otters; see [[{kelp}]].", "--title", "Sea otters", "--scope", "user", "--user", alice)["id"]
    cli_json(root, "remember", f"Bob's note on [[{kelp}]] and [[Kelp]].", "--title", "Bob", "--scope", "user", "--user", bob)

    doc = cli_json(root, "get", kelp, "--links", "--user", alice)
    assert [(x["target"], x["record_id"]) for x in doc["links"]["outgoing"]] == [("Sea otters", otters)]
    assert [(x["record_id"], x["by"]) for x in doc["links"]["backlinks"]] == [(otters, "id")]  # bob's note never shows
    human = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", str(root), "get", kelp, "--links", "--user", alice],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert human.returncode == 0 and f"-> [[Sea otters]] {otters} (Sea otters)" in human.stdout and f"<- {otters}" in human.stdout
    hidden = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", str(root), "get", kelp, "--links", "--user", bob],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert hidden.returncode != 0 and "Sea otters" not in hidden.stdout + hidden.stderr

    cli_json(root, "forget", otters, "--user", alice)
    doc = cli_json(root, "get", kelp, "--links", "--user", alice)
    assert doc["links"]["outgoing"][0]["record_id"] is None and doc["links"]["backlinks"] == []
    cli_json(root, "undo", "--user", alice)
    doc = cli_json(root, "get", kelp, "--links", "--user", alice)
    assert doc["links"]["outgoing"][0]["record_id"] == otters and len(doc["links"]["backlinks"]) == 1
    cli_json(root, "forget", otters, "--purge", "--user", alice)
    assert cli_json(root, "get", kelp, "--links", "--user", alice)["links"]["outgoing"][0]["record_id"] is None


async def call_tool(toolset: Any, name: str, args: dict[str, Any]) -> Any:
    """One tool call through a real pydantic-ai run: what the model was sent back (a return, or a retry's text)."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    seen: list[Any] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(name, args)])
        seen.extend(p.content for p in messages[-1].parts if isinstance(p, ToolReturnPart | RetryPromptPart))
        return ModelResponse(parts=[TextPart("done")])

    await Agent(FunctionModel(model), toolsets=[toolset]).run("go")
    return seen[0]


async def test_memory_links_tool_is_offered_to_the_recall_worker_and_hides_other_users(backend: Any) -> None:
    from agent_memory.agents.profiles import load_profile
    from agent_memory.agents.tools import READ, memory_toolset

    assert "memory_links" in READ and "memory_links" in load_profile("offline").recall.tools
    m = backend.provider()
    kelp = await m.remember("Kelp: [[Sea otters]], [[Bob plan]].", title="Kelp", scope="user", user_id="alice")
    otters = await m.remember("Otters.", title="Sea otters", scope="user", user_id="alice")
    plan = await m.remember("Plan.", title="Bob plan", scope="user", user_id="bob")
    tools = memory_toolset(m, READ, caller=Caller(user_id="alice"))
    got = await call_tool(tools, "memory_links", {"id": kelp.id})
    assert [(x["target"], x["record_id"]) for x in got["outgoing"]] == [("Sea otters", otters.id), ("Bob plan", None)]
    assert plan.id not in json.dumps(got)
    refused = await call_tool(memory_toolset(m, READ, caller=Caller(user_id="bob")), "memory_links", {"id": kelp.id})
    assert "NotFoundError" in str(refused) and "Sea otters" not in str(refused)


async def test_search_expand_links_adds_linked_records_the_caller_may_see(backend: Any) -> None:
    m = backend.provider()
    person = await m.remember("Maria Lopez lives in Porto.", title="Maria Lopez", scope="user", user_id="alice")
    project = await m.remember("Project Falcon is led by [[Maria Lopez]] and [[Bob plan]].", title="Falcon", scope="user", user_id="alice")
    plan = await m.remember("Bob's plan for Falcon lives in a drawer.", title="Bob plan", scope="user", user_id="bob")
    for i in range(3):
        await m.remember(f"Unrelated note {i} about weather.", title=f"Note {i}", scope="user", user_id="alice")
    plain = await m.search("project Falcon lead", user_id="alice", limit=5)
    assert [h.id for h in plain.hits] == [project.id]  # the person shares no word with the question
    wide = await m.search("project Falcon lead", user_id="alice", limit=5, expand_links=True)
    assert [h.id for h in wide.hits] == [project.id, person.id]
    assert wide.hits[1].score == pytest.approx(wide.hits[0].score * 0.5, abs=1e-3) and wide.hits[1].title == "Maria Lopez"
    back = await m.search("Porto", user_id="alice", limit=5, expand_links=True)  # a backlink joins as well
    assert [h.id for h in back.hits] == [person.id, project.id]
    assert [h.id for h in (await m.search("Falcon", user_id="bob", limit=5, expand_links=True)).hits] == [plan.id]


async def test_the_session_logs_migration_fills_the_link_tables_too(backend: Any) -> None:
    if backend.kind != "postgres":
        pytest.skip("PostgreSQL: session logs migrate the schema over their own synchronous pool")
    m = backend.provider()
    kelp = await m.remember("Kelp: see [[Sea otters]].", title="Kelp", scope="user", user_id="alice")
    otters = await m.remember("Otters.", title="Sea otters", scope="user", user_id="alice")
    await _drop_link_tables(backend, m)
    fresh = backend.provider()
    await fresh.log_messages([{"role": "user", "text": "hello"}], session_id="s1", user_id="alice")  # migrates first
    assert out(await fresh.links(kelp.id, user_id="alice")) == [("Sea otters", otters.id)]


async def test_a_bulk_write_keeps_the_links_of_every_record(backend: Any) -> None:
    m = backend.provider()  # 70 unkeyed drafts: PostgreSQL ingests them with COPY (copy_threshold 64)
    drafts = [MemoryDraft(f"Spoke {i} hangs off [[Hub]].", title=f"Spoke {i}", scope="project") for i in range(70)]
    spokes = await m.remember_many(drafts)
    hub = await m.remember("The hub.", title="Hub", scope="project")
    assert back(await m.links(hub.id)) == sorted(r.id for r in spokes)
    assert out(await m.links(spokes[0].id)) == [("Hub", hub.id)]


async def test_expand_links_passes_over_hits_that_are_not_records(tmp_path: Path) -> None:
    from agent_memory import MemoryProvider

    m = MemoryProvider(tmp_path / "root")
    kelp = await m.remember("Kelp shelters [[Sea otters]].", title="Kelp", scope="user", user_id="a")
    otters = await m.remember("Otters float.", title="Sea otters", scope="user", user_id="a")
    await m.log_messages([{"role": "user", "text": "we talked about kelp forests"}], session_id="s1", user_id="a")
    hits = (await m.search("kelp", session_id="s1", user_id="a", mode="contextual", expand_links=True)).hits
    assert "s1#1" in [h.id for h in hits] and kelp.id in [h.id for h in hits]  # a message hit is no seed, and no error
    assert otters.id in [h.id for h in hits]
    m.close()
