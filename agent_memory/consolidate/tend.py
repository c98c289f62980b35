"""Session logs tended by themselves: idle sessions summarised, raw logs distilled into facts.

- :func:`summarize_idle` (``provider.summarize_idle()``, ``agent-memory sessions summarize --idle``): every session
  past the summary policy (idle ≥ 30 min, or ≥ 20 new messages since its last summary; :class:`SummaryPolicy`) gets a
  new summary version from the summarize worker, at most ``limit`` sessions a call (the least recently active first),
  each one a ``summarized`` event. :class:`IdleSummaries` runs it on an interval in a long-lived app.
- :func:`distill_sessions` (``provider.distill()``, ``agent-memory sessions distill``): the capture worker (the
  offline rules by default, or the profile's model) reads session-log messages no capture has read yet — logs
  written by ``MemoryHooks``, ``session append`` or imported with ``agent-memory import`` alike — turn by turn
  (a message and the assistant replies after it), at most ``limit`` messages a call. Facts land in the partition of
  the session's owner (its user, or the session itself when it has none), never another's.

What was distilled is durable on both backends: a ``distilled`` event per session and call names the last message
number read (``detail.through``); the next call starts after it, so running it again stores nothing twice, and
messages appended since are read by the next call. A crash between a capture and its event re-reads those turns,
and the store's dedupe keeps their facts single. Session events carry ``id`` ``session:<session id>``, the
session's owner and its namespace (``owner_namespace``, as a record's event does), so they are visible (``events``)
and purged (``purge --user``, ``purge --namespace``) exactly as the session is.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from agent_memory.backends.base import Caller, capability, innermost
from agent_memory.backends.files.backend import FilesBackend
from agent_memory.errors import InvalidInputError
from agent_memory.model.drafts import _parse_when
from agent_memory.model.events import Event, acting, current_acting
from agent_memory.sessions._files import check_id
from agent_memory.sessions.store import SessionStore, SummaryPolicy

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.agents.workers.capture import Extractor, Worker
    from agent_memory.sessions._messages import SessionDir, SessionMessage, SessionSummary

__all__ = [
    "DistillReport",
    "IdleReport",
    "IdleSummaries",
    "distill_sessions",
    "distilled_through",
    "mark_captured",
    "read_marks",
    "summarize_idle",
]

logger = logging.getLogger("agent_memory")

IDLE_LIMIT = 20  # sessions summarised in one call
DISTILL_LIMIT = 500  # messages read in one call


def _in(session: dict[str, Any]) -> str:
    return f" in {session['namespace']}" if session.get("namespace") else ""


@dataclass
class IdleReport:
    """What one :func:`summarize_idle` call did: sessions summarised, how many were due, how many wait."""

    summarized: list[dict[str, Any]] = field(default_factory=list)
    due: int = 0
    remaining: int = 0
    checked: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        lines = [f"summarised {len(self.summarized)} of {self.due} due session(s) ({self.checked} checked; {self.remaining} wait)"]
        lines += [
            f"  {s['session_id']}" + (f" (user {s['user_id']})" if s["user_id"] else "") + _in(s) + f": v{s['version']}"
            for s in self.summarized
        ]
        return "\n".join(lines)


@dataclass
class DistillReport:
    """What one :func:`distill_sessions` call did, per session: messages read, records written, where it stopped."""

    sessions: list[dict[str, Any]] = field(default_factory=list)
    messages: int = 0
    written: int = 0
    remaining: int = 0
    fallbacks: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        lines = [
            f"distilled {self.messages} message(s) from {len(self.sessions)} session(s): {self.written} record(s) written"
            + (f"; {self.remaining} message(s) wait for the next call" if self.remaining else "")
        ]
        for s in self.sessions:
            who = f" (user {s['user_id']})" if s["user_id"] else ""
            lines.append(f"  {s['session_id']}{who}{_in(s)}: messages {s['from']}..{s['through']}, {len(s['ids'])} record(s)")
        return "\n".join(lines)


# -- session events (both backends) -----------------------------------------------------------------------------------
def _event_id(sdir: SessionDir) -> str:
    """A session event's id names the session; its namespace is the event's ``owner_namespace``, as a record's is
    (events written before named it here, ``session:<id>@<namespace>``: :func:`agent_memory.model.events.session_event_shape`
    reads them as today's)."""
    return f"session:{sdir.session_id}"


def _legacy_event_id(sdir: SessionDir) -> str | None:
    return f"session:{sdir.session_id}@{sdir.namespace}" if sdir.namespace else None


def _owner_scope(sdir: SessionDir) -> str:
    return "user" if sdir.user_id is not None else "session"


async def _log_event(backend: Any, kind: str, sdir: SessionDir, **detail: Any) -> None:
    """Append a session event to the backend's event log (files or PostgreSQL); a failure is logged, not raised."""
    try:
        files = capability(backend, FilesBackend)
        if files is not None:
            ev = Event(
                kind,
                _event_id(sdir),
                actor=current_acting().actor or kind,
                session_id=sdir.session_id,
                user_id=sdir.user_id,
                scope=_owner_scope(sdir),
                owner_session=sdir.session_id,
                owner_user=sdir.user_id,
                detail=detail,
                owner_namespace=sdir.namespace or None,
            )
            await asyncio.to_thread(files.store.events.append, ev)
            return
        pg = innermost(backend)
        if hasattr(pg, "pool") and hasattr(pg, "schema"):
            from agent_memory.backends.postgres.events import record_event

            row = {
                "tenant": sdir.user_id or "",
                "id": _event_id(sdir),
                "scope": _owner_scope(sdir),
                "session_id": sdir.session_id,
                "user_id": sdir.user_id,
                "namespace": sdir.namespace,
            }
            async with pg.pool.connection() as conn:
                await record_event(pg, conn, kind, row, Caller(sdir.session_id, sdir.user_id), source=kind, **detail)
    except Exception:  # the summary / the facts are stored; only their event line failed
        logger.warning("agent_memory: could not log the %s event of session %s", kind, sdir.session_id, exc_info=True)


async def distilled_through(backend: Any, sdir: SessionDir) -> int:
    """The number of the last message of ``sdir`` read with every one before it (0: none), from its ``distilled``
    events: a distill's cursor, and the turns a live capture read next to it (:func:`read_marks`)."""
    return (await read_marks(backend, sdir))[0]


async def read_marks(backend: Any, sdir: SessionDir) -> tuple[int, list[tuple[int, int]]]:
    """What of ``sdir`` a capture already read: ``(through, ranges)``. A ``distilled`` event of a distill reads every
    message up to its ``detail.through``; one of a live capture (:func:`mark_captured`) only ``detail.from`` through
    ``detail.through`` (an earlier turn whose capture failed stays unread). ``through`` is the last message read with
    every one before it; ``ranges`` the captured turns after it."""

    def marks(details: Sequence[Any]) -> tuple[int, list[tuple[int, int]]]:
        done, ranges = 0, []
        for d in details:
            n = d.get("through") if isinstance(d, dict) else None
            if not isinstance(n, int) or isinstance(n, bool):
                continue
            first = d.get("from")
            if isinstance(first, int) and not isinstance(first, bool) and first > 1:
                ranges.append((first, n))
            else:
                done = max(done, n)
        for first, last in sorted(ranges):  # captured turns that continue the cursor extend it
            if first <= done + 1:
                done = max(done, last)
        return done, sorted((a, b) for a, b in ranges if b > done)

    files = capability(backend, FilesBackend)
    if files is not None:

        def read() -> tuple[int, list[tuple[int, int]]]:
            events, _ = files.store.events.read()
            return marks(
                [
                    e.detail
                    for e in events
                    if e.event == "distilled"
                    and e.id == _event_id(sdir)
                    and (e.owner_namespace or "") == sdir.namespace
                    and e.owner_user == sdir.user_id
                    and e.owner_session == sdir.session_id
                ]
            )

        return await asyncio.to_thread(read)
    pg = innermost(backend)
    if not (hasattr(pg, "pool") and hasattr(pg, "schema")):
        return 0, []
    async with pg.pool.connection() as conn:
        cur = await conn.execute(
            f'SELECT detail FROM "{pg.schema}".events WHERE tenant = %s AND event = %s'
            " AND ((id = %s AND owner_namespace = %s) OR (owner_namespace = '' AND id = %s))"  # today's shape, or an older one
            " AND owner_session = %s AND owner_user IS NOT DISTINCT FROM %s",
            (sdir.user_id or "", "distilled", _event_id(sdir), sdir.namespace, _legacy_event_id(sdir), sdir.session_id, sdir.user_id),
        )
        return marks([r["detail"] for r in await cur.fetchall()])


async def mark_captured(backend: Any, sdir: SessionDir, messages: Sequence[SessionMessage], *, written: int) -> None:
    """Say that a live capture (``MemoryHooks.on_turn_end``) read the logged turn ``messages``: a ``distilled`` event
    with ``detail.from``/``detail.through``, so :func:`distill_sessions` does not read them again."""
    if not messages:
        return
    numbers = [m.n for m in messages]
    with acting("capture", session_id=sdir.session_id, user_id=sdir.user_id):
        await _log_event(backend, "distilled", sdir, through=max(numbers), messages=len(numbers), written=written, **{"from": min(numbers)})


# -- which sessions ---------------------------------------------------------------------------------------------------
def _dirs(store: SessionStore, user_id: str | None, session: str | None, namespace: str | None = None) -> list[SessionDir]:
    """Every session (an operator's pass), or one user's sessions, or the sessions named ``session`` (of that user).

    The namespace rule of every pass over session logs (distill, idle summaries): with ``namespace``, that
    namespace's logs only (what it writes lands there); without (the root), the operator's whole-store pass over
    every namespace's logs, each written back in its own."""
    check_id("user_id", user_id)
    check_id("session", session)
    if session is not None:
        dirs = [d for d in store.files.find(session) if user_id is None or d.user_id == user_id]
    elif user_id is not None:
        dirs = list(store.files.user_dirs(user_id))
    else:
        dirs = list(store.files.all_dirs())
    return [d for d in dirs if d.namespace == namespace] if namespace else dirs


def _logs(store: SessionStore, dirs: Sequence[SessionDir]) -> list[tuple[list[SessionMessage], SessionSummary | None]]:
    many = getattr(store.files, "read_many", None)
    if many is not None and dirs:
        return list(many(dirs))
    return [(store.files.read(d)[0], store.files.summary(d)[0]) for d in dirs]


def _positive(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"{name} must be a positive integer")
    return value


# -- idle sessions ----------------------------------------------------------------------------------------------------
async def summarize_idle(
    backend: Any,
    store: SessionStore,
    *,
    worker: Any,
    user_id: str | None = None,
    policy: SummaryPolicy | None = None,
    limit: int = IDLE_LIMIT,
    now: dt.datetime | None = None,
    namespace: str | None = None,
) -> IdleReport:
    """Summarise every session due under ``policy`` (of ``user_id`` when given; of ``namespace`` when given, else every
    namespace's: :func:`_dirs`), at most ``limit`` a call."""
    from agent_memory.agents.workers.summarize import run_summarize

    _positive("limit", limit)
    policy = policy or SummaryPolicy()
    when = now or dt.datetime.now(dt.UTC)
    dirs = await asyncio.to_thread(_dirs, store, user_id, None, namespace)
    logs = await asyncio.to_thread(_logs, store, dirs)
    due: list[tuple[SessionDir, list[SessionMessage], SessionSummary | None]] = []
    for sdir, (messages, summary) in zip(dirs, logs, strict=True):
        if messages and store._info(sdir, messages, summary).due(policy, when):
            due.append((sdir, messages, summary))
    due.sort(key=lambda d: (d[1][-1].at, d[0].user_id or "", d[0].session_id))  # the longest idle first
    report = IdleReport(due=len(due), remaining=max(0, len(due) - limit), checked=len(dirs))
    for sdir, messages, summary in due[:limit]:
        with acting("summarize", session_id=sdir.session_id, user_id=sdir.user_id):
            result = await run_summarize(messages, session_id=sdir.session_id, worker=worker, previous=summary.text if summary else None)
            if not result.text.strip():
                continue
            try:
                made = await asyncio.to_thread(
                    store.files.write_summary, sdir, result.text, messages=len(messages), source=result.source, fallback=result.fallback
                )
            except Exception:  # e.g. the session was purged meanwhile: the others go on
                logger.warning("agent_memory: could not store the summary of session %s", sdir.session_id, exc_info=True)
                continue
            await _log_event(backend, "summarized", sdir, version=made.version, messages=made.messages, made_by=made.source)
        report.summarized.append(
            {
                "session_id": sdir.session_id,
                "user_id": sdir.user_id,
                "version": made.version,
                "messages": made.messages,
                "fallback": made.fallback,
            }
            | ({"namespace": sdir.namespace} if sdir.namespace else {})  # as `sessions --json`: two logs may share an id
        )
    return report


class IdleSummaries:
    """An opt-in background schedule: :func:`summarize_idle` every ``every_s`` seconds until :meth:`stop`.

    ``run`` is the pass (``provider.summarize_idle`` bound to its options); ``sleep`` is ``asyncio.sleep`` unless a test
    gives its own clock. A failing pass is logged and the schedule goes on."""

    def __init__(
        self,
        run: Callable[[], Awaitable[IdleReport]],
        every_s: float,
        *,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        if isinstance(every_s, bool) or not isinstance(every_s, (int, float)) or not every_s > 0:
            raise InvalidInputError("every_s must be a number of seconds > 0")
        self.run, self.every_s, self.sleep = run, float(every_s), sleep
        self.passes = 0
        self.last: IdleReport | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> IdleSummaries:
        """Start the loop on the running event loop (a second start is a no-op)."""
        if not self.running:
            self._task = asyncio.get_running_loop().create_task(self._loop())
        return self

    async def _loop(self) -> None:
        while True:
            await self.sleep(self.every_s)
            try:
                self.last = await self.run()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("agent_memory: the idle-session summary pass failed; the schedule goes on", exc_info=True)
            self.passes += 1

    async def stop(self) -> None:
        """Cancel the loop and wait for it to end (a pass in flight is cancelled; what it stored stays)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass


# -- raw logs distilled -----------------------------------------------------------------------------------------------
def _turns(messages: Sequence[SessionMessage]) -> list[tuple[SessionMessage, list[SessionMessage]]]:
    """``(message, the assistant replies after it)`` in order; a log that starts with replies makes them a turn."""
    out: list[tuple[SessionMessage, list[SessionMessage]]] = []
    for m in messages:
        if m.role == "assistant" and out:
            out[-1][1].append(m)
        else:
            out.append((m, []))
    return out


def _at(m: SessionMessage) -> dt.datetime | None:
    return _parse_when(m.at) if m.at else None


async def distill_sessions(
    backend: Any,
    store: SessionStore,
    *,
    worker: Worker | None,
    extractor: Extractor | None = None,
    user_id: str | None = None,
    session: str | None = None,
    limit: int = DISTILL_LIMIT,
    namespace: str | None = None,
) -> DistillReport:
    """Run the capture worker over session-log messages not distilled yet (see the module docstring)."""
    from agent_memory.agents.workers.capture import capture_turn

    _positive("limit", limit)
    dirs = await asyncio.to_thread(_dirs, store, user_id, session, namespace)  # a namespace's logs only: its facts land there
    report = DistillReport()
    budget = limit
    for sdir in sorted(dirs, key=lambda d: (d.user_id or "", d.session_id)):
        done, captured = await read_marks(backend, sdir)  # what a distill or a live capture read already is skipped
        messages = [
            m for m in (await asyncio.to_thread(store.files.read, sdir))[0] if m.n > done and not any(a <= m.n <= b for a, b in captured)
        ]
        if not messages:
            continue
        turns = _turns(messages)
        taken: list[tuple[SessionMessage, list[SessionMessage]]] = []
        size = 0
        for turn in turns:
            n = 1 + len(turn[1])
            if taken and size + n > budget:
                break
            if size >= budget:
                break
            taken.append(turn)
            size += n
        if not taken:
            report.remaining += len(messages)
            continue
        caller = Caller(sdir.session_id, sdir.user_id, sdir.namespace or None)  # facts land in the session's namespace
        ids: list[str] = []
        with acting("distill", session_id=sdir.session_id, user_id=sdir.user_id):
            for first, replies in taken:
                output = "\n".join(r.text for r in replies) or None
                result = await capture_turn(backend, first.text, output, caller=caller, worker=worker, extractor=extractor, at=_at(first))
                ids.extend(i for i in result.ids if i not in ids)
                report.fallbacks += int(result.fallback)
            through = (taken[-1][1] or [taken[-1][0]])[-1].n
            await _log_event(backend, "distilled", sdir, through=through, messages=size, written=len(ids))
        report.sessions.append(
            {"session_id": sdir.session_id, "user_id": sdir.user_id, "from": messages[0].n, "through": through, "ids": ids}
            | ({"namespace": sdir.namespace} if sdir.namespace else {})
        )
        report.messages += size
        report.written += len(ids)
        report.remaining += len(messages) - size
        budget -= size
        if budget <= 0:
            break
    return report
