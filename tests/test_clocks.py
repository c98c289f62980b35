"""Two clocks: when a record was written (recorded_at), when what it says happened (happened_at) and when it held
(valid_from/valid_to) — in files, drafts, the index, capture (dated transcripts), and everything that shows a hit."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from _doubles import plain_tools
from _pg import pg_url  # noqa: F401  (pytest fixture)
from pydantic_ai.messages import ModelRequest, UserPromptPart

from agent_memory.agents.core_block import inject
from agent_memory.agents.models.statements import extract_statements
from agent_memory.agents.profiles import load_profile
from agent_memory.agents.tools import READ, memory_toolset
from agent_memory.agents.workers.capture import CaptureResult, capture_before_compaction, capture_turn, rule_extractor
from agent_memory.backends.base import Caller
from agent_memory.backends.files.backend import FilesBackend
from agent_memory.backends.files.store import MemoryStore
from agent_memory.cli import main
from agent_memory.errors import InvalidInputError
from agent_memory.model.drafts import MemoryDraft, prepare_draft
from agent_memory.model.records import MemoryRecord, RecordParseError, parse_record

ADA = Caller(user_id="ada")
SAID = dt.datetime(2023, 5, 8, 13, 56)
YESTERDAY = "Remember that I went to a support group yesterday."


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    return MemoryStore(tmp_path / "mem", durable=False)


# -- the file format --------------------------------------------------------------------------------
def test_clock_fields_round_trip_through_the_file() -> None:
    rec = MemoryRecord(
        id="2023-05-08-gym-1a2b3c4d",
        content="Ada joined a gym.",
        created="2023-05-08T14:00:00.000000Z",
        happened_at="2023-05-07",
        valid_from="2023-05-07",
        valid_to="2024-01-01T00:00:00.000000Z",
        superseded_by="2024-01-01-gym-9f9f9f9f",
        supersedes="2022-01-01-gym-00000000",
    )
    back = parse_record(rec.render(), rec.id)
    for name in ("happened_at", "valid_from", "valid_to", "superseded_by", "supersedes", "created"):
        assert getattr(back, name) == getattr(rec, name), name
    assert back.recorded_at == "2023-05-08T14:00:00.000000Z" and back.to_dict()["recorded_at"] == back.created


def test_old_files_stay_readable_and_recorded_at_is_created() -> None:
    old = parse_record("---\nid: a\ncreated: 2026-01-02T03:04:05Z\n---\nplain old record\n", "a")
    assert (old.happened_at, old.valid_from, old.valid_to, old.superseded_by) == (None, None, None, None)
    assert old.recorded_at == "2026-01-02T03:04:05Z"
    alias = parse_record("---\nrecordedAt: 2025-02-03\nhappenedAt: 2025-02-01\n---\nfrom another provider\n", "b")
    assert (alias.created, alias.happened_at) == ("2025-02-03", "2025-02-01")


@pytest.mark.parametrize(
    "front, reason",
    [
        ("happened_at: yesterday", "happened_at is not an ISO date"),
        ("valid_from: 2024-05-01\nvalid_to: 2024-01-01", "valid_to is earlier than valid_from"),
        ("superseded_by: ../../etc/passwd", "superseded_by is not a record id"),
        ("supersedes: r1", "supersedes names the record itself"),
        ("valid_to: [2024, 1]", "valid_to must be text"),
    ],
)
def test_a_bad_clock_value_quarantines_the_file(store: MemoryStore, front: str, reason: str) -> None:
    text = f"---\nid: r1\n{front}\n---\nbody of a broken record\n"
    with pytest.raises(RecordParseError, match=reason):
        parse_record(text, "r1")
    good = store.remember("a readable record")
    (store.records_dir / "r1.md").write_text(text, encoding="utf-8")
    store.index.refresh(force=True)
    assert [r.id for r in store.list(include_superseded=True)] == [good.id]
    assert "r1.md" in json.dumps(store.doctor().to_dict())


# -- drafts -------------------------------------------------------------------------------------------
def test_drafts_keep_days_normalise_instants_and_refuse_nonsense() -> None:
    rec, _ = prepare_draft(
        MemoryDraft(
            "x happened",
            happened_at="2023-05-07",
            valid_from="2023-05-07T10:00:00+02:00",
            valid_to=dt.date(2023, 6, 1),  # type: ignore[arg-type]
        ),
        "tool",
    )
    assert (rec.happened_at, rec.valid_from, rec.valid_to) == ("2023-05-07", "2023-05-07T08:00:00.000000Z", "2023-06-01")
    assert rec.created.endswith("Z") and rec.recorded_at == rec.created
    for bad in (
        {"happened_at": "last tuesday"},
        {"valid_from": "2023-13-01"},
        {"valid_to": 20230101},
        {"valid_from": "2023-06-01", "valid_to": "2023-05-01"},
        {"supersedes": "../x"},
    ):
        with pytest.raises(InvalidInputError):
            prepare_draft(MemoryDraft("x happened", **bad), "tool")


# -- capture resolves relative dates against when they were said ----------------------------------------
def test_statements_resolve_yesterday_against_the_transcripts_date() -> None:
    [st] = extract_statements(f"Date: 8 May, 2023\nuser: {YESTERDAY}")
    assert st.happened_at == dt.date(2023, 5, 7) and "7 May 2023" in st.content
    [st] = extract_statements(f"[2023-05-08 13:56] user: {YESTERDAY}", now=dt.datetime(2030, 1, 1))
    assert st.happened_at == dt.date(2023, 5, 7)  # the message's own stamp wins over `now`
    [st] = extract_statements("user: I live in Oslo.", now=SAID)
    assert st.happened_at == dt.date(2023, 5, 8)  # no relative date: the day it was said
    [st] = extract_statements(f"user: {YESTERDAY}")
    assert st.happened_at is None and "yesterday" in st.content  # no date known: left as said, never now()


async def test_capture_turn_dates_records_by_the_turns_timestamp(store: MemoryStore) -> None:
    backend = FilesBackend(store)
    result = await capture_turn(backend, YESTERDAY, caller=ADA, extractor=rule_extractor, at=SAID)
    [rec] = [store.get(i, user_id="ada") for i in result.ids]
    assert rec.happened_at == "2023-05-07" and "7 May 2023" in rec.content
    offline = await capture_turn(
        backend, "Remember that I adopted a cat named Tofu 3 days ago.", caller=ADA, worker=load_profile("offline").capture, at=SAID
    )
    assert not offline.fallback, offline.reason
    [cat] = [store.get(i, user_id="ada") for i in offline.ids]
    assert cat.happened_at == "2023-05-05" and "5 May 2023" in cat.content


async def test_compaction_capture_uses_the_messages_own_timestamps(store: MemoryStore) -> None:
    said = dt.datetime(2023, 5, 8, 9, 0, tzinfo=dt.UTC)
    removed = [ModelRequest(parts=[UserPromptPart(YESTERDAY, timestamp=said)])]
    result = await capture_before_compaction(FilesBackend(store), removed, caller=ADA, extractor=rule_extractor)
    [rec] = [store.get(i, user_id="ada") for i in result.ids]
    assert rec.happened_at == "2023-05-07"


async def test_offline_capture_supersedes_on_the_same_key(store: MemoryStore) -> None:
    backend = FilesBackend(store)
    profile = load_profile("offline").capture
    first = await capture_turn(backend, "I live in Paris.", caller=ADA, worker=profile, at=SAID)
    second = await capture_turn(backend, "I live in Berlin now.", caller=ADA, worker=profile, at=SAID + dt.timedelta(days=40))
    assert first.ids and second.ids == first.ids  # the key's record stays the current one
    assert [r.content for r in store.list(user_id="ada")] == ["User lives in Berlin."]
    kept = [r for r in store.list(user_id="ada", include_superseded=True) if r.superseded_by]
    assert [r.content for r in kept] == ["User lives in Paris."] and (kept[0].valid_to or "").startswith("2023-06-17")


# -- dates shown wherever a record is shown ---------------------------------------------------------------
async def test_core_block_tools_and_hits_show_when_said_and_when_true(store: MemoryStore) -> None:
    store.remember("Ada ran the Oslo marathon.", user_id="ada", happened_at="2023-05-07", valid_from="2023-05-07")
    block = inject(store, 2000, user_id="ada")
    assert "on 2023-05-07; true since 2023-05-07" in block.text
    hit = store.search("marathon", user_id="ada").hits[0]
    assert (hit.happened_at, hit.dates) == ("2023-05-07T00:00:00.000000Z", "on 2023-05-07; true since 2023-05-07")
    tools = plain_tools(memory_toolset(FilesBackend(store), READ, caller=ADA))
    found = (await tools["memory_search"](query="marathon"))["hits"][0]
    assert found["dates"] == "on 2023-05-07; true since 2023-05-07" and found["recorded_at"].endswith("Z")
    got = await tools["memory_get"](id=found["id"])
    assert got["happened_at"] == "2023-05-07" and got["valid_from"] == "2023-05-07"
    assert (await tools["memory_search"](query="marathon", as_of="2023-05-01"))["hits"] == []


def _cli(capsys: Any, root: Path, *args: str) -> str:
    code = main(["--root", str(root), *args])
    out = capsys.readouterr()
    assert code in (0, None), out.err
    return str(out.out)


def test_cli_remember_flags_search_list_and_supersede(tmp_path: Path, capsys: Any) -> None:
    root = tmp_path / "cli"
    old = json.loads(
        _cli(
            capsys,
            root,
            "remember",
            "Ada lives in Paris.",
            "--user",
            "ada",
            "--happened-at",
            "2023-01-05",
            "--valid-from",
            "2023-01-01",
            "--json",
        )
    )["id"]
    new = json.loads(
        _cli(capsys, root, "remember", "Ada lives in Berlin.", "--user", "ada", "--supersede", old, "--valid-from", "2023-07-01", "--json")
    )
    assert new["status"] == "superseded"
    line = _cli(capsys, root, "search", "where does Ada live", "--user", "ada")
    assert "true since 2023-07-01" in line and old not in line
    listed = _cli(capsys, root, "list", "--user", "ada", "--include-superseded")
    assert f"superseded by {new['id']}" in listed and "on 2023-01-05" in listed
    june = json.loads(_cli(capsys, root, "list", "--user", "ada", "--as-of", "2023-06-30", "--json"))
    assert [r["id"] for r in june["records"]] == [old]
    got = json.loads(_cli(capsys, root, "get", old, "--user", "ada", "--json"))
    assert got["superseded_by"] == new["id"] and got["valid_to"].startswith("2023-07-01")
    code = main(["--root", str(root), "remember", "x y z", "--happened-at", "someday", "--json"])
    err = capsys.readouterr().out
    assert code not in (0, None) and "InvalidInputError" in err


# -- PostgreSQL: migration 3 upgrades a schema written before it -------------------------------------------
async def test_postgres_migration_adds_the_clocks_to_an_older_schema(request: pytest.FixtureRequest) -> None:
    import psycopg
    from _pg import fresh_schema
    from psycopg.rows import dict_row

    from agent_memory.backends import open_backend
    from agent_memory.backends.postgres.schema import LATEST, migrations

    url = request.getfixturevalue("pg_url")
    schema = fresh_schema()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True, row_factory=dict_row) as conn:
        await conn.execute(f'CREATE SCHEMA "{schema}"')
        await conn.execute(
            f'CREATE TABLE "{schema}".schema_version (version integer PRIMARY KEY, description text NOT NULL,'
            " applied timestamptz NOT NULL DEFAULT now())"
        )
        for version, description, statements in migrations(schema)[:2]:
            for stmt in statements:
                await conn.execute(stmt)
            await conn.execute(f'INSERT INTO "{schema}".schema_version VALUES (%s, %s)', (version, description))
        await conn.execute(
            f'INSERT INTO "{schema}".records (tenant, id, part, scope, user_id, kind, title, source, created, updated,'
            " content_hash, content, summary) VALUES ('ada', 'old-1', 'user', 'user', 'ada', 'fact', 'Old', 'tool',"
            " now(), now(), 'h1', 'Ada keeps bees.', 'Ada keeps bees.')"
        )
    backend = open_backend(url, schema=schema)
    try:
        [old] = await backend.list(ADA)
        assert old.id == "old-1" and (old.happened_at, old.superseded_by) == (None, None)
        new = await backend.supersede("old-1", MemoryDraft("Ada keeps wasps.", user_id="ada", happened_at="2024-04-01"))
        assert [r.id for r in await backend.list(ADA)] == [new.id]
        assert (await backend.get("old-1", ADA)).superseded_by == new.id
        assert backend.pool.version == LATEST  # type: ignore[attr-defined]
    finally:
        await backend.close()


async def test_hooks_date_a_live_turn_by_when_it_was_said(tmp_path: Path) -> None:
    from agent_memory import MemoryProvider
    from agent_memory.integrations.hooks import MemoryHooks

    provider = MemoryProvider(tmp_path / "mem", profile="offline")
    hooks = MemoryHooks(provider, session_id="chat", user_id="ada")
    before = dt.datetime.now(dt.UTC).date()
    result = await hooks.on_turn_end("Remember that I adopted a cat named Tofu 3 days ago.", "Noted.", background=False)
    after = dt.datetime.now(dt.UTC).date()
    assert isinstance(result, CaptureResult) and result.ids, result
    [cat] = [await provider.get(i, user_id="ada") for i in result.ids]
    assert cat.happened_at in {str(d - dt.timedelta(days=3)) for d in (before, after)}
    await provider.aclose()
