"""The plain-stem acceptor (issue 32): a minted id's stem of plain words skips the identifier check's engine passes,
and it never accepts a stem the full check refuses.

Counts engine passes (``find_spans`` calls), never time."""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_memory.model import values
from agent_memory.model.values import id_stem, new_id
from agent_memory.redaction import engine, ids, prefilter
from agent_memory.redaction.providers import PROVIDERS
from agent_memory.redaction.samples import SECRET_SAMPLES
from agent_memory.redaction.slugs import plain_slug

DAY = "2026-11-27T10:00:00Z"
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def passes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    seen: list[str] = []
    real = engine.find_spans

    def counting(text: str, **kw: bool) -> list[tuple[int, int, str]]:
        seen.append(text)
        return real(text, **kw)

    monkeypatch.setattr(engine, "find_spans", counting)
    ids._VERDICTS.clear()
    yield seen


def full_check(stem: str) -> bool:
    """The identifier check without the acceptor (what every stem got before it)."""
    from agent_memory.redaction.api import contains_secret

    if values.looks_secret(stem):
        return True
    return any(contains_secret(stem[m.end() :]) for m in ids._GLUE.finditer(stem) if len(stem) - m.end() >= 16)


def test_an_ordinary_title_mints_its_id_without_the_engine(passes: list[str]) -> None:
    rid = new_id("Lisbon trip in June and the museum plans", DAY)
    assert rid.startswith("2026-11-27-lisbon-trip-in-june-and-the-museum-plans-")
    assert passes == []
    assert not full_check(rid[:-9])


@pytest.mark.parametrize(
    ("title", "why"),
    [
        ("Token bucket 10 refill policy for the api", "a label read across the slug's hyphens"),
        ("akia487hus5qrt22u5po", "a lowercased AWS key id the date's digits complete"),
        ("Token bucket refill policy for the api gateway", "a cue word"),
        ("the private key of the box", "a cue that holds a hyphen"),
        ("task list for the new house plan", "a provider trigger (sk-)"),
    ],
)
def test_what_the_engine_may_read_goes_to_the_full_check(title: str, why: str) -> None:
    assert not plain_slug(id_stem(title, DAY)), why


def test_a_refined_gate_word_in_a_slug_is_accepted_when_its_rule_finds_nothing(passes: list[str]) -> None:
    """Words of the refined gates ("with", "api", "two", "same") in a title no longer send its id to the full check
    (issue 32) ..."""
    for title in ("Dinner with Ana and the two kids", "Notes on the capital of Peru", "Same place as last year"):
        stem = id_stem(title, DAY)
        assert plain_slug(stem), stem
        assert not full_check(stem)
    # ... while a refined rule that may read the stem sends it there ("two-factor": the OTP rule's own cue)
    assert not plain_slug(id_stem("two factor setup for the laptop", DAY))


def test_outside_the_shape_is_never_accepted() -> None:
    for stem in ("2026-11-27-notes-a1b2", "2026-11-27-notes-xkcd", "notes-for-the-day", "2026-11-27-averyveryverylongword", "2026-11-27"):
        assert not plain_slug(stem), stem


def test_the_acceptor_is_off_with_the_prefilter(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_memory.redaction import prefilter, slugs

    stem = id_stem("Lisbon trip in June", DAY)
    assert plain_slug(stem)
    monkeypatch.setenv("AGENT_MEMORY_REDACT_PREFILTER", "0")
    assert not plain_slug(stem)
    # first used while the prefilter is off (its cues not built yet): on again once it is
    monkeypatch.setattr(prefilter, "_cues", None)
    slugs._checks.cache_clear()
    assert not plain_slug(stem)
    monkeypatch.delenv("AGENT_MEMORY_REDACT_PREFILTER")
    assert plain_slug(stem)
    slugs._checks.cache_clear()


def _texts() -> list[str]:
    texts = list(SECRET_SAMPLES)
    for path in sorted(FIXTURES.glob("secrets*/*.json")) + [FIXTURES / "capture_corpus.json"]:
        if not path.is_file():
            continue
        found: list[str] = []

        def walk(node: object, found: list[str] = found) -> None:
            if isinstance(node, str):
                found.append(node)
            elif isinstance(node, dict):
                for v in node.values():
                    walk(v)
            elif isinstance(node, list):
                for v in node:
                    walk(v)

        walk(json.loads(path.read_text()))
        texts.extend(found)
    return texts


def test_secret_corpora_cut_to_slugs_are_never_accepted_when_refused() -> None:
    """Every secret sample and corpus text, as a title, at the front and behind a word: the stems the full check
    refuses are refused by the acceptor (and it still accepts most plain ones)."""
    checked = refused = 0
    for text in _texts():
        for title in (text, f"notes {text}", f"plan for {text[-40:]}"):
            stem = id_stem(title, DAY)
            if plain_slug(stem):
                checked += 1
                assert not full_check(stem), (title, stem)
            refused += 1
    assert checked > 50 and refused > 500


_PIECES = sorted(
    {t.lower() for _, ts, _ in PROVIDERS for t in ts}
    | {"token", "key", "secret", "pass", "password", "pin", "code", "api", "private", "begin", "rsa", "auth", "bearer", "id", "no"}
    # the refined gates' words (no cue alone: their rules' checks are asked of the stem, its suffixes and spaced form)
    | {w for w in prefilter._dropped(engine._PROSE_TRIGGERS) if w.isascii() and w.replace(" ", "").isalpha()}
    | {"starts", "ends", "first", "second", "half", "as", "always", "usual", "factor", "setup", "is", "key", "log", "in"}
)
_SAMPLE_WORDS = sorted({w for s in SECRET_SAMPLES for w in re.split(r"[^a-z0-9]+", s.lower()) if w})
_letters = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=14)
_word = st.one_of(
    _letters,
    st.sampled_from(_PIECES),
    st.sampled_from(_SAMPLE_WORDS),
    st.sampled_from(["lisbon", "trip", "june", "plan", "notes", "for", "the", "refill", "policy", "bucket", "meeting", "alpha"]),
    st.text(alphabet="abcdef0123456789", min_size=1, max_size=12),
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_word, min_size=1, max_size=8), st.dates())
def test_the_acceptor_never_accepts_what_the_full_check_refuses(words: list[str], day: object) -> None:
    stem = id_stem(" ".join(words), f"{day}T00:00:00Z")
    if plain_slug(stem):
        assert not full_check(stem), stem
