"""Import of our own export: typed skips per line, no overwrite, redaction, caller-scoped export, other backends."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from agent_memory.backends.base import Caller
from agent_memory.backends.files.backend import FilesBackend
from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import InvalidInputError
from agent_memory.portable import export_records, import_file


def _export(target: Any, caller: Caller | None = None) -> str:
    buf = io.StringIO()
    export_records(target, buf, caller=caller)
    return buf.getvalue()


def _store(tmp_path: Path, name: str = "src") -> MemoryStore:
    store = MemoryStore(tmp_path / name)
    store.remember("Shared project fact", scope="project", tags=["p"])
    store.remember("Alice likes green tea", user_id="alice", memory_key="alice-tea")
    store.remember("Bob's private note", user_id="bob")
    store.remember("Session scratch", session_id="s1")
    return store


def test_bad_lines_are_skipped_with_line_numbers_and_the_rest_imported(tmp_path: Path) -> None:
    lines = _export(_store(tmp_path)).split("\n")
    good = json.loads(lines[1])
    bad_scope = {**good, "id": "2026-01-01-x-00000001", "scope": "galaxy"}
    bad_id = {**good, "id": "../escape"}
    no_owner = {**good, "id": "2026-01-01-x-00000002", "scope": "user", "user_id": None}
    extra = {**good, "id": "2026-01-01-x-00000003", "colour": "red"}
    text = "\n".join(
        [
            lines[0],
            lines[1],
            "{not json",
            json.dumps(bad_scope),
            json.dumps(bad_id),
            "[1, 2]",
            json.dumps(no_owner),
            json.dumps(extra),
            *lines[2:],
        ]
    )
    dump = tmp_path / "mixed.jsonl"
    dump.write_text(text)
    dst = MemoryStore(tmp_path / "dst")
    report = import_file(dst, dump, format="agent-memory")
    assert {s.where: s.reason for s in report.skipped} == {f"line {n}": "invalid" for n in (3, 4, 5, 6, 7, 8)}
    msgs = {s.where: s.message for s in report.skipped}
    assert "galaxy" in msgs["line 4"] and "user_id" in msgs["line 7"] and "colour" in msgs["line 8"]
    assert len(report.written) == 4
    assert not (tmp_path / "escape.md").exists() and not list(tmp_path.glob("*.md"))


def test_a_different_record_under_the_same_id_is_never_overwritten(tmp_path: Path) -> None:
    src = _store(tmp_path)
    dump = tmp_path / "e.jsonl"
    export_records(src, dump)
    dst = MemoryStore(tmp_path / "dst")
    import_file(dst, dump)
    row = json.loads(dump.read_text().split("\n")[1])
    victim = dst.records_dir / f"{row['id']}.md"
    edited = victim.read_bytes().replace(b"Shared project fact", b"Edited locally")
    victim.write_bytes(edited)
    report = import_file(dst, dump)
    assert report.counts() == {"conflict": 1, "exists": 3}
    assert victim.read_bytes() == edited


def test_secrets_in_an_import_are_redacted(tmp_path: Path) -> None:
    line = {
        "id": "2026-01-01-leak-00000001",
        "content": "deploy with password=hunter2hunter2XYZ!",
        "created": "2026-01-01T00:00:00.000000Z",
        "scope": "project",
        "metadata": {"note": "token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"},
    }
    dump = tmp_path / "leak.jsonl"
    dump.write_text(json.dumps(line) + "\n")
    store = MemoryStore(tmp_path / "dst")
    report = import_file(store, dump)
    assert report.written == ["2026-01-01-leak-00000001"] and report.redactions >= 2
    text = (store.records_dir / "2026-01-01-leak-00000001.md").read_text()
    assert "hunter2hunter2XYZ" not in text and "ghp_0123456789" not in text and "[REDACTED" in text


def test_export_for_a_caller_holds_only_what_it_may_see(tmp_path: Path) -> None:
    src = _store(tmp_path)
    everything = _export(src)
    alice = _export(src, Caller(user_id="alice"))
    anon = _export(src, Caller())
    assert all(t in everything for t in ("Bob's private note", "Session scratch", "Alice likes green tea"))
    assert "Alice likes green tea" in alice and "Shared project fact" in alice
    assert "Bob's private note" not in alice and "Session scratch" not in alice
    assert "Shared project fact" in anon and "Alice" not in anon


def test_export_to_a_path_and_markdown_needs_an_empty_directory(tmp_path: Path) -> None:
    src = _store(tmp_path)
    assert export_records(src, tmp_path / "out.jsonl") == 4
    assert (tmp_path / "out.jsonl").read_text() == _export(src)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("keep me")
    with pytest.raises(InvalidInputError):
        export_records(src, tmp_path / "busy", format="markdown")
    assert (tmp_path / "busy" / "x").read_text() == "keep me"
    with pytest.raises(InvalidInputError):
        export_records(src, io.StringIO(), format="markdown")
    with pytest.raises(InvalidInputError):
        export_records(src, io.StringIO(), format="yaml")  # type: ignore[arg-type]


def test_markdown_tree_reimports_with_the_same_ids_and_fields(tmp_path: Path) -> None:
    src = _store(tmp_path)
    export_records(src, tmp_path / "tree", format="markdown")
    dst = MemoryStore(tmp_path / "dst")
    report = import_file(dst, tmp_path / "tree")
    assert report.format == "cuylabs" and not report.skipped
    a = {json.loads(x)["id"]: json.loads(x) for x in _export(src).split("\n")[1:-1]}
    b = {json.loads(x)["id"]: json.loads(x) for x in _export(dst).split("\n")[1:-1]}
    assert set(a) == set(b)
    for rid, row in a.items():
        other = b[rid]
        for key in ("content", "created", "updated", "scope", "user_id", "session_id", "memory_key", "tags", "source"):
            assert other[key] == row[key], key


class ProxyBackend:
    """A MemoryBackend that is not the files backend (what a database backend looks like to the importer)."""

    def __init__(self, inner: FilesBackend) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def remember(self, *a: Any, **k: Any) -> Any:
        return await self.inner.remember(*a, **k)

    async def remember_many(self, *a: Any, **k: Any) -> Any:
        return await self.inner.remember_many(*a, **k)

    async def get(self, *a: Any, **k: Any) -> Any:
        return await self.inner.get(*a, **k)

    async def list(self, *a: Any, **k: Any) -> Any:
        return await self.inner.list(*a, **k)

    async def count(self, *a: Any, **k: Any) -> Any:
        return await self.inner.count(*a, **k)

    async def search(self, *a: Any, **k: Any) -> Any:
        return await self.inner.search(*a, **k)

    async def forget(self, *a: Any, **k: Any) -> Any:
        return await self.inner.forget(*a, **k)

    async def core_lines(self, *a: Any, **k: Any) -> Any:
        return await self.inner.core_lines(*a, **k)

    async def user_md(self) -> str:
        return await self.inner.user_md()

    async def sweep(self) -> Any:
        return await self.inner.sweep()

    async def reindex(self) -> Any:
        return await self.inner.reindex()

    async def doctor(self) -> Any:
        return await self.inner.doctor()

    async def close(self) -> None:
        await self.inner.close()


def test_any_backend_gets_the_records_and_a_rerun_writes_nothing(tmp_path: Path) -> None:
    src = _store(tmp_path)
    dump = tmp_path / "e.jsonl"
    export_records(src, dump)
    target = ProxyBackend(FilesBackend(MemoryStore(tmp_path / "dst")))
    report = import_file(target, dump)  # type: ignore[arg-type]
    assert report.ids_kept is False and len(report.written) == 4 and not report.skipped
    got = {r.content: r for r in target.inner.store.list(limit=None, user_id="alice")}
    assert got["Alice likes green tea"].memory_key == "alice-tea"
    assert got["Alice likes green tea"].metadata["imported_id"].endswith(tuple("0123456789abcdef"))
    assert {r.content for r in target.inner.store.list(limit=None, user_id="bob")} >= {"Bob's private note"}
    again = import_file(target, dump)  # type: ignore[arg-type]
    assert again.written == [] and again.counts() == {"exists": 4}
    assert "Session scratch" in _export(target, Caller(session_id="s1"))  # export from a non-files backend


def test_a_secret_hand_edited_into_a_file_is_redacted_on_reimport(tmp_path: Path) -> None:
    src = _store(tmp_path)
    rec = src.list(limit=1)[0]
    path = Path(rec.path or "")
    path.write_text(path.read_text().replace("Shared project fact", "Shared fact, password=Sup3rS3cretValue99"))
    dump = tmp_path / "e.jsonl"
    export_records(src, dump)  # an export reads files as they are
    assert "Sup3rS3cretValue99" in dump.read_text()
    dst = MemoryStore(tmp_path / "dst")
    report = import_file(dst, dump)
    assert report.redactions == 2 and len(report.written) == 4 and not report.skipped  # the body and the title
    assert "Sup3rS3cretValue99" not in (dst.records_dir / path.name).read_text()
    assert "[REDACTED" in dst.get(rec.id).content and "[REDACTED" in dst.get(rec.id).title


def test_large_export_crosses_write_batches(tmp_path: Path) -> None:
    from agent_memory.model.drafts import MemoryDraft

    src = MemoryStore(tmp_path / "src", durable=False)
    src.remember_many([MemoryDraft(f"note {i} on topic {i % 7}") for i in range(1205)], source="import")
    dump = tmp_path / "e.jsonl"
    assert export_records(src, dump) == 1205
    dst = MemoryStore(tmp_path / "dst", durable=False)
    report = import_file(dst, dump)
    assert len(report.written) == 1205 and len(set(report.written)) == 1205
    assert _export(dst) == dump.read_text() and dst.count() == 1205
