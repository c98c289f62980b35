"""A few real worker turns against a real model server (``make test-model``); skipped unless
``AGENT_MEMORY_TEST_MODEL_URL`` points at an OpenAI-compatible server (``AGENT_MEMORY_TEST_MODEL`` names the model,
else the server's first). ``make test`` and CI never run these: they need no model.

What must hold with any model, however small: the workers complete and never raise into the caller; recall's
summary, when not a flagged fallback, cites only records its tools returned; capture never stores a secret.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import pytest

URL = os.environ.get("AGENT_MEMORY_TEST_MODEL_URL", "")
pytestmark = [pytest.mark.model, pytest.mark.skipif(not URL, reason="set AGENT_MEMORY_TEST_MODEL_URL to a model server")]

pytest.importorskip("openai")

from agent_memory.agents.profiles import load_profile, server_model_name  # noqa: E402
from agent_memory.provider import MemoryProvider  # noqa: E402


def real_provider(tmp_path, tool_mode: str = "auto") -> MemoryProvider:
    local = load_profile("local")
    name = os.environ.get("AGENT_MEMORY_TEST_MODEL") or server_model_name(URL)
    timeout = float(os.environ.get("AGENT_MEMORY_TEST_MODEL_TIMEOUT", "600"))
    settings: dict[str, Any] = {
        "model": f"openai-chat:{name}",
        "api_base": URL,
        "base_url_env": None,
        "tool_mode": tool_mode,
        "timeout_s": timeout,
    }
    profile = dataclasses.replace(
        local, recall=dataclasses.replace(local.recall, **settings), capture=dataclasses.replace(local.capture, **settings)
    )
    return MemoryProvider(tmp_path / "mem", profile=profile, durable=False)


@pytest.mark.parametrize("tool_mode", ["auto", "prompted"])
async def test_recall_turn_completes_and_cites_only_what_it_read(tmp_path, tool_mode):
    provider = real_provider(tmp_path, tool_mode)
    ids = {
        (await provider.remember("Ada prefers the Helix editor over vim.", title="Editor", user_id="ada", scope="user")).id,
        (await provider.remember("The billing service deploys every Thursday.", title="Deploys", user_id="ada", scope="user")).id,
    }
    result = await provider.recall("Which editor does Ada use?", user_id="ada")
    assert result.usage["requests"] >= 1
    if not result.fallback:
        assert {s["id"] for s in result.sources} <= ids and result.sources
    else:
        assert result.reason and result.summary  # the flagged lexical fallback still answers
    provider.close()


async def test_capture_turn_completes_and_stores_no_secret(tmp_path):
    provider = real_provider(tmp_path)
    result = await provider.capture_turn(
        "Please remember that my cat is called Miso. My API key is sk-live-9f8e7d6c5b4a39281706f5e4.",
        "Noted: Miso.",
        user_id="ada",
        session_id="s1",
    )
    assert result.usage["requests"] >= 1
    stored = [r.content for r in await provider.list(user_id="ada")]
    assert not any("9f8e7d6c5b4a3928" in s for s in stored)
    assert result.fallback or all(w["id"] for w in result.written)
    provider.close()
