"""What the CLI reads and prints: stdin via -, list totals, redactions, importance, expiry, worker fallbacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def run(root, *args, stdin=None, env=None):
    return subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", str(root), *args],
        capture_output=True,
        text=True,
        input=stdin,
        env=env or ENV,
        timeout=120,
    )


def jrun(root, *args, stdin=None, code=0):
    proc = run(root, *args, "--json", stdin=stdin)
    assert proc.returncode == code, proc.stderr
    return json.loads(proc.stdout)


def test_dash_reads_stdin_for_every_text_or_file_argument(tmp_path):
    root = tmp_path / "m"
    rid = jrun(root, "remember", "-", stdin="Deploys happen on Fridays\n")["id"]
    assert jrun(root, "search", "-", stdin="when do deploys happen?\n")["hits"][0]["id"] == rid
    assert rid in jrun(root, "recall", "-", stdin="deploys")["summary"]
    doc = jrun(root, "import", "-", stdin='{"content": "imported from a pipe"}\n\n{"content": "second"}\n')
    assert doc["imported"] == 2 and doc["statuses"] == {"created": 2}
    cap = jrun(root, "capture", "--input", "-", "--output", "Noted.", stdin="Remember that the VPN gateway is vpn-2")
    assert cap["ids"] and "vpn-2" in jrun(root, "get", cap["ids"][0])["content"]
    proc = run(root, "capture", "--input", "-", "--output", "-", "--json", stdin="x")
    assert proc.returncode == 2 and "standard input" in json.loads(proc.stdout)["error"]["message"]


def test_list_shows_its_default_limit_and_how_many_more(tmp_path):
    root = tmp_path / "m"
    rows = "\n".join(json.dumps({"content": f"fact number {i}", "tags": ["t"]}) for i in range(57))
    jrun(root, "import", "-", stdin=rows)
    doc = jrun(root, "list")
    assert len(doc["records"]) == 50 and doc["total"] == 57 and doc["more"] == 7
    text = run(root, "list").stdout.splitlines()
    assert len(text) == 51 and text[-1].startswith("… 7 more (of 57")
    doc = jrun(root, "list", "--all")
    assert len(doc["records"]) == 57 and doc["more"] == 0
    doc = jrun(root, "list", "--limit", "3", "--tag", "t")
    assert len(doc["records"]) == 3 and (doc["total"], doc["more"]) == (57, 54)
    assert jrun(root, "list", "--tag", "nope") == {"records": [], "total": 0, "more": 0}
    assert "default 50" in run(root, "list", "--help").stdout


def test_remember_json_reports_redactions_and_importance(tmp_path):
    root = tmp_path / "m"
    doc = jrun(root, "remember", "deploy token ghp_abcdefghijklmnopqrstuvwxyz0123456789AB for CI", "--importance", "0.8")
    assert doc["redactions"] >= 1 and doc["status"] == "created" and set(doc) == {"id", "status", "path", "redactions", "contradicts"}
    rec = jrun(root, "get", doc["id"])
    assert rec["importance"] == 0.8 and "ghp_abcdefghijklmnop" not in rec["content"]
    assert "redacted" in run(root, "remember", "pw token ghp_abcdefghijklmnopqrstuvwxyz0123456789XY").stdout
    assert jrun(root, "remember", "plain text")["redactions"] == 0


def test_expires_takes_durations_and_refuses_the_past(tmp_path):
    import datetime as dt

    root = tmp_path / "m"
    rid = jrun(root, "remember", "temporary note", "--expires", "30d")["id"]
    when = dt.datetime.fromisoformat(jrun(root, "get", rid)["expires"].replace("Z", "+00:00"))
    assert dt.timedelta(days=29, hours=23) < when - dt.datetime.now(dt.UTC) <= dt.timedelta(days=30)
    for past in ("2001-01-01", "2020-05-01T10:00:00+05:00"):
        proc = run(root, "remember", "x", "--expires", past, "--json")
        assert proc.returncode == 2 and "already in the past" in json.loads(proc.stdout)["error"]["message"]
    assert jrun(root, "list")["total"] == 1


def _store_says_expired(tmp_path) -> bool:
    from agent_memory.backends.files.store import MemoryStore
    from agent_memory.errors import NotFoundError

    store = MemoryStore(tmp_path / "probe")
    (store.records_dir / "old-note.md").write_text("---\nid: old-note\ntitle: old\nexpires: 2001-01-01T00:00:00Z\n---\nold\n")
    try:
        store.get("old-note")
    except NotFoundError as exc:
        return "expired" in str(exc)
    finally:
        store.close()
    return False


def test_get_of_an_expired_record_says_expired(tmp_path):
    if not _store_says_expired(tmp_path):
        pytest.skip("needs the store branch: MemoryStore.get raises NotFoundError saying 'expired' (issue 11.8)")
    root = tmp_path / "m"
    jrun(root, "remember", "anything")
    (root / "records" / "old-note.md").write_text("---\nid: old-note\ntitle: old\nexpires: 2001-01-01T00:00:00Z\n---\nold\n")
    proc = run(root, "get", "old-note")
    assert proc.returncode == 1 and "expired" in proc.stderr


def test_capture_json_is_the_python_capture_result(tmp_path):
    import asyncio

    from agent_memory import MemoryProvider

    turn = "Remember that the staging database is db-stg-2"
    doc = jrun(tmp_path / "cli", "capture", "--input", turn, "--output", "Noted.")
    provider = MemoryProvider(tmp_path / "py")
    try:
        py = asyncio.run(provider.capture_turn(turn, "Noted.")).to_dict()
    finally:
        provider.close()
    assert list(doc) == list(py)
    assert [w["status"] for w in doc["written"]] == [w["status"] for w in py["written"]] == ["created"]
    assert doc["ids"] == [doc["written"][0]["id"]] and doc["fallback"] is False


BROKEN_PROFILE = """\
name = "broken"
[recall]
model = "litellm:openai/gpt-4o-mini"
api_key_env = "AGENT_MEMORY_TEST_NO_SUCH_KEY"
timeout_s = 5
[capture]
model = "litellm:openai/gpt-4o-mini"
api_key_env = "AGENT_MEMORY_TEST_NO_SUCH_KEY"
timeout_s = 5
"""


@pytest.mark.parametrize("command", [("recall", "when do deploys happen?"), ("capture", "--input", "Remember that I like tea")])
def test_a_worker_that_falls_back_says_why_and_exits_3(tmp_path, command):
    root = tmp_path / "m"
    jrun(root, "remember", "Deploys happen on Fridays")
    profile = tmp_path / "broken.toml"
    profile.write_text(BROKEN_PROFILE)
    proc = run(root, *command, "--profile", str(profile), "--json")
    assert proc.returncode == 3, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["fallback"] is True and "AGENT_MEMORY_TEST_NO_SUCH_KEY" in doc["reason"]
    assert proc.stderr.count("\n") == 1 and "fell back" in proc.stderr and "AGENT_MEMORY_TEST_NO_SUCH_KEY" in proc.stderr
    human = run(root, *command, "--profile", str(profile))
    assert human.returncode == 3 and "nothing to remember" not in human.stdout
    assert run(root, *command, "--profile", str(profile), "--allow-fallback").returncode == 0


def test_worker_commands_print_no_pydantic_ai_banner_in_a_terminal(tmp_path):
    import pty

    root = tmp_path / "m"
    jrun(root, "remember", "Deploys happen on Fridays")
    env = {k: v for k, v in ENV.items() if k not in ("PYTEST_VERSION", "CI", "PYDANTIC_AI_NO_BANNER")}
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_memory.cli", "--root", str(root), "recall", "deploys"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    assert proc.wait(timeout=120) == 0
    text = out.decode("utf-8", "replace")
    assert "Deploys happen on Fridays" in text
    assert "pydantic-ai v" not in text and "logfire" not in text.lower() and "observability" not in text


def test_search_scores_print_readably(tmp_path):
    root = tmp_path / "m"
    for text in ("deploys happen on fridays", "deploys need approval"):  # a term in every record: FTS5 floors its IDF
        jrun(root, "remember", text)
    hits = jrun(root, "search", "deploys")["hits"]
    assert len(hits) == 2 and all(h["score"] > 0 for h in hits)
    for line in run(root, "search", "deploys").stdout.splitlines()[::2]:
        assert float(line.split()[0]) > 0, line  # never printed as 0.000


def test_import_stops_at_a_line_the_store_refuses_and_names_it(tmp_path):
    src = tmp_path / "rows.jsonl"
    src.write_text('{"content": "one"}\n{"content": "two"}\n\n{"content": "   "}\n{"content": "four"}\n')
    proc = run(tmp_path / "m", "import", str(src), "--json")
    assert proc.returncode == 1
    message = json.loads(proc.stdout)["error"]["message"]
    assert message.startswith(f"{src}: line 4: ") and "3 records written" in message and "re-run" in message
    done = jrun(tmp_path / "m", "import", str(src), "--skip-invalid")
    assert [e["line"] for e in done["errors"]] == [4] and sum(done["statuses"].values()) == 3
    assert jrun(tmp_path / "m", "list")["total"] == 3  # the re-run finished it, nothing doubled


def test_eval_reads_its_file_from_stdin(tmp_path):
    sample = {
        "sample_id": "demo",
        "conversation": {"session_1": [{"speaker": "Ada", "dia_id": "D1:1", "text": "I adopted a kitten named Pixel."}]},
        "qa": [{"question": "What is the kitten called?", "evidence": ["D1:1"], "category": 4}],
    }
    doc = jrun(tmp_path, "eval", "locomo", "-", "--k", "1", stdin=json.dumps([sample]))
    assert doc["questions"] == 1 and doc["overall"]["recall@1"] == 1.0 and doc["root"] == str(tmp_path)
    proc = run(tmp_path, "eval", "locomo", "-", "--json", stdin='[{"conversation": ')
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["message"].startswith("<stdin>: line 1 column")
