"""docs/cli.md is the CLI reference: every command is in it, every command's help has examples, every snippet runs."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agent_memory.cli import COMMANDS, build_parser

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
BIN = Path(sys.executable).parent


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert isinstance(sub, argparse._SubParsersAction)
    return dict(sub.choices)


def console_blocks(text: str) -> list[list[tuple[str, list[str], int]]]:
    """``[(command, expected lines, exit code)]`` for each ```console block."""
    blocks = []
    for body in re.findall(r"```console\n(.*?)```", text, re.S):
        steps: list[tuple[str, list[str], int]] = []
        for line in body.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], [], 0))
            elif m := re.fullmatch(r"\[exit (\d+)\]", line.strip()):
                cmd, expected, _ = steps[-1]
                steps[-1] = (cmd, expected, int(m.group(1)))
            elif line.strip():
                steps[-1][1].append(line)
        blocks.append(steps)
    return blocks


def _pattern(expected: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in expected.split("…")))


def test_every_command_has_help_with_examples_and_a_section_in_docs():
    doc = DOC.read_text(encoding="utf-8")
    commands = _subparsers()
    assert set(commands) == set(COMMANDS) and len(commands) == 30
    for name, p in commands.items():
        help_text = p.format_help()
        assert help_text.startswith("usage: agent-memory") and p.description, name
        assert f"agent-memory {name}" in (p.epilog or "").split("Examples:", 1)[-1], f"{name}: no example in --help"
        assert re.search(rf"^## .*`agent-memory {name}`", doc, re.M), f"{name}: no section in docs/cli.md"
        for action in p._actions:
            if action.dest in ("help",):
                continue
            assert action.help, f"{name} {action.option_strings or action.dest}: no help"
            if action.default not in (None, False, [], "==SUPPRESS==") and action.option_strings:
                assert "default" in action.help and str(action.default) in action.help, (name, action.dest)


def test_every_console_command_in_docs_runs_some_command():
    ran = {
        m.group(1)
        for block in console_blocks(DOC.read_text(encoding="utf-8"))
        for cmd, _, _ in block
        for m in re.finditer(r"agent-memory(?: --root \S+)? ([a-z]+)", cmd)
    }
    assert set(COMMANDS) <= ran, set(COMMANDS) - ran


def test_import_help_documents_every_jsonl_field():
    from agent_memory.model.drafts import MemoryDraft

    help_text = _subparsers()["import"].format_help()
    for field in MemoryDraft.__dataclass_fields__:
        assert re.search(rf"^  {field}\s", help_text, re.M), field


def test_docs_snippets_run(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("AGENT_MEMORY_ROOT", "PYTHONSTARTUP")}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", HOME=str(tmp_path), LITELLM_LOCAL_MODEL_COST_MAP="True")
    steps = [step for block in console_blocks(DOC.read_text(encoding="utf-8")) for step in block]
    assert len(steps) > 40
    script = ["set +e"]
    for i, (cmd, _, _) in enumerate(steps):
        script.append(
            f"{{ {cmd} ; }} > .out{i} 2>&1 < /dev/null; echo $? > .rc{i}"
            if " | " not in cmd and "<" not in cmd
            else f"{{ {cmd} ; }} > .out{i} 2>&1; echo $? > .rc{i}"
        )
    subprocess.run(["bash", "-c", "\n".join(script)], cwd=tmp_path, env=env, timeout=600, check=True)
    for i, (cmd, expected, code) in enumerate(steps):
        out = (tmp_path / f".out{i}").read_text(encoding="utf-8")
        rc = int((tmp_path / f".rc{i}").read_text())
        assert rc == code, f"$ {cmd}\nexit {rc}, documented {code}\n{out}"
        lines = out.splitlines()
        at = 0
        for want in expected:
            pat = _pattern(want)
            while at < len(lines) and not pat.search(lines[at]):
                at += 1
            assert at < len(lines), f"$ {cmd}\ndocumented line not printed (in order): {want!r}\n--- printed:\n{out}"
            at += 1


@pytest.mark.parametrize("name", ["remember", "search", "import", "eval"])
def test_command_help_prints_and_exits_0(name, capsys):
    from agent_memory.cli import main

    assert main([name, "--help"]) == 0
    assert "Examples:" in capsys.readouterr().out
