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
