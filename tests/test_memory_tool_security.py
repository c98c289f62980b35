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

from agent_memory.backend import Caller, FilesBackend, MemoryBackend
from agent_memory.backends import open_backend
from agent_memory.drafts import MemoryDraft
from agent_memory.integrations.anthropic import MemoryToolHandler
from agent_memory.store import MemoryStore

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
    assert await call("rename", old_path="/memories/b.md", new_path="/memories/c.md") == \
        "Successfully renamed /memories/b.md to /memories/c.md"
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
