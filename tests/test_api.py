"""The public API: names re-exported from agent_memory, lazily."""

import subprocess
import sys

import agent_memory


def test_all_names_resolve():
    for name in agent_memory.__all__:
        assert getattr(agent_memory, name) is not None, name
    assert agent_memory.__all__ == sorted(agent_memory.__all__)
    assert "MemoryProvider" in agent_memory.__all__ and "MemoryStore" in agent_memory.__all__


def test_importing_the_provider_does_not_import_model_libraries():
    code = "import sys; from agent_memory import MemoryProvider, MemoryStore; print(sorted({m.split('.')[0] for m in sys.modules} & {'litellm', 'pydantic_ai'}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout.strip()
    assert out == "[]"


async def test_provider_is_async_first(tmp_path):
    p = agent_memory.MemoryProvider(tmp_path / "m")
    r = await p.remember("The wifi password is on the fridge.", tags=["home"])
    assert r.status == "created"
    [hit] = await p.search("where is the wifi password?")
    assert hit.id == r.id and hit.line_start == hit.line_end
    assert (await p.get(r.id)).content == "The wifi password is on the fridge."
    assert [x.id for x in await p.list(tags=["home"])] == [r.id]
    block = await p.inject(500)
    assert r.id in block.text
    assert (await p.sweep()).expired == []
    assert await p.forget(r.id) is True
