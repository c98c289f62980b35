"""Core injection: USER.md whole (redacted), visible MEMORY.md lines, token budget never exceeded; from a backend."""

import asyncio

import pytest

from agent_memory.agents.core_block import TRUNCATION_MARKER, MemoryBlock
from agent_memory.agents.core_block import inject as inject_async
from agent_memory.agents.tokens import count_tokens
from agent_memory.backends.base import Caller
from agent_memory.backends.files.backend import FilesBackend
from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import InvalidInputError


def inject(store: MemoryStore, *args, **kwargs) -> MemoryBlock:
    async def run() -> MemoryBlock:
        return await inject_async(FilesBackend(store), *args, **kwargs)

    return asyncio.run(run())


@pytest.fixture
def store(tmp_path):
    s = MemoryStore(tmp_path / "mem")
    (s.root / "USER.md").write_text("# User\nPrefers concise answers.\nWrites Python.\n")
    return s


def test_user_md_whole_then_lines_newest_first(store):
    a = store.remember("Project uses PostgreSQL 16.")
    b = store.remember("Deploys go through GitHub Actions.", kind="decision")
    block = inject(store, 1500)
    assert block.text.startswith("# User\nPrefers concise answers.\nWrites Python.")
    assert block.text.index(b.id) < block.text.index(a.id)
    assert f"- [{b.id}] (decision): Deploys go through GitHub Actions." in block.text
    assert not block.truncated and block.tokens == count_tokens(block.text)


def test_budget_is_never_exceeded_and_cut_on_line_boundary(store):
    for i in range(200):
        store.remember(f"fact {i}: " + "lorem ipsum dolor sit amet " * 3)
    all_lines = inject(store, 10**6).text.split("## Memory index\n", 1)[1].splitlines()
    for budget in (60, 100, 250, 777):
        block = inject(store, budget)
        assert block.truncated and block.tokens <= budget and count_tokens(block.text) == block.tokens
        assert block.text.startswith("# User") and block.text.endswith(TRUNCATION_MARKER)
        body = block.text.split("## Memory index\n", 1)[1].splitlines()[:-1]
        assert body == all_lines[: len(body)]  # whole lines, newest first, cut on a line boundary
        assert len(body) > 0 or budget < 100


def test_user_md_over_budget_is_cut_too(store):
    (store.root / "USER.md").write_text("\n".join(f"preference number {i}" for i in range(500)))
    block = inject(store, 50)
    assert block.truncated and block.tokens <= 50


def test_injection_obeys_scope_visibility(store):
    store.remember("shared project fact")
    store.remember("alice private session note", scope="session", session_id="s-alice")
    store.remember("bob user preference", scope="user", user_id="bob")
    anon = inject(store).text
    assert "shared project fact" in anon and "alice" not in anon and "bob" not in anon
    alice = inject(store, session_id="s-alice", user_id="alice").text
    assert "alice private session note" in alice and "bob user preference" not in alice
    bob = inject(store, session_id="s-bob", user_id="bob").text
    assert "bob user preference" in bob and "alice" not in bob


def test_default_budget_is_1500(store):
    for i in range(400):
        store.remember(f"distinct fact {i} " + "word " * 10)
    block = inject(store)
    assert block.truncated and 1400 < block.tokens <= 1500


def test_user_md_is_redacted_on_its_way_into_the_block(store):
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"
    (store.root / "USER.md").write_text(f"# User\nPrefers tabs.\nMy OpenAI key is {secret}\n")
    block = inject(store)
    assert "Prefers tabs." in block.text and secret not in block.text and "[REDACTED" in block.text


def test_inject_takes_a_caller_and_checks_the_budget(store):
    store.remember("carol's own note", scope="user", user_id="carol")
    assert "carol's own note" in inject(store, caller=Caller(user_id="carol")).text
    assert "carol's own note" not in inject(store, caller=Caller(user_id="dave")).text
    for bad in (-1, 1.5, "10", True):
        with pytest.raises(InvalidInputError):
            inject(store, bad)


def test_a_synchronous_store_gets_the_same_block(store):
    store.remember("Project uses PostgreSQL 16.")
    store.remember("ed's note", scope="user", user_id="ed")
    direct = inject_async(store, 800, user_id="ed")  # a MemoryStore: no event loop needed
    assert isinstance(direct, MemoryBlock) and direct == inject(store, 800, user_id="ed")
    assert "ed's note" in direct.text
