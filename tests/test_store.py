"""MemoryStore write policy: statuses, keys, dedupe, forget, MEMORY.md, sweep, concurrency."""

import datetime as dt
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agent_memory.backends.files.store import MemoryDraft, MemoryStore
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.model.records import Scope


@pytest.fixture
def store(tmp_path):
    return MemoryStore(tmp_path / "mem")


def test_remember_writes_one_markdown_file_with_frontmatter(store):
    r = store.remember("The release codename is copper.", title="Release plan", tags=["Release"])
    assert r.status == "created"
    path = Path(r.path)
    assert path.parent == store.records_dir and path.name == f"{r.id}.md"
    text = path.read_text()
    assert text.startswith("---\n") and "scope: project" in text and "- release" in text
    assert text.endswith("The release codename is copper.\n")
    rec = store.get(r.id)
    assert rec.content == "The release codename is copper." and rec.scope is Scope.PROJECT and rec.source == "tool"


def test_exact_duplicate_in_same_scope_returns_existing_id(store):
    a = store.remember("Use pnpm, not npm.")
    b = store.remember("  Use pnpm, not npm.\n")
    assert (b.status, b.id) == ("duplicate", a.id)
    assert len(list(store.records_dir.glob("*.md"))) == 1


def test_same_content_in_other_partitions_is_not_a_duplicate(store):
    a = store.remember("Likes tea", scope="session", session_id="s1")
    b = store.remember("Likes tea", scope="session", session_id="s2")
    c = store.remember("Likes tea")
    assert {a.status, b.status, c.status} == {"created"} and len({a.id, b.id, c.id}) == 3


def test_memory_key_append_replace_skip_and_idempotent_append(store):
    a = store.remember("The release codename is copper.", memory_key="release-plan")
    b = store.remember("The launch window is June.", memory_key="release-plan")
    again = store.remember("The launch window is June.", memory_key="release-plan")
    assert (a.status, b.status, again.status) == ("created", "appended", "duplicate")
    assert a.id == b.id == again.id
    assert store.get(a.id).content == "The release codename is copper.\nThe launch window is June."
    s = store.remember("ignored", memory_key="release-plan", on_existing="skip")
    assert (s.status, s.id) == ("skipped", a.id)
    r = store.remember("Codename changed to zinc.", memory_key="release-plan", on_existing="replace")
    assert r.status == "replaced" and store.get(a.id).content == "Codename changed to zinc."
    assert len(list(store.records_dir.glob("*.md"))) == 2  # the replaced version stays, superseded (docs/time.md)
    assert [rec.id for rec in store.list()] == [a.id]


def test_memory_key_can_target_an_existing_record_id(store):
    a = store.remember("First fact.")
    b = store.remember("Second fact.", memory_key=a.id)
    assert (b.status, b.id) == ("appended", a.id)
    assert store.get(a.id).content == "First fact.\nSecond fact."


def test_related_memories_are_never_merged(store):
    a = store.remember("The deploy day is Friday.")
    b = store.remember("The deploy day is Thursday.")
    assert a.id != b.id and b.status == "created"


def test_scope_rules_and_default_scope(store, tmp_path):
    with pytest.raises(InvalidInputError):
        store.remember("x", scope="session")
    with pytest.raises(InvalidInputError):
        store.remember("x", scope="user")
    with pytest.raises(InvalidInputError):
        store.remember("x", scope="galaxy")
    assert store.get(store.remember("plain").id).scope is Scope.PROJECT
    s2 = MemoryStore(tmp_path / "other", default_scope="session")
    assert s2.get(s2.remember("mine", session_id="s").id, session_id="s").scope is Scope.SESSION


@pytest.mark.parametrize("content", ["", "   \n", "nul\x00byte", "x" * 1_000_001, "\ud800 lone surrogate"])
def test_bad_content_is_refused_and_nothing_written(store, content):
    with pytest.raises(InvalidInputError):
        store.remember(content)
    assert list(store.records_dir.iterdir()) == []


def test_forget_removes_file_and_index_rows(store):
    r = store.remember("Temporary note about llamas.")
    assert store.search("llamas").hits
    assert store.forget(r.id) is True
    assert not Path(r.path).exists()
    assert store.search("llamas").hits == [] and store.index.get_row(r.id) is None
    with pytest.raises(NotFoundError):
        store.get(r.id)
    assert store.forget(r.id) is False


def test_memory_md_is_regenerated_after_every_write_and_bounded(tmp_path):
    store = MemoryStore(tmp_path / "m", memory_md_limit=3)
    ids = [store.remember(f"fact number {i}").id for i in range(5)]
    store.remember("private", scope="session", session_id="s1")
    text = (store.root / "MEMORY.md").read_text()
    lines = [line for line in text.splitlines() if line.startswith("- [")]
    assert lines[0].startswith(f"- [{ids[-1]}] (fact): fact number 4")
    assert len(lines) == 3 and "private" not in text and "older records are not listed" in text
    store.forget(ids[-1])
    assert ids[-1] not in (store.root / "MEMORY.md").read_text()


def expire_by_hand(store, rid, when="2020-01-01T00:00:00.000000Z"):
    """Rewrite a record's ``expires`` as a hand edit would (atomically, so the index notices at once)."""
    path = store.records_dir / f"{rid}.md"
    text = re.sub(r"(?m)^expires: .*$", f"expires: '{when}'", path.read_text(encoding="utf-8"))
    tmp = path.with_suffix(".edit")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def test_sweep_archives_expired_and_duplicates_with_annotation(store):
    old = store.remember("Stale promo code info", expires="2998-01-01")
    keep = store.remember("Fresh info", expires="2999-01-01")
    dup_path = store.records_dir / "hand-dup.md"
    dup_path.write_text("---\ntitle: dup\nupdated: '2000-01-01T00:00:00Z'\n---\nFresh info\n")
    report = store.sweep(now=dt.datetime(2998, 6, 1, tzinfo=dt.UTC))
    assert report.expired == [old.id] and report.duplicates == ["hand-dup"]
    archived = (store.archive_dir / f"{old.id}.md").read_text()
    assert "<!-- archived: expired (expires 2998-01-01T00:00:00.000000Z) at " in archived
    assert f"duplicate of {keep.id}" in (store.archive_dir / "hand-dup.md").read_text()
    assert not Path(old.path).exists() and not dup_path.exists() and Path(keep.path).exists()
    assert store.search("promo").hits == []


def test_list_filters_exactly_and_by_dates(store):
    a = store.remember("alpha", tags=["x", "y"], kind="decision")
    store.remember("beta", tags=["x"])
    store.remember("gamma", scope="user", user_id="u1", tags=["x", "y"])
    assert [r.id for r in store.list(tags=["x", "y"])] == [a.id]
    assert {r.content for r in store.list(tags=["x", "y"], user_id="u1")} == {"alpha", "gamma"}
    assert [r.id for r in store.list(kind="decision")] == [a.id]
    assert [r.content for r in store.list(scope="user", user_id="u1")] == ["gamma"]
    assert len(store.list(limit=2)) == 2
    future = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).isoformat()
    assert store.list(created_after=future) == [] and len(store.list(created_before=future)) == 2


def test_concurrent_threads_appending_to_one_key_lose_nothing(store):
    def work(t):
        for i in range(15):
            store.remember(f"thread {t} line {i}", memory_key="shared-log")
            store.remember(f"own record {t}-{i}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rec = store.list(limit=None)
    keyed = [r for r in rec if r.memory_key == "shared-log"]
    assert len(keyed) == 1
    lines = set(store.get(keyed[0].id).content.splitlines())
    assert lines == {f"thread {t} line {i}" for t in range(4) for i in range(15)}
    assert len(rec) == 1 + 60 and len(list(store.records_dir.glob("*.md"))) == 61


WRITER = """
import sys
from agent_memory.backends.files.store import MemoryStore
s = MemoryStore(sys.argv[1])
for i in range(int(sys.argv[3])):
    s.remember(f"proc {sys.argv[2]} line {i}", memory_key="shared")
"""


def test_two_processes_appending_to_one_memory_key(store):
    n = 25
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(store.root), str(p), str(n)]) for p in range(2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    [rec] = store.list(limit=None)
    lines = store.get(rec.id).content.splitlines()
    assert sorted(lines) == sorted(f"proc {p} line {i}" for p in range(2) for i in range(n))


def test_remember_many_bulk_import_dedupes_within_the_batch(store):
    drafts = [MemoryDraft(f"imported fact {i % 50}", tags=("bulk",)) for i in range(120)]
    results = store.remember_many(drafts, source="import", batch_size=40)
    assert [r.status for r in results].count("created") == 50
    assert [r.status for r in results].count("duplicate") == 70
    assert store.get(results[0].id).source == "import"
    assert len(store.list(tags=["bulk"], limit=None)) == 50


def test_remember_many_validates_the_whole_batch_before_writing(store):
    with pytest.raises(InvalidInputError):
        store.remember_many([MemoryDraft("good one"), MemoryDraft("")])
    assert list(store.records_dir.glob("*.md")) == []
    errors: list[tuple[int, str]] = []
    res = store.remember_many([MemoryDraft("good one"), MemoryDraft("")], on_error="skip", errors=errors)
    assert [r.status for r in res] == ["created"] and errors[0][0] == 1


def test_date_filters_are_validated_and_normalised(store):
    store.remember("dated record")
    with pytest.raises(InvalidInputError):
        store.list(created_after="yesterday")
    with pytest.raises(InvalidInputError):
        store.search("dated", updated_before="2026-13-45")
    assert len(store.list(created_after="2000-01-01")) == 1
    assert store.list(created_after="2999-01-01T00:00:00+02:00") == []
    with pytest.raises(InvalidInputError):
        store.list(limit=0)


def test_unreadable_record_reads_as_not_found_and_never_echoes_its_frontmatter(store):
    (store.records_dir / "broken.md").write_text("---\nscope: user\nuser_id: bob\ntitle: [oops secret-ish\n---\nbody\n")
    with pytest.raises(NotFoundError) as broken:
        store.get("broken", user_id="ada")
    with pytest.raises(NotFoundError) as absent:
        store.get("absent", user_id="ada")
    assert "oops" not in str(broken.value) and "bob" not in str(broken.value)
    assert str(broken.value).replace("broken", "X") == str(absent.value).replace("absent", "X")  # indistinguishable


@pytest.mark.parametrize("options", [{"engine": "whoosh"}, {"tokenizer": "nonsense"}, {"stop_words": "the a"}, {"snippet_lines": 0}])
def test_bad_options_fail_at_construction(tmp_path, options):
    with pytest.raises(InvalidInputError):
        MemoryStore(tmp_path / "m", **options)


def test_expired_records_are_invisible_before_the_sweep(store):
    gone = store.remember("Promo code SPRING expires soon", expires="2998-01-01")
    expire_by_hand(store, gone.id)
    live = store.remember("Promo code SUMMER is current", expires="2999-01-01")
    assert [h.id for h in store.search("promo code").hits] == [live.id]
    assert [r.id for r in store.list()] == [live.id]
    with pytest.raises(NotFoundError, match="expired"):
        store.get(gone.id)
    again = store.remember("Promo code SPRING expires soon")  # not a duplicate of an expired record
    assert again.status == "created" and again.id != gone.id
    assert store.sweep().expired == [gone.id]
