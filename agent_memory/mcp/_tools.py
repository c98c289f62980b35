"""The MCP memory tools: definitions (schema, aliases, annotations) and what each call does.

Every tool runs for the connection's :class:`~agent_memory.mcp._config.Identity`; none takes a
session, user or owner argument. Writes obey the identity's ``access`` (read / own / shared), checked against
the scope of the record written, replaced or forgotten. Read results carry the untrusted-data note and are bounded
(``max_output_chars``) and paginated with an opaque ``cursor``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agent_memory.agents.curated import OWN, add_line, remove_line, replace_line
from agent_memory.agents.fence import UNTRUSTED_NOTE
from agent_memory.agents.tools import as_backend, clock_fields, curated_fields
from agent_memory.errors import InvalidInputError
from agent_memory.mcp._args import Param
from agent_memory.mcp._config import AccessDeniedError, Identity
from agent_memory.model.drafts import MemoryDraft, check_on_existing
from agent_memory.model.lines import summary_line
from agent_memory.model.wording import record_not_found

__all__ = ["ToolSpec", "SPECS", "Runtime"]

MAX_OFFSET = 1000
MAX_GET_CHARS = 8000
_SCOPES = ("session", "project", "user", "global")


@dataclass(slots=True)
class Runtime:
    """What the tools run against: a provider (backend + workers) and the output bound."""

    provider: Any
    max_output_chars: int = 20_000

    @property
    def backend(self) -> Any:
        return as_backend(self.provider)


Executor = Callable[[Runtime, Identity, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    title: str
    description: str
    params: tuple[Param, ...]
    read_only: bool
    destructive: bool
    idempotent: bool
    run: Executor

    def input_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {p.name: p.schema() for p in self.params},
            "required": [p.name for p in self.params if p.required],
        }


def _when(a: dict[str, Any]) -> dict[str, Any]:
    """The time filters a read call gave: ``as_of`` (what held then) and ``include_superseded``."""
    out: dict[str, Any] = {"include_superseded": True} if a.get("include_superseded") is True else {}
    if a.get("as_of") is not None:
        out["as_of"] = a["as_of"]
    return out


_CURSOR_RE = re.compile(rf"o[0-9]{{1,{len(str(MAX_OFFSET))}}}", re.ASCII)


def _offset(cursor: str | None) -> int:
    """The offset a cursor we issued names: ``o`` and up to a few ASCII digits, at most ``MAX_OFFSET``.

    Anything else (another digit script, thousands of digits) is a typed error quoting at most 40 characters."""
    if cursor is None:
        return 0
    if not isinstance(cursor, str) or not _CURSOR_RE.fullmatch(cursor) or int(cursor[1:]) > MAX_OFFSET:
        text = str(cursor)
        shown = repr(text[:40]) + ("..." if len(text) > 40 else "")
        raise InvalidInputError(f"invalid cursor {shown}: pass back the next_cursor of the previous page")
    return int(cursor[1:])


def _fit(items: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """The longest prefix of ``items`` whose JSON fits in ``budget`` characters (at least one item)."""
    out: list[dict[str, Any]] = []
    used = 0
    for item in items:
        used += len(json.dumps(item, ensure_ascii=False)) + 2
        if out and used > budget:
            break
        out.append(item)
    return out


def _page(items: list[dict[str, Any]], offset: int, limit: int, budget: int, more: bool) -> dict[str, Any]:
    shown = _fit(items[:limit], budget)
    has_more = len(shown) < len(items) or more
    nxt = f"o{offset + len(shown)}" if has_more and offset + len(shown) < MAX_OFFSET else None
    return {"count": len(shown), "next_cursor": nxt}


_STAGE_ARGS = ("recency", "decay", "mmr", "min_score")


def _stages(a: dict[str, Any]) -> dict[str, Any]:
    """``{"stages": [...]}`` for the ranking arguments given (as the CLI's ``--recency``/``--decay``/``--mmr``/
    ``--min-score``; docs/search.md), else ``{}``: the default ranking. A bad value is an :class:`InvalidInputError`."""
    if a.get("recency") is not True and all(a.get(k) is None for k in _STAGE_ARGS[1:]):
        return {}
    from agent_memory.search.tuning import search_stages

    try:
        stages = search_stages(
            recency=a.get("recency") is True or None, decay_days=a.get("decay"), mmr=a.get("mmr"), min_score=a.get("min_score")
        )
    except InvalidInputError as exc:  # named as the tool's arguments are
        raise InvalidInputError(f"memory_search: {str(exc).replace('decay_days', 'decay')}") from None
    return {"stages": stages}


async def _search(rt: Runtime, who: Identity, a: dict[str, Any]) -> dict[str, Any]:
    offset, limit = _offset(a.get("cursor")), a["limit"]
    stages = _stages(a)  # checked before anything is read
    want = min(offset + limit + 1, MAX_OFFSET)  # the store ranks at most MAX_OFFSET hits
    result = await rt.backend.search(a["query"], who.caller, tags=tuple(a.get("tags") or ()), limit=want, **_when(a), **stages)
    rows = [
        {
            "id": h.id,
            "title": h.title,
            "kind": h.kind,
            "scope": h.scope,
            "line_start": h.line_start,
            "line_end": h.line_end,
            "snippet": h.snippet,
            "score": round(h.score, 3),
            "updated": h.updated,
            **clock_fields(h),
            **curated_fields(h),
        }
        for h in result.hits[offset:]
    ]
    page = _page(rows, offset, limit, rt.max_output_chars - 500, len(rows) > limit)
    return {"note": UNTRUSTED_NOTE, "hits": rows[: page["count"]], "next_cursor": page["next_cursor"]}


async def _list(rt: Runtime, who: Identity, a: dict[str, Any]) -> dict[str, Any]:
    offset, limit = _offset(a.get("cursor")), a["limit"]
    filters = {"tags": tuple(a.get("tags") or ()), "kind": a.get("kind"), "scope": a.get("scope")}
    recs = await rt.backend.list(who.caller, limit=offset + limit + 1, **filters, **_when(a))
    total = await rt.backend.count(who.caller, **filters, **_when(a))
    rows = [
        {
            "id": r.id,
            "title": r.title,
            "kind": r.kind,
            "scope": r.scope.value,
            "tags": list(r.tags),
            "updated": r.updated,
            "summary": summary_line(r.content, 160),
            **clock_fields(r),
            **curated_fields(r),
        }
        for r in recs[offset:]
    ]
    page = _page(rows, offset, limit, rt.max_output_chars - 500, len(rows) > limit)
    return {"note": UNTRUSTED_NOTE, "total": total, "records": rows[: page["count"]], "next_cursor": page["next_cursor"]}


async def _get(rt: Runtime, who: Identity, a: dict[str, Any]) -> dict[str, Any]:
    rec = await rt.backend.get(a["id"], who.caller)
    lines = rec.content.split("\n")
    first, last = rec.body_line, rec.body_line + len(lines) - 1
    lo, hi = a.get("line_start", first), a.get("line_end", last)
    if lo > hi or lo > last or hi < first:
        raise InvalidInputError(f"lines {lo}-{hi} are outside the record body (lines {first}-{last})")
    lo, hi = max(lo, first), min(hi, last)
    budget = min(MAX_GET_CHARS, rt.max_output_chars - 1000)
    shown: list[str] = []
    used = 0
    for line in lines[lo - first : hi - first + 1]:
        if shown and used + len(line) + 1 > budget:
            break
        shown.append(line[:budget])
        used += len(line) + 1
    end = lo + len(shown) - 1
    return {
        "note": UNTRUSTED_NOTE,
        "id": rec.id,
        "title": rec.title,
        "kind": rec.kind,
        "scope": rec.scope.value,
        **({"namespace": rec.namespace} if rec.namespace else {}),  # a root record's answer is unchanged
        "tags": list(rec.tags),
        "updated": rec.updated,
        **clock_fields(rec),
        "line_start": lo,
        "line_end": end,
        "content": "\n".join(shown),
        "truncated": end < hi,
        "next_line_start": end + 1 if end < hi else None,
    }


async def _links(rt: Runtime, who: Identity, a: dict[str, Any]) -> dict[str, Any]:
    """A visible record's outgoing links and backlinks, resolved among what the connection's identity may see (its
    user, session and namespace): a link to a record it may not see is unresolved, never named."""
    from agent_memory.backends.base import LinksBackend, require

    found = (await require(rt.backend, LinksBackend, "links", "use memory_search").links(a["id"], who.caller)).to_dict()
    budget = (rt.max_output_chars - 1000) // 2
    outgoing, backlinks = _fit(found["outgoing"], budget), _fit(found["backlinks"], budget)
    return {
        "note": UNTRUSTED_NOTE,
        **found,
        "outgoing": outgoing,
        "backlinks": backlinks,
        "truncated": len(outgoing) < len(found["outgoing"]) or len(backlinks) < len(found["backlinks"]),
    }


async def _recall(rt: Runtime, who: Identity, a: dict[str, Any]) -> dict[str, Any]:
    recall = getattr(rt.provider, "recall", None)
    if recall is None:
        raise InvalidInputError("memory_recall needs a MemoryProvider (this server was given a bare backend)")
    res = await recall(a["message"], session_id=who.session_id, user_id=who.user_id, namespace=who.namespace, isolation=who.isolation)
    summary = res.summary[: rt.max_output_chars - 2000]
    return {"note": UNTRUSTED_NOTE, "summary": summary, "sources": res.sources[:20], "tokens": res.tokens, "fallback": res.fallback}


async def _remember(rt: Runtime, who: Identity, a: dict[str, Any]) -> dict[str, Any]:
    scope = a.get("scope") or who.write_scope
    who.check_write("memory_remember", scope)
    check_on_existing(a.get("on_existing"), a.get("memory_key"))
    draft = MemoryDraft(
        a["content"],
        title=a.get("title"),
        kind=a.get("kind"),
        scope=scope,
        tags=tuple(a.get("tags") or ()),
        memory_key=a.get("memory_key"),
        on_existing=a.get("on_existing", "append"),
        session_id=who.session_id,
        user_id=who.user_id,
        namespace=who.namespace,
        **{k: a[k] for k in _DRAFT_EXTRAS if a.get(k) is not None},
    )
    res = await rt.backend.remember(draft, source="tool")
    out: dict[str, Any] = {"id": res.id, "status": res.status, "redactions": res.redactions}
    if res.status == "created":  # a new fact beside one it contradicts: say so (memory_supersede replaces it)
        from agent_memory.consolidate.contradict import contradiction_notes

        def may_write(scope: str) -> bool:  # this connection's own limits (memory_supersede checks them the same way)
            try:
                who.check_write("memory_supersede", scope)
            except AccessDeniedError:
                return False
            return True

        if found := await contradiction_notes(
            rt.backend, a["content"], who.caller, key=a.get("memory_key"), written=res.id, may_write=may_write
        ):
            out["contradicts"] = found
    return out


_DRAFT_EXTRAS = ("importance", "expires", "happened_at", "valid_from", "valid_to")


async def _supersede(rt: Runtime, who: Identity, a: dict[str, Any]) -> dict[str, Any]:
    who.check_writable("memory_supersede")  # read-only: refused before anything is read
    old = await rt.backend.get(a["id"], who.caller)  # visible to this caller, and the new fact goes to its partition
    who.check_write("memory_supersede", old.scope.value)  # a memory-tool file or curated line: the backend refuses it
    draft = MemoryDraft(
        a["content"],
        title=a.get("title"),
        kind=a.get("kind"),
        scope=old.scope.value,
        tags=tuple(a.get("tags") or ()),
        session_id=who.session_id,
        user_id=who.user_id,
        namespace=who.namespace,
        supersedes=old.id,
        **{k: a[k] for k in ("happened_at", "valid_from") if a.get(k) is not None},
    )
    res = await rt.backend.remember(draft, source="tool")
    return {"id": res.id, "status": res.status, "supersedes": old.id, "redactions": res.redactions}


async def _forget(rt: Runtime, who: Identity, a: dict[str, Any]) -> dict[str, Any]:
    if who.access != "shared":
        who.check_writable("memory_forget")
        old = await rt.backend.get(a["id"], who.caller)  # NotFoundError when it is not visible
        who.check_write("memory_forget", old.scope.value)
    if not await rt.backend.forget(a["id"], who.caller):
        raise record_not_found(a["id"])
    return {"id": a["id"], "forgotten": True}


async def _curate(rt: Runtime, who: Identity, a: dict[str, Any]) -> dict[str, Any]:
    """The connection's own user's curated lines (never another user's, never a shared line: people curate those)."""
    who.check_write("memory_curate", "user")
    action = a["action"]
    if action == "add":
        if a.get("text") is None:
            raise InvalidInputError("memory_curate add needs text")
        res = await add_line(rt.backend, who.caller, a["text"], priority=a.get("priority"))
    elif not a.get("id"):
        raise InvalidInputError(f"memory_curate {action} needs the id of one of this user's curated lines")
    elif action == "remove":
        return {"id": a["id"], "removed": await remove_line(rt.backend, who.caller, a["id"], scopes=OWN)}
    else:
        res = await replace_line(rt.backend, who.caller, a["id"], a.get("text"), priority=a.get("priority"), scopes=OWN)
    return {"id": res.id, "status": res.status, "redactions": res.redactions}


_ID = Param(
    "id",
    "string",
    "The record id from memory_search or memory_list.",
    required=True,
    aliases=("record_id", "memory_id", "recordId", "memoryId"),
)
_LIMIT_ALIASES = ("k", "top_k", "topk", "n", "max_results", "count", "page_size")
_CURSOR = Param(
    "cursor", "string", "next_cursor of the previous page, to read the next one.", aliases=("next_cursor", "page_token", "offset_token")
)
_TAGS = Param("tags", "array", "Tags (a list of strings).", aliases=("tag", "labels"))
_SCOPE = Param("scope", "string", "session, project, user or global.", enum=_SCOPES)
_AS_OF = Param(
    "as_of", "string", "Only what was held true at this ISO date (e.g. 2023-06-30), replaced facts included.", aliases=("at", "asOf")
)
_SUPERSEDED = Param("include_superseded", "boolean", "Also show facts a newer fact has replaced.", aliases=("includeSuperseded", "history"))
_HAPPENED = Param("happened_at", "string", "When it happened or was said (ISO date), if known.", aliases=("happenedAt", "when"))
_VALID_FROM = Param("valid_from", "string", "Since when it is true (ISO date), if known.", aliases=("validFrom",))

SPECS: dict[str, ToolSpec] = {
    s.name: s
    for s in (
        ToolSpec(
            "memory_search",
            "Search memory",
            "Search durable memory in plain words (a question works). Returns ranked snippets with record id and "
            "line range; read a record with memory_get. Paginated: pass next_cursor back as cursor.",
            (
                Param("query", "string", "What to look for.", required=True, aliases=("q", "text", "search", "question")),
                Param("limit", "integer", "Hits per page (1-50).", aliases=_LIMIT_ALIASES, minimum=1, maximum=50, default=8),
                _TAGS,
                _CURSOR,
                _AS_OF,
                _SUPERSEDED,
                Param("recency", "boolean", "Newer records rise (a boost with a 30-day half-life)."),
                Param(
                    "decay",
                    "number",
                    "Old records sink: a score halves every this many days of age (> 0).",
                    aliases=("decay_days", "half_life_days"),
                ),
                Param("mmr", "number", "Diversity in [0, 1]: lower demotes near-duplicates of better hits more.", aliases=("diversity",)),
                Param(
                    "min_score",
                    "number",
                    "Drop hits scoring below this share of the best hit's score, in [0, 1].",
                    aliases=("minScore", "threshold"),
                ),
            ),
            read_only=True,
            destructive=False,
            idempotent=True,
            run=_search,
        ),
        ToolSpec(
            "memory_links",
            "Links of a memory record",
            "The [[links]] written in one memory record and the records that link to it (backlinks): related memories. "
            "A link to a record this connection may not see is unresolved (record_id null).",
            (_ID,),
            read_only=True,
            destructive=False,
            idempotent=True,
            run=_links,
        ),
        ToolSpec(
            "memory_get",
            "Read a memory record",
            "Read one memory record by id, optionally only lines line_start..line_end (as given by memory_search). "
            "Long records come in parts: continue from next_line_start.",
            (
                _ID,
                Param("line_start", "integer", "First line (1-based).", aliases=("start", "from_line", "start_line"), minimum=1),
                Param("line_end", "integer", "Last line (inclusive).", aliases=("end", "to_line", "end_line"), minimum=1),
            ),
            read_only=True,
            destructive=False,
            idempotent=True,
            run=_get,
        ),
        ToolSpec(
            "memory_list",
            "List memory records",
            "List memory records, newest first, filtered exactly by tags, kind and scope. Paginated: pass next_cursor back as cursor.",
            (
                _TAGS,
                Param("kind", "string", "fact, preference, decision, summary, ...", aliases=("type",)),
                _SCOPE,
                Param("limit", "integer", "Records per page (1-100).", aliases=_LIMIT_ALIASES, minimum=1, maximum=100, default=20),
                _CURSOR,
                _AS_OF,
                _SUPERSEDED,
            ),
            read_only=True,
            destructive=False,
            idempotent=True,
            run=_list,
        ),
        ToolSpec(
            "memory_recall",
            "Recall what memory knows",
            "One compact, cited summary of what memory knows that is relevant to a message or question.",
            (
                Param(
                    "message",
                    "string",
                    "The user's message or question.",
                    required=True,
                    aliases=("query", "q", "text", "question", "prompt"),
                ),
            ),
            read_only=True,
            destructive=False,
            idempotent=True,
            run=_recall,
        ),
        ToolSpec(
            "memory_remember",
            "Remember",
            "Store one durable memory: one self-contained fact, preference or decision. Exact duplicates are not "
            "stored twice; secrets are redacted. Without scope it stays private to this user (or conversation).",
            (
                Param("content", "string", "The memory itself.", required=True, aliases=("text", "memory", "fact", "body")),
                Param("title", "string", "A short title.", aliases=("name", "subject")),
                Param("kind", "string", "fact, preference, decision, summary, ...", aliases=("type", "category")),
                _SCOPE,
                _TAGS,
                Param(
                    "memory_key",
                    "string",
                    "Stable key (or record id) of one logical memory to extend or replace.",
                    aliases=("key", "memoryKey"),
                ),
                Param(
                    "on_existing",
                    "string",
                    "With memory_key: append, replace (the old text stays as history) or skip.",
                    aliases=("mode",),
                    enum=("append", "replace", "skip"),
                ),
                Param(
                    "importance",
                    "number",
                    "How much this matters, 0 (trivia) to 1 (critical); leave out if unsure.",
                    aliases=("priority", "weight"),
                    minimum=0,
                    maximum=1,
                ),
                Param(
                    "expires",
                    "string",
                    "When this stops being true or useful (ISO date), if ever.",
                    aliases=("expires_at", "ttl", "expiry"),
                ),
                _HAPPENED,
                _VALID_FROM,
                Param("valid_to", "string", "Until when it was true (ISO date), if known.", aliases=("validTo",)),
            ),
            read_only=False,
            destructive=False,
            idempotent=True,
            run=_remember,
        ),
        ToolSpec(
            "memory_supersede",
            "Replace an outdated memory",
            "Replace an outdated memory (by id) with a new fact. The old one is kept as history (memory_search with "
            "include_superseded or as_of still finds it) and no longer shows by default.",
            (
                _ID,
                Param("content", "string", "The new fact.", required=True, aliases=("text", "memory", "fact", "body")),
                Param("title", "string", "A short title.", aliases=("name", "subject")),
                Param("kind", "string", "fact, preference, decision, summary, ...", aliases=("type", "category")),
                _TAGS,
                _HAPPENED,
                _VALID_FROM,
            ),
            read_only=False,
            destructive=False,
            idempotent=False,
            run=_supersede,
        ),
        ToolSpec(
            "memory_forget",
            "Forget a memory",
            "Forget one memory record by id: it leaves search and lists at once (archived: the memory's owner can "
            "restore it with agent-memory restore).",
            (_ID,),
            read_only=False,
            destructive=True,
            idempotent=True,
            run=_forget,
        ),
        ToolSpec(
            "memory_curate",
            "Curate a line",
            "Add, replace or remove one line of this user's curated memory: short lines (priority 1-10) shown first "
            "in every conversation's memory block. One line each, at most 300 characters; secrets are redacted.",
            (
                Param("action", "string", "add, replace (by id) or remove (by id).", required=True, enum=("add", "replace", "remove")),
                Param("text", "string", "The line (add; replace when the text changes).", aliases=("content", "line")),
                Param("id", "string", "The curated line's id (replace, remove).", aliases=("record_id", "line_id")),
                Param("priority", "integer", "1 (low) to 10 (high); default 5.", minimum=1, maximum=10),
            ),
            read_only=False,
            destructive=True,
            idempotent=False,
            run=_curate,
        ),
    )
}
