"""Issue 27 seams an attacker found on main: message citations across logs, the memory tool in an inherited
namespace, look-alike memory-tool names, and a refused namespace echoed whole in its error.

1. Two logs with one session id (the root's and ``acme/a``'s, or a user's and the no-user log of the session) gave
   their messages one id ``chat#1``; recall's fusion keyed on it and dropped one. Now a message of a log that is not
   the caller's own is cited with the log's address (``chat#1@/``, ``chat#1@/_``): CLI, MCP and the API, both backends.
2. From ``acme/a`` (inheriting the root) ``str_replace``/``insert`` on the root's file quietly made a local copy and
   ``rename`` said it moved the file while ``view`` still showed it. Every mutating command now refuses an inherited
   file, naming the namespace it is shared from.
3. NFC and NFD ``café.md``, ``ﬁle.md`` and ``file.md`` were two files; ``a\\u200bb.md`` was another than ``ab.md``.
4. ``invalid namespace 'acme/GHP_…'`` echoed the secret on stderr and in ``--json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from agent_memory.errors import InvalidInputError
from agent_memory.integrations.anthropic import MemoryToolHandler
from agent_memory.model.scopes import check_isolation, check_namespace
from agent_memory.provider import MemoryProvider

KINDS = ["files", "postgres"]


# -- CLI helpers -------------------------------------------------------------------------------------------------
def _store(kind: str, tmp_path: Path) -> str:
    if kind == "postgres":
        from _pg import require_psycopg, server

        require_psycopg()
        return server().url
    root = str(tmp_path / "mem")
    subprocess.run([sys.executable, "-m", "agent_memory.cli", "init", root], check=True, capture_output=True, timeout=120)
    return root


def _cli(root: str, cwd: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", root, *args], capture_output=True, text=True, env=env, timeout=180, cwd=cwd
    )
    assert (out.returncode == 0) is ok, (args, out.stdout, out.stderr)
    return out


def _recall(root: str, cwd: Path, question: str, *who: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_cli(root, cwd, "--json", "recall", question, *who).stdout)
    return data


def _ids() -> tuple[str, str]:
    """A user and a session id of this test alone (PostgreSQL tests share one database)."""
    tag = uuid.uuid4().hex[:8]
    return f"alice{tag}", f"chat{tag}"


# -- 1. message citations ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_recall_keeps_both_logs_of_one_session_id_in_two_namespaces(kind: str, tmp_path: Path) -> None:
    root = _store(kind, tmp_path)
    user, sid = _ids()
    ns = f"acme{uuid.uuid4().hex[:6]}/a"
    _cli(root, tmp_path, "session", "append", sid, "We decided the launch city is Oslo.", "--user", user)
    _cli(root, tmp_path, "session", "append", sid, "We decided the launch city is Rome.", "--user", user, "--namespace", ns)
    out = _recall(root, tmp_path, "which launch city did we decide", "--user", user, "--namespace", ns)
    assert "Rome" in out["summary"] and "Oslo" in out["summary"], out  # main: only Oslo, cited [chat#1]
    ids = [s["id"] for s in out["sources"]]
    assert sorted(ids) == sorted({f"{sid}#1", f"{sid}#1@/"}), ids  # the caller's own log plain, the root's addressed
    rome = next(line for line in out["summary"].splitlines() if "Rome" in line)
    assert f"[{sid}#1:" in rome, out["summary"]  # the caller's own message keeps its log's id
    root_view = _recall(root, tmp_path, "which launch city did we decide", "--user", user)
    assert "Oslo" in root_view["summary"] and "Rome" not in root_view["summary"], root_view  # acme/a is not the root's
    assert [s["id"] for s in root_view["sources"]] == [f"{sid}#1"], root_view


@pytest.mark.parametrize("kind", KINDS)
def test_recall_keeps_the_no_user_log_of_the_callers_session(kind: str, tmp_path: Path) -> None:
    root = _store(kind, tmp_path)
    user, sid = _ids()
    _cli(root, tmp_path, "session", "append", sid, "The codeword is Falcon.", "--session", sid)  # the no-user log _/chat
    _cli(root, tmp_path, "session", "append", sid, "The codeword is Eagle.", "--user", user)
    out = _recall(root, tmp_path, "what is the codeword", "--user", user, "--session", sid)
    assert "Falcon" in out["summary"] and "Eagle" in out["summary"], out  # main: only Eagle
    assert sorted(s["id"] for s in out["sources"]) == sorted([f"{sid}#1", f"{sid}#1@/_"]), out
    alone = _recall(root, tmp_path, "what is the codeword", "--session", sid)  # the no-user log is that caller's own
    assert "Falcon" in alone["summary"] and "Eagle" not in alone["summary"], alone
    assert [s["id"] for s in alone["sources"]] == [f"{sid}#1"], alone


async def test_message_ids_are_unique_across_every_visible_log(backend: Any) -> None:
    """Four logs of one session id in one caller's view (own, the no-user log, and both again in the parent
    namespace), plus a log whose session id mimics an addressed id: every message hit has an id of its own."""
    user, sid = _ids()
    ns = f"acme{uuid.uuid4().hex[:6]}"
    child = f"{ns}/a"
    provider = backend.provider()
    for where in (ns, child):
        await provider.log_messages(
            [{"role": "user", "text": f"Blue whale sighting in {where}."}], session_id=sid, user_id=user, namespace=where
        )
        await provider.log_messages([{"role": "user", "text": f"Blue whale sighting, no user, {where}."}], session_id=sid, namespace=where)
    tricky = f"{sid}#1@/{ns}"  # an own session whose id looks like another log's addressed message id
    await provider.log_messages(
        [{"role": "user", "text": "Blue whale sighting, tricky id."}], session_id=tricky, user_id=user, namespace=child
    )
    found = await provider.search_sessions("blue whale sighting", session_id=sid, user_id=user, namespace=child, limit=10)
    ids = [m["id"] for s in found for m in s["messages"]]
    assert sorted(ids) == sorted([f"{sid}#1", f"{sid}#1@/{child}/_", f"{sid}#1@/{ns}", f"{sid}#1@/{ns}/_", f"{tricky}#1"]), ids
    hits = (await provider.search("blue whale sighting", session_id=sid, user_id=user, namespace=child, mode="contextual", limit=10)).hits
    messages = [h.id for h in hits if h.kind == "message"]
    assert sorted(messages) == sorted(ids), messages


def _mcp_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEMORY_")}
    env.update({"LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYDANTIC_AI_NO_BANNER": "1"})
    return env


@asynccontextmanager
async def _mcp(root: str, *args: str) -> AsyncIterator[Any]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "agent_memory.mcp", "--root", root, *args], env=_mcp_env())
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


@pytest.mark.parametrize("kind", KINDS)
async def test_mcp_recall_keeps_both_logs_of_one_session_id(kind: str, tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    root = _store(kind, tmp_path)
    user, sid = _ids()
    ns = f"acme{uuid.uuid4().hex[:6]}/a"
    _cli(root, tmp_path, "session", "append", sid, "We decided the launch city is Oslo.", "--user", user)
    _cli(root, tmp_path, "session", "append", sid, "We decided the launch city is Rome.", "--user", user, "--namespace", ns)
    async with _mcp(root, "--user", user, "--namespace", ns) as s:
        result = await s.call_tool("memory_recall", {"message": "which launch city did we decide"})
    assert not result.is_error, result.content[0].text
    data = result.structured_content
    assert isinstance(data, dict), data
    assert "Rome" in data["summary"] and "Oslo" in data["summary"], data
    assert sorted(src["id"] for src in data["sources"]) == sorted([f"{sid}#1", f"{sid}#1@/"]), data


# -- 2. the memory tool in an inherited namespace ----------------------------------------------------------------
@pytest.fixture(params=KINDS)
async def tool_pair(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[Any, Any]]:
    """alice's handler at the root and in ``<ns>/a`` (inheriting the root), the root holding ``/memories/mine.md``."""
    from _pg import make_target

    target = make_target(request.param, tmp_path)
    provider = target.provider()
    user = f"alice{uuid.uuid4().hex[:8]}"
    root = MemoryToolHandler(provider, user_id=user)
    child = MemoryToolHandler(provider, user_id=user, namespace=f"acme{uuid.uuid4().hex[:6]}/a")
    assert "created" in await root.ahandle({"command": "create", "path": "/memories/mine.md", "file_text": "root text\n"})
    yield root, child
    await target.close()


MUTATIONS: list[dict[str, Any]] = [
    {"command": "create", "path": "/memories/mine.md", "file_text": "local text\n"},
    {"command": "str_replace", "path": "/memories/mine.md", "old_str": "root", "new_str": "local"},
    {"command": "insert", "path": "/memories/mine.md", "insert_line": 0, "insert_text": "local line"},
    {"command": "delete", "path": "/memories/mine.md"},
    {"command": "rename", "old_path": "/memories/mine.md", "new_path": "/memories/moved.md"},
]


@pytest.mark.parametrize("command", MUTATIONS, ids=[c["command"] for c in MUTATIONS])
async def test_every_mutating_command_refuses_an_inherited_file(tool_pair: tuple[Any, Any], command: dict[str, Any]) -> None:
    root, child = tool_pair
    out = await child.ahandle(command)
    assert out.startswith("Error") and "read-only" in out and "root namespace" in out, out  # main: str_replace, insert, rename succeeded
    listing = await child.ahandle({"command": "view", "path": "/memories"})
    assert "/memories/mine.md" in listing and "moved.md" not in listing, listing
    for h in (child, root):  # nothing changed, and no local copy shadows the root's file
        assert (await h.ahandle({"command": "view", "path": "/memories/mine.md"})).endswith("     1\troot text\n     2\t"), h
    assert len(await child.backend.list(child.caller, tags=("memory-tool",), limit=100)) == 1


async def test_a_childs_own_file_and_one_that_shadows_an_inherited_file(tool_pair: tuple[Any, Any]) -> None:
    """Read-only, not copy-on-write: the child's own files are its to change; where its own file shadows an
    inherited one (it made it before the ancestor did), edits change its own, delete removes its own and says the
    inherited one stays, and rename is refused (the inherited file could not move with it)."""
    root, child = tool_pair
    assert "created" in await child.ahandle({"command": "create", "path": "/memories/own.md", "file_text": "child text\n"})
    assert "edited" in await child.ahandle({"command": "str_replace", "path": "/memories/own.md", "old_str": "child", "new_str": "mine"})
    assert "has been edited" in await child.ahandle(
        {"command": "insert", "path": "/memories/own.md", "insert_line": 0, "insert_text": "top"}
    )
    assert "created" in await root.ahandle({"command": "create", "path": "/memories/own.md", "file_text": "root own\n"})
    assert "mine text" in await child.ahandle({"command": "view", "path": "/memories/own.md"})  # its own shows over the root's
    assert "edited" in await child.ahandle({"command": "str_replace", "path": "/memories/own.md", "old_str": "top", "new_str": "head"})
    out = await child.ahandle({"command": "rename", "old_path": "/memories/own.md", "new_path": "/memories/o2.md"})
    assert out.startswith("Error") and "read-only" in out, out
    out = await child.ahandle({"command": "delete", "path": "/memories/own.md"})
    assert "stay" in out and "read-only" in out, out
    assert "root own" in await child.ahandle({"command": "view", "path": "/memories/own.md"})
    assert "root own" in await root.ahandle({"command": "view", "path": "/memories/own.md"})
    assert "created" in await child.ahandle({"command": "create", "path": "/memories/n.md", "file_text": "new\n"})
    assert "Successfully renamed" in await child.ahandle({"command": "rename", "old_path": "/memories/n.md", "new_path": "/memories/m.md"})
    assert "does not exist" in await root.ahandle({"command": "view", "path": "/memories/m.md"})  # the child's, not the root's


# -- 3. look-alike names -----------------------------------------------------------------------------------------
LOOK_ALIKES = [
    ("/memories/caf\u00e9.md", "/memories/cafe\u0301.md"),  # NFC and NFD
    ("/memories/file.md", "/memories/\ufb01le.md"),  # the fi ligature
    ("/memories/report.md", "/memories/\uff52\uff45\uff50\uff4f\uff52\uff54.md"),  # full-width letters
]


@pytest.mark.parametrize("pair", LOOK_ALIKES, ids=["nfd", "ligature", "fullwidth"])
async def test_names_that_look_the_same_are_one_file(backend: Any, pair: tuple[str, str]) -> None:
    first, second = pair
    h = MemoryToolHandler(backend.provider(), user_id=f"alice{uuid.uuid4().hex[:8]}")
    assert "created" in await h.ahandle({"command": "create", "path": first, "file_text": "one\n"})
    out = await h.ahandle({"command": "create", "path": second, "file_text": "two\n"})
    assert out == f"Error: File {first} already exists", out  # main: a second file
    listing = await h.ahandle({"command": "view", "path": "/memories"})
    assert listing.count("/memories/") == 1 and listing.endswith(first), listing
    assert "one" in await h.ahandle({"command": "view", "path": second})  # either spelling finds the file
    assert "edited" in await h.ahandle({"command": "str_replace", "path": second, "old_str": "one", "new_str": "uno"})
    assert "Successfully renamed" in await h.ahandle({"command": "rename", "old_path": second, "new_path": "/memories/x.md"})
    assert "does not exist" in await h.ahandle({"command": "view", "path": first})


@pytest.mark.parametrize(
    "path",
    [
        "/memories/a\u200bb.md",  # zero-width space
        "/memories/a\u200db.md",  # zero-width joiner
        "/memories/\ufeffab.md",  # byte order mark
        "/memories/a\u00adb.md",  # soft hyphen
        "/memories/a\u2060b.md",  # word joiner
        "/memories/a\u034fb.md",  # combining grapheme joiner
        "/memories/a\ufe0fb.md",  # variation selector
        "/memories/a\u3164b.md",  # Hangul filler
        "/memories/a\U000e0041b.md",  # tag character
        "/memories/a\u2028b.md",  # line separator
        "/memories/a\x1bb.md",  # escape
    ],
)
async def test_names_with_invisible_characters_are_refused(tmp_path: Path, path: str) -> None:
    h = MemoryToolHandler(MemoryProvider(tmp_path / "mem"), user_id="alice")
    out = await h.ahandle({"command": "create", "path": path, "file_text": "x\n"})
    assert out.startswith("Error: Path /memories/a") or out.startswith("Error: Path /memories/\\ufeff"), out
    assert "control character" in out and path not in out, out  # shown escaped, never as the look-alike itself
    with pytest.raises(InvalidInputError):
        await h.execute({"command": "create", "path": path, "file_text": "x\n"})
    assert "Error" in await h.ahandle({"command": "view", "path": path})
    assert (await h.ahandle({"command": "view", "path": "/memories"})).endswith("0B\t/memories")  # nothing written


async def test_a_file_kept_under_a_decomposed_name_is_found_under_the_composed_one(tmp_path: Path) -> None:
    """A file written before names were normalised (its record keeps the NFD path) is listed once, under NFC."""
    from agent_memory.integrations import anthropic

    provider = MemoryProvider(tmp_path / "mem")
    h = MemoryToolHandler(provider, user_id="alice")
    nfd = "/memories/cafe\u0301.md"
    draft = anthropic.MemoryDraft(
        "old\n", title="cafe\u0301.md", kind=anthropic.KIND, scope="user", tags=(anthropic.TAG,), memory_key=anthropic._key(nfd),
        user_id="alice", metadata={anthropic.PATH_KEY: nfd},
    )  # fmt: skip
    await provider.backend.remember(draft, source="tool")
    listing = await h.ahandle({"command": "view", "path": "/memories"})
    assert listing.endswith("\t/memories/caf\u00e9.md") and listing.count("/memories/") == 1, listing
    assert "old" in await h.ahandle({"command": "view", "path": nfd})
    assert "Successfully deleted" in await h.ahandle({"command": "delete", "path": "/memories/caf\u00e9.md"})
    assert (await h.ahandle({"command": "view", "path": "/memories"})).endswith("0B\t/memories")


# -- 4. a refused namespace is not echoed when it holds a secret ------------------------------------------------
TOKEN = "ghp_" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2"


@pytest.mark.parametrize("value", [f"Acme/{TOKEN}", f"acme/{TOKEN}!", f"acme/x-{TOKEN.upper()}", f"ACME/{TOKEN}/" + "x" * 90])
def test_an_invalid_namespace_holding_a_secret_is_not_echoed(value: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        check_namespace(value)
    assert "invalid namespace" in str(err.value) and "looks like a secret" in str(err.value), err.value
    assert TOKEN[4:20] not in str(err.value) and TOKEN.upper()[4:20] not in str(err.value), err.value


def test_an_invalid_plain_namespace_is_still_named() -> None:
    with pytest.raises(InvalidInputError, match="invalid namespace 'Acme/support'"):
        check_namespace("Acme/support")
    with pytest.raises(InvalidInputError) as err:
        check_isolation(TOKEN)
    assert TOKEN[4:20] not in str(err.value) and "isolation must be one of" in str(err.value), err.value


@pytest.mark.parametrize("kind", KINDS)
def test_cli_does_not_echo_a_secret_namespace(kind: str, tmp_path: Path) -> None:
    root = _store(kind, tmp_path)
    bad = f"Acme/{TOKEN}"
    for args in (("search", "hello", "--namespace", bad), ("--json", "recall", "hello", "--user", "alice", "--namespace", bad)):
        out = _cli(root, tmp_path, *args, ok=False)
        assert TOKEN[4:20] not in out.stdout + out.stderr, (out.stdout, out.stderr)  # main: echoed on stderr and in JSON
        assert "invalid namespace" in out.stdout + out.stderr, (out.stdout, out.stderr)
