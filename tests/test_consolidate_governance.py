"""Dream governance: the consolidation run history, the digest record, and drift from the recall log."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from _doubles import cli_json

from agent_memory import MemoryDraft, MemoryProvider, UnsupportedError
from agent_memory.consolidate.recalls import RecallLog

SOON = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).isoformat()
LATER = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)


async def _expiring(provider: MemoryProvider) -> dict[str, list[str]]:
    ids: dict[str, list[str]] = {}
    for user, word in (("alice", "zorblax"), ("bob", "quellim")):
        for i in range(3):
            r = await provider.remember(f"{word} temporary note {i}", user_id=user, scope="user", expires=SOON)
            ids.setdefault(user, []).append(r.id)
    for i in range(4):
        await provider.remember(f"Lasting project fact number {i * 17}.", scope="project")
    return ids


async def test_every_run_is_in_the_history_with_what_changed_and_why(tmp_path: Path) -> None:
    async with MemoryProvider(tmp_path / "mem") as provider:
        ids = await _expiring(provider)
        dry = await provider.consolidate(dry_run=True, max_share=1.0, now=LATER)
        applied = await provider.consolidate(max_share=0.2, now=LATER)  # 10 records: 2 may change, 4 are asked for
        assert len(applied.applied) == 2 and applied.stopped
        runs = await provider.consolidation_history(user_id="alice")
        assert [r["run"] for r in runs] == [applied.run_id, dry.run_id]  # newest first
        assert {c["id"] for c in runs[1]["changes"]} == set(ids["alice"]) and runs[1]["dry_run"]
        assert {c["status"] for c in runs[1]["changes"]} == {"planned"}
        statuses = {c["id"]: c["status"] for c in runs[0]["changes"]}
        assert set(statuses) == set(ids["alice"]) | (set(statuses) & set(ids["alice"]))  # alice sees only hers
        assert not set(statuses) & set(ids["bob"])
        assert "not_applied" in statuses.values() and runs[0]["stopped"] and "max_share" in runs[0]["stop_reason"]
        assert all("expired" in c["reason"] and c["rule"] == "ttl" for c in runs[0]["changes"])
        bobs = await provider.consolidation_history(user_id="bob")
        assert all(c["id"] in ids["bob"] for r in bobs for c in r["changes"])
        assert await provider.consolidation_history(user_id="alice", since=(LATER + dt.timedelta(days=1)).date().isoformat()) == []
        archived = [c.record_id for c in applied.applied]
        for rid in archived:  # what a run changed is restorable
            owner = "alice" if rid in ids["alice"] else "bob"
            assert (await provider.restore(rid, user_id=owner)).id == rid


async def test_the_digest_is_one_record_of_the_callers_changes(tmp_path: Path) -> None:
    async with MemoryProvider(tmp_path / "mem") as provider:
        assert await provider.consolidation_digest(user_id="alice") is None  # nothing happened yet
        ids = await _expiring(provider)
        await provider.consolidate(max_share=1.0, now=LATER)
        digest = await provider.consolidation_digest(user_id="alice")
        assert digest is not None and digest.status == "created"
        rec = await provider.get(digest.id, user_id="alice")
        assert rec.scope.value == "user" and rec.kind == "summary" and "digest" in rec.tags
        assert all(i in rec.content for i in ids["alice"]) and not any(i in rec.content for i in ids["bob"])
        assert "3 record(s) archived (3 ttl)" in rec.content
        assert all(r.id != digest.id for r in await provider.list(user_id="bob"))
        assert ("created", digest.id) in [(e.event, e.id) for e in await provider.events(user_id="alice")]
        project = await provider.consolidation_digest()  # project scope: no user's records in it
        assert project is None


async def test_drift_superseded_and_contradicting_records_still_recalled(tmp_path: Path) -> None:
    async with MemoryProvider(tmp_path / "mem", track_recalls=True) as provider:
        old = await provider.remember("The staging region is eu-west-1.", user_id="alice", scope="user")
        assert [h.id for h in (await provider.search("staging region", user_id="alice")).hits] == [old.id]
        new = await provider.supersede(old.id, MemoryDraft("The staging region is us-east-1.", scope="user", user_id="alice"))
        report = await provider.consolidate(dry_run=True)
        assert report.drift == []  # recalled only before it was superseded
        RecallLog(provider.root).note([old.id])  # another process keeps handing out the old statement
        a = await provider.remember("Deploy day is Monday.", scope="project")
        b = await provider.remember("Deploy day is Friday.", scope="project")
        RecallLog(provider.root).note([a.id, b.id])
        report = await provider.consolidate(dry_run=True)
        kinds = {d["kind"]: d["record_ids"] for d in report.drift}
        assert kinds["superseded_recalled"] == [old.id, new.id]
        assert sorted(kinds["contradiction_recalled"]) == sorted([a.id, b.id])
        [latest, *_] = await provider.consolidation_history(user_id="bob")
        assert [d["kind"] for d in latest["drift"]] == ["contradiction_recalled"]  # alice's drift is hers
        await provider.purge(user_id="alice")
        text = (Path(provider.root) / "consolidation.log").read_text()
        assert old.id not in text and "alice" not in text


async def test_postgres_says_consolidation_history_is_unsupported(backend: Any) -> None:
    provider = backend.provider()
    if backend.kind == "files":
        assert await provider.consolidation_history() == []
        return
    with pytest.raises(UnsupportedError):
        await provider.consolidation_history()


async def test_cli_history_and_digest(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    async with MemoryProvider(root) as provider:
        ids = await _expiring(provider)
        await provider.consolidate(max_share=1.0, now=LATER)
    runs = cli_json(root, "consolidate", "--history", "--user", "alice")["runs"]
    assert len(runs) == 1 and {c["id"] for c in runs[0]["changes"]} == set(ids["alice"])
    assert all("user_id" not in c for c in runs[0]["changes"])
    digest = cli_json(root, "consolidate", "--digest", "--user", "bob")["digest"]
    shown = cli_json(root, "get", digest["id"], "--user", "bob")
    assert all(i in shown["content"] for i in ids["bob"]) and shown["scope"] == "user"
    assert cli_json(root, "consolidate", "--history", "--since", "2999-01-01")["runs"] == []


async def test_a_worker_run_is_in_its_callers_history_only(tmp_path: Path) -> None:
    async with MemoryProvider(tmp_path / "mem") as provider:
        ids = await _expiring(provider)
        report = await provider.consolidate(worker=True, user_id="alice", max_share=1.0, now=LATER)
        assert not report.fallback and report.run_id and report.applied
        [worker_run, plan] = await provider.consolidation_history(user_id="alice")
        assert worker_run["run"] == report.run_id and worker_run["worker"] and plan["dry_run"]
        assert {c["id"] for c in worker_run["changes"] if c["status"] == "applied"} <= set(ids["alice"])
        assert all(r["changes"] == [] for r in await provider.consolidation_history(user_id="bob"))
