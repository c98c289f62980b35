"""A run with no session and no user (``MemoryHooks(p)``, a ``MemoryCapability`` without identity) is an anonymous
caller at its end: the run's-end tidy pass and ``consolidate_every`` see the project/global records of its namespace
only, never the operator's pass over every user (issue 27, attacker finding tidy1). The operator's pass stays where
it is asked for explicitly: ``provider.tidy()`` / ``consolidate()`` with no caller, the CLI without ``--user``."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory import MemoryProvider
from agent_memory.integrations.hooks import MemoryHooks
from agent_memory.integrations.pydantic_ai import MemoryCapability

KINDS = ["files", "postgres"]


def _open(kind: str, tmp_path: Path) -> MemoryProvider:
    if kind == "postgres":
        from _matrix import fresh_database
        from _pg import require_psycopg, server

        require_psycopg()
        return MemoryProvider(fresh_database(server().url))
    return MemoryProvider(tmp_path / "root", durable=False)


async def _seed(p: MemoryProvider, tmp_path: Path) -> dict[str, str]:
    gone = str(tmp_path / "deleted-repo")
    return {
        "alice": (await p.remember("Alice repo notes.", user_id="alice", scope="user", metadata={"scope_path": gone})).id,
        "bob_old": (await p.remember("Bob  likes tea.", user_id="bob", scope="user")).id,
        "bob_new": (await p.remember("Bob likes tea.", user_id="bob", scope="user")).id,
        "proj_old": (await p.remember("Deploys  go out on Tuesdays.", scope="project")).id,
        "proj_new": (await p.remember("Deploys go out on Tuesdays.", scope="project")).id,
    }


async def _check(p: MemoryProvider, ids: dict[str, str]) -> None:
    """Nobody's own records were touched; the anonymous caller's pass did run (it took the shared duplicate)."""
    assert {r.id for r in await p.list(user_id="alice", scope="user")} == {ids["alice"]}
    assert {r.id for r in await p.list(user_id="bob", scope="user")} == {ids["bob_old"], ids["bob_new"]}
    archived = {e.id for e in await p.events() if e.event == "archived"}
    assert archived == {ids["proj_old"]}


@pytest.mark.parametrize("kind", KINDS)
async def test_hooks_without_identity_tidy_as_an_anonymous_caller_not_the_operator(kind: str, tmp_path: Path) -> None:
    p = _open(kind, tmp_path)
    try:
        ids = await _seed(p, tmp_path)
        await MemoryHooks(p, recall=False, capture=False, log_sessions=False).on_run_end("answer a question", "ok")
        await p.flush()
        await _check(p, ids)
        # the operator's pass is still there when asked for by name (the API with no caller)
        operator = await p.tidy(max_share=1.0)
        assert {c.record_id for c in operator.applied} == {ids["alice"], ids["bob_old"]}
    finally:
        await p.aclose()


def _reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart("Noted.")])


@pytest.mark.parametrize("kind", KINDS)
async def test_capability_without_identity_tidies_as_an_anonymous_caller(kind: str, tmp_path: Path) -> None:
    p = _open(kind, tmp_path)
    try:
        ids = await _seed(p, tmp_path)
        agent = Agent(FunctionModel(_reply), capabilities=[MemoryCapability(p, recall=False, capture=False)])
        await agent.run("hello")
        await p.flush()
        await _check(p, ids)
    finally:
        await p.aclose()


async def test_consolidate_every_without_identity_is_an_anonymous_caller(tmp_path: Path) -> None:
    """Consolidation is a files-backend feature; a run with no identity never merges a user's near-duplicates."""
    p = MemoryProvider(tmp_path / "root", profile="offline", durable=False)
    try:
        mine = [
            (await p.remember("The staging cluster runs in eu-west-1.", user_id="ada")).id,
            (await p.remember("the staging cluster runs in eu-west-1", user_id="ada")).id,
        ]
        for topic in "kites owls ferns tides maps lutes moths dunes reefs quills".split():
            await p.remember(f"Ada keeps a notebook about {topic} and their habits.", user_id="ada")
        hooks = MemoryHooks(p, capture=False, recall=False, log_sessions=False, tidy=False, consolidate_every=1)
        await hooks.on_turn_end("turn", "ok")
        await hooks.flush()
        assert set(mine) <= {r.id for r in await p.list(user_id="ada", limit=None)}
        assert not list((tmp_path / "root" / "archive").glob("*.md"))
        # the operator's pass (the API with no caller) still merges them
        assert len((await p.consolidate()).applied) == 1
    finally:
        await p.aclose()
