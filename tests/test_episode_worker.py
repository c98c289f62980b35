"""A profile's ``[episode]`` model refines each run's episode in the background, on every backend; it fails open."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory.agents.profiles import load_profile, parse_profile
from agent_memory.agents.workers.episode import parse_refinement
from agent_memory.integrations.hooks import MemoryHooks

SECRET = "sk-abcdefghijklmnopqrstuvwxyz1234567890"
GOOD = {
    "summary": "Asked to book a pottery class; searched twice, then booked Tuesday.",
    "worked": ["booking on the second try"],
    "failed": ["the first search found no class"],
}


def replying(text: str, seen: list[str] | None = None) -> FunctionModel:
    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if seen is not None:
            seen.append(str(messages[-1].parts[-1].content))  # type: ignore[union-attr]
        return ModelResponse(parts=[TextPart(text)])

    return FunctionModel(reply)


async def _run(backend: Any, model: Any) -> tuple[Any, Any, Any]:
    provider = backend.provider(profile=load_profile("offline").with_models(episode=model))
    hooks = MemoryHooks(provider, session_id="chat-1", user_id="ada", capture=False, recall=False, log_sessions=False)
    before = await hooks.on_run_end(
        "Book a pottery class", "Booked Tuesday", tool_calls=["search", "search", "book"], usage={"input_tokens": 120, "output_tokens": 30}
    )
    assert before is not None
    await provider.flush()
    after = await provider.episode(before.id, user_id="ada")
    return provider, before, after


async def test_a_valid_reply_refines_the_stored_episode_and_nothing_else(backend: Any) -> None:
    seen: list[str] = []
    provider, before, after = await _run(backend, replying("Here it is:\n" + json.dumps(GOOD), seen))
    assert before.summary == "" and before.refined_by is None  # the run's own call never waited for the model
    assert after.summary == GOOD["summary"] and (after.refined_by or "").startswith("function")
    assert (after.worked, after.failed) == (("booking on the second try",), ("the first search found no class",))
    for field in (
        "id",
        "goal",
        "started",
        "ended",
        "status",
        "exit",
        "scope",
        "session_id",
        "user_id",
        "tools",
        "sequence",
        "input_tokens",
        "output_tokens",
    ):
        assert getattr(after, field) == getattr(before, field), field
    assert "Book a pottery class" in seen[0] and "search ×2 → book" in seen[0]  # the model saw the run's record
    found = await provider.episodes("second try", user_id="ada")  # the refinement is searchable
    assert [e.id for e in found] == [before.id]
    assert await provider.episodes(user_id="bob") == []  # and stays its owner's


@pytest.mark.parametrize(
    "reply",
    [
        "no JSON here",
        json.dumps({"worked": ["x"]}),
        json.dumps(["a list"]),
        json.dumps({"summary": "ok", "worked": "not a list"}),
        "{broken json",
    ],
)
async def test_an_invalid_reply_keeps_the_deterministic_episode(backend: Any, reply: str) -> None:
    _, before, after = await _run(backend, replying(reply))
    assert after.summary == "" and after.refined_by is None and after.worked == before.worked


async def test_a_failing_or_slow_model_never_breaks_or_delays_the_run(backend: Any) -> None:
    def boom(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("provider down")

    _, _, after = await _run(backend, FunctionModel(boom))
    assert after.refined_by is None

    async def slow(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(30)
        return ModelResponse(parts=[TextPart(json.dumps(GOOD))])  # pragma: no cover

    profile = parse_profile({"episode": {"timeout_s": 0.2}}).with_models(episode=FunctionModel(slow))
    provider = backend.provider(profile=profile)
    hooks = MemoryHooks(provider, session_id="chat-2", user_id="ada", capture=False, recall=False, log_sessions=False)
    loop = asyncio.get_running_loop()
    started = loop.time()
    episode = await hooks.on_run_end("A slow refinement", "done")
    assert episode is not None
    assert loop.time() - started < 5  # recorded without waiting for the model
    await provider.flush()
    assert (await provider.episode(episode.id, user_id="ada")).refined_by is None  # timed out: unchanged


async def test_secrets_in_the_reply_are_redacted_before_they_are_stored(backend: Any) -> None:
    _, _, after = await _run(backend, replying(json.dumps({"summary": f"used key {SECRET}", "worked": [SECRET]})))
    assert SECRET not in after.summary and "[REDACTED" in after.summary and SECRET not in after.worked[0]


def test_the_offline_profile_refines_nothing_and_the_section_parses() -> None:
    assert load_profile("offline").episode.model == "offline"
    profile = parse_profile({"episode": {"model": "litellm:openai/gpt-4o-mini", "timeout_s": 5, "max_steps": 1}})
    assert (profile.episode.model, profile.episode.timeout_s, profile.episode.max_steps) == ("litellm:openai/gpt-4o-mini", 5.0, 1)
    with pytest.raises(ValueError):
        parse_refinement(json.dumps({"summary": "  "}))
    notes = parse_refinement(json.dumps({"summary": "s", "worked": ["a\nb", ""] + ["n"] * 50}))
    assert notes["worked"][0] == "a b" and len(notes["worked"]) <= 20 and "" not in notes["worked"]
