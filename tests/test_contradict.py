"""Contradictions caught on write: ``provider.contradict``, capture superseding, ``remember``'s warning and ``--supersede``."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from agent_memory import MemoryDraft
from agent_memory.consolidate.contradict import judge

ROOT = Path(__file__).resolve().parents[1]


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_contradict", ROOT / "benchmarks" / "bench_contradict.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_precision_and_recall_on_the_labelled_sets(backend: Any) -> None:
    bench = _bench()
    provider = backend.provider()
    tag = uuid.uuid4().hex[:6]
    shipped = await bench.evaluate(provider, bench.load(bench.SETS[0]), tag=f"s{tag}-")
    held_out = await bench.evaluate(provider, bench.load(bench.SETS[1]), tag=f"h{tag}-")
    held_out2 = await bench.evaluate(provider, bench.load(bench.SETS[2]), tag=f"k{tag}-")
    assert shipped["pairs"] >= 80 and 0.4 <= shipped["conflicting"] / shipped["pairs"] <= 0.6
    assert shipped["precision"] >= 0.9, shipped["misses"]
    assert shipped["recall"] >= 0.9, shipped["misses"]  # measured .98 (docs/benchmarks.md)
    assert held_out["precision"] >= 0.9, held_out["misses"]
    assert held_out["recall"] >= 0.85, held_out["misses"]  # measured 1.0 before any tuning, .933 after issue 30
    # written before the issue-30 fix: precision .5 (20 false alarms on look-alikes), recall .909 (docs/benchmarks.md)
    assert held_out2["pairs"] >= 40 and sum(1 for p in bench.load(bench.SETS[2]) if p["case"] == "lookalike") >= 20
    assert held_out2["precision"] >= 0.9, held_out2["misses"]
    assert held_out2["recall"] >= 0.85, held_out2["misses"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Notes on otters.", "Notes on kelp."),
        ("User is allergic to peanuts.", "User is allergic to shellfish."),
        ("User lives in Berlin.", "The user lives in Berlin."),
        ("My favourite colour is blue.", "My favorite color is blue."),
        ("Alice lives in Berlin.", "Bob lives in Paris."),
        ("User lives in Berlin.", "User lives in Berlin with two cats."),
        ("User lives in Berlin.", "User lives in a flat."),
    ],
)
def test_look_alikes_restatements_and_additions_are_not_contradictions(old: str, new: str) -> None:
    assert judge(old, new) is None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # another preposition is another relation, not another value
        ("The customer is on the Pro plan", "The customer is in Berlin"),
        ("Ada lives in Berlin", "Ada lives near the river"),
        ("Omar works at Google.", "Omar works on search."),
        # a copula and an adjective: two attributes of one thing
        ("The build is slow", "The build is green"),
        ("The laptop is old.", "The laptop is heavy."),
        # preferences about different things both hold
        ("Ada prefers email", "Ada prefers dark mode"),
        ("I prefer email for updates.", "I prefer short answers."),
        ("I prefer short answers.", "I prefer tea in the morning."),
        ("I prefer email for updates.", "I prefer tea in the morning."),
    ],
)
def test_another_relation_attribute_or_preference_is_no_contradiction(old: str, new: str) -> None:
    assert judge(old, new) is None and judge(new, old) is None


@pytest.mark.parametrize(
    ("old", "new", "values", "reason"),
    [
        (
            "Ada lives in Berlin.",
            "Ada lives in Lisbon.",
            ("Berlin", "Lisbon"),
            "the name after 'lives in' changed from 'Berlin' to 'Lisbon'",
        ),
        ("I prefer email for updates.", "I prefer Slack for updates.", ("email", "Slack"), "the preference for 'for updates' changed"),
        ("The build is fast.", "The build is slow.", ("fast", "slow"), "the state after 'is' flipped from 'fast' to 'slow'"),
        ("The dark theme is enabled.", "The dark theme is disabled.", ("enabled", "disabled"), "flipped"),
        ("The invoice is paid.", "The invoice is unpaid.", ("paid", "unpaid"), "flipped"),
        ("The user's favourite colour is blue.", "The user's favourite colour is green.", ("blue", "green"), "after 'is'"),
        ("The customer is on the Pro plan.", "The customer is on the Basic plan.", ("Pro", "Basic"), "after 'is on'"),
        ("User is vegetarian.", "User is vegan.", ("vegetarian", "vegan"), "the value after 'is' changed from 'vegetarian' to 'vegan'"),
        ("The light is on.", "The light is off.", ("on", "off"), "flipped from 'on' to 'off'"),
        ("Alice is a doctor.", "Alice is a teacher.", ("doctor", "teacher"), "the value after 'is' changed"),
        (
            "The bug is in the login form.",
            "The bug is in the payment page.",
            ("login form", "payment page"),
            "the value after 'is in' changed from 'login form' to 'payment page'",
        ),
    ],
)
def test_a_true_conflict_still_is_one_and_its_reason_says_what_changed(old: str, new: str, values: tuple[str, str], reason: str) -> None:
    verdict = judge(old, new)
    assert verdict is not None and (verdict.old_value, verdict.new_value) == values
    assert reason in verdict.reason and "one word" not in verdict.reason


async def test_provider_contradict_reports_none_of_the_users_false_positives(backend: Any) -> None:
    provider = backend.provider()
    pairs = [
        ("The customer is on the Pro plan", "The customer is in Berlin"),
        ("Ada lives in Berlin", "Ada lives near the river"),
        ("The build is slow", "The build is green"),
        ("Ada prefers email", "Ada prefers dark mode"),
    ]
    for i, (old, new) in enumerate(pairs):
        await provider.remember(old, user_id=f"fp{i}", scope="user")
        assert await provider.contradict(new, user_id=f"fp{i}") == [], (old, new)
    berlin = await provider.remember("Ada lives in Berlin", user_id="fp1", scope="user")
    found = await provider.contradict("Ada lives in Lisbon", user_id="fp1")
    assert [c.record.id for c in found][:1] == [berlin.id] and (found[0].old_value, found[0].new_value) == ("Berlin", "Lisbon")
    assert await provider.contradict("Ada lives in Lisbon", user_id="fp0") == []  # another user's Berlin is not visible


async def test_capture_keeps_preferences_about_different_things(backend: Any) -> None:
    provider = backend.provider()
    turns = ["I prefer email for updates.", "I prefer short answers.", "I prefer tea in the morning."]
    for turn in turns:
        result = await provider.capture_turn(turn, "Noted.", user_id="alice")
        assert not result.fallback and result.contradicted == [] and len(result.ids) == 1
    await provider.capture_turn("I prefer email for updates.", "Noted.", user_id="bob")
    current = sorted(r.content for r in await provider.list(user_id="alice"))
    assert current == ["User prefers email for updates.", "User prefers short answers.", "User prefers tea in the morning."]
    # the same slot with another value still supersedes: one preference for updates
    slack = await provider.capture_turn("I prefer Slack for updates.", "Noted.", user_id="alice")
    assert [c["action"] for c in slack.contradicted] == ["superseded"]
    current = sorted(r.content for r in await provider.list(user_id="alice"))
    assert current == ["User prefers Slack for updates.", "User prefers short answers.", "User prefers tea in the morning."]
    assert [r.content for r in await provider.list(user_id="bob")] == ["User prefers email for updates."]  # untouched


@pytest.mark.parametrize("kind", ["files", "postgres"])
def test_cli_capture_keeps_three_preferences(kind: str, tmp_path: Path) -> None:
    if kind == "postgres":
        from _pg import require_psycopg, server

        require_psycopg()
        root = server().url
    else:
        root = str(tmp_path / "mem")
        _cli(root, "init")
    ada = f"ada-{uuid.uuid4().hex[:6]}"
    for turn in ("I prefer email for updates.", "I prefer short answers.", "I prefer tea in the morning."):
        _cli(root, "capture", "--input", turn, "--user", ada)
    listed = json.loads(_cli(root, "--json", "list", "--user", ada).stdout)["records"]
    assert sorted(r["content"] for r in listed) == [
        "User prefers email for updates.",
        "User prefers short answers.",
        "User prefers tea in the morning.",
    ]
    out = _cli(root, "remember", "Ada prefers email", "--user", ada)
    out = _cli(root, "remember", "Ada prefers short answers", "--user", ada)
    assert "contradicts" not in out.stderr


def test_a_changed_value_or_a_negation_is_one_with_its_subject_and_values() -> None:
    verdict = judge("The Q3 budget is 40k euros.", "The Q3 budget is 55k euros.")
    assert verdict is not None and (verdict.old_value, verdict.new_value) == ("40k", "55k") and "budget" in verdict.subject
    assert judge("User eats meat.", "User does not eat meat.") is not None
    keyed = judge("Vim.", "Emacs.", old_key="user.editor", new_key="user.editor")
    assert keyed is not None and "memory_key" in keyed.reason


async def test_contradict_sees_only_what_the_caller_sees_and_never_history(backend: Any) -> None:
    provider = backend.provider()
    bob = await provider.remember("The staging server is in eu-west-1.", user_id="bob", scope="user")
    assert await provider.contradict("The staging server is in us-east-1.", user_id="alice") == []
    found = await provider.contradict("The staging server is in us-east-1.", user_id="bob")
    assert [c.record.id for c in found] == [bob.id]
    assert (found[0].old_value, found[0].new_value) == ("eu-west-1", "us-east-1") and found[0].to_dict()["title"]
    new = await provider.supersede(bob.id, MemoryDraft("The staging server is in us-east-1.", scope="user", user_id="bob"))
    assert await provider.contradict("The staging server is in us-east-1.", user_id="bob") == []  # its own old version
    assert [c.record.id for c in await provider.contradict("The staging server is in ap-south-1.", user_id="bob")] == [new.id]
    await provider.forget(new.id, user_id="bob")
    assert await provider.contradict("The staging server is in ap-south-1.", user_id="bob") == []


async def test_capture_supersedes_a_contradicted_fact_instead_of_storing_both(backend: Any) -> None:
    provider = backend.provider()
    first = await provider.capture_turn("I prefer window seats on flights.", "Noted.", user_id="alice")
    await provider.capture_turn("I prefer window seats on flights.", "Noted.", user_id="bob")
    second = await provider.capture_turn("I prefer aisle seats on flights.", "Noted.", user_id="alice")
    assert not second.fallback and second.contradicted[0]["action"] == "superseded"
    assert second.contradicted[0]["contradicts"] == first.ids[0]
    current = [r.content for r in await provider.list(user_id="alice")]
    assert current == ["User prefers aisle seats on flights."]  # the old code kept both
    old = await provider.get(first.ids[0], user_id="alice")
    assert old.superseded_by == second.ids[0]
    assert [r.content for r in await provider.list(user_id="bob")] == ["User prefers window seats on flights."]  # untouched
    events = [(e.event, e.id) for e in await provider.events(user_id="alice")]
    assert ("superseded", second.ids[0]) in events
    await provider.undo(user_id="alice")  # evented and restorable: the window seat is current again
    assert [r.content for r in await provider.list(user_id="alice")] == ["User prefers window seats on flights."]


async def test_capture_with_an_extractor_supersedes_and_leaves_foreign_records(backend: Any) -> None:
    def extract(ctx: Any) -> list[MemoryDraft]:
        return [MemoryDraft(ctx.input, scope="user")]

    provider = backend.provider(turn_extractor=extract)
    manual = await provider.remember("The user's manager is Priya Shah.", user_id="alice", scope="user")
    captured = await provider.capture_turn("The team's tech lead is Hannah.", user_id="alice")
    result = await provider.capture_turn("The team's tech lead is Victor.", user_id="alice")
    assert result.contradicted[0]["action"] == "superseded" and result.contradicted[0]["contradicts"] == captured.ids[0]
    kept = await provider.capture_turn("The user's manager is Tom Becker.", user_id="alice")
    assert kept.contradicted[0] == {**kept.contradicted[0], "contradicts": manual.id, "action": "kept"}  # capture never changes it
    contents = sorted(r.content for r in await provider.list(user_id="alice"))
    assert contents == ["The team's tech lead is Victor.", "The user's manager is Priya Shah.", "The user's manager is Tom Becker."]


async def test_a_failing_check_stores_the_fact_as_before(backend: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import agent_memory.consolidate.contradict as contradict

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("search is down")

    provider = backend.provider()
    await provider.capture_turn("I prefer window seats on flights.", "Noted.", user_id="alice")
    monkeypatch.setattr(contradict, "backend_contradictions", broken)
    result = await provider.capture_turn("I prefer aisle seats on flights.", "Noted.", user_id="alice")
    assert not result.fallback and result.contradicted == [] and len(result.ids) == 1
    assert len(await provider.list(user_id="alice")) == 2


def _cli(root: str, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", root, *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert (out.returncode == 0) is ok, out.stderr
    return out


@pytest.mark.parametrize("kind", ["files", "postgres"])
def test_cli_remember_says_what_it_contradicts_and_supersedes_it(kind: str, tmp_path: Path) -> None:
    if kind == "postgres":
        from _pg import require_psycopg, server

        require_psycopg()
        root = server().url
    else:
        root = str(tmp_path / "mem")
    alice, bob = f"alice-{uuid.uuid4().hex[:6]}", f"bob-{uuid.uuid4().hex[:6]}"
    old = json.loads(_cli(root, "--json", "remember", "The staging server is in eu-west-1.", "--user", alice).stdout)["id"]
    out = _cli(root, "remember", "The staging server is in us-east-1.", "--user", bob)
    assert "contradicts" not in out.stderr  # bob cannot see alice's record
    out = _cli(root, "--json", "remember", "The staging server is in us-east-1.", "--user", alice, "--tag", "x")
    doc = json.loads(out.stdout)
    assert f"this contradicts {old} (The staging server is in eu-west-1.)" in out.stderr
    assert [c["id"] for c in doc["contradicts"]] == [old] and doc["contradicts"][0]["new_value"] == "us-east-1"
    _cli(root, "forget", doc["id"], "--user", alice)
    out = _cli(root, "--json", "remember", "The staging server is in us-west-2.", "--user", alice, "--supersede")
    doc = json.loads(out.stdout)
    assert doc["status"] == "superseded" and doc["superseded"] == old and doc["contradicts"] == []
    assert "contradicts" not in out.stderr
    listed = json.loads(_cli(root, "--json", "list", "--user", alice).stdout)["records"]
    assert [r["content"] for r in listed] == ["The staging server is in us-west-2."]
    out = _cli(root, "remember", "Notes on kelp.", "--user", alice, "--supersede", ok=False)
    assert "contradicts no record" in out.stderr


async def test_the_remember_tool_says_what_a_new_fact_contradicts(backend: Any) -> None:
    from _doubles import plain_tools

    from agent_memory.agents.tools import FOREGROUND, memory_toolset

    provider = backend.provider()
    old = await provider.remember("The staging server is in eu-west-1.", user_id="alice", scope="user")
    await provider.remember("The staging server is in eu-west-1.", user_id="bob", scope="user")
    alice = plain_tools(memory_toolset(provider, FOREGROUND, user_id="alice"))
    done = await alice["memory_remember"](content="The staging server is in us-east-1.")
    assert [c["id"] for c in done["contradicts"]] == [old.id] and done["contradicts"][0]["old_value"] == "eu-west-1"
    carol = plain_tools(memory_toolset(provider, FOREGROUND, user_id="carol"))
    assert "contradicts" not in await carol["memory_remember"](content="The staging server is in us-east-1.")


async def test_the_mcp_remember_result_names_what_it_contradicts(tmp_path: Path) -> None:
    from _mcp_util import free_port, http_session, payload, start_http, stop, write_tokens

    from agent_memory.backends.files.store import MemoryStore

    root = tmp_path / "mem"
    MemoryStore(root).close()
    alice, bob = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
    tokens = write_tokens(tmp_path / "tokens.json", {alice: {"user": "alice"}, bob: {"user": "bob"}})
    port = free_port()
    proc = start_http(root, "--tokens", str(tokens), port=port)
    try:
        async with http_session(f"http://127.0.0.1:{port}/mcp", alice) as a, http_session(f"http://127.0.0.1:{port}/mcp", bob) as b:
            first = payload(await a.call_tool("memory_remember", {"content": "The staging server is in eu-west-1."}))
            second = payload(await a.call_tool("memory_remember", {"content": "The staging server is in us-east-1."}))
            assert [c["id"] for c in second["contradicts"]] == [first["id"]]
            assert "contradicts" not in payload(await b.call_tool("memory_remember", {"content": "The staging server is in us-east-1."}))
    finally:
        stop(proc)
