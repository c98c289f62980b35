"""Every ```python block of README.md and docs/*.md runs (the pydantic-ai way: docs are tests).

The blocks of one document run in order in one fresh interpreter and namespace (like a doctest session), in a fresh
directory; top-level ``await`` is allowed. A block
whose first line is ``# fragment: <why>`` is a piece of a larger program (it uses names the surrounding text
defines): it is compiled, not run. ``openai:`` models talk to a local OpenAI-compatible server started here.
Console blocks of docs/cli.md run in tests/test_cli_docs.py; docs/capture.md's in tests/test_offline_model.py.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
RUNNER = """
import ast, asyncio, json, sys
namespace = {"__name__": "__main__"}
loop = asyncio.new_event_loop()
for name, source in json.load(open(sys.argv[1], encoding="utf-8")):
    code = compile(source, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, namespace)
    if asyncio.iscoroutine(result):
        loop.run_until_complete(result)
"""


def _blocks(doc: Path) -> list[tuple[str, str]]:
    text = doc.read_text(encoding="utf-8")
    return [(f"{doc.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}", m.group(1)) for m in BLOCK.finditer(text)]


WITH_CODE = [doc for doc in DOCS if _blocks(doc)]


def test_there_are_snippets_to_check() -> None:
    assert ROOT / "README.md" in WITH_CODE


@pytest.mark.parametrize("doc", WITH_CODE, ids=[doc.name for doc in WITH_CODE])
def test_snippets_run(doc: Path, tmp_path: Path) -> None:
    blocks = _blocks(doc)
    for name, source in blocks:  # every block is valid Python, fragments included
        compile(source, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    runnable = [(n, s) for n, s in blocks if not s.startswith("# fragment")]
    if any('("postgresql://' in s for _, s in runnable):
        pytest.skip("runs against PostgreSQL in tests/test_postgres_backend.py")
    from test_openai_compat import FakeOpenAIServer

    (tmp_path / "blocks.json").write_text(json.dumps(runnable), encoding="utf-8")
    runner = tmp_path / "run.py"
    runner.write_text(RUNNER, encoding="utf-8")
    with FakeOpenAIServer() as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEMORY_")}
        env.update(
            OPENAI_BASE_URL=server.base_url,
            OPENAI_API_KEY="sk-test-not-a-real-key",
            LITELLM_LOCAL_MODEL_COST_MAP="True",
            PYTHONPATH=str(ROOT),
            PYDANTIC_AI_NO_BANNER="1",
        )
        proc = subprocess.run(
            [sys.executable, str(runner), str(tmp_path / "blocks.json")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
    assert proc.returncode == 0, f"{doc.name} failed:\n{proc.stdout}\n{proc.stderr}"


def test_readme_console_session_runs(tmp_path: Path) -> None:
    """The README's ```console blocks, run in order in an empty directory, print what they show."""
    from test_cli_docs import _pattern, console_blocks

    steps = [step for block in console_blocks((ROOT / "README.md").read_text(encoding="utf-8")) for step in block]
    assert len(steps) >= 5
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEMORY_")}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", LITELLM_LOCAL_MODEL_COST_MAP="True")
    for cmd, expected, code in steps:
        proc = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        out = (proc.stdout + proc.stderr).splitlines()
        assert proc.returncode == code, f"$ {cmd}\nexit {proc.returncode}, documented {code}\n{proc.stdout}{proc.stderr}"
        at = 0
        for want in expected:
            pat = _pattern(want)
            while at < len(out) and not pat.search(out[at]):
                at += 1
            assert at < len(out), f"$ {cmd}\nnot printed (in order): {want!r}\n{proc.stdout}{proc.stderr}"
            at += 1
