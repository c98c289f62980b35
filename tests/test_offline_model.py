"""The offline worker model: deterministic rules driven through a real pydantic-ai Agent and memory tools."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

from agent_memory.agents.models.offline import (
    NO_RELEVANT_MEMORY,
    NO_REPLY,
    OfflineModel,
    extract_statements,
    parse_recall_prompt,
    query_variants,
)
from agent_memory.agents.tokens import count_tokens
from agent_memory.agents.tools import CAPTURE, READ, memory_toolset
from agent_memory.agents.workers.capture import CaptureContext, rule_extractor
from agent_memory.agents.workers.recall import parse_citations, recall_prompt
from agent_memory.errors import InvalidInputError
from agent_memory.provider import MemoryProvider
from agent_memory.redaction.api import SECRET_SAMPLES


@pytest.fixture
def provider(tmp_path):
    p = MemoryProvider(tmp_path / "mem", durable=False)
    yield p
    p.close()


def steps(result) -> list[list[str]]:
    """Tool names (or 'text') per model response, in order."""
    out = []
    for msg in result.all_messages():
        if isinstance(msg, ModelResponse):
            out.append(
                [p.tool_name if isinstance(p, ToolCallPart) else "text" for p in msg.parts if isinstance(p, (ToolCallPart, TextPart))]
            )
    return out


def contents(transcript: str) -> list[str]:
    return [s.content for s in extract_statements(transcript)]


# -- statement extraction ----------------------------------------------------------------------
def test_extracts_each_kind_of_explicit_statement():
    found = {
        s.content: s
        for s in extract_statements(
            "user: Please remember that the release codename is Copper. I prefer tabs over spaces.\n"
            "user: We decided to use Postgres for the database. Let's go with weekly releases.\n"
            "user: My favourite editor is vim. I hate meetings before 10am. Call me Sam. I live in Berlin.\n"
            "user: Don't forget the standup moved to 9:30. Always answer in British English."
        )
    }
    assert found["The release codename is Copper."].memory_key == "release-codename"
    assert found["User prefers tabs over spaces."].kind == "preference"
    assert found["Decision: use Postgres for the database."].kind == "decision"
    assert found["Decision: go with weekly releases."].kind == "decision"
    editor = found["User's favourite editor is vim."]
    assert (editor.kind, editor.memory_key, editor.on_existing) == ("fact", "user.favourite-editor", "replace")
    assert found["User hates meetings before 10am."].kind == "preference"
    assert found["User's name is Sam."].memory_key == "user.name"
    assert found["User lives in Berlin."].memory_key == "user.home"
    assert "The standup moved to 9:30." in found
    assert found["User asks to always answer in British English."].kind == "preference"
    assert all(s.on_existing == "append" for s in found.values() if s.memory_key is None)


def test_corrections_take_the_latest_value_and_keep_the_key():
    stmts = extract_statements("user: My favourite editor is vim.\nuser: Actually, my favourite editor is Helix.")
    assert [(s.content, s.memory_key) for s in stmts] == [("User's favourite editor is Helix.", "user.favourite-editor")]
    stmts = extract_statements("user: Remember that the deploy day is Thursday.\nuser: Actually, the deploy day is Friday.")
    assert [(s.content, s.memory_key) for s in stmts] == [("The deploy day is Friday.", "deploy-day")]
    # "no, it's ..." corrects the last subject mentioned, even by the assistant
    stmts = extract_statements("user: When do I fly?\nassistant: Your flight is at 5pm.\nuser: No, it's at 6pm.")
    assert [(s.content, s.memory_key) for s in stmts] == [("User's flight is at 6pm.", "user.flight")]


def test_ignores_questions_assistant_lines_and_chit_chat():
    assert contents("user: What is my favourite editor? Is the codename Copper?\nuser: Thanks, that's great.") == []
    assert contents("assistant: I prefer short answers. My name is Bot. Remember that I am helpful.") == []
    assert contents("user: My question is how to deploy this.") == []
    assert contents("user: No, it's fine.") == []  # a correction with no subject to correct
    assert contents("Remember that the wifi name is Lighthouse.") == [
        "The wifi name is Lighthouse."
    ]  # unlabelled text counts as the user's
    assert contents("Remember that the wifi password hint is the cat's name.") == []  # never a password sentence


def keyed(transcript: str, **kw) -> list[tuple[str | None, str]]:
    return [(s.memory_key, s.content) for s in extract_statements(transcript, **kw)]


def test_first_person_facts_need_no_remember_prefix():
    assert keyed("user: I'm allergic to peanuts.") == [("user.allergy.peanuts", "User is allergic to peanuts.")]
    assert keyed("user: I moved to Munich.") == [("user.home", "User moved to Munich.")]
    assert keyed("user: About me:\n- I'm vegan\n2) I live in Graz") == [
        ("user.diet", "User is vegan."),
        ("user.home", "User lives in Graz."),
    ]
    assert keyed("user: Oh, and I just started at Acme. Call me Sam!") == [
        ("user.employer", "User started at Acme."),
        ("user.name", "User's name is Sam."),
    ]
    # the later home replaces the earlier one; the allergy, a different attribute, stays
    assert keyed("user: I'm allergic to peanuts. I live in Berlin.\nuser: I moved to Munich.") == [
        ("user.allergy.peanuts", "User is allergic to peanuts."),
        ("user.home", "User moved to Munich."),
    ]


def test_one_fact_per_keyed_record():
    assert keyed("user: my favourite colour is orange and I'm allergic to peanuts") == [
        ("user.favourite-colour", "User's favourite colour is orange."),
        ("user.allergy.peanuts", "User is allergic to peanuts."),
    ]
    assert keyed("user: I'm a data scientist at Spotify; I speak Dutch and German.") == [
        ("user.job", "User is a data scientist."),
        ("user.employer", "User works at Spotify."),
        ("user.language.dutch", "User speaks Dutch."),
        ("user.language.german", "User speaks German."),
    ]
    household = keyed("user: My daughter's name is Lily. My daughter is allergic to eggs. My daughter loves dinosaurs.")
    assert [k for k, _ in household] == ["user.daughter.name", "user.daughter.allergy.eggs", "user.daughter.taste.dinosaurs"]
    # either order of a comparison is the same preference, so the later one replaces the earlier
    assert keyed("user: I prefer tabs over spaces.\nuser: Actually I prefer spaces to tabs.") == [
        ("user.prefers.spaces-vs-tabs", "User prefers spaces to tabs.")
    ]


async def test_a_later_value_replaces_only_its_own_fact_in_the_store(provider):
    """Issue 12: "favourite colour is orange and … allergic to peanuts", then "green now": the allergy survives."""
    agent = Agent(OfflineModel("capture"), toolsets=[memory_toolset(provider, CAPTURE, source="turn_capture")])
    await agent.run("<transcript>\nuser: My favourite colour is orange and I'm allergic to peanuts.\n</transcript>")
    await agent.run("<transcript>\nuser: My favourite colour is green now.\n</transcript>")
    records = {r.memory_key: r.content for r in await provider.list()}
    assert records == {"user.favourite-colour": "User's favourite colour is green.", "user.allergy.peanuts": "User is allergic to peanuts."}


def test_negations_store_only_what_they_say():
    assert keyed("user: I'm allergic to cats.\nuser: I'm not allergic to cats after all.") == [
        ("user.allergy.cats", "User is not allergic to cats.")
    ]  # replaces the allergy, never stores one
    assert keyed("user: I'm not vegan anymore.") == [("user.diet", "User is no longer vegan.")]
    assert keyed("user: I don't work at Initech anymore.") == [("user.employer", "User no longer works at Initech.")]
    for text in ("I'm not a nurse.", "I don't live in London.", "I'm not allergic to anything.", "I don't work for Google."):
        assert keyed(f"user: {text}") == [], text


def test_must_not_capture():
    for text in (
        "If I were allergic to peanuts, I'd skip satay.",
        "What if I moved to Oslo?",
        "Am I vegan?",
        "My sister said she is allergic to cats.",
        "Tom works at Google.",
        "I think I'm allergic to latex.",
        "I'm moving to Lisbon next year.",
        "I'll be living in Cairo soon.",
        "I used to live in Paris.",
        "Call me tomorrow.",
        "call me back later",
        "Call me when you're done.",
        "Please call me at 5pm.",
        "My PIN is 4471.",
        "Remember that my door code is 1234.",
        "My bank password is in the drawer.",
        "I love it!",
        "My train is late.",
        "I'm tired.",
    ):
        assert keyed(f"user: {text}") == [], text
    assert keyed("assistant: I'm allergic to peanuts and I live in Rome. Call me Bot.") == []
    assert keyed("Bob: I'm vegan.\nuser: Bob is vegan.") == []
    assert keyed("user: call me " + "a" * 5000) == [] and keyed("user: I prefer " + "tea over " * 500) == []
    for secret in SECRET_SAMPLES:  # a sentence holding a secret is dropped whole, with its other facts
        assert keyed(f"user: I work at Acme and my key is {secret} ok") == [], secret


def test_relative_dates_use_the_turns_own_timestamp():
    now = dt.datetime(2024, 3, 12, 18, 0)
    assert keyed("user: I started at Fabrikam yesterday.", now=now) == [("user.employer", "User started at Fabrikam on 11 March 2024.")]
    two_days = "[2023-05-08 09:30] user: I moved to Porto last week.\n[2023-06-01] user: I started at Acme 3 days ago."
    found = extract_statements(two_days, now=now)  # each message's own stamp wins over `now`
    assert [(s.content, s.said_at) for s in found] == [
        ("User moved to Porto in the week of 1 May 2023.", dt.datetime(2023, 5, 8, 9, 30)),
        ("User started at Acme on 29 May 2023.", dt.datetime(2023, 6, 1)),
    ]
    header = "Date: 1:56 pm on 8 May, 2023\nuser: I turned 40 yesterday.\nassistant: Happy birthday!\nuser: I got married last month."
    assert [s.content for s in extract_statements(header)] == ["User turned 40 on 7 May 2023.", "User got married in April 2023."]
    assert keyed("user: Last year I moved to Bergen.", now=now) == [("user.home", "User moved to Bergen in 2023.")]
    undated = extract_statements("user: I started at Fabrikam yesterday.")  # no timestamp: kept as said
    assert [(s.content, s.said_at) for s in undated] == [("User started at Fabrikam yesterday.", None)]


def test_statement_fields_for_the_capture_worker():
    vegan, decision, codename = extract_statements(
        "user: I'm vegan. We decided to use Postgres. Remember that the release codename is Copper."
    )
    assert (vegan.memory_key, vegan.kind, vegan.personal, vegan.on_existing) == ("user.diet", "fact", True, "replace")
    assert (decision.memory_key, decision.kind, decision.tags, decision.personal, decision.on_existing) == (
        None,
        "decision",
        ("decision",),
        False,
        "append",
    )
    assert (codename.memory_key, codename.personal) == ("release-codename", False)
    drafts = rule_extractor(CaptureContext("turn", "user: I can't stand cilantro."))
    assert [(d.content, d.kind, d.memory_key, d.on_existing) for d in drafts] == [
        ("User can't stand cilantro.", "preference", "user.taste.cilantro", "replace")
    ]


def test_docs_capture_snippets_run():
    """Every python snippet of docs/capture.md runs, in order, in one namespace."""
    doc = (Path(__file__).parent.parent / "docs" / "capture.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", doc, re.DOTALL)
    assert len(blocks) >= 5
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, "docs/capture.md", "exec"), namespace)


def test_bad_arguments_get_a_typed_error():
    with pytest.raises(InvalidInputError, match="transcript"):
        extract_statements(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="now"):
        extract_statements("user: I'm vegan.", now="2024-01-01")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="limit"):
        extract_statements("user: I'm vegan.", limit=-1)
    assert extract_statements("") == [] and extract_statements("user: \x00\ud800 ☃") == []


def test_statement_limit_keeps_the_most_recent():
    text = "\n".join(f"user: Remember that item {i} is ready." for i in range(20))
    kept = extract_statements(text, limit=5)
    assert [s.content for s in kept] == [f"Item {i} is ready." for i in range(15, 20)]


def test_prompt_parsing_and_query_variants():
    assert parse_recall_prompt(recall_prompt("where is Bob?", 123)) == ("where is Bob?", 123)
    assert parse_recall_prompt("just a question") == ("just a question", 400)
    variants = query_variants('When did Caroline meet "Pride Group" in May 2023? She was excited.')
    assert variants[0].startswith("When did Caroline")
    assert any("Pride Group" in v and "2023" in v for v in variants[1:])
    assert variants[-1] == "She was excited."
    assert query_variants("what is my favourite editor") == ["what is my favourite editor"]
    assert query_variants("What did Alice say?") == ["What did Alice say?"]  # a lone name is not a useful variant


# -- through a real Agent ---------------------------------------------------------------------
async def seed(provider: MemoryProvider) -> dict[str, str]:
    ids = {}
    ids["codename"] = (await provider.remember("Release planning notes.\nThe release codename is Copper.\nShip date is in June.")).id
    ids["db"] = (await provider.remember("Decision: the team uses Postgres 16 for the main database.")).id
    ids["noise"] = (await provider.remember("Lunch options near the office include tacos and ramen.")).id
    return ids


async def test_offline_recall_searches_then_reads_then_answers_with_citations(provider):
    ids = await seed(provider)
    agent = Agent(OfflineModel("recall"), toolsets=[memory_toolset(provider, READ)])
    result = await agent.run(recall_prompt("What is the release codename?", 400))
    assert steps(result) == [["memory_search", "memory_search_sessions"], ["memory_get"] * len(steps(result)[1]), ["text"]]
    rec = await provider.get(ids["codename"])
    line = rec.body_line + 1  # "The release codename is Copper." is the body's second line
    assert "The release codename is Copper." in result.output
    cited = [c for c in parse_citations(result.output) if c["id"] == ids["codename"]]
    assert cited and cited[0]["line_start"] <= line <= cited[0]["line_end"]
    assert "tacos" not in result.output and "Ship date" not in result.output  # lines without query terms stay out
    assert result.usage.requests == 3 and result.usage.input_tokens == 0  # no model tokens: no LLM


async def test_offline_recall_respects_the_budget_and_says_when_nothing_matches(provider):
    for i in range(30):
        await provider.remember(f"Deployment note {i}: the deployment pipeline step {i} runs integration checks on staging.")
    agent = Agent(OfflineModel("recall"), toolsets=[memory_toolset(provider, READ)])
    result = await agent.run(recall_prompt("deployment pipeline integration checks", 60))
    assert 0 < count_tokens(result.output) <= 60 and "[" in result.output
    nothing = await agent.run(recall_prompt("zebra xylophone quokka", 400))
    assert nothing.output == NO_RELEVANT_MEMORY


async def test_offline_recall_adapts_to_narrowed_tools(provider):
    ids = await seed(provider)
    agent = Agent(OfflineModel("recall"), toolsets=[memory_toolset(provider, ("memory_search",))])
    result = await agent.run(recall_prompt("Which database do we use?", 400))
    assert steps(result) == [["memory_search"], ["text"]]  # answers from snippets when memory_get is not offered
    assert f"[{ids['db']}:L" in result.output and "Postgres 16" in result.output


async def test_offline_capture_searches_remembers_and_replies_no_reply(provider):
    agent = Agent(OfflineModel("capture"), toolsets=[memory_toolset(provider, CAPTURE, source="turn_capture")])
    prompt = "<transcript>\nuser: Remember that the release codename is Copper. I prefer dark mode.\n</transcript>"
    result = await agent.run(prompt)
    assert steps(result) == [["memory_search", "memory_search"], ["memory_remember", "memory_remember"], ["text"]]
    assert result.output == NO_REPLY
    stored = sorted(r.content for r in await provider.list())
    assert stored == ["The release codename is Copper.", "User prefers dark mode."]
    assert {r.source for r in await provider.list()} == {"turn_capture"}
    again = await agent.run(prompt)  # memory already says exactly this: searched, nothing remembered
    assert steps(again) == [["memory_search", "memory_search"], ["text"]]
    assert len(await provider.list()) == 2


async def test_offline_capture_without_statements_makes_no_tool_calls(provider):
    agent = Agent(OfflineModel("capture"), toolsets=[memory_toolset(provider, CAPTURE)])
    result = await agent.run("<transcript>\nuser: How are you today?\nassistant: Fine.\n</transcript>")
    assert steps(result) == [["text"]] and result.output == NO_REPLY


def test_model_identity():
    model = OfflineModel("capture")
    assert model.model_name == "offline-capture" and model.system == "agent_memory"
    with pytest.raises(ValueError):
        OfflineModel("summarise")  # type: ignore[arg-type]


async def test_offline_recall_clips_one_long_line_around_the_query_terms(provider):
    filler = " ".join(f"word{i}" for i in range(400))
    rid = (await provider.remember(f"{filler} the lighthouse keeper is named Oskar {filler}")).id
    agent = Agent(OfflineModel("recall"), toolsets=[memory_toolset(provider, READ)])
    result = await agent.run(recall_prompt("Who is the lighthouse keeper?", 150))
    assert "lighthouse keeper is named Oskar" in result.output and f"[{rid}:L" in result.output
    assert "…" in result.output and count_tokens(result.output) <= 150
