"""Probe round 6 (fixJ): the import of our own export keeps the plain import's contract (stop at the first bad line,
nothing written, unless --skip-invalid), summarises a re-run, shows progress, and a Ctrl-C mid-batch of either
import reports a true count with `doctor` clean afterwards. Files and PostgreSQL, through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agent_memory.backends.files.store import MemoryStore
from agent_memory.model.drafts import MemoryDraft
from agent_memory.portable import export_records

ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def cli(root: object, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", str(root), *args], capture_output=True, text=True, env=env or ENV, timeout=180
    )


def _export(tmp_path: Path, n: int) -> Path:
    store = MemoryStore(tmp_path / "src")
    store.remember_many([MemoryDraft(content=f"exported fact number {i}", scope="project") for i in range(n)], source="import")
    out = tmp_path / "big.jsonl"
    export_records(store, out)
    store.close()
    return out


def _with_bad_lines(src: Path) -> Path:
    lines = src.read_text().splitlines()
    bad = src.with_name("bad.jsonl")
    lines.insert(3, "{this is not json")  # line 4
    lines.insert(5, json.dumps({"title": "no content here"}))  # line 6
    bad.write_text("\n".join(lines) + "\n")
    return bad


def _count(root: str) -> int:
    proc = cli(root, "list", "--json", "--limit", "1")
    assert proc.returncode == 0, proc.stderr
    return int(json.loads(proc.stdout)["total"])


@pytest.fixture(params=["files", "postgres"])
def root(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "files":
        return str(tmp_path / "dst")
    pytest.importorskip("psycopg")
    return str(request.getfixturevalue("fresh_db"))


from _pg import fresh_db, pg_url  # noqa: E402,F401  (pytest fixtures)


def test_export_import_stops_at_the_first_bad_line_and_writes_nothing(tmp_path: Path, root: str) -> None:
    bad = _with_bad_lines(_export(tmp_path, 8))
    proc = cli(root, "import", str(bad))
    assert proc.returncode == 1, proc.stdout  # the old code skipped both lines and exited 0
    assert f"{bad}: line 4: not JSON" in proc.stderr and "nothing imported" in proc.stderr and "--skip-invalid" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert _count(root) == 0  # nothing of the file was written
    proc = cli(root, "import", str(bad), "--skip-invalid")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"imported 8 records from {bad}") and "skipped 2: 2 invalid" in proc.stdout
    assert "skipped line 4: invalid: not JSON" in proc.stdout and "skipped line 6: invalid:" in proc.stdout
    assert _count(root) == 8


def test_a_re_import_summarises_its_skips(tmp_path: Path, root: str) -> None:
    src = _export(tmp_path, 12)
    assert cli(root, "import", str(src)).returncode == 0
    proc = cli(root, "import", str(src))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("imported 0 records") and "skipped 12: 12 exists" in proc.stdout
    assert proc.stdout.count("skipped line") == 3  # the old code printed one line per record
    assert "… and 9 more exists (--json lists every one)" in proc.stdout
    doc = json.loads(cli(root, "import", str(src), "--json").stdout)
    assert len(doc["skips"]) == 12


def test_export_import_draws_progress_in_a_terminal(tmp_path: Path) -> None:
    from test_cli_progress import run_with_terminal_stderr

    src = _export(tmp_path, 30)
    cmd = [sys.executable, "-m", "agent_memory.cli", "--root", str(tmp_path / "dst"), "import", str(src)]
    code, out, shown = run_with_terminal_stderr(cmd)
    assert code == 0 and out.startswith("imported 30 records"), out
    assert "importing" in shown and "31/31" in shown  # the header and 30 records (the old code drew nothing)


def _interrupting(script: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess with a Ctrl-C raised mid-batch by ``script`` (deterministic, unlike a timed SIGINT)."""
    code = textwrap.dedent(script) + f"\nimport sys\nfrom agent_memory.cli import main\nsys.exit(main({list(argv)!r}))\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=180)


def test_ctrl_c_mid_batch_of_a_plain_import_counts_true_and_leaves_doctor_clean(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"content": f"imported fact number {i}"}) + "\n" for i in range(150)))
    root = tmp_path / "m"
    # chunks of 1, 10, 100 are written whole; the next (39 records) is cut after 20 of its files are linked
    proc = _interrupting(
        """
        import agent_memory.backends.files.keyed as keyed
        real, calls = keyed.remember_locked, [0]
        def cut(*a, **k):
            calls[0] += 1
            if calls[0] == 111 + 21:
                raise KeyboardInterrupt
            return real(*a, **k)
        keyed.remember_locked = cut
        """,
        "--root",
        str(root),
        "import",
        str(src),
    )
    assert proc.returncode == 130, proc.stderr
    msg = proc.stderr.strip().splitlines()[-1]
    files = len(list((root / "records").glob("*.md")))
    assert files == 131  # the interrupted batch's files are on disk (its index rows rolled back)
    assert f"interrupted: {files} of 150 records from {src} were written" in msg, msg  # the old code said 111
    assert "20 of them from the batch being written" in msg
    listed = [line for line in (root / "MEMORY.md").read_text().splitlines() if line.startswith("- [")]
    assert len(listed) == files  # MEMORY.md lists the records indexed after the interrupt too
    doctor = cli(root, "doctor")
    assert doctor.returncode == 0 and doctor.stdout.startswith(f"ok: {files} files, {files} indexed"), doctor.stdout
    rerun = cli(root, "import", str(src), "--json")
    assert rerun.returncode == 0 and json.loads(rerun.stdout)["statuses"] == {"created": 150 - files, "duplicate": files}


def test_ctrl_c_mid_batch_of_an_export_import_rolls_the_batch_back_and_says_what_was_written(tmp_path: Path) -> None:
    src = _export(tmp_path, 15)  # two batches of 10 and 5 lines (batches made small below)
    root = tmp_path / "dst"
    proc = _interrupting(
        """
        import agent_memory.portable._write as w
        import agent_memory.portable.restore as r
        r.batch_size = lambda target: 10
        real, calls = w.atomic_write, [0]
        def cut(*a, **k):
            calls[0] += 1
            if calls[0] == 10 + 3:
                raise KeyboardInterrupt
            return real(*a, **k)
        w.atomic_write = cut
        """,
        "--root",
        str(root),
        "import",
        str(src),
    )
    assert proc.returncode == 130, proc.stderr
    msg = proc.stderr.strip().splitlines()[-1]
    assert msg.startswith(f"agent-memory: error: interrupted: 10 records from {src} were written"), msg  # old: "interrupted"
    assert len(list((root / "records").glob("*.md"))) == 10  # the second batch is rolled back whole
    doctor = cli(root, "doctor")
    assert doctor.returncode == 0 and doctor.stdout.startswith("ok: 10 files, 10 indexed"), doctor.stdout
    rerun = cli(root, "import", str(src))
    assert rerun.returncode == 0 and rerun.stdout.startswith("imported 5 records"), rerun.stdout
