"""Lifecycle changes in a namespace, from the CLI (a real subprocess), on both backends.

PostgreSQL's undo of a replace and ``restore --version`` rebuilt the record by a keyed replace whose draft had
no namespace: the old text landed as a NEW record in the root namespace (``memory_key`` = the record's id), the
namespaced record kept the newer text, and the next undo reversed the same change again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest


def _store(kind: str, tmp_path: Path) -> str:
    if kind == "postgres":
        from _pg import require_psycopg, server

        require_psycopg()
        return server().url
    root = str(tmp_path / "mem")
    subprocess.run([sys.executable, "-m", "agent_memory.cli", "init", root], check=True, capture_output=True, timeout=120)
    return root


def _cli(root: str, cwd: Path) -> Any:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

    def cli(*args: str, ok: bool = True, raw: bool = False) -> Any:
        cmd = [sys.executable, "-m", "agent_memory.cli", "--root", root, *([] if raw else ["--json"]), *args]
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, cwd=cwd)
        assert (out.returncode == 0) is ok, (args, out.stdout, out.stderr)
        if not ok or raw:
            return out.stdout + out.stderr
        return json.loads(out.stdout)

    return cli


def _texts(cli: Any, *who: str) -> list[tuple[str, str]]:
    return [(r["content"], r.get("namespace") or "") for r in cli("list", *who)["records"]]


@pytest.mark.parametrize("kind", ["files", "postgres"])
def test_undo_of_a_replace_in_a_namespace_stays_in_it(kind: str, tmp_path: Path) -> None:
    cli = _cli(_store(kind, tmp_path), tmp_path)
    user, ns = f"cy{uuid.uuid4().hex[:8]}", f"acme{uuid.uuid4().hex[:6]}/support"
    me = ("--user", user, "--namespace", ns)
    rid = cli("remember", "Cy uses vim.", *me, "--key", "editor")["id"]
    assert cli("remember", "Cy uses emacs.", *me, "--key", "editor", "--on-existing", "replace")["id"] == rid
    first = cli("undo", *me)["undone"]
    assert first["event"] in ("replaced", "superseded") and first["id"] == rid
    assert _texts(cli, *me) == [("Cy uses vim.", ns)]
    assert _texts(cli, "--user", user) == []  # nothing landed in the root
    second = cli("undo", *me)["undone"]
    assert second["eid"] != first["eid"]  # the next undo reverses the change before, not the same one again


@pytest.mark.parametrize("kind", ["files", "postgres"])
def test_restore_version_in_a_namespace_stays_in_it(kind: str, tmp_path: Path) -> None:
    cli = _cli(_store(kind, tmp_path), tmp_path)
    user, ns = f"cy{uuid.uuid4().hex[:8]}", f"acme{uuid.uuid4().hex[:6]}/support"
    me = ("--user", user, "--namespace", ns)
    rid = cli("remember", "Cy uses vim.", *me, "--key", "editor")["id"]
    cli("remember", "Cy uses emacs.", *me, "--key", "editor", "--on-existing", "replace")
    cli("restore", rid, "--version", "1", *me)
    assert _texts(cli, *me) == [("Cy uses vim.", ns)]
    assert [r["id"] for r in cli("list", *me)["records"]] == [rid]
    assert _texts(cli, "--user", user) == []


async def test_provider_undo_of_a_replace_keeps_the_records_namespace_and_key(backend: Any) -> None:
    p = backend.provider(namespace="acme/support")
    rid = (await p.remember("Cy uses vim.", user_id="cy", memory_key="editor", scope="user")).id
    await p.remember("Cy uses emacs.", user_id="cy", memory_key="editor", scope="user", on_existing="replace")
    await p.undo(user_id="cy")
    assert [(r.id, r.memory_key, r.namespace, r.content) for r in await p.list(user_id="cy")] == [
        (rid, "editor", "acme/support", "Cy uses vim.")
    ]
    assert await backend.provider().list(user_id="cy") == []  # nothing in the root
    versions = (await p.history(rid, user_id="cy")).versions
    assert {v.namespace for v in versions} == {"acme/support"} and {v.memory_key for v in versions} == {"editor"}
