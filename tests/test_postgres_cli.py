"""`--root postgresql://…` and `MemoryProvider("postgresql://…")` end to end against a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from _pg import fresh_db, fresh_schema, pg_url, require_psycopg  # noqa: F401  (pytest fixtures)

require_psycopg()

from agent_memory import MemoryProvider  # noqa: E402
from agent_memory.backends.postgres import PostgresBackend  # noqa: E402


def cli(url: str, *args: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEMORY_")}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    proc = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", url, *args, "--json"], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_cli_over_postgres(pg_url: str, tmp_path) -> None:  # noqa: F811
    os.chdir(tmp_path)
    made = cli(pg_url, "remember", "Deploys happen on Fridays after noon", "--tag", "ops", "--key", "deploys")
    assert made["status"] == "created"
    assert cli(pg_url, "remember", "Rollbacks need approval", "--key", "deploys")["status"] == "appended"
    hits = cli(pg_url, "search", "when do deploys happen?")["hits"]
    assert [h["id"] for h in hits] == [made["id"]] and hits[0]["path"].startswith("postgresql://")
    assert "Rollbacks need approval" in cli(pg_url, "get", made["id"])["content"]
    mine = cli(pg_url, "remember", "Ada's locker is number 12", "--user", "ada")
    assert cli(pg_url, "search", "locker", "--user", "bob")["hits"] == []
    assert [h["id"] for h in cli(pg_url, "search", "locker", "--user", "ada")["hits"]] == [mine["id"]]
    listed = cli(pg_url, "list", "--tag", "ops")
    assert listed["total"] == 1 and listed["records"][0]["id"] == made["id"]
    assert cli(pg_url, "forget", made["id"])["forgotten"] is True
    assert cli(pg_url, "search", "deploys")["hits"] == []
    assert list(tmp_path.iterdir()) == []  # a URL never becomes a directory


async def test_provider_workers_over_postgres(pg_url: str) -> None:  # noqa: F811
    provider = MemoryProvider(pg_url, schema=fresh_schema())
    assert isinstance(provider.backend, PostgresBackend)
    try:
        captured = await provider.capture_turn("I'm allergic to peanuts.", "Noted.", user_id="ada", session_id="c1")
        assert not captured.fallback and len(captured.ids) == 1
        recalled = await provider.recall("what am I allergic to?", user_id="ada", session_id="c2")
        assert not recalled.fallback and "peanuts" in recalled.summary
        other = await provider.recall("what am I allergic to?", user_id="bob", session_id="c3")
        assert "peanuts" not in other.summary
        block = await provider.inject(500, user_id="ada")
        assert "peanuts" in block.text and "peanuts" not in (await provider.inject(500, user_id="bob")).text
    finally:
        await provider.aclose()


def test_cli_embeds_and_searches_by_meaning_on_postgres(fresh_db: str, tmp_path) -> None:  # noqa: F811
    import pytest

    pytest.importorskip("sentence_transformers")
    os.chdir(tmp_path)
    url = fresh_db  # its own database: vectors in the shared default schema would make later plain searches hybrid
    car = cli(url, "remember", "The automobile needs new tyres before winter.", "--user", "ada")["id"]
    cli(url, "remember", "Quarterly taxes are due in April.", "--user", "ada")
    cli(url, "remember", "Bob's automobile is red.", "--user", "bob")
    done = cli(url, "embed", "--embedder", "local")
    assert done["embedded"] >= 3 and done["error"] is None
    assert cli(url, "embed", "--embedder", "local")["embedded"] == 0  # vectors are kept: nothing left to embed
    dense = cli(url, "search", "my car", "--user", "ada", "--mode", "dense", "--embedder", "local")["hits"]
    assert dense[0]["id"] == car and all("Bob" not in h["snippet"] for h in dense)  # bob's record stays invisible
    assert cli(url, "search", "my car", "--user", "ada", "--mode", "lexical")["hits"] == []  # no shared word
