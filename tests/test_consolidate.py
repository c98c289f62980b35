"""Consolidation: merges only true near-duplicates, sweeps, decays, lints, never destroys, and obeys its share limit."""

from __future__ import annotations

import asyncio
import datetime as dt
import importlib.util
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from _doubles import first_prompt
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory import MemoryProvider
from agent_memory.agents.profiles import load_profile
from agent_memory.backends.extended import Hooks
from agent_memory.backends.files.store import MemoryStore
from agent_memory.cli import main as cli_main
from agent_memory.consolidate import ConsolidationUnsupported, RecallLog, consolidate, consolidate_backend, similar
from agent_memory.errors import InvalidInputError

ROOT = Path(__file__).resolve().parents[1]


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_consolidate", ROOT / "benchmarks" / "bench_consolidate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_consolidate"] = module
    spec.loader.exec_module(module)
    return module


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.md")) if p.name != "MEMORY.md"}


def test_seeded_store_merges_planted_duplicates_only(tmp_path: Path) -> None:
    """On a seeded store: merge precision 1.0, recall ≥ 0.9, no contradiction or other user's copy touched, nothing lost."""
    bench = _bench()
    corpus = bench.seed(150, 3)
    store, truth = bench.build(tmp_path / "mem", corpus)
    before = _files(tmp_path / "mem")
    plan = consolidate(store, dry_run=True, max_share=1.0)
    assert _files(tmp_path / "mem") == before  # a dry run changes nothing
    rep = consolidate(store, max_share=1.0)
    figures = bench.score(truth, rep)
    assert figures["precision"] == 1.0 and figures["recall"] >= 0.9, figures
    assert figures["unrelated_touched"] == 0 and figures["contradictions_touched"] == 0 and figures["other_user_touched"] == 0
    assert figures["contradictions_flagged"] == 1.0, figures
    assert [c.record_id for c in plan.changes] == [c.record_id for c in rep.changes]  # the plan is what ran
    live = {p.name for p in (tmp_path / "mem" / "records").iterdir()}
    archived = {p.name for p in (tmp_path / "mem" / "archive").iterdir()}
    assert set(before) == {f"records/{n}" for n in live} | {f"records/{n}" for n in archived}  # nothing lost
    store.close()


def test_archived_record_keeps_its_text_and_reason_and_can_be_restored(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m", durable=False)
    keep = store.remember("The staging cluster runs in eu-west-1 since March.", scope="project")
    dup = store.remember("the staging cluster runs in eu-west-1 since march", scope="project")
    rep = consolidate(store, max_share=1.0)
    assert [(c.record_id, c.rule, c.status, c.related) for c in rep.changes] == [(dup.id, "merge", "applied", [keep.id])]
    text = (tmp_path / "m" / "archive" / Path(dup.path).name).read_text(encoding="utf-8")
    assert "the staging cluster runs in eu-west-1 since march" in text and f"consolidation: near-duplicate of {keep.id}" in text
    assert [r.id for r in store.list(limit=None)] == [keep.id]
    shutil.move(tmp_path / "m" / "archive" / Path(dup.path).name, tmp_path / "m" / "records" / Path(dup.path).name)
    store.reindex()
    assert store.get(dup.id).content.startswith("the staging cluster")  # restored by moving the file back
    store.close()


def test_contradictions_and_partitions_are_never_merged(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m", durable=False)
    mon = store.remember("The release train leaves on Monday.", scope="project")
    fri = store.remember("The release train leaves on Friday.", scope="project")
    neg = store.remember("Ada does not drink coffee in the afternoon.", scope="project")
    pos = store.remember("Ada does drink coffee in the afternoon.", scope="project")
    ada = store.remember("My locker code is on the blue card.", user_id="ada")
    bob = store.remember("My locker code is on the blue card.", user_id="bob")
    k1 = store.remember("Primary region: eu-west-1", scope="project", memory_key="region.primary")
    k2 = store.remember("Primary region: eu-west-1.", scope="project", memory_key="region.backup")
    rep = consolidate(store, max_share=1.0)
    assert rep.changes == []
    groups = [set(f.record_ids) for f in rep.findings if f.kind == "contradiction"]
    assert {mon.id, fri.id} in groups and {neg.id, pos.id} in groups
    assert {r.id for r in store.list(limit=None, user_id="ada")} >= {ada.id, mon.id, fri.id, neg.id, pos.id, k1.id, k2.id}
    assert store.get(bob.id, user_id="bob").id == bob.id
    store.close()


def test_share_limit_stops_and_reports_then_the_next_run_continues(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m", durable=False)
    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).isoformat()
    expiring = [store.remember(f"temporary note {i} about build {i * 37}", scope="project", expires=soon).id for i in range(6)]
    for i in range(14):
        store.remember(f"Lasting fact {i}: service {i} listens on port {8000 + i * 13}.", scope="project")
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
    rep = consolidate(store, now=later)  # default max_share 0.1 of 20 records: 2
    assert rep.limit == 2 and rep.stopped and "max_share" in (rep.stop_reason or "")
    assert [c.status for c in rep.changes] == ["applied"] * 2 + ["not_applied"] * 4
    assert all(c.rule == "ttl" and c.record_id in expiring for c in rep.changes)
    assert store.count() == 18 - 0  # the 4 not applied are expired, hence invisible, but still on disk
    assert len(list((tmp_path / "m" / "records").iterdir())) == 18
    rep2 = consolidate(store, now=later, max_share=0.5)
    assert not rep2.stopped and len(rep2.applied) == 4
    assert len(list((tmp_path / "m" / "archive").iterdir())) == 6
    store.close()


def test_scope_path_sweep_archives_only_records_whose_path_is_gone(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "services" / "api").mkdir(parents=True)
    store = MemoryStore(tmp_path / "m", durable=False)
    live = store.remember("The api service uses uvicorn workers.", scope="project", metadata={"scope_path": "services/api"})
    gone = store.remember("The billing service retries webhooks 5 times.", scope="project", metadata={"scope_path": "services/billing"})
    absolute = store.remember("Old notebook helpers live here.", scope="project", metadata={"scope_path": str(tmp_path / "nowhere")})
    plain = store.remember("No path on this one.", scope="project")
    rep = consolidate(store, max_share=1.0, workspace=str(work), rules=("scope_path",))
    assert sorted(c.record_id for c in rep.changes) == sorted([gone.id, absolute.id])
    assert all(c.rule == "scope_path" and "no longer exists" in c.reason for c in rep.changes)
    assert {r.id for r in store.list(limit=None)} == {live.id, plain.id}
    store.close()


def test_decay_needs_the_recall_log_and_spares_recalled_and_important_records(tmp_path: Path) -> None:
    async def run() -> None:
        provider = MemoryProvider(tmp_path / "m", durable=False, track_recalls=True)
        low_seen = await provider.remember("The printer on floor 2 jams on A3 paper.", scope="project", importance=0.1)
        low = await provider.remember("Lunch orders close at eleven on Fridays.", scope="project", importance=0.1)
        important = await provider.remember("Rotate the signing keys every quarter.", scope="project", importance=0.9)
        unset = await provider.remember("The kitchen has oat milk.", scope="project")
        future = dt.datetime.now(dt.UTC) + dt.timedelta(days=400)
        no_log = await provider.consolidate(max_share=1.0, now=future)
        assert no_log.changes == [] and any("decay skipped" in n for n in no_log.notes)
        hits = await provider.search("printer jams floor")
        assert hits.hits and hits.hits[0].id == low_seen.id
        log = RecallLog(tmp_path / "m")
        assert low_seen.id in log.ids() and "jams on A3 paper" not in log.path.read_text()  # ids only, never content
        rep = await provider.consolidate(max_share=1.0, now=future)
        assert [(c.record_id, c.rule) for c in rep.changes] == [(low.id, "decay")]
        assert {r.id for r in await provider.list(limit=None)} == {low_seen.id, important.id, unset.id}
        await provider.aclose()

    asyncio.run(run())


def test_lint_names_oversized_secret_unreadable_and_keyed_conflicts(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m", durable=False)
    big = store.remember("word " * 4000, scope="project")
    shared = store.remember("Deploy window: Friday 14:00", scope="project", memory_key="deploy.window")
    private = store.remember("Deploy window: Tuesday 09:00", user_id="ada", memory_key="deploy.window")
    other = store.remember("Deploy window: Monday", user_id="bob", memory_key="team.lunch")
    hand = store.remember("placeholder to edit", scope="project")
    path = Path(hand.path)
    path.write_text(path.read_text().replace("placeholder to edit", "aws key AKIAQ3EGUL5TNV7XW2PD secret"), encoding="utf-8")
    (tmp_path / "m" / "records" / "broken.md").write_text("---\ntitle: [oops\n---\nbody\n", encoding="utf-8")
    before = _files(tmp_path / "m")
    rep = consolidate(store, max_share=1.0, oversized_chars=10_000)
    kinds = {(f.kind, tuple(f.record_ids)) for f in rep.findings}
    assert ("oversized", (big.id,)) in kinds and ("secret", (hand.id,)) in kinds
    assert ("unreadable", ("broken.md",)) in kinds
    assert ("contradiction", tuple(sorted([shared.id, private.id]))) in kinds
    assert not any(other.id in ids for _, ids in kinds)
    assert rep.changes == [] and _files(tmp_path / "m") == before  # lint never acts
    store.close()


def test_options_are_checked_and_postgres_is_refused_clearly(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m", durable=False)
    for bad in ({"max_share": 1.5}, {"max_share": -0.1}, {"rules": ("merge", "purge")}, {"merge_threshold": 0}):
        with pytest.raises(InvalidInputError):
            consolidate(store, **bad)  # type: ignore[arg-type]

    class NotFiles:
        url = "postgresql://x"

    with pytest.raises(ConsolidationUnsupported, match="not supported"):
        asyncio.run(consolidate_backend(NotFiles()))
    store.close()


def test_hooks_see_each_archive_and_cli_dry_run_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[Any] = []

    async def run() -> str:
        provider = MemoryProvider(tmp_path / "m", durable=False, hooks=Hooks(on_memory_written=seen.append))
        await provider.remember("The VPN gateway is vpn2.example.net.", scope="project")
        dup = await provider.remember("the vpn gateway is vpn2.example.net", scope="project")
        seen.clear()
        plan = await provider.consolidate(dry_run=True, max_share=1.0)
        assert [c.status for c in plan.changes] == ["planned"] and seen == []
        await provider.aclose()
        return dup.id

    async def apply() -> None:
        provider = MemoryProvider(tmp_path / "m", durable=False, hooks=Hooks(on_memory_written=seen.append))
        rep = await provider.consolidate(max_share=1.0)
        assert [(w.operation, w.record_id, w.source) for w in seen] == [("archive", dup, "consolidation")]
        assert rep.applied[0].record_id == dup
        await provider.aclose()

    dup = asyncio.run(run())
    assert cli_main(["--root", str(tmp_path / "m"), "consolidate", "--dry-run", "--max-share", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["dry_run"] and doc["changes"][0]["record_id"] == dup and doc["applied"] == 0
    asyncio.run(apply())
    assert cli_main(["--root", str(tmp_path / "m"), "consolidate", "--max-share", "2"]) == 2  # usage error


def test_similarity_rules() -> None:
    same = similar.compare(
        0,
        1,
        [similar.shingles(t) for t in ("Deploys happen on Friday.", "deploys happen on friday")],
        [similar.words(t) for t in ("Deploys happen on Friday.", "deploys happen on friday")],
    )
    assert same.similarity == 1.0 and same.conflict == ()
    assert similar.conflicting(similar.words("Kofi reviews the runbook"), similar.words("Kofi reivews the runbook")) == []
    assert similar.conflicting(similar.words("Room 12 is free"), similar.words("Room 14 is free")) == ["12", "14"]
    assert similar.conflicting(similar.words("Ada eats meat"), similar.words("Ada never eats meat")) == ["never"]


# -- the consolidate worker ------------------------------------------------------------------------
def _provider(tmp_path: Path, model: Any = None) -> MemoryProvider:
    profile = load_profile("offline")
    if model is not None:
        profile = profile.with_models(consolidate=model)
    return MemoryProvider(tmp_path / "m", durable=False, profile=profile)


def test_offline_worker_carries_out_the_plan_for_its_caller_only(tmp_path: Path) -> None:
    async def run() -> None:
        provider = _provider(tmp_path)
        mine = await provider.remember("Ada's desk is by the north window.", user_id="ada")
        mine_dup = await provider.remember("ada's desk is by the north window", user_id="ada")
        bob = await provider.remember("Bob's desk is by the door.", user_id="bob")
        bob_dup = await provider.remember("bob's desk is by the door", user_id="bob")
        rep = await provider.consolidate(worker=True, user_id="ada", max_share=1.0)
        assert not rep.fallback and [(c.record_id, c.status) for c in rep.changes] == [(mine_dup.id, "applied")]
        assert {r.id for r in await provider.list(user_id="ada")} == {mine.id}
        assert {r.id for r in await provider.list(user_id="bob")} == {bob.id, bob_dup.id}  # another partition: untouched
        await provider.aclose()

    asyncio.run(run())


def test_worker_cannot_exceed_its_limit_or_reach_other_partitions_or_forget(tmp_path: Path) -> None:
    offered: list[set[str]] = []
    retries: list[str] = []
    ids: dict[str, str] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append({t.name for t in info.function_tools})
        if len(messages) == 1 and "bob_only" in ids:
            return ModelResponse(parts=[ToolCallPart("memory_archive", {"id": ids["bob"], "reason": "x"}, tool_call_id="b")])
        if len(messages) == 1:
            planned = [line.split()[1] for line in first_prompt(messages).splitlines() if line.startswith("ARCHIVE ")]
            return ModelResponse(
                parts=[
                    ToolCallPart("memory_archive", {"id": planned[0], "reason": "duplicate"}, tool_call_id="a0"),
                    ToolCallPart("memory_archive", {"id": ids["bob"], "reason": "not mine"}, tool_call_id="a1"),
                    ToolCallPart("memory_archive", {"id": ids["other"], "reason": "over the limit"}, tool_call_id="a2"),
                ]
            )
        retries.extend(str(getattr(p, "content", "")) for p in messages[-1].parts)  # what the tools said back
        return ModelResponse(parts=[TextPart("NO_REPLY")])

    async def run() -> None:
        provider = _provider(tmp_path, FunctionModel(model))
        for i in range(4):
            await provider.remember(f"Fact {i}: the cache TTL for tier {i} is short.", user_id="ada")
            await provider.remember(f"fact {i}: the cache ttl for tier {i} is short", user_id="ada")
        ids["other"] = (await provider.remember("Ada likes window seats on trains.", user_id="ada")).id
        ids["bob"] = (await provider.remember("Bob's alarm code is in the blue binder.", user_id="bob")).id
        rep = await provider.consolidate(worker=True, user_id="ada", max_share=0.12)  # 1 of 9
        assert rep.limit == 1 and len(rep.applied) == 1 and not rep.fallback
        assert any("limit" in r for r in retries), retries
        ids["bob_only"] = "1"
        retries.clear()
        rep = await provider.consolidate(worker=True, user_id="ada", max_share=1.0)
        assert rep.applied == [] and any("no record" in r for r in retries), retries  # another user: not reachable
        assert (await provider.get(ids["bob"], user_id="bob")).id == ids["bob"]
        assert (await provider.get(ids["other"], user_id="ada")).id == ids["other"]
        assert {"memory_search", "memory_get", "memory_list", "memory_remember", "memory_supersede", "memory_archive"} <= offered[0]
        assert not offered[0] & {"memory_forget", "memory_purge"}  # consolidation never deletes
        await provider.aclose()

    asyncio.run(run())


def test_worker_failure_is_reported_never_raised(tmp_path: Path) -> None:
    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("model down")

    async def run() -> None:
        provider = _provider(tmp_path, FunctionModel(broken))
        await provider.remember("Ship logs to the EU bucket.", scope="project")
        await provider.remember("ship logs to the eu bucket", scope="project")
        rep = await provider.consolidate(worker=True, max_share=1.0)
        assert rep.fallback and "model down" in (rep.reason or "")
        assert rep.applied == [] and await provider.count() == 2
        await provider.aclose()

    asyncio.run(run())


async def test_hooks_consolidate_every_n_turns_only_when_asked(tmp_path: Path) -> None:
    from agent_memory.integrations.hooks import MemoryHooks

    for every, expected in ((None, 0), (2, 1)):
        provider = MemoryProvider(tmp_path / f"mem{every}", profile="offline")
        await provider.remember("The staging cluster runs in eu-west-1.", user_id="ada")
        await provider.remember("the staging cluster runs in eu-west-1", user_id="ada")
        topics = "kites owls ferns tides maps lutes moths dunes reefs quills".split()
        for topic in topics:  # 12 records: the default 10% share allows one change
            await provider.remember(f"Ada keeps a notebook about {topic} and their habits.", user_id="ada")
        hooks = MemoryHooks(
            provider, session_id="s", user_id="ada", capture=False, recall=False, log_sessions=False, consolidate_every=every
        )
        for turn in range(3):
            await hooks.on_turn_end(f"turn {turn}", "ok")
        await hooks.flush()
        archived = list((tmp_path / f"mem{every}" / "archive").glob("*.md"))
        assert len(archived) == expected, (every, archived)  # one near-duplicate merged after turn 2, none when off
        assert await provider.count(user_id="ada") == 12 - expected
        await provider.aclose()
    with pytest.raises(ValueError):
        MemoryHooks(MemoryProvider(tmp_path / "x"), consolidate_every=0)


# -- lifecycle: supersession, the share floor, lint that names only real conflicts (issue 27) -----------------
AM = str(Path(sys.executable).with_name("agent-memory"))


def _am(root: Path, *args: str) -> Any:
    import subprocess

    proc = subprocess.run([AM, "--root", str(root), "--json", *args], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return json.loads(proc.stdout)


def test_current_statement_survives_a_merge_with_its_superseded_version(tmp_path: Path) -> None:
    """A superseded version is history: never the kept side of a merge, never merged against its successor."""
    store = MemoryStore(tmp_path / "m", durable=False)
    old = store.remember("Alice prefers the staging cluster in eu-west-1 for all deploys and tests, since March", scope="project")
    new = store.remember("Alice prefers the staging cluster in eu-west-1 for all deploys and tests", scope="project", supersedes=old.id)
    mon = store.remember("Deploy day for the web app is Monday", scope="project", memory_key="deploy-day")
    fri = store.remember("Deploy day for the web app is Friday", scope="project", memory_key="deploy-day", on_existing="replace")
    rep = consolidate(store, max_share=1.0)
    assert rep.changes == [] and rep.findings == []  # a record and its own superseded version: no contradiction
    assert store.get(new.id).superseded_by is None and store.get(old.id).superseded_by == new.id
    assert [h.id for h in store.search("staging cluster eu-west-1").hits] == [new.id]
    assert {r.id for r in store.list(limit=None)} == {new.id, fri.id} and mon.id == fri.id
    # a current near-duplicate is merged into the current statement, never into the superseded one
    dup = store.remember("alice prefers the staging cluster in eu-west-1 for all deploys and tests!!", scope="project")
    rep = consolidate(store, max_share=1.0)
    assert [(c.record_id, c.related, c.status) for c in rep.changes] == [(dup.id, [new.id], "applied")]
    assert {r.id for r in store.list(limit=None)} == {new.id, fri.id}
    store.close()


def test_cli_consolidate_keeps_the_current_fact_and_its_archive_comes_back(tmp_path: Path) -> None:
    """From the CLI (a real subprocess): the newest fact stays in list/search; restore and undo bring archives back."""
    root = tmp_path / "m"
    _am(root, "init")
    old = _am(root, "remember", "Kofi runs the release checklist every Thursday before the noon standup")["id"]
    new = _am(root, "remember", "--supersede", old, "Kofi runs the release checklist every Thursday")["id"]
    dup = _am(root, "remember", "kofi runs the release checklist, every thursday")["id"]
    other = _am(root, "remember", "The VPN gateway is vpn2.example.net")["id"]
    rep = _am(root, "consolidate")  # default max_share 0.1 of 3 current records: still one change
    assert rep["limit"] == 1 and rep["applied"] == 1 and not rep["stopped"], rep
    assert [(c["record_id"], c["related"], c["rule"]) for c in rep["changes"]] == [(dup, [new], "merge")]
    assert {r["id"] for r in _am(root, "list", "--all")["records"]} == {new, other}
    assert [h["id"] for h in _am(root, "search", "release checklist Thursday")["hits"]] == [new]
    assert any(e["event"] == "archived" and e["id"] == dup and "consolidation" in json.dumps(e) for e in _am(root, "events")["events"])
    _am(root, "restore", dup)
    assert {r["id"] for r in _am(root, "list", "--all")["records"]} == {new, dup, other}
    _am(root, "consolidate")
    _am(root, "undo")
    assert {r["id"] for r in _am(root, "list", "--all")["records"]} == {new, dup, other}


def test_a_small_store_changes_at_least_once_per_run_unless_max_share_is_zero(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m", durable=False)
    keep = store.remember("The staging cluster runs in eu-west-1 since March.", scope="project")
    dups = [
        store.remember(t, scope="project").id
        for t in ("the staging cluster runs in eu-west-1 since march", "The staging cluster runs in eu-west-1, since March!")
    ]
    assert consolidate(store, max_share=0).applied == [] and store.count() == 3
    rep = consolidate(store)  # default 0.1 of 3 records rounds down to 0: the floor is one change
    assert rep.limit == 1 and rep.stopped and [c.status for c in rep.changes] == ["applied", "not_applied"]
    rep = consolidate(store)
    assert rep.limit == 1 and not rep.stopped and len(rep.applied) == 1
    live = {r.id for r in store.list(limit=None)}
    assert len(live) == 1 and live | {p.stem for p in (tmp_path / "m" / "archive").iterdir()} == {keep.id, *dups}
    assert consolidate(store).limit == 1 and consolidate(MemoryStore(tmp_path / "empty", durable=False)).limit == 0
    store.close()


def test_lint_does_not_call_records_of_one_template_versions_of_one_statement(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m", durable=False)
    topics = (
        "kafka redis postgres nginx docker terraform ansible grafana prometheus vault consul jenkins helm "
        "istio envoy celery rabbitmq sentry airflow spark"
    ).split()
    for topic in topics:
        store.remember(f"Meeting notes on {topic} from the weekly sync", scope="project")
    mon = store.remember("The release train leaves on Monday.", scope="project")
    fri = store.remember("The release train leaves on Friday.", scope="project")
    tue = store.remember("The release train leaves on Tuesday.", scope="project")
    rep = consolidate(store, dry_run=True, max_share=1.0)
    assert rep.changes == []
    assert [sorted(f.record_ids) for f in rep.findings] == [sorted([mon.id, fri.id, tue.id])]
    assert "3 versions of one statement" in rep.findings[0].detail
    assert any(n.startswith("20 records follow one pattern ('meeting notes on _ from the weekly sync')") for n in rep.notes), rep.notes
    # pairs are never chained through a third record into one "statement"
    groups, patterns = similar.group_versions(
        [(0, 1, ("1", "2")), (1, 2, ("ada", "bob"))], ["Ada's room is 1", "Ada's room is 2", "Bob's room is 2"]
    )
    assert groups == [([0, 1], ["1", "2"]), ([1, 2], ["ada", "bob"])] and patterns == []
    store.close()
