"""Ranking users can tune: search(stages=[...]) on both backends, the CLI flags, a profile's [search] table,
the trace of each stage, and visibility acting before any stage (two users)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _doubles import tool_returns
from _pg import pg_url  # noqa: F401  (pytest fixture)
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import agent_memory
from agent_memory import MMR, InvalidInputError, MinScore, ProfileError, RecencyBoost, TimeDecay, search_stages
from agent_memory.agents.profiles import load_profile, parse_profile
from agent_memory.portable import import_file

QUERY = "deploy window friday"
OLD_ID = "2024-01-10-deploy-window-0000aaaa"
OLD_WHEN = "2024-01-10T09:00:00Z"


def old_record(user: str = "alice") -> str:
    """One export line: a record written (and last changed) in January 2024."""
    return json.dumps(
        {
            "id": OLD_ID,
            "content": "The deploy window is Friday afternoon",
            "title": "deploy window",
            "created": OLD_WHEN,
            "updated": OLD_WHEN,
            "scope": "user",
            "user_id": user,
        }
    )


def backdate_pg(url: str, schema: str, rid: str) -> None:
    """Make a PostgreSQL record two years old (an import there writes records anew, so its dates are today's)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'UPDATE "{schema}".records SET created = %s, updated = %s WHERE id = %s', (OLD_WHEN, OLD_WHEN, rid))


async def seed_ages(target: Any, tmp_path: Path) -> tuple[Any, dict[str, str]]:
    """alice: an old exact match (imported with its 2024 dates), a newer longer match, a weak match."""
    src = tmp_path / "old.jsonl"
    src.write_text(old_record() + "\n", encoding="utf-8")

    def load() -> str:
        backend = target.backend()
        try:
            report = import_file(backend, src)
            assert len(report.written) == 1, report.to_dict()
            return str(report.written[0])
        finally:
            close = getattr(backend, "close", None)
            if close is not None:
                result = close()
                if asyncio.iscoroutine(result):
                    asyncio.run(result)

    old = await asyncio.to_thread(load)
    if target.kind == "postgres":
        backdate_pg(target.target, str(target.options["schema"]), old)
    provider = target.provider()
    assert (await provider.get(old, user_id="alice")).updated.startswith("2024-01-10")
    alice = {"user_id": "alice", "scope": "user"}
    ids = {
        "old": old,
        "new": (await provider.remember("The deploy window is Friday afternoon or Monday morning after the review", **alice)).id,
        "weak": (await provider.remember("Deploy freezes start in December", **alice)).id,
    }
    return provider, ids


async def ranked(provider: Any, **kw: Any) -> list[str]:
    return [h.id for h in await provider.search(QUERY, user_id="alice", **kw)]


# -- the API, both backends --------------------------------------------------------------------------------
async def test_decay_demotes_an_old_hit_and_recency_raises_a_new_one(backend, tmp_path):
    provider, ids = await seed_ages(backend, tmp_path)
    default = await ranked(provider)
    assert default.index(ids["old"]) < default.index(ids["new"]), default  # the old exact match wins by default
    assert await ranked(provider, stages=None) == default and await ranked(provider, stages=[]) == default
    decayed = await ranked(provider, stages=[TimeDecay(half_life_days=30, floor=0.0)])
    assert decayed.index(ids["new"]) < decayed.index(ids["old"]), decayed
    recent = await ranked(provider, stages=[RecencyBoost(weight=0.5)])
    assert recent.index(ids["new"]) < recent.index(ids["old"]), recent
    assert sorted(decayed) == sorted(default) == sorted(recent)  # re-ranked, nothing lost


async def seed_duplicates(provider: Any, user: str = "alice") -> dict[str, str]:
    who = {"user_id": user, "scope": "user"}
    return {
        "a": (await provider.remember("Deploys happen on Friday afternoon after the weekly review", **who)).id,
        "dup": (await provider.remember("Deploys happen on Friday afternoon after weekly review", **who)).id,
        "other": (await provider.remember("Deploys on Friday are frozen during December", **who)).id,
        "weak": (await provider.remember("Friday lunch is tacos", **who)).id,
    }


async def test_mmr_demotes_a_near_duplicate(backend):
    provider = backend.provider()
    ids = await seed_duplicates(provider)
    query = "deploys friday afternoon review"
    default = [h.id for h in await provider.search(query, user_id="alice")]
    assert {default[0], default[1]} == {ids["a"], ids["dup"]}, default  # the duplicates lead by default
    diverse = [h.id for h in await provider.search(query, user_id="alice", stages=[MMR(lambda_=0.3)])]
    assert diverse[0] == default[0] and diverse.index(default[1]) > diverse.index(ids["other"]), diverse  # the duplicate gives way
    assert sorted(diverse) == sorted(default)


async def test_min_score_drops_weak_hits(backend):
    provider = backend.provider()
    ids = await seed_duplicates(provider)
    query = "deploys friday afternoon review"
    hits = (await provider.search(query, user_id="alice")).hits
    scores = {h.id: h.score for h in hits}
    assert ids["weak"] in scores and scores[ids["weak"]] < scores[ids["other"]]
    cut = (scores[ids["weak"]] + scores[ids["other"]]) / 2
    kept = [h.id for h in await provider.search(query, user_id="alice", stages=[MinScore(cut, signal="score", keep_if_both=False)])]
    assert ids["weak"] not in kept and ids["other"] in kept and kept[0] == hits[0].id


async def test_the_trace_shows_each_stage_before_and_after(backend, tmp_path):
    provider, ids = await seed_ages(backend, tmp_path)
    res = await provider.search(QUERY, user_id="alice", trace=True, stages=search_stages(decay_days=30, min_score=0.05, mmr=0.7))
    assert res.trace is not None
    names = [step.get("stage") for step in res.trace]
    tail = names[names.index("tuned") :]
    assert tail == ["tuned", "min_score", "time_decay", "mmr"], names
    decay = res.trace[names.index("time_decay")]
    old = next(t for t in decay["top"] if t["id"] == ids["old"])
    assert old["score"] < old["before"]  # the old record's score before and after the stage
    assert decay["params"] == {"half_life_days": 30.0, "floor": 0.0}
    plain = await provider.search(QUERY, user_id="alice", trace=True)
    assert "tuned" not in [s.get("stage") for s in plain.trace or []]  # no stages, no re-ranking


async def test_visibility_acts_before_the_stages(backend):
    """bob's near-duplicates and strong matches never change alice's MMR or min-score results."""
    provider = backend.provider()
    ids = await seed_duplicates(provider, "alice")
    query = "deploys friday afternoon review"
    stages = [MinScore(0.2, signal="score", keep_if_both=False), MMR(lambda_=0.3)]

    async def alice() -> list[tuple[str, float]]:
        res = await provider.search(query, user_id="alice", stages=stages, strict_visibility=True)
        return [(h.id, h.score) for h in res.hits]

    before = await alice()
    assert before and {i for i, _ in before} <= set(ids.values())
    bob = {"user_id": "bob", "scope": "user"}
    for text in (
        "Deploys happen on Friday afternoon after the weekly review",  # bob's copy of alice's best hit
        "Deploys happen Friday afternoon after the weekly review, review, review",
        "deploys friday afternoon review deploys friday afternoon review",
    ):
        await provider.remember(text, **bob)
    assert await alice() == before
    bobs = [h.id for h in await provider.search(query, user_id="bob", stages=stages, strict_visibility=True)]
    assert bobs and not set(bobs) & set(ids.values())  # and bob never sees alice's


async def test_a_stage_is_checked(tmp_path):
    provider = agent_memory.MemoryProvider(tmp_path / "m", durable=False)
    await provider.remember("Deploys happen on Friday")
    bads: list[Any] = ["mmr", [object()], [MMR(), "x"], 3]
    for bad in bads:
        with pytest.raises(InvalidInputError):
            await provider.search("deploys", stages=bad)
    for kw in ({"mmr": 1.5}, {"mmr": -0.1}, {"decay_days": 0}, {"min_score": 2}, {"min_score": float("nan")}, {"recency": -1}):
        with pytest.raises(InvalidInputError):
            search_stages(**kw)
    with pytest.raises(InvalidInputError):
        TimeDecay(half_life_days=-1)
    assert [type(s).__name__ for s in search_stages(recency=True, decay_days=9, mmr=0.5, min_score=0.1)] == [
        "MinScore",
        "RecencyBoost",
        "TimeDecay",
        "MMR",
    ]
    assert {"MMR", "MinScore", "TimeDecay", "RecencyBoost", "ImportanceWeight", "LengthNorm", "Stage", "search_stages"} <= set(
        agent_memory.__all__
    )
    provider.close()


# -- a profile's [search] table: what the workers' searches use ----------------------------------------------
def test_profile_search_table_is_validated(tmp_path):
    profile = parse_profile({"search": {"decay_days": 30, "mmr": 0.6}})
    assert [type(s).__name__ for s in profile.search] == ["TimeDecay", "MMR"]
    assert profile.recall.search == profile.search and profile.capture.search == profile.search
    assert load_profile("offline").recall.search == ()  # the default: no stages
    for table, word in (({"decay": 3}, "decay"), ({"mmr": 4}, "mmr"), ({"min_score": "x"}, "min_score")):
        with pytest.raises(ProfileError, match=word):
            parse_profile({"search": table})
    with pytest.raises(ProfileError, match=r"\[search\] must be a table"):
        parse_profile({"search": 3})


async def test_the_recall_workers_searches_use_the_profiles_stages(backend, tmp_path):
    provider, ids = await seed_ages(backend, tmp_path)
    seen: list[list[str]] = []

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        found = tool_returns(messages, "memory_search")
        if not found:
            return ModelResponse(parts=[ToolCallPart("memory_search", {"query": QUERY})])
        seen.append([h["id"] for h in found[0]["hits"]])
        return ModelResponse(parts=[TextPart("NO_RELEVANT_MEMORY")])

    base = load_profile("offline")
    for table, first in (({}, ids["old"]), ({"decay_days": 30}, ids["new"])):
        profile = parse_profile({"search": table}) if table else base
        profile = profile.with_models(recall=FunctionModel(script))
        tuned = backend.provider(profile=profile)
        await tuned.recall("when is the deploy window?", user_id="alice")
        assert seen[-1][0] == first, (table, seen[-1])


# -- the command line, both backends ------------------------------------------------------------------------
def cli(root: str, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEMORY_")}
    env.update({"LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": os.pathsep.join(sys.path)})
    proc = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", root, *args], capture_output=True, text=True, env=env, timeout=120
    )
    if ok:
        assert proc.returncode == 0, proc.stderr
    return proc


def cli_ids(root: str, *args: str) -> list[str]:
    return [h["id"] for h in json.loads(cli(root, "search", *args, "--user", "alice", "--json").stdout)["hits"]]


def check_cli(root: str, tmp_path: Path) -> None:
    src = tmp_path / "old.jsonl"
    src.write_text(old_record() + "\n", encoding="utf-8")
    cli(root, "import", str(src))
    old = json.loads(cli(root, "list", "--user", "alice", "--json").stdout)
    old_id = (old["records"] if isinstance(old, dict) else old)[0]["id"]
    if root.startswith("postgresql://"):
        backdate_pg(root, "agent_memory", old_id)
    alice = ("--user", "alice", "--scope", "user", "-q")
    new = cli(root, "remember", "The deploy window is Friday afternoon or Monday morning after the review", *alice).stdout.strip()
    weak = cli(root, "remember", "Deploy freezes start in December", *alice).stdout.strip()
    a = cli(root, "remember", "Deploys happen on Friday afternoon after the weekly review", *alice).stdout.strip()
    dup = cli(root, "remember", "Deploys happen on Friday afternoon after weekly review", *alice).stdout.strip()
    other = cli(root, "remember", "Deploys on Friday are frozen during December", *alice).stdout.strip()
    cli(root, "remember", "The deploy window on Friday afternoon is bob's secret", "--user", "bob", "--scope", "user")

    default = cli_ids(root, QUERY)
    assert default.index(old_id) < default.index(new), default
    decayed = cli_ids(root, QUERY, "--decay", "30")
    assert decayed.index(new) < decayed.index(old_id), decayed
    recent = cli_ids(root, QUERY, "--recency")
    assert recent.index(new) < recent.index(old_id), recent

    query = "deploys friday afternoon review"
    default = cli_ids(root, query)
    assert {default[0], default[1]} == {a, dup}, default
    diverse = cli_ids(root, query, "--mmr", "0.3")
    assert diverse[0] == default[0] and diverse.index(other) < diverse.index(default[1]), diverse  # the duplicate gives way

    hits = json.loads(cli(root, "search", query, "--user", "alice", "--json").stdout)["hits"]
    low = min(hits, key=lambda h: h["score"])
    assert low["score"] < 0.9
    kept = cli_ids(root, query, "--min-score", str(round(min(0.9, low["score"] + 0.05), 3)))
    assert low["id"] not in kept and kept and len(kept) < len(hits)
    assert weak not in cli_ids(root, query, "--min-score", "0.99") or len(hits) == 1

    doc = json.loads(cli(root, "search", QUERY, "--user", "alice", "--decay", "30", "--mmr", "0.5", "--trace", "--json").stdout)
    stages = [s.get("stage") for s in doc["trace"]]
    assert stages[stages.index("tuned") :] == ["tuned", "time_decay", "mmr"]
    assert all("before" in t for t in doc["trace"][stages.index("time_decay")]["top"])
    human = cli(root, "search", QUERY, "--user", "alice", "--decay", "30", "--trace").stdout
    assert '"stage": "time_decay"' in human and '"before"' in human
    assert "bob" not in json.dumps(doc["hits"])  # bob's record never shows up for alice

    for flags, message in (
        (("--mmr", "2"), "mmr must be at most 1"),
        (("--mmr", "-1"), "mmr must be at least 0"),
        (("--decay", "0"), "decay_days must be greater than 0"),
        (("--min-score", "1.5"), "min_score must be at most 1"),
        (("--decay", "nan"), "decay_days must be a finite number"),
        (("--decay", "soon"), "invalid float value"),
    ):
        proc = cli(root, "search", QUERY, *flags, ok=False)
        assert proc.returncode != 0 and message in proc.stderr and "Traceback" not in proc.stderr, (flags, proc.stderr)


def test_cli_ranking_flags_on_files(tmp_path):
    check_cli(str(tmp_path / "root"), tmp_path)


def test_cli_ranking_flags_on_postgres(pg_url, tmp_path):  # noqa: F811
    from _matrix import fresh_database

    check_cli(fresh_database(pg_url), tmp_path)


# -- what the stages leave alone ---------------------------------------------------------------------------
async def test_default_stages_are_unchanged():
    """The measured default pipeline is what it was; MMR without vectors uses word overlap only when asked."""
    from agent_memory.search.fusion import default_pipeline

    pipeline = default_pipeline()
    assert [s.name for s in pipeline.stages] == ["importance", "dense_floor"]
    assert dataclasses.asdict(pipeline.fuse)["weight"] == 0.55


async def test_stages_never_bring_back_a_forgotten_or_replaced_record(backend):
    provider = backend.provider()
    ids = await seed_duplicates(provider)
    keyed = await provider.remember("The deploy window is Friday afternoon", user_id="alice", scope="user", memory_key="deploy.window")
    newer = await provider.remember(
        "The deploy window is Monday morning", user_id="alice", scope="user", memory_key="deploy.window", on_existing="replace"
    )
    await provider.forget(ids["a"], user_id="alice")
    stages = search_stages(recency=True, decay_days=30, mmr=0.3, min_score=0.01)
    hits = (await provider.search("deploys deploy window friday afternoon review", user_id="alice", stages=stages, limit=20)).hits
    found = [h.id for h in hits]
    assert ids["a"] not in found and ids["dup"] in found
    assert newer.id in found and (keyed.id not in found or newer.id == keyed.id)
    assert not any("window is Friday afternoon" in h.snippet for h in hits)  # the replaced text never comes back


def test_stages_apply_on_top_of_hybrid_search(tmp_path):
    """With an embedder the default is fusion + importance + dense floor; stages run after it, traced after it."""
    import hashlib

    import numpy as np

    from agent_memory import CallableEmbedder, MemoryDraft, MemoryStore

    def embed(texts: list[str]) -> list[Any]:
        out = []
        for text in texts:
            v = np.zeros(64, dtype=np.float32)
            for w in text.lower().split():
                v[int(hashlib.md5(w.encode()).hexdigest(), 16) % 64] += 1
            out.append(v)
        return out

    store = MemoryStore(tmp_path / "m", embedder=CallableEmbedder(embed, name="bag-of-words", dim=64), durable=False)
    texts = (
        "Deploys happen on Friday afternoon after the weekly review",
        "Deploys happen on Friday afternoon after weekly review",
        "Deploys on Friday are frozen during December",
        "Friday lunch is tacos",
    )
    ids = [r.id for r in store.remember_many([MemoryDraft(content=t) for t in texts])]
    store.embed()
    query = "deploys friday afternoon review"
    default = [h.id for h in store.search(query)]
    assert set(default[:2]) == set(ids[:2])
    res = store.search(query, stages=[MMR(lambda_=0.3)], trace=True)
    assert [h.id for h in res][0] == default[0] and [h.id for h in res].index(default[1]) > 1
    steps = [s["stage"] for s in res.trace or []]
    assert steps.index("fuse") < steps.index("tuned") < steps.index("mmr")
    store.close()
