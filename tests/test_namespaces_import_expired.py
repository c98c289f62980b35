"""An expired record crosses backends as it is: stored, expired (invisible to every read), swept later.

PostgreSQL's import used to refuse a record whose ``expires`` had passed ("already expired") while the files
backend's import keeps it: an unswept expired record of a files export was lost going to PostgreSQL. Now both keep
it. files → PostgreSQL → files, from the API and from the CLI (a real subprocess), in a namespace.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _matrix import cli_env, fresh_database
from _pg import make_target

from agent_memory.portable import export_records, import_file

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

PAST = "2001-01-01T00:00:00.000000Z"
OLD = "The old VPN host is vpn-old-7."
LIVE = "The deploy window is Tuesday."


def _expire(path: Path, text: str) -> None:
    """The export with ``text``'s record expired (as an export taken after its expiry, before a sweep)."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        if data.get("content") == text:
            data["expires"] = PAST
        lines.append(json.dumps(data))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _exported(path: Path) -> dict[str, dict[str, Any]]:
    return {d["content"]: d for d in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if "content" in d}


async def _hidden(provider: Any) -> None:
    """Every read of the namespace's caller: the live record only."""
    assert [r.content for r in await provider.list()] == [LIVE]
    assert await provider.count() == 1
    assert (await provider.search("vpn")).hits == []


async def test_an_expired_record_goes_files_to_postgres_and_back(tmp_path: Path) -> None:
    first, pg, last = make_target("files", tmp_path), make_target("postgres", tmp_path), make_target("files", tmp_path)
    try:
        src = first.provider(namespace="acme")
        await src.remember(LIVE, scope="project")
        await src.remember(OLD, scope="project", expires="2099-01-01")
        out = tmp_path / "files.jsonl"
        export_records(src.backend, out)
        _expire(out, OLD)
        back = tmp_path / "restored-files.jsonl"
        assert len(import_file(last.provider().backend, out).written) == 2  # the files backend keeps it (as before)

        into = pg.provider()
        report = import_file(into.backend, out)
        assert sorted(report.written) and report.skipped == [], report.to_dict()["skips"]
        assert len(report.written) == 2
        rerun = import_file(into.backend, out)  # idempotent: the expired one is found though no read shows it
        assert rerun.written == [] and [s.reason for s in rerun.skipped] == ["exists", "exists"]
        await _hidden(pg.provider(namespace="acme"))
        pg_out = tmp_path / "pg.jsonl"
        export_records(into.backend, pg_out)  # the operator's export holds it, expired
        assert _exported(pg_out)[OLD]["expires"] == PAST and _exported(pg_out)[OLD].get("namespace") == "acme"

        again = make_target("files", tmp_path)
        try:
            assert len(import_file(again.provider().backend, pg_out).written) == 2
            await _hidden(again.provider(namespace="acme"))
            export_records(again.provider().backend, back)
            assert _exported(back)[OLD]["expires"] == PAST
            assert len((await again.provider().sweep()).expired) == 1
        finally:
            await again.close()
        assert len((await into.sweep()).expired) == 1  # swept later, as on files
        await _hidden(pg.provider(namespace="acme"))
    finally:
        for t in (first, pg, last):
            await t.close()


def cli(root: str, *args: str) -> Any:
    proc = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", root, *args, "--json"],
        capture_output=True,
        text=True,
        timeout=180,
        env=cli_env(),
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout) if proc.stdout.strip() else None


def test_cli_imports_an_expired_record_into_postgres_and_back(tmp_path: Path) -> None:
    from _pg import require_psycopg, server

    require_psycopg()
    files, url, files2 = str(tmp_path / "a"), fresh_database(server().url), str(tmp_path / "b")
    ns = ("--namespace", "acme")
    cli(files, "remember", LIVE, "--scope", "project", *ns)
    cli(files, "remember", OLD, "--scope", "project", "--expires", "2099-01-01", *ns)
    out, pg_out = tmp_path / "a.jsonl", tmp_path / "pg.jsonl"
    cli(files, "export", "--out", str(out))
    _expire(out, OLD)
    report = cli(url, "import", str(out))
    assert report["written"] == 2 and report["skipped"] == 0, report
    assert [r["content"] for r in cli(url, "list", *ns)["records"]] == [LIVE]
    assert cli(url, "search", "vpn", *ns)["hits"] == []
    cli(url, "export", "--out", str(pg_out))
    assert _exported(pg_out)[OLD]["expires"] == PAST
    assert cli(files2, "import", str(pg_out))["written"] == 2
    assert [r["content"] for r in cli(files2, "list", *ns)["records"]] == [LIVE]
