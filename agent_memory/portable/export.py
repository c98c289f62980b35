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
from agent_memory.backends.files.layout import outside_roots
from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.formats.atomic import atomic_write
from agent_memory.model.records import FIELDS, MemoryRecord, RecordParseError, slugify
from agent_memory.portable._write import Target, files_store, run_sync

__all__ = ["HEADER", "EXPORT_FIELDS", "export_records", "header", "is_header", "iter_records", "record_line"]

HEADER = {"format": "agent-memory", "version": 1}  # a whole store's records (the operator's export)
EXPORT_FIELDS = (*(f for f in FIELDS if f != "namespace"), "metadata", "content")  # + namespace, when not the root
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
        if name == "user_id" and rec.namespace:  # a root record's line is what it was before namespaces
            data["namespace"] = rec.namespace
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


def header(caller: Caller | None = None, *, full: bool = False) -> dict[str, Any]:
    """The first line of an export: what it holds. A caller's export names the caller (it holds only what that
    caller sees); a full export lists its sections (version 2)."""
    out: dict[str, Any] = dict(HEADER)
    if full:
        from agent_memory.portable.root import SECTIONS

        out["version"] = 2
        out["sections"] = [s for s in SECTIONS if caller is None or s not in ("archive", "namespaces")]
    if caller is not None:
        out["caller"] = {"session_id": caller.session_id, "user_id": caller.user_id}
        if caller.namespace:
            out["caller"]["namespace"] = caller.namespace
    return out


def is_header(data: object) -> bool:
    """Is ``data`` the header line of one of our exports (any version this library writes)?"""
    return (
        isinstance(data, dict)
        and data.get("format") == "agent-memory"
        and data.get("version") in (1, 2)
        and set(data) <= {"format", "version", "sections", "caller"}
    )


def iter_records(source: Target, *, caller: Caller | None = None, problems: dict[str, str] | None = None) -> list[MemoryRecord]:
    """The records to export, sorted by ``(created, id)``.

    ``caller=None`` is the operator's whole-store export, on every backend: every record of every user (live,
    superseded and expired; on a files store every record file, as the files are the truth). With a caller,
    only what that caller may see (live records of its session and user, and project/global ones). A backend
    that cannot list every user's records raises :class:`~agent_memory.model.events.NotSupportedError` rather
    than export part of the store. A record file that cannot be read is not a record: it is named in ``problems``.
    """
    return read_all(source, caller=caller, problems=problems)[0]


def read_all(
    source: Target, *, caller: Caller | None = None, problems: dict[str, str] | None = None, full: bool = False
) -> tuple[list[MemoryRecord], Any]:
    """The records (as :func:`iter_records`) and, for another backend with ``full``, what its async reads of the
    other sections gave (``(archived, events)``) — one event loop for all of them, as a backend's pool is bound
    to the loop that opened it."""
    store = files_store(source)
    if store is not None:
        recs = list(_store_records(store, caller, {} if problems is None else problems))
        return sorted(recs, key=lambda r: (r.created, r.id)), None
    recs, rest = run_sync(_backend_reads(source, caller, full))
    return sorted(recs, key=lambda r: (r.created, r.id)), rest


async def _backend_reads(source: Target, caller: Caller | None, full: bool) -> tuple[list[MemoryRecord], Any]:
    backend: MemoryBackend = source  # type: ignore[assignment]
    registry = await backend.namespaces() if full and hasattr(backend, "namespaces") else {}  # type: ignore[attr-defined]
    if caller is not None:
        recs = await backend.list(caller, limit=None)
        events = await backend.events(caller) if full and hasattr(backend, "events") else []  # type: ignore[attr-defined]
        return recs, ([], list(events), registry)
    from agent_memory.backends.postgres import dump  # type: ignore[import-not-found,unused-ignore]
    from agent_memory.portable.root import _pg

    pg = _pg(source)
    recs = await dump.all_records(pg)
    if not full:
        return recs, None
    return recs, ([rec for rec, _ in await dump.all_archived(pg)], await dump.all_events(pg), registry)


def _store_records(store: MemoryStore, caller: Caller | None, problems: dict[str, str]) -> Iterator[MemoryRecord]:
    store.open()
    if caller is not None:
        from agent_memory.backends.files.namespaces import read_registry
        from agent_memory.model import scopes

        with scopes.viewing(caller.view(read_registry(store.root) if caller.namespace else None)):  # what the caller sees
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


def _write_jsonl(records: Iterable[MemoryRecord], fh: IO[str], head: dict[str, Any], sections: Iterable[dict[str, Any]] = ()) -> int:
    fh.write(json.dumps(head, separators=(",", ":")) + "\n")
    n = 0
    for rec in records:
        fh.write(record_line(rec) + "\n")
        n += 1
    for item in sections:
        fh.write(json.dumps(item, ensure_ascii=False, separators=(",", ":"), default=str) + "\n")
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
    backend_or_store: Target,
    out: str | os.PathLike[str] | IO[str],
    *,
    format: Format = "jsonl",
    caller: Caller | None = None,
    problems: dict[str, str] | None = None,
    full: bool = False,
    counts: dict[str, int] | None = None,
) -> int:
    """Export records to ``out`` and return how many were written.

    ``format="jsonl"``: ``out`` is a text stream or a file path (written atomically). ``format="markdown"``: ``out``
    is a directory path that must not exist yet or be empty. See :func:`iter_records` for ``caller`` (None: the
    whole store, every user; a caller: exactly what it sees, and the header names it) and ``problems``
    (unreadable files, by name: pass a dict to learn which were left out). ``full=True`` (JSONL only) also
    writes every other section of the store (archive, session logs and summaries, episodes, events: see
    :mod:`agent_memory.portable.root`); ``counts`` then receives the number of lines per section.
    """
    if format not in ("jsonl", "markdown"):
        raise InvalidInputError(f"unknown export format {format!r}; use jsonl or markdown")
    if full and format != "jsonl":
        raise InvalidInputError("a full export (every section) is JSONL only; the Markdown tree holds records")
    if isinstance(out, (str, os.PathLike)):  # never into or over a memory root (the CLI's --out rule, one home)
        outside_roots(out, "export path")
    if format == "jsonl" and isinstance(out, (str, os.PathLike)) and not Path(out).absolute().parent.is_dir():
        raise NotFoundError(f"cannot write {os.fspath(out)}: its directory {Path(out).absolute().parent} does not exist")
    problems = {} if problems is None else problems
    records, rest = read_all(backend_or_store, caller=caller, problems=problems, full=full)
    head = header(caller, full=full)
    lines: list[dict[str, Any]] = []
    if full:
        from agent_memory.portable.root import export_sections

        lines = list(export_sections(backend_or_store, caller, record_line, problems, rest))
    if counts is not None:
        counts["records"] = len(records)
        for item in lines:
            counts[item["section"]] = counts.get(item["section"], 0) + 1
    if format == "markdown":
        if not isinstance(out, (str, os.PathLike)):
            raise InvalidInputError("a Markdown export needs a directory path")
        return _write_markdown(records, Path(out))
    if isinstance(out, (str, os.PathLike)):
        import io

        buf = io.StringIO()
        n = _write_jsonl(records, buf, head, lines)
        atomic_write(Path(out), buf.getvalue().encode("utf-8"))
        return n
    return _write_jsonl(records, out, head, lines)
