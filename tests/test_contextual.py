"""Two-stage contextual retrieval: sessions by summary, then messages (and records) within them; scopes hold."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory import MemoryProvider
from agent_memory.agents.models.offline_summarize import summarize_messages
from agent_memory.agents.tools import READ, memory_toolset
from agent_memory.backends.base import Caller
from agent_memory.eval.locomo import evaluate
from agent_memory.sessions import SessionStore, contextual_search, rank_sessions, search_sessions

DEV = Path("/work/shared/eval/locomo/locomo-dev.json")


def _session(store: SessionStore, sid: str, lines: list[tuple[str, str]], user: str | None, day: str) -> None:
    store.append(
        sid,
        [
            {"role": "user", "speaker": s, "text": t, "at": f"{day}T10:{i:02d}:00Z", "turn_id": f"{sid}:{i}"}
            for i, (s, t) in enumerate(lines)
        ],
        user_id=user,
    )
    msgs = store.messages(sid, session_id=sid, user_id=user)
    store.write_summary(sid, summarize_messages(msgs, session_id=sid), user_id=user)


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    st = SessionStore(tmp_path)
    _session(
        st,
        "garden",
        [
            ("Ada", "I planted tomatoes and basil in the garden."),
            ("Bo", "Nice, water them daily."),
            ("Ada", "The tomatoes need a trellis soon."),
        ],
        "ada",
        "2026-05-01",
    )
    _session(
        st,
        "travel",
        [("Ada", "We booked flights to Lisbon for June."), ("Bo", "Lisbon has great tiles."), ("Ada", "Our hotel is near the river.")],
        "ada",
        "2026-05-10",
    )
    _session(st, "bob-private", [("Bob", "My tomatoes and Lisbon plans are secret.")], "bob", "2026-05-11")
    _session(st, "anon", [("X", "tomatoes tomatoes Lisbon")], None, "2026-05-12")
    return st


def test_stage_one_finds_the_session_by_its_summary(store):
    logs = store.visible_logs(session_id=None, user_id="ada")
    ranked = rank_sessions("When do we fly to Lisbon?", logs, store)
    assert logs[ranked[0][0]][0].session_id == "travel" and ranked[0][1] == 1.0
    assert {logs[i][0].session_id for i, _ in ranked} <= {"garden", "travel"}


def test_messages_ranked_within_sessions_with_dates_and_neighbours(store):
    hits = contextual_search(store, "tomatoes trellis", user_id="ada", limit=3).hits
    assert hits[0].id == "garden#3" and hits[0].kind == "message" and hits[0].metadata["turn_id"] == "garden:2"
    assert hits[0].path == "sessions/ada/garden/log.jsonl" and hits[0].line_start == 3 and hits[0].score == 1.0
    dated = contextual_search(store, "Sunday 10 May 2026", user_id="ada", limit=3).hits  # date words are indexed
    assert dated and all(h.metadata["session_id"] == "travel" for h in dated)
    # "water them" says nothing about tomatoes, but its neighbours do
    ids = [h.id for h in contextual_search(store, "tomatoes", user_id="ada", limit=10).hits]
    assert "garden#2" in ids and ids.index("garden#1") < ids.index("garden#2")


@pytest.mark.parametrize("caller", [{"user_id": "carol"}, {"session_id": "garden", "user_id": "carol"}, {}])
def test_no_path_shows_another_callers_sessions(store, caller):
    assert contextual_search(store, "tomatoes Lisbon secret", limit=20, **caller).hits == []
    assert search_sessions(store, "tomatoes Lisbon secret", **caller) == []


def test_each_caller_sees_only_its_own(store):
    ada = {h.metadata["session_id"] for h in contextual_search(store, "tomatoes Lisbon secret", user_id="ada", limit=50).hits}
    assert ada == {"garden", "travel"}
    anon = {h.metadata["session_id"] for h in contextual_search(store, "tomatoes Lisbon", session_id="anon", limit=50).hits}
    assert anon == {"anon"}
    found = search_sessions(store, "Lisbon flights", user_id="ada")
    assert found[0]["session_id"] == "travel" and "Lisbon" in found[0]["summary"] and found[0]["messages"]


def test_provider_search_mode_contextual_merges_records_and_messages(tmp_path):
    async def run() -> None:
        async with MemoryProvider(tmp_path) as provider:
            await provider.log_messages(
                [{"role": "user", "text": "The deploy window is Friday afternoon."}], session_id="s1", user_id="ada"
            )
            await provider.remember("Deploys need two approvals.", user_id="ada", scope="user")
            await provider.remember("Bob deploys on Mondays.", user_id="bob", scope="user")
            result = await provider.search("deploy approvals Friday", user_id="ada", mode="contextual", limit=5, trace=True)
            kinds = [h.kind for h in result.hits]
            assert "message" in kinds and any(k != "message" for k in kinds)
            assert all("Bob" not in h.snippet for h in result.hits)
            assert result.trace and result.trace[0]["stage"] == "sessions"
            bob = await provider.search("deploy Friday", user_id="bob", mode="contextual")
            assert all(h.kind != "message" for h in bob.hits)

    asyncio.run(run())


def test_memory_search_sessions_is_a_read_tool_bound_to_the_caller(tmp_path):
    assert "memory_search_sessions" in READ

    async def run() -> None:
        async with MemoryProvider(tmp_path) as provider:
            await provider.log_messages([{"role": "user", "text": "Pixel the kitten likes tuna."}], session_id="a", user_id="ada")
            await provider.log_messages([{"role": "user", "text": "Bob's kitten is named Rex."}], session_id="b", user_id="bob")
            tools = memory_toolset(provider, READ, caller=Caller(user_id="ada"))

            def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
                if len(messages) == 1:
                    return ModelResponse(parts=[ToolCallPart("memory_search_sessions", {"query": "kitten"})])
                return ModelResponse(parts=[TextPart("done")])

            agent = Agent(FunctionModel(model), toolsets=[tools])
            result = await agent.run("kitten")
            text = str(result.all_messages())
            assert "Pixel" in text and "Rex" not in text

    asyncio.run(run())


@pytest.mark.skipif(not DEV.is_file(), reason="LoCoMo dev half not present")
def test_locomo_sessions_layer_maps_messages_back_to_evidence():
    result = evaluate(DEV, layer="sessions", ks=(10,), limit_conversations=1)
    assert result["questions"] > 100 and result["overall"]["recall@10"] > 0.6
    assert set(result["by_category"]) >= {"1", "4"}


def test_layer_sessions_on_a_tiny_file(tmp_path):
    data = [
        {
            "sample_id": "demo",
            "conversation": {
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ada", "dia_id": "D1:1", "text": "I adopted a kitten named Pixel."},
                    {"speaker": "Bo", "dia_id": "D1:2", "text": "I play the cello."},
                ],
                "session_2_date_time": "2:00 pm on 9 June, 2023",
                "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "My cello recital went well."}],
            },
            "qa": [
                {"question": "What is the kitten called?", "evidence": ["D1:1"], "category": 4},
                {"question": "How is Bo doing with the cello?", "evidence": ["D1:2", "D2:1"], "category": 1},
            ],
        }
    ]
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(data))
    result = evaluate(path, layer="sessions", ks=(1, 2), root=tmp_path / "roots")
    assert result["by_category"]["4"]["recall@1"] == 1.0 and result["by_category"]["1"]["recall@2"] == 1.0
    store = SessionStore(tmp_path / "roots" / "demo")
    sessions = store.sessions(user_id="demo")
    assert {s.session_id for s in sessions} == {"demo.session_1", "demo.session_2"}
    assert all(s.summary and s.summary.source == "offline" for s in sessions)
    assert store.messages("demo.session_1", user_id="demo")[0].at.startswith("2023-05-08T13:56")
    with pytest.raises(ValueError):
        evaluate(path, layer="episodes")


def test_offline_recall_cites_session_messages_of_the_caller_only(tmp_path):
    async def run() -> None:
        async with MemoryProvider(tmp_path) as provider:
            await provider.log_messages(
                [{"role": "user", "text": "Our flight to Lisbon leaves on 3 May at 9am."}], session_id="trip", user_id="ada"
            )
            await provider.log_messages(
                [{"role": "user", "text": "Bob's flight to Lisbon leaves on 9 June."}], session_id="bob-trip", user_id="bob"
            )
            ada = await provider.recall("When does the Lisbon flight leave?", user_id="ada")
            assert not ada.fallback and "3 May" in ada.summary and "9 June" not in ada.summary
            assert ada.sources[0]["id"] == "trip#1" and ada.sources[0]["line_start"] == 1
            carol = await provider.recall("When does the Lisbon flight leave?", user_id="carol")
            assert carol.summary == ""

    asyncio.run(run())


def test_contextual_mode_needs_session_logs():
    from agent_memory.sessions.api import SessionsNotSupportedError, session_store

    class NoSessions:
        pass

    with pytest.raises(SessionsNotSupportedError, match="not supported on the NoSessions backend"):
        session_store(NoSessions())


def test_offline_recall_skips_messages_found_only_through_their_neighbours(tmp_path):
    async def run():
        async with MemoryProvider(tmp_path / "mem", profile="offline") as provider:
            await provider.log_messages(
                [
                    {"role": "user", "text": "We decided to hold the team offsite on 12 June."},
                    {"role": "assistant", "text": "Noted."},
                    {"role": "user", "text": "Thanks a lot."},
                ],
                session_id="monday",
                user_id="ada",
            )
            result = await provider.recall("When is the team offsite?", session_id="tuesday", user_id="ada")
            cited = [s["id"] for s in result.sources]
            assert "monday#1" in cited, result  # the message that says it
            assert "monday#2" not in cited and "monday#3" not in cited, result  # its neighbours say nothing of it

    asyncio.run(run())


def test_session_lift_fades_when_stage_one_has_no_clear_winner(tmp_path):
    from agent_memory.sessions.contextual import ContextualOptions, _lift_gate

    assert _lift_gate([(0, 1.0), (1, 0.5)], 0.4) == 1.0  # a clear winner: the full lift
    assert _lift_gate([(0, 1.0), (1, 0.8)], 0.4) == pytest.approx(0.5)
    assert _lift_gate([(0, 1.0), (1, 1.0)], 0.4) == 0.0  # a tie: the answer is likely in both
    assert _lift_gate([(0, 1.0)], 0.4) == _lift_gate([(0, 1.0), (1, 1.0)], 0.0) == 1.0
    st = SessionStore(tmp_path)
    for sid in ("spring", "autumn"):  # two sessions alike: a question about both gets no pull towards either
        _session(st, sid, [("Ada", "I made a clay bowl in pottery class."), ("Bo", "Lovely glaze.")], "ada", "2026-05-01")
    _session(st, "travel", [("Ada", "We booked flights to Lisbon for June.")], "ada", "2026-05-10")
    tied = contextual_search(st, "What did Ada make in pottery class?", user_id="ada", trace=True)
    flat = contextual_search(st, "What did Ada make in pottery class?", user_id="ada", options=ContextualOptions(session_weight=0.0))
    assert tied.trace and tied.trace[0]["lift"] == 0.0
    assert [(h.id, h.score) for h in tied.hits] == [(h.id, h.score) for h in flat.hits]
    clear = contextual_search(st, "When do we fly to Lisbon?", user_id="ada", trace=True)
    assert clear.trace and clear.trace[0]["lift"] == 0.6 and clear.hits[0].id == "travel#1"


@pytest.mark.parametrize(
    "text, asking",
    [
        ("Have you adopted the shelter dog yet?", True),
        ("Wow, lovely! What games do you play?", True),
        ('She asked "why?"', True),
        ("Look at this! [shared an image: a dog on a sofa]", False),
        ("Did you see it? [shared an image: a red kite] [shared an image: a park]", True),
        ("We adopted him. Why? He needed a home.", False),
        ("", False),
        ("Why? " + "[a] " * 100_000, True),  # many notes: read from the end in linear time
        ("[a] " * 100_000 + "done", False),
    ],
)
def test_a_message_that_ends_by_asking(text, asking):
    from agent_memory.sessions._question import ends_by_asking

    assert ends_by_asking(text) is asking


def test_a_statement_outranks_the_question_that_prompted_it(tmp_path):
    from agent_memory.sessions.contextual import ContextualOptions

    st = SessionStore(tmp_path)
    _session(
        st,
        "pets",
        [
            ("Bo", "Have you adopted the shelter dog yet?"),
            ("Ada", "Not yet, the paperwork takes weeks."),
            ("Ada", "We finally adopted the shelter dog, a beagle called Rex, after a long wait."),
            ("Bo", "Great news."),
        ],
        "ada",
        "2026-05-01",
    )
    question = "Which shelter dog was adopted?"
    assert [h.id for h in contextual_search(st, question, user_id="ada", limit=2).hits] == ["pets#3", "pets#1"]
    flat = contextual_search(st, question, user_id="ada", limit=2, options=ContextualOptions(question_weight=1.0))
    assert [h.id for h in flat.hits] == ["pets#1", "pets#3"]  # the shorter question would lead on words alone
    peek = search_sessions(st, question, user_id="ada", messages=1)  # the sessions tool shows the statement too
    assert [m["id"] for m in peek[0]["messages"]] == ["pets#3"]
    assert [
        m["id"]
        for m in search_sessions(st, question, user_id="ada", messages=1, options=ContextualOptions(question_weight=1.0))[0]["messages"]
    ] == ["pets#1"]
