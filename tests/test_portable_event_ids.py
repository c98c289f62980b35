"""A full export's event about a record whose id has a secret-like slug word before our random suffix imports.

``new_id`` ends a slug with 8 random hex digits; after a word such as ``token`` (a record about a redacted GitHub
token: ``…-redacted-github-token-d017ea26``) the whole id read as a secret to the import's event check, and the
event line was refused as ``invalid`` (``tests/test_export_root.py`` failed about one run in four).
"""

from __future__ import annotations

import json
from pathlib import Path

from agent_memory.backends.files.store import MemoryStore
from agent_memory.portable import import_file

RID = "2026-11-27-bob-keeps-the-key-redacted-github-token-d017ea26"


def _export(path: Path, event_id: str) -> Path:
    head = {"format": "agent-memory", "version": 2, "sections": ["records", "events"]}
    ev = {"eid": "0123abcd4567ef89", "event": "created", "id": event_id, "ts": "2026-11-27T10:00:00.000000Z", "scope": "user"}
    path.write_text(json.dumps(head) + "\n" + json.dumps({"section": "event", "event": ev}) + "\n", encoding="utf-8")
    return path


def test_an_event_about_our_own_id_imports(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "mem", durable=False)
    report = import_file(store, _export(tmp_path / "x.jsonl", RID))
    assert report.written == ["event:0123abcd4567ef89"], report.to_dict()["skips"]
    assert [e.id for e in store.events.read()[0]] == [RID]


def test_a_real_token_in_an_event_id_is_still_refused(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "mem", durable=False)
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    report = import_file(store, _export(tmp_path / "x.jsonl", f"2026-11-27-note-{token}"))
    assert report.written == [] and [s.reason for s in report.skipped] == ["invalid"]
    assert token not in json.dumps(report.to_dict())
