"""Differential: the same calls on this backend and on a files root give the same observable results.

Ids differ (they are random), so results are compared with ids replaced by the content they name.
"""

from __future__ import annotations

import dataclasses
import difflib
import pprint
import re
from typing import Any

from _pg import make_target

from agent_memory.agents.profiles import load_profile

WRITES: list[dict[str, Any]] = [
    {"content": "The deploy window is Tuesday 14:00 UTC.", "title": "Deploy window", "kind": "decision", "tags": ["ops", "Deploy"]},
    {"content": "Ada prefers tea over coffee.", "scope": "user", "user_id": "ada", "kind": "preference", "importance": 0.8},
    {"content": "Draft agenda: budget, hiring, offsite.", "scope": "session", "session_id": "chat-1", "user_id": "ada"},
    {"content": "Bob's locker is number 47.", "scope": "user", "user_id": "bob", "tags": ["lockers"]},
    {"content": "Releases ship on the second Tuesday of each month.", "scope": "global", "expires": "2999-01-01"},
    {"content": "step one: freeze the branch", "memory_key": "release.plan", "tags": ["release"]},
    {"content": "step two: tag the build", "memory_key": "release.plan", "tags": ["build"]},
    {"content": "step two: tag the build", "memory_key": "release.plan"},
    {"content": "Ada's team is Falcon.", "scope": "user", "user_id": "ada", "memory_key": "team"},
    {"content": "Ada's team is Heron.", "scope": "user", "user_id": "ada", "memory_key": "team", "on_existing": "replace", "title": "Team"},
    {"content": "ignored", "scope": "user", "user_id": "ada", "memory_key": "team", "on_existing": "skip"},
    {"content": "The deploy window is Tuesday 14:00 UTC.", "tags": ["again"]},
    {"content": "the CI token is ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "tags": ["ci"]},
    {"content": "Meeting notes\nline two mentions kayaking\nline three mentions the river", "title": "Notes"},
]
CALLERS = [{}, {"user_id": "ada"}, {"session_id": "chat-1", "user_id": "ada"}, {"session_id": "chat-1"}, {"user_id": "bob"}]
QUERIES = [
    "When is the deploy window?",
    "tea or coffee",
    "release plan build",
    "kayaking river",
    "locker number",
    "Tuesday",
    "nothing matches zebra",
]
RECORD_FIELDS = (
    "content",
    "title",
    "kind",
    "scope",
    "session_id",
    "user_id",
    "tags",
    "memory_key",
    "source",
    "importance",
    "expires",
    "content_hash",
    "metadata",
)


def fields(rec: Any) -> list[Any]:
    """The record's fields; where a replaced version is kept is storage-specific (a file, an archive row), and
    provenance (times of writing; the files backend's event log) is not compared."""
    out = [getattr(rec, f) for f in RECORD_FIELDS]
    out[-1] = {k: ("<kept>" if k == "previous_version" and v else v) for k, v in rec.metadata.items() if k != "provenance"}
    return out


async def observe(provider: Any) -> list[Any]:
    out: list[Any] = []
    names: dict[str, str] = {}
    for w in WRITES:
        res = await provider.remember(**w)
        names.setdefault(res.id, f"<{len(names)}>")
        out.append(("remember", names[res.id], res.status, res.redactions))

    def n(text: str) -> str:
        for rid, name in names.items():
            text = text.replace(rid, name)
        text = re.sub(r"\d{4}-\d\d-\d\d-[a-z0-9-]+-[0-9a-f]{8}", "<other>", text)
        return re.sub(r":L\d+-L\d+\]", "]", text)  # file lines (files) or body lines (PostgreSQL): storage-specific

    for who in CALLERS:
        records = await provider.list(limit=None, **who)
        out.append(("list", who, [(names.get(r.id), *(fields(r))) for r in records]))
        out.append(("count", who, await provider.count(**who), await provider.count(tags=["release"], **who)))
        out.append(
            (
                "filtered",
                who,
                [names.get(r.id) for r in await provider.list(kind=["decision", "preference"], **who)],
                [names.get(r.id) for r in await provider.list(scope=["user", "global"], **who)],
            )
        )
        for q in QUERIES:
            hits = (await provider.search(q, limit=5, **who)).hits
            out.append(
                (
                    "search",
                    who,
                    q,
                    [(names.get(h.id), h.snippet, h.line_end - h.line_start, h.title, h.kind, h.scope, h.tags) for h in hits],
                )
            )
        full = await provider.inject(5000, **who)  # (token counts depend on the random ids: not compared)
        out.append(("inject-full", who, n(full.text), full.truncated))
        block = await provider.inject(60, **who)
        kept = [line for line in n(block.text).split("\n") if line.startswith("- [")]
        assert block.tokens <= 60 and kept == [line for line in n(full.text).split("\n") if line.startswith("- [")][: len(kept)]
        out.append(("inject", who, block.truncated))
        recall = await provider.recall("When is the deploy window and what is the release plan?", **who)
        out.append(("recall", who, n(recall.summary), [names.get(s["id"]) for s in recall.sources], recall.fallback))
    capture = await provider.capture_turn(
        "Remember that the staging server is called kestrel. I prefer short answers.", "Noted.", session_id="chat-1", user_id="ada"
    )
    out.append(("capture", [w["status"] for w in capture.written], capture.fallback))
    for rid in capture.ids:
        rec = await provider.get(rid, user_id="ada")
        out.append(("captured", *fields(rec)))
    gone = [k for k, v in names.items() if v == "<0>"][0]
    out.append(("forget", await provider.forget(gone, user_id="bob"), await provider.forget(gone), await provider.forget(gone)))
    out.append(("after", [names.get(r.id) for r in await provider.list(limit=None)]))
    return out


async def test_same_calls_same_results_as_the_files_backend(backend: Any, tmp_path: Any) -> None:
    profile = load_profile("offline")
    profile = dataclasses.replace(profile, recall=dataclasses.replace(profile.recall, model="offline"))
    reference = make_target("files", tmp_path)
    try:
        want = await observe(reference.provider(profile=profile))
        got = await observe(backend.provider(profile=profile))
    finally:
        await reference.close()
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g == w, "\n".join(difflib.unified_diff(pprint.pformat(w).splitlines(), pprint.pformat(g).splitlines(), lineterm=""))
