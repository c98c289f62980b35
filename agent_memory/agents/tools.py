"""Narrow memory tools as pydantic-ai toolsets, bound to one backend and one caller.

``READ`` = search/get/list/search_sessions/episodes/links, ``CAPTURE`` = READ + remember/supersede,
``FOREGROUND`` = CAPTURE + forget + reflect (``memory_reflect`` is offered when the toolset is built from a
``MemoryProvider`` or given ``reflect=``). ``memory_curate`` (the caller's own curated lines) is in no set: it is
given by name (opt-in), e.g. ``tools = [..., "memory_curate"]`` in a capture worker's profile.
The caller's ``session_id``/``user_id`` are captured in closures: they are not tool
parameters, so a model can neither see nor change them. A memory remembered without a scope
goes to the caller's own partition (the user's, else the session's; shared project scope only
when the caller names neither). Bad arguments come back to the model as a retry message
(``ModelRetry``), never as a crash.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Literal

from pydantic_ai import ModelRetry
from pydantic_ai.toolsets import FunctionToolset

from agent_memory.agents.curated import OWN, add_line, remove_line, replace_line
from agent_memory.agents.fence import UNTRUSTED_NOTE, escape
from agent_memory.backends.base import (
    Caller,
    EpisodesBackend,
    LinksBackend,
    MemoryBackend,
    SessionsBackend,
    VectorsBackend,
    capability,
    require,
)
from agent_memory.errors import AgentMemoryError
from agent_memory.model import scopes
from agent_memory.model.curated import KIND as CURATED_KIND
from agent_memory.model.curated import priority_of
from agent_memory.model.drafts import MemoryDraft, check_on_existing
from agent_memory.model.lines import dates_text, summary_line
from agent_memory.sessions.api import caller_view

__all__ = ["READ", "CAPTURE", "FOREGROUND", "TOOL_SETS", "memory_toolset", "as_backend", "caller_scope"]

READ: tuple[str, ...] = ("memory_search", "memory_get", "memory_list", "memory_search_sessions", "memory_episodes", "memory_links")
CAPTURE: tuple[str, ...] = READ + ("memory_remember", "memory_supersede")
FOREGROUND: tuple[str, ...] = CAPTURE + ("memory_forget", "memory_reflect")
TOOL_SETS = {"read": READ, "capture": CAPTURE, "foreground": FOREGROUND}
CURATE: tuple[str, ...] = ("memory_curate",)  # opt-in: in no set, given by name
MAX_GET_CHARS = 8000


def _retry(exc: AgentMemoryError) -> ModelRetry:
    return ModelRetry(f"{type(exc).__name__}: {exc}")


def as_backend(source: Any) -> MemoryBackend:
    """``source`` if it is a :class:`MemoryBackend`, else its ``.backend`` (e.g. a ``MemoryProvider``)."""
    inner = getattr(source, "backend", None)
    if inner is not None and isinstance(inner, MemoryBackend):
        return inner
    if isinstance(source, MemoryBackend):
        return source
    raise TypeError(f"expected a MemoryBackend (or an object with a .backend), not {type(source).__name__}")


def clock_fields(obj: Any) -> dict[str, Any]:
    """When a record (or hit) was said and when it was true: ``recorded_at``, the set clocks, and ``dates`` in words."""
    recorded = getattr(obj, "recorded_at", "") or getattr(obj, "created", "")
    out: dict[str, Any] = {"recorded_at": recorded}
    for name in ("happened_at", "valid_from", "valid_to", "superseded_by"):
        if getattr(obj, name, None):
            out[name] = getattr(obj, name)
    out["dates"] = dates_text(recorded, getattr(obj, "happened_at", None), getattr(obj, "valid_from", None), getattr(obj, "valid_to", None))
    return out


def curated_fields(obj: Any) -> dict[str, Any]:
    """``{"curated": True, "priority": N}`` for a curated line (record or hit), else nothing."""
    if getattr(obj, "kind", None) != CURATED_KIND:
        return {}
    return {"curated": True, "priority": priority_of(getattr(obj, "metadata", None))}


def caller_scope(caller: Caller) -> str | None:
    """The scope a write defaults to for ``caller``: ``user`` if it names a user, else ``session``, else ``None``."""
    return "user" if caller.user_id else "session" if caller.session_id else None


def _namespace_kwargs(fn: Any, who: Caller) -> dict[str, Any]:
    """``namespace``/``isolation`` of ``who`` for a callable that takes them (a provider's ``reflect`` does), else none."""
    if fn is None or who.namespace is None:
        return {}
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}
    takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return {k: v for k, v in (("namespace", who.namespace), ("isolation", who.isolation)) if takes_all or k in params}


def memory_toolset(
    backend: Any,
    allowed: tuple[str, ...] | list[str] = READ,
    *,
    caller: Caller | None = None,
    session_id: str | None = None,
    user_id: str | None = None,
    default_scope: str | None = None,
    source: str = "tool",
    max_retries: int = 2,
    reflect: Any = None,
) -> FunctionToolset[Any]:
    """A toolset with exactly the ``allowed`` memory tools over ``backend``, bound to one caller.

    ``backend`` is a :class:`~agent_memory.backends.base.MemoryBackend` (a ``MemoryProvider`` works too:
    its ``.backend`` is used). The caller is ``caller`` or ``Caller(session_id, user_id)``.
    ``default_scope`` is the scope of a ``memory_remember`` call that names none (default: the
    caller's user, else its session, else the backend's default). ``reflect`` answers ``memory_reflect``
    (``async (question, *, session_id, user_id) -> Reflection``; default: ``backend.reflect`` of a provider).
    """
    unknown = set(allowed) - set(FOREGROUND) - set(CURATE)
    if unknown:
        raise ValueError(f"unknown memory tools: {sorted(unknown)}")
    store = as_backend(backend)
    who = caller if caller is not None else Caller(session_id=session_id, user_id=user_id)
    write_scope = default_scope or caller_scope(who)
    toolset: FunctionToolset[Any] = FunctionToolset(max_retries=max_retries)
    reflector = reflect if reflect is not None else getattr(backend, "reflect", None) if backend is not store else None
    where = _namespace_kwargs(reflector, who)  # the reflection reads what this caller reads

    async def memory_search(query: str, tags: list[str] | None = None, limit: int = 8, as_of: str | None = None) -> dict[str, Any]:
        """Search durable memory. Returns ranked snippets with record id, line range and dates (when said, when true).

        Args:
            query: What to look for, in plain words (a question works).
            tags: Optional tags that boost matching records (hints, not filters).
            limit: Maximum number of hits (1-50).
            as_of: Only what was held true at this ISO date (e.g. 2023-06-30), superseded facts included.
        """
        try:
            hits = (
                await store.search(
                    query, who, tags=tags or (), limit=max(1, min(int(limit), 50)), **({} if as_of is None else {"as_of": as_of})
                )
            ).hits
        except AgentMemoryError as exc:
            raise _retry(exc) from None
        return {
            "note": UNTRUSTED_NOTE,
            "hits": [
                {
                    "id": h.id,
                    "title": h.title,
                    "kind": h.kind,
                    "line_start": h.line_start,
                    "line_end": h.line_end,
                    "snippet": h.snippet,
                    "score": round(h.score, 3),
                    "updated": h.updated,
                    **clock_fields(h),
                    **curated_fields(h),
                }
                for h in hits
            ],
        }

    async def memory_get(id: str, line_start: int | None = None, line_end: int | None = None) -> dict[str, Any]:
        """Read one memory record by id; optionally only lines line_start..line_end of its file.

        Args:
            id: The record id from memory_search or memory_list.
            line_start: First file line to return (1-based), as given by memory_search.
            line_end: Last file line to return (inclusive).
        """
        try:
            rec = await store.get(id, who)
        except AgentMemoryError as exc:
            raise _retry(exc) from None
        content, first = rec.content, rec.body_line
        if line_start is not None or line_end is not None:
            lines = content.split("\n")
            lo = max(1, (line_start or first)) - first
            hi = (line_end or first + len(lines) - 1) - first
            if lo > hi or lo >= len(lines) or hi < 0:
                raise ModelRetry(f"lines {line_start}-{line_end} are outside the record body (lines {first}-{first + len(lines) - 1})")
            content = "\n".join(lines[max(lo, 0) : hi + 1])
        truncated = len(content) > MAX_GET_CHARS
        return {
            "note": UNTRUSTED_NOTE,
            "id": rec.id,
            "title": rec.title,
            "kind": rec.kind,
            "scope": rec.scope.value,
            "tags": list(rec.tags),
            "updated": rec.updated,
            "body_line": rec.body_line,
            **clock_fields(rec),
            "content": content[:MAX_GET_CHARS] + ("…" if truncated else ""),
            "truncated": truncated,
        }

    async def memory_list(
        tags: list[str] | None = None,
        kind: str | None = None,
        scope: Literal["session", "project", "user", "global"] | None = None,
        limit: int = 20,
        include_superseded: bool = False,
        as_of: str | None = None,
    ) -> dict[str, Any]:
        """List memory records, newest first, filtered exactly by tags, kind and scope.

        Args:
            tags: Only records carrying all of these tags.
            kind: Only records of this kind (fact, preference, decision, summary, ...).
            scope: Only records of this scope.
            limit: Maximum number of records (1-100).
            include_superseded: Also list facts a newer fact has replaced.
            as_of: Only what was held true at this ISO date (e.g. 2023-06-30).
        """
        try:
            recs = await store.list(
                who,
                tags=tags or (),
                kind=kind,
                scope=scope,
                limit=max(1, min(int(limit), 100)),
                **({"include_superseded": True} if include_superseded is True else {}),
                **({} if as_of is None else {"as_of": as_of}),
            )
        except AgentMemoryError as exc:
            raise _retry(exc) from None
        return {
            "note": UNTRUSTED_NOTE,
            "records": [
                {
                    "id": r.id,
                    "title": r.title,
                    "kind": r.kind,
                    "scope": r.scope.value,
                    "tags": list(r.tags),
                    "updated": r.updated,
                    "summary": summary_line(r.content, 120),
                    **clock_fields(r),
                    **curated_fields(r),
                }
                for r in recs
            ],
        }

    async def memory_search_sessions(query: str, limit: int = 5) -> dict[str, Any]:
        """Find earlier conversations (sessions) by their summaries, with their best-matching messages.

        Args:
            query: What to look for, in plain words (a question works).
            limit: Maximum number of sessions (1-20).
        """
        from agent_memory.sessions.contextual import search_sessions

        vectors = capability(store, VectorsBackend)
        try:
            sessions = require(store, SessionsBackend, "session logs", "use memory_search").sessions
            with scopes.viewing(await caller_view(store, who)):  # the caller's namespace view (docs/namespaces.md)
                found = await asyncio.to_thread(
                    search_sessions,
                    sessions,
                    query,
                    session_id=who.session_id,
                    user_id=who.user_id,
                    limit=max(1, min(int(limit), 20)),
                    embedder=None if vectors is None else vectors.embedder,
                )
        except AgentMemoryError as exc:
            raise _retry(exc) from None
        return {"note": UNTRUSTED_NOTE, "sessions": found}

    async def memory_remember(
        content: str,
        title: str | None = None,
        kind: str | None = None,
        scope: Literal["session", "project", "user", "global"] | None = None,
        tags: list[str] | None = None,
        memory_key: str | None = None,
        on_existing: Literal["append", "replace", "skip"] = "append",
        importance: float | None = None,
        expires: str | None = None,
        happened_at: str | None = None,
        valid_from: str | None = None,
        valid_to: str | None = None,
    ) -> dict[str, Any]:
        """Store one durable memory. Exact duplicates are detected and not stored twice.

        Args:
            content: The memory itself: one self-contained fact, preference or decision.
            title: A short title.
            kind: fact, preference, decision, summary, ...
            scope: Leave it out to keep the memory private to this user (or this conversation); session (this
                conversation only), user, project (shared with everyone using this memory) or global.
            tags: A few lowercase tags.
            memory_key: Stable key (or an existing record id) of one logical memory to extend or replace.
            on_existing: With memory_key: append to it, replace it, or skip if it exists.
            importance: How much this matters, from 0 (trivia) to 1 (critical); leave it out if unsure.
            expires: When this stops being true or useful (ISO date or datetime in the future), if ever.
            happened_at: When it happened or was said (ISO date), resolved from the conversation's own dates.
            valid_from: Since when it is true (ISO date), if known.
            valid_to: Until when it was true (ISO date), if known.
        """
        try:
            check_on_existing(on_existing, memory_key)
            draft = MemoryDraft(
                content,
                title=title,
                kind=kind,
                scope=scope or write_scope,
                tags=tuple(tags or ()),
                memory_key=memory_key,
                on_existing=on_existing,
                session_id=who.session_id,
                user_id=who.user_id,
                namespace=who.namespace,
                importance=importance,
                expires=expires,
                happened_at=happened_at,
                valid_from=valid_from,
                valid_to=valid_to,
            )
            result = await store.remember(draft, source=source)
        except AgentMemoryError as exc:
            raise _retry(exc) from None
        out: dict[str, Any] = {"id": result.id, "status": result.status}
        if result.status == "created":  # a new fact beside one it contradicts: say so (memory_supersede replaces it)
            from agent_memory.consolidate.contradict import contradiction_notes

            offered = "memory_supersede" in allowed  # without the tool this caller can supersede nothing
            if found := await contradiction_notes(
                store, content, who, key=memory_key, written=result.id, may_write=None if offered else lambda scope: False
            ):
                # stored text the model reads next: escaped as every worker prompt is (agents/fence.py)
                out["contradicts"] = [{k: escape(v) if isinstance(v, str) else v for k, v in note.items()} for note in found]
        return out

    async def memory_supersede(
        id: str,
        content: str,
        title: str | None = None,
        kind: str | None = None,
        tags: list[str] | None = None,
        happened_at: str | None = None,
        valid_from: str | None = None,
    ) -> dict[str, Any]:
        """Replace an outdated memory with a new fact; the old one is kept as history, no longer current.

        Args:
            id: The record id of the outdated memory (from memory_search or memory_list).
            content: The new fact that replaces it.
            title: A short title.
            kind: fact, preference, decision, summary, ...
            tags: A few lowercase tags.
            happened_at: When the change happened or was said (ISO date), if known.
            valid_from: Since when the new fact is true (ISO date), if known.
        """
        try:
            old = await store.get(id, who)  # the new fact goes to the old one's partition (the only one allowed)
            draft = MemoryDraft(
                content,
                title=title,
                kind=kind,
                scope=old.scope.value,
                tags=tuple(tags or ()),
                session_id=who.session_id,
                user_id=who.user_id,
                namespace=who.namespace,
                happened_at=happened_at,
                valid_from=valid_from,
                supersedes=id,
            )
            result = await store.remember(draft, source=source)
        except AgentMemoryError as exc:
            raise _retry(exc) from None
        return {"id": result.id, "status": result.status, "supersedes": id}

    async def memory_forget(id: str) -> dict[str, Any]:
        """Forget one memory record by id (it is archived: the user can restore it).

        Args:
            id: The record id.
        """
        try:
            return {"id": id, "forgotten": await store.forget(id, who)}
        except AgentMemoryError as exc:
            raise _retry(exc) from None

    async def memory_episodes(
        query: str | None = None, status: Literal["ok", "failed", "paused"] | None = None, limit: int = 5
    ) -> dict[str, Any]:
        """Past agent runs (episodes): goal, approach (tools in order), what worked and failed, how each ended.

        Args:
            query: What the runs were about, in plain words; leave it out for the most recent runs.
            status: Only runs that ended ok, failed, or paused (waiting for approval).
            limit: Maximum number of episodes (1-20).
        """
        try:
            episodes = require(store, EpisodesBackend, "episodes").episodes
            with scopes.viewing(await caller_view(store, who)):  # the caller's namespace view (docs/namespaces.md)
                found = await asyncio.to_thread(
                    episodes.list,
                    query or None,
                    session_id=who.session_id,
                    user_id=who.user_id,
                    status=status,
                    limit=max(1, min(int(limit), 20)),
                )
        except AgentMemoryError as exc:
            raise _retry(exc) from None
        return {
            "note": UNTRUSTED_NOTE,
            "episodes": [
                {
                    "id": e.id,
                    "started": e.started,
                    "goal": e.goal,
                    "approach": e.approach,
                    "worked": list(e.worked),
                    "failed": list(e.failed),
                    "exit": e.exit,
                    "status": e.status,
                    "exit_detail": e.exit_detail,
                    "tokens": e.tokens,
                }
                for e in found
            ],
        }

    async def memory_reflect(question: str) -> dict[str, Any]:
        """Answer a question from memory: a short synthesis that cites the records it rests on.

        Args:
            question: The question, in plain words.
        """
        if not isinstance(question, str) or not question.strip():
            raise ModelRetry("question must be a non-empty string")
        assert reflector is not None  # offered only with one
        res = await reflector(question, session_id=who.session_id, user_id=who.user_id, **where)
        return {"note": UNTRUSTED_NOTE, **res.to_dict()}

    async def memory_links(id: str) -> dict[str, Any]:
        """The [[links]] written in one memory record and the records that link to it (backlinks): related memories.

        Args:
            id: The record id from memory_search, memory_get or memory_list.
        """
        try:
            found = await require(store, LinksBackend, "links").links(id, who)
        except AgentMemoryError as exc:
            raise _retry(exc) from None
        return {"note": UNTRUSTED_NOTE, **found.to_dict()}  # unresolved: no record this caller may see has that id/title

    # -- memory_curate: the caller's own curated lines (agent_memory.agents.curated); opt-in, never another user's --
    async def memory_curate(
        action: Literal["add", "replace", "remove"],
        text: str | None = None,
        id: str | None = None,
        priority: int | None = None,
    ) -> dict[str, Any]:
        """Keep a short line in this user's curated memory: lines shown first in every conversation's memory block.

        Only for what should always be at hand (a standing preference, a name, a rule). One line each.

        Args:
            action: add a line, replace one (by id: new text and/or priority), or remove one (by id).
            text: The line itself (one line, at most 300 characters): for add, and for replace when the text changes.
            id: The id of the curated line to replace or remove (as shown in the memory block).
            priority: 1 (low) to 10 (high): higher lines come first and survive a small budget. Default 5.
        """
        try:
            if action == "add":
                if text is None:
                    raise ModelRetry("add needs the text of the line")
                result = await add_line(store, who, text, priority=priority, source=source)
            elif action in ("replace", "remove"):
                if not isinstance(id, str) or not id:
                    raise ModelRetry(f"{action} needs the id of one of this user's curated lines")
                if action == "remove":
                    return {"id": id, "removed": await remove_line(store, who, id, source=source, scopes=OWN)}
                result = await replace_line(store, who, id, text, priority=priority, source=source, scopes=OWN)
            else:
                raise ModelRetry("action is add, replace or remove")
        except AgentMemoryError as exc:
            raise _retry(exc) from None
        return {"id": result.id, "status": result.status}

    for fn in (
        memory_links,
        memory_search,
        memory_get,
        memory_list,
        memory_search_sessions,
        memory_episodes,
        memory_remember,
        memory_supersede,
        memory_forget,
        memory_reflect,
        memory_curate,
    ):
        if fn is memory_episodes and capability(store, EpisodesBackend) is None:
            continue  # a backend without episodes (not an EpisodesBackend) does not offer the tool
        if fn is memory_search_sessions and capability(store, SessionsBackend) is None:
            continue  # likewise session logs
        if fn is memory_links and capability(store, LinksBackend) is None:
            continue  # a backend without a link table does not offer the tool
        if fn is memory_reflect and reflector is None:
            continue  # reflect needs the provider's worker: offered only when one is at hand
        if fn.__name__ in allowed:
            toolset.add_function(fn, name=fn.__name__)
    return toolset


def _has_episodes(store: MemoryBackend) -> bool:
    """Whether ``store`` (or the backend it wraps) offers episodes."""
    return capability(store, EpisodesBackend) is not None
