"""The event log: one append-only JSON line per mutation, in ``events/<yyyy-mm>.jsonl`` under the root.

An event says what changed (``created``, ``appended``, ``replaced``, ``forgotten``, ``swept``, ``restored``,
``purged``, ``hand_edit``, …), which record, who did it (``actor``: ``tool``, ``turn_capture``, ``cli``,
``import``, ``hand_edit``, a worker name; the caller's ``session_id``/``user_id``; ``run_id``/``tool_call_id``
when known) and the content hashes before and after. It never holds record text, so the index can be
rebuilt without it and a purge only has to turn the lines of a purged record into tombstones.

Lines are appended under the root lock (with an ``fsync`` when the store is durable). A torn last line
(a crash mid-append) is skipped and reported by :meth:`EventLog.read`, never a crash; the next append
starts on a fresh line. Who is acting is set with :func:`acting` (a context variable, so it follows
``asyncio.to_thread`` into the files backend)::

    with acting("worker:consolidate", run_id="r-12"):
        store.forget(record_id)
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agent_memory.formats.atomic import atomic_write, ensure_dir, fsync_dir
from agent_memory.model.events import (
    EVENT_TYPES,
    SESSION_EVENTS,
    Acting,
    Event,
    NotSupportedError,
    acting,
    current_acting,
    tombstone_id,
    visible,
)

__all__ = ["Acting", "Event", "EventLog", "NotSupportedError", "acting", "current_acting", "tombstone_id", "visible"]

EVENTS_DIR = "events"
#: Fields minted per event or per record (never repeated): gated every time, never memoised.
_UNIQUE_FIELDS = frozenset({"id", "ts", "eid", "before", "after"})
#: The shapes an event's own clock reading and id have when :class:`Event` mints them (``now_iso()``, 16 hex digits
#: of a UUID4): a value of exactly that shape carries no input, so it is not sent through the redaction engine (whose
#: labels could only mangle it: an id starting ``2fa`` reads as a "2FA" label).
#: The same holds for ``before``/``after``: the store passes them only as ``content_hash`` values (16 hex digits of a
#: SHA-256), which carry no input either (the engine finds nothing in a lone run of 16 hex digits: hex is a hash
#: unless labelled). Anything else in these fields (a longer or other value) is still gated.
_HEX16 = re.compile(r"[0-9a-f]{16}")
_MINTED = {
    "ts": re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"),
    "eid": _HEX16,
    "before": _HEX16,
    "after": _HEX16,
}
_MEMO_MAX = 4096  # gated values kept; the memo is emptied when full (a store sees few actors, scopes and callers)


class GateMemo:
    """The events' write gate (:func:`agent_memory.model.drafts.prepare_event`), remembering what it made of the
    fields that repeat from event to event (type, actor, scope, callers, owners, ``detail``).

    ``prepare_event`` treats each field on its own (a pure function of its value: redaction has no state), so
    gating only the fields not seen before and taking the others from the memo gives the very event ``gated``
    gives; a bulk import then redacts an actor or a scope once, not once per record. The event's own minted
    ``ts`` and ``eid`` (see :data:`_MINTED`) are kept as they are."""

    def __init__(self) -> None:
        self._memo: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    def gate(self, ev: Event) -> Event:
        from agent_memory.model.drafts import prepare_event

        data = ev.to_dict()
        changed: dict[str, Any] = {}
        todo: dict[str, Any] = {}
        keys: dict[str, tuple[str, str]] = {}
        odd = ev.event in SESSION_EVENTS  # rebuilt by ``from_dict`` (an old session event's shape is read anew)
        for name, value in data.items():
            if not isinstance(value, dict if name == "detail" else str):
                odd = True  # ``from_dict`` refuses it: let it say so
            minted = _MINTED.get(name)
            if minted is not None and isinstance(value, str) and minted.fullmatch(value):
                continue
            if name in _UNIQUE_FIELDS or not isinstance(value, (str, dict)):
                todo[name] = value
                continue
            key = (name, value if isinstance(value, str) else json.dumps(value, default=repr))
            hit = self._memo.get(key, self)
            if hit is self:
                todo[name] = value
                keys[name] = key
            elif hit != value:
                changed[name] = hit
        if todo:
            gated = prepare_event(todo)
            with self._lock:
                if len(self._memo) + len(keys) > _MEMO_MAX:
                    self._memo.clear()
                for name, key in keys.items():
                    self._memo[key] = gated[name]
            changed.update((name, value) for name, value in gated.items() if value != data[name])
        if not changed and not odd:
            return ev  # the gate changed nothing: the very event, not a copy rebuilt field by field
        return Event.from_dict({name: changed.get(name, value) for name, value in data.items()})  # the fields in their order


class EventLog:
    """The ``events/`` folder of one root. Appends are made under the root lock by the store."""

    def __init__(self, root: Path, *, durable: bool = True) -> None:
        self.dir = Path(root) / EVENTS_DIR
        self.durable = durable
        self._local = threading.local()
        self._gate = GateMemo()

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Buffer this thread's appends and write them at the end: one write and one fsync per file
        (a bulk import of thousands of records must not pay an fsync per event)."""
        if getattr(self._local, "buffer", None) is not None:
            yield  # nested: the outer batch writes
            return
        self._local.buffer = []
        try:
            yield
        finally:
            buffered, self._local.buffer = self._local.buffer, None
            by_month: dict[str, list[Event]] = {}
            for ev in buffered:
                by_month.setdefault(ev.ts[:7], []).append(ev)
            for month, events in by_month.items():
                self._write(month, events)

    def files(self) -> list[Path]:
        if not self.dir.is_dir() or self.dir.is_symlink():
            return []
        return sorted(p for p in self.dir.glob("*.jsonl") if p.is_file() and not p.is_symlink())

    def append(self, ev: Event) -> Event:
        """Write one line (on a fresh line even after a torn one); fsync when durable. The event passes the write
        gate first (as :func:`agent_memory.model.events.gated`: every string and detail key/value redacted, the values
        that repeat from event to event remembered by :class:`GateMemo`)."""
        if ev.event not in EVENT_TYPES:
            raise ValueError(f"unknown event type {ev.event!r}")
        ev = self._gate.gate(ev)
        buffer = getattr(self._local, "buffer", None)
        if buffer is not None:
            buffer.append(ev)
        else:
            self._write(ev.ts[:7], [ev])
        return ev

    def _write(self, month: str, events: list[Event]) -> None:
        created = not self.dir.exists()
        ensure_dir(self.dir)
        path = self.dir / f"{month}.jsonl"
        line = b"".join(json.dumps(ev.to_dict(), ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n" for ev in events)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            size = os.fstat(fd).st_size
            if size:
                with open(path, "rb") as fh:
                    fh.seek(size - 1)
                    if fh.read(1) != b"\n":
                        line = b"\n" + line  # a torn line before us stays torn; ours is whole
            os.write(fd, line)
            if self.durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        if created and self.durable:
            fsync_dir(self.dir.parent)

    def read(self) -> tuple[list[Event], list[str]]:
        """Every readable event, oldest first, and a problem line for each one skipped (torn or invalid)."""
        events: list[Event] = []
        problems: list[str] = []
        for path in self.files():
            try:
                data = path.read_bytes()
            except OSError as exc:
                problems.append(f"{EVENTS_DIR}/{path.name}: unreadable ({exc.strerror or exc})")
                continue
            for n, raw in enumerate(data.split(b"\n"), 1):
                if not raw.strip():
                    continue
                try:
                    events.append(Event.from_dict(json.loads(raw.decode("utf-8"))))
                except (ValueError, TypeError, RecursionError) as exc:
                    problems.append(f"{EVENTS_DIR}/{path.name}:{n}: skipped a torn or invalid line ({exc})")
        events.sort(key=lambda e: e.ts)  # stable: lines of one instant keep their order
        return events, problems

    def rewrite(self, change: Callable[[Event], Event | None]) -> int:
        """Apply ``change`` to every event (``None`` keeps it as it is); rewrite changed files atomically.

        Used by purge only (under the root lock). Torn lines are dropped. Returns how many events changed."""
        changed = 0
        for path in self.files():
            lines: list[bytes] = []
            dirty = False
            for raw in path.read_bytes().split(b"\n"):
                if not raw.strip():
                    continue
                try:
                    ev = Event.from_dict(json.loads(raw.decode("utf-8")))
                except (ValueError, TypeError, RecursionError):
                    dirty = True  # a torn line may hold anything: it goes
                    continue
                new = change(ev)
                if new is not None:
                    ev, dirty, changed = new, True, changed + 1
                lines.append(json.dumps(ev.to_dict(), ensure_ascii=False, sort_keys=True).encode("utf-8"))
            if dirty:
                atomic_write(path, b"\n".join(lines) + (b"\n" if lines else b""), durable=self.durable)
        return changed
