"""MCP server configuration and argument handling, without a transport: aliases, tokens, bind policy, CLI hooks."""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent_memory.mcp import ConfigError, Identity, ServerOptions, TokenMap, ToolArgumentError, add_mcp_command, register
from agent_memory.mcp._args import normalise_args
from agent_memory.mcp._tools import SPECS
from agent_memory.mcp.cli import configure_parser, options_from_args


def test_aliases_map_to_canonical_names() -> None:
    search = SPECS["memory_search"]
    assert normalise_args(search.name, search.params, {"q": "x", "top_k": "5"}) == {"query": "x", "limit": 5}
    assert normalise_args(search.name, search.params, {"text": "x", "k": 3, "tag": "a, b"}) == {
        "query": "x",
        "limit": 3,
        "tags": ["a", "b"],
    }
    get = SPECS["memory_get"]
    assert normalise_args(get.name, get.params, {"record_id": "r1", "start": 2}) == {"id": "r1", "line_start": 2}


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({"q": "a", "query": "b"}, "pass it once"),
        ({"query": "a", "limit": 0}, "between 1 and 50"),
        ({"query": "a", "limit": True}, "must be an integer"),
        ({"query": ["a"]}, "must be a string"),
        ({"limit": 3}, "missing required argument(s) query"),
        ({"query": "a", "session_id": "s"}, "unknown argument(s) session_id"),
    ],
)
def test_wrong_calls_name_the_right_call(args: dict[str, object], fragment: str) -> None:
    spec = SPECS["memory_search"]
    with pytest.raises(ToolArgumentError) as err:
        normalise_args(spec.name, spec.params, args)
    assert fragment in str(err.value)
    assert (
        "memory_search(query: string, limit?: integer, tags?: array, cursor?: string, as_of?: string, include_superseded?: boolean, "
        "recency?: boolean, decay?: number, mmr?: number, min_score?: number)"
    ) in str(err.value)


def test_no_tool_takes_an_identity_argument() -> None:
    for spec in SPECS.values():
        names = {p.name for p in spec.params} | {a for p in spec.params for a in p.aliases}
        assert not names & {"user", "user_id", "session", "session_id", "owner"}, spec.name


def test_tool_sets_are_cumulative() -> None:
    assert ServerOptions(tools=("read",)).tool_names == ("memory_search", "memory_get", "memory_list", "memory_recall", "memory_links")
    assert ServerOptions().tool_names[-3:] == ("memory_remember", "memory_supersede", "memory_curate")
    assert ServerOptions(tools=("foreground",)).tool_names[-4:] == ("memory_remember", "memory_supersede", "memory_curate", "memory_forget")
    with pytest.raises(ConfigError):
        ServerOptions(tools=("admin",))


def test_tokens_file_plain_hashed_and_invalid(tmp_path: Path) -> None:
    plain = "alice-token-0123456789"
    hashed = "bob-token-0123456789abc"
    f = tmp_path / "t.json"
    f.write_text(
        json.dumps(
            {
                "tokens": {
                    plain: {"user": "alice"},
                    "sha256:" + hashlib.sha256(hashed.encode()).hexdigest(): {"user": "bob", "scope": "user"},
                }
            }
        )
    )
    tokens = TokenMap.load(f)
    assert tokens.lookup(plain) == Identity(user_id="alice", access="own")  # two users: each changes only its own
    assert tokens.lookup(hashed) == Identity(user_id="bob", default_scope="user", access="own")
    assert tokens.lookup(plain + "x") is None and tokens.lookup("") is None
    toml = tmp_path / "t.toml"
    toml.write_text(f'[tokens."{plain}"]\nuser = "alice"\nsession = "s1"\n')
    assert TokenMap.load(toml).lookup(plain) == Identity(session_id="s1", user_id="alice")  # one identity: shared
    for body, fragment in [
        ("{", "not valid JSON"),
        ('{"tokens": {}}', "non-empty"),
        ('{"tokens": {"short": {"user": "a"}}}', "at least 16"),
        (json.dumps({"tokens": {plain: {"user": "a", "role": "admin"}}}), "unknown field(s) role"),
        (json.dumps({"tokens": {plain: {"scope": "user"}}}), "needs a user"),
    ]:
        f.write_text(body)
        with pytest.raises(ConfigError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
            TokenMap.load(f)
    with pytest.raises(ConfigError, match="cannot read"):
        TokenMap.load(tmp_path / "missing.json")


def test_http_beyond_loopback_needs_tokens(tmp_path: Path) -> None:
    for host in ("127.0.0.1", "localhost", "::1"):
        ServerOptions(transport="http", host=host)
    with pytest.raises(ConfigError, match="without tokens"):
        ServerOptions(transport="http", host="0.0.0.0")
    tokens = TokenMap({"x" * 20: Identity(user_id="u")})
    assert ServerOptions(transport="http", host="0.0.0.0", tokens=tokens).tokens is tokens


def test_flags_then_environment(tmp_path: Path) -> None:
    parser = configure_parser(argparse.ArgumentParser())
    opts = options_from_args(
        parser.parse_args(["--tools", "read,capture"]), {"AGENT_MEMORY_USER": "eve", "AGENT_MEMORY_ROOT": str(tmp_path)}
    )
    assert opts.identity == Identity(user_id="eve") and opts.root == str(tmp_path)
    opts = options_from_args(parser.parse_args(["--user", "zed", "--scope", "project"]), {"AGENT_MEMORY_USER": "eve"})
    assert opts.identity == Identity(user_id="zed", default_scope="project")
    with pytest.raises(SystemExit):
        parser.parse_args(["--tools", "everything"])
    with pytest.raises(ConfigError, match="needs a session"):
        options_from_args(parser.parse_args(["--scope", "session"]), {})


def test_cli_hooks() -> None:
    parser = argparse.ArgumentParser(prog="agent-memory")
    sub = parser.add_subparsers(dest="command")
    add_mcp_command(sub)
    args = parser.parse_args(["mcp", "--transport", "http", "--port", "9000"])
    assert args.transport == "http" and args.port == 9000 and callable(args.func)

    made: dict[str, argparse.ArgumentParser] = {}

    def add(name: str, text: str, examples: list[str], epilog_extra: str = "") -> argparse.ArgumentParser:
        made[name] = argparse.ArgumentParser(prog=f"agent-memory {name}", epilog="\n".join(examples))
        return made[name]

    handlers = register(add)
    assert set(handlers) == {"mcp"} and made["mcp"].parse_args(["--user", "u"]).user == "u"


def test_module_entry_point_reports_bad_config(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "agent_memory.mcp", "--root", str(tmp_path), "--tokens", str(tmp_path / "none.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1 and "cannot read tokens file" in out.stderr and "Traceback" not in out.stderr
