"""Probe fixL: an import keeps history and links, and `import -` reads our own export.

- A value replaced in the source (Berlin → Munich under one key) comes in as that history — Munich current, Berlin
  the superseded version pointing at it — from a root, its records/ folder, our Markdown export and our JSONL
  export, into the files backend and PostgreSQL (which mints new ids: the chain is written oldest first).
- A folder holding memory roots imports their record files only, never what a root derives (MEMORY.md …).
- `agent-memory export | agent-memory import -` restores the export (header line detected as in a file).
- A `[[<id>]]` link written before an export resolves after an import into PostgreSQL (through the target's
  `metadata.imported_id`), and never into a record the caller may not see.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _pg import bare_backend, run_closing

from agent_memory.backends.base import Caller
from agent_memory.backends.files.store import MemoryStore
from agent_memory.portable import export_records, import_file

BACKENDS = ["files", "postgres"]


def _source(tmp_path: Path) -> Path:
    """A root where the office moved: Berlin, then Munich replacing it under the key ``office``."""
    root = tmp_path / "o"
    store = MemoryStore(root)
    store.remember("Office is in Berlin.", memory_key="office", scope="project", source="manual")
    store.remember("Office is in Munich.", memory_key="office", scope="project", on_existing="replace", source="manual")
    store.close()
    return root


def _form(kind: str, root: Path, tmp_path: Path) -> Path:
    if kind == "root":
        return root
    if kind == "records":
        return root / "records"
    store = MemoryStore(root)
    try:
        if kind == "markdown":
            export_records(store, tmp_path / "md", format="markdown")
            return tmp_path / "md"
        export_records(store, tmp_path / "export.jsonl")
        return tmp_path / "export.jsonl"
    finally:
        store.close()


_backend, _run = bare_backend, run_closing


@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.parametrize("form", ["root", "records", "markdown", "jsonl"])
def test_a_replaced_value_is_imported_as_the_history_it_was(kind: str, form: str, tmp_path: Path) -> None:
    src = _form(form, _source(tmp_path), tmp_path)
    backend = _backend(kind, tmp_path)
    report = import_file(backend, src)
    assert len(report.written) == 2 and not report.skipped, report.to_dict()
    again = import_file(backend, src)  # a re-run finds both, the superseded version too
    assert not again.written and [s.reason for s in again.skipped] == ["exists", "exists"], again.to_dict()

    async def read() -> tuple[list[Any], list[Any], Any]:
        current = await backend.list(Caller(), limit=None)
        every = await backend.list(Caller(), limit=None, include_superseded=True)
        return current, every, await backend.history(current[0].id, Caller())

    current, every, history = _run(backend, read())
    assert [r.content for r in current] == ["Office is in Munich."]
    (berlin,) = [r for r in every if r.content == "Office is in Berlin."]
    assert berlin.superseded_by == current[0].id and current[0].supersedes == berlin.id
    assert [v.content for v in history.versions] == ["Office is in Berlin.", "Office is in Munich."]


def test_a_folder_of_roots_imports_records_never_what_a_root_derives(tmp_path: Path) -> None:
    folder = tmp_path / "roots"
    for name in ("a", "b"):
        store = MemoryStore(folder / name)
        store.remember(f"Fact of root {name}.", scope="project", source="manual")
        store.write_memory_md()
        store.close()
        assert (folder / name / "MEMORY.md").exists()
    (folder / "a" / "USER.md").write_text("# About the user\n")
    target = MemoryStore(tmp_path / "n")
    report = import_file(target, folder)
    contents = sorted(r.content for r in target.list(limit=None))
    target.close()
    assert contents == ["Fact of root a.", "Fact of root b."], report.to_dict()


@pytest.mark.parametrize(("kind", "fmt"), [("files", "auto"), ("files", "agent-memory"), ("postgres", "auto")])
def test_import_dash_reads_our_export_from_standard_input(kind: str, fmt: str, tmp_path: Path) -> None:
    from _doubles import cli_target

    exported = tmp_path / "export.jsonl"
    store = MemoryStore(_source(tmp_path))
    export_records(store, exported)
    store.close()
    target = cli_target(kind, tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", target, "--json", "import", "-", "--format", fmt],
        input=exported.read_text(),
        capture_output=True,
        text=True,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["format"] == "agent-memory" and doc["written"] == 2 and not doc["skipped"], doc


@pytest.mark.parametrize("kind", [*BACKENDS, "postgres-then-files"])
def test_an_id_link_written_before_the_export_resolves_after_the_import(kind: str, tmp_path: Path) -> None:
    """``postgres-then-files``: files → PostgreSQL (new ids) → its export → files: the records keep PostgreSQL's
    ids there, and the link names the first id (kept as ``metadata.imported_id``)."""
    store = MemoryStore(tmp_path / "src")
    otters = store.remember("Sea otters hold hands while sleeping.", title="Otters", scope="project", source="manual")
    store.remember(f"See [[{otters.id}]] for the otters.", title="Pointer", scope="project", source="manual")
    hidden = store.remember("Alice's secret plan.", title="Plan", scope="user", user_id="alice", source="manual")
    store.remember(f"Bob links [[{hidden.id}]].", title="Bob", scope="user", user_id="bob", source="manual")
    export_records(store, tmp_path / "export.jsonl")
    store.close()
    if kind == "postgres-then-files":
        pg = _backend("postgres", tmp_path)
        assert len(import_file(pg, tmp_path / "export.jsonl").written) == 4
        export_records(pg, tmp_path / "again.jsonl")
        asyncio.run(pg.close())
        backend = _backend("files", tmp_path)
        assert len(import_file(backend, tmp_path / "again.jsonl").written) == 4
    else:
        backend = _backend(kind, tmp_path)
        assert len(import_file(backend, tmp_path / "export.jsonl").written) == 4

    async def read() -> tuple[Any, Any, Any, Any]:
        anyone, bob, alice = Caller(), Caller(user_id="bob"), Caller(user_id="alice")
        recs = {r.title: r for r in await backend.list(anyone, limit=None)}
        recs |= {r.title: r for r in await backend.list(bob, limit=None)}
        recs |= {r.title: r for r in await backend.list(alice, limit=None)}
        pointer = await backend.links(recs["Pointer"].id, anyone)
        target = await backend.links(recs["Otters"].id, anyone)
        bobs = await backend.links(recs["Bob"].id, bob)
        return recs, pointer, target, bobs

    recs, pointer, target, bobs = _run(backend, read())
    (link,) = pointer.outgoing
    assert link.target == otters.id and link.record_id == recs["Otters"].id and link.by == "id"
    assert [b.record_id for b in target.backlinks] == [recs["Pointer"].id]
    (bobs_link,) = bobs.outgoing  # alice's record was imported under that id: bob may not see it
    assert bobs_link.target == hidden.id and bobs_link.record_id is None


@pytest.mark.parametrize("kind", BACKENDS)
def test_an_import_as_a_user_keeps_the_chain_under_the_ids_it_makes(kind: str, tmp_path: Path) -> None:
    """An import as a caller writes records under ids made for their owner: the supersession links follow them."""
    src = _form("jsonl", _source(tmp_path), tmp_path)
    backend = _backend(kind, tmp_path)
    report = import_file(backend, src, user_id="sam")
    assert len(report.written) == 2 and not report.skipped, report.to_dict()

    async def read() -> tuple[list[Any], Any]:
        current = await backend.list(Caller(user_id="sam"), limit=None)
        return current, await backend.history(current[0].id, Caller(user_id="sam"))

    current, history = _run(backend, read())
    assert [r.content for r in current] == ["Office is in Munich."]
    assert [v.content for v in history.versions] == ["Office is in Berlin.", "Office is in Munich."]
