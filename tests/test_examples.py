"""The runnable examples: each runs offline as a subprocess, quickly, and says what it should."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def run(script: str, *args: str, timeout: float = 60) -> tuple[str, float]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONUNBUFFERED": "1"}
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):  # offline means offline
        env.pop(key, None)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / script), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    elapsed = time.perf_counter() - started
    assert proc.returncode == 0, f"{script} failed:\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr and "WARNING" not in proc.stderr, proc.stderr
    return proc.stdout, elapsed


def test_every_example_is_documented():
    scripts = sorted(p.name for p in EXAMPLES.glob("*.py"))
    assert scripts == ["agentic.py", "automatic_recall.py", "basic.py", "multi_user.py", "records.py"]
    readme = (EXAMPLES / "README.md").read_text()
    for name in scripts:
        assert f"`{name}`" in readme
        assert "--root" in (EXAMPLES / name).read_text() and "flush()" in (EXAMPLES / name).read_text()


def test_basic(tmp_path):
    out, elapsed = run("examples/basic.py", "--root", str(tmp_path / "mem"))
    assert elapsed < 15
    assert out.count("created") == 4 and "duplicate" in out
    assert re.search(r"staging-database-[0-9a-f]{8}\.md\s+lines \d+-\d+", out)
    assert "make migrate" in out  # the snippet
    assert "forgot: True" in out and "finds 0 record(s); 3 record(s) left" in out
    assert len(list((tmp_path / "mem" / "records").glob("*.md"))) == 3


def test_records(tmp_path):
    root = tmp_path / "mem"
    out, elapsed = run("examples/records.py", "--root", str(root))
    assert elapsed < 15
    assert "scope: project" in out and "kind: decision" in out
    assert "ada in chat-1 sees: Ada's editor, Branching model, Chat topic, Style guide" in out
    assert "bob in chat-2 sees: Bob's editor, Branching model, Style guide" in out
    assert "created, then appended, then duplicate" in out
    assert "replaced: Sprint 13: ship the capability." in out and "skipped" in out
    assert "get: We use trunk-based development; feature toggles (LaunchDarkly)" in out
    assert "search 'LaunchDarkly toggles' → 20" in out
    assert "Ada, staff engineer" in out
    assert (root / "USER.md").is_file() and (root / "MEMORY.md").is_file()


def test_agentic(tmp_path):
    out, elapsed = run("examples/agentic.py", "--root", str(tmp_path / "mem"))
    assert elapsed < 15
    part1, rest = out.split("2. The recall worker", 1)
    part2, part3 = rest.split("3. Any runtime", 1)
    for fact in ("Postgres 16", "02:00 UTC", "under 400 lines", "timezone is CET", "/v2 prefix"):
        assert fact in part1
    assert part1.count("created") >= 4 and "FALLBACK" not in out
    answers = part2.split('"')
    assert "Postgres 16" in part2.split("When does")[0]
    assert "02:00 UTC" in part2.split("When does")[1].split("How big")[0]
    assert "400 lines" in part2.split("How big")[1]
    assert re.search(r"\[[^\]]+:L\d+-L\d+\]", part2), "recall cites its sources"
    assert answers
    assert "starts with the previous request unchanged: True" in part3
    assert "From memory: The staging deploy runs every night at 02:00 UTC." in part3
    assert "flushed 1 background capture(s)" in part3


def _normalise(out: str) -> str:
    out = re.sub(r"memory root\s+\S+", "memory root ROOT", out)
    out = re.sub(r"\b\d{4}-\d{2}-\d{2}-[a-z0-9-]*-[0-9a-f]{8}\b|…[0-9a-f]{8}", "ID", out)
    return re.sub(r"\d+ tokens", "N tokens", out)


def test_automatic_recall_demo(tmp_path):
    out, elapsed = run("examples/automatic_recall.py", "--root", str(tmp_path / "mem"))
    assert elapsed < 15
    turns = out.split("\nTurn ")[1:]
    assert len(turns) == 5
    for turn in turns:  # every turn says what was injected, recalled and captured
        for label in ("user", "injected", "recalled", "assistant", "captured"):
            assert re.search(rf"^  {label}\s", turn, re.MULTILINE), (label, turn)
    t1, t2, t3, t4, t5 = turns
    assert "core block: empty" in t1 and "nothing relevant" in t1
    assert "User is vegetarian." in t1 and "User lives in Porto." in t1 and "2 memories" in t1
    assert "hold the team offsite on 12 June" in t2
    # turn 3: a new chat with no shared history; the facts arrive through memory and shape the answer
    assert "new chat" in out.split("\nTurn 3")[0].split("\nTurn 2")[1]
    assert "core block in the instructions" in t3 and "User is vegetarian." in t3.split("recalled")[0]
    assert "find_restaurant(city='Porto', date='12 June', diet='vegetarian')" in t3
    assert "Casa Verde, a vegetarian restaurant in Porto" in t3
    assert "core block unchanged" in t4 and "replaced" in t4 and "User lives in Lisbon." in t4
    assert "core block unchanged" in t5 and "User lives in Lisbon." in t5.split("assistant")[0]
    assert "You live in Lisbon." in t5

    # the default (a fresh temporary root) behaves the same on every run
    fresh, _ = run("examples/automatic_recall.py")  # (records written by one capture may list in any order)
    assert sorted(_normalise(fresh).splitlines()) == sorted(_normalise(out).splitlines())


def test_prompt_cache_benchmark():
    out, elapsed = run("benchmarks/bench_prompt_cache.py", "--json")
    report = json.loads(out)
    assert report["requests"] == 17 and len(report["rows"]) == 17
    ours, naive = report["capability"], report["naive"]
    assert ours["distinct_instructions"] == 1 and naive["distinct_instructions"] == 10
    assert ours["mean_share"] > 0.85 and ours["mean_share"] > naive["mean_share"]
    assert ours["mean_share_first_request_of_turn"] > 2 * naive["mean_share_first_request_of_turn"]
    assert ours["uncached_bytes"] < naive["uncached_bytes"]


def test_multi_user_server_shape(tmp_path):
    out, elapsed = run("examples/multi_user.py", "--root", str(tmp_path / "mem"))
    assert elapsed < 15
    ada, bob = out.split("bob: ", 1)
    assert "mentions: peanuts, Porto" in ada and "shellfish" not in ada and "Oslo" not in ada
    assert "mentions: shellfish, Oslo" in bob.split("ada's records")[0]
    assert "ada's records: ['User is allergic to peanuts.', 'User lives in Porto.']" in out
    assert "bob's records: ['User is allergic to shellfish.', 'User lives in Oslo.']" in out


def _hooks_snippet_order(text: str) -> None:
    message = text.index('"content": message}')
    recall = text.index('"content": ctx.recall}')
    assert message < recall, "recall goes after the user's message (its notice says 'the user's message above')"


def test_hooks_docs_put_recall_after_the_user_message():
    import agent_memory.integrations.hooks as hooks

    _hooks_snippet_order((ROOT / "docs" / "runtime.md").read_text().split("## Any other runtime", 1)[1])
    _hooks_snippet_order(hooks.__doc__ or "")
    _hooks_snippet_order((EXAMPLES / "agentic.py").read_text())
    assert "the user's message above" in hooks.RECALL_NOTICE


def test_runtime_doc_capability_snippet_runs(tmp_path):
    """The first snippet of docs/runtime.md, as written, with pydantic-ai's TestModel for the OpenAI model."""
    doc = (ROOT / "docs" / "runtime.md").read_text()
    snippet = doc.split("```python\n", 1)[1].split("```", 1)[0]
    assert '"openai:gpt-4.1-mini"' in snippet and "asyncio.run(main())" in snippet
    script = tmp_path / "snippet.py"
    script.write_text(
        "from pydantic_ai.models.test import TestModel\n" + snippet.replace('"openai:gpt-4.1-mini"', "TestModel(call_tools=[])")
    )
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "PendingCaptureWarning" not in proc.stderr
    records = list((tmp_path / ".agent-memory" / "records").glob("*.md"))
    assert len(records) == 1 and "usual table is number 12" in records[0].read_text()  # captured, flushed on exit
