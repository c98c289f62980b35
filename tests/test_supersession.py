"""Supersession: a newer fact replaces an older one as the current fact and nothing is lost (docs/time.md).

The backend tests run against files + SQLite and PostgreSQL (tests/_pg.py); store-only behaviour (versions,
files on disk, the capture worker's staged tools) runs on the files store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _doubles import plain_tools
from _pg import fresh_schema, pg_url  # noqa: F401  (pytest fixture)
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory.agents.tools import CAPTURE, FOREGROUND, memory_toolset
from agent_memory.backends import open_backend
from agent_memory.backends.base import Caller, MemoryBackend
from agent_memory.backends.files.backend import FilesBackend
from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.model.drafts import MemoryDraft

ADA = Caller(user_id="ada")
BOB = Caller(user_id="bob")


@pytest.fixture(params=["files", "postgres"])
def make_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], MemoryBackend]]:
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None

    def make() -> MemoryBackend:
        if url is not None:
            return open_backend(url, schema=fresh_schema())
        return FilesBackend(MemoryStore(tmp_path / "root", durable=False))

    yield make


@pytest.fixture
async def backend(make_backend: Callable[[], MemoryBackend]) -> AsyncIterator[MemoryBackend]:
    b = make_backend()
    yield b
    await b.close()


def ada(content: str, **kw: Any) -> MemoryDraft:
    return MemoryDraft(content, user_id="ada", **kw)


async def test_a_superseded_fact_leaves_default_reads_and_stays_reachable(backend: MemoryBackend) -> None:
    old = await backend.remember(ada("Ada lives in Paris, in the Marais.", valid_from="2023-01-01"))
    new = await backend.supersede(old.id, ada("Ada lives in Berlin, in Kreuzberg.", valid_from="2023-07-01"))
    assert new.status == "superseded" and new.id != old.id
    was = await backend.get(old.id, ADA)  # get reaches it, with who replaced it and when it stopped holding
    assert was.superseded_by == new.id and was.valid_to is not None and was.valid_to.startswith("2023-07-01")
    assert (await backend.get(new.id, ADA)).supersedes == old.id
    assert [h.id for h in (await backend.search("where does Ada live", ADA)).hits] == [new.id]
    assert [r.id for r in await backend.list(ADA)] == [new.id]
    assert await backend.count(ADA) == 1
    lines = await backend.core_lines(ADA, None)
    assert len(lines) == 1 and new.id in lines[0] and "true since 2023-07-01" in lines[0]
    assert {r.id for r in await backend.list(ADA, include_superseded=True)} == {old.id, new.id}
    assert {h.id for h in (await backend.search("Ada lives", ADA, include_superseded=True)).hits} == {old.id, new.id}
    assert await backend.count(ADA, include_superseded=True) == 2


async def test_as_of_answers_what_we_believed_then(backend: MemoryBackend) -> None:
    old = await backend.remember(ada("Ada works at Initech as a tester.", happened_at="2023-02-10"))
    new = await backend.supersede(old.id, ada("Ada works at Hooli as an engineer.", happened_at="2023-08-01"))
    june = await backend.list(ADA, as_of="2023-06-30")
    assert [r.id for r in june] == [old.id]
    assert [h.id for h in (await backend.search("where does Ada work", ADA, as_of="2023-06-30")).hits] == [old.id]
    assert [r.id for r in await backend.list(ADA, as_of="2023-09-01")] == [new.id]
    assert await backend.list(ADA, as_of="2023-01-01") == []  # before either was true
    assert [r.id for r in await backend.list(ADA, as_of="2023-08-01T00:00:00Z")] == [new.id]  # the boundary: the new one
    with pytest.raises(InvalidInputError):
        await backend.list(ADA, as_of="last June")


async def test_supersede_obeys_partitions_and_refuses_twice(backend: MemoryBackend) -> None:
    mine = await backend.remember(ada("Ada's locker is number 12."))
    shared = await backend.remember(MemoryDraft("The office opens at 8.", scope="project"))
    with pytest.raises(NotFoundError):  # bob cannot replace ada's fact, not even knowing its id
        await backend.supersede(mine.id, MemoryDraft("Ada's locker is number 99.", user_id="bob"))
    with pytest.raises(NotFoundError):  # a private write cannot hide a shared fact from everyone else
        await backend.supersede(shared.id, ada("The office opens at 10."))
    assert (await backend.get(mine.id, ADA)).superseded_by is None
    assert [r.id for r in await backend.list(Caller(user_id="carol"))] == [shared.id]
    first = await backend.supersede(mine.id, ada("Ada's locker is number 14."))
    with pytest.raises(InvalidInputError, match="already superseded"):
        await backend.supersede(mine.id, ada("Ada's locker is number 15."))
    with pytest.raises(NotFoundError):
        await backend.supersede("2023-01-01-nothing-00000000", ada("Anything at all."))
    assert (await backend.supersede(first.id, ada("Ada's locker is number 14."))).status == "duplicate"


async def test_capture_may_supersede_only_what_capture_wrote(backend: MemoryBackend) -> None:
    told = await backend.remember(ada("Ada's dentist is Dr. Lee."), source="tool")
    with pytest.raises(InvalidInputError, match="not written by capture"):
        await backend.supersede(told.id, ada("Ada's dentist is Dr. Kim."), source="turn_capture")
    captured = await backend.remember(ada("Ada's gym is FitFirst."), source="turn_capture")
    done = await backend.supersede(captured.id, ada("Ada's gym is IronWorks."), source="turn_capture")
    assert done.status == "superseded" and (await backend.get(captured.id, ADA)).superseded_by == done.id


async def test_a_keyed_replace_is_a_supersession_that_loses_nothing(backend: MemoryBackend) -> None:
    first = await backend.remember(ada("Ada's favourite colour is orange.", memory_key="user.colour"))
    again = await backend.remember(ada("Ada's favourite colour is green.", memory_key="user.colour", on_existing="replace"))
    assert (again.status, again.id) == ("replaced", first.id)  # the key's id stays the current record
    current = await backend.get(first.id, ADA)
    assert current.content == "Ada's favourite colour is green." and current.supersedes
    kept = await backend.get(current.supersedes, ADA)
    assert kept.content == "Ada's favourite colour is orange." and kept.superseded_by == first.id and kept.valid_to
    assert [r.id for r in await backend.list(ADA)] == [first.id]
    assert len(await backend.list(ADA, include_superseded=True)) == 2
    third = await backend.remember(ada("Ada's favourite colour is blue.", memory_key="user.colour", on_existing="replace"))
    assert third.id == first.id and (await backend.get(first.id, ADA)).content == "Ada's favourite colour is blue."
    contents = sorted(r.content for r in await backend.list(ADA, include_superseded=True))
    assert contents == sorted(["Ada's favourite colour is orange.", "Ada's favourite colour is green.", "Ada's favourite colour is blue."])
    # writing a superseded text again is a new current fact, never a "duplicate" of the hidden one
    back = await backend.remember(ada("Ada's favourite colour is orange."))
    assert back.status == "created" and back.id != kept.id


async def test_forget_deletes_the_chain_and_superseded_text_is_redacted(backend: MemoryBackend) -> None:
    old = await backend.remember(ada("Ada's wifi is called Castle."))
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    new = await backend.supersede(old.id, ada(f"Ada's wifi is called Keep; the CI token is {token}"))
    rec = await backend.get(new.id, ADA)
    assert token not in rec.content and new.redactions >= 1
    assert await backend.forget(new.id, ADA) is True
    for rid in (old.id, new.id):
        with pytest.raises(NotFoundError):
            await backend.get(rid, ADA)
    assert await backend.list(ADA, include_superseded=True) == []


# -- files store only --------------------------------------------------------------------------------
def test_store_versions_and_files_stay_on_disk(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m", durable=False)
    a = store.remember("Deploys happen on Fridays.", memory_key="deploys")
    store.remember("Deploys happen on Tuesdays.", memory_key="deploys", on_existing="replace")
    store.remember("Deploys happen daily.", memory_key="deploys", on_existing="replace")
    assert [v.content for v in store.versions(a.id)] == ["Deploys happen on Tuesdays.", "Deploys happen on Fridays."]
    assert len(list(store.records_dir.glob("*.md"))) == 3
    assert "Fridays" not in (store.root / "MEMORY.md").read_text() and "daily" in (store.root / "MEMORY.md").read_text()
    # a superseded id given as memory_key leads to the current record
    old_id = store.versions(a.id)[-1].id
    r = store.remember("Deploys happen hourly.", memory_key=old_id, on_existing="replace")
    assert r.id == a.id and store.get(a.id).content == "Deploys happen hourly."
    # the index is derived: rebuilt from the files, supersession and clocks come back
    (store.root / "index.db").unlink()
    fresh = MemoryStore(tmp_path / "m", durable=False)
    assert [x.id for x in fresh.list()] == [a.id] and len(fresh.list(include_superseded=True)) == 4


def test_supersede_api_takes_a_draft_and_checks_it(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m", durable=False)
    a = store.remember("Standup is at 9.")
    with pytest.raises(InvalidInputError):
        store.supersede(a.id, "Standup is at 10.")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        store.supersede("../etc/passwd", MemoryDraft("Standup is at 10."))
    b = store.supersede(a.id, MemoryDraft("Standup is at 10."))
    assert store.get(a.id).superseded_by == b.id and [h.id for h in store.search("standup")] == [b.id]


# -- the capture worker's memory_supersede ------------------------------------------------------------
def _supersede_model(target: str) -> FunctionModel:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [p for m in messages for p in getattr(m, "parts", ()) if isinstance(p, ToolReturnPart)]
        if not returned:
            return ModelResponse(parts=[ToolCallPart("memory_supersede", {"id": target, "content": "Ada's gym is IronWorks."})])
        return ModelResponse(parts=[TextPart("NO_REPLY")])

    return FunctionModel(model)


@pytest.mark.parametrize("source, allowed", [("turn_capture", True), ("tool", False)])
async def test_the_capture_worker_supersedes_only_its_own_records(tmp_path: Path, source: str, allowed: bool) -> None:
    from agent_memory.agents.profiles import WorkerProfile
    from agent_memory.agents.workers.capture import capture_turn

    store = MemoryStore(tmp_path / "m", durable=False)
    backend = FilesBackend(store)
    old = store.remember("Ada's gym is FitFirst.", user_id="ada", source=source)
    profile = WorkerProfile(role="capture", model=_supersede_model(old.id), tools=CAPTURE)
    result = await capture_turn(backend, "I switched gyms, it's IronWorks now", caller=ADA, worker=profile)
    assert not result.fallback, result.reason
    current = [r.content for r in store.list(user_id="ada")]
    if allowed:
        assert current == ["Ada's gym is IronWorks."] and store.get(old.id, user_id="ada").superseded_by == result.ids[0]
    else:
        assert current == ["Ada's gym is FitFirst."] and result.ids == []


async def test_the_main_agent_tool_supersedes_in_the_old_records_partition(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m", durable=False)
    old = store.remember("Ada's desk is by the window.", user_id="ada")
    tools = plain_tools(memory_toolset(FilesBackend(store), FOREGROUND, caller=ADA))
    out = await tools["memory_supersede"](id=old.id, content="Ada's desk is by the door.", valid_from="2024-03-01")
    assert out["status"] == "superseded"
    listed = await tools["memory_list"](include_superseded=True)
    by_id = {r["id"]: r for r in listed["records"]}
    assert by_id[old.id]["superseded_by"] == out["id"] and "true since 2024-03-01" in by_id[out["id"]]["dates"]
    bob_tools = plain_tools(memory_toolset(FilesBackend(store), FOREGROUND, caller=BOB))
    from pydantic_ai import ModelRetry

    with pytest.raises(ModelRetry):
        await bob_tools["memory_supersede"](id=out["id"], content="Ada's desk is gone.")


def test_sweep_never_archives_a_superseded_record_as_a_duplicate(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m", durable=False)
    paris = store.remember("Ada lives in Paris.", user_id="ada")
    berlin = store.supersede(paris.id, MemoryDraft("Ada lives in Berlin.", user_id="ada"))
    back = store.supersede(berlin.id, MemoryDraft("Ada lives in Paris.", user_id="ada"))  # moved back: same words
    assert back.status == "superseded" and back.id != paris.id
    assert store.sweep().duplicates == []
    assert {r.id for r in store.list(user_id="ada", include_superseded=True)} == {paris.id, berlin.id, back.id}


def test_export_and_import_keep_superseded_records_and_their_clocks(tmp_path: Path) -> None:
    from agent_memory.portable import export_records, import_file

    src = MemoryStore(tmp_path / "src", durable=False)
    a = src.remember("Ada's team is Payments.", memory_key="user.team", user_id="ada", happened_at="2023-02-01")
    src.remember("Ada's team is Search.", memory_key="user.team", user_id="ada", on_existing="replace", valid_from="2023-09-01")
    dump = tmp_path / "dump.jsonl"
    assert export_records(src, dump) == 2  # the export holds history too
    dst = MemoryStore(tmp_path / "dst", durable=False)
    report = import_file(dst, dump)
    assert sorted(report.written) == sorted(r.id for r in src.list(user_id="ada", include_superseded=True))
    assert [r.content for r in dst.list(user_id="ada")] == ["Ada's team is Search."]
    assert [v.content for v in dst.versions(a.id, user_id="ada")] == ["Ada's team is Payments."]
    assert dst.versions(a.id, user_id="ada")[0].happened_at == "2023-02-01"
    assert [r.content for r in dst.list(user_id="ada", as_of="2023-05-01")] == ["Ada's team is Payments."]
