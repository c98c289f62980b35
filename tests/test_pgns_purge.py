"""A namespaced caller purges only in its own namespace and descendants; the root (the operator) purges any.

``MemoryProvider(..., namespace="acme/sales").purge(namespace="acme/support")`` deleted every acme/support record
on both backends; now it is a PermissionDeniedError and nothing goes. From the CLI, ``purge ID --namespace NS``
of a record outside NS (an ancestor's, which NS inherits) is refused the same way, and so is ``forget ID --purge
--namespace NS``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from _pg import make_target

from agent_memory.errors import AgentMemoryError, PermissionDeniedError


@pytest.mark.parametrize("kind", ["files", "postgres"])
def test_a_namespaced_provider_cannot_purge_a_sibling_or_ancestor(kind: str, tmp_path: Path) -> None:
    target = make_target(kind, tmp_path)
    top = f"acme{uuid.uuid4().hex[:6]}"
    sup, sales = f"{top}/support", f"{top}/sales"

    async def run() -> None:
        root = target.provider()
        await root.remember("Acme pays net 30.", scope="project", namespace=top)
        await root.remember("Ada ticket 7 is open.", scope="user", user_id="ada", namespace=sup)
        await root.remember("Ada asked for a quote.", scope="user", user_id="ada", namespace=sales)
        await root.remember("Sales agent 7 notes.", scope="project", namespace=f"{sales}/agent-7")
        seller = target.provider(namespace=sales, isolation="full")
        for ns in (sup, top):
            with pytest.raises(PermissionDeniedError):
                await seller.purge(namespace=ns)
        with pytest.raises(PermissionDeniedError):
            await seller.purge(namespace=sup, user_id="ada")
        inherits = target.provider(namespace=sales, isolation="inherited")
        parents = [r.id for r in await root.list(namespace=top, isolation="full")]
        assert len(parents) == 1
        with pytest.raises(PermissionDeniedError):  # it reads its parent's record; it may not purge it
            await inherits.purge(parents[0])
        assert [r.content for r in await root.list(user_id="ada", namespace=sup, isolation="full")] == ["Ada ticket 7 is open."]
        assert len(await root.list(namespace=top, isolation="full")) == 1
        # an owner purge by a namespaced provider stays in its namespace; its descendants are its own
        await seller.purge(user_id="ada")
        assert [r.content for r in await root.list(user_id="ada", namespace=sup, isolation="full")] == ["Ada ticket 7 is open."]
        assert await root.list(user_id="ada", namespace=sales, isolation="full") == []
        rep = await seller.purge(namespace=f"{sales}/agent-7")
        assert len(rep.records) == 1
        rep = await root.purge(namespace=sup)  # the operator may purge any namespace
        assert len(rep.records) == 1

    try:
        asyncio.run(run())
    finally:
        asyncio.run(target.close())


@pytest.mark.parametrize("kind", ["files", "postgres"])
def test_cli_purge_of_a_record_outside_the_callers_namespace_is_refused(kind: str, tmp_path: Path) -> None:
    if kind == "postgres":
        from _pg import require_psycopg, server

        require_psycopg()
        root = server().url
    else:
        root = str(tmp_path / "mem")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

    def cli(*args: str, ok: bool = True) -> str:
        out = subprocess.run(
            [sys.executable, "-m", "agent_memory.cli", "--root", root, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            cwd=tmp_path,
        )
        assert (out.returncode == 0) is ok, (args, out.stdout, out.stderr)
        return out.stdout + out.stderr

    if kind == "files":
        subprocess.run([sys.executable, "-m", "agent_memory.cli", "init", root], check=True, capture_output=True, env=env, timeout=120)
    top = f"acme{uuid.uuid4().hex[:6]}"
    rid = cli("remember", "Acme pays net 30.", "--scope", "project", "--namespace", top, "-q").strip()
    assert f"outside {top + '/sales'!r}" in cli("purge", rid, "--namespace", f"{top}/sales", ok=False)
    assert json.loads(cli("--json", "history", rid, "--namespace", top))["state"] == "live"
    # `forget ID --purge` is the same purge: the same rule (it purged an inherited record before)
    assert f"outside {top + '/sales'!r}" in cli("forget", rid, "--purge", "--namespace", f"{top}/sales", ok=False)
    assert json.loads(cli("--json", "history", rid, "--namespace", top))["state"] == "live"
    cli("purge", rid, "--namespace", top)
    cli("history", rid, "--namespace", top, ok=False)
    other = cli("remember", "Acme ships on Fridays.", "--scope", "project", "--namespace", top, "-q").strip()
    cli("forget", other, "--purge", "--namespace", top)
    cli("history", other, "--namespace", top, ok=False)
    assert issubclass(PermissionDeniedError, AgentMemoryError)
