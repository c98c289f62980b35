"""Import of our own JSONL export: the same ids, timestamps, keys, scopes and metadata, byte for byte.

Every line passes the write gate (:func:`agent_memory.model.drafts.prepare_record`): each field validated like any other
write, every text redacted, every identifier that looks like a secret refused. A bad line (not UTF-8, not JSON,
failing a field) is skipped with its line number and reason; nothing else is lost. Our export holds only text the
store already redacted, so a re-import of it changes nothing and skips nothing. Re-running an import skips every
record already there (``exists``); a different record under the same id, live or archived, is never overwritten
(``conflict``). With an :class:`~agent_memory.model.drafts.Override` every record lands in that caller's partition.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from agent_memory.errors import InvalidIdError, InvalidInputError
from agent_memory.model.drafts import Override, check_id, prepare_record
from agent_memory.model.records import MemoryRecord
from agent_memory.portable._chains import plan_chains
from agent_memory.portable._write import Guard, Owned, Pending, Target, batch_size, write_records
from agent_memory.portable.export import is_header
from agent_memory.portable.report import ImportReport

__all__ = ["BadLine", "record_from_dict", "restore_lines"]


class BadLine(InvalidInputError):
    """A strict import met a line it cannot take (not UTF-8, not JSON, failing a field): nothing was written.
    ``line`` is its number, ``reason`` what is wrong with it."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


def record_from_dict(data: object, override: Override | None = None) -> tuple[MemoryRecord, int]:
    """One exported object as a record (through the write gate) and the number of redactions."""
    rec, redactions, _ = prepare_record(data, override)
    return rec, redactions


def restore_lines(
    target: Target,
    lines: Iterable[tuple[int, str | None]],
    report: ImportReport,
    override: Override | None = None,
    *,
    allow_purged: bool = False,
    strict: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Import numbered JSONL lines of our export into ``target`` (see the module docstring); a line given as
    None could not be decoded (not UTF-8) and is skipped. A record (live or archived), session log or episode
    purged from the target is skipped as ``purged`` unless ``allow_purged`` (:mod:`agent_memory.portable.root`).

    ``strict``: every line is read and checked before anything is written, and the first bad one raises
    :class:`BadLine` (nothing written), as the plain JSONL import does without ``--skip-invalid``.
    ``progress(n)`` is called with the number of lines each written batch covered."""
    pending: list[Pending] = []
    read = 0  # lines read since the last progress call
    sections: list[tuple[str, dict[str, object]]] = []  # a full export's other sections, restored after the records
    size = batch_size(target)
    # any override (an owner or a namespace alone) is a caller's import: its section lines are refused, only the
    # root's operator restores registry, session, episode, event and archive lines as they are named
    as_caller = override is not None and override.caller
    guard = Guard(private=as_caller, allow_purged=allow_purged)
    hashes: set[str] = set()  # content hashes of the record versions the file holds (an event's before/after)
    owners: list[Owned] = []  # the records read, for telling a purged owner's session logs and episodes
    chained: list[Pending] = []  # records with supersession links, written after the others in one batch

    def flush() -> None:
        nonlocal read
        write_records(target, pending, report, dedupe=False, guard=guard)
        pending.clear()
        if progress is not None and read:
            progress(read)
        read = 0

    for n, line in lines:
        where = f"line {n}"
        read += 1
        if line is None:
            if strict:
                raise BadLine(n, "not valid UTF-8")
            report.skip(where, "invalid", "not valid UTF-8")
            continue
        if not line.strip():
            continue
        data = None
        try:
            data = json.loads(line)
            if is_header(data):
                if not as_caller and "events" in (data.get("sections") or ()):
                    guard.log_events = False  # the operator's restore of a full export: its own event lines come back
                continue
            if isinstance(data, dict) and "section" in data:
                sections.append((where, data))
                continue
            rec, redactions, rescoped = prepare_record(data, override)
        except (InvalidInputError, InvalidIdError) as exc:
            if strict:
                raise BadLine(n, str(exc)) from None
            report.skip(where, "invalid", str(exc), _line_id(data))
            continue
        except (ValueError, RecursionError) as exc:
            if strict:
                raise BadLine(n, f"not JSON: {' '.join(str(exc).split())[:200]}") from None
            report.skip(where, "invalid", f"not JSON: {' '.join(str(exc).split())[:200]}")
            continue
        if rescoped is not None and override is not None:
            report.rescope(where, rec.id, rescoped.value, rec.scope.value, override.describe())
        if rec.supersedes or rec.superseded_by:  # a chain is judged whole (portable._chains): written last, together
            chained.append((where, rec, redactions))
            read -= 1  # its line is counted when it is written
        else:
            pending.append((where, rec, redactions))
        hashes.add(rec.content_hash)
        if not as_caller:
            first = rec.metadata.get("imported_id")
            owners.append((rec.id, first if isinstance(first, str) else None, rec.session_id, rec.user_id))
        if len(pending) >= size and not strict:
            flush()
    if strict and chained:  # a chain broken within the file (portable._chains): refused before anything is written
        bad = plan_chains([rec for _, rec, _ in chained], lambda _rid, _part: None, supersedes_stored=True)
        for i, (reason, message) in sorted(bad.items(), key=lambda kv: int(chained[kv[0]][0].split()[-1])):
            if reason == "invalid":  # (a successor missing from the file may be the target's: judged when written)
                raise BadLine(int(chained[i][0].split()[-1]), message)
    if strict:  # every line checked: now write, batch by batch (progress: each batch's lines, the rest at the end)
        every, rest = list(pending), read - len(pending)
        pending.clear()
        for start in range(0, len(every), size):
            pending.extend(every[start : start + size])
            read = len(pending)
            flush()
        read = rest
    flush()
    if chained:
        pending.extend(chained)
        read = len(chained)
        flush()
    if sections:
        from agent_memory.portable.root import import_section, purged_owners

        state: dict[str, object] = {"allow_purged": allow_purged, "hashes": hashes}
        for _, data in sections:  # an archived record version's hash is known content too
            raw = data.get("record") if data.get("section") == "archive" else None
            if isinstance(raw, dict) and isinstance(raw.get("content_hash"), str):
                hashes.add(raw["content_hash"])
        if not as_caller and not allow_purged:
            state["purged_owners"] = purged_owners(target, owners, sections, guard)
        for where, data in sections:
            import_section(target, where, data, report, as_caller=as_caller, state=state)  # type: ignore[arg-type]
    return report


def _line_id(data: object) -> str | None:
    """The id a bad line names, for the report, only when it is a safe one (a secret never goes back out)."""
    try:
        return check_id("id", data.get("id")) if isinstance(data, dict) else None
    except (InvalidInputError, InvalidIdError):
        return None
