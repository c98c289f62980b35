"""The agent-memory command line: the DESIGN.md contract, errors, import, no model imports."""

import argparse
import json
import os
import subprocess
import sys

import pytest

from agent_memory.cli import COMMANDS, build_parser, main

ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def run(root, *args, stdin=None):
    proc = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", str(root), *args],
        capture_output=True,
        text=True,
        input=stdin,
        env=ENV,
        timeout=120,
    )
    return proc


def jrun(root, *args):
    proc = run(root, *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_every_command_has_help():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert isinstance(sub, argparse._SubParsersAction)
    assert set(sub.choices) == set(COMMANDS)
    for name, p in sub.choices.items():
        assert p.description, name
        assert p.format_help().startswith("usage: agent-memory")


def test_contract_round_trip(tmp_path, capsys):
    root = tmp_path / "mem"
    r = jrun(root, "remember", "Deploys happen on Fridays after noon.", "--title", "Deploy day", "--tag", "ops", "--key", "deploys")
    assert r["status"] == "created"
    assert jrun(root, "remember", "Rollbacks need approval.", "--key", "deploys")["status"] == "appended"
    assert jrun(root, "remember", "Rollbacks need approval.", "--key", "deploys")["status"] == "duplicate"
    hits = jrun(root, "search", "when do deploys happen?")["hits"]
    assert hits[0]["id"] == r["id"] and set(hits[0]) >= {"id", "path", "line_start", "line_end", "snippet", "score"}
    trace = jrun(root, "search", "deploys", "--trace")["trace"]
    stages = [s["stage"] for s in trace]
    assert [s for s in stages if s in ("parse", "match", "scope_filter", "rank", "cut")] == [
        "parse",
        "match",
        "scope_filter",
        "rank",
        "cut",
    ]
    rec = jrun(root, "get", r["id"])
    assert rec["content"] == "Deploys happen on Fridays after noon.\nRollbacks need approval." and rec["tags"] == ["ops"]
    assert [x["id"] for x in jrun(root, "list", "--tag", "ops")["records"]] == [r["id"]]
    block = jrun(root, "inject", "--budget", "200")
    assert set(block) == {"text", "tokens", "truncated"} and r["id"] in block["text"]
    assert jrun(root, "doctor")["ok"] is True
    assert jrun(root, "reindex")["records"] == 1
    assert jrun(root, "sweep") == {"expired": [], "duplicates": []}
    assert jrun(root, "forget", r["id"])["forgotten"] is True
    assert jrun(root, "search", "deploys")["hits"] == []


def test_session_and_user_visibility_from_the_cli(tmp_path):
    root = tmp_path / "mem"
    jrun(root, "remember", "alice's secret garden", "--scope", "session", "--session", "a")
    assert jrun(root, "search", "garden")["hits"] == []
    assert len(jrun(root, "search", "garden", "--session", "a")["hits"]) == 1
    assert jrun(root, "list", "--session", "b")["records"] == []


@pytest.mark.parametrize(
    "args, kind",
    [
        (("get", "../x"), "InvalidIdError"),
        (("get", "/etc/passwd"), "InvalidIdError"),
        (("remember", "x", "--key", "../../k"), "InvalidIdError"),
        (("remember", "   "), "InvalidInputError"),
        (("get", "missing-id"), "NotFoundError"),
        (("forget", "missing-id"), "NotFoundError"),
        (("search", "x", "--limit", "0"), "UsageError"),
        (("frobnicate",), "UsageError"),
    ],
)
def test_errors_are_one_line_and_json(tmp_path, args, kind):
    jrun(tmp_path / "mem", "remember", "an existing root")
    proc = run(tmp_path / "mem", *args, "--json")
    assert proc.returncode != 0
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("agent-memory: error:")
    assert json.loads(proc.stdout)["error"]["type"] == kind
    assert not (tmp_path / "x").exists() and not (tmp_path / "k").exists()


def test_remember_reads_stdin_with_dash(tmp_path):
    proc = run(tmp_path / "m", "remember", "-", "--json", stdin="from stdin\nsecond line")
    assert proc.returncode == 0
    rid = json.loads(proc.stdout)["id"]
    assert jrun(tmp_path / "m", "get", rid)["content"] == "from stdin\nsecond line"


def test_import_jsonl(tmp_path):
    src = tmp_path / "in.jsonl"
    rows = [{"content": f"imported fact {i}", "tags": ["imp"], "kind": "fact"} for i in range(300)]
    rows.append({"content": "user pref", "scope": "user", "user_id": "u1"})
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    doc = jrun(tmp_path / "m", "import", str(src), "--batch-size", "100")
    assert doc["imported"] == 301 and doc["statuses"] == {"created": 301} and doc["errors"] == []
    assert len(jrun(tmp_path / "m", "list", "--tag", "imp", "--limit", "1000")["records"]) == 300
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": "ok"}\nnot json\n{"title": "no content"}\n')
    proc = run(tmp_path / "m2", "import", str(bad), "--json")
    assert proc.returncode == 1 and "line 2" in json.loads(proc.stdout)["error"]["message"]
    assert not list((tmp_path / "m2" / "records").glob("*.md")) if (tmp_path / "m2" / "records").exists() else True
    doc = jrun(tmp_path / "m2", "import", str(bad), "--skip-invalid")
    assert doc["imported"] == 1 and [e["line"] for e in doc["errors"]] == [2, 3]


STORE_COMMANDS = ["init", "remember x", "search x", "list", "get nope", "inject", "reindex", "doctor", "sweep", "import -"]


def test_store_commands_do_not_import_model_libraries(tmp_path):
    code = (
        "import sys, shlex\nfrom agent_memory.cli import main\n"
        f"for c in {STORE_COMMANDS!r}:\n"
        f"    main(['--root', {str(tmp_path / 'm')!r}, '--json', *shlex.split(c)])\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('litellm', 'pydantic_ai', 'openai', 'httpx')]\n"
        "print('LOADED', bad)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=120, input='{"content": "piped"}\n'
    ).stdout
    assert out.strip().splitlines()[-1] == "LOADED []"


def test_main_returns_exit_codes(tmp_path, capsys):
    assert main(["--root", str(tmp_path / "m"), "remember", "hello world"]) == 0
    assert main(["--root", str(tmp_path / "m"), "get", "nope"]) == 1
    assert main(["--root", str(tmp_path / "m")]) == 2


def test_read_commands_refuse_a_missing_root(tmp_path):
    for args in (("search", "x"), ("list",), ("get", "abc"), ("inject",), ("doctor",)):
        proc = run(tmp_path / "typo", *args, "--json")
        assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["type"] == "NotFoundError", args
    assert not (tmp_path / "typo").exists()


def test_doctor_exit_code_reflects_problems(tmp_path):
    root = tmp_path / "m"
    jrun(root, "remember", "fine record")
    (root / "records" / "broken.md").write_text("---\ntitle: [oops\n---\nbody\n")
    proc = run(root, "doctor", "--json")
    assert proc.returncode == 1 and "broken.md" in json.loads(proc.stdout)["problems"]


def test_os_and_data_errors_are_one_line(tmp_path):
    for args in (("import", str(tmp_path)), ("--root", "/etc/passwd", "list")):
        proc = run(tmp_path / "m", *args, "--json")
        assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "error" in json.loads(proc.stdout)


def test_import_reports_file_line_numbers(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text('{"content": "ok one"}\nnot json\n{"content": ""}\n{"content": "x", "scope": "galaxy"}\n{"content": "ok two"}\n')
    doc = jrun(tmp_path / "m", "import", str(src), "--skip-invalid", "--batch-size", "1")
    assert doc["imported"] == 2 and [e["line"] for e in doc["errors"]] == [2, 3, 4]
    assert not doc["errors"][0]["message"].startswith("line")


def test_mistyped_profile_is_an_error_not_a_fallback(tmp_path):
    jrun(tmp_path / "m", "remember", "something")
    proc = run(tmp_path / "m", "recall", "anything", "--profile", "nosuch", "--json")
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["type"] == "ProfileError"


def test_version_and_positive_limits(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "agent_memory.cli", "--version"], capture_output=True, text=True, env=ENV)
    assert proc.returncode == 0 and proc.stdout.startswith("agent-memory ")
    assert run(tmp_path / "m", "list", "--limit", "0", "--json").returncode == 2
    assert run(tmp_path / "m", "import", "x.jsonl", "--batch-size", "-3", "--json").returncode == 2


def test_trace_never_names_records_the_caller_cannot_see(tmp_path):
    root = tmp_path / "mem"
    hidden = jrun(root, "remember", "session secret about pineapples", "--scope", "session", "--session", "s1")["id"]
    doc = jrun(root, "search", "pineapples", "--session", "s2", "--trace")
    assert doc["hits"] == [] and hidden not in json.dumps(doc)
    match = next(s for s in doc["trace"] if s["stage"] == "match")
    assert match["candidates"] == 0 and match["top"] == []  # hidden records are not even counted


def test_on_existing_without_key_is_a_usage_error(tmp_path):
    proc = run(tmp_path / "m", "remember", "x", "--on-existing", "replace", "--json")
    assert proc.returncode == 2 and "--key" in json.loads(proc.stdout)["error"]["message"]


def test_doctor_names_the_fix_for_what_it_finds(tmp_path):
    root = tmp_path / "m"
    rid = jrun(root, "remember", "fine record")["id"]
    doc = jrun(root, "doctor")
    assert doc["ok"] is True and doc["fixes"] == []
    (root / "records" / "broken.md").write_text("---\ntitle: [oops\n---\nbody\n")
    proc = run(root, "doctor", "--json")
    fixes = json.loads(proc.stdout)["fixes"]
    assert proc.returncode == 1 and any("records/" in f or "broken.md" in f for f in fixes)
    (root / "records" / "broken.md").unlink()
    (root / "records" / f"{rid}.md").unlink()  # the index still lists it: drift
    proc = run(root, "doctor")
    assert proc.returncode == 1 and "fix:" in proc.stdout and "agent-memory reindex" in proc.stdout
