"""A cold ``agent-memory search`` imports only what a search runs: no YAML, no redaction, no drafts, no other commands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from agent_memory.backends.files.store import MemoryStore

NEVER_ON_SEARCH = (
    "yaml",
    "frontmatter",
    "agent_memory.redaction.api",
    "agent_memory.redaction",
    "agent_memory.model.drafts",
    "agent_memory.formats.yaml_loader",
    "agent_memory.sessions",
    "agent_memory.mcp",
    "agent_memory.cli.sessions",
    "agent_memory.cli.lifecycle",
    "agent_memory.backends.files.purge",
    "pydantic_ai",
    "litellm",
    "asyncio",
)

PROBE = """
import json, sys
from agent_memory.cli import main
from typing import Any
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def run_cli_modules(*argv: str) -> tuple[dict[str, Any], list[str]]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120, check=True)
    out, probe = proc.stdout.rstrip("\n").rsplit("\n", 1)
    report = json.loads(probe)
    assert report["code"] == 0, proc.stderr
    return json.loads(out), report["modules"]


def loaded(modules: list[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


def test_cold_search_imports_no_yaml_redaction_or_other_commands(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    with MemoryStore(root) as store:
        store.remember("The staging cluster runs in eu-west-1", title="Staging region", tags=["infra"])
    doc, modules = run_cli_modules("--root", str(root), "search", "staging region", "--json")
    assert [h["title"] for h in doc["hits"]] == ["Staging region"]
    assert [name for name in NEVER_ON_SEARCH if loaded(modules, name)] == []
    assert loaded(modules, "agent_memory.backends.files.store") and loaded(modules, "sqlite3")  # the probe saw the search's imports


def test_a_hand_edited_file_read_by_a_search_still_needs_no_yaml(tmp_path: Path) -> None:
    """The open-time check re-reads a changed file through the fast reader: the renderer's subset needs no YAML."""
    root = tmp_path / "mem"
    with MemoryStore(root) as store:
        path = Path(store.remember("alpha bravo", title="First").path)
    path.write_text(path.read_text(encoding="utf-8").replace("alpha bravo", "alpha charlie"), encoding="utf-8")
    doc, modules = run_cli_modules("--root", str(root), "search", "charlie", "--json")
    assert [h["title"] for h in doc["hits"]] == ["First"]
    assert not loaded(modules, "yaml") and not loaded(modules, "agent_memory.redaction")


def test_a_write_still_redacts(tmp_path: Path) -> None:
    """The lazy imports move work, they do not skip it: a remember through the CLI redacts as before."""
    root = tmp_path / "mem"
    MemoryStore(root).close()
    secret = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    doc, modules = run_cli_modules("--root", str(root), "remember", f"the key is {secret}", "--json")
    assert loaded(modules, "agent_memory.redaction")
    text = Path(str(doc["path"])).read_text(encoding="utf-8")
    assert secret not in text and "the key is" in text


def test_help_still_lists_every_command() -> None:
    proc = subprocess.run([sys.executable, "-m", "agent_memory.cli", "--help"], capture_output=True, text=True, timeout=120, check=True)
    from agent_memory.cli._app import MODULES

    for names in MODULES.values():
        for name in names:
            assert name in proc.stdout, name


def test_the_command_table_matches_what_each_module_registers() -> None:
    """``MODULES`` says which module registers each command; a command added to a module but not to the table
    would make ``agent-memory NEW`` fail, so compare them."""
    import argparse
    import importlib

    from agent_memory.cli._app import MODULES

    for module, names in MODULES.items():
        sub = argparse.ArgumentParser().add_subparsers()
        registered = importlib.import_module(module, "agent_memory.cli").register(lambda name, *_a, **_k: sub.add_parser(name))
        assert sorted(registered) == sorted(names), module
