"""Every importer on small fixtures: fields, original timestamps, scopes, redaction, typed skips, idempotency."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.model.records import MemoryRecord, Scope
from agent_memory.portable import import_file
from agent_memory.portable.importers import detect

FIX = Path(__file__).parent / "fixtures" / "portable"


def _all(store: MemoryStore) -> dict[str, MemoryRecord]:
    return {rec.id: rec for rec in (store.index.load_file(e.name)[0] for e in store.index.record_files())}


def _by_key(store: MemoryStore) -> dict[str, MemoryRecord]:
    return {rec.metadata["import"]["ref"]: rec for rec in _all(store).values()}


def _skips(report: object) -> dict[str, str]:
    return {s.where: s.reason for s in report.skipped}  # type: ignore[attr-defined]


def _assert_idempotent(store: MemoryStore, path: Path, first_written: int) -> None:
    before = {p.name: p.read_bytes() for p in store.records_dir.glob("*.md")}
    again = import_file(store, path)
    assert again.written == []
    assert again.counts().get("exists", 0) == first_written
    assert {p.name: p.read_bytes() for p in store.records_dir.glob("*.md")} == before


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("alfred_v2", "alfred-v2"), ("alfred_memories.jsonl", "alfred-py"), ("cuylabs", "cuylabs"), ("mem0_export.json", "mem0")],
)
def test_detect(name: str, fmt: str) -> None:
    assert detect(FIX / name) == fmt


def test_alfred_v2_facts_and_episodes(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "root")
    report = import_file(store, FIX / "alfred_v2")
    assert report.format == "alfred-v2"
    recs = _by_key(store)
    assert set(recs) == {"fact:user-prefers-bun", "fact:deploy-target", "fact:old-api-key", "episode:2026-06-07T10-00-00-000Z-a1b2c3"}
    bun = recs["fact:user-prefers-bun"]
    assert bun.content == "User prefers Bun over Node for all scripts."
    assert (bun.created, bun.updated) == ("2026-06-06T10:00:00.000000Z",) * 2  # original ts kept
    assert bun.expires == "2099-12-31T00:00:00.000000Z" and bun.memory_key == "user-prefers-bun"
    assert bun.kind == "preference" and bun.scope is Scope.PROJECT and bun.source == "import"
    assert bun.metadata["scope_path"] == "src/query" and bun.metadata["alfred_type"] == "user"
    assert "scope_path" not in recs["fact:deploy-target"].metadata
    secret = recs["fact:old-api-key"]  # redacted on the way in, like every write
    assert "sk-live-9f8e7d6c" not in secret.content and "[REDACTED" in secret.content and report.redactions >= 1
    assert "sk-live" not in (store.root / "MEMORY.md").read_text()
    ep = recs["episode:2026-06-07T10-00-00-000Z-a1b2c3"]
    assert ep.kind == "episode" and ep.created == "2026-06-07T10:00:00.000000Z" and "episode" in ep.tags
    assert "Goal: Fix the flaky query test" in ep.content and "- retrying the test" in ep.content
    assert ep.metadata["git_sha"] == "abc1234" and ep.metadata["cost_usd"] == 0.42
    assert _skips(report) == {
        "USER.md": "unsupported",
        "facts/README.txt": "unsupported",
        "facts/broken.md": "invalid",
        "facts/stale-sprint.md": "expired",
        "episodes/2026-06-08T00-00-00-000Z-ffffff.json": "invalid",
    }
    assert not any("retired" in r.metadata["import"]["ref"] for r in recs.values())  # archive/ is not imported
    hits = store.search("Bun scripts").hits
    assert hits and hits[0].id == bun.id  # the index was refreshed
    _assert_idempotent(store, FIX / "alfred_v2", len(report.written))


def test_alfred_v2_user_override_scopes_to_that_user(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "root")
    import_file(store, FIX / "alfred_v2", user_id="sam")
    recs = list(_all(store).values())
    assert recs and all(r.scope is Scope.USER and r.user_id == "sam" for r in recs)
    assert store.list(limit=None) == [] and len(store.list(limit=None, user_id="sam")) == len(recs)


def test_alfred_py_memories(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "root")
    report = import_file(store, FIX / "alfred_memories.jsonl")
    assert report.format == "alfred-py"
    recs = {r.content: r for r in _all(store).values()}
    assert set(recs) == {"User prefers async/await over threads for Python concurrency", "User has a dog named Max"}
    a = recs["User prefers async/await over threads for Python concurrency"]
    assert a.created == "2026-02-19T14:30:00.000000Z" and a.importance == 0.8 and a.tags == ("preference", "python")
    assert a.scope is Scope.PROJECT and a.session_id is None
    assert a.metadata["source_session_id"] == "sess_abc123" and a.metadata["role"] == "assistant"
    assert "embedding" not in a.metadata and report.dropped == {"embedding": 1}
    dog = recs["User has a dog named Max"]
    assert dog.created == "2026-02-20T08:00:00.000000Z"  # +01:00 normalised to UTC, same instant
    assert dog.tags == ("family", "pets")  # comma-separated tags
    assert _skips(report) == {"line 4": "invalid", "line 5": "empty", "line 6": "invalid", "line 7": "invalid", "line 8": "duplicate"}
    msgs = {s.where: s.message for s in report.skipped}
    assert "importance" in msgs["line 6"] and "yesterday" in msgs["line 7"]
    _assert_idempotent(store, FIX / "alfred_memories.jsonl", len(report.written))


def test_cuylabs_records_keep_ids_and_camel_case_fields(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "root")
    report = import_file(store, FIX / "cuylabs")
    recs = _all(store)
    assert set(recs) == {"2026-05-15-release-plan-a1b2c3d4", "2026-05-16-session-scratch-0f0f0f0f"}
    plan = recs["2026-05-15-release-plan-a1b2c3d4"]
    assert plan.memory_key == "release-plan" and plan.tags == ("release",) and plan.title == "Release plan"
    assert (plan.created, plan.updated) == ("2026-05-15T09:00:00.000000Z", "2026-05-16T10:00:00.000000Z")
    assert plan.metadata["turnId"] == "t7" and "createdAt" not in plan.metadata
    scratch = recs["2026-05-16-session-scratch-0f0f0f0f"]
    assert scratch.scope is Scope.SESSION and scratch.session_id == "s1" and scratch.kind == "summary"
    assert [r.id for r in store.list(limit=None, session_id="s2")] == [plan.id]  # another session sees the shared one
    assert _skips(report) == {"records/2026-05-17-bad-scope-12345678.md": "invalid"}
    _assert_idempotent(store, FIX / "cuylabs", len(report.written))


def test_mem0_export_scopes_by_user_and_run(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "root")
    report = import_file(store, FIX / "mem0_export.json")
    recs = {r.content: r for r in _all(store).values()}
    alice = recs["Alice is vegetarian"]
    assert alice.scope is Scope.USER and alice.user_id == "alice" and alice.tags == ("food", "preferences")
    assert alice.created == "2024-07-20T17:00:00.123456Z" and alice.updated == "2024-07-21T17:00:00.000000Z"
    assert alice.metadata["agent_id"] == "chef-bot" and alice.metadata["source"] == "chat"
    assert alice.metadata["mem0_id"] == "8c1f5a8e-1111-4a4b-9c9c-000000000001"
    run = recs["Run 42 used the blue theme"]
    assert run.scope is Scope.SESSION and run.session_id == "run-42"
    assert recs["The office wifi is on floor 3"].scope is Scope.PROJECT
    assert _skips(report) == {"item 3": "invalid", "item 4": "invalid"}
    # visibility is enforced on what was imported: bob does not see alice's memory
    assert [r.content for r in store.list(limit=None, user_id="bob")] == ["The office wifi is on floor 3"]
    _assert_idempotent(store, FIX / "mem0_export.json", len(report.written))


def test_mem0_jsonl_and_plain_list(tmp_path: Path) -> None:
    objs = json.loads((FIX / "mem0_export.json").read_text())["results"][:3]
    (tmp_path / "m.jsonl").write_text("\n".join(json.dumps(o) for o in objs) + "\n{broken\n")
    (tmp_path / "m.json").write_text(json.dumps(objs))
    a, b = MemoryStore(tmp_path / "a"), MemoryStore(tmp_path / "b")
    ra = import_file(a, tmp_path / "m.jsonl", format="mem0")
    rb = import_file(b, tmp_path / "m.json")
    assert rb.format == "mem0" and len(ra.written) == len(rb.written) == 3
    assert sorted(ra.written) == sorted(rb.written)  # the id depends on the memory, not on the file layout
    assert _skips(ra) == {"line 4": "invalid"}


def test_same_text_already_stored_is_a_duplicate(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "root")
    existing = store.remember("Alice is vegetarian", user_id="alice")
    report = import_file(store, FIX / "mem0_export.json")
    dup = [s for s in report.skipped if s.reason == "duplicate"]
    assert len(dup) == 1 and dup[0].id == existing.id and dup[0].where == "item 0"


def test_key_conflict_is_reported_not_merged(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "root")
    mine = store.remember("We deploy by hand.", memory_key="deploy-target", scope="project")
    report = import_file(store, FIX / "alfred_v2")
    assert _skips(report)["facts/deploy-target.md"] == "key_conflict"
    assert store.get(mine.id).content == "We deploy by hand."


def test_bad_calls_raise_typed_errors(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "root")
    with pytest.raises(NotFoundError):
        import_file(store, tmp_path / "nope.jsonl")
    with pytest.raises(InvalidInputError):
        import_file(store, FIX / "cuylabs", format="letta")  # type: ignore[arg-type]
    (tmp_path / "x.txt").write_text("hello\n")
    with pytest.raises(InvalidInputError, match="format"):
        import_file(store, tmp_path / "x.txt")
    assert list(store.records_dir.glob("*.md")) == []


def test_alfred_store_nested_under_dot_alfred(tmp_path: Path) -> None:
    shutil.copytree(FIX / "alfred_v2", tmp_path / "ws" / ".alfred" / "memory")
    assert detect(tmp_path / "ws") == "alfred-v2"
    report = import_file(MemoryStore(tmp_path / "root"), tmp_path / "ws")
    assert len(report.written) == 4


# -- symbolic links: an import reads only regular files inside what it was given ----------------------------------

OUTSIDE = "OUTSIDE-THE-UPLOAD the operator's private note"


def _outside(tmp_path: Path) -> Path:
    """A directory outside the imported one, holding a file of every format with the OUTSIDE text."""
    out = tmp_path / "elsewhere"
    (out / "facts").mkdir(parents=True)
    (out / "records").mkdir()
    line = json.dumps({"timestamp": "2026-02-19T14:30:00Z", "role": "user", "content": OUTSIDE})
    (out / "memories.jsonl").write_text(line + "\n")
    (out / "mem0.json").write_text(json.dumps({"results": [{"id": "m1", "memory": OUTSIDE, "user_id": "alice"}]}))
    (out / "facts" / "leak.md").write_text(f"---\ntype: project\nts: 2026-05-01T08:30:00.000Z\n---\n\n{OUTSIDE}\n")
    (out / "records" / "leak.md").write_text(f"---\ntitle: Leak\n---\n\n{OUTSIDE}\n")
    return out


def _nothing_from_outside(store: MemoryStore) -> None:
    assert all(OUTSIDE not in rec.content for rec in _all(store).values())


@pytest.mark.parametrize("layout", ["file", "folder"])
def test_alfred_py_refuses_a_symlinked_memories_file(tmp_path: Path, layout: str) -> None:
    out, upload = _outside(tmp_path), tmp_path / "upload"
    upload.mkdir()
    if layout == "file":
        (upload / "memories.jsonl").symlink_to(out / "memories.jsonl")
    else:
        (upload / "memory").symlink_to(out)  # upload/memory/memories.jsonl lies outside the upload
    store = MemoryStore(tmp_path / "root")
    report = import_file(store, upload, format="alfred-py")
    _nothing_from_outside(store)
    assert report.written == [] and [s.reason for s in report.skipped] == ["invalid"]
    assert "symbolic link" in report.skipped[0].message or "outside" in report.skipped[0].message


@pytest.mark.parametrize("layout", ["file", "folder"])
def test_alfred_v2_refuses_symlinked_facts(tmp_path: Path, layout: str) -> None:
    out, upload = _outside(tmp_path), tmp_path / "upload"
    if layout == "file":
        shutil.copytree(FIX / "alfred_v2", upload)
        (upload / "facts" / "leak.md").symlink_to(out / "facts" / "leak.md")
    else:
        upload.mkdir()
        (upload / "facts").symlink_to(out / "facts")
    store = MemoryStore(tmp_path / "root")
    report = import_file(store, upload, format="alfred-v2")
    _nothing_from_outside(store)
    assert _skips(report)["facts/leak.md"] == "invalid"


@pytest.mark.parametrize("layout", ["file", "folder"])
def test_cuylabs_refuses_symlinked_records(tmp_path: Path, layout: str) -> None:
    out, upload = _outside(tmp_path), tmp_path / "upload"
    if layout == "file":
        shutil.copytree(FIX / "cuylabs", upload)
        (upload / "records" / "leak.md").symlink_to(out / "records" / "leak.md")
    else:
        upload.mkdir()
        (upload / "records").symlink_to(out / "records")
    store = MemoryStore(tmp_path / "root")
    report = import_file(store, upload, format="cuylabs")
    _nothing_from_outside(store)
    assert _skips(report)["records/leak.md"] == "invalid"


@pytest.mark.parametrize("fmt", ["mem0", "alfred-py", "cuylabs", "auto"])
def test_a_symlink_named_as_the_import_is_refused(tmp_path: Path, fmt: str) -> None:
    out = _outside(tmp_path)
    source = {"mem0": "mem0.json", "alfred-py": "memories.jsonl", "cuylabs": "records/leak.md", "auto": "mem0.json"}[fmt]
    link = tmp_path / f"link{Path(source).suffix}"
    link.symlink_to(out / source)
    store = MemoryStore(tmp_path / "root")
    with pytest.raises(InvalidInputError, match="symbolic link"):
        import_file(store, link, format=fmt)  # type: ignore[arg-type]
    _nothing_from_outside(store)
