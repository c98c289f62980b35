"""The write gate redacts an export line once, not twice (the export-format import into a non-files backend), and a
metadata value once per rule, not once more for nothing; every secret is still redacted."""

from __future__ import annotations

from typing import Any

import pytest

import agent_memory.redaction.api as redaction_api
from agent_memory.model.drafts import MemoryDraft, clean_metadata, passed_gate, prepare_draft, prepare_record
from agent_memory.portable._write import draft_of

SECRET = "sk-abcdefghijklmnopqrstuvwxyz1234567890"
PASSWORD = "Tr0ub4dor-zebra-9931"  # only a secret by the name of its key


@pytest.fixture
def redacted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the redaction engine is asked about, in order."""
    seen: list[str] = []
    real = redaction_api.redact

    def spy(text: str) -> Any:
        seen.append(text)
        return real(text)

    monkeypatch.setattr(redaction_api, "redact", spy)
    return seen


def _line() -> dict[str, Any]:
    return {
        "id": "2026-11-28-ferry-1a2b3c4d",
        "content": f"the ferry leaves at nine; deploy key {SECRET}",
        "title": "Ferry time",
        "scope": "project",
        "source": "manual",
        "created": "2026-11-28T08:00:00Z",
        "updated": "2026-11-28T09:00:00Z",
        "metadata": {
            "provenance": {
                "created": {"at": "2026-11-28T08:00:00Z", "actor": "tool", "session_id": "s1"},
                "updated": {"at": "2026-11-28T09:00:00Z", "actor": "cli"},
            },
            "db_password": PASSWORD,
            "note": f"use {SECRET}",
        },
    }


def test_a_metadata_string_value_is_not_redacted_a_third_time_for_nothing(redacted: list[str]) -> None:
    out = clean_metadata({"note": "plain words", "db_password": PASSWORD, "k": f"use {SECRET}"})
    assert out["db_password"] != PASSWORD and SECRET not in out["k"] and out["note"] == "plain words"
    # per plain value: its key, the key=value pair, the value alone (the old code asked about the value once more
    # only to check its Unicode, and threw the answer away)
    assert redacted.count("plain words") == 1
    assert len(redacted) == 7  # note: 3; db_password and k: key + pair (the pair redacts the value)


def test_an_export_line_handed_to_a_backend_is_redacted_once(redacted: list[str]) -> None:
    rec, count, _ = prepare_record(_line())
    assert SECRET not in rec.content and SECRET not in str(rec.metadata) and PASSWORD not in str(rec.metadata)
    first = list(redacted)
    redacted.clear()
    draft = draft_of(rec)  # what portable/_write.py hands remember_many: the record plus three imported_* fields
    with passed_gate([rec]):
        again, again_count = prepare_draft(draft, "import")
    within = list(redacted)
    redacted.clear()
    plain, _ = prepare_draft(draft, "import")  # the same draft outside the block: the full second pass
    assert within and len(within) < len(redacted) // 2, (within, len(redacted))
    gated = {rec.content, rec.title, "provenance", "2026-11-28T08:00:00Z", "tool", "s1", "note", "db_password"}
    assert not gated & set(within)  # nothing the gate already produced is asked about again
    assert {"imported_id", "imported_owner_id", "imported_created"} <= set(within)  # what the draft adds still is
    assert again_count == 0 and count >= 3 and len(first) > len(within)
    for field in ("content", "title", "metadata", "tags", "scope", "kind", "content_hash"):
        assert getattr(again, field) == getattr(plain, field)


def test_within_the_block_anything_new_is_still_redacted() -> None:
    rec, _, _ = prepare_record(_line())
    # a value the gate passed under one key is a secret under a secret-named one; new text is new text
    draft = MemoryDraft(
        f"another text with {SECRET}",
        title=f"title {SECRET}",
        metadata={"api_password": "tool", "note": f"use {SECRET} again", "free": f"{SECRET}"},
    )
    with passed_gate([rec]):
        out, count = prepare_draft(draft, "import")
    assert SECRET not in out.content and SECRET not in out.title and SECRET not in str(out.metadata)
    assert out.metadata["api_password"] != "tool"  # the pair (api_password, tool) never passed the gate
    assert count >= 4
    outside, _ = prepare_draft(MemoryDraft(rec.content), "import")  # the block ends with its `with`
    assert outside.content == rec.content
