"""A question asking for a set of things gets no session lift: its answers are spread over sessions."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_memory.agents.models.offline_summarize import summarize_messages
from agent_memory.sessions import ContextualOptions, SessionStore, contextual_search
from agent_memory.sessions._question import asks_for_set


@pytest.mark.parametrize(
    "question",
    [
        "What video games does Nate play?",
        "What LGBTQ+ events has Caroline attended?",
        "What are Joanna's hobbies?",
        "What musical artists/bands has Melanie seen?",
        "How many dogs has Maria adopted?",
        "What has Melanie painted?",
        "What do Jon and Gina both like?",
        "Which cities did John visit?",
        "What kinds of books does Tim read?",
        "Has Ada ever been to Lisbon?",
    ],
)
def test_questions_asking_for_several_things(question):
    assert asks_for_set(question)


@pytest.mark.parametrize(
    "question",
    [
        "What did Caroline research?",
        "What is Caroline's relationship status?",
        "What kind of dance piece did Gina's team perform?",
        "When did Melanie go on a hike?",
        "Why did Gina start her own store?",
        "What does Ada think of this?",
        "Where was the bus?",
        "",
        "   ",
        "Quels livres Ada a-t-elle lus ?",
        "什么书?",
    ],
)
def test_questions_asking_for_one_thing(question):
    assert not asks_for_set(question)


def _log(store: SessionStore, sid: str, lines: list[tuple[str, str]], day: str, summary: str) -> None:
    store.append(
        sid, [{"role": "user", "speaker": s, "text": t, "at": f"{day}T10:{i:02d}:00Z"} for i, (s, t) in enumerate(lines)], user_id="ada"
    )
    assert summarize_messages(store.messages(sid, user_id="ada"), session_id=sid)
    store.write_summary(sid, summary, user_id="ada")


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    st = SessionStore(tmp_path)
    _log(
        st,
        "kitchen",
        [
            ("Ada", "I baked sourdough bread today while the radio played old songs in the kitchen all morning long."),
            ("Bo", "Your bread smells great from across the hallway, honestly."),
            ("Ada", "Baked bread is my weekend joy, with coffee and the newspaper."),
            ("Bo", "Save me a bread slice before the neighbours come round."),
            ("Ada", "I baked more bread for the neighbours and the school fair on a rainy Saturday afternoon."),
        ],
        "2026-05-01",
        "Ada talked about: baking bread, sourdough, bread for the neighbours.",
    )
    _log(
        st,
        "cabin",
        [
            ("Ada", "We hiked the ridge at dawn."),
            ("Bo", "The lake was cold."),
            ("Ada", "Pines everywhere."),
            ("Bo", "Did you sleep well?"),
            ("Ada", "I baked bread."),
            ("Bo", "Cabins are cosy."),
            ("Ada", "The stars were bright."),
            ("Bo", "We should return in autumn."),
        ],
        "2026-06-01",
        "Ada and Bo talked about: hiking the ridge, a cold lake, pines, stars, returning in autumn.",
    )
    return st


def test_a_set_question_finds_the_instance_outside_the_best_session(store):
    asked = contextual_search(store, "What breads has Ada baked?", user_id="ada", limit=3, trace=True)
    assert asked.trace and asked.trace[0]["asks_for_set"] is True and asked.trace[0]["lift"] == 0.0
    assert "cabin#5" in [h.id for h in asked.hits]  # the bread of the cabin trip, though the kitchen session leads
    lifted = contextual_search(
        store, "What breads has Ada baked?", user_id="ada", limit=3, trace=True, options=ContextualOptions(set_session_weight=None)
    )
    assert lifted.trace and lifted.trace[0]["asks_for_set"] is False and lifted.trace[0]["lift"] == 0.6
    assert [h.id for h in lifted.hits] == ["kitchen#3", "kitchen#5", "kitchen#1"]  # all from the best session


def test_a_question_asking_for_one_thing_keeps_the_lift(store):
    one = contextual_search(store, "What bread did Ada bake?", user_id="ada", limit=3, trace=True)
    assert one.trace and one.trace[0]["asks_for_set"] is False and one.trace[0]["lift"] == 0.6
    assert {h.metadata["session_id"] for h in one.hits} == {"kitchen"}


def test_set_options_follow_the_caller(store):
    mild = ContextualOptions(set_session_weight=0.3, set_context_share=0.5)
    out = contextual_search(store, "What breads has Ada baked?", user_id="ada", limit=3, trace=True, options=mild)
    same = contextual_search(
        store, "What bread did Ada bake?", user_id="ada", limit=3, options=ContextualOptions(session_weight=0.3, context_share=0.5)
    )
    assert out.trace and out.trace[0]["lift"] == 0.3
    assert [h.id for h in out.hits] == [h.id for h in same.hits]
