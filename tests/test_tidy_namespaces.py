"""The tidy pass and namespaces (issue 29), on files and PostgreSQL.

Without a caller (an operator's ``agent-memory tidy``, ``provider.tidy()`` on a root provider) the pass covers every
namespace, each in its own partitions: duplicates are archived within a namespace, never against a copy in another
one. A namespaced caller's pass changes only its own namespace. Each namespace reads and restores what was archived
in it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SPACES = (None, "acme", "acme/coding", "acme/support")
PAST = "2020-01-01T00:00:00Z"


async def _seed(backend: Any) -> dict[str | None, dict[str, str]]:
    """In each namespace: an older whitespace copy and a newer copy of one text (the same text everywhere), and an
    expired record."""
    root = backend.provider()
    ids: dict[str | None, dict[str, str]] = {}
    for ns in SPACES:
        p = root.in_namespace(ns)
        ids[ns] = {
            "old": (await p.remember("The deploy  window is Tuesday.", scope="project")).id,
            "new": (await p.remember("The deploy window is Tuesday.", scope="project")).id,
            "gone": (await p.remember(f"The {ns or 'root'} freeze ended.", scope="project", expires="2030-01-01")).id,
        }
    return ids


async def _live(backend: Any, ns: str | None) -> set[str]:
    return {r.id for r in await backend.provider().list(namespace=ns, isolation="full", limit=None)}


async def test_tidy_without_a_caller_covers_every_namespace_each_apart(backend: Any) -> None:
    ids = await _seed(backend)
    later = dt.datetime(2031, 1, 1, tzinfo=dt.UTC)  # every "gone" record has expired by then
    report = await backend.provider().tidy(max_share=1.0, now=later)
    applied = {(c.rule, c.record_id) for c in report.applied}
    assert applied == {(rule, ids[ns][key]) for ns in SPACES for rule, key in (("duplicate", "old"), ("ttl", "gone"))}
    assert report.total == 3 * len(SPACES)
    for ns in SPACES:  # one copy stays in each namespace: never merged across them
        assert await _live(backend, ns) == {ids[ns]["new"]}, ns
    for ns in SPACES:  # what was archived in a namespace is its own to read and bring back
        p = backend.provider(namespace=ns, isolation="full")
        assert [e.event for e in await p.events(record_id=ids[ns]["old"])][-1] == "archived"
        assert (await p.restore(ids[ns]["old"])).namespace == (ns or "")
        assert await _live(backend, ns) == {ids[ns]["old"], ids[ns]["new"]}
    again = await backend.provider().tidy(max_share=1.0, now=later)  # a record brought back stays back
    assert again.applied == []


async def test_a_namespaced_pass_changes_only_its_own_namespace(backend: Any) -> None:
    ids = await _seed(backend)
    later = dt.datetime(2031, 1, 1, tzinfo=dt.UTC)
    report = await backend.provider(namespace="acme").tidy(max_share=1.0, now=later)  # no user: the namespace's operator
    assert {c.record_id for c in report.applied} == {ids["acme"]["old"], ids["acme"]["gone"]}
    per_call = await backend.provider().tidy(namespace="acme/coding", isolation="full", max_share=1.0, now=later)
    assert {c.record_id for c in per_call.applied} == {ids["acme/coding"]["old"], ids["acme/coding"]["gone"]}
    for ns in (None, "acme/support"):  # untouched, whatever the others' passes did
        assert await _live(backend, ns) == set(ids[ns].values()), ns
