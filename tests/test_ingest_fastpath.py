"""The write path's fast paths (issue 32): what skips the redaction engine, and that what must reach it still does.

Counts engine passes (``find_spans`` calls), never time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_memory.backends.files.events import Event, GateMemo
from agent_memory.model import drafts
from agent_memory.model.records import new_id
from agent_memory.redaction import engine
from agent_memory.redaction.samples import SECRET_SAMPLES_BY_KIND


@pytest.fixture
def passes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The texts the engine was asked about."""
    seen: list[str] = []
    real = engine.find_spans

    def counting(text: str, **kw: bool) -> list[tuple[int, int, str]]:
        seen.append(text)
        return real(text, **kw)

    monkeypatch.setattr(engine, "find_spans", counting)
    yield seen


def test_plain_prose_skips_the_engine(passes: list[str]) -> None:
    assert engine.redact("We met on 2026-11-27 and agreed on the plan.").count == 0
    assert not engine.contains_secret("Caroline went to the support group")
    assert passes == []
    # and a text with a cue still goes to the engine
    token = SECRET_SAMPLES_BY_KIND["github_token"][0]
    assert engine.redact(f"the token is {token}").count == 1
    assert passes


def test_event_keeps_content_hashes_without_the_engine(passes: list[str]) -> None:
    ev = Event("created", "2026-11-27-plain-title-0a1b2c3d", actor="import", before="0123456789abcdef", after="fedcba9876543210")
    out = GateMemo().gate(ev).to_dict()
    assert out["before"] == "0123456789abcdef" and out["after"] == "fedcba9876543210"
    assert not any("0123456789abcdef" in t or "fedcba9876543210" in t for t in passes)


def test_event_field_of_another_shape_is_still_gated() -> None:
    secret = SECRET_SAMPLES_BY_KIND["github_token"][0]
    out = GateMemo().gate(Event("created", "r1", actor="import", after=secret)).to_dict()
    assert secret not in json.dumps(out)


def test_a_minted_id_is_still_checked_whole(passes: list[str]) -> None:
    """The record id keeps its full check: its date's digits count for the random-token detector (a lowercased AWS
    key id glued into a slug is found in the whole id, not in the slug alone), so it is not shortened."""
    rid = new_id("akia487hus5qrt22u5po", "2026-11-27T10:00:00Z")
    assert "akia487" not in rid  # new_id never mints an id its gate reads as a secret
    assert any(t.startswith("2026-11-27") for t in passes)
    forged = "2026-11-27-akia487hus5qrt22u5po-1a2b3c4d"  # an id of that shape from elsewhere (an import) is still gated
    assert drafts.prepare_event({"id": forged})["id"] != forged


def test_remember_many_events_hold_hashes_and_ids(tmp_path: Path) -> None:
    from agent_memory.backends.files.store import MemoryStore
    from agent_memory.model.drafts import MemoryDraft

    store = MemoryStore(tmp_path / "root", rescan_interval=None)
    store.open()
    res = store.remember_many([MemoryDraft(content=f"Plain fact number {i} about the garden.") for i in range(20)], source="import")
    assert all(r.status == "created" for r in res)
    lines = [json.loads(line) for p in sorted((tmp_path / "root" / "events").glob("*.jsonl")) for line in p.read_text().splitlines()]
    ids = {r.id for r in res}
    assert {ev["id"] for ev in lines if ev["event"] == "imported"} == ids
    assert all(len(ev["after"]) == 16 for ev in lines if ev["event"] == "imported")


def test_the_gate_passes_a_clean_event_as_it_is_and_still_refuses_or_reshapes_the_others() -> None:
    """A clean event is not rebuilt field by field (``Event.from_dict`` per record was a tenth of the writer's gate);
    an event with a field of the wrong type is still refused or reshaped as the gate does, and an old session event still read in today's shape."""
    from agent_memory.model.events import gated

    memo = GateMemo()
    clean = Event("created", "2026-11-27-plain-title-0a1b2c3d", actor="import", scope="project", after="0123456789abcdef")
    for _ in range(2):  # the second time from the memo
        out = memo.gate(clean)
        assert out is clean and out == gated(clean)
    with pytest.raises(ValueError, match="must be a string"):
        memo.gate(Event("created", "2026-11-27-plain-title-0a1b2c3d", actor=7))  # type: ignore[arg-type]
    listed = Event("created", "2026-11-27-plain-title-0a1b2c3d", detail=["x"])  # type: ignore[arg-type]
    assert memo.gate(listed) == gated(listed) and memo.gate(listed).detail == {"value": ["x"]}
    old = Event("summarized", "session:s1@team", owner_session="s1", scope="session")
    assert memo.gate(old).to_dict() == gated(old).to_dict()
    assert (memo.gate(old).id, memo.gate(old).owner_namespace) == ("session:s1", "team")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x2030), max_size=40))
def test_a_scalar_quoted_without_json_is_what_json_writes(value: str) -> None:
    """The renderer's shortcut for printable ASCII (ids, instants) writes exactly the JSON string it replaced."""
    from agent_memory.formats.yaml_writer import _UNSAFE, yaml_scalar

    slow = _UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", json.dumps(value, ensure_ascii=False, separators=(", ", ": ")))
    assert yaml_scalar(value) in (value, slow)  # plain when YAML reads it back as that string, else the JSON form


@pytest.mark.parametrize(
    "value",
    [
        "2026-11-28T09:00:00.123456Z",
        "2026-02-30T09:00:00.000000Z",
        "2026-11-28",
        "2026-11-28T10:00:00+01:00",
        "soon",
        "9999-12-31T23:59:59.999999Z",
    ],
)
def test_an_index_instant_is_stored_as_before(value: str) -> None:
    """An instant already in the stored form is kept without parsing; the others are still normalised (or kept when
    unreadable, as before)."""
    from agent_memory.backends.files.index_schema import _instant
    from agent_memory.model.values import normalize_instant

    assert _instant(value) == (normalize_instant(value) or value)
