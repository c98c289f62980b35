"""Supersession and versions, the rules both backends share: a newer fact ends an older one; nothing is lost.

- ``supersede`` makes the old record end (``valid_to``) when the new one starts (:func:`ended`), never before the old
  one began; a chain of versions is at most :data:`MAX_CHAIN` long.
- Capture may change only what capture wrote (:data:`CAPTURE_SOURCES`).
- A keyed ``replace`` keeps the previous text, pointed at by the metadata key :data:`POINTER`.
- An ``append`` whose text the record already holds as whole lines is a duplicate (:func:`holds_lines`), and kinds
  addressed by a path (:data:`UNDEDUPED_KINDS`) are never folded into another record of the same text.
"""

from __future__ import annotations

from agent_memory.errors import InvalidInputError
from agent_memory.model.records import MemoryRecord, normalize_instant
from agent_memory.model.values import shown

__all__ = [
    "CAPTURE_SOURCES",
    "MAX_CHAIN",
    "POINTER",
    "UNDEDUPED_KINDS",
    "check_supersede",
    "ended",
    "holds_lines",
    "start_of",
    "tool_refusal",
]


#: Sources of records the capture worker wrote (and so may change).
CAPTURE_SOURCES = ("turn_capture", "compaction_capture")
#: The longest chain of versions followed.
MAX_CHAIN = 1000


def start_of(rec: MemoryRecord) -> str:
    """When ``rec`` started to hold, as a normalised instant (``valid_from``, else ``happened_at``, else written)."""
    for value in (rec.valid_from, rec.happened_at, rec.created):
        if value and (when := normalize_instant(value)):
            return when
    return ""


def ended(old: MemoryRecord, new: MemoryRecord) -> str | None:
    """``valid_to`` of ``old`` once ``new`` supersedes it: when ``new`` starts, clamped to ``old``'s interval."""
    end = start_of(new)
    begin = start_of(old)
    if begin and end < begin:
        end = begin  # a fact recorded as starting before the old one: the old one was never in force after it
    if old.valid_to and (normalize_instant(old.valid_to) or end) <= end:
        return old.valid_to  # it had ended already
    return end or None


POINTER = "previous_version"


# Kinds of records addressed by a key like files by a path (Claude's memory tool; curated lines, model/curated.py):
# two of them, or one and an ordinary memory, may hold the same text, so duplicate detection (writes, sweep, tidy and
# consolidation's merge) leaves them out.
UNDEDUPED_KINDS = ("memory_file", "curated")
_CHANGED_BY = {"memory_file": "the memory tool (edit or replace the file)", "curated": "`curate` (replace the line)"}


def tool_refusal(kind: str) -> str | None:
    """Why a fact must not supersede a record of ``kind`` (:func:`check_supersede`, the contradiction notices), or
    None: a memory-tool file or a curated line is addressed by its path or key and changed by its own tool; a
    successor fact would take its key but not its file, and the file would vanish."""
    how = _CHANGED_BY.get(kind)
    return None if how is None else f"a {kind.replace('_', ' ')} is not a fact to supersede: change it with {how}"


def check_supersede(old_id: str, *, kind: str, source: str, superseded_by: str | None, by_kind: str, by_source: str) -> None:
    """Refuse (:class:`InvalidInputError`) a write of ``by_kind`` from ``by_source`` superseding the live record
    ``old_id`` of this ``kind``/``source``: both backends' rule, so every surface (API, CLI, import, tools, MCP)
    refuses alike. A record already superseded is refused, a capture write may supersede only what capture wrote,
    and a memory-tool file or a curated line (:func:`tool_refusal`) only by its own next version: an import of the
    same kind, which writes the chain of versions back as it was."""
    if superseded_by:
        raise InvalidInputError(f"record {shown(old_id)} is already superseded by {shown(superseded_by)}; supersede that one")
    if by_source in CAPTURE_SOURCES and source not in CAPTURE_SOURCES:
        raise InvalidInputError(f"record {shown(old_id)} was not written by capture (source {source!r}); capture never supersedes it")
    if (by_source, by_kind) != ("import", kind) and (refused := tool_refusal(kind)) is not None:
        raise InvalidInputError(f"record {shown(old_id)}: {refused}")


def holds_lines(content: str, text: str) -> bool:
    """True if ``text`` is already in ``content`` as whole lines ("step 1" is not held by "step 10")."""
    block, held = text.replace("\r\n", "\n").strip("\n"), content.replace("\r\n", "\n")
    return f"\n{block}\n" in f"\n{held}\n"
