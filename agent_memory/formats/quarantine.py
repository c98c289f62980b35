"""Reading one record file defensively: a file the store cannot fully understand is quarantined.

Quarantined files stay where they are (they are the user's), but no read ever serves them: the
index holds no row for them, and ``doctor`` names each with the reason and a suggested fix.
Refused before parsing: names that are not valid ids, symlinks and special files, hard-linked
files (another path shares the contents), files without owner read permission, and files
larger than a record can be. Refused while parsing: see :func:`agent_memory.model.records.parse_record`.
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import stat
from pathlib import Path

from agent_memory.errors import InvalidIdError
from agent_memory.formats.frontmatter import MAX_HEADER_BYTES
from agent_memory.model.records import MAX_CONTENT_BYTES, MemoryRecord, RecordParseError, parse_record, validate_id

MAX_FILE_BYTES = MAX_CONTENT_BYTES + MAX_HEADER_BYTES + 1024

__all__ = ["MAX_FILE_BYTES", "Quarantined", "describe", "read_record_file"]


class Quarantined(RecordParseError):
    """A record file that is refused before its text is read (name, link, permissions, size)."""


def describe(exc: BaseException) -> str:
    """One line for ``doctor``: the reason and, when known, the fix."""
    fix = getattr(exc, "fix", "")
    reason = getattr(exc, "reason", None) or str(exc)
    return f"{reason}; fix: {fix}" if fix else reason


def check_name(name: str) -> str:
    """The record id of a ``*.md`` file name, or :class:`Quarantined` if the name is not a valid id."""
    try:
        return validate_id(name[:-3])
    except InvalidIdError:
        raise Quarantined(
            "file name is not a valid record id (control characters, '..', leading dot or over 240 bytes)",
            "rename it to letters, digits and '-' followed by .md",
        ) from None


def check_stat(st: os.stat_result) -> None:
    """Refuse what must never be served, from the file's metadata alone."""
    if not stat.S_ISREG(st.st_mode):
        raise Quarantined("not a regular file", "replace it with a regular Markdown file")
    if st.st_nlink > 1:
        raise Quarantined(
            f"hard-linked file ({st.st_nlink} links share its contents)", "copy it (cp) instead of linking, so the record is its own file"
        )
    if not st.st_mode & stat.S_IRUSR:
        raise Quarantined("file is not readable (no owner read permission)", "chmod 600 the file if it should be a record")
    if st.st_size > MAX_FILE_BYTES:
        raise Quarantined(f"file is {st.st_size} bytes; a record is at most {MAX_CONTENT_BYTES}", "split it into smaller records")


def read_record_file(records_dir: Path, name: str) -> tuple[MemoryRecord, int, int]:
    """Read, check and parse ``records_dir/name``: ``(record, mtime_ns, size)``.

    Raises :class:`RecordParseError` (quarantine) or ``FileNotFoundError`` (gone)."""
    record_id = check_name(name)
    path = records_dir / name
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # NONBLOCK: a FIFO must not hang us
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ELOOP, errno.ENAMETOOLONG):  # absent; a symlink is never a record
            raise
        raise Quarantined(f"file cannot be opened ({exc.strerror})", "check its permissions") from None
    try:
        st = os.fstat(fd)
        check_stat(st)
        raw = b""
        while len(raw) <= MAX_FILE_BYTES:  # bounded even if the file grows while we read
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            raw += chunk
    except OSError as exc:
        raise Quarantined(f"file cannot be read ({exc.strerror})", "check the disk and the file's permissions") from None
    finally:
        os.close(fd)
    if len(raw) > MAX_FILE_BYTES:
        raise Quarantined(f"file is over {MAX_FILE_BYTES} bytes", "split it into smaller records")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Quarantined("file is not valid UTF-8", "save it as UTF-8") from None
    mtime_iso = dt.datetime.fromtimestamp(st.st_mtime, dt.UTC).isoformat().replace("+00:00", "Z")
    rec = parse_record(text, record_id, path=str(path), mtime_iso=mtime_iso)
    return rec, st.st_mtime_ns, st.st_size


def is_corrupt(exc: BaseException) -> bool:
    """True for errors meaning the database file is damaged or emptied under us (not for busy/locked)."""
    import sqlite3

    msg = str(exc).lower()
    return type(exc) is sqlite3.DatabaseError or any(
        m in msg
        for m in ("malformed", "not a database", "file is encrypted", "vtable constructor failed", "fts5: corrupt", "no such table")
    )  # truncated in place while a connection was open
