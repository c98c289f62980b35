"""Scope isolation, as a property over random mixes of scopes, sessions, users and callers."""

from __future__ import annotations

import asyncio
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from _doubles import plain_tools
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory import MemoryProvider
from agent_memory.agents.core_block import inject
from agent_memory.agents.tools import FOREGROUND, memory_toolset
from agent_memory.errors import NotFoundError
from agent_memory.integrations.pydantic_ai import MemoryCapability

pytestmark = pytest.mark.promise("scopes")

# One pool for session and user ids, so a user id equal to some session id (and vice versa)
# is generated too: visibility must never confuse the two namespaces.
IDS = ["a", "b", "c"]
RECORD = st.tuples(st.sampled_from(["session", "user", "project", "global"]), st.sampled_from(IDS), st.sampled_from(IDS))
CALLER = st.tuples(st.sampled_from(IDS + [None]), st.sampled_from(IDS + [None]))


def may_see(scope: str, sid: str, uid: str, caller: tuple[str | None, str | None]) -> bool:
    """The visibility table of DESIGN.md, written independently of the library."""
    csid, cuid = caller
    # a session record belongs to its session and, when it names one, to its user
    return (
        scope in ("project", "global")
        or (scope == "session" and sid == csid and (uid is None or uid == cuid))
        or (scope == "user" and uid == cuid)
    )


def _ids_in(text: str, known: set[str]) -> set[str]:
    return {rid for rid in known if rid in text}


@pytest.mark.slow
def test_every_read_path_respects_scope(tmp_path: Path, reliability_figures: dict[str, Any]) -> None:
    """Random records (scope × session × user) and a random caller: search, get, list, the READ/FOREGROUND tools, inject, recall, forget and keyed writes show exactly the visible records, and each visible one is findable."""
    counts = {"cases": 0, "records": 0, "visible": 0, "hidden": 0}
    loop = asyncio.new_event_loop()

    @settings(max_examples=70, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(records=st.lists(RECORD, min_size=1, max_size=10), callers=st.lists(CALLER, min_size=1, max_size=2))
    def case(records: list[tuple[str, str, str]], callers: list[tuple[str | None, str | None]]) -> None:
        counts["cases"] += 1
        root = Path(tempfile.mkdtemp(dir=tmp_path))
        provider = MemoryProvider(root, durable=False)
        store = provider.store
        made: dict[str, tuple[str, str, str, str]] = {}
        for i, (scope, sid, uid) in enumerate(records):
            token = f"tok{i}q"
            r = store.remember(
                f"zeppelin hangar note {i}: {token} was decided",
                scope=scope,
                session_id=sid,
                user_id=uid,
                tags=["zep"],
                title=f"note {i} {token}",
            )
            made[r.id] = (scope, sid, uid, token)
        counts["records"] += len(made)
        all_ids = set(made)
        memory_md = (root / "MEMORY.md").read_text()
        assert _ids_in(memory_md, all_ids) == {r for r, m in made.items() if m[0] in ("project", "global")}

        for caller in callers:
            csid, cuid = caller
            who: dict[str, Any] = {"session_id": csid, "user_id": cuid}
            visible = {rid for rid, (scope, sid, uid, _) in made.items() if may_see(scope, sid, uid, caller)}
            hidden = all_ids - visible
            counts["visible"] += len(visible)
            counts["hidden"] += len(hidden)

            # search: the shared word finds exactly the visible set; each unique token finds its own record or nothing
            assert {h.id for h in store.search("zeppelin hangar", limit=100, **who).hits} == visible
            for rid, (_, _, _, token) in made.items():
                got = [h.id for h in store.search(token, **who).hits]
                assert got == ([rid] if rid in visible else []), (token, caller)
            # get
            for rid in all_ids:
                if rid in visible:
                    assert store.get(rid, **who).id == rid
                else:
                    with pytest.raises(NotFoundError):
                        store.get(rid, **who)
            # list, with and without filters
            assert {r.id for r in store.list(limit=None, **who)} == visible
            assert {r.id for r in store.list(limit=None, tags=["zep"], **who)} == visible
            for scope in ("session", "user", "project", "global"):
                assert {r.id for r in store.list(limit=None, scope=scope, **who)} == {r for r in visible if made[r][0] == scope}
            # inject (the core block is a read path too)
            block = inject(store, 100_000, **who)
            assert _ids_in(block.text, all_ids) == visible

            # the model-facing tools, bound to the caller (identity is not a tool parameter)
            tools = plain_tools(memory_toolset(provider, FOREGROUND, **who))

            def call(name: str, _tools: Any = tools, **args: Any) -> Any:
                return loop.run_until_complete(_tools[name](**args))

            assert {h["id"] for h in call("memory_search", query="zeppelin hangar", limit=50)["hits"]} == visible
            assert {r["id"] for r in call("memory_list", limit=100)["records"]} == visible
            for rid in all_ids:
                if rid in visible:
                    assert call("memory_get", id=rid)["id"] == rid
                else:
                    with pytest.raises(ModelRetry):
                        call("memory_get", id=rid)
                    assert call("memory_forget", id=rid) == {"id": rid, "forgotten": False}
                    before = (root / "records" / f"{rid}.md").read_bytes()
                    # a keyed write naming a record the caller cannot see must not touch it
                    out = call("memory_remember", content="overwrite attempt", memory_key=rid, on_existing="replace")
                    assert out["id"] != rid and out["status"] == "created"  # a new record in the caller's own partition
                    assert (root / "records" / f"{rid}.md").read_bytes() == before
                    assert call("memory_forget", id=out["id"])["forgotten"] is True

            # recall (the private worker, offline model): cites only visible records, finds a visible one
            result = loop.run_until_complete(provider.recall("zeppelin hangar decided", **who))
            cited = {s["id"] for s in result.sources}
            assert cited <= visible and _ids_in(result.summary, all_ids) <= visible, (caller, result)
            assert bool(cited) == bool(visible), (caller, result)
            if visible:
                target = sorted(visible)[0]
                result = loop.run_until_complete(provider.recall(f"what about {made[target][3]}?", **who))
                assert target in {s["id"] for s in result.sources}
        provider.close()

    try:
        case()
    finally:
        loop.close()
    reliability_figures.update(
        generated_cases=counts["cases"],
        records=counts["records"],
        visible_checks=counts["visible"],
        hidden_checks=counts["hidden"],
        failures=0,
    )


async def test_main_model_sees_only_the_callers_memory(tmp_path: Path, reliability_figures: dict[str, Any]) -> None:
    """Through MemoryCapability, everything the main model receives (instructions and messages) names only records its caller may see, for every caller."""
    provider = MemoryProvider(tmp_path / "mem", durable=False)
    made = {}
    for scope, sid, uid in [(s, x, y) for s in ("session", "user", "project", "global") for x in IDS[:2] for y in IDS[:2]]:
        r = await provider.remember(f"zeppelin hangar fact for {scope} {sid} {uid}", scope=scope, session_id=sid, user_id=uid)
        if r.status == "created":
            made[r.id] = (scope, sid, uid)
    callers = [(s, u) for s in IDS + [None] for u in IDS + [None]]
    for caller in callers:
        seen: list[str] = []

        def main_model(messages: list[ModelMessage], info: AgentInfo, seen: list[str] = seen) -> ModelResponse:
            seen.append(repr(messages) + repr(info.instructions))
            return ModelResponse(parts=[TextPart("ok")])

        memory = MemoryCapability(provider, session_id=caller[0], user_id=caller[1], background_capture=False, capture=False)
        agent = Agent(FunctionModel(main_model), capabilities=[memory])
        await agent.run("what about the zeppelin hangar?")
        visible = {rid for rid, (scope, sid, uid) in made.items() if may_see(scope, sid, uid, caller)}
        assert _ids_in("".join(seen), set(made)) == visible, caller
    reliability_figures.update(callers=len(callers), records=len(made), failures=0)


def test_keyed_writes_stay_in_their_partition(tmp_path: Path, reliability_figures: dict[str, Any]) -> None:
    """The same memory_key used by different sessions and users makes one record per partition; appends never cross."""
    provider = MemoryProvider(tmp_path / "mem", durable=False)
    store = provider.store
    owners = [("session", s, None) for s in IDS] + [("user", None, u) for u in IDS] + [("project", None, None)]
    ids: dict[tuple[str, str | None, str | None], set[str]] = {}
    for scope, sid, uid in owners:
        for n in range(3):
            r = store.remember(f"line {n} of {scope} {sid} {uid}", scope=scope, session_id=sid, user_id=uid, memory_key="shared.key")
            ids.setdefault((scope, sid, uid), set()).add(r.id)
    assert all(len(v) == 1 for v in ids.values())
    assert len({next(iter(v)) for v in ids.values()}) == len(owners)
    for (scope, sid, uid), rid in ((k, next(iter(v))) for k, v in ids.items()):
        content = store.get(rid, session_id=sid, user_id=uid).content
        assert re.findall(r"of (\w+) (\w+) (\w+)", content) == [(scope, str(sid), str(uid))] * 3
    reliability_figures.update(partitions=len(owners), writes=3 * len(owners), failures=0)


def test_keyed_and_capture_writes_never_cross_a_partition(tmp_path: Path, reliability_figures: dict[str, Any]) -> None:
    """Every partition writes a keyed record; every other partition (tool and capture writes) appends and replaces by its key and by its id: the record's file never changes, each writer gets its own record."""
    from agent_memory.backends.files.store import MemoryDraft, MemoryStore

    store = MemoryStore(tmp_path / "mem", durable=False)
    owners = [("session", "a", None), ("session", "a", "b"), ("user", None, "a"), ("project", None, None), ("global", None, None)]
    made = {o: store.remember(f"owned by {o}", scope=o[0], session_id=o[1], user_id=o[2], memory_key="k") for o in owners}
    attempts = 0
    for writer in owners + [("session", "b", "a"), ("user", None, "b")]:
        for target, r in made.items():
            for key in ("k", r.id):
                for mode in ("append", "replace"):
                    for source in ("tool", "turn_capture"):
                        before = Path(r.path).read_bytes()
                        draft = MemoryDraft(
                            f"{writer} {source} {mode} {key} to {target}",
                            scope=writer[0],
                            session_id=writer[1],
                            user_id=writer[2],
                            memory_key=key,
                            on_existing=mode,
                        )
                        out = store.remember_many([draft], source=source)[0]
                        attempts += 1
                        if writer != target or source == "turn_capture":  # another partition, or capture vs a tool record
                            assert Path(r.path).read_bytes() == before, (writer, target, key, mode, source)
                            assert out.id != r.id
                            if out.id not in {m.id for m in made.values()}:  # "k" may name the writer's own record
                                assert store.forget(out.id, session_id=writer[1], user_id=writer[2]) is True
    reliability_figures.update(partitions=len(owners) + 2, writes=attempts, failures=0)


def test_strict_visibility_closes_the_ranking_oracle(tmp_path: Path, reliability_figures: dict[str, Any]) -> None:
    """An agent plants one record per PIN guess and searches them all: without strict_visibility the guess matching another user's hidden PIN ranks last; with it, hits and scores are identical whether or not that record exists."""
    from agent_memory.backends.files.store import MemoryDraft, MemoryStore

    guesses = [f"{n:04d}" for n in range(4810, 4830)]

    def ranked(root: Path, bob: bool, strict: bool) -> list[tuple[str, float]]:
        store = MemoryStore(root, durable=False, strict_visibility=strict)
        drafts = [MemoryDraft(f"guess {g}", scope="user", user_id="ada") for g in guesses]
        store.remember_many(drafts + ([MemoryDraft("my locker number is 4821", scope="user", user_id="bob")] if bob else []))
        hits = store.search(" ".join(guesses), user_id="ada", limit=len(guesses)).hits
        return [(h.snippet, h.score) for h in hits]

    lax = ranked(tmp_path / "lax", True, False)
    assert lax[-1][0] == "guess 4821" and lax[-1][1] < lax[-2][1]  # the documented leak, for contrast
    strict, control = ranked(tmp_path / "strict", True, True), ranked(tmp_path / "control", False, True)
    assert sorted(strict) == sorted(control) and len({s for _, s in strict}) == 1
    reliability_figures.update(guesses=len(guesses), failures=0)


@pytest.mark.parametrize("kind", ["files", "postgres"])
def test_session_logs_and_episodes_respect_scope(tmp_path: Path, reliability_figures: dict[str, Any], kind: str) -> None:
    """Random session logs and episodes (session × user, or no user) and random callers: listing, reading,
    searching sessions and episodes show exactly what the caller may see (a user's are that user's; a log with
    no user is its session's)."""
    counts = {"cases": 0, "checks": 0}
    loop = asyncio.new_event_loop()
    owner = st.tuples(st.sampled_from(IDS), st.sampled_from(IDS + [None]))

    def sees(sid: str, uid: str | None, caller: tuple[str | None, str | None]) -> bool:
        return caller[1] == uid if uid is not None else caller[0] == sid

    @settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(owners=st.lists(owner, min_size=1, max_size=6, unique=True), callers=st.lists(CALLER, min_size=1, max_size=3))
    def case(owners: list[tuple[str, str | None]], callers: list[tuple[str | None, str | None]]) -> None:
        counts["cases"] += 1
        if kind == "postgres":  # the same property over rows: a fresh schema per case
            from _pg import make_target

            provider = make_target(kind, tmp_path).provider()
        else:
            provider = MemoryProvider(Path(tempfile.mkdtemp(dir=tmp_path)), durable=False)
        episodes: dict[str, tuple[str, str | None]] = {}
        for i, (sid, uid) in enumerate(owners):
            loop.run_until_complete(
                provider.log_messages([{"role": "user", "text": f"zeppelin hangar plan {i}"}], session_id=sid, user_id=uid)
            )
            ep = loop.run_until_complete(provider.record_episode(f"zeppelin hangar run {i}", session_id=sid, user_id=uid))
            episodes[ep.id] = (sid, uid)
        for caller in callers:
            who = {"session_id": caller[0], "user_id": caller[1]}
            want = {(sid, uid) for sid, uid in owners if sees(sid, uid, caller)}
            listed = {(s.session_id, s.user_id) for s in loop.run_until_complete(provider.sessions(**who))}
            assert listed == want, (caller, listed, want)
            found = loop.run_until_complete(provider.search_sessions("zeppelin hangar", limit=20, **who))
            assert {f["session_id"] for f in found} <= {sid for sid, _ in want}, (caller, found)
            for sid, uid in owners:
                if (sid, uid) in want:
                    continue
                if not any(w[0] == sid for w in want):  # another visible session of the same id would answer
                    with pytest.raises(NotFoundError):
                        loop.run_until_complete(provider.session(sid, **who))
            eps = loop.run_until_complete(provider.episodes(limit=50, **who))
            seen = {e.id for e in eps}
            want_eps = {eid for eid, (sid, uid) in episodes.items() if may_see("user" if uid else "session", sid, uid, caller)}  # type: ignore[arg-type]
            assert seen == want_eps, (caller, seen, want_eps)
            for eid in set(episodes) - want_eps:
                with pytest.raises(NotFoundError):
                    loop.run_until_complete(provider.episode(eid, **who))
            counts["checks"] += 1
        loop.run_until_complete(provider.aclose())

    try:
        case()
    finally:
        loop.close()
    reliability_figures.update(generated_cases=counts["cases"], caller_checks=counts["checks"], failures=0)
