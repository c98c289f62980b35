"""Old flat import paths keep working for one release, each with a DeprecationWarning naming the new home."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

from agent_memory import _compat

OLD_TO_NEW = sorted(_compat.MOVED.items())


@pytest.mark.parametrize(("old", "new"), OLD_TO_NEW)
def test_an_old_path_warns_and_is_the_same_module(old: str, new: str) -> None:
    code = (
        "import warnings, importlib\n"
        "warnings.simplefilter('error', DeprecationWarning)\n"
        f"try:\n    importlib.import_module('agent_memory.{old}')\n"
        "except DeprecationWarning as w:\n    print('warned:', w)\n"
        "warnings.simplefilter('ignore')\n"
        f"a = importlib.import_module('agent_memory.{old}'); b = importlib.import_module('agent_memory.{new}')\n"
        "print('same' if a is b else 'different')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert f"warned: agent_memory.{old} moved to agent_memory.{new}" in out
    assert out.strip().endswith("different" if old in _compat.ALSO else "same")


def test_names_users_import_from_old_paths_still_resolve() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        # the old paths exist only at run time (agent_memory/_compat.py installs them), so mypy cannot see them
        from agent_memory.backend import FilesBackend  # type: ignore[import-not-found]
        from agent_memory.hooks import MemoryHooks  # type: ignore[import-not-found]
        from agent_memory.records import MemoryRecord  # type: ignore[import-not-found]
        from agent_memory.store import MemoryStore  # type: ignore[import-not-found]
        from agent_memory.workers.recall import RecallResult  # type: ignore[import-not-found]

        from agent_memory.search import Fts5Engine

    import agent_memory

    assert MemoryStore is agent_memory.MemoryStore and MemoryHooks is agent_memory.MemoryHooks
    assert MemoryRecord is agent_memory.MemoryRecord and Fts5Engine is agent_memory.Fts5Engine
    assert RecallResult is agent_memory.RecallResult and FilesBackend is agent_memory.FilesBackend


def test_an_old_module_whose_names_moved_further_serves_them_all() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old = importlib.import_module("agent_memory.backend")
    import agent_memory.backends.base as base
    import agent_memory.backends.files.backend as files

    assert old.FilesBackend is files.FilesBackend and old.MemoryBackend is base.MemoryBackend and old.Caller is base.Caller


@pytest.mark.parametrize(("old", "name", "home"), sorted((o, n, h) for o, names in _compat.ALSO.items() for n, h in names.items()))
def test_every_name_an_old_module_had_is_still_there(old: str, name: str, home: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        module = importlib.import_module(f"agent_memory.{old}")
    assert getattr(module, name) is getattr(importlib.import_module(f"agent_memory.{home}"), name)


def test_the_old_search_names_warn() -> None:
    search = importlib.import_module("agent_memory.search")
    with pytest.warns(DeprecationWarning, match="agent_memory.backends.files.fts"):
        engine = search.Fts5Engine
    assert engine.__name__ == "Fts5Engine"
    assert search.SearchHit.__module__ == "agent_memory.search.types"  # the new package's own names never warn


def test_a_path_that_never_existed_is_still_an_import_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("agent_memory.no_such_module")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("agent_memory.store_typo")
