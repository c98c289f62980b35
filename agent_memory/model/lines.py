"""One-line renderings of a record: its summary, its dates for people, its line in MEMORY.md and the core block.

Pure text, shared by both backends (the files index and PostgreSQL write the same lines).
"""

from __future__ import annotations

import re

from agent_memory.model.records import normalize_instant

__all__ = ["core_line", "dates_text", "day_text", "summary_line"]

# control, format (bidi, zero-width) and separator characters: a summary is one plain line of MEMORY.md
_NOT_PLAIN = re.compile("[\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]")


def summary_line(content: str, limit: int = 80) -> str:
    flat = " ".join(_NOT_PLAIN.sub(" ", content[: limit * 64]).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def day_text(value: str | None) -> str:
    """An instant for people: ``2023-05-07`` at midnight UTC (a day), else ``2023-05-07 13:56Z``."""
    when = normalize_instant(value) if value else None
    if when is None:
        return value or ""
    return when[:10] if when[11:] == "00:00:00.000000Z" else f"{when[:10]} {when[11:16]}Z"


def dates_text(recorded: str | None, happened: str | None, valid_from: str | None, valid_to: str | None) -> str:
    """``on 2023-05-07; true 2023-05-01 to 2023-06-01`` (``recorded …`` when no one said when it happened)."""
    parts = [f"on {day_text(happened)}" if happened else f"recorded {day_text(recorded)}" if recorded else ""]
    if valid_from and valid_to:
        parts.append(f"true {day_text(valid_from)} to {day_text(valid_to)}")
    elif valid_from:
        parts.append(f"true since {day_text(valid_from)}")
    elif valid_to:
        parts.append(f"true until {day_text(valid_to)}")
    return "; ".join(p for p in parts if p)


def core_line(
    record_id: str, kind: str, summary: str, happened: str | None = None, valid_from: str | None = None, valid_to: str | None = None
) -> str:
    """One MEMORY.md / core-block line; dates are shown when the record knows when it happened or held."""
    dates = dates_text(None, happened, valid_from, valid_to)
    return f"- [{record_id}] ({kind}{'; ' + dates if dates else ''}): {summary}"
