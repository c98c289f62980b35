"""Export: every record as JSONL (every field, lossless) or as a Markdown tree of record files.

JSONL: a header line ``{"format": "agent-memory", "version": 1}``, then one object per record with every field
(``id`` … ``content_hash``, ``metadata``, ``content``; absent values as null), sorted by ``(created, id)`` so
the same store always exports the same bytes. Nothing machine- or time-dependent (paths, export time) is written.

Markdown: ``<out>/<scope>/[<owner>/]<id>.md`` where each file is the record exactly as the store writes it,
plus ``<out>/README.md`` listing them. The tree is itself importable (format ``cuylabs`` reads it).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Literal

from agent_memory.backends.base import Caller, MemoryBackend
from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import InvalidInputError
from agent_memory.formats.atomic import atomic_write
from agent_memory.model.records import FIELDS, MemoryRecord, RecordParseError, slugify
from agent_memory.portable._write import Target, files_store, run_sync

__all__ = ["HEADER", "EXPORT_FIELDS", "export_records", "iter_records", "record_line"]

HEADER = {"format": "agent-memory", "version": 1}
EXPORT_FIELDS = (*FIELDS, "metadata", "content")
Format = Literal["jsonl", "markdown"]


def record_line(rec: MemoryRecord) -> str:
    """One record as one JSON line (no newline): every field, in a fixed order."""
    data: dict[str, Any] = {}
    for name in EXPORT_FIELDS:
        value = getattr(rec, name)
        if name == "scope":
            value = value.value
        elif name == "tags":
            value = list(value)
        elif name == "metadata":
            value = dict(value)
        elif value == "" and name not in ("content",):
            value = None
        data[name] = value
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


def iter_records(source: Target, *, caller: Caller | None = None,
                 problems: dict[str, str] | None = None) -> list[MemoryRecord]:
    """The records to export, sorted by ``(created, id)``.

    A files store with ``caller=None`` exports every record file (expired ones too: the files are the truth and
    whoever can read the root can read them). With a caller, only what that caller may see (live records of
    its session and user, and project/global ones). Another backend exports what ``caller`` (default: an
    anonymous caller) may list. A record file that cannot be read is not a record: it is named in ``problems``.
    """
    store = files_store(source)
    if store is not None:
        recs = list(_store_records(store, caller, {} if problems is None else problems))
    else:
        backend: MemoryBackend = source  # type: ignore[assignment]
        recs = run_sync(backend.list(caller or Caller(), limit=None))
    return sorted(recs, key=lambda r: (r.created, r.id))


def _store_records(store: MemoryStore, caller: Caller | None, problems: dict[str, str]) -> Iterator[MemoryRecord]:
    store.open()
    if caller is not None:
        recs = store.list(limit=None, session_id=caller.session_id, user_id=caller.user_id)
        names = [Path(r.path or "").name for r in recs]
    else:
        names = sorted(e.name for e in store.index.record_files())
    for name in names:
        try:
            rec, _, _ = store.index.load_file(name)
        except (OSError, RecordParseError) as exc:  # never a record the store could serve; doctor names the fix
            problems[name] = str(exc) or type(exc).__name__
            continue
        yield rec


def _write_jsonl(records: Iterable[MemoryRecord], fh: IO[str]) -> int:
    fh.write(json.dumps(HEADER, separators=(",", ":")) + "\n")
    n = 0
    for rec in records:
        fh.write(record_line(rec) + "\n")
        n += 1
    return n


def owner_dir(value: str) -> str:
    """A safe, stable directory name for a user or session id (a slug plus a short hash of the exact id)."""
    return f"{slugify(value, 40)}-{hashlib.sha256(value.encode('utf-8')).hexdigest()[:8]}"


def markdown_path(rec: MemoryRecord) -> str:
    """Where a record goes in the Markdown tree, relative to its root."""
    parts = [rec.scope.value]
    if rec.scope.value == "user" and rec.user_id:
        parts.append(owner_dir(rec.user_id))
    elif rec.scope.value == "session" and rec.session_id:
        if rec.user_id:
            parts.append(owner_dir(rec.user_id))
        parts.append(owner_dir(rec.session_id))
    return "/".join([*parts, f"{rec.id}.md"])


def _write_markdown(records: list[MemoryRecord], out: Path) -> int:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InvalidInputError(f"{out} exists and is not an empty directory; a Markdown export needs a new directory")
    out.mkdir(parents=True, exist_ok=True)
    lines = ["# agent-memory export", "", f"{len(records)} records; one file per record, exactly as the store writes it.", ""]
    for rec in records:
        rel = markdown_path(rec)
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, rec.render().encode("utf-8"), durable=False)
        lines.append(f"- [{rec.title}]({rel}) — {rec.kind}, {rec.scope.value}, {rec.created[:10]}")
    atomic_write(out / "README.md", ("\n".join(lines) + "\n").encode("utf-8"), durable=False)
    return len(records)


def export_records(
    backend_or_store: Target, out: str | os.PathLike[str] | IO[str], *, format: Format = "jsonl",
    caller: Caller | None = None, problems: dict[str, str] | None = None,
) -> int:
    """Export records to ``out`` and return how many were written.

    ``format="jsonl"``: ``out`` is a text stream or a file path (written atomically). ``format="markdown"``: ``out``
    is a directory path that must not exist yet or be empty. See :func:`iter_records` for ``caller`` and
    ``problems`` (unreadable record files, by name: pass a dict to learn which were left out).
    """
    if format not in ("jsonl", "markdown"):
        raise InvalidInputError(f"unknown export format {format!r}; use jsonl or markdown")
    records = iter_records(backend_or_store, caller=caller, problems=problems)
    if format == "markdown":
        if not isinstance(out, (str, os.PathLike)):
            raise InvalidInputError("a Markdown export needs a directory path")
        return _write_markdown(records, Path(out))
    if isinstance(out, (str, os.PathLike)):
        import io

        buf = io.StringIO()
        n = _write_jsonl(records, buf)
        atomic_write(Path(out), buf.getvalue().encode("utf-8"))
        return n
    return _write_jsonl(records, out)
