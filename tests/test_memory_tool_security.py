"""Claude's memory tool where it meets the rest of the store, on both backends, and tried as an attacker.

Files are records: their text may equal another file's or an ordinary memory's (a file system keeps both), a
rename never loses a file, and one user's handler never reaches another user's tree or shared records.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from _pg import fresh_schema, pg_url  # noqa: F401  (pytest fixture)

from agent_memory.backends import open_backend
from agent_memory.backends.base import Caller, MemoryBackend
from agent_memory.backends.files.backend import FilesBackend
from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import InvalidInputError
from agent_memory.integrations.anthropic import MemoryToolHandler
from agent_memory.model.drafts import MemoryDraft

ALICE = Caller(user_id="alice")


@pytest.fixture(params=["files", "postgres"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryBackend]:
    if request.param == "postgres":
        b: MemoryBackend = open_backend(request.getfixturevalue("pg_url"), schema=fresh_schema())
    else:
        b = FilesBackend(MemoryStore(tmp_path / "mem"))
    yield b
    await b.close()


def tool(backend: MemoryBackend, user: str = "alice", **kw: Any) -> Callable[..., Any]:
    handler = MemoryToolHandler(backend, user_id=user, **kw)

    async def call(command: str, **args: Any) -> str:
        return await handler.ahandle({"command": command, **args})

    return call


async def tree(call: Callable[..., Any]) -> str:
    return str(await call("view", path="/memories"))


async def test_rename_of_a_file_whose_text_equals_another_keeps_it(backend: MemoryBackend) -> None:
    call = tool(backend)
    assert (await call("create", path="/memories/a.md", file_text="same words\n")).startswith("File created")
    assert (await call("create", path="/memories/b.md", file_text="other words\n")).startswith("File created")
    assert "edited" in await call("str_replace", path="/memories/b.md", old_str="other", new_str="same")
    assert (
        await call("rename", old_path="/memories/b.md", new_path="/memories/c.md")
        == "Successfully renamed /memories/b.md to /memories/c.md"
    )
    listing = await tree(call)
    assert "/memories/a.md" in listing and "/memories/c.md" in listing and "/memories/b.md" not in listing
    assert "same words" in await call("view", path="/memories/c.md")
    assert "same words" in await call("view", path="/memories/a.md")


async def test_create_is_not_refused_when_an_ordinary_memory_has_the_same_text(backend: MemoryBackend) -> None:
    call = tool(backend)
    fact = await backend.remember(MemoryDraft("Likes green tea.", user_id="alice"), source="tool")
    assert fact.status == "created"
    assert (await call("create", path="/memories/prefs.md", file_text="Likes green tea.\n")).startswith("File created")
    assert (await call("create", path="/memories/copy.md", file_text="Likes green tea.\n")).startswith("File created")
    # and an ordinary memory written after the file is a memory of its own, not folded into the file
    again = await backend.remember(MemoryDraft("Likes green tea.", user_id="alice"), source="tool")
    assert again.status == "duplicate" and again.id == fact.id
    later = await backend.remember(MemoryDraft("Drinks coffee at noon.", user_id="alice"), source="tool")
    await call("create", path="/memories/noon.md", file_text="Drinks coffee at noon.\n")
    assert (await backend.get(later.id, ALICE)).content == "Drinks coffee at noon."
    listing = await tree(call)
    assert all(f"/memories/{n}.md" in listing for n in ("prefs", "copy", "noon"))
    # a sweep of exact duplicates leaves files alone (a file that vanished from /memories would lose the model's notes)
    await backend.sweep()
    listing = await tree(call)
    assert all(f"/memories/{n}.md" in listing for n in ("prefs", "copy", "noon"))
    assert (await backend.get(fact.id, ALICE)).content == "Likes green tea."


async def test_rename_cannot_put_a_file_under_another_file(backend: MemoryBackend) -> None:
    call = tool(backend)
    await call("create", path="/memories/a.md", file_text="alpha\n")
    await call("create", path="/memories/b.md", file_text="beta\n")
    await call("create", path="/memories/dir/c.md", file_text="gamma\n")
    for new in ("/memories/b.md/a.md", "/memories/b.md/deeper/a.md"):
        out = await call("rename", old_path="/memories/a.md", new_path=new)
        assert out == f"Error: A parent of {new} is a file", out
    out = await call("rename", old_path="/memories/dir", new_path="/memories/b.md/dir")
    assert out.startswith("Error: A parent of")
    listing = await tree(call)
    assert "/memories/b.md\n" in listing + "\n" and "/memories/a.md" in listing and "/memories/dir/c.md" in listing
    assert "b.md/" not in listing


SECRET = "sk-proj-" + "Q9w8E7r6T5y4U3i2O1p0" * 3


async def test_secrets_in_file_names_never_reach_disk_and_the_file_stays_reachable(backend: MemoryBackend, tmp_path: Path) -> None:
    call = tool(backend)
    for name, shown in (
        (f"/memories/{SECRET}.md", "/memories/[REDACTED:openai_key].md"),
        ("/memories/password=hunter2hunter2.md", "/memories/password=[REDACTED:password]"),
    ):
        assert await call("create", path=name, file_text="note\n") == f"File created successfully at: {shown}"
        assert "note" in await call("view", path=name)  # found again under the same (redacted) name
        assert "note" in await call("view", path=shown)
        assert shown in await tree(call)
    assert "edited" in await call("str_replace", path="/memories/password=hunter2hunter2.md", old_str="note", new_str="changed")
    out = await call("rename", old_path=f"/memories/{SECRET}.md", new_path="/memories/plain.md")
    assert out == "Successfully renamed /memories/[REDACTED:openai_key].md to /memories/plain.md"
    assert (await call("create", path="/memories/https://bob:Sup3rS3cretPassw0rd@db.example.com/x.md", file_text="n\n")).startswith(
        "Error: The path looks like it holds a secret"
    )
    listing = await tree(call)
    assert "hunter2" not in listing and SECRET not in listing and "Sup3rS3cret" not in listing
    for rec in await backend.list(ALICE, limit=100):
        assert "hunter2" not in repr(rec) and SECRET not in repr(rec)
    if isinstance(backend, FilesBackend):
        data = b"".join(f.read_bytes() for f in (tmp_path / "mem").rglob("*") if f.is_file())
        assert b"hunter2" not in data and SECRET.encode() not in data and b"Sup3rS3cret" not in data


@pytest.mark.parametrize(
    "path",
    [
        "/memories/\uff0e\uff0e/x.md",
        "/memories/\u2024\u2024/x.md",
        "/memories/\uff0e",
        "/memories/\x1b[31mred.md",
        "/memories/a\u202eexe.md",
        "/memories/a\x7fb",
        "/memories/a\x85b",
        "/memories/d/\u2066x",
    ],
)
async def test_look_alike_dots_control_and_bidi_characters_refused(tmp_path: Path, path: str) -> None:
    b = FilesBackend(MemoryStore(tmp_path / "mem"))
    call = tool(b)
    out = await call("create", path=path, file_text="x\n")
    assert out.startswith("Error: ") and ("escape" in out or "control character" in out), out
    assert "\x1b" not in out and "\u202e" not in out  # the refused name is quoted, never echoed raw
    assert await b.list(ALICE) == []
    await b.close()


async def test_a_restored_file_at_a_taken_path_is_never_left_hidden(backend: Any) -> None:  # restore: not on MemoryBackend
    call = tool(backend)
    await call("create", path="/memories/a.md", file_text="first\n")
    first = [r for r in await backend.list(ALICE) if r.metadata.get("memory_path") == "/memories/a.md"][0]
    await call("delete", path="/memories/a.md")
    await call("create", path="/memories/a.md", file_text="second\n")
    try:
        await backend.restore(first.id, ALICE)  # two live records now claim /memories/a.md
    except InvalidInputError:  # PostgreSQL refuses a restore whose key a live record holds: nothing can hide there
        assert not isinstance(backend, FilesBackend)
        assert "second" in await call("view", path="/memories/a.md")
        return
    shown = await call("view", path="/memories/a.md")
    old = "first" if "first" in shown else "second"
    assert "edited" in await call("str_replace", path="/memories/a.md", old_str=old, new_str="edited")
    assert "edited" in await call("view", path="/memories/a.md")  # the file shown is the one a write changes
    assert await call("delete", path="/memories/a.md") == "Successfully deleted /memories/a.md"
    assert "a.md" not in await tree(call)  # no older record surfaces after the delete
    await call("create", path="/memories/b.md", file_text="bee\n")
    second = [r for r in await backend.list(ALICE) if r.metadata.get("memory_path") == "/memories/b.md"][0]
    await call("delete", path="/memories/b.md")
    await call("create", path="/memories/b.md", file_text="bee two\n")
    await backend.restore(second.id, ALICE)
    await call("rename", old_path="/memories/b.md", new_path="/memories/c.md")
    listing = await tree(call)
    assert "/memories/c.md" in listing and "/memories/b.md" not in listing


async def test_records_that_only_claim_a_path_are_not_files(backend: MemoryBackend) -> None:
    """A memory written elsewhere (MCP, import) with the tool's tag and a path outside the rules is not a file."""
    for path, kind in (
        ("/memories/../../etc/passwd", "memory_file"),
        ("/memories/ok.md", "fact"),
        ("/memories/\x1b[2J.md", "memory_file"),
        ("/etc/passwd", "memory_file"),
    ):
        await backend.remember(
            MemoryDraft(f"planted {path}", kind=kind, user_id="alice", tags=("memory-tool",), metadata={"memory_path": path}), source="tool"
        )
    call = tool(backend)
    assert (await tree(call)).endswith("0B\t/memories")
    assert (await call("create", path="/memories/ok.md", file_text="real\n")).startswith("File created")


async def test_two_users_never_reach_each_others_files(backend: MemoryBackend) -> None:
    alice, bob = tool(backend, "alice"), tool(backend, "bob")
    await alice("create", path="/memories/secret-plan.md", file_text="alice only\n")
    await alice("create", path="/memories/dir/x.md", file_text="alice dir\n")
    await backend.remember(
        MemoryDraft(
            "shared note", scope="project", tags=("memory-tool",), kind="memory_file", metadata={"memory_path": "/memories/shared.md"}
        ),
        source="tool",
    )
    assert (await tree(bob)).endswith("0B\t/memories")  # neither alice's tree nor project records
    for command, args in (
        ("view", {"path": "/memories/secret-plan.md"}),
        ("view", {"path": "/memories/dir"}),
        ("delete", {"path": "/memories/secret-plan.md"}),
        ("delete", {"path": "/memories/dir"}),
        ("delete", {"path": "/memories/shared.md"}),
        ("str_replace", {"path": "/memories/secret-plan.md", "old_str": "alice", "new_str": "bob"}),
        ("insert", {"path": "/memories/secret-plan.md", "insert_line": 0, "insert_text": "x"}),
        ("rename", {"old_path": "/memories/secret-plan.md", "new_path": "/memories/mine.md"}),
    ):
        assert "does not exist" in await bob(command, **args), command
    assert (await bob("create", path="/memories/secret-plan.md", file_text="bob's\n")).startswith("File created")
    assert "alice only" in await alice("view", path="/memories/secret-plan.md")
    assert "bob's" in await bob("view", path="/memories/secret-plan.md")
    assert "alice dir" in await alice("view", path="/memories/dir/x.md")


async def test_huge_edits_are_refused_and_lose_nothing(backend: MemoryBackend) -> None:
    call = tool(backend)
    await call("create", path="/memories/a.md", file_text="keep me\n")
    big = "y" * 2_000_000
    for command, args in (
        ("str_replace", {"old_str": "keep", "new_str": big}),
        ("insert", {"insert_line": 0, "insert_text": big}),
        ("create", {"file_text": big}),
    ):
        out = await call(command, path="/memories/a.md" if command != "create" else "/memories/b.md", **args)
        assert out.startswith("Error: "), command
    assert "keep me" in await call("view", path="/memories/a.md")
    assert "b.md" not in await tree(call)
    out = await call("rename", old_path="/memories/a.md", new_path="/memories/" + "n" * 1100)
    assert out.startswith("Error: ")
    assert "keep me" in await call("view", path="/memories/a.md")


async def test_rename_never_moves_a_file_to_an_illegal_path(backend: MemoryBackend) -> None:
    call = tool(backend)
    leaf = "f" * 150
    await call("create", path=f"/memories/d/{leaf}.md", file_text="deep\n")
    new = "/memories/" + "n" * 900  # legal itself; the moved file's path would pass the 1024-character limit
    out = await call("rename", old_path="/memories/d", new_path=new)
    assert out.startswith("Error: Cannot rename /memories/d"), out
    assert "deep" in await call("view", path=f"/memories/d/{leaf}.md")


class FailingSecondWrite:
    """A backend whose second ``remember`` fails (a full disk, a lost connection) while everything else works."""

    def __init__(self, inner: MemoryBackend) -> None:
        self.inner, self.writes = inner, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def remember(self, draft: MemoryDraft, **kw: Any) -> Any:
        self.writes += 1
        if self.writes == 2:
            raise InvalidInputError("disk full")
        return await self.inner.remember(draft, **kw)


async def test_a_rename_that_fails_half_way_loses_nothing_and_leaves_no_copy(backend: MemoryBackend) -> None:
    await tool(backend)("create", path="/memories/dir/a.md", file_text="one\n")
    await tool(backend)("create", path="/memories/dir/b.md", file_text="two\n")
    call = tool(FailingSecondWrite(backend))  # type: ignore[arg-type]
    out = await call("rename", old_path="/memories/dir", new_path="/memories/moved")
    assert out.startswith("Error: Could not write /memories/moved/"), out
    listing = await tree(tool(backend))
    assert "/memories/dir/a.md" in listing and "/memories/dir/b.md" in listing and "moved" not in listing
