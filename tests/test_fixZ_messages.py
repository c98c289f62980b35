"""Messages a new user trips on (fixZ), through the CLI as a real subprocess and the API.

1. ``get ID`` of a forgotten record says it is archived and names ``restore``/``history`` — only to a caller who may
   see the archived record; any other miss says "no record … visible to this caller" with one fixed hint (namespaces,
   ``doctor``) that tells nothing about other partitions.
2. A secret given as an id is never echoed in the error (API, CLI; files and PostgreSQL through the CLI).
3. Counts read ``1 record`` / ``5 records`` (export, import, doctor); an unsupported feature names "the Postgres
   backend", not "the PostgresBackend backend".
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from _matrix import cli_env, fresh_database

from agent_memory import MemoryProvider
from agent_memory.errors import NotFoundError, UnsupportedError
from agent_memory.model.wording import NOT_FOUND_HINT, plural

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


@pytest.fixture(params=["files", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        from _pg import require_psycopg, server

        require_psycopg()
        return fresh_database(server().url)
    return str(tmp_path / "mem")


def am(root: str, *args: str, json_out: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", root, *args, *(["--json"] if json_out else [])],
        capture_output=True,
        text=True,
        timeout=180,
        env=cli_env(),
    )


def refused(root: str, *args: str) -> tuple[str, str]:
    """The error message of a failing command, and everything it printed."""
    proc = am(root, *args)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    error = json.loads(proc.stdout)["error"]
    assert error["type"] == "NotFoundError", error
    return str(error["message"]), proc.stdout + proc.stderr


# -- 2. a secret as an id -----------------------------------------------------------------------
def test_a_secret_given_as_an_id_is_never_echoed_cli(store: str) -> None:
    assert am(store, "remember", "Deploys happen on Fridays.").returncode == 0
    for args in (("get", SECRET), ("forget", SECRET), ("history", SECRET), ("restore", SECRET)):
        message, printed = refused(store, *args)
        assert SECRET not in printed and SECRET[4:] not in printed, (args, printed)  # was: no record 'ghp_…'
        assert message.startswith("no record"), message


@pytest.mark.parametrize("kind", ["files", "postgres"])
def test_a_secret_given_as_an_id_is_never_echoed_api(kind: str, tmp_path: Path) -> None:
    from _pg import make_target

    target = make_target(kind, tmp_path)

    async def run() -> list[str]:
        async with MemoryProvider(target.target, **target.options) as p:  # type: ignore[arg-type]
            await p.remember("Deploys happen on Fridays.")
            said = []
            for call in (p.get(SECRET), p.history(SECRET), p.restore(SECRET)):
                with pytest.raises(NotFoundError) as info:
                    await call
                said.append(str(info.value))
            return said

    for message in asyncio.run(run()):
        assert SECRET not in message and "no record" in message, message


# -- 1. why a get found nothing -------------------------------------------------------------------
def test_get_of_a_forgotten_record_says_archived_only_to_who_may_see_it(tmp_path: Path) -> None:
    root = str(tmp_path / "mem")
    mine = json.loads(am(root, "remember", "Ada's locker code is on the blue card.", "--user", "ada").stdout)["id"]
    assert am(root, "forget", mine, "--user", "ada").returncode == 0
    message, _ = refused(root, "get", mine, "--user", "ada")
    assert "archived" in message and f"agent-memory restore {mine}" in message and "history" in message, message
    hidden, _ = refused(root, "get", mine, "--user", "bob")  # bob never saw it: told nothing about the archive
    missing, _ = refused(root, "get", mine[:-1] + "0", "--user", "bob")
    assert "archived" not in hidden and "restore" not in hidden, hidden
    assert hidden.replace(mine, "ID") == missing.replace(mine[:-1] + "0", "ID")  # the same words as a missing id


def test_a_miss_names_namespaces_and_doctor_with_the_same_words(tmp_path: Path) -> None:
    root = str(tmp_path / "mem")
    nsid = json.loads(am(root, "remember", "Support rota is weekly.", "--namespace", "acme/support").stdout)["id"]
    assert json.loads(am(root, "get", nsid, "--namespace", "acme/support").stdout)["id"] == nsid
    in_namespace, _ = refused(root, "get", nsid)
    assert NOT_FOUND_HINT in in_namespace and "--namespace" in in_namespace, in_namespace
    bad = json.loads(am(root, "remember", "Parking is on level 2.").stdout)["id"]
    path = Path(root) / "records" / f"{bad}.md"
    path.write_text(path.read_text().replace("scope: project", "scope: [broken"))
    quarantined, _ = refused(root, "get", bad)
    assert "doctor" in quarantined, quarantined
    never, _ = refused(root, "get", "2026-01-01-nothing-here-00000000")
    words = {m.replace(i, "ID") for m, i in ((in_namespace, nsid), (quarantined, bad), (never, "2026-01-01-nothing-here-00000000"))}
    assert len(words) == 1, words  # one text: nothing about which partition, or which file, holds the id


# -- 3. wording -----------------------------------------------------------------------------------
def test_counts_are_singular_for_one(tmp_path: Path) -> None:
    root, copy, out = str(tmp_path / "mem"), str(tmp_path / "copy"), str(tmp_path / "out.jsonl")
    assert am(root, "remember", "Deploys happen on Fridays.").returncode == 0
    exported = am(root, "export", "--full", "--out", out, json_out=False)
    assert exported.stdout.startswith("exported 1 record, 1 event to "), exported.stdout  # was: 1 records, 1 event
    assert am(copy, "init").returncode == 0
    imported = am(copy, "import", out, json_out=False)
    assert imported.stdout.startswith("imported 1 record, 1 event from "), imported.stdout
    drafts = tmp_path / "d.jsonl"
    drafts.write_text('{"content": "Lunch is at noon."}\n')
    again = am(copy, "import", str(drafts), json_out=False)
    assert again.stdout.startswith("imported 1 record in "), again.stdout  # was: imported 1 records
    doctor = am(root, "doctor", json_out=False)
    assert doctor.stdout.startswith("ok: 1 file, 1 indexed"), doctor.stdout  # was: 1 files
    assert [plural(n, "record") for n in (0, 1, 2)] == ["0 records", "1 record", "2 records"]


def test_unsupported_names_the_backend_once() -> None:
    class PostgresBackend:
        pass

    assert str(UnsupportedError.of("provenance", PostgresBackend())) == "provenance: not supported on the Postgres backend"
    assert str(UnsupportedError.of("x", "Bare", "hint")) == "x: not supported on the Bare backend (hint)"


# -- docs that had drifted from the code and the measurements ---------------------------------------
def test_readme_states_what_the_code_and_benchmarks_say() -> None:
    import re

    from agent_memory.mcp._config import TOOL_SETS

    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    bench = (Path(__file__).parent.parent / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    said = re.search(r"Tools `read` \(([^)]*)\), `capture` \(\+ ([^)]*)\), `foreground` \(\+ ([^)]*)\)", readme)
    assert said is not None
    for group, listed in zip(TOOL_SETS, said.groups(), strict=True):
        assert {f"memory_{t.strip()}" for t in listed.split(",")} == set(TOOL_SETS[group]), group  # was: no links/curate
    cold = re.search(r"CLI cold hybrid \*\*([0-9.]+) s\*\* wall", bench)
    assert cold is not None and f"CLI cold hybrid at 100k {cold.group(1)} s" in readme  # was 0.62 against 0.67
    assert "`MissingExtraError: …" not in readme and "agent-memory: error: … needs the" in readme
    assert "on stdout" in readme.split("Errors are one line on stderr", 1)[1][:80]
