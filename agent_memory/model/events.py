"""Events: what one mutation of a memory was, who made it, and who may see that it happened.

An event says what changed (``created``, ``appended``, ``replaced``, ``forgotten``, ``swept``, ``restored``,
``purged``, ``hand_edit``, …; ``episode_deleted``/``episode_restored`` for an episode), which record, who did it (``actor``: ``tool``, ``turn_capture``, ``cli``,
``import``, ``hand_edit``, a worker name; the caller's ``session_id``/``user_id``; ``run_id``/``tool_call_id``
when known) and the content hashes before and after. It never holds record text. Who is acting is set with
:func:`acting` (a context variable, so it follows ``asyncio.to_thread`` into a backend)::

    with acting("worker:consolidate", run_id="r-12"):
        store.forget(record_id)

Each backend keeps events its own way (the files backend in ``events/<yyyy-mm>.jsonl``, PostgreSQL in a table).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import uuid
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_memory.errors import InvalidInputError, UnsupportedError
from agent_memory.model.records import now_iso
from agent_memory.model.scopes import check_namespace, may_see, owns

__all__ = [
    "EVENT_TYPES",
    "Acting",
    "Event",
    "NotSupportedError",
    "acting",
    "current_acting",
    "gated",
    "part_of_another",
    "session_event_shape",
    "story",
    "tombstone_id",
    "tombstone_provenance",
    "visible",
]

SESSION_EVENTS = frozenset({"summarized", "distilled"})

EVENT_TYPES = frozenset(
    {
        "created",
        "appended",
        "replaced",
        "superseded",
        "forgotten",
        "archived",
        "restored",
        "purged",
        "imported",
        "consolidated",
        "swept",
        "hand_edit",
        "undone",
        "summarized",  # a session log got a new summary version (id "session:<id>", owner_namespace the log's; consolidate.tend)
        "distilled",  # a session log's messages up to detail.through went through the capture worker (same)
        "episode_deleted",
        "episode_restored",
    }
)


class NotSupportedError(UnsupportedError):
    """The backend does not offer a lifecycle feature (history, restore, undo, events, provenance, purge). Kept for one
    release: catch :class:`~agent_memory.errors.UnsupportedError`."""


@dataclass(frozen=True, slots=True)
class Acting:
    """Who is making the changes in this context (set by :func:`acting`)."""

    actor: str | None = None
    run_id: str | None = None
    tool_call_id: str | None = None
    session_id: str | None = None
    user_id: str | None = None
    step: str | None = None  # one undoable step: every change made under it is undone by one ``undo`` (detail.step)


_ACTING: contextvars.ContextVar[Acting | None] = contextvars.ContextVar("agent_memory_acting", default=None)


@contextlib.contextmanager
def acting(
    actor: str | None = None,
    *,
    run_id: str | None = None,
    tool_call_id: str | None = None,
    session_id: str | None = None,
    user_id: str | None = None,
    step: str | None = None,
) -> Iterator[Acting]:
    """Attribute every mutation in this block to ``actor`` (fields left out are inherited from an outer block).

    ``step`` makes the block's changes one undoable step: each event carries it as ``detail.step`` and ``undo``
    reverses them together (the memory tool's ``rename``: copies made, originals forgotten).

    Each value given passes the write gate (:func:`agent_memory.model.drafts.check_acting`: one-line ids, never a
    secret): a bad one is an :class:`~agent_memory.errors.InvalidInputError` here, before any change is made."""
    from agent_memory.model.drafts import check_acting  # the gate pulls in redaction: a search never needs it

    check_acting(
        {
            k: v
            for k, v in (
                ("actor", actor),
                ("run_id", run_id),
                ("tool_call_id", tool_call_id),
                ("session_id", session_id),
                ("user_id", user_id),
                ("step", step),
            )
            if v
        }
    )
    outer = _ACTING.get() or Acting()
    now = Acting(
        actor or outer.actor,
        run_id or outer.run_id,
        tool_call_id or outer.tool_call_id,
        session_id or outer.session_id,
        user_id or outer.user_id,
        step or outer.step,
    )
    token = _ACTING.set(now)
    try:
        yield now
    finally:
        _ACTING.reset(token)


def current_acting() -> Acting:
    return _ACTING.get() or Acting()


def tombstone_id(value: str) -> str:
    """What a purged id becomes in the log: a hash that names no word of it."""
    return "purged:" + hashlib.sha256(value.encode("utf-8")).hexdigest()[:16]


def tombstone_provenance(metadata: Mapping[str, Any], *, session_id: str | None, user_id: str | None) -> dict[str, Any] | None:
    """``metadata`` with the ``provenance`` entries (``created``/``updated``) that name the purged owner made
    anonymous (their ``session_id``/``user_id`` hashed as :func:`tombstone_id` does in the event log), or None when
    no entry names that owner. Which entries are the owner's is :func:`agent_memory.model.scopes.owns`."""
    prov = metadata.get("provenance")
    if not isinstance(prov, Mapping):
        return None
    changed = False
    out: dict[str, Any] = dict(prov)
    for name, entry in prov.items():
        if not isinstance(entry, Mapping):
            continue
        sid, uid = entry.get("session_id"), entry.get("user_id")
        if not owns(sid if isinstance(sid, str) else None, uid if isinstance(uid, str) else None, session_id=session_id, user_id=user_id):
            continue
        out[name] = {k: tombstone_id(v) if k in ("session_id", "user_id") and isinstance(v, str) else v for k, v in entry.items()}
        changed = True
    return {**metadata, "provenance": out} if changed else None


@dataclass(slots=True)
class Event:
    """One mutation. ``scope``/``owner_session``/``owner_user``/``owner_namespace`` are the record's partition (for
    visibility; ``owner_namespace`` None is the root)."""

    event: str
    id: str
    ts: str = field(default_factory=now_iso)
    eid: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    actor: str | None = None
    session_id: str | None = None
    user_id: str | None = None
    run_id: str | None = None
    tool_call_id: str | None = None
    before: str | None = None
    after: str | None = None
    scope: str | None = None
    owner_session: str | None = None
    owner_user: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    owner_namespace: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__slots__}  # type: ignore[attr-defined]
        return {k: v for k, v in out.items() if v not in (None, {})}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Event:
        if not isinstance(data, Mapping) or not isinstance(data.get("event"), str) or not isinstance(data.get("id"), str):
            raise ValueError("an event needs string 'event' and 'id'")
        known = {k: data[k] for k in cls.__slots__ if k in data}  # type: ignore[attr-defined]
        for k, v in known.items():
            if k != "detail" and v is not None and not isinstance(v, str):
                raise ValueError(f"event field {k!r} must be a string")
        if not isinstance(known.get("detail", {}), dict):
            raise ValueError("event detail must be an object")
        return cls(**session_event_shape(known))


def session_event_shape(data: dict[str, Any]) -> dict[str, Any]:
    """A session event (``summarized``/``distilled``) written before they carried ``owner_namespace`` named a
    namespaced log's namespace in its id (``session:<session id>@<namespace>``): read as today's shape (id
    ``session:<session id>``, ``owner_namespace`` the namespace), so visibility, ``undo`` and purge by namespace
    treat it as they treat every event. Unambiguous: the id is that form only when it is exactly the event's own
    ``owner_session`` followed by ``@`` and a valid namespace (a session id may itself hold an ``@``)."""
    if data.get("event") not in SESSION_EVENTS or data.get("owner_namespace"):
        return data
    rid, sid = data.get("id"), data.get("owner_session")
    if not isinstance(rid, str) or not isinstance(sid, str) or not rid.startswith(f"session:{sid}@"):
        return data
    ns = rid[len(f"session:{sid}@") :]
    try:
        ns = check_namespace(ns)
    except InvalidInputError:
        return data
    return {**data, "id": f"session:{sid}", "owner_namespace": ns} if ns else data


def gated(ev: Event) -> Event:
    """``ev`` as it may be stored: through the write gate (:func:`agent_memory.model.drafts.prepare_event`: every
    string redacted, ``detail`` keys and values too). Never raises on text: the change it reports is made."""
    from agent_memory.model.drafts import prepare_event

    return Event.from_dict(prepare_event(ev.to_dict()))


def part_of_another(ev: Event) -> bool:
    """Is ``ev`` one step of a larger change (a superseded version archived with the record ``forget`` took:
    ``detail.part_of`` names that record)? Undoing that change undoes it too, so no backend undoes it on its own."""
    reason = ev.detail.get("reason")
    return bool(ev.detail.get("part_of")) or (
        ev.event == "archived" and isinstance(reason, str) and reason.startswith("forgotten with ")
    )  # older logs


def visible(ev: Event, session_id: str | None, user_id: str | None) -> bool:
    """The visibility rule of records (:mod:`agent_memory.model.scopes`), applied to the record an event is about."""
    return may_see(ev.scope, ev.owner_session, ev.owner_user, session_id=session_id, user_id=user_id, namespace=ev.owner_namespace or "")


def story(events: Iterable[Event], record_id: str, successors: Collection[str] = ()) -> list[Event]:
    """The events that tell one record's whole story, in the order given: its own; each supersession that replaced
    it, which is logged under the record that replaced it (``detail.supersedes`` names it; an event that names no
    record counts when it is of one of ``successors``, the records known to have superseded it); and the undo of
    each such supersession (``detail.undo_of`` is its ``eid``). Filter by :func:`visible` as well: this only picks."""
    out: list[Event] = []
    replaced: set[str] = set()
    for ev in events:
        if ev.id == record_id:
            out.append(ev)
        elif ev.event == "superseded" and (ev.detail.get("supersedes") == record_id if "supersedes" in ev.detail else ev.id in successors):
            out.append(ev)
            replaced.add(ev.eid)
        elif ev.detail.get("undo_of") in replaced:
            out.append(ev)
    return out
