"""A value the caller typed that looks like a secret is never repeated by the error refusing it (messages reach
stderr, JSON errors, MCP results and logs): every such message shows it through ``model.values.shown``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_memory.errors import InvalidInputError

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a GitHub token's shape


def _refusal(call: Callable[[], object], kind: type[BaseException] | tuple[type[BaseException], ...]) -> str:
    with pytest.raises(kind) as info:
        call()
    return str(info.value)


def _cases(tmp_path: Path) -> dict[str, Callable[[], object]]:
    from agent_memory.backends.files.meaning import resolve_mode
    from agent_memory.cli import _base, _records, consolidate, sessions
    from agent_memory.consolidate.governance import history
    from agent_memory.embeddings.local import LocalEmbedder
    from agent_memory.episodes._build import build_episode
    from agent_memory.mcp import cli as mcp_cli
    from agent_memory.model.queries import as_of_filter, date_filters

    filters = argparse.Namespace(created_after=TOKEN, created_before=None, updated_after=None, updated_before=None, as_of=None)
    return {
        "episode exit": lambda: build_episode("a goal", exit=TOKEN),
        "episode started": lambda: build_episode("a goal", started=TOKEN),
        "created_after": lambda: date_filters(created_after=TOKEN),
        "as_of": lambda: as_of_filter(TOKEN),
        "consolidation history since": lambda: history(tmp_path, session_id=None, user_id=None, since=TOKEN),
        "search mode": lambda: resolve_mode(TOKEN, None),
        "--expires": lambda: _base.expiry(TOKEN),
        "--limit": lambda: _base.positive(TOKEN),
        "--importance": lambda: _base.fraction(TOKEN),
        "--created-after": lambda: _records._filter_kwargs(filters),
        "sessions --at": lambda: sessions._when(TOKEN),
        "consolidate --since": lambda: consolidate._since(TOKEN),
        "mcp --port": lambda: mcp_cli._port(TOKEN),
        "mcp --tools": lambda: mcp_cli._tool_sets(TOKEN),
        "local runtime": lambda: LocalEmbedder(runtime=TOKEN),
    }


@pytest.mark.parametrize(
    "case",
    [
        "episode exit",
        "episode started",
        "created_after",
        "as_of",
        "consolidation history since",
        "search mode",
        "--expires",
        "--limit",
        "--importance",
        "--created-after",
        "sessions --at",
        "consolidate --since",
        "mcp --port",
        "mcp --tools",
        "local runtime",
    ],
)
def test_a_refused_value_that_is_a_secret_is_not_echoed(case: str, tmp_path: Path) -> None:
    from agent_memory.cli._base import UsageError

    message = _refusal(_cases(tmp_path)[case], (InvalidInputError, argparse.ArgumentTypeError, UsageError))
    assert TOKEN not in message and TOKEN[4:20] not in message, message
    assert "secret" in message or "REDACTED" in message, message  # says why it is not shown


def test_a_plain_bad_value_is_still_shown() -> None:
    from agent_memory.model.queries import date_filters

    assert "'next tuesday'" in _refusal(lambda: date_filters(created_after="next tuesday"), InvalidInputError)
