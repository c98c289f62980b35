"""Search behaviour: natural-language queries, field weights, coordination, snippets, visibility."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_memory import Fts5Engine, MemoryDraft, MemoryStore
from agent_memory.search.text import STOP_WORDS, term_key, term_matcher


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    s = MemoryStore(tmp_path / "mem", durable=False)
    yield s
    s.close()


def ids(result) -> list[str]:
    return [h.id for h in result.hits]


def test_a_question_full_of_stop_words_finds_the_content(store):
    target = store.remember("Caroline went to the LGBTQ support group on Sunday.").id
    store.remember("Melanie painted a sunrise over the lake.")
    result = store.search("When did Caroline go to the LGBTQ support group?", trace=True)
    assert ids(result)[0] == target
    terms = result.trace[0]["terms"]
    assert "when" not in terms and "did" not in terms and "the" not in terms
    assert {"caroline", "lgbtq", "support", "group"} <= set(terms)


def test_a_query_of_only_stop_words_still_searches():
    engine = Fts5Engine()
    assert engine.terms("what is it?") == ["what", "is", "it"]
    assert all(t in STOP_WORDS for t in engine.terms("what is it?"))


def test_punctuation_is_stripped_and_digits_and_dates_are_kept(store):
    target = store.remember("Deploy window: 2023-05-08 at 5:30pm, build 4711.").id
    store.remember("Deploy checklist without any numbers at all, deploy deploy.")
    engine = Fts5Engine()
    assert engine.terms('"migration?" (v2.1), 8 May 2023!') == ["migration", "v2", "1", "8", "may", "2023"]
    assert ids(store.search("build 4711?"))[0] == target
    assert ids(store.search("What happens on 2023-05-08?"))[0] == target


def test_porter_stemming_matches_other_word_forms(store):
    target = store.remember("We were painting the fences all weekend.").id
    assert ids(store.search("who paints fence"))[0] == target


def test_nothing_is_returned_only_when_no_content_word_matches(store):
    store.remember("Pottery class on Tuesday evenings.")
    assert ids(store.search("quantum chromodynamics?")) == []
    assert len(store.search("What about the pottery, quantum?").hits) == 1


def test_quotes_and_fts_syntax_in_a_query_are_harmless(store):
    target = store.remember('She said "NEAR" and AND OR NOT are just words; col:umn too.').id
    for q in ['"NEAR"', "AND OR NOT", "col:umn", "a*b (c", 'x"y']:
        result = store.search(q)  # never an FTS5 syntax error
        assert isinstance(result.hits, list)
    assert ids(store.search("NEAR and NOT")) == [target]


def test_tags_are_ranking_hints_not_filters(store):
    plain = store.remember("Release notes mention the database migration twice: migration, migration.").id
    tagged = store.remember("Release notes mention the database migration.", tags=["db"]).id
    other = store.remember("Lunch menu for Friday.", tags=["db"]).id
    hits = ids(store.search("database migration", tags=["db"]))
    assert plain in hits and tagged in hits  # untagged matches are not filtered out
    assert hits.index(tagged) < hits.index(plain)  # the tag lifts the tagged record
    assert other in hits  # a tag match alone is enough to be a candidate
    assert ids(store.search("database migration"))[0] in (plain, tagged)


def test_title_outweighs_body(store):
    in_body = store.remember("A note that says kayak once, among many other unrelated words here.", title="Misc").id
    in_title = store.remember("Booked for the lake trip in June with friends and family.", title="Kayak rental").id
    assert ids(store.search("kayak"))[:2] == [in_title, in_body]


def test_coordination_prefers_records_holding_more_of_the_query(tmp_path):
    def top(coordination: float) -> list[str]:
        s = MemoryStore(tmp_path / f"c{coordination}", durable=False, engine=Fts5Engine(coordination=coordination))
        repeats = s.remember("Kayak, kayak, kayak: kayak kayak kayak kayak kayak.").id
        all_terms = s.remember("A lake trip by kayak with the whole family and some friends from work.").id
        for i in range(8):
            s.remember(f"Filler {i}: a lake trip and errands.")
        for i in range(12):
            s.remember(f"Other filler {i}: groceries.")
        got = ids(s.search("kayak lake trip"))[:2]
        s.close()
        return ["repeats" if g == repeats else "all_terms" if g == all_terms else g for g in got]

    assert top(0.0) == ["repeats", "all_terms"]  # plain BM25 lets one repeated word win
    assert top(1.0) == ["all_terms", "repeats"]


def test_neighbour_context_is_a_weaker_signal_than_the_body(store):
    own = store.remember("The marathon was on Sunday morning.").id
    near = store.remember("It went really well, thanks!", metadata={"context": "The marathon was on Sunday morning."}).id
    hits = ids(store.search("marathon Sunday"))
    assert hits == [own, near]


def test_snippet_line_range_points_at_the_matching_file_lines(store):
    content = "\n".join(
        [
            "Line one is an introduction.",
            "Line two talks about groceries.",
            "Line three: the migration to Postgres starts Monday.",
            "Line four: rollback plan for the migration.",
            "Line five is an unrelated closing remark.",
            "Line six says goodbye.",
        ]
    )
    res = store.remember(content, title="Notes")
    hit = store.search("postgres migration rollback").hits[0]
    assert hit.id == res.id
    file_lines = Path(hit.path).read_text(encoding="utf-8").split("\n")
    window = file_lines[hit.line_start - 1 : hit.line_end]
    assert window == content.split("\n")[2:4]
    assert hit.snippet == "\n".join(window)


def test_long_snippets_are_clipped_around_the_match(tmp_path):
    s = MemoryStore(tmp_path / "m", durable=False, snippet_chars=80)
    s.remember("filler " * 100 + "the needle is here " + "filler " * 100)
    hit = s.search("needle").hits[0]
    assert "needle" in hit.snippet and len(hit.snippet) <= 82
    assert hit.snippet.startswith("…") and hit.snippet.endswith("…")
    s.close()


@pytest.mark.parametrize("hidden", [50, 150])
def test_scope_filter_applies_before_the_limit(store, hidden):
    store.remember_many(
        [MemoryDraft(f"deploy deploy deploy checklist variant {i}", scope="session", session_id="other") for i in range(hidden)]
    )
    visible = store.remember("deploy checklist", scope="session", session_id="mine").id
    result = store.search("deploy checklist", session_id="mine", limit=1, trace=True)
    assert ids(result) == [visible]
    # the trace says nothing about the hidden matches: no count, no id, no score
    # (as a number of its own: a record id's random hex suffix may contain the digits)
    assert not re.search(rf"(?<![0-9a-z]){hidden}(?![0-9a-z])", str(result.trace)) and "other" not in str(result.trace)
    assert {r["id"] for t in result.trace for r in t.get("top", [])} == {visible}
    assert store.search("deploy checklist", session_id="nobody", limit=5).hits == []
    # the other session sees its own records and never the visible one of "mine"
    theirs = ids(store.search("deploy checklist", session_id="other", limit=hidden + 10))
    assert len(theirs) == hidden and visible not in theirs


def test_scopes_kinds_and_dates_narrow_the_search(store):
    fact = store.remember("Quarterly budget review is on Friday.", kind="fact").id
    decision = store.remember("Decided: the quarterly budget review moves to Monday.", kind="decision").id
    assert ids(store.search("quarterly budget", kind="decision")) == [decision]
    assert set(ids(store.search("quarterly budget", scope="project"))) == {fact, decision}
    assert ids(store.search("quarterly budget", created_after="2999-01-01")) == []


def test_limit_is_respected_with_a_large_candidate_pool(store):
    for i in range(30):
        store.remember(f"kayak trip note {i}")
    assert len(store.search("kayak trip", limit=7).hits) == 7
    assert len(store.search("kayak trip", limit=25).hits) == 25


def test_a_very_long_query_is_bounded():
    engine = Fts5Engine(max_terms=16)
    words = [f"word{i}" for i in range(500)]
    assert len(engine.terms(" ".join(words))) == 16


def test_term_keys_join_word_forms_and_the_matcher_finds_them():
    assert len({term_key(w) for w in ("race", "races", "raced", "racing")}) == 1
    assert term_key("stories") == term_key("story")
    found = term_matcher({term_key("paint"), term_key("sunrise"), term_key("walk")})
    assert found("She painted two Sunrises; walked home.") == {term_key("paint"), term_key("sunrise"), term_key("walk")}
    assert found("a walker, waltzes, paintbrush") == set()  # prefixes that are other words do not count


def test_search_sees_a_hand_edited_file(store):
    res = store.remember("The meeting is in room 101.")
    path = Path(res.path)
    path.write_text(path.read_text(encoding="utf-8").replace("room 101", "room 404"), encoding="utf-8")
    hit = store.search("meeting room").hits[0]
    assert "404" in hit.snippet


def test_common_terms_only_score_candidates_on_a_large_index(tmp_path):
    def build(engine: Fts5Engine) -> MemoryStore:
        s = MemoryStore(tmp_path / f"b{engine.candidate_budget}", durable=False, engine=engine)
        drafts = [MemoryDraft(f"common filler line {i}") for i in range(60)]
        drafts += [MemoryDraft(f"rare finding number {i}") for i in range(12)]
        drafts.append(MemoryDraft("rare common"))
        s.remember_many(drafts)
        return s

    engine = Fts5Engine(candidate_budget=50, pool=10)
    chosen: list = []
    select = engine.select_terms

    def recorded(dfs: Any, limit: Any) -> Any:
        chosen.append((dict(dfs), select(dfs, limit)))
        return chosen[-1][1]

    engine.select_terms = recorded  # type: ignore[method-assign]
    pruned = build(engine)
    result = pruned.search("rare common?", limit=2, trace=True)
    assert result.trace is not None
    assert chosen == [({"rare": 13, "common": 61}, ["rare"])]
    assert not any(t["stage"] == "candidates" for t in result.trace)  # index-wide counts never reach the caller
    assert result.hits[0].snippet == "rare common"  # the common word still scores the candidates
    exhaustive = build(Fts5Engine(candidate_budget=None, pool=10))
    assert [h.snippet for h in exhaustive.search("rare common?", limit=2).hits] == [h.snippet for h in result.hits]
    # too few rare matches to fill the limit: the common term selects candidates too
    assert len(pruned.search("rare common?", limit=20).hits) == 20
    pruned.close()
    exhaustive.close()


def test_small_indexes_are_never_pruned(store):
    store.remember_many([MemoryDraft(f"common filler line {i}") for i in range(30)] + [MemoryDraft("rare common")])
    calls: list = []
    store.engine.select_terms = lambda dfs, limit: calls.append(dfs)  # type: ignore[method-assign]
    assert len(store.search("rare common", limit=50).hits) == 31 and calls == []


def test_cjk_and_mixed_script_search_works_by_default(store):
    memo = store.remember("日本語のメモ: 会議は月曜日です").id
    tower = store.remember("Meeting at 東京タワー on Friday").id
    korean = store.remember("한국어를 배우고 있어요").id
    store.remember("An English note about meetings and Mondays.")
    assert ids(store.search("日本語")) == [memo]
    assert ids(store.search("メモ")) == [memo]  # the middle of a run, not only its start
    assert ids(store.search("会議")) == [memo]
    assert ids(store.search("東京")) == [tower]
    assert ids(store.search("タワー Friday"))[0] == tower
    assert ids(store.search("한국어")) == [korean]
    assert ids(store.search("中国語")) == []  # no shared bigram: nothing
    hit = store.search("会議").hits[0]
    assert "会議" in hit.snippet and hit.score == 1.0


def test_cjk_ranking_prefers_more_of_the_query(store):
    full = store.remember("東京都の天気予報").id
    part = store.remember("京都の紅葉").id
    assert ids(store.search("東京都")) == [full, part]  # both share 京都; only one holds 東京 too


def test_accents_still_fold_with_cjk_support(store):
    cafe = store.remember("Meet at the café near the station.").id
    plain = store.remember("The cafe on the corner closes early.").id
    assert set(ids(store.search("cafe"))) == {cafe, plain}
    assert set(ids(store.search("café"))) == {cafe, plain}
    assert Fts5Engine().terms("日本語のメモ café") == ["日本", "本語", "語の", "のメ", "メモ", "café"]
