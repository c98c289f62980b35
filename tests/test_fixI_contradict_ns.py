"""Probe round 6, finding 4: the contradiction notice of ``remember`` suggested ``--supersede`` for a record the
caller cannot supersede (an ancestor namespace's, a shared one seen from a user's write), and ``--supersede``
without an id picked it and failed. Only records of the write's own partition and namespace are suggested or
picked; another visible one is still named, without the impossible action."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _doubles import cli_json as cli
from _doubles import cli_target

_target = cli_target


def remember(target: str, *args: str) -> tuple[int, dict, str]:
    out = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", target, "--json", "remember", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return out.returncode, json.loads(out.stdout), out.stderr


@pytest.mark.parametrize("kind", ["files", "postgres"])
def test_a_namespaced_write_never_suggests_superseding_an_ancestors_record(kind: str, tmp_path: Path) -> None:
    target = _target(kind, tmp_path)
    berlin = cli(target, "remember", "The office is in Berlin.", "--scope", "project")["id"]
    acme = ("--scope", "project", "--namespace", "acme")

    rc, doc, err = remember(target, "The office is in Munich.", *acme, "--supersede")
    assert rc != 0 and doc["error"]["type"] == "UsageError" and "cannot supersede" in doc["error"]["message"], doc
    assert "Munich" not in json.dumps(cli(target, "list", "--namespace", "acme")["records"])  # nothing written

    rc, doc, err = remember(target, "The office is in Hamburg.", *acme)
    assert rc == 0 and [c["id"] for c in doc["contradicts"]] == [berlin], doc  # still named: the caller sees it
    assert "--supersede" not in err and berlin in err and "cannot supersede" in err, err
    hamburg = doc["id"]

    rc, doc, err = remember(target, "The office is in Munich.", *acme, "--supersede")  # picks acme's own record
    assert rc == 0 and doc["status"] == "superseded" and doc.get("superseded") == hamburg, (doc, err)
    assert f"--supersede {berlin}" not in err

    rc, doc, err = remember(target, "The office is in Paris.", "--user", "alice")  # a user's write, a shared record
    assert rc == 0 and berlin in [c["id"] for c in doc["contradicts"]], doc
    assert f"--supersede {berlin}" not in err, err
    rc, doc, err = remember(target, "The office is in Rome.", "--scope", "project")  # the root's own project write
    assert rc == 0 and f"`--supersede {berlin}`" in err, err
