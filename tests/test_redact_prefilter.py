"""The redaction prefilter is exactly safe: whenever the full engine finds a span, the prefilter did not skip.

``prefilter.plain`` lets ``redact``/``contains_secret`` skip the engine. These tests run the engine itself
(``find_spans``, which never consults the prefilter) over every corpus under ``tests/fixtures/secrets*/`` (secrets
and benign), the capture corpus, every string literal of the engine's own tests, derived forms of all of them that
look like plain prose (the shape the prefilter accepts), and random mixes; a text the prefilter calls plain must get
no span. A rule added to the engine that the prefilter does not know fails here as soon as a corpus holds an example
of it.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_memory.model.values import slugify
from agent_memory.redaction import engine, generic, prefilter
from agent_memory.redaction.bip39 import WORDS
from agent_memory.redaction.samples import SECRET_SAMPLES

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"


def plain(text: str) -> bool:
    return prefilter.plain(text, engine._PROSE_TRIGGERS, engine._SPACED_CHARS)


def _corpus_texts() -> Iterator[str]:
    for path in sorted(FIXTURES.glob("secrets*/*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                yield json.loads(line)["text"]
    capture = json.loads((FIXTURES / "capture_corpus.json").read_text(encoding="utf-8"))
    for key in ("hits", "misses"):
        for case in capture.get(key, []):
            yield case["text"]
    yield from SECRET_SAMPLES


def _test_literals() -> Iterator[str]:
    """Every string literal of the engine's own tests (their inputs, among other things)."""
    for path in sorted(TESTS.glob("test_redact*.py")):
        if path.name == Path(__file__).name:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip():
                yield node.value


_NOT_PLAIN_CHARS = re.compile(r"[^A-Za-z0-9 \n.,;!?'\"()-]+")


def _derived(text: str) -> Iterator[str]:
    """Forms of ``text`` that the prefilter's shape may accept: symbols turned to spaces, each line alone, the
    words split from the digits they were glued to, and the letters alone. They keep the text's label words and
    numbers, so they probe the cue checks rather than the shape."""
    spaced = re.sub(r" {2,}", " ", _NOT_PLAIN_CHARS.sub(" ", text)).strip()
    yield spaced
    yield from (line.strip() for line in spaced.split("\n") if line.strip())
    yield re.sub(r"(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])", " ", spaced)
    yield re.sub(r"\d+", " ", spaced)
    yield spaced.lower()
    yield spaced.replace(" ", "\n")
    # what the id check asks about a record id minted from the text (its date, the slug, spaced at separators)
    slug = slugify(text)
    yield f"2026-11-27-{slug}"
    yield re.sub(r"[-.:@/+=~]+", " ", f"2026-11-27-{slug}")
    yield from (slug[m.end() :] for m in re.finditer(r"-", slug) if len(slug) - m.end() >= 16)


@cache
def _all_texts() -> tuple[str, ...]:
    base = list(dict.fromkeys([*_corpus_texts(), *_test_literals()]))
    derived = [d for t in base for d in _derived(t)]
    return tuple(dict.fromkeys(base + derived))


def test_corpora_are_there() -> None:
    corpora = sorted(p.parent.name for p in FIXTURES.glob("secrets*/secrets.jsonl"))
    assert len(corpora) >= 8 and "secrets" in corpora
    assert len(_all_texts()) > 10_000


def test_no_text_with_a_span_is_plain() -> None:
    """Over every corpus, test literal and derived form: the engine (forced, never consulting the prefilter) finds
    nothing in any text the prefilter calls plain."""
    unsafe = [t for t in _all_texts() if plain(t) and engine.find_spans(t)]
    assert unsafe == [], f"{len(unsafe)} texts the prefilter would skip hold a secret, e.g. {unsafe[:5]!r}"


def test_the_prefilter_skips_plain_prose_and_the_corpora_probe_it() -> None:
    """Not vacuous: many derived texts reach the cue checks (plain shape) and a good part of them are plain."""
    texts = _all_texts()
    shaped = [t for t in texts if t.isascii() and prefilter._SHAPE.fullmatch(t)]
    skipped = [t for t in shaped if plain(t)]
    assert len(shaped) > 2_000
    assert len(skipped) > 500
    # and among the shaped texts, the engine finds secrets in some: the cue checks are what stops them
    assert any(engine.find_spans(t) for t in shaped if not plain(t))


@pytest.mark.parametrize(
    "text",
    [
        "exp 04/29, CVC 905",
        "my pin is 4471",
        "the door code is 2468",
        "password hunter2",
        "call me at 4111 1111 1111 1111",
        "abandon ability able about above absent absorb abstract absurd abuse access accident",
        "What is the alarm code?\n4471",
        "g h p a b c d e f g h i j k l m n o p q",
        "Kennwort Sommer2024",
    ],
)
def test_texts_that_may_hold_a_secret_are_not_plain(text: str) -> None:
    assert not plain(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "The team met on 2026-11-27 at 10:30 and agreed on the plan.",
        "Caroline went to the support group yesterday!",
        "I'm allergic to shellfish.",
        "Majufu kijagogi wajuruna",
    ],
)
def test_plain_prose_is_plain(text: str) -> None:
    assert plain(text)
    assert engine.find_spans(text) == []


def test_redact_and_contains_secret_agree_with_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end: with the prefilter on, redact() and contains_secret() answer as the engine alone does.

    ``find_spans`` is a pure function of its arguments, so each (text, options) is asked of it once and its answer
    reused by both passes (the wrappers, the prefilter and the redact-to-a-fixed-point loop still run in each): the
    same assertion at a third of the engine runs."""
    spans: dict[tuple[str, bool, bool], list[engine.Span]] = {}
    find_spans = engine.find_spans

    def once(text: str, *, gated: bool = True, general: bool = True) -> list[engine.Span]:
        key = (text, gated, general)
        if key not in spans:
            spans[key] = find_spans(text, gated=gated, general=general)
        return list(spans[key])

    monkeypatch.setattr(engine, "find_spans", once)
    texts = _all_texts()[::7]
    on = [(engine.redact(t), engine.contains_secret(t)) for t in texts]
    monkeypatch.setenv("AGENT_MEMORY_REDACT_PREFILTER", "0")
    off = [(engine.redact(t), engine.contains_secret(t)) for t in texts]
    assert on == off


def test_every_engine_cue_is_a_cue() -> None:
    """The cues are the engine's own constants: a trigger added to a rule is one here."""
    plain("warm up")
    cues = prefilter._cues
    assert cues is not None
    for trigger in engine._PROSE_TRIGGERS:
        assert cues.substrings.search(trigger)
    for _, _, triggers in engine.structured.SHAPE_RULES + engine.structured.LATE_RULES + engine.keyvalue.RULES:
        for t in triggers:
            assert cues.substrings.search(t.lower()), t
    for _, triggers, _ in engine.PROVIDERS:
        for t in triggers:
            assert cues.providers.search(t), t


_WORDS = sorted(WORDS)[:300] + "the a and of to my your is was at on in code pin door safe key id no card number".split()
_LABELS = sorted(set(re.findall(r"[a-z]{2,}", (generic._PASSWORD_WORDS + generic._KEY_WORDS + generic._ID_WORDS).lower())))
_token = st.one_of(
    st.sampled_from(_WORDS),
    st.sampled_from(_LABELS),
    st.integers(0, 10**12).map(str),
    st.sampled_from(["2026-11-27", "10:30", "3.5", "1,000", "04/29", "Q", "A", "I", "OK"]),
    st.text(st.characters(codec="ascii", categories=["Lu", "Ll", "Nd"]), min_size=1, max_size=20),
    st.text(min_size=1, max_size=6),
    st.sampled_from(SECRET_SAMPLES),
)
_sep = st.sampled_from([" ", " ", " ", "\n", ", ", ". ", "? ", "! ", ": ", " - ", "'", '"'])


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_token, _sep), min_size=1, max_size=30))
def test_random_mixes(parts: list[tuple[str, str]]) -> None:
    text = "".join(t + s for t, s in parts).strip()
    if plain(text):
        assert engine.find_spans(text) == []


# --- the refined gates (issue 32): a word that opens one cheap rule of ``cues`` ("?", "with", "two", "back" …) is
# no cue by itself; the rule's own first step is asked instead. Each text below holds what that rule redacts, in a
# shape the prefilter accepts: if the check standing for the gate were wrong, the text would be called plain.
_GATED_SECRETS = [
    # the security-question rule opened by a "?" and "you" (no gate word of its own): every answer form it reads
    "What street did you grow up on? It is Maple.",
    "What street did you grow up on? It is Maple Avenue",
    "Which school did you first attend? I used Lincoln.",
    "Which school did you first attend? I put Lincoln High.",
    "Who was your best friend in school? I wrote Jenny.",
    "What was your first car? I chose Beetle!",
    "Where did you go on your honeymoon? Answer is Bali.",
    "which street did you grow up on? I used 'Maple'",
    'which street did you grow up on? I used "Maple Row"',
    "Where did you first meet your husband? It is Lisbon.",
    "What was your childhood nickname? It is Bubbles.",
    # and opened by its own gate words
    "Where were you born? It is Porto.",
    "What was the name of your first pet? It is Rex.",
    "What is your favorite food? It is pizza",
    "Security question? It is Rex.",
    "Memorable word? It is Lantern.",
    # the split rule ("with", "half", "part", "rest is")
    "first half 4471, second half 9923",
    "It starts with 4471 and ends with 9923",
    # the OTP rule ("two", "2fa", "setup key" …)
    "two factor uvsx hdld ikms ujwh mwdb vszo",
    "the two factor is uvsx hdld ikms ujwh mwdb vszo",
    # the same-as-always rule ("same", "usual", "old one")
    "same as always, Summer-Rain",
    "the usual, Rex-Max-Ole",
    # general's chat rules ("mdp", "adgangskode", "lozinka" …)
    "mon mdp est Summer-Rain",
    "le mdp est Rex-Max-Ole",
    "adgangskode Summer-Rain",
    "lozinka je Summer-Rain",
]


@pytest.mark.parametrize("text", _GATED_SECRETS)
def test_a_refined_gate_still_sends_its_secret_to_the_engine(text: str) -> None:
    assert engine.find_spans(text), "not a probe: the engine finds nothing here"
    assert prefilter._SHAPE.fullmatch(text), "not a probe: the shape alone refuses it"
    assert not plain(text)


@pytest.mark.parametrize(
    "text",
    [
        "What did we decide about the plan?",
        "Do you remember the first trip?",
        "Where did you first meet? In school.",
        "Any notes on the budget and the plan with Ana?",
        "We went back to the same place with two friends.",
        "Part of the team split the work in half.",
    ],
)
def test_a_refined_gate_word_alone_is_plain(text: str) -> None:
    """What the refinement is for: "?", "with", "two", "same", "back", "part" in prose no longer send it to the engine."""
    assert plain(text)
    assert engine.find_spans(text) == []


def test_the_refined_gates_are_the_rules_own() -> None:
    """Every refined gate is a gate tuple of ``cues`` (imported, never copied), "?" is no substring cue any more, and
    a word another rule also reads stays a cue."""
    from agent_memory.redaction import cues as cue_rules

    gates = {id(v) for k, v in vars(cue_rules).items() if k.endswith("_GATE")}
    refined = prefilter._refined()
    assert all(id(gate) in gates for gate, _ in refined[1:7])
    assert set(refined[0][0]) == {*cue_rules.SECQ_GATE, "?"}
    dropped = prefilter._dropped(engine._PROSE_TRIGGERS)
    assert {"?", "with", "two", "same", "back"} <= dropped
    substrings = prefilter._substring_cues(engine._PROSE_TRIGGERS)
    assert not dropped & set(substrings)
    assert "secret" in substrings and "code" in substrings  # read by other rules too


_QWORDS = ["what", "which", "where", "who", "What", "Which", "Where", "Who", "when", "how"]
_QPARTS = [
    "you", "your", "did you", "were you", "grow up", "grew up", "born", "first", "childhood", "maiden", "pet", "school",
    "street", "teacher", "best friend", "honeymoon", "met your", "favorite", "favourite", "food", "book", "memorable",
    "security", "question", "secret", "name", "of", "the", "in", "on", "with", "two", "factor", "same", "as", "always",
    "usual", "back", "half", "part", "second", "starts", "ends", "rest is", "setup key", "seed", "card", "and",
]  # fmt: skip
_ANSWERS = ["It is", "is", "I used", "I put", "I wrote", "I chose", "Answer is", "A", "", "it was", "Its"]
_VALUES = ["Maple", "Rex", "Lincoln High", "Porto", "'Maple'", '"Maple Row"', "4471", "9923", "ab23 cdef ghij klmn", "pizza", "x"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(_QWORDS),
            st.lists(st.sampled_from(_QPARTS), min_size=0, max_size=6),
            st.sampled_from(["?", "? ", "?\n", ".", " "]),
            st.sampled_from(_ANSWERS),
            st.sampled_from(_VALUES),
            st.sampled_from([".", "!", "", ",", "\n"]),
        ),
        min_size=1,
        max_size=3,
    )
)
def test_question_and_gate_mixes(parts: list[tuple[str, list[str], str, str, str, str]]) -> None:
    """Questions, gate words, answers and values mixed: what the prefilter calls plain holds nothing the engine finds."""
    text = " ".join(f"{q} {' '.join(mid)}{mark} {ans} {val}{end}" for q, mid, mark, ans, val, end in parts).strip()
    text = re.sub(r" {2,}", " ", text)
    if plain(text):
        assert engine.find_spans(text) == [], text
