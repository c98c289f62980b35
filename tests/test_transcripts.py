"""Transcript import: one record per turn, with speaker, caption, date, metadata and neighbour context."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_memory import MemoryStore
from agent_memory.model.records import parse_record
from agent_memory.portable.transcripts import (
    Session,
    Turn,
    date_words,
    import_transcript,
    parse_when,
    render_turn,
    resolve_relative_dates,
    transcript_drafts,
)

SESSIONS = [
    Session(
        date="1:56 pm on 8 May, 2023",
        id="s1",
        turns=[
            Turn("Caroline", "Hey Mel! Good to see you!", id="D1:1"),
            Turn("Melanie", "Hey Caroline! What's new with you?", id="D1:2"),
            Turn("Caroline", "I went to a support group yesterday and it was so powerful.", id="D1:3"),
            Turn("Melanie", "Wow, what happened there?", id="D1:4"),
            Turn("Caroline", "The stories were so inspiring!", id="D1:5", caption="a photo of a mural with a rainbow flag"),
        ],
    ),
    Session(
        date="2023-05-25",
        id="s2",
        turns=[
            Turn("Melanie", "I ran a charity race last Sunday.", id="D2:1"),
            Turn("Caroline", "   ", id="D2:2"),
            Turn("Caroline", "That's amazing, well done!", id="D2:3"),
        ],
    ),
]


def meta(draft: Any) -> dict[str, Any]:
    """A draft's metadata (every transcript draft has some)."""
    assert draft.metadata is not None, draft
    return dict(draft.metadata)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    s = MemoryStore(tmp_path / "mem", durable=False)
    yield s
    s.close()


def test_parse_when_reads_prose_and_iso_dates():
    assert parse_when("1:56 pm on 8 May, 2023") == dt.datetime(2023, 5, 8, 13, 56)
    assert parse_when("10:04 am on 17 Sept, 2023") == dt.datetime(2023, 9, 17, 10, 4)
    assert parse_when("12:30 am on 1 January, 2024") == dt.datetime(2024, 1, 1, 0, 30)
    assert parse_when("May 8th, 2023") == dt.datetime(2023, 5, 8)
    assert parse_when("2023-05-08T09:15:00Z") == dt.datetime(2023, 5, 8, 9, 15)
    assert parse_when("sometime last spring") is None
    assert parse_when("31 February, 2023") is None
    assert date_words(dt.date(2023, 5, 8)) == "Monday, 8 May 2023"


def test_relative_dates_are_resolved_against_the_session_date():
    monday = dt.date(2023, 5, 8)
    got = dict(
        resolve_relative_dates("Yesterday was fun; last Friday too, and two weeks ago; next month we go; a few days ago; last year", monday)
    )
    assert got == {
        "yesterday": "7 May 2023",
        "last friday": "5 May 2023",
        "two weeks ago": "the week of 24 April 2023",
        "next month": "June 2023",
        "a few days ago": "5 May 2023",
        "last year": "2022",
    }
    assert resolve_relative_dates("nothing relative here", monday) == []
    for day in (monday, dt.date(2023, 5, 13), dt.date(2023, 5, 14)):  # Monday, Saturday, Sunday
        weekends = dict(resolve_relative_dates("last weekend, this weekend, next weekend", day))
        assert weekends == {
            "last weekend": "the weekend of 6 May 2023",
            "this weekend": "the weekend of 13 May 2023",
            "next weekend": "the weekend of 20 May 2023",
        }


def test_render_turn_has_speaker_text_caption_and_date_lines():
    turn = Turn("Caroline", "I went to a support group\nyesterday.", caption="a photo of a flag")
    text = render_turn(turn, dt.datetime(2023, 5, 8, 13, 56))
    assert text.split("\n") == [
        "Caroline: I went to a support group yesterday.",
        "[shared an image: a photo of a flag]",
        'Date: Monday, 8 May 2023, 1:56 pm; "yesterday" = 7 May 2023',
    ]
    assert render_turn(Turn("A", "hi"), None, "the day after the party").endswith("Date: the day after the party")


def test_one_draft_per_non_empty_turn_with_metadata_and_title():
    drafts = transcript_drafts(SESSIONS, thread="conv-1")
    assert len(drafts) == 7  # the blank turn D2:2 is skipped
    first = drafts[0]
    assert meta(first)["thread"] == "conv-1" and meta(first)["session"] == "s1"
    assert meta(first)["turn_id"] == "D1:1" and meta(first)["seq"] == 1
    assert meta(first)["speaker"] == "Caroline" and meta(first)["date"] == "2023-05-08"
    assert first.title == "Caroline, 8 May 2023"
    assert first.kind == "turn"
    last = drafts[-1]
    assert meta(last)["turn_id"] == "D2:3" and meta(last)["seq"] == 8  # seq counts the skipped turn
    assert "[shared an image: a photo of a mural with a rainbow flag]" in drafts[4].content


def test_context_holds_neighbours_of_the_same_session_only():
    drafts = transcript_drafts(SESSIONS, thread="t", context_turns=1)
    by_id = {meta(d)["turn_id"]: d for d in drafts}
    ctx = meta(by_id["D1:3"])["context"]
    assert "What's new with you?" in ctx and "what happened there?" in ctx
    assert "Good to see you" not in ctx  # two turns away, outside the window
    assert "Caroline:" not in ctx  # neighbour text, not speaker labels
    assert "charity race" not in meta(by_id["D1:5"])["context"]  # never across sessions
    assert "rainbow flag" in meta(by_id["D1:4"])["context"]  # a neighbour's image caption counts
    wide = {meta(d)["turn_id"]: d for d in transcript_drafts(SESSIONS, thread="t", context_turns=2)}
    assert "Good to see you" in meta(wide["D1:3"])["context"]


def test_context_is_bounded():
    long_turns = [Turn("A", "word " * 400, id=str(i)) for i in range(5)]
    drafts = transcript_drafts([Session(turns=long_turns)], thread="t", context_chars=300)
    sizes = [len(meta(d)["context"]) for d in drafts]
    assert max(sizes) <= 2 * 300 + 3 and min(sizes) >= 250


def test_import_writes_through_the_bulk_path_and_the_files_round_trip(store):
    results = import_transcript(store, SESSIONS, thread="conv-1", tags=["transcript"])
    assert len(results) == 7 and all(r.status == "created" for r in results)
    rec = store.get(results[2].id)
    assert rec.source == "import" and rec.kind == "turn" and rec.tags == ("transcript",)
    assert rec.content.startswith("Caroline: I went to a support group yesterday")
    assert meta(rec)["turn_id"] == "D1:3" and "What's new with you?" in meta(rec)["context"]
    on_disk = parse_record(Path(results[2].path).read_text(encoding="utf-8"), results[2].id)
    assert on_disk.metadata == rec.metadata  # the context lives in the file: a reindex rebuilds it


def test_neighbour_context_makes_an_answer_turn_findable(store):
    import_transcript(store, SESSIONS, thread="conv-1")
    hits = store.search("What did Melanie run?", limit=3).hits
    assert meta(hits[0])["turn_id"] == "D2:1"
    # "so inspiring" says nothing about a support group; its neighbours do
    found = [meta(h)["turn_id"] for h in store.search("support group", limit=10).hits]
    assert found[0] == "D1:3"
    assert set(found[1:]) == {"D1:1", "D1:2", "D1:4", "D1:5"}  # the neighbours, through their context
    # a date in a question meets the date written into the record
    may = store.search("What happened on 7 May 2023?", limit=1).hits
    assert meta(may[0])["turn_id"] == "D1:3"


def test_reimporting_the_same_transcript_is_deduplicated(store):
    first = import_transcript(store, SESSIONS, thread="conv-1")
    again = import_transcript(store, SESSIONS, thread="conv-1")
    assert [r.status for r in again] == ["duplicate"] * len(first)
    assert [r.id for r in again] == [r.id for r in first]


def test_repeated_words_are_two_turns_not_one_memory(store):
    session = Session(date="2023-06-01", turns=[Turn("A", "Thanks!", id="1"), Turn("B", "Sure.", id="2"), Turn("A", "Thanks!", id="3")])
    results = import_transcript(store, [session], thread="t")
    assert [r.status for r in results] == ["created"] * 3
    assert store.get(results[2].id).content.endswith("(turn 3)")
    assert [r.status for r in import_transcript(store, [session], thread="t")] == ["duplicate"] * 3


def test_scope_and_owner_reach_every_record(store):
    results = import_transcript(store, SESSIONS[:1], thread="t", scope="session", session_id="abc")
    assert all(store.get(r.id, session_id="abc").scope.value == "session" for r in results)
    assert store.search("support group", session_id="other").hits == []


def test_session_from_chat_messages():
    session = Session.from_messages(
        [
            {"role": "user", "content": "Book the Lisbon flight."},
            {"role": "assistant", "content": "Booked for 3 June."},
            {"role": "tool", "content": None},
        ],
        date="2024-06-01",
        names={"user": "Ana", "assistant": "Agent"},
    )
    assert [(t.speaker, t.text) for t in session.turns] == [("Ana", "Book the Lisbon flight."), ("Agent", "Booked for 3 June.")]
    drafts = transcript_drafts([session], thread="chat")
    assert drafts[0].content.split("\n")[0] == "Ana: Book the Lisbon flight."
    assert "Booked for 3 June." in meta(drafts[0])["context"]
