"""A big ``remember_many`` prepares its next batch in a worker process (issue 32): the same records, errors and
positions as preparing every batch in this process, nothing unredacted on disk, and any worker failure falls back
to preparing here."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import agent_memory.backends.files.prepare_worker as pw
from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import InvalidInputError
from agent_memory.model.drafts import KEEP_PAST_EXPIRES, MemoryDraft
from agent_memory.redaction import engine
from agent_memory.redaction.samples import SECRET_SAMPLES_BY_KIND

TOKEN = SECRET_SAMPLES_BY_KIND["github_token"][0]
BATCH = 20


def _drafts(n: int = 100) -> list[MemoryDraft]:
    out = []
    for i in range(n):
        if i % 17 == 5:
            out.append(MemoryDraft(content="   "))  # empty: refused
        elif i % 23 == 7:
            out.append(MemoryDraft(content=f"note {i}", scope="galaxy"))  # unknown scope: refused
        elif i % 11 == 3:
            out.append(MemoryDraft(content=f"The deploy token for box {i} is {TOKEN} keep it safe", title=f"deploy {TOKEN}"))
        else:
            out.append(MemoryDraft(content=f"Plain fact number {i} about the garden and the pears.", tags=("garden",), user_id="ada"))
    return out


@pytest.fixture
def used(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many batches a worker prepared (its answers the store took)."""
    seen: list[int] = []
    real = pw.DraftWorker.result

    def counting(self: pw.DraftWorker, expected: int) -> list[pw.Item] | None:
        out = real(self, expected)
        if out is not None:
            seen.append(expected)
        return out

    monkeypatch.setattr(pw.DraftWorker, "result", counting)
    yield seen


def _run(root: Path, drafts: list[MemoryDraft], on_error: str = "skip") -> tuple[list[tuple[str, str]], list[tuple[int, str]], MemoryStore]:
    store = MemoryStore(root, rescan_interval=None)
    errors: list[tuple[int, str]] = []
    res = store.remember_many(drafts, source="import", batch_size=BATCH, on_error=on_error, errors=errors)  # type: ignore[arg-type]
    return [(r.status, store.get(r.id, user_id="ada").content) for r in res], errors, store


def _files(root: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file() and p.suffix in (".md", ".jsonl"))


def test_the_worker_prepares_the_same_records_errors_and_positions(
    tmp_path: Path, used: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    drafts = _drafts()
    monkeypatch.setenv("AGENT_MEMORY_DRAFT_WORKER", "0")
    here, here_errors, _ = _run(tmp_path / "here", drafts)
    assert used == []
    monkeypatch.setenv("AGENT_MEMORY_DRAFT_WORKER", "1")
    there, there_errors, _ = _run(tmp_path / "there", drafts)
    assert len(used) == len(drafts) // BATCH - 1  # every batch after the first
    assert there == here and there_errors == here_errors
    assert [p for p, _ in here_errors] == [i for i, d in enumerate(drafts) if not d.content.strip() or d.scope == "galaxy"]
    assert TOKEN not in _files(tmp_path / "there") and "[REDACTED:" in _files(tmp_path / "there")


def test_an_error_in_a_worker_batch_raises_before_that_batch_is_written(
    tmp_path: Path, used: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_MEMORY_DRAFT_WORKER", "1")
    drafts = [MemoryDraft(content=f"Fact {i} of the orchard.") for i in range(100)]
    drafts[65] = MemoryDraft(content="bad", scope="galaxy")
    store = MemoryStore(tmp_path / "root", rescan_interval=None)
    with pytest.raises(InvalidInputError, match="unknown scope"):
        store.remember_many(drafts, source="import", batch_size=BATCH)
    assert used and store.count() == 60  # the three batches before it, none of its own


def test_the_minted_ids_cost_this_process_no_engine_pass(tmp_path: Path, used: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker sends the verdicts on the ids' stems with the records: this process checks only the first batch
    (prepared here while the worker starts)."""
    monkeypatch.setenv("AGENT_MEMORY_DRAFT_WORKER", "1")
    seen: list[str] = []
    real = engine.find_spans

    def counting(text: str, **kw: bool) -> list[tuple[int, int, str]]:
        seen.append(text)
        return real(text, **kw)

    monkeypatch.setattr(engine, "find_spans", counting)
    drafts = [MemoryDraft(content=f"Fact {i} of the orchard.", title=f"Orchard row {i} pruning plan weekly") for i in range(80)]
    res = MemoryStore(tmp_path / "root", rescan_interval=None).remember_many(drafts, source="import", batch_size=BATCH)
    assert len(used) == 3 and all(r.status == "created" for r in res)
    rows = {int(m.group(1)) for t in seen if (m := re.search(r"orchard.row.(\d+)", t))}
    assert rows == set(range(BATCH))  # the first batch's titles and ids only


def test_an_import_keeps_a_past_expiry_in_the_worker_too(tmp_path: Path, used: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_MEMORY_DRAFT_WORKER", "1")
    drafts = [MemoryDraft(content=f"Old fact {i}.", expires="2001-01-01") for i in range(60)]
    token = KEEP_PAST_EXPIRES.set(True)
    try:
        res = MemoryStore(tmp_path / "root", rescan_interval=None).remember_many(drafts, source="import", batch_size=BATCH)
    finally:
        KEEP_PAST_EXPIRES.reset(token)
    assert len(used) == 2 and [r.status for r in res] == ["created"] * 60


@pytest.mark.parametrize(
    "command",
    [
        ["-c", "raise SystemExit(3)"],  # dies at once
        ["-c", "import sys; sys.stdout.buffer.write(b'\\x00' * 8 + b'nonsense'); sys.stdout.flush()"],  # answers nonsense
        [
            "-c",
            "import pickle, struct, sys; d = pickle.dumps(('agent_memory', '/elsewhere/agent_memory/backends/files/prepare_worker.py'));"
            " sys.stdout.buffer.write(struct.pack('!Q', len(d)) + d); sys.stdout.flush(); sys.stdin.buffer.read()",
        ],  # another package
    ],
)
def test_a_failing_worker_falls_back_to_this_process(
    tmp_path: Path, used: list[int], monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    monkeypatch.setenv("AGENT_MEMORY_DRAFT_WORKER", "1")
    monkeypatch.setattr(pw, "COMMAND", command)
    drafts = _drafts(60)
    res = MemoryStore(tmp_path / "root", rescan_interval=None).remember_many(drafts, source="import", batch_size=BATCH, on_error="skip")
    assert used == []
    assert len(res) == len([d for d in drafts if d.content.strip() and d.scope != "galaxy"])
    assert TOKEN not in _files(tmp_path / "root")


def test_small_or_unsized_inputs_never_start_a_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_MEMORY_DRAFT_WORKER", raising=False)
    drafts = _drafts(10)
    assert not pw.wanted(drafts, 500)
    assert not pw.wanted(iter(_drafts(5000)), 500)  # a generator: its size is not known
    assert pw.wanted(_drafts(pw.MIN_DRAFTS), 500)
    monkeypatch.setenv("AGENT_MEMORY_DRAFT_WORKER", "0")
    assert not pw.wanted(_drafts(pw.MIN_DRAFTS), 500)


@pytest.mark.parametrize(("executable", "frozen"), [("/usr/bin/uwsgi", False), ("/opt/app/myapp", False), ("/usr/bin/python3", True)])
def test_a_host_that_is_not_a_python_interpreter_never_starts_a_worker(
    executable: str, frozen: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_MEMORY_DRAFT_WORKER", "1")
    assert pw.wanted(_drafts(pw.MIN_DRAFTS), 500)
    monkeypatch.setattr(pw.sys, "executable", executable)  # uWSGI, a frozen app: `-m` would not run this module
    if frozen:
        monkeypatch.setattr(pw.sys, "frozen", True, raising=False)
    assert not pw.wanted(_drafts(pw.MIN_DRAFTS), 500)


def test_the_worker_runs_this_package() -> None:
    import os
    import pickle
    import subprocess

    proc = subprocess.run([sys.executable, *pw.COMMAND], input=b"", capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    size = int.from_bytes(proc.stdout[:8], "big")
    assert pickle.loads(proc.stdout[8 : 8 + size]) == ("agent_memory", os.path.abspath(pw.__file__))


def test_an_iterator_is_read_on_only_after_its_batch_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a worker nothing is read ahead: a generator that watches the store (or fails) sees every earlier
    batch written."""
    monkeypatch.delenv("AGENT_MEMORY_DRAFT_WORKER", raising=False)
    store = MemoryStore(tmp_path / "root", rescan_interval=None)
    counts: list[int] = []

    def drafts() -> Iterator[MemoryDraft]:
        for i in range(BATCH):
            yield MemoryDraft(content=f"Fact {i} of the first batch.")
        counts.append(store.count())
        raise RuntimeError("the source broke")

    with pytest.raises(RuntimeError, match="the source broke"):
        store.remember_many(drafts(), source="import", batch_size=BATCH)
    assert counts == [BATCH] and store.count() == BATCH
