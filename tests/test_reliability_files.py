"""Hostile and hand-edited record files: quarantine, safe frontmatter, owners never fail open, UTC expiry,
atomic reindex, typed storage errors, read-only roots, size caps, links, odd names, forget leaves no terms."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from agent_memory.agents.core_block import inject
from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import AgentMemoryError, NotFoundError, ReadOnlyError, StorageError
from agent_memory.formats.atomic import ensure_dir
from agent_memory.model.records import RecordParseError, parse_record

pytestmark = pytest.mark.promise("selfheal")
SECRET = "plutoniumkoala"  # the token a quarantined or private file holds; no caller may ever see it


def _store(root: Path, **kw: Any) -> MemoryStore:
    return MemoryStore(root, durable=False, **kw)


def _everything_visible(store: MemoryStore, user_id: str | None = None, session_id: str | None = None, memory_md: bool = True) -> str:
    """Every read a caller has, joined: search, list, inject and (unless told not to) MEMORY.md."""
    hits = store.search(f"{SECRET} koala", user_id=user_id, session_id=session_id, limit=50).hits
    listed = store.list(user_id=user_id, session_id=session_id, limit=None)
    block = inject(store, 5000, user_id=user_id, session_id=session_id)
    return " ".join(
        [
            *(h.snippet + h.id for h in hits),
            *(r.content for r in listed),
            str(block.to_dict()),
            (store.root / "MEMORY.md").read_text() if memory_md else "",
        ]
    )


MALFORMED = {
    "tags-int": "---\ntags: 2024\n---\n",
    "tags-bool": "---\ntags: true\n---\n",
    "tags-float": "---\ntags: 1.5\n---\n",
    "tags-nested": "---\ntags: [[a]]\n---\n",
    "importance-400-digits": "---\nimportance: " + "9" * 400 + "\n---\n",
    "importance-5000-digits": "---\nimportance: " + "9" * 5000 + "\n---\n",
    "importance-nan": "---\nimportance: .nan\n---\n",
    "importance-inf": "---\nimportance: .inf\n---\n",
    "importance-text": "---\nimportance: high\n---\n",
    "nested-deep-flow": "---\nx: " + "[" * 5000 + "]" * 5000 + "\n---\n",
    "nested-deep-json": '---\n{"x": ' + "[" * 100000 + "]" * 100000 + "}\n---\n",
    "nested-deep-block": "---\n" + "".join(" " * i + f"k{i}:\n" for i in range(200)) + "---\n",
    "scope-unknown": "---\nscope: plutoniumkoala\n---\n",  # the error never echoes the value
    "scope-list": "---\nscope: [user]\n---\n",
    "user-scope-without-user": "---\nscope: user\n---\n",
    "owner-without-scope": "---\nuser_id: bob\n---\n",
    "session-owner-without-scope": "---\nsession_id: chat-1\n---\n",
    "user-id-list": "---\nscope: user\nuser_id: [bob]\n---\n",
    "title-mapping": "---\ntitle: {a: b}\n---\n",
    "kind-int": "---\nkind: 5\n---\n",
    "expires-garbage": "---\nexpires: next tuesday\n---\n",
    "created-list": "---\ncreated: [2024]\n---\n",
    "metadata-list": "---\nmetadata: [1, 2]\n---\n",
    "metadata-nan": "---\nmetadata: {x: .nan}\n---\n",
    "memory-key-path": "---\nmemory_key: ../../etc\n---\n",
    "duplicate-scope-keys": "---\nscope: project\nScope: user\nuser_id: bob\n---\n",
    "yaml-tag": "---\ntitle: !!python/object/apply:os.system ['echo pwned']\n---\n",
    "yaml-custom-tag": "---\ntitle: !secret x\n---\n",
    "yaml-anchor": "---\na: &x 1\nb: *x\n---\n",
    "yaml-merge-key-alias": "---\nbase: &b {scope: user}\n<<: *b\n---\n",
    "unclosed": "---\ntitle: x\n",
    "toml-broken": "+++\ntitle = \n+++\n",
    "owner-outside-frontmatter": "scope: user\nuser_id: bob\n\n",
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_record_file_is_quarantined_from_every_read(tmp_path: Path, case: str, reliability_figures: dict[str, Any]) -> None:
    """A malformed record file (wrong types, huge numbers, NaN, deep nesting, unknown scope, YAML tags/anchors, owner without scope) is excluded from search, list, get, inject and MEMORY.md, named by doctor with a fix, and never crashes anything."""
    store = _store(tmp_path / "mem")
    store.remember("a healthy koala record")
    text = MALFORMED[case]
    path = store.records_dir / "bad-file.md"
    path.write_text(text + f"The {SECRET} secret lives here.\n", encoding="utf-8")
    seen = _everything_visible(store) + _everything_visible(store, user_id="bob", session_id="chat-1")
    assert SECRET not in seen
    assert "healthy koala" in seen  # the rest of the store is served
    with pytest.raises(AgentMemoryError) as info:  # typed, and never the file's text
        store.get("bad-file", user_id="bob", session_id="chat-1")
    assert SECRET not in str(info.value)
    report = store.doctor()
    assert "bad-file.md" in report.problems and "fix:" in report.problems["bad-file.md"], report.problems
    assert not report.ok
    rebuilt = store.reindex()
    assert "bad-file.md" in rebuilt.problems
    assert store.count() == 1
    assert not (tmp_path / "pwned").exists()
    reliability_figures.update(generated_cases=1, failures=0)


def _bomb() -> str:
    levels = ["a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol,lol]"]
    for i in range(1, 9):
        p, c = chr(96 + i), chr(97 + i)
        levels.append(f"{c}: &{c} [" + ",".join(f"*{p}" for _ in range(10)) + "]")
    head = "\n".join(levels)
    return "---\n" + head + "\n#" + "x" * (439 - len(head) - len("---\n") - len("\n#") - len("\n---\nbody")) + "\n---\nbody"


def test_yaml_alias_bomb_is_refused_in_milliseconds_with_bounded_memory(tmp_path: Path, reliability_figures: dict[str, Any]) -> None:
    """A 439-byte YAML alias bomb (10^9 expansions) is refused before expansion: milliseconds, under 1 MB, no index bloat."""
    bomb = _bomb()
    assert len(bomb.encode()) == 439
    tracemalloc.start()
    start = time.perf_counter()
    with pytest.raises(RecordParseError, match="anchor|alias"):
        parse_record(bomb, "bomb")
    elapsed = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert elapsed < 0.05 and peak < 1_000_000, (elapsed, peak)
    store = _store(tmp_path / "mem")
    (store.records_dir / "bomb.md").write_text(bomb)
    start = time.perf_counter()
    assert store.search("lol").hits == []
    assert time.perf_counter() - start < 2.0
    assert "bomb.md" in store.doctor().problems
    assert (store.root / "index.db").stat().st_size < 1_000_000
    reliability_figures.update(bomb_ms=round(elapsed * 1000, 2), bomb_peak_bytes=peak, failures=0)


PRIVATE = {
    "plain": "---\nscope: user\nuser_id: bob\n---\n{body}\n",
    "bom": "\ufeff---\nscope: user\nuser_id: bob\n---\n{body}\n",
    "trailing-space-after-fence": "--- \nscope: user\nuser_id: bob\n---  \n{body}\n",
    "blank-line-before": "\n\n---\nscope: user\nuser_id: bob\n---\n{body}\n",
    "crlf": "---\r\nscope: user\r\nuser_id: bob\r\n---\r\n{body}\r\n",
    "cr-only": "---\rscope: user\ruser_id: bob\r---\r{body}\r",
    "bom-crlf-blank": "\ufeff\r\n---  \r\nscope: user\r\nuser_id: bob\r\n---\r\n{body}\r\n",
    "toml": '+++\nscope = "user"\nuser_id = "bob"\n+++\n{body}\n',
    "json-braces": '{{\n"scope": "user", "user_id": "bob"\n}}\n{body}\n',
    "json-in-fences": '---\n{{"scope": "user", "user_id": "bob"}}\n---\n{body}\n',
    "scope-capitalised": "---\nScope: user\nUser_ID: bob\n---\n{body}\n",
    "scope-upper-value": "---\nscope: USER\nuser_id: bob\n---\n{body}\n",
    "camel-case": "---\nscope: user\nuserId: bob\n---\n{body}\n",
    "user-id-without-scope": "---\nuser_id: bob\n---\n{body}\n",
    "session-without-scope": "---\nsession_id: chat-1\nuser_id: bob\n---\n{body}\n",
    "mixed-line-ends": "---\nscope: user\ruser_id: bob\r---\r{body}\n",
    "tab-after-fence": "---\t\nscope: user\nuser_id: bob\n---\n{body}\n",
}


@pytest.mark.parametrize("case", list(PRIVATE))
def test_hand_edited_private_record_never_fails_open_to_shared(tmp_path: Path, case: str, reliability_figures: dict[str, Any]) -> None:
    """A hand-written file naming user bob (BOM, trailing spaces, blank lines, CRLF, CR, TOML, JSON, capitalised keys, owner without scope) is bob's or quarantined: never shown to another user, to no user, or in MEMORY.md."""
    store = _store(tmp_path / "mem")
    store.remember("a shared koala record")
    raw = PRIVATE[case].format(body=f"bob's {SECRET} note")
    (store.records_dir / "private-note.md").write_bytes(raw.encode("utf-8"))
    callers: list[dict[str, Any]] = [{}, {"user_id": "alice"}, {"user_id": "alice", "session_id": "chat-1"}]
    for caller in callers:
        assert SECRET not in _everything_visible(store, **caller), (case, caller)
        with pytest.raises(AgentMemoryError):
            store.get("private-note", **caller)
    bobs = _everything_visible(store, user_id="bob")
    quarantined = "private-note.md" in store.doctor().problems
    assert (SECRET in bobs) != quarantined, (case, quarantined)
    if case not in ("user-id-without-scope", "session-without-scope", "mixed-line-ends"):
        assert not quarantined and store.get("private-note", user_id="bob").content == f"bob's {SECRET} note"
    reliability_figures.update(generated_cases=1, failures=0)


@pytest.mark.parametrize("offset", ["+05:00", "-05:00"])
def test_expiry_with_an_offset_is_compared_as_one_utc_instant(tmp_path: Path, offset: str) -> None:
    """`expires` with +05:00/-05:00 offsets: stored in the index as normalised UTC, so an expired record is hidden and a live one shown by search, list and count (text comparison got both wrong)."""
    store = _store(tmp_path / "mem")
    hours = int(offset[:3])
    tz = dt.timezone(dt.timedelta(hours=hours))
    now = dt.datetime.now(dt.UTC)
    # as text, the local form sorts on the wrong side of "now" in UTC: expired-but-looks-live and vice versa
    expired = (now - dt.timedelta(hours=1)).astimezone(tz).isoformat()
    live = (now + dt.timedelta(hours=1)).astimezone(tz).isoformat()
    gone = store.remember("expired koala walnut", expires=live)  # a past expiry is refused on write, so the
    path = Path(gone.path)  # expired one comes from a hand edit
    text = path.read_text(encoding="utf-8")
    path.write_text(re.sub(r"(?m)^expires: .*$", f"expires: '{expired}'", text), encoding="utf-8")
    kept = store.remember("live koala chestnut", expires=live)
    store.close()
    store = _store(tmp_path / "mem")  # a fresh open scans every file (the hand edit included)
    ids = {h.id for h in store.search("koala walnut chestnut").hits}
    assert ids == {kept.id}
    assert [r.id for r in store.list()] == [kept.id] and store.count() == 1
    with pytest.raises(NotFoundError):
        store.get(gone.id)
    rows = dict(store.index.conn.execute("SELECT id, expires FROM records").fetchall())
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", v) for v in rows.values()), rows


def _populated(root: Path, n: int) -> MemoryStore:
    store = _store(root)
    from agent_memory import MemoryDraft

    store.remember_many([MemoryDraft(f"reindex koala fact number {i} with filler words {i % 17}") for i in range(n)])
    return store


def test_reindex_never_shows_a_concurrent_reader_an_empty_index(tmp_path: Path, reliability_figures: dict[str, Any]) -> None:
    """While reindex runs (three times), a reader thread with its own store searching in a loop never gets an empty or partial result."""
    root = tmp_path / "mem"
    writer = _populated(root, 1500)
    reader = _store(root, rescan_interval=None)
    assert len(reader.search("koala", limit=1000).hits) == 1000
    stop = threading.Event()
    counts = {"searches": 0, "short": 0}

    def read() -> None:
        while not stop.is_set():
            n = reader.count()
            hits = reader.search("koala", limit=5).hits
            counts["searches"] += 1
            if n != 1500 or len(hits) != 5:
                counts["short"] += 1

    thread = threading.Thread(target=read)
    thread.start()
    try:
        for _ in range(3):
            report = writer.reindex()
            assert report.added == 1500
    finally:
        stop.set()
        thread.join()
    assert counts["searches"] > 0 and counts["short"] == 0, counts
    reliability_figures.update(rounds=3, searches=counts["searches"], failures=counts["short"])


def test_killed_reindex_leaves_readers_served_and_is_cleaned_up(tmp_path: Path, reliability_figures: dict[str, Any]) -> None:
    """A reindex SIGKILLed midway leaves the live index whole for readers, and its temp database is removed on the next sync."""
    root = tmp_path / "mem"
    _populated(root, 3000).close()
    script = f"from agent_memory.backends.files.store import MemoryStore\ns = MemoryStore({str(root)!r}, durable=False)\ns.open()\nprint('go', flush=True)\nwhile True:\n    s.reindex()\n"
    kills = 0
    for delay in (0.2, 0.5, 0.9):
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"go"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
        reader = _store(root, rescan_interval=None)
        assert reader.count() == 3000 and len(reader.search("koala", limit=20).hits) == 20
        reader.close()
    assert any(".rebuild-" in n for n in os.listdir(root)) or True  # may or may not be mid-build at the kill
    store = _store(root)
    store.remember("one more koala")
    assert not any(".rebuild-" in n for n in os.listdir(root))
    assert store.count() == 3001
    reliability_figures.update(kills=kills, failures=0)


def _unshare_available() -> bool:
    if not shutil.which("unshare") or os.geteuid() != 0:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt && umount /mnt"], capture_output=True)
    return probe.returncode == 0


needs_mounts = pytest.mark.skipif(not _unshare_available(), reason="needs root and mount namespaces (unshare -m)")

RO_SCRIPT = textwrap.dedent("""
    import json, sys
    from agent_memory.backends.files.store import MemoryStore
    from agent_memory.errors import AgentMemoryError
    out = {}
    s = MemoryStore(sys.argv[1])
    out["search"] = [h.id for h in s.search("koala").hits]
    out["list"] = len(s.list(limit=None))
    out["get"] = s.get(out["search"][0]).content if out["search"] else None
    out["doctor_ok"] = s.doctor().ok
    for name, call in (("remember", lambda: s.remember("new koala")), ("reindex", s.reindex), ("forget", lambda: s.forget(out["search"][0]))):
        try:
            call()
            out[name] = "no error"
        except AgentMemoryError as exc:
            out[name] = type(exc).__name__
        except Exception as exc:
            out[name] = "UNTYPED " + type(exc).__name__ + ": " + str(exc)
    print(json.dumps(out))
""")


@needs_mounts
@pytest.mark.parametrize("with_index", [True, False])
def test_reads_work_from_a_read_only_mounted_root(tmp_path: Path, with_index: bool, reliability_figures: dict[str, Any]) -> None:
    """A root on a read-only bind mount (with or without an index.db, and with a file added behind the index): search, list, get and doctor work; writes raise ReadOnlyError."""
    src = tmp_path / "src"
    store = _store(src)
    for i in range(5):
        store.remember(f"koala fact {i}")
    store.close()
    if not with_index:
        for name in os.listdir(src):
            if name.startswith("index.db"):
                os.unlink(src / name)
    (src / "records" / "added-by-hand.md").write_text("---\ntitle: hand\n---\nkoala added by hand\n")
    ro = tmp_path / "ro"
    ro.mkdir()
    script = tmp_path / "ro_check.py"
    script.write_text(RO_SCRIPT)
    cmd = f"mount --bind {src} {ro} && mount -o remount,bind,ro {ro} && {sys.executable} {script} {ro}"
    res = subprocess.run(["unshare", "-m", "sh", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert len(out["search"]) == 6 and "added-by-hand" in out["search"] and out["list"] == 6, out
    assert out["get"] and "koala" in out["get"] and out["doctor_ok"] in (True, False)
    assert out["remember"] == "ReadOnlyError" and out["reindex"] == "ReadOnlyError" and out["forget"] == "ReadOnlyError", out
    reliability_figures.update(failures=0)


def test_read_only_option_serves_reads_from_an_in_memory_index(tmp_path: Path) -> None:
    """An index opened read_only never writes the root: reads come from an in-memory copy, writes raise ReadOnlyError."""
    root = tmp_path / "mem"
    store = _store(root)
    store.remember("koala in the index")
    store.close()
    before = {p.name: p.stat().st_mtime_ns for p in root.iterdir()}
    (root / "records" / "late.md").write_text("koala added later\n")
    ro = _store(root)
    ro.index.read_only = True
    assert {h.snippet for h in ro.search("koala").hits} == {"koala in the index", "koala added later"}
    with pytest.raises(ReadOnlyError):
        ro.remember("refused")
    after = {p.name: p.stat().st_mtime_ns for p in root.iterdir() if p.name != "records"}
    assert after == {k: v for k, v in before.items() if k != "records"}


FULL_SCRIPT = textwrap.dedent("""
    import json, os, sys
    from agent_memory.backends.files.store import MemoryStore
    from agent_memory.errors import AgentMemoryError
    s = MemoryStore(sys.argv[1])
    for i in range(3):
        s.remember(f"koala fact {i}")
    with open(os.path.join(sys.argv[1], "filler"), "wb") as fh:  # fill the disk
        try:
            while True:
                fh.write(b"x" * 65536)
                fh.flush()
        except OSError:
            pass
    out = {}
    try:
        s.remember("koala " + "big " * 20000)
        out["remember"] = "no error"
    except AgentMemoryError as exc:
        out["remember"] = type(exc).__name__ + ": " + str(exc)
    except Exception as exc:
        out["remember"] = "UNTYPED " + type(exc).__name__ + ": " + str(exc)
    out["search"] = len(MemoryStore(sys.argv[1]).search("koala").hits)
    print(json.dumps(out))
""")


@needs_mounts
def test_full_disk_gives_a_typed_storage_error_and_reads_keep_working(tmp_path: Path, reliability_figures: dict[str, Any]) -> None:
    """On a full file system a write raises StorageError (never sqlite3.OperationalError or OSError) and search still answers."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    script = tmp_path / "full_check.py"
    script.write_text(FULL_SCRIPT)
    cmd = f"mount -t tmpfs -o size=2m tmpfs {mnt} && {sys.executable} {script} {mnt}/mem"
    res = subprocess.run(["unshare", "-m", "sh", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["remember"].startswith("StorageError") and "full" in out["remember"], out
    assert out["search"] == 3, out
    reliability_figures.update(failures=0)


def test_new_files_and_directories_are_private(tmp_path: Path) -> None:
    """Record files, MEMORY.md, index.db and the lock are 0600; directories made by ensure_dir and the index are 0700."""
    store = _store(tmp_path / "mem")
    r = store.remember("private koala")
    for path in (Path(r.path), store.root / "MEMORY.md", store.root / "index.db", store.root / ".lock"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    fresh = ensure_dir(tmp_path / "new-root")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o700
    from agent_memory.backends.files.index import Index
    from agent_memory.formats.atomic import RootLock

    idx = Index(tmp_path / "bare", RootLock(tmp_path / "lockfile"))
    idx.count()
    assert stat.S_IMODE((tmp_path / "bare").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "bare" / "records").stat().st_mode) == 0o700


def test_oversize_hand_dropped_file_is_quarantined_and_never_slows_search(tmp_path: Path) -> None:
    """A 5 MB hand-dropped record is quarantined (not indexed, named by doctor) and a search stays fast."""
    store = _store(tmp_path / "mem")
    store.remember("small koala")
    (store.records_dir / "huge.md").write_text(f"{SECRET} koala " * 300_000)
    start = time.perf_counter()
    hits = store.search("koala").hits
    assert [h.snippet for h in hits] == ["small koala"]
    assert time.perf_counter() - start < 2.0
    start = time.perf_counter()
    for _ in range(20):
        store.search("koala")
    assert (time.perf_counter() - start) / 20 < 0.05
    assert "huge.md" in store.doctor().problems and "bytes" in store.doctor().problems["huge.md"]


@pytest.mark.parametrize("folder", ["records", "archive"])
def test_symlinked_records_or_archive_directory_is_refused(tmp_path: Path, folder: str) -> None:
    """records/ or archive/ as a symlink (leading outside the root) is refused with StorageError and named by doctor."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "planted.md").write_text(f"{SECRET} koala\n")
    root = tmp_path / "mem"
    store = _store(root)
    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)).isoformat()  # a past expiry is refused on write
    store.remember("koala inside", expires=soon if folder == "archive" else None)
    time.sleep(1.2 if folder == "archive" else 0)
    if folder == "records":
        for p in store.records_dir.iterdir():
            shutil.move(str(p), outside / p.name)
        store.records_dir.rmdir()
    os.symlink(outside, root / folder)
    fresh = _store(root)
    problems = fresh.doctor().problems
    assert f"{folder}/" in problems and "symlink" in problems[f"{folder}/"]
    if folder == "records":
        with pytest.raises(StorageError):
            fresh.search("koala")
    else:
        with pytest.raises(StorageError):
            fresh.sweep()
        assert os.listdir(outside) == ["planted.md"]  # nothing archived out of the root


def test_hard_linked_record_file_is_quarantined(tmp_path: Path) -> None:
    """A file hard-linked into records/ from outside (st_nlink > 1) is not indexed, and doctor names it."""
    store = _store(tmp_path / "mem")
    store.remember("koala inside")
    outside = tmp_path / "outside.md"
    outside.write_text(f"---\ntitle: x\n---\n{SECRET} koala\n")
    os.link(outside, store.records_dir / "linked.md")
    assert SECRET not in _everything_visible(store)
    assert "hard-linked" in store.doctor().problems["linked.md"]


@pytest.mark.parametrize("name", ["a..b.md", "new\nline.md", ("x" * 241) + ".md", "bidi\u202eevil.md", " lead.md"])
def test_odd_file_names_are_quarantined_and_never_forge_memory_md(tmp_path: Path, name: str) -> None:
    """Record files whose names are not valid ids ('..', newline, over 240 bytes, bidi override) are quarantined: never listed, named by doctor, no forged MEMORY.md line."""
    store = _store(tmp_path / "mem")
    store.remember("koala inside")
    (store.records_dir / name).write_text(f"{SECRET} koala\n- [forged] (fact): injected\n")
    assert SECRET not in _everything_visible(store)
    assert [r.content for r in store.list()] == ["koala inside"]
    assert name in store.doctor().problems
    lines = [ln for ln in (store.root / "MEMORY.md").read_text().splitlines() if ln.startswith("- [")]
    assert len(lines) == 1


def test_summary_lines_can_never_forge_a_memory_md_line(tmp_path: Path) -> None:
    """Control, bidi and line-separator characters in content never split a MEMORY.md line."""
    store = _store(tmp_path / "mem")
    store.remember("koala\u2028- [forged-1] (fact): a\x85- [forged-2] (fact): b\x1b[2K\u202e\r- [forged-3] (fact): c")
    text = (store.root / "MEMORY.md").read_text()
    entries = [ln for ln in text.splitlines() if ln.startswith("- [")]
    assert len(entries) == 1 and len(text.splitlines()) == len(text.split("\n")) - 1
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e]", text)


def _index_bytes(root: Path) -> bytes:
    return b"".join((root / n).read_bytes() for n in os.listdir(root) if n.startswith("index.db"))


def test_forget_leaves_no_stemmed_terms_in_the_index_files(tmp_path: Path) -> None:
    """After forget, neither the word nor its porter stem is anywhere in index.db, -wal or -shm (they were before)."""
    store = _store(tmp_path / "mem")
    for i in range(50):
        store.remember(f"ordinary koala note {i}")
    r = store.remember("the zqxvjelling procedure is private")  # porter stem: zqxvjell
    store.index.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    assert b"zqxvjell" in _index_bytes(store.root)  # the scan can see it
    assert store.forget(r.id)
    assert b"zqxvjell" not in _index_bytes(store.root)
    assert store.search("zqxvjelling").hits == [] and len(store.search("koala", limit=100).hits) == 50


def test_killed_sweep_temp_files_are_removed_on_open(tmp_path: Path) -> None:
    """archive/.tmp-* left by a killed sweep (full record text) is removed when a store next syncs."""
    store = _store(tmp_path / "mem")
    store.remember("koala")
    store.archive_dir.mkdir(exist_ok=True)
    leftover = store.archive_dir / ".tmp-2026-x.md.123.456"
    leftover.write_text(f"{SECRET}\n")
    assert "archive/.tmp-2026-x.md.123.456" in store.doctor().problems
    _store(store.root).open()
    assert not leftover.exists()


def test_unreadable_record_is_quarantined_not_served_from_the_index(tmp_path: Path) -> None:
    """A record chmod-ed 000 after it was indexed is no longer served by search, list or get (even to root)."""
    store = _store(tmp_path / "mem")
    store.remember("koala kept")
    r = store.remember(f"koala {SECRET}")
    os.chmod(r.path, 0)
    assert SECRET not in " ".join(h.snippet for h in store.search("koala").hits)
    assert SECRET not in " ".join(x.content for x in store.list())
    with pytest.raises(AgentMemoryError):
        store.get(r.id)
    assert "not readable" in store.doctor().problems[Path(r.path).name]
    fresh = _store(store.root)
    assert SECRET not in _everything_visible(fresh, memory_md=False)
    fresh.remember("another koala")  # MEMORY.md is rewritten by the next write (or by Index.on_change)
    assert SECRET not in (store.root / "MEMORY.md").read_text()


def test_on_change_hook_runs_when_a_sync_drops_a_row(tmp_path: Path) -> None:
    """Index.on_change runs after a sync quarantines or drops rows (the store uses it to rewrite MEMORY.md), not on no-op syncs."""
    store = _store(tmp_path / "mem")
    r = store.remember("koala to be broken")
    calls: list[int] = []
    store.index.on_change = lambda: calls.append(1)
    store.index.refresh(force=True)
    assert calls == []
    Path(r.path).write_text("---\ntags: 2024\n---\nbroken\n")
    store.index.refresh(force=True)
    assert calls == [1] and store.count() == 0
