"""Supersession and versions, the rules both backends share: a newer fact ends an older one; nothing is lost.

- ``supersede`` makes the old record end (``valid_to``) when the new one starts (:func:`ended`), never before the old
  one began; a chain of versions is at most :data:`MAX_CHAIN` long.
- Capture may change only what capture wrote (:data:`CAPTURE_SOURCES`).
- A keyed ``replace`` keeps the previous text, pointed at by the metadata key :data:`POINTER`.
- An ``append`` whose text the record already holds as whole lines is a duplicate (:func:`holds_lines`), and kinds
  addressed by a path (:data:`UNDEDUPED_KINDS`) are never folded into another record of the same text.
"""

from __future__ import annotations

from agent_memory.model.records import MemoryRecord, normalize_instant

__all__ = ["CAPTURE_SOURCES", "MAX_CHAIN", "POINTER", "UNDEDUPED_KINDS", "ended", "holds_lines", "start_of", "tool_refusal"]


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
    """Why a fact-superseding tool (``memory_supersede``, the CLI's ``--supersede`` notice) must not take a record of
    ``kind`` as the outdated fact, or None: a memory-tool file or a curated line is addressed by its path or key and
    changed by its own tool; a successor fact would take its key but not its file, and the file would vanish."""
    how = _CHANGED_BY.get(kind)
    return None if how is None else f"a {kind.replace('_', ' ')} is not a fact to supersede: change it with {how}"


def holds_lines(content: str, text: str) -> bool:
    """True if ``text`` is already in ``content`` as whole lines ("step 1" is not held by "step 10")."""
    block, held = text.replace("\r\n", "\n").strip("\n"), content.replace("\r\n", "\n")
    return f"\n{block}\n" in f"\n{held}\n"
