"""Export → import into an empty root → export again is byte-identical, on randomised stores."""

from __future__ import annotations

import io
import os
import string
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_memory.backends.files.store import MemoryStore
from agent_memory.model.records import FIELDS, MemoryRecord, Scope, content_hash, default_title
from agent_memory.portable import export_records, import_file
from agent_memory.redaction.api import contains_secret

# text that is not itself a secret (hypothesis finds e.g. "AKIA0000000000001234", which any write redacts)
WORD = st.text(string.ascii_letters + string.digits + " éß中-_.,:#'\"", min_size=1, max_size=20).filter(lambda s: not contains_secret(s))
TEXT = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), min_size=1, max_size=200).filter(
    lambda s: bool(s.strip()) and not contains_secret(s)
)
STAMP = st.datetimes(min_value=__import__("datetime").datetime(2000, 1, 1), max_value=__import__("datetime").datetime(2099, 1, 1)).map(
    lambda d: d.isoformat(timespec="microseconds") + "Z"
)
META_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**12), 10**12) | WORD | st.sampled_from([0.5, -2.25, 1.0]),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "c d", "ü"]), kids, max_size=3),
    max_leaves=6,
)


@st.composite
def records(draw: Any, n: int) -> MemoryRecord:
    scope = draw(st.sampled_from(list(Scope)))
    session = draw(st.sampled_from(["s1", "s 2", "sé"])) if scope is Scope.SESSION or draw(st.booleans()) else None
    user = draw(st.sampled_from(["u1", "alice@example.com"])) if scope is Scope.USER or draw(st.booleans()) else None
    content = draw(TEXT)
    created = draw(STAMP)
    return MemoryRecord(
        id=f"2026-01-01-rec-{n:04d}",
        content=content,
        title=draw(st.none() | WORD.map(str.strip).filter(bool)) or default_title(content),
        kind=draw(st.sampled_from(["fact", "preference", "episode", "decision"])),
        scope=scope,
        session_id=session,
        user_id=user,
        tags=tuple(dict.fromkeys(draw(st.lists(st.sampled_from(["a", "b-c", "ünï", "x.y"]), max_size=3)))),
        memory_key=draw(st.none() | st.sampled_from(["k1", "user:diet", "a.b@c"])),
        source=draw(st.sampled_from(["tool", "import", "manual", "turn_capture"])),
        created=created,
        updated=max(created, draw(STAMP)),
        expires=draw(st.none() | STAMP),
        importance=draw(st.none() | st.sampled_from([0.0, 0.25, 1.0, 0.333])),
        content_hash=content_hash(content),
        metadata=draw(st.dictionaries(st.sampled_from(["origin", "turn", "nested", "ünicode"]), META_VALUE, max_size=3)),
    )


def _populate(root: Path, recs: list[MemoryRecord], store_writes: list[str]) -> MemoryStore:
    store = MemoryStore(root)
    for rec in recs:  # hand-written files: any timestamps, expired ones, every field
        (store.records_dir / f"{rec.id}.md").write_text(rec.render(), encoding="utf-8")
    for i, text in enumerate(store_writes):  # and records the store itself wrote
        store.remember(text, tags=["w"], user_id="u1" if i % 2 else None, memory_key=f"key{i}" if i % 3 == 0 else None)
    return store


def _export(store: MemoryStore) -> str:
    buf = io.StringIO()
    export_records(store, buf)
    return buf.getvalue()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), n=st.integers(0, 12), writes=st.lists(TEXT, max_size=3))
def test_jsonl_round_trip_is_byte_identical(data: Any, n: int, writes: list[str]) -> None:
    recs = [data.draw(records(i)) for i in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        src = _populate(Path(tmp, "src"), recs, writes)
        first = _export(src)
        lines = first.split("\n")[:-1]
        assert len(lines) == 1 + len(list(src.records_dir.glob("*.md")))  # header + every record, expired ones too
        dump = Path(tmp, "export.jsonl")
        dump.write_text(first, encoding="utf-8")
        dst = MemoryStore(Path(tmp, "dst"))
        report = import_file(dst, dump)
        assert report.format == "agent-memory" and not report.skipped and report.redactions == 0
        assert sorted(report.written) == sorted(p.stem for p in src.records_dir.glob("*.md"))
        assert _export(dst) == first
        for path in src.records_dir.glob("*.md"):  # the files themselves are the same bytes
            assert (dst.records_dir / path.name).read_bytes() == path.read_bytes()
        again = import_file(dst, dump)  # idempotent: nothing new, each record reported as already there
        assert again.written == [] and [s.reason for s in again.skipped] == ["exists"] * len(report.written)
        assert _export(dst) == first
        # the index was refreshed: every live record a caller may see is listed and searchable
        assert {r.id for r in dst.list(limit=None)} == {r.id for r in src.list(limit=None)}


@settings(max_examples=10, deadline=None)
@given(data=st.data(), n=st.integers(1, 8))
def test_markdown_tree_holds_every_record_as_written(data: Any, n: int) -> None:
    recs = [data.draw(records(i)) for i in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        src = _populate(Path(tmp, "src"), recs, [])
        out = Path(tmp, "tree")
        assert export_records(src, out, format="markdown") == n
        files = {p.name: p for p in out.rglob("*.md") if p.name != "README.md"}
        assert set(files) == {f"{r.id}.md" for r in recs}
        for rec in recs:
            assert files[f"{rec.id}.md"].read_bytes() == rec.render().encode("utf-8")
            rel = files[f"{rec.id}.md"].relative_to(out).parts
            assert rel[0] == rec.scope.value
        readme = (out / "README.md").read_text(encoding="utf-8")
        assert all(r.id in readme for r in recs)


def test_export_fields_are_every_field() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore(tmp)
        store.remember("The deploy key rotates monthly", importance=0.5, metadata={"turn": 3}, memory_key="rot")
        import json

        rows = [json.loads(x) for x in _export(store).splitlines()]
        assert rows[0] == {"format": "agent-memory", "version": 1}
        # every field, but the namespace only outside the root (a root export is byte-identical to before namespaces)
        assert list(rows[1]) == [*(f for f in FIELDS if f != "namespace"), "metadata", "content"]
        assert (
            rows[1]["memory_key"] == "rot"
            and {k: v for k, v in rows[1]["metadata"].items() if k != "provenance"} == {"turn": 3}
            and rows[1]["importance"] == 0.5
        )
        assert not any(os.sep in str(v) for k, v in rows[1].items() if k != "content")  # no machine paths
