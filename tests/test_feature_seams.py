"""Where this session's features meet: curated lines and links inside namespaces, on files and PostgreSQL.

Each feature has its own suite (test_curated, test_links, test_namespaces); these check that the methods added
beside namespaces carry the provider's namespace instead of writing to (or reading from) the root.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.errors import NotFoundError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


async def test_curated_line_lands_in_the_agents_namespace_and_stays_there(backend: Any) -> None:
    support = backend.provider(namespace="acme/support", isolation="full")
    coding = backend.provider(namespace="acme/coding", isolation="full")
    line = await support.curate("Always answer alice in Portuguese.", user_id="alice", priority=9)
    assert (await support.get(line.id, user_id="alice")).namespace == "acme/support"
    assert "Portuguese" in (await support.inject(400, user_id="alice")).text
    assert "Portuguese" not in (await coding.inject(400, user_id="alice")).text
    assert [c.text for c in await coding.curated(user_id="alice")] == []
    with pytest.raises(NotFoundError):  # another namespace's line is not this agent's to remove
        await coding.uncurate(line.id, user_id="alice")


async def test_a_child_reads_but_never_changes_its_parents_curated_line(backend: Any) -> None:
    parent = backend.provider(namespace="acme")
    child = backend.provider(namespace="acme/support")  # inherited: sees acme's lines
    line = await parent.curate("Acme's customers are called members.", user_id="alice")
    assert "members" in (await child.inject(400, user_id="alice")).text
    with pytest.raises(NotFoundError):
        await child.curate("Acme's customers are called guests.", user_id="alice", replace=line.id)
    assert (await parent.get(line.id, user_id="alice")).content.startswith("Acme's customers are called members")


async def test_links_resolve_only_within_what_the_namespace_sees(backend: Any) -> None:
    coding = backend.provider(namespace="acme/coding", isolation="full")
    support = backend.provider(namespace="acme/support", isolation="full")
    await coding.remember("The build cache runs on turbo.", title="Build cache", scope="project")
    src = await support.remember("See [[Build cache]] for why builds are fast.", scope="project")
    found = await support.links(src.id)
    assert [x.record_id for x in found.outgoing] == [None]  # coding's record is invisible from support


async def test_tidy_changes_only_the_agents_own_namespace(backend: Any) -> None:
    import datetime as dt

    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(minutes=5)).isoformat()
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
    parent = backend.provider(namespace="acme")
    support = backend.provider(namespace="acme/support")  # inherited: reads acme's records
    theirs = await parent.remember("Acme's staging host is db-old.", user_id="alice", scope="user", expires=soon)
    mine = await support.remember("Support's queue is q-old.", user_id="alice", scope="user", expires=soon)
    report = await support.tidy(user_id="alice", max_share=1.0, now=later)
    assert [c.record_id for c in report.applied] == [mine.id]  # the parent's expired record is not the child's to archive
    assert [c.record_id for c in (await parent.tidy(user_id="alice", max_share=1.0, now=later)).applied] == [theirs.id]


def _say(ctx: Any) -> list[Any]:
    """An extractor that stores what the user said as one unkeyed project fact (as a model might)."""
    from agent_memory import MemoryDraft

    return [MemoryDraft(ctx.input, scope="project")]


@pytest.mark.parametrize("isolation", ["full", "inherited"])
async def test_capture_checks_contradictions_as_the_writer_and_never_supersedes_upwards(backend: Any, isolation: str) -> None:
    root = backend.provider(turn_extractor=_say)
    support = backend.provider(namespace="acme/support", isolation=isolation, turn_extractor=_say)
    old = (await root.capture_turn("The on-call lead is Mallory.", user_id="alice")).ids[0]
    got = await support.capture_turn("The on-call lead is Trent.", user_id="alice")
    assert not got.fallback and len(got.ids) == 1  # the fact is stored, in the writer's namespace
    assert (await support.get(got.ids[0], user_id="alice")).namespace == "acme/support"
    assert (await root.get(old, user_id="alice")).superseded_by is None  # the parent's record is untouched
    assert all(c["action"] != "superseded" for c in got.contradicted)
    if isolation == "full":  # a record the writer cannot see is never named
        assert old not in str(got.to_dict()) and "Mallory" not in str(got.to_dict())


async def test_distilled_facts_land_in_the_distilling_agents_namespace(backend: Any) -> None:
    support = backend.provider(namespace="acme/support", isolation="full")
    await support.log_messages(
        [{"role": "user", "text": "I live in Lisbon."}, {"role": "assistant", "text": "Noted."}], session_id="s1", user_id="alice"
    )
    report = await support.distill(user_id="alice")
    assert report.written >= 1
    recs = await support.list(user_id="alice")
    assert recs and {r.namespace for r in recs} == {"acme/support"}
    assert await backend.provider().list(user_id="alice") == []  # nothing leaked into the root


async def test_episodes_can_be_deleted_and_restored_by_their_owner(backend: Any) -> None:
    p = backend.provider()
    ep = await p.record_episode("ship the release", user_id="alice", output="shipped")
    await p.delete_episode(ep.id, user_id="alice")  # PostgreSQL crashed here after the namespaces merge
    assert [e.id for e in await p.episodes(user_id="alice")] == []
    await p.restore_episode(ep.id, user_id="alice")
    assert [e.id for e in await p.episodes(user_id="alice")] == [ep.id]


def test_a_secret_shaped_namespace_is_refused() -> None:
    from agent_memory.errors import InvalidInputError
    from agent_memory.model.scopes import check_namespace

    assert check_namespace("acme/support-7") == "acme/support-7"
    with pytest.raises(InvalidInputError, match="looks like a secret"):
        check_namespace("acme/xoxb-123456789012-1234567890123-" + "ab3de5gh7jk9mn1pq3st5vx7")


async def test_consolidation_history_shows_only_what_the_agents_view_holds(tmp_path: Any) -> None:
    import datetime as dt

    from agent_memory import MemoryProvider
    from agent_memory.errors import InvalidInputError

    soon, later = "2030-06-01", dt.datetime(2031, 1, 1, tzinfo=dt.UTC)
    coding = MemoryProvider(tmp_path / "m", namespace="acme/coding")
    await coding.remember("Zephyr plan: ship on Friday.", title="Zephyr plan", scope="project", expires=soon)
    await coding.consolidate(max_share=1.0, now=later)
    mine = await coding.consolidation_history()
    assert any(c["id"].startswith("20") for r in mine for c in r["changes"]) and "total" in mine[0]
    support = MemoryProvider(tmp_path / "m", namespace="acme/support", isolation="full")
    theirs = await support.consolidation_history()
    assert theirs and all(r["changes"] == [] and "total" not in r for r in theirs)
    assert await support.consolidation_digest() is None
    with pytest.raises(InvalidInputError):
        await support.consolidation_history(since="notadate")


async def test_the_memory_tool_prefers_the_callers_own_file_at_a_path(backend: Any) -> None:
    from agent_memory import MemoryToolHandler

    coding = backend.provider(namespace="acme/coding")
    root = backend.provider()
    child = MemoryToolHandler(coding, user_id="alice")
    await child.ahandle({"command": "create", "path": "/memories/notes.md", "file_text": "coding own notes"})
    await MemoryToolHandler(root, user_id="alice").ahandle({"command": "create", "path": "/memories/notes.md", "file_text": "root notes"})
    assert "coding own notes" in await child.ahandle({"command": "view", "path": "/memories/notes.md"})
