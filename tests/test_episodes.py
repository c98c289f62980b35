"""Episodes: one per agent run, recorded by the capability and the hooks, stored as scoped, redacted files,
listed newest first, searchable by terms, quarantined when unreadable, purged byte for byte."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from _doubles import last_turn
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.exceptions import ToolFailed, UsageLimitExceeded
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

from agent_memory import MemoryProvider
from agent_memory.agents.tools import READ, memory_toolset
from agent_memory.backends.base import Caller
from agent_memory.cli import main
from agent_memory.episodes import (
    EpisodeStore,
    EpisodesUnsupportedError,
    build_episode,
    episode_store,
    purge_episodes,
)
from agent_memory.errors import InvalidIdError, InvalidInputError, NotFoundError
from agent_memory.integrations.hooks import MemoryHooks
from agent_memory.integrations.pydantic_ai import MemoryCapability

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"


def _path(episode: Any) -> Path:
    """Where an episode of the files store lives (files episodes always have a path)."""
    assert episode is not None and episode.path is not None, episode
    return Path(episode.path)


@pytest.fixture
def logs(caplog, monkeypatch):
    """Library log lines, even after a CLI test in this process switched their propagation off."""
    monkeypatch.setattr(logging.getLogger("agent_memory"), "propagate", True)
    caplog.set_level(logging.INFO, logger="agent_memory")
    return caplog


@pytest.fixture
def provider(tmp_path):
    p = MemoryProvider(tmp_path / "mem")
    yield p
    p.close()


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in (root / "episodes").rglob("*") if p.is_file())


def all_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


# -- the capability records one episode per run ---------------------------------------------------
def travel_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    step = sum(isinstance(m, ModelResponse) for m in messages)
    if step == 0:
        return ModelResponse(parts=[ToolCallPart("lookup", {"city": "Paris"}), ToolCallPart("flaky", {"n": 1})])
    if step == 1:
        return ModelResponse(parts=[ToolCallPart("lookup", {"city": "Rome"}), ToolCallPart("crash", {})])
    return ModelResponse(parts=[TextPart("Booked Paris then Rome.")])


def travel_agent(*capabilities: Any) -> Agent:
    agent = Agent(FunctionModel(travel_model), capabilities=list(capabilities))

    @agent.tool_plain
    def lookup(city: str) -> str:
        return f"hotels in {city}"

    @agent.tool_plain
    def flaky(n: int) -> str:
        raise ModelRetry(f"service unavailable, key {SECRET}")

    @agent.tool_plain
    def crash() -> str:
        raise ToolFailed("disk on fire")

    return agent


async def test_capability_records_goal_approach_failures_exit_and_usage(provider):
    memory = MemoryCapability(provider, session_id="s1", user_id="ada", capture=False, recall=False)
    result = await travel_agent(memory).run(f"Plan a trip to Paris and Rome; my api key is {SECRET}")
    episode = last_turn(memory).episode
    assert episode is not None and episode.run_id == result.run_id
    assert episode.goal.startswith("Plan a trip to Paris and Rome") and SECRET not in episode.goal
    assert episode.sequence == ("lookup", "flaky", "lookup", "crash")  # call order
    assert [(t.name, t.calls, t.errors) for t in episode.tools] == [("lookup", 2, 0), ("flaky", 1, 1), ("crash", 1, 1)]
    assert episode.approach == "lookup → flaky → lookup → crash"
    assert episode.retries >= 1
    assert any(f.startswith("flaky retried: service unavailable") for f in episode.failed)
    assert any(f.startswith("crash") and "disk on fire" in f for f in episode.failed)
    assert "lookup: 2 of 2 calls succeeded" in episode.worked
    assert (episode.exit, episode.status, episode.exit_detail) == ("output", "ok", "Booked Paris then Rome.")
    usage = result.usage
    assert (episode.requests, episode.input_tokens, episode.output_tokens) == (usage.requests, usage.input_tokens, usage.output_tokens)
    assert episode.cost_usd is None  # a FunctionModel has no price
    assert (episode.session_id, episode.user_id, episode.scope.value) == ("s1", "ada", "user")
    assert episode.started <= episode.ended
    path = _path(episode)
    assert path.parent.name == episode.started[:7] and path.name == f"{episode.id}.md"
    raw = path.read_text()
    assert SECRET not in raw and "[REDACTED" in raw
    assert await provider.episode(episode.id, user_id="ada") == episode


async def test_second_run_of_a_conversation_records_only_its_own_tool_calls(provider):
    memory = MemoryCapability(provider, session_id="s1", capture=False, recall=False)
    agent = travel_agent(memory)
    first = await agent.run("Plan a trip")
    await agent.run("Thanks!", message_history=first.all_messages())
    episodes = await provider.episodes(session_id="s1")
    assert [e.goal for e in episodes] == ["Plan a trip", "Thanks!"][::-1]  # newest first
    assert len(episodes[1].sequence) == 4  # the first run's four calls are not counted again in the second
    assert episodes[0].sequence == () and episodes[0].approach == "answered directly (no tool calls)"


async def test_a_run_stopped_by_a_limit_is_recorded_and_the_error_still_reaches_the_caller(provider):
    memory = MemoryCapability(provider, user_id="ada", capture=False, recall=False)
    with pytest.raises(UsageLimitExceeded):
        await travel_agent(memory).run("Plan a long trip", usage_limits=UsageLimits(request_limit=2))
    [episode] = await provider.episodes(user_id="ada")
    assert (episode.exit, episode.status) == ("limit", "failed")
    assert episode.sequence[:2] == ("lookup", "flaky") and episode.requests == 2
    assert any(f.startswith("run stopped by a limit: UsageLimitExceeded") for f in episode.failed)


async def test_a_tool_exception_that_ends_the_run_is_recorded_with_its_reason(provider):
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("explode", {})])

    memory = MemoryCapability(provider, user_id="ada", capture=False, recall=False)
    agent = Agent(FunctionModel(model), capabilities=[memory])

    @agent.tool_plain
    def explode() -> str:
        raise ValueError("disk on fire")

    with pytest.raises(ValueError, match="disk on fire"):
        await agent.run("Clean the disk")
    [episode] = await provider.episodes(user_id="ada")
    assert (episode.exit, episode.tools[0].errors) == ("error", 1)
    assert episode.failed == ("explode failed: ValueError: disk on fire", "run failed: ValueError: disk on fire")


async def test_a_failed_model_call_is_an_error_episode(provider):
    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("upstream 502")

    memory = MemoryCapability(provider, user_id="ada", capture=False, recall=False)
    with pytest.raises(RuntimeError, match="upstream 502"):
        await Agent(FunctionModel(broken), capabilities=[memory]).run("Summarise the report")
    [episode] = await provider.episodes(user_id="ada", status="failed")
    assert (episode.exit, episode.goal) == ("error", "Summarise the report")
    assert episode.exit_detail == "RuntimeError: upstream 502"


async def test_a_cancelled_run_is_recorded_without_blocking_the_cancellation(provider):
    started = asyncio.Event()

    def slow_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("wait", {})])

    memory = MemoryCapability(provider, user_id="ada", capture=False, recall=False)
    agent = Agent(FunctionModel(slow_model), capabilities=[memory])

    @agent.tool_plain
    async def wait() -> str:
        started.set()
        await asyncio.sleep(30)
        return "never"

    task = asyncio.create_task(agent.run("Wait for the build"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await provider.flush()
    [episode] = await provider.episodes(user_id="ada")
    assert (episode.exit, episode.status, episode.sequence) == ("cancelled", "failed", ("wait",))


async def test_recording_fails_open_and_can_be_turned_off(provider, tmp_path, logs):
    root = Path(provider.root)
    (root / "episodes").write_text("not a directory")  # every episode write fails
    memory = MemoryCapability(provider, user_id="ada", capture=False, recall=False)
    result = await travel_agent(memory).run("Plan a trip")
    assert result.output == "Booked Paris then Rome." and last_turn(memory).episode is None
    assert "recording the run's episode failed" in logs.text

    other = MemoryProvider(tmp_path / "other")
    off = MemoryCapability(other, user_id="ada", capture=False, recall=False, episodes=False)
    await travel_agent(off).run("Plan a trip")
    assert last_turn(off).episode is None and not (tmp_path / "other" / "episodes").exists()
    other.close()


# -- hooks -------------------------------------------------------------------------------------
async def test_hooks_on_run_end_records_an_episode_without_pydantic_ai_runs(provider):
    hooks = MemoryHooks(provider, session_id="chat-1", user_id="ada")
    ok = await hooks.on_run_end(
        "Find the invoice",
        "Found invoice 42",
        tool_calls=["search", "search", "open"],
        usage={"requests": 3, "input_tokens": 120, "output_tokens": 30},
        cost_usd=0.0004,
    )
    assert ok is not None and ok.source == "hooks"
    assert (ok.approach, ok.tokens, ok.cost_usd, ok.status) == ("search ×2 → open", 150, 0.0004, "ok")
    bad = await hooks.on_run_end(
        "Pay the invoice", error="card declined", tool_calls=[{"name": "pay", "outcome": "failed", "detail": "402"}]
    )
    assert bad is not None
    assert (bad.exit, bad.status, bad.failed) == ("error", "failed", ("pay failed: 402", "run failed: card declined"))
    assert [e.id for e in await provider.episodes(user_id="ada")] == [bad.id, ok.id]
    assert await hooks.on_run_end("x", exit="exploded") is None  # bad input: logged, never raised


# -- scopes ------------------------------------------------------------------------------------
async def call_tool(toolset: Any, name: str, args: dict[str, Any]) -> Any:
    """Drive one tool call through a real pydantic-ai run; returns what the model was sent back."""
    seen: list[Any] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(name, args)])
        seen.extend(p.content for p in messages[-1].parts if isinstance(p, ToolReturnPart))
        return ModelResponse(parts=[TextPart("done")])

    await Agent(FunctionModel(model), toolsets=[toolset]).run("go")
    return seen[0]


@pytest.fixture
def scoped(tmp_path):
    store = EpisodeStore(tmp_path)
    made = {
        "ada": store.write(build_episode("ada deploys billing", user_id="ada", session_id="s1")),
        "bob": store.write(build_episode("bob deploys billing", user_id="bob", session_id="s1")),
        "s2": store.write(build_episode("anonymous session deploys billing", session_id="s2")),
        "project": store.write(build_episode("shared nightly deploys billing")),
    }
    return store, made


@pytest.mark.parametrize(
    "caller, visible",
    [
        (Caller(None, "ada"), {"ada", "project"}),
        (Caller("s1", "ada"), {"ada", "project"}),
        (Caller("s1", None), {"project"}),  # a session never sees its users' user-scoped runs without the user
        (Caller("s2", None), {"s2", "project"}),
        (Caller("s2", "bob"), {"bob", "s2", "project"}),
        (Caller(None, None), {"project"}),
    ],
)
async def test_every_read_path_obeys_visibility(scoped, caller, visible, tmp_path):
    store, made = scoped
    ids = {name: e.id for name, e in made.items()}
    want = {ids[n] for n in visible}
    assert {e.id for e in store.list(**caller.kwargs())} == want
    assert {e.id for e in store.list("deploys billing", **caller.kwargs())} == want
    for name, episode_id in ids.items():
        if name in visible:
            assert store.get(episode_id, **caller.kwargs()).id == episode_id
        else:
            with pytest.raises(NotFoundError, match="no episode .* visible to this caller"):
                store.get(episode_id, **caller.kwargs())
    provider = MemoryProvider(tmp_path)
    try:
        assert {e.id for e in await provider.episodes("billing", **caller.kwargs())} == want
        out = await call_tool(memory_toolset(provider, READ, caller=caller), "memory_episodes", {"query": "billing", "limit": 20})
        assert {e["id"] for e in out["episodes"]} == want and "untrusted" in out["note"]
    finally:
        provider.close()


# -- redaction, ids, input checks -----------------------------------------------------------------
def test_secrets_never_reach_the_files_or_the_index(tmp_path):
    store = EpisodeStore(tmp_path)
    episode = store.write(
        build_episode(
            f"use {SECRET} to deploy",
            output="done with password=hunter2hunter2",
            tool_calls=[{"name": "deploy", "outcome": "failed", "detail": f"bad key {SECRET}"}],
            error=f"auth failed for {SECRET}",
            user_id="ada",
        )
    )
    assert store.list("deploy", user_id="ada")[0].id == episode.id
    data = all_bytes(tmp_path)
    assert SECRET.encode() not in data and b"hunter2hunter2" not in data
    assert b"[REDACTED:" in data


def test_bad_input_is_a_typed_error_and_writes_nothing(tmp_path):
    store = EpisodeStore(tmp_path)
    for kwargs in (
        {"exit": "exploded"},
        {"user_id": SECRET},
        {"user_id": "two\nlines"},
        {"scope": "user"},
        {"cost_usd": -1.0},
        {"started": "yesterday"},
        {"tool_calls": [3]},
        {"tool_calls": [""]},
    ):
        with pytest.raises(InvalidInputError):
            build_episode("goal", **kwargs)
    with pytest.raises(InvalidInputError):
        build_episode(None)  # type: ignore[arg-type]
    for bad in ("../../etc/passwd", "ep-1", "ep-20261123-101500-ZZZZZZZZ", "", None):
        with pytest.raises(InvalidIdError):
            store.get(bad)  # type: ignore[arg-type]
    bad_kwargs: list[dict[str, Any]] = [{"limit": 0}, {"limit": 5000}, {"status": "weird"}, {"user_id": 3}]
    for kwargs in bad_kwargs:
        with pytest.raises(InvalidInputError):
            store.list(**kwargs)
    with pytest.raises(InvalidInputError):
        purge_episodes(tmp_path)
    assert not (tmp_path / "episodes").exists() or not files_under(tmp_path)
    long = build_episode("x" * 5000)
    assert len(long.goal) == 1000 and long.goal.endswith("…")


# -- quarantine ------------------------------------------------------------------------------------
def test_files_the_store_cannot_understand_are_quarantined_and_named(tmp_path):
    store = EpisodeStore(tmp_path)
    good = store.write(build_episode("a good run", user_id="ada", started="2026-11-05T10:00:00Z"))
    month = _path(good).parent
    text = _path(good).read_text()
    bad_yaml = month / "ep-20261101-000000-00000001.md"
    bad_yaml.write_text("---\ngoal: [oops\n---\nbody\n")
    wrong_id = month / "ep-20261101-000000-00000002.md"
    wrong_id.write_text(text)  # its frontmatter names another id
    wrong_month = tmp_path / "episodes" / "1999-01"
    wrong_month.mkdir()
    (wrong_month / f"{good.id}.md").write_text(text)
    (month / "ep-20261101-000000-00000003.md").write_bytes(b"---\nid: \xff\xfe\n---\n")
    (month / "ep-20261101-000000-00000004.md").symlink_to(_path(good))
    (month / "ep-20261101-000000-00000005.md").write_text(
        text.replace("scope: user", "scope: session").replace(good.id, "ep-20261101-000000-00000005")
    )
    (month / "notes.md").write_text("hello")
    (tmp_path / "episodes" / "stray.md").write_text("hello")
    assert [e.id for e in store.list(user_id="ada")] == [good.id]
    assert [e.id for e in store.list("run", user_id="ada")] == [good.id]
    problems = {Path(p["path"]).name: p["reason"] for p in store.doctor()}
    assert set(problems) == {
        bad_yaml.name,
        wrong_id.name,
        f"{good.id}.md",
        "ep-20261101-000000-00000003.md",
        "ep-20261101-000000-00000004.md",
        "ep-20261101-000000-00000005.md",
        "notes.md",
        "stray.md",
    }
    assert "does not match its file name" in problems[wrong_id.name]
    assert "month directory" in problems[f"{good.id}.md"]
    assert "UTF-8" in problems["ep-20261101-000000-00000003.md"]
    assert "symlink" in problems["ep-20261101-000000-00000004.md"]
    assert "session_id" in problems["ep-20261101-000000-00000005.md"]
    assert all("fix:" in reason for reason in problems.values())
    with pytest.raises(NotFoundError):
        store.get("ep-20261101-000000-00000001", user_id="ada")


def test_the_index_follows_hand_edits_and_is_rebuilt_when_deleted_or_damaged(tmp_path):
    store = EpisodeStore(tmp_path, rescan_interval=3600)
    first = store.write(build_episode("tune the postgres vacuum", user_id="ada"))
    second = store.write(build_episode("rotate the tls certificates", user_id="ada"))
    assert len(store.list(user_id="ada")) == 2  # a full scan: from now on reads take the fast path
    third = EpisodeStore(tmp_path).write(build_episode("renew the domain", user_id="ada"))  # another writer
    assert store.list("domain", user_id="ada")[0].id == third.id
    path = _path(first)
    path.write_text(path.read_text().replace("tune the postgres vacuum", "tune the redis eviction"))  # in place
    assert store.list("postgres vacuum", user_id="ada") == []  # the stale hit is re-checked, never served
    assert [e.id for e in store.list("redis", user_id="ada")] == [first.id]
    path.write_text(path.read_text().replace("redis eviction", "kafka retention"))
    assert [e.id for e in EpisodeStore(tmp_path, rescan_interval=0).list("kafka", user_id="ada")] == [first.id]
    os.unlink(_path(second))
    os.unlink(_path(third))
    assert [e.id for e in store.list(user_id="ada")] == [first.id]
    store.index_path.write_bytes(b"this is not a database" * 100)
    assert [e.id for e in store.list("kafka", user_id="ada")] == [first.id]
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store.index_path}{suffix}").unlink(missing_ok=True)
    assert store.count() == 1 and store.reindex() == 1


# -- listing and search ------------------------------------------------------------------------------
def test_listed_newest_first_and_searched_by_terms(tmp_path):
    store = EpisodeStore(tmp_path)
    made = [
        store.write(
            build_episode(goal, started=f"2026-11-{day:02d}T10:00:00Z", ended=f"2026-11-{day:02d}T10:05:00Z", error=err, user_id="ada")
        )
        for day, goal, err in [
            (1, "Deploying the billing service", None),
            (2, "Write the quarterly report", None),
            (3, "Deploy billing again after the outage", "timeout"),
            (4, "Plan the offsite", None),
        ]
    ]
    assert [e.id for e in store.list(user_id="ada")] == [e.id for e in reversed(made)]
    assert [e.id for e in store.list(user_id="ada", limit=2)] == [made[3].id, made[2].id]
    hits = store.list("What happened when we deployed billing?", user_id="ada")  # stemmed, stop words dropped
    assert {e.id for e in hits} == {made[0].id, made[2].id}
    assert [e.id for e in store.list("billing", user_id="ada", status="failed")] == [made[2].id]
    assert store.list("the", user_id="ada")  # only stop words: they are used rather than finding nothing
    assert store.list("kubernetes", user_id="ada") == []
    assert _path(made[0]).parent.name == "2026-11"


def test_concurrent_writers_lose_nothing(tmp_path):
    store = EpisodeStore(tmp_path)
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(10):
                EpisodeStore(tmp_path).write(build_episode(f"writer {n} run {i}", user_id="ada"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert store.count() == 50 and len(store.list(user_id="ada", limit=100)) == 50
    assert not [p for p in files_under(tmp_path) if p.name.startswith(".tmp-")]


# -- purge ----------------------------------------------------------------------------------------------
def test_purge_deletes_every_byte_of_those_episodes(tmp_path):
    store = EpisodeStore(tmp_path)
    ada1 = store.write(build_episode("ada secret-project zanzibar", user_id="ada", session_id="s1"))
    store.write(build_episode("ada zanzibar followup", user_id="ada", session_id="s2"))
    bob = store.write(build_episode("bob builds a shed", user_id="bob", session_id="s1"))
    anon = store.write(build_episode("anonymous run in s1", session_id="s1"))
    quarantined = _path(ada1).parent / "ep-20261101-000000-0000000a.md"
    quarantined.write_text('---\nuser_id: "ada"\ngoal: [zanzibar unreadable\n---\n')
    assert store.list("zanzibar", user_id="ada")  # indexed before the purge
    assert purge_episodes(tmp_path, user_id="ada", session_id="s1") == 1
    assert {e.goal for e in store.list(user_id="ada")} == {"ada zanzibar followup"}
    assert purge_episodes(tmp_path, user_id="ada") == 2  # the other run and the quarantined file naming ada
    assert b"zanzibar" not in all_bytes(tmp_path)  # files and the derived index alike
    assert purge_episodes(tmp_path, session_id="s1") == 2  # bob's run in s1 and the anonymous one
    assert store.list(user_id="bob") == [] and store.count() == 0
    assert not _path(bob).exists() and not _path(anon).exists()


# -- unsupported backends, CLI, recall ---------------------------------------------------------------------
async def test_backends_without_a_root_have_no_episodes(provider, logs):
    class RemoteBackend:  # only MemoryBackend's calls (e.g. a remote service): no EpisodesBackend, so no episodes
        def __init__(self, inner: Any) -> None:
            self._inner = inner

    for name in (
        "remember",
        "remember_many",
        "supersede",
        "get",
        "list",
        "count",
        "search",
        "forget",
        "core_lines",
        "user_md",
        "sweep",
        "reindex",
        "doctor",
        "close",
    ):
        setattr(RemoteBackend, name, lambda self, *a, _n=name, **k: getattr(self._inner, _n)(*a, **k))
    backend: Any = RemoteBackend(provider.backend)  # its methods are set on the class above, out of mypy's sight
    with pytest.raises(EpisodesUnsupportedError, match="not supported"):
        episode_store(backend)
    toolset = memory_toolset(backend, READ)
    assert "memory_episodes" not in toolset.tools and "memory_search" in toolset.tools
    remote = MemoryProvider(backend)
    with pytest.raises(EpisodesUnsupportedError):
        await remote.episodes(user_id="ada")
    memory = MemoryCapability(remote, user_id="ada", capture=False, recall=False)
    agent = travel_agent(memory)
    for _ in range(2):
        assert (await agent.run("Plan a trip")).output == "Booked Paris then Rome."
        assert last_turn(memory).episode is None
    assert "WARNING" not in logs.text  # said once, at info level, not a warning per run
    assert logs.text.count("runs are not recorded as episodes") == 1


def test_cli_lists_searches_shows_and_checks(tmp_path, capsys):
    root = tmp_path / "mem"
    (root / "records").mkdir(parents=True)
    store = EpisodeStore(root)
    a = store.write(build_episode("Deploy the billing service", tool_calls=["build", "deploy"], user_id="ada"))
    store.write(build_episode("Bob's private run", user_id="bob"))
    assert main(["--root", str(root), "episodes", "--user", "ada"]) == 0
    out = capsys.readouterr().out
    assert a.id in out and "[build → deploy]" in out and "Bob" not in out
    assert main(["--root", str(root), "episodes", "--query", "billing", "--json", "--user", "ada"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [e["id"] for e in doc["episodes"]] == [a.id] and doc["episodes"][0]["approach"] == "build → deploy"
    assert main(["--root", str(root), "episodes", "show", a.id, "--user", "ada"]) == 0
    assert "Approach: build → deploy" in capsys.readouterr().out
    assert main(["--root", str(root), "episodes", "show", a.id, "--user", "bob", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["type"] == "NotFoundError"
    assert main(["--root", str(root), "episodes", "show", "../x", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["type"] == "InvalidIdError"
    assert main(["--root", str(root), "episodes", "show"]) == 2
    assert main(["--root", str(root), "episodes", "bogus"]) == 2
    (_path(a).parent / "ep-20261101-000000-00000001.md").write_text("---\n[\n---\n")
    assert main(["--root", str(root), "episodes", "doctor", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["quarantined"]) == 1
    assert main(["--root", "postgresql://localhost/x", "episodes", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["type"] == "BackendError"  # supported there: no server here
    assert main(["--root", str(tmp_path / "missing"), "episodes"]) == 1


async def test_offline_recall_uses_episodes_for_questions_about_past_runs(provider):
    await provider.record_episode(
        "Deploy the billing service",
        user_id="ada",
        error="image pull error",
        tool_calls=["build", {"name": "deploy", "outcome": "failed", "detail": "image pull"}],
    )
    await provider.record_episode("Deploy the billing service for bob", user_id="bob")
    await provider.remember("Billing deploys need the finance team's approval.", scope="project")
    past = await provider.recall("What did we try last time to deploy billing?", user_id="ada")
    assert not past.fallback
    [ada] = await provider.episodes(user_id="ada")
    assert f"[{ada.id}]" in past.summary and "image pull" in past.summary and "bob" not in past.summary
    assert ada.id in {s["id"] for s in past.sources}
    plain = await provider.recall("Who approves billing deploys?", user_id="ada")
    assert "ep-" not in plain.summary and "finance" in plain.summary


@pytest.mark.parametrize("cost", [5e-05, 1e-07, 1.5e-12, 0.0, 3, 0.1, 2.5e20, 1.7976931348623157e308])
def test_every_number_of_an_episode_reads_back_as_written(tmp_path: Path, cost: float) -> None:
    """YAML 1.1 reads ``5e-05`` as text: such a cost used to lose the whole episode."""
    store = EpisodeStore(tmp_path / "mem")
    usage = {"requests": 10**15 - 1, "input_tokens": 0, "output_tokens": 123456789}
    built = build_episode(
        "A cheap run",
        output="done",
        tool_calls=["search"] * 3,
        usage=usage,
        cost_usd=cost,
        user_id="ada",
        started="2026-02-03T04:05:06.789Z",
        ended="2026-02-03T04:05:07+01:00",
    )
    written = store.write(built)
    back = store.get(written.id, user_id="ada")
    assert type(back.cost_usd) is float and back.cost_usd == float(cost)
    assert (back.requests, back.input_tokens, back.output_tokens) == (10**15 - 1, 0, 123456789)
    assert (back.started, back.ended, back.tools) == (built.started, built.ended, built.tools)
    assert store.list("cheap", user_id="ada")[0].cost_usd == float(cost)
    assert store.doctor() == []


def test_an_absurd_count_is_unknown_and_an_old_exponent_cost_still_reads(tmp_path: Path) -> None:
    store = EpisodeStore(tmp_path / "mem")
    ep = store.write(build_episode("Huge", usage={"input_tokens": 10**18, "output_tokens": 5}, user_id="ada"))
    assert (store.get(ep.id, user_id="ada").input_tokens, ep.output_tokens) == (None, 5)
    path = Path(store.path_of(ep.id))  # a file written by an earlier version: cost as YAML 1.1 text
    text = path.read_text(encoding="utf-8").replace("---\n", "---\ncost_usd: 5e-05\n", 1)
    path.write_text(text, encoding="utf-8")
    assert store.get(ep.id, user_id="ada").cost_usd == 5e-05 and store.doctor() == []
