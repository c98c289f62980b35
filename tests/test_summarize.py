"""Session summaries: the offline extractive summariser, versions, the due policy, the worker's fail-open."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory import MemoryProvider
from agent_memory.agents.models.offline_summarize import summarize_messages
from agent_memory.agents.profiles import load_profile, parse_profile
from agent_memory.agents.workers.summarize import run_summarize, summarize_session
from agent_memory.errors import InvalidInputError, NotFoundError, ProfileError
from agent_memory.integrations.hooks import MemoryHooks
from agent_memory.sessions import SessionStore, SummaryPolicy

DAY1 = "2023-05-08T13:00:00Z"


def _log(store: SessionStore, sid: str = "s", n: int = 6, user: str | None = "ada", at: str = DAY1) -> None:
    base = dt.datetime.fromisoformat(at.replace("Z", "+00:00"))
    store.append(
        sid,
        [
            {
                "role": "user",
                "speaker": "Melanie" if i % 2 else "Caroline",
                "text": f"I went camping by the lake with my kids, trip number {i}."
                if i % 2
                else f"My counseling course at the community center starts soon, week {i}.",
                "at": (base + dt.timedelta(minutes=i)).isoformat(),
            }
            for i in range(n)
        ],
        user_id=user,
    )


def test_offline_summary_is_extractive_dated_and_deterministic(tmp_path):
    store = SessionStore(tmp_path)
    _log(store)
    msgs = store.messages("s", user_id="ada")
    text = summarize_messages(msgs, session_id="s")
    assert text == summarize_messages(msgs, session_id="s")
    first = text.splitlines()[0]
    assert "8 May 2023" in first and "6 messages" in first and "Caroline" in first and "Melanie" in first
    assert "Melanie talked about:" in text and "camping" in text.split("Melanie talked about:")[1].splitlines()[0]
    quoted = [line for line in text.splitlines() if line.startswith("- ")]
    assert quoted and all(line.startswith("- 8 May 2023, ") for line in quoted)
    sources = {m.text for m in msgs}
    assert all(line.split(": ", 1)[1] in sources for line in quoted)  # extractive: quoted as said
    assert summarize_messages([], session_id="s") == ""


def test_offline_summary_leaves_out_chat_filler_and_the_wrapper_of_image_notes():
    said = [
        "Wow, awesome!",
        "[shared an image: a sunset over hills]",
        "Amazing, wow!",
        "[shared an image: a sunset over hills]",
        "I signed up for a pottery class at the community center.",
        "[shared an image: a bowl of soup]",
        "Awesome, so cool!",
        "My pottery teacher fires the bowls on Fridays.",
    ]
    msgs = [{"speaker": "Mel", "text": t, "at": DAY1} for t in said]
    text = summarize_messages(msgs, session_id="s", max_sentences=2)
    topics = text.split("Mel talked about: ")[1].splitlines()[0].rstrip(".").split(", ")
    assert "pottery" in topics and not {"wow", "awesome", "amazing", "cool", "shared", "image"} & set(topics)
    quoted = [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("- ")]
    assert quoted == [said[4], said[7]]  # what was said, not the notes whose wrapper words repeat


def test_due_policy_idle_and_every(tmp_path):
    store = SessionStore(tmp_path)
    _log(store, n=3)
    info = store.session("s", user_id="ada")
    last = dt.datetime.fromisoformat(info.last_at.replace("Z", "+00:00"))  # type: ignore[union-attr]
    policy = SummaryPolicy(idle_s=1800, every=20)
    assert not info.due(policy, last + dt.timedelta(minutes=29))
    assert info.due(policy, last + dt.timedelta(minutes=30))
    assert info.due(SummaryPolicy(idle_s=1800, every=3), last)
    assert not info.due(SummaryPolicy(idle_s=1800, every=4), last)
    with pytest.raises(InvalidInputError):
        SummaryPolicy(every=0)


def test_versions_replace_and_keep_numbers(tmp_path):
    async def run() -> None:
        store = SessionStore(tmp_path)
        _log(store, n=4)
        worker = load_profile("offline").summarize
        first = await summarize_session(store, "s", session_id=None, user_id="ada", worker=worker, force=True)
        assert first is not None and first.version == 1 and first.messages == 4 and not first.fallback
        assert await summarize_session(store, "s", session_id=None, user_id="ada", worker=worker) is None  # not due
        _log(store, n=2, at="2023-05-09T10:00:00Z")
        second = await summarize_session(store, "s", session_id=None, user_id="ada", worker=worker, force=True)
        assert second is not None and second.version == 2 and second.messages == 6 and "9 May 2023" in second.text
        assert store.summary("s", user_id="ada") == second
        assert [s.version for s in store.summaries("s", user_id="ada")] == [1, 2]
        assert store.summaries("s", user_id="ada")[0] == first
        with pytest.raises(NotFoundError):
            await summarize_session(store, "s", session_id=None, user_id="bob", worker=worker, force=True)

    asyncio.run(run())


def _model_summary(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    prompt = str(messages[-1].parts[-1].content)  # type: ignore[union-attr]
    assert "Caroline" in prompt and "[2023-05-08 13:00]" in prompt
    return ModelResponse(parts=[TextPart("Caroline and Melanie talked about camping and counseling on 8 May 2023.")])


def _broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    raise RuntimeError("model down")


def test_worker_uses_the_profile_model_and_fails_open(tmp_path):
    async def run() -> None:
        store = SessionStore(tmp_path)
        _log(store)
        msgs = store.messages("s", user_id="ada")
        base = load_profile("offline").summarize
        good = await run_summarize(msgs, session_id="s", worker=dataclasses.replace(base, model=FunctionModel(_model_summary)))
        assert good.text.startswith("Caroline and Melanie") and not good.fallback and good.usage["requests"] == 1
        bad = await run_summarize(msgs, session_id="s", worker=dataclasses.replace(base, model=FunctionModel(_broken)))
        assert bad.fallback and "model down" in (bad.reason or "") and bad.text == summarize_messages(msgs, session_id="s")

        def slow_loader() -> object:
            raise ProfileError("no such profile")

        failed = await run_summarize(msgs, session_id="s", worker=slow_loader)  # type: ignore[arg-type]
        assert failed.fallback and "profile error" in (failed.reason or "")

    asyncio.run(run())


def test_profile_has_a_summarize_section():
    prof = parse_profile({"summarize": {"model": "offline", "timeout_s": 3, "max_steps": 1}})
    assert prof.summarize.role == "summarize" and prof.summarize.timeout_s == 3 and prof.summarize.tools == ()
    assert load_profile("offline").summarize.model == "offline"
    with pytest.raises(ProfileError):
        parse_profile({"summarize": {"tools": ["memory_search"]}})  # a summariser gets no tools
    with pytest.raises(ProfileError):
        parse_profile({"summarize": {"bogus": 1}})


def test_hooks_summarize_every_n_messages_and_at_compaction(tmp_path):
    async def run() -> None:
        async with MemoryProvider(tmp_path) as provider:
            hooks = MemoryHooks(
                provider, session_id="chat", user_id="ada", capture=False, recall=False, summary_policy=SummaryPolicy(every=4)
            )
            await hooks.on_turn_end("we talked about pottery classes", "pottery sounds great")
            await provider.flush()
            assert (await provider.session("chat", user_id="ada"))[0].summary is None  # 2 < 4
            await hooks.on_turn_end("and camping trips in July", "camping is fun")
            await provider.flush()
            summary = (await provider.session("chat", user_id="ada"))[0].summary
            assert summary is not None and summary.version == 1 and summary.messages == 4
            await hooks.on_turn_end("one more message", None)
            await hooks.on_before_compaction_commit(["old message"], "summary")
            summary = (await provider.session("chat", user_id="ada"))[0].summary
            assert summary is not None and summary.version == 2 and summary.messages == 5

    asyncio.run(run())


def test_concurrent_summaries_get_distinct_versions(tmp_path):
    import threading

    store = SessionStore(tmp_path)
    _log(store, n=2)

    def work(tag: str) -> None:
        other = SessionStore(tmp_path)
        for i in range(10):
            other.write_summary("s", f"{tag} summary {i}", user_id="ada")

    threads = [threading.Thread(target=work, args=(t,)) for t in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    versions = [s.version for s in store.summaries("s", user_id="ada")]
    assert versions == list(range(1, 21))


def test_a_pasted_blob_is_no_topic():
    blob = "x" * 200_000
    text = summarize_messages(
        [
            {"speaker": "A", "text": f"My pottery class shared {blob} today.", "at": DAY1},
            {"speaker": "A", "text": "The pottery kiln was hot.", "at": DAY1},
        ],
        session_id="s",
    )
    assert "pottery" in text.split("A talked about: ")[1].splitlines()[0]
    assert len(text) < 2_000  # quoted sentences are cut at 200 characters and the blob is not listed as a topic
