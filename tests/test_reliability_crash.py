"""Crash safety: a writer process SIGKILLed at random moments, round after round, on one root."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent_memory.backends.files.index import Index
from agent_memory.backends.files.store import MemoryStore
from agent_memory.formats.atomic import TMP_PREFIX

pytestmark = pytest.mark.promise("crash")

ROUNDS = 24

# Writes forever and acknowledges each completed write on stdout (one JSON line, flushed):
# new records (some up to ~900 kB so a kill often lands mid-write), appends to one key,
# replaces of another, batches through remember_many, and forgets.
WRITER = textwrap.dedent("""
    import json, random, sys
    from agent_memory.model.records import content_hash
    from agent_memory.backends.files.store import MemoryDraft, MemoryStore
    root, rnd, rebuild = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "rebuild"
    rng = random.Random(rnd)
    def ack(**kw):
        sys.stdout.write(json.dumps(kw) + "\\n"); sys.stdout.flush()
    if rebuild:  # report the rebuild's progress (one line per record file read) so the test can kill it midway
        from agent_memory.backends.files.index import Index
        _load_file = Index.load_file
        def load_file(self, name):
            loaded = _load_file(self, name)
            ack(op="loaded")
            return loaded
        Index.load_file = load_file
    store = MemoryStore(root)
    store.open()
    ack(op="ready")
    last = None
    i = 0
    while True:
        i += 1
        roll = rng.random()
        if roll < 0.15:
            line = f"crash line r{rnd} i{i}"
            r = store.remember(line, memory_key="crash-log", title="crash log")
            ack(op="append", id=r.id, line=line, status=r.status)
        elif roll < 0.22:
            text = f"replacement r{rnd} i{i}"
            r = store.remember(text, memory_key="crash-replace", on_existing="replace")
            ack(op="replace", id=r.id, hash=content_hash(text))
        elif roll < 0.30:
            drafts = [MemoryDraft(f"batch r{rnd} i{i} item {k} token bt{rnd}x{i}x{k}", tags=("batch",)) for k in range(15)]
            for d, r in zip(drafts, store.remember_many(drafts)):
                ack(op="create", id=r.id, hash=content_hash(d.content))
        elif roll < 0.35 and last is not None:
            ack(op="forgetting", id=last)  # a kill after this line may or may not have forgotten it
            ok = store.forget(last, session_id="s1")
            ack(op="forget", id=last, ok=ok)
            last = None
        else:
            size = rng.choice([0, 0, 0, 2_000, 200_000, 900_000])
            pad = ("lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]
            text = f"crash r{rnd} n{i} token cr{rnd}x{i}\\n{pad}".rstrip()
            r = store.remember(text, tags=["crash"], scope=rng.choice(["project", "session"]), session_id="s1")
            ack(op="create", id=r.id, hash=content_hash(text))
            last = r.id
""")


def _raw_frontmatter(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{path.name}: no frontmatter (partial file?)"
    header = text[4 : text.index("\n---\n")]
    return yaml.safe_load(header)


def _check_files(root: Path) -> tuple[dict[str, Any], int]:
    """Every visible record file is complete; returns (id -> record, number of orphaned temp files)."""
    idx = Index(root, lock=None)  # type: ignore[arg-type]  # load_file needs no lock
    records, temps = {}, 0
    for path in (root / "records").iterdir():
        if path.name.startswith(TMP_PREFIX):
            temps += 1
            assert not path.name.endswith(".md"), f"temp file named like a record: {path.name}"
            continue
        assert path.suffix == ".md" and not path.name.startswith("."), path.name
        assert path.stat().st_size > 0, f"empty record file {path.name}"
        rec, _, _ = idx.load_file(path.name)  # raises on a partial or garbled file
        assert rec.content.strip(), f"record {path.name} has no content"
        stored = _raw_frontmatter(path)
        assert stored["id"] == rec.id
        assert stored["content_hash"] == rec.content_hash, f"{path.name}: body does not match its hash (partial write)"
        records[rec.id] = rec
    return records, temps


def _acked(text: str) -> int:
    """The writes a writer's output acknowledges so far (complete lines only; ``ready`` and rebuild progress excluded)."""
    lines = text.split("\n")[:-1]  # the last piece is unfinished (or empty)
    return sum(1 for line in lines if '"op": "ready"' not in line and '"op": "loaded"' not in line)


@pytest.mark.slow
def test_sigkill_writer_at_random_moments(tmp_path: Path, reliability_figures: dict[str, Any]) -> None:
    """24 rounds: a writer is SIGKILLed at a random moment (some mid-rebuild); no partial/empty/temp record, every acknowledged write survives, next open repairs the index."""
    root = tmp_path / "mem"
    MemoryStore(root).close()
    rng = random.Random(20261122)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    acked_created: dict[str, str] = {}  # id -> content hash
    forgotten: set[str] = set()
    forgetting: set[str] = set()
    acked_lines: list[str] = []
    replace_hash: str | None = None
    drift_rounds = temps_seen = writes = kill_in_rebuild = 0
    for rnd in range(ROUNDS):
        rebuild = rnd % 6 == 5
        if rebuild:  # make the writer's open rebuild the whole index, and kill it during that
            for suffix in ("", "-wal", "-shm"):
                Path(f"{root}/index.db{suffix}").unlink(missing_ok=True)
        out_path = tmp_path / f"round{rnd}.out"
        # The kill point is chosen by the writer's progress, not by time (a loaded machine only makes it later):
        # a rebuild round dies after the writer's open has read a random number of the record files (at most all of
        # them: then in the rebuild's last steps, or at worst just after it); another round, once the writer has
        # acknowledged a random number of writes, so the kill lands in the next one (a little jitter varies where).
        if rebuild:
            on_disk = sum(1 for p in (root / "records").iterdir() if p.suffix == ".md" and not p.name.startswith("."))
            target, counted = rng.randint(1, max(1, on_disk)), '"op": "loaded"'
        else:
            target, counted = rng.randint(0, 30), '"op": "ready"'
        with open(out_path, "w") as out:
            mode = "rebuild" if rebuild else "write"
            proc = subprocess.Popen([sys.executable, "-c", WRITER, str(root), str(rnd), mode], stdout=out, stderr=subprocess.PIPE, env=env)
            deadline = time.monotonic() + 600  # only a hung writer is a failure, never a slow one
            while True:
                text = out_path.read_text()
                done = text.count(counted) >= target if rebuild else _acked(text) >= target and counted in text
                if done or (rebuild and '"op": "ready"' in text):
                    break
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "the writer exited"
                assert time.monotonic() < deadline, f"round {rnd}: the writer did not reach its kill point in 600 s"
                time.sleep(0.01)
            if rebuild:
                kill_in_rebuild += '"op": "ready"' not in text
            time.sleep(rng.uniform(0.0, 0.02))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode() if proc.stderr else ""
        for raw in out_path.read_text().splitlines():
            try:
                ev = json.loads(raw)
            except ValueError:  # the last line may be cut by the kill
                continue
            op = ev["op"]
            writes += op not in ("ready", "loaded")
            if op == "create":
                acked_created[ev["id"]] = ev["hash"]
            elif op == "append":
                acked_lines.append(ev["line"])
            elif op == "replace":
                replace_hash = ev["hash"]
            elif op == "forgetting":
                forgetting.add(ev["id"])
            elif op == "forget":
                assert ev["ok"], f"could not forget own record {ev['id']}"
                forgotten.add(ev["id"])
                acked_created.pop(ev["id"], None)

        # 1. on disk, before anything repairs it: only complete record files
        files, temps = _check_files(root)
        temps_seen += temps
        # 2. every acknowledged write survived the kill
        for rid in [r for r in forgetting if r not in files]:  # an unacknowledged forget that did happen
            acked_created.pop(rid, None)
            forgotten.add(rid)
        forgetting.clear()
        for rid, h in acked_created.items():
            assert rid in files, f"round {rnd}: acknowledged record {rid} lost"
            assert files[rid].content_hash == h
        assert not forgotten & set(files), "a forgotten record came back"
        logs = [r for r in files.values() if r.memory_key == "crash-log"]
        if acked_lines:
            assert len(logs) == 1
            held = logs[0].content.split("\n")
            assert all(held.count(line) == 1 for line in acked_lines), "acknowledged appended line lost or doubled"
        if replace_hash is not None:
            reps = [r for r in files.values() if r.memory_key == "crash-replace" and r.superseded_by is None]  # current
            assert len(reps) == 1
            # the last acknowledged replace, or a later one that completed without its ack
            assert reps[0].content_hash == replace_hash or reps[0].content.startswith("replacement r")
        # 3. the next open repairs the index: it agrees with the files and nothing else is visible
        store = MemoryStore(root)
        drift_rounds += not store.doctor().ok
        store.open()
        report = store.doctor()
        assert report.ok, (rnd, report.to_dict())
        listed = {r.id for r in store.list(limit=None, session_id="s1", include_superseded=True)}
        assert listed == set(files)
        assert not any(TMP_PREFIX in rid for rid in listed)
        if acked_created:
            rid = max(acked_created, key=lambda k: files[k].created)
            token = files[rid].content.split("token ")[1].split()[0]
            assert rid in [h.id for h in store.search(token, session_id="s1").hits]
        store.close()
        _, temps_after = _check_files(root)
        assert temps_after == 0, "orphaned temp files survive the repairing open"

    assert writes > ROUNDS * 5, "the writer barely wrote anything before being killed: the test is not testing"
    reliability_figures.update(
        rounds=ROUNDS,
        kills=ROUNDS,
        kills_during_rebuild=kill_in_rebuild,
        writes=writes,
        acknowledged_records=len(acked_created),
        acknowledged_appends=len(acked_lines),
        rounds_needing_repair=drift_rounds,
        orphan_temp_files_cleaned=temps_seen,
        failures=0,
    )
