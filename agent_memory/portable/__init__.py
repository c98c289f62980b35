"""Lossless export and import, and migration from other memories.

- :func:`export_records` writes every record as JSONL (every field) or as a Markdown tree.
- :func:`import_file` reads our JSONL back byte for byte (same ids, timestamps, keys, scopes, metadata) or
  imports another memory's files (Alfred v2, Alfred Python, cuylabs, mem0). Every import is idempotent, keeps
  original timestamps, passes the write gate (:mod:`agent_memory.model.drafts`: every field checked, every string
  redacted or refused), and reports each skipped line or file with a typed reason. An import *as* a user or a
  session lands every record in that caller's partition (a shared record is downgraded, and reported).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.model.drafts import Override, decode_line
from agent_memory.portable._write import Target, files_store
from agent_memory.portable.export import export_records, iter_records, record_line
from agent_memory.portable.importers import FORMATS, READERS, Format, detect
from agent_memory.portable.importers._common import file_time, import_items
from agent_memory.portable.report import ImportReport, Rescope, Skip, SkipReason
from agent_memory.portable.restore import BadLine, restore_lines

__all__ = [
    "FORMATS",
    "BadLine",
    "ImportReport",
    "Rescope",
    "Skip",
    "SkipReason",
    "export_records",
    "import_file",
    "import_lines",
    "iter_records",
    "record_line",
]


def import_file(
    store: Target,
    path: str | os.PathLike[str],
    *,
    format: Format = "auto",
    user_id: str | None = None,
    session_id: str | None = None,
    namespace: str | None = None,
    allow_purged: bool = False,
    strict: bool = False,
    progress: Callable[[int], None] | None = None,
    report: ImportReport | None = None,
) -> ImportReport:
    """Import ``path`` into ``store`` (a :class:`~agent_memory.MemoryStore`, a root path or a backend).

    ``format="auto"`` detects it. ``user_id``/``session_id`` import on that caller's behalf: every record, of
    our export or another memory's, lands in that person's or session's partition whatever scope and owners the
    file names (a ``project``/``global`` record is downgraded, listed in ``report.rescoped``). Without them the
    file's ownership is kept (the root's operator restoring a whole store). Raises :class:`NotFoundError` for a
    missing path and :class:`InvalidInputError` for an unknown format or an override id that is not a safe id;
    everything else is reported per line or file (a line that is not UTF-8 too). ``namespace`` is the importer's:
    every record lands in it (without it and without an override, the namespaces an export's lines name are kept).
    A record whose purge tombstone the target holds (a purge is the right to be forgotten) is not re-imported: it
    is skipped as ``purged`` (with a purged owner's session logs and episodes, see docs/export.md) unless
    ``allow_purged=True`` brings it back deliberately.

    Our export only: ``strict`` checks every line before writing any and raises :class:`BadLine` (an
    :class:`InvalidInputError` naming the line) at the first bad one, nothing written; ``progress(n)`` is called
    with the lines each written batch covered. ``report``: fill this report (its ``format`` and ``path`` are set
    here), so a caller interrupted mid-way can still tell what was written.
    """
    override = Override(user_id=user_id, session_id=session_id, namespace=namespace)
    src = Path(path)
    if not src.exists():
        raise NotFoundError(f"{src}: no such file or directory")
    fmt = detect(src) if format == "auto" else format
    if fmt not in FORMATS:
        raise InvalidInputError(f"unknown import format {format!r}; use auto or one of {', '.join(FORMATS)}")
    target = files_store(store) if isinstance(store, (str, os.PathLike)) else store
    assert target is not None
    if report is None:
        report = ImportReport(format=fmt, path=str(src))
    else:
        report.format, report.path = fmt, str(src)
    if fmt == "agent-memory":
        if src.is_dir():
            raise InvalidInputError(f"{src} is a directory; an agent-memory export is one JSONL file")
        with open(src, "rb") as fh:
            lines = ((n, decode_line(raw)) for n, raw in enumerate(fh, 1))
            restore_lines(target, lines, report, override, allow_purged=allow_purged, strict=strict, progress=progress)
    else:
        items = READERS[fmt](src, report)
        import_items(target, items, report, fmt=fmt, fallback_time=file_time(src), overrides=override, allow_purged=allow_purged)
    report.settle()
    return report


def import_lines(
    store: Target,
    lines: Iterable[tuple[int, str | None]],
    *,
    user_id: str | None = None,
    session_id: str | None = None,
    namespace: str | None = None,
    allow_purged: bool = False,
    strict: bool = False,
    progress: Callable[[int], None] | None = None,
    report: ImportReport | None = None,
    where: str = "<stdin>",
) -> ImportReport:
    """Import our export given as numbered lines (``(n, text)``, None for a line that is not UTF-8), e.g. read from
    standard input (CLI ``agent-memory export | agent-memory import -``): exactly as :func:`import_file` imports
    the same lines from a file (header line, sections, overrides, ``strict``, ``progress``); ``where`` names the
    source in the report."""
    override = Override(user_id=user_id, session_id=session_id, namespace=namespace)
    target = files_store(store) if isinstance(store, (str, os.PathLike)) else store
    assert target is not None
    if report is None:
        report = ImportReport(format="agent-memory", path=where)
    else:
        report.format, report.path = "agent-memory", where
    restore_lines(target, lines, report, override, allow_purged=allow_purged, strict=strict, progress=progress)
    report.settle()
    return report
