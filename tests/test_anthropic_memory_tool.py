"""Claude's memory tool over the store: replayed command sequences compared with the SDK's reference tool.

The reference is ``anthropic``'s ``BetaLocalFilesystemMemoryTool`` run on a temporary directory (no
network); where it is not installed, the replay tests are skipped and the path-rule tests still run.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agent_memory.backends.files.store import MemoryStore
from agent_memory.integrations.anthropic import MemoryToolHandler
from agent_memory.provider import MemoryProvider

GUIDE = "<guidelines>\n<rule>Be concise.</rule>\n<rule>Cite the order number.</rule>\n</guidelines>\n"

# The flow the memory tool docs walk through: look first, write notes, edit, reorganise, clean up, plus the
# refusals they document (missing path, ambiguous or absent old_str, bad insert_line, traversal, root delete).
SEQUENCE: list[dict[str, Any]] = [
    {"command": "view", "path": "/memories"},
    {"command": "create", "path": "/memories/customer_service_guidelines.xml", "file_text": GUIDE},
    {"command": "create", "path": "/memories/progress/task.md", "file_text": "# Task\n- [ ] step one\n- [ ] step two\n"},
    {"command": "create", "path": "/memories/progress/deep/a/b.md", "file_text": "deep note\n"},
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/memories/customer_service_guidelines.xml"},
    {"command": "view", "path": "/memories/customer_service_guidelines.xml", "view_range": [2, 3]},
    {"command": "view", "path": "/memories/customer_service_guidelines.xml", "view_range": [3, -1]},
    {
        "command": "str_replace",
        "path": "/memories/customer_service_guidelines.xml",
        "old_str": "Be concise.",
        "new_str": "Be concise and friendly.",
    },
    {"command": "str_replace", "path": "/memories/customer_service_guidelines.xml", "old_str": "<rule>", "new_str": "<r>"},
    {"command": "str_replace", "path": "/memories/customer_service_guidelines.xml", "old_str": "absent", "new_str": "x"},
    {"command": "str_replace", "path": "/memories/progress/task.md", "old_str": "- [ ]", "new_str": "- [x]"},
    {"command": "str_replace", "path": "/memories/nope.md", "old_str": "a", "new_str": "b"},
    {"command": "insert", "path": "/memories/progress/task.md", "insert_line": 1, "insert_text": "Started today.\n"},
    {"command": "insert", "path": "/memories/progress/task.md", "insert_line": 0, "insert_text": "<!-- top -->"},
    {"command": "insert", "path": "/memories/progress/task.md", "insert_line": 99, "insert_text": "x"},
    {"command": "view", "path": "/memories/progress/task.md"},
    {"command": "create", "path": "/memories/progress/task.md", "file_text": "again\n"},
    {"command": "rename", "path": "", "old_path": "/memories/progress/task.md", "new_path": "/memories/done/task.md"},
    {"command": "rename", "old_path": "/memories/missing.md", "new_path": "/memories/other.md"},
    {"command": "rename", "old_path": "/memories/done/task.md", "new_path": "/memories/customer_service_guidelines.xml"},
    {"command": "rename", "old_path": "/memories/progress", "new_path": "/memories/archive"},
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/memories/archive"},
    {"command": "view", "path": "/memories/ghost"},
    {"command": "view", "path": "/etc/passwd"},
    {"command": "view", "path": "/memories/../etc/passwd"},
    {"command": "create", "path": "/memories/../../outside.md", "file_text": "x"},
    {"command": "delete", "path": "/memories"},
    {"command": "delete", "path": "/memories/ghost.md"},
    {"command": "delete", "path": "/memories/done"},  # directories exist while they hold a file (docs)
    {"command": "delete", "path": "/memories/archive"},
    {"command": "view", "path": "/memories"},
]


def _reference(base: Path) -> Any:
    tools = pytest.importorskip("anthropic.tools.memory")
    return tools.BetaLocalFilesystemMemoryTool(str(base))


def _ref_call(tool: Any, command: dict[str, Any]) -> str:
    from anthropic.lib.tools import ToolError

    try:
        return f"OK {tool.call(command)}"
    except ToolError as exc:
        return f"ERR {exc}"


def _ours(handler: MemoryToolHandler, command: dict[str, Any]) -> str:
    text = handler.handle(command)
    return f"ERR {text[7:]}" if text.startswith("Error: ") else f"OK {text}"


def _comparable(text: str) -> str:
    """Directory sizes depend on the file system (4.0K per directory inode); file sizes and paths must agree."""
    out = []
    listing = "up to 2 levels deep" in text
    for i, line in enumerate(text.split("\n")):
        size, tab, path = line.partition("\t")
        if listing and tab and (path.endswith("/") or i == 1):  # line 1: the listed directory itself
            line = f"*\t{path}"
        out.append(line)
    return "\n".join(out)


def test_replay_matches_reference_implementation(tmp_path: Path) -> None:
    ref = _reference(tmp_path / "ref")
    handler = MemoryToolHandler(MemoryProvider(tmp_path / "mem"), user_id="alice")
    for command in SEQUENCE:
        expected = _ref_call(ref, dict(command))
        got = _ours(handler, dict(command))
        if expected.startswith("ERR") and ("escape" in expected or "must start" in expected):
            assert got.startswith("ERR"), (command, got)
            continue
        assert _comparable(got) == _comparable(expected), command


def test_files_are_records_in_the_callers_partition(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    alice = MemoryToolHandler(MemoryProvider(root), user_id="alice")
    bob = MemoryToolHandler(MemoryProvider(root), user_id="bob")
    assert alice.handle({"command": "create", "path": "/memories/prefs.md", "file_text": "Likes dark roast.\n"}).startswith("File created")
    assert "does not exist" in bob.handle({"command": "view", "path": "/memories/prefs.md"})
    assert bob.handle({"command": "create", "path": "/memories/prefs.md", "file_text": "Likes tea.\n"}).startswith("File created")
    store = MemoryStore(root)
    try:
        hits = store.search("dark roast", user_id="alice").hits
        assert [h.title for h in hits] == ["prefs.md"]  # searchable like any memory, by its owner only
        assert store.search("dark roast", user_id="bob").hits == []
        rec = store.get(hits[0].id, user_id="alice")
        assert rec.scope.value == "user" and rec.user_id == "alice" and rec.metadata["memory_path"] == "/memories/prefs.md"
    finally:
        store.close()


def test_writes_are_redacted_and_files_may_share_text(tmp_path: Path) -> None:
    h = MemoryToolHandler(MemoryProvider(tmp_path / "mem"), session_id="s1")
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 3
    h.handle({"command": "create", "path": "/memories/keys.md", "file_text": f"api key: {secret}\n"})
    shown = h.handle({"command": "view", "path": "/memories/keys.md"})
    assert secret not in shown and "api key:" in shown
    assert secret not in "".join(p.read_text() for p in (tmp_path / "mem").rglob("*.md"))
    h.handle({"command": "create", "path": "/memories/a.md", "file_text": "same fact\n"})
    assert h.handle({"command": "create", "path": "/memories/b.md", "file_text": "same fact\n"}).startswith("File created")
    assert "b.md" in h.handle({"command": "view", "path": "/memories"})  # two files may hold the same text


@pytest.mark.parametrize(
    "path",
    [
        "/memories/%2e%2e/x",
        "/memories/..%2fx",
        "/memories/a\\..\\b",
        "/memories/./a",
        "/memoriesx/a",
        "memories/a",
        "/memories/a\x00b",
        "/memories/%2E%2E%2Fetc",
    ],
)
def test_traversal_refused(tmp_path: Path, path: str) -> None:
    h = MemoryToolHandler(MemoryProvider(tmp_path / "mem"))
    out = h.handle({"command": "create", "path": path, "file_text": "x"})
    assert out.startswith("Error: ") and ("escape" in out or "must start" in out)
    assert not list((tmp_path / "mem").rglob("records/*.md"))


def test_bad_inputs_are_errors_not_crashes(tmp_path: Path) -> None:
    h = MemoryToolHandler(MemoryProvider(tmp_path / "mem"))
    assert h.handle({"command": "explode"}).startswith("Error: Unknown command 'explode'")
    assert "file_text" in h.handle({"command": "create", "path": "/memories/a.md"})
    assert "insert_line" in h.handle({"command": "insert", "path": "/memories/a.md", "insert_line": "2", "insert_text": "x"})
    assert "cannot be empty" in h.handle({"command": "create", "path": "/memories/a.md", "file_text": "  \n"})


async def test_async_twin_and_sync_inside_a_loop(tmp_path: Path) -> None:
    h = MemoryToolHandler(MemoryProvider(tmp_path / "mem"), user_id="u")
    assert (await h.ahandle({"command": "create", "path": "/memories/x.md", "file_text": "one\ntwo\n"})).startswith("File created")
    assert "     2\ttwo" in h.handle({"command": "view", "path": "/memories/x.md"})  # sync call from a running loop
    results = await asyncio.gather(*(h.ahandle({"command": "view", "path": "/memories"}) for _ in range(5)))
    assert all("/memories/x.md" in r for r in results)


def test_sdk_tool_runner_interface(tmp_path: Path) -> None:
    pytest.importorskip("anthropic")
    from anthropic.lib.tools import ToolError
    from anthropic.tools.memory import BetaAbstractMemoryTool

    tool = MemoryToolHandler(MemoryProvider(tmp_path / "mem"), user_id="u").as_sdk_tool()
    assert isinstance(tool, BetaAbstractMemoryTool)
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    out = tool.call({"command": "create", "path": "/memories/n.md", "file_text": "hello\n"})
    assert isinstance(out, str) and out.startswith("File created")
    assert "hello" in tool.call({"command": "view", "path": "/memories/n.md"})
    with pytest.raises(ToolError, match="Cannot delete the /memories directory itself"):
        tool.call({"command": "delete", "path": "/memories"})


async def test_async_sdk_tool(tmp_path: Path) -> None:
    pytest.importorskip("anthropic")
    from anthropic.lib.tools import ToolError
    from anthropic.tools.memory import BetaAsyncAbstractMemoryTool

    tool = MemoryToolHandler(MemoryProvider(tmp_path / "mem")).as_async_sdk_tool()
    assert isinstance(tool, BetaAsyncAbstractMemoryTool)
    out = await tool.call({"command": "create", "path": "/memories/n.md", "file_text": "hi\n"})
    assert isinstance(out, str) and out.startswith("File created")
    with pytest.raises(ToolError, match="does not exist"):
        await tool.call({"command": "view", "path": "/memories/zzz"})


def test_sdk_tool_runner_round_trip_offline(tmp_path: Path) -> None:
    """The SDK's own tool runner drives the handler: a canned model asks for two commands, then answers."""
    anthropic = pytest.importorskip("anthropic")
    import httpx2 as httpx

    steps: list[list[dict[str, Any]]] = [
        [
            {
                "type": "tool_use",
                "id": "t1",
                "name": "memory",
                "input": {"command": "create", "path": "/memories/todo.md", "file_text": "- buy milk\n"},
            }
        ],
        [{"type": "tool_use", "id": "t2", "name": "memory", "input": {"command": "view", "path": "/memories/todo.md"}}],
        [{"type": "text", "text": "Noted."}],
    ]
    seen: list[Any] = []

    def reply(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body["messages"][-1])
        content = steps[len(seen) - 1]
        return httpx.Response(
            200,
            json={
                "id": f"msg_{len(seen)}",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": content,
                "stop_reason": "tool_use" if content[0]["type"] == "tool_use" else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        )

    client = anthropic.Anthropic(api_key="test", http_client=httpx.Client(transport=httpx.MockTransport(reply)))
    tool = MemoryToolHandler(MemoryProvider(tmp_path / "mem"), user_id="u").as_sdk_tool()
    runner = client.beta.messages.tool_runner(
        model="claude-test", max_tokens=100, tools=[tool], messages=[{"role": "user", "content": "remember: buy milk"}]
    )
    final = runner.until_done()
    assert final.content[0].text == "Noted."
    results = [part for msg in seen[1:] for part in msg["content"] if part.get("type") == "tool_result"]
    assert "File created successfully at: /memories/todo.md" in json.dumps(results[0])
    assert "- buy milk" in json.dumps(results[1])
