"""The public API: names re-exported from agent_memory, lazily."""

import subprocess
import sys

import agent_memory


def test_all_names_resolve():
    for name in agent_memory.__all__:
        assert getattr(agent_memory, name) is not None, name
    assert agent_memory.__all__ == sorted(agent_memory.__all__)
    assert set(agent_memory.__all__) == set(agent_memory._EXPORTS)  # the literal list (for type checkers) is complete
    assert "MemoryProvider" in agent_memory.__all__ and "MemoryStore" in agent_memory.__all__
    assert {"UnsupportedError", "LifecycleBackend", "SessionsBackend", "EpisodesBackend", "VectorsBackend"} <= set(
        agent_memory.__all__
    )  # issue 28: one unsupported error, one protocol per optional capability


def test_importing_the_provider_does_not_import_model_libraries():
    code = "import sys; from agent_memory import MemoryProvider, MemoryStore; print(sorted({m.split('.')[0] for m in sys.modules} & {'litellm', 'pydantic_ai'}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout.strip()
    assert out == "[]"


async def test_provider_is_async_first(tmp_path):
    p = agent_memory.MemoryProvider(tmp_path / "m")
    r = await p.remember("The wifi password is on the fridge.", tags=["home"])
    assert r.status == "created"
    result = await p.search("where is the wifi password?")
    assert isinstance(result, agent_memory.SearchResult)  # the same shape as MemoryStore.search
    [hit] = result.hits
    assert hit.id == r.id and hit.line_start == hit.line_end
    assert (await p.get(r.id)).content == "The wifi password is on the fridge."
    assert [x.id for x in await p.list(tags=["home"])] == [r.id]
    block = await p.inject(500)
    assert r.id in block.text
    assert (await p.sweep()).expired == []
    assert await p.forget(r.id) is True


async def test_async_with_flushes_pending_captures_and_closes(tmp_path):
    async with agent_memory.MemoryProvider(tmp_path / "m") as p:
        task = p.capture_turn_in_background("Remember that the backup runs at 03:00.", session_id="s", user_id="u")
    assert task.done() and task.result().ids  # awaited on exit, not lost
    again = agent_memory.MemoryProvider(tmp_path / "m")
    assert [r.content for r in await again.list(user_id="u")] == ["The backup runs at 03:00."]
