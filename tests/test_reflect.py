"""Reflect: a cited answer from what the caller may see; ungrounded answers fall back, flagged; never raises."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from _doubles import first_prompt, returned
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory import MemoryProvider
from agent_memory.agents.profiles import load_profile, parse_profile
from agent_memory.agents.tools import FOREGROUND, READ, memory_toolset
from agent_memory.cli import main as cli_main
from agent_memory.errors import ProfileError


def _provider(tmp_path: Path, model: Any = None) -> MemoryProvider:
    profile = load_profile("offline")
    if model is not None:
        profile = profile.with_models(reflect=model)
    return MemoryProvider(tmp_path / "m", durable=False, profile=profile)


async def _seed(provider: MemoryProvider) -> dict[str, str]:
    ids = {}
    ids["deploy"] = (await provider.remember("Deploys happen on Fridays after the noon standup.", scope="project")).id
    ids["region"] = (await provider.remember("The staging cluster runs in eu-west-1.", scope="project")).id
    ids["ada"] = (await provider.remember("Ada drinks oat latte in the morning.", user_id="ada")).id
    ids["bob"] = (await provider.remember("Bob drinks espresso with oat milk in the morning.", user_id="bob")).id
    return ids


def _searcher(answer: Any) -> FunctionModel:
    """Search for the question, then answer with ``answer(hits)`` (hits: the ids memory_search returned)."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if not returns:
            question = first_prompt(messages).split("Message:\n", 1)[-1]
            return ModelResponse(parts=[ToolCallPart("memory_search", {"query": question}, tool_call_id="s")])
        hits = [h["id"] for h in returned(returns[0])["hits"]]
        return ModelResponse(parts=[TextPart(answer(hits))])

    return FunctionModel(model)


def test_offline_reflect_answers_extractively_with_valid_citations(tmp_path: Path) -> None:
    async def run() -> None:
        provider = _provider(tmp_path)
        ids = await _seed(provider)
        res = await provider.reflect("When do deploys happen?")
        assert not res.fallback and "Fridays" in res.answer
        assert res.sources and res.sources[0]["id"] == ids["deploy"] and f"[{ids['deploy']}:L" in res.answer
        assert 0.5 <= res.confidence <= 1.0
        none = await provider.reflect("What is the capital of Peru?")
        assert none.answer == "" and none.sources == [] and none.confidence == 0.0
        await provider.aclose()

    asyncio.run(run())


def test_reflect_sees_only_the_callers_partitions(tmp_path: Path) -> None:
    async def run() -> None:
        provider = _provider(tmp_path)
        ids = await _seed(provider)
        res = await provider.reflect("What does Ada drink in the morning?", user_id="ada")
        cited = {s["id"] for s in res.sources}
        assert ids["ada"] in cited and ids["bob"] not in cited and "espresso" not in res.answer
        anon = await provider.reflect("What does Bob drink in the morning?")
        assert ids["bob"] not in {s["id"] for s in anon.sources} and "espresso" not in anon.answer
        await provider.aclose()

    asyncio.run(run())


def test_grounded_model_answer_is_used(tmp_path: Path) -> None:
    async def run() -> None:
        provider = _provider(tmp_path, _searcher(lambda hits: f"Deploys go out on Fridays after the standup. [{hits[0]}]"))
        ids = await _seed(provider)
        res = await provider.reflect("When do deploys happen?")
        assert not res.fallback and res.answer.startswith("Deploys go out on Fridays")
        assert [s["id"] for s in res.sources] == [ids["deploy"]] and res.confidence > 0.5
        await provider.aclose()

    asyncio.run(run())


@pytest.mark.parametrize(
    "answer, reason",
    [
        (lambda hits: "Deploys are on Fridays. [2026-01-01-invented-record-deadbeef:L1-L2]", "ungrounded"),
        (lambda hits: "Deploys are on Fridays, trust me.", "ungrounded"),
    ],
)
def test_ungrounded_answer_falls_back_to_the_extractive_one_flagged(tmp_path: Path, answer: Any, reason: str) -> None:
    async def run() -> None:
        provider = _provider(tmp_path, _searcher(answer))
        ids = await _seed(provider)
        res = await provider.reflect("When do deploys happen?")
        assert res.fallback and reason in (res.reason or "")
        assert "trust me" not in res.answer and "invented" not in res.answer
        assert res.sources and {s["id"] for s in res.sources} <= set(ids.values())
        assert res.sources[0]["id"] == ids["deploy"]
        await provider.aclose()

    asyncio.run(run())


def test_model_error_and_timeout_never_raise(tmp_path: Path) -> None:
    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("provider exploded")

    async def slow(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(5)
        return ModelResponse(parts=[TextPart("late")])

    async def run() -> None:
        provider = _provider(tmp_path, FunctionModel(broken))
        await _seed(provider)
        res = await provider.reflect("When do deploys happen?")
        assert res.fallback and "provider exploded" in (res.reason or "") and "Fridays" in res.answer
        provider2 = MemoryProvider(
            tmp_path / "m", durable=False, profile=load_profile("offline").with_models(reflect=FunctionModel(function=slow))
        )
        res2 = await provider2.reflect("When do deploys happen?", timeout_s=0.2)
        assert res2.fallback and "timeout" in (res2.reason or "") and res2.elapsed_s < 3
        empty = await provider.reflect("   ")
        assert empty.answer == "" and empty.reason == "empty question"
        await provider.aclose()
        await provider2.aclose()

    asyncio.run(run())


def test_memory_reflect_is_a_foreground_tool_bound_to_the_caller(tmp_path: Path) -> None:
    seen: list[Any] = []

    def main_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append({t.name for t in info.function_tools})
        returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if not returns:
            return ModelResponse(parts=[ToolCallPart("memory_reflect", {"question": "What does Bob drink?"}, tool_call_id="r")])
        seen.append(returns[0].content)
        return ModelResponse(parts=[TextPart("done")])

    async def run() -> None:
        provider = _provider(tmp_path)
        ids = await _seed(provider)
        await Agent(FunctionModel(main_model), toolsets=[memory_toolset(provider, FOREGROUND, user_id="ada")]).run("go")
        assert "memory_reflect" in seen[0] and set(FOREGROUND) == seen[0]
        result = seen[-1]
        assert ids["bob"] not in json.dumps(result) and "espresso" not in json.dumps(result)  # bound to ada
        assert set(result) >= {"answer", "sources", "confidence", "fallback", "note"}
        # built from a bare backend there is no worker to reflect with: the tool is not offered
        names = set(memory_toolset(provider.backend, FOREGROUND, user_id="ada").tools)
        assert "memory_reflect" not in names and "memory_forget" in names
        await provider.aclose()

    asyncio.run(run())


def test_cli_reflect(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = str(tmp_path / "m")
    assert cli_main(["--root", root, "init"]) == 0
    assert cli_main(["--root", root, "remember", "Backups run nightly at 02:00 UTC.", "--scope", "project"]) == 0
    capsys.readouterr()
    assert cli_main(["--root", root, "reflect", "when do backups run?", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "02:00" in doc["answer"] and doc["fallback"] is False and doc["sources"]
    (tmp_path / "p.toml").write_text(
        '[recall]\nmodel = "offline"\n[reflect]\nmodel = "litellm:openai/gpt-4o-mini"\napi_key_env = "NO_SUCH_KEY_FOR_TEST"\n',
        encoding="utf-8",
    )
    assert cli_main(["--root", root, "reflect", "when do backups run?", "--profile", str(tmp_path / "p.toml")]) == 3
    out = capsys.readouterr()
    assert "02:00" in out.out and "NO_SUCH_KEY_FOR_TEST" in out.err


def test_profile_roles_inherit_the_recall_model_and_only_narrow_tools() -> None:
    prof = parse_profile({"recall": {"model": "litellm:openai/gpt-4o-mini", "api_key_env": "K"}})
    assert prof.reflect.model == "litellm:openai/gpt-4o-mini" and prof.reflect.api_key_env == "K"
    assert prof.consolidate.model == "litellm:openai/gpt-4o-mini" and "memory_forget" not in prof.consolidate.tools
    assert prof.reflect.tools == READ  # read-only
    with pytest.raises(ProfileError, match="not allowed"):
        parse_profile({"reflect": {"tools": ["memory_search", "memory_remember"]}})
    with pytest.raises(ProfileError, match="not allowed"):
        parse_profile({"consolidate": {"tools": ["memory_forget"]}})
    assert load_profile("offline").reflect.model == "offline"


# -- conflicting facts: flagged, the newest preferred, never confidence 1.00 (issue 27) ---------------------
def test_reflect_flags_conflicting_facts_and_prefers_the_newest(tmp_path: Path) -> None:
    async def run() -> None:
        provider = _provider(tmp_path)
        # written in the other order: "newest" is the fact that started to hold last, not the last file written
        fri = (await provider.remember("Deploy day for the web app is Friday", scope="project", valid_from="2026-06-01")).id
        mon = (await provider.remember("Deploy day for the web app is Monday", scope="project", valid_from="2026-01-01")).id
        res = await provider.reflect("What is the deploy day for the web app?")
        assert not res.fallback and {s["id"] for s in res.sources} == {fri, mon}
        assert res.conflicts == [{"ids": [fri, mon], "newest": fri, "differ": ["friday", "monday"]}]
        assert res.confidence == 0.5  # every question word is covered, but memory disagrees with itself
        first, *rest = res.answer.splitlines()
        assert first.startswith("Conflict:") and f"the newest, [{fri}:L" in first
        assert f"[{fri}:L" in rest[0] and "Friday" in rest[0] and "Monday" in rest[1]
        from agent_memory.agents.workers.reflect import _flag_conflicts

        srcs = [{"id": "m", "line_start": 1, "line_end": 1}, {"id": "f", "line_start": 2, "line_end": 2}]
        flagged = _flag_conflicts(
            "- Monday [m:L1-L1]\n- see the wiki\n- Friday [f:L2-L2]", srcs, [{"ids": ["f", "m"], "newest": "f", "differ": []}]
        )
        assert flagged.splitlines() == [
            "Conflict: these records disagree; the newest, [f:L2-L2], is preferred over [m:L1-L1].",
            "- Friday [f:L2-L2]",
            "- see the wiki",
            "- Monday [m:L1-L1]",
        ]
        # a model's grounded answer citing both is flagged the same way
        both = _provider(tmp_path, _searcher(lambda hits: " ".join(f"It is listed [{h}]." for h in hits)))
        res = await both.reflect("What is the deploy day for the web app?")
        assert not res.fallback and res.conflicts and res.conflicts[0]["newest"] == fri and res.confidence <= 0.5
        await both.aclose()
        await provider.aclose()

    asyncio.run(run())


def test_superseded_versions_and_unrelated_lookalikes_are_not_conflicts(tmp_path: Path) -> None:
    from agent_memory.agents.workers.reflect import conflicts_of
    from agent_memory.backends.files.store import MemoryStore

    store = MemoryStore(tmp_path / "s", durable=False)
    old = store.remember("Deploy day for the web app is Monday", scope="project")
    new = store.remember("Deploy day for the web app is Friday", scope="project", supersedes=old.id)
    assert conflicts_of([store.get(old.id), store.get(new.id)]) == []  # history, not a disagreement
    notes = [
        store.get(store.remember(f"Meeting notes on {t} from the weekly sync", scope="project").id)
        for t in ("kafka", "redis", "nginx", "docker", "helm", "vault")
    ]
    assert conflicts_of(notes) == []
    mine = store.remember("Ada takes oat latte in the morning", user_id="ada", memory_key="drink")
    shared = store.remember("Espresso, no sugar", scope="project", memory_key="drink")
    found = conflicts_of([store.get(mine.id, user_id="ada"), store.get(shared.id)])
    assert len(found) == 1 and set(found[0]["ids"]) == {mine.id, shared.id}
    store.close()

    async def run() -> None:
        provider = MemoryProvider(tmp_path / "s", durable=False, profile=load_profile("offline"))
        res = await provider.reflect("What is the deploy day for the web app?")
        assert res.conflicts == [] and res.confidence == 1.0 and {s["id"] for s in res.sources} == {new.id}
        await provider.aclose()

    asyncio.run(run())


def test_cli_reflect_reports_the_conflict(tmp_path: Path) -> None:
    import subprocess
    import sys

    am = str(Path(sys.executable).with_name("agent-memory"))
    root = str(tmp_path / "m")

    def call(*args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([am, "--root", root, *args], capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        return proc

    call("init")
    call("remember", "The on-call phone is carried by Kofi", "--valid-from", "2026-01-01")
    new = json.loads(call("--json", "remember", "The on-call phone is carried by Ada", "--valid-from", "2026-03-01").stdout)
    doc = json.loads(call("--json", "reflect", "who carries the on-call phone?").stdout)
    assert doc["confidence"] <= 0.5 and doc["conflicts"][0]["newest"] == new["id"]
    text = call("reflect", "who carries the on-call phone?").stdout
    assert text.startswith("Conflict:") and "1 conflict(s) among the cited records, the newest preferred" in text
