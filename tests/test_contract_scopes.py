"""Scope isolation as a property, through every read path above the store, on every backend.

The model is the one of test_reliability_scopes.py (DESIGN.md's visibility table written independently of the
library): over random mixes of scopes, sessions and users, the provider's reads, the READ/FOREGROUND tools,
keyed writes by key or id, the core block and the recall worker show a caller exactly what it may see.
One store per backend serves every generated example; each example's records carry their own probe word.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from _doubles import plain_tools
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import ModelRetry

from agent_memory.agents.tools import FOREGROUND, memory_toolset
from agent_memory.errors import NotFoundError

IDS = ["a", "b", "c"]  # one pool for session and user ids: the two namespaces must never be confused
RECORD = st.tuples(
    st.sampled_from(["session", "user", "project", "global"]), st.sampled_from(IDS), st.one_of(st.none(), st.sampled_from(IDS))
)
CALLER = st.tuples(st.one_of(st.none(), st.sampled_from(IDS)), st.one_of(st.none(), st.sampled_from(IDS)))


def may_see(scope: str, sid: str, uid: str | None, caller: tuple[str | None, str | None]) -> bool:
    csid, cuid = caller
    return (
        scope in ("project", "global")
        or (scope == "session" and sid == csid and (uid is None or uid == cuid))
        or (scope == "user" and uid is not None and uid == cuid)
    )


def ids_in(text: str, known: set[str]) -> set[str]:
    return {rid for rid in known if rid in text}


def test_every_read_path_above_the_store_respects_scope(backend: Any) -> None:
    """Search, get, list, count, the tools (search/list/get/forget/keyed remember), inject and recall."""
    loop = asyncio.new_event_loop()
    provider = backend.provider()
    cases = {"n": 0}

    @settings(max_examples=15, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(records=st.lists(RECORD, min_size=1, max_size=7), callers=st.lists(CALLER, min_size=1, max_size=2))
    def case(records: list[tuple[str, str, str | None]], callers: list[tuple[str | None, str | None]]) -> None:
        cases["n"] += 1
        tag = uuid.uuid4().hex[:8]

        def ns(v: str | None) -> str | None:
            return None if v is None else f"{tag}{v}"

        async def run() -> None:
            made: dict[str, tuple[str, str, str | None]] = {}
            for i, (scope, sid, uid) in enumerate(records):
                if scope == "user" and uid is None:
                    uid = "a"
                r = await provider.remember(
                    f"probe{tag} zeppelin note {i} token{tag}x{i}", scope=scope, session_id=ns(sid), user_id=ns(uid), tags=["zep"]
                )
                made[r.id] = (scope, sid, uid)
            known = set(made)
            for csid, cuid in callers:
                who: dict[str, Any] = {"session_id": ns(csid), "user_id": ns(cuid)}
                visible = {rid for rid, (s, sid, uid) in made.items() if may_see(s, sid, uid, (csid, cuid))}
                assert {h.id for h in (await provider.search(f"probe{tag}", limit=50, **who)).hits} == visible
                assert {r.id for r in await provider.list(limit=None, tags=["zep"], **who)} & known == visible
                for rid in known:
                    if rid in visible:
                        assert (await provider.get(rid, **who)).id == rid
                    else:
                        with pytest.raises(NotFoundError):
                            await provider.get(rid, **who)
                block = await provider.inject(100_000, **who)
                assert ids_in(block.text, known) == visible

                tools = plain_tools(memory_toolset(provider, FOREGROUND, **who))
                hits = (await tools["memory_search"](query=f"probe{tag}", limit=50))["hits"]
                assert {h["id"] for h in hits} == visible
                listed = (await tools["memory_list"](tags=["zep"], limit=100))["records"]
                assert {r["id"] for r in listed} & known == visible
                for rid in known - visible:
                    with pytest.raises(ModelRetry):
                        await tools["memory_get"](id=rid)
                    assert await tools["memory_forget"](id=rid) == {"id": rid, "forgotten": False}
                    out = await tools["memory_remember"](content=f"overwrite {tag}", memory_key=rid, on_existing="replace")
                    assert out["id"] != rid and out["status"] == "created"
                    assert (await tools["memory_forget"](id=out["id"]))["forgotten"] is True

                result = await provider.recall(f"probe{tag}", **who)
                cited = {s["id"] for s in result.sources}
                assert cited <= visible and ids_in(result.summary, known) <= visible, (who, result)
                assert bool(cited) == bool(visible), (who, result)
            owners = {rid: {"session_id": ns(sid) if s == "session" else None, "user_id": ns(uid)} for rid, (s, sid, uid) in made.items()}
            for rid, owner in owners.items():  # nothing a hidden caller tried changed any record
                assert (await provider.get(rid, **owner)).content.startswith(f"probe{tag} zeppelin note")

        loop.run_until_complete(run())

    try:
        case()
    finally:
        loop.run_until_complete(backend.close())
        loop.close()
    assert cases["n"] >= 5
