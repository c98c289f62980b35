"""The capture worker: store durable facts from a finished turn or from messages about to be compacted.

By default a pydantic-ai ``Agent`` with the CAPTURE memory tools (search/get/list/remember; never
forget, never file tools) reads the transcript, searches what exists, remembers only new durable
facts and replies ``NO_REPLY``. Its ``memory_remember``/``memory_supersede`` calls are staged and written in one
batch when the run ends well, so a run that fails (model error, timeout, step limit) writes nothing; so are its
``memory_curate`` calls (when the profile offers the tool), applied after the batch, in call order (``curated``).
Writes go through the store, which verifies each one (redaction, duplicates, ``memory_key``
policy) and tags it ``source="turn_capture"`` or ``"compaction_capture"``; a draft the store
rejects is reported in ``rejected`` and does not stop the others. If the provider has an extractor
function for the hook, it runs instead of the agent and its drafts are written the same way.
Capture never raises: failures come back as ``fallback=True`` with a reason.

Where memories go: a draft without a scope belongs to the caller (its user, else its session);
shared ``project``/``global`` scope only when asked for explicitly and the fact is not personal.
A keyed draft holds one fact: a compound statement ("my favourite colour is orange and I'm allergic
to peanuts") is split, so a later replace of the key changes only that fact. The transcript is
escaped like the main model's fence: ``</transcript>`` and look-alikes in user text cannot end it.

Time: a turn's own timestamp (``at``, else the time stamped on its messages) heads the transcript as a
``Date:`` line, so relative dates ("yesterday") resolve against when they were said, never against the
moment capture runs; drafts carry ``happened_at``. ``memory_supersede`` lets the worker replace a fact it
finds outdated, but only a record capture wrote in the caller's own partition (checked when it is called
and again by the store when the staged write is committed).

Contradictions: before the batch is written, each draft is checked against what the caller sees
(:mod:`agent_memory.consolidate.contradict`); one that states a different value for the subject of a current record
capture wrote in the same partition supersedes that record (kept, out of default reads, restorable) instead of
standing beside it. The check fails open: if it fails, the draft is written as it was.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import inspect
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Union

from pydantic_ai import ModelRetry
from pydantic_ai.usage import RunUsage

from agent_memory.agents.fence import escape
from agent_memory.agents.models.offline import extract_statements
from agent_memory.agents.tools import caller_scope
from agent_memory.agents.workers.capture_render import _first_timestamp, render_messages
from agent_memory.agents.workers.runner import (
    RecordingToolset,
    ToolCallRecord,
    bound_toolset,
    describe_error,
    resolve_worker,
    run_worker,
    usage_dict,
)
from agent_memory.backends.base import Caller, MemoryBackend
from agent_memory.errors import AgentMemoryError, InvalidInputError
from agent_memory.model.drafts import MemoryDraft
from agent_memory.model.records import check_content, validate_key
from agent_memory.model.scopes import SHARED_SCOPES
from agent_memory.redaction.api import redact_text

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.agents.profiles import WorkerProfile

__all__ = [
    "CaptureResult",
    "CaptureContext",
    "Extractor",
    "capture_turn",
    "capture_before_compaction",
    "render_messages",
    "rule_extractor",
    "is_personal",
    "split_facts",
    "capture_prompt",
]

DraftLike = MemoryDraft | Mapping[str, Any] | str
Drafts = DraftLike | Iterable[DraftLike] | None
_CHANGED = ("created", "appended", "replaced", "superseded")
_CAPTURE_SOURCES = frozenset({"turn_capture", "compaction_capture"})
STAGED = ("memory_remember", "memory_supersede", "memory_curate")  # a capture worker's writes: staged, then committed


@dataclass(frozen=True)
class CaptureContext:
    """What an extractor sees: the hook, the rendered transcript, the raw inputs and the caller."""

    kind: Literal["turn", "compaction"]
    transcript: str
    input: str | None = None
    output: str | None = None
    removed_messages: Sequence[Any] = ()
    next_summary: str | None = None
    session_id: str | None = None
    user_id: str | None = None
    said_at: dt.datetime | None = None
    namespace: str | None = None  # the caller's: every draft of the capture is written there
    isolation: str | None = None

    @property
    def caller(self) -> Caller:
        return Caller(session_id=self.session_id, user_id=self.user_id, namespace=self.namespace, isolation=self.isolation)  # type: ignore[arg-type]


Extractor = Callable[[CaptureContext], Drafts | Awaitable[Drafts]]
"""A plain function (sync or async) turning a :class:`CaptureContext` into memory drafts.

It may return ``None``, one :class:`MemoryDraft`, a dict with MemoryDraft fields, a string (the
content), or an iterable of those.
"""


@dataclass
class CaptureResult:
    """What capture wrote (``{id, status}`` per stored draft, in order), what the store rejected, and how it went.

    ``contradicted``: each visible record a draft contradicted (``{index, contradicts, title, reason, action}``;
    ``action`` is ``superseded``, or ``kept`` when capture may not change that record). ``curated``: each staged
    ``memory_curate`` call as applied (``{action, id, status}``, or ``{action, id, error}`` when it was refused)."""

    written: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=lambda: usage_dict(None))
    fallback: bool = False
    reason: str | None = None
    elapsed_s: float = 0.0
    model: str | None = None
    contradicted: list[dict[str, Any]] = field(default_factory=list)
    curated: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        """Ids of records this capture changed (created, appended or replaced), without repeats."""
        return list(dict.fromkeys(w["id"] for w in self.written if w.get("status") in _CHANGED))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``written, ids, rejected, usage, fallback, reason, elapsed_s, model, contradicted``."""
        data = asdict(self)
        data["ids"] = self.ids
        return data


_PROMPT_TAGS = ("transcript", "summary")


def capture_prompt(ctx: CaptureContext) -> str:
    """The capture worker's user prompt: the transcript between ``<transcript>`` tags (plus the summary)."""
    what = "this conversation turn" if ctx.kind == "turn" else "these messages, which are about to be compacted away"
    # secrets never reach the model (the store would redact them anyway); a small model shown a password dropped the
    # whole turn, the fact beside it too (measured: "…password is X, and I prefer dark mode" → NO_REPLY)
    transcript = escape(redact_text(ctx.transcript), tags=_PROMPT_TAGS)
    prompt = f"Capture durable memories from {what}.\n<transcript>\n{transcript}\n</transcript>"
    if ctx.next_summary:
        summary = escape(redact_text(ctx.next_summary), tags=_PROMPT_TAGS)
        prompt += f"\nThe summary that will replace them (context only; it is kept anyway):\n<summary>\n{summary}\n</summary>"
    return prompt + "\nReply NO_REPLY when done."


# -- extractors -----------------------------------------------------------------------------------
def rule_extractor(ctx: CaptureContext) -> list[MemoryDraft]:
    """A deterministic extractor (no LLM, no agent): the offline model's statement rules as drafts.

    Personal statements go to the caller's partition (user, else session).
    """
    out = []
    for st in extract_statements(ctx.transcript, now=ctx.said_at):
        args = {"content": st.content, "kind": st.kind, "memory_key": st.memory_key}
        personal = getattr(st, "personal", None)
        scope = caller_scope(ctx.caller) if (personal if personal is not None else is_personal(args)) else None
        out.append(
            MemoryDraft(
                st.content,
                kind=st.kind,
                tags=st.tags,
                memory_key=st.memory_key,
                scope=scope,
                on_existing=st.on_existing,  # type: ignore[arg-type]
                happened_at=st.happened_at.isoformat() if st.happened_at else None,
            )
        )
    return out


_PERSONAL_START = re.compile(r"^(?:the\s+)?user(?:'s|’s)?\s|^(?:i|i'm|i’m|i've|my|me|mine)\b", re.I)
_PERSONAL_WORDS = re.compile(
    r"\b(?:allerg\w*|diet\w*|vegetarian|vegan|birthday|born|married|wife|husband|partner|"
    r"my|i|i'm|i’m|health|medical|diagnos\w*|pronouns?|salary|home address|phone number)\b",
    re.I,
)
_JOINED_FACT = re.compile(
    r"(?:[,;]\s*|\s+)(?:and|but|also|plus)\s+(?=(?:the\s+user|user|i|i'm|i’m|i've|my|he|she|"
    r"they|we|our)\b)|;\s+|(?<=[.!?])\s+(?=[A-Z])",
    re.I,
)


def split_facts(content: str) -> list[str]:
    """``content`` as separate facts where clauses with their own subject are joined ("… and I'm allergic …")."""
    parts = [p.strip(" ,;") for p in _JOINED_FACT.split(content) if p and p.strip(" ,;.")]
    out = []
    for part in parts:
        part = part[0].upper() + part[1:]
        out.append(part if part[-1] in ".!?" else part + ".")
    return out or [content]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def drop_questions(content: str) -> str:
    """``content`` without its questions (sentences ending in ``?``): a memory states facts; small models copy the
    user's words whole ("Nice weather today, isn't it? Anyway, my cat is called Miso.")."""
    sentences = [s.strip() for s in _SENTENCE_END.split(content)]
    return " ".join(s for s in sentences if s and not s.endswith("?"))


_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i’m|i've|i’ve|i'd|my|mine|we|we're|our|ours|remember|note)\b", re.I)


def only_asks(text: str | None) -> bool:
    """Whether a user message only asks (every sentence a question) and says nothing about the user ("Can you tell
    me what 2+2 is?"): a turn that gives capture nothing to store."""
    if not text or not text.strip() or _FIRST_PERSON.search(text):
        return False
    sentences = [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip(" \n.!?")]
    return bool(sentences) and all(s.endswith("?") for s in sentences)


def _one_fact_per_key(draft: MemoryDraft) -> list[MemoryDraft]:
    """A keyed draft keeps its first fact; every other fact it carried becomes an unkeyed draft of its own."""
    if draft.memory_key is None or not isinstance(draft.content, str):
        return [draft]
    facts = split_facts(draft.content)
    if len(facts) < 2:
        return [draft]
    rest = [dataclasses.replace(draft, content=fact, title=None, memory_key=None, on_existing="append") for fact in facts[1:]]
    return [dataclasses.replace(draft, content=facts[0])] + rest


def _placed(draft: MemoryDraft, caller: Caller, *, personal: bool) -> MemoryDraft:
    """The draft in the caller's partition unless it explicitly asks for shared scope and is not personal."""
    scope = str(getattr(draft.scope, "value", draft.scope) or "") or None
    if scope is None or (personal and scope in SHARED_SCOPES):
        own = caller_scope(caller)
        if own is not None:
            return dataclasses.replace(draft, scope=own)
    return draft


def _drafts(value: Any, ctx: CaptureContext) -> list[MemoryDraft]:
    if value is None:
        return []
    if isinstance(value, (MemoryDraft, Mapping, str)):
        value = [value]
    drafts = []
    for item in value:
        draft = item if isinstance(item, MemoryDraft) else MemoryDraft(item) if isinstance(item, str) else MemoryDraft.from_dict(item)
        draft = dataclasses.replace(draft, session_id=draft.session_id or ctx.session_id, user_id=draft.user_id or ctx.user_id)
        if draft.scope is None:
            draft = _placed(draft, ctx.caller, personal=False)
        drafts.extend(_one_fact_per_key(draft))
    return drafts


def _homed(drafts: list[MemoryDraft], ctx: CaptureContext) -> list[MemoryDraft]:
    """Every draft in the caller's namespace, whatever an extractor or a model put in it."""
    return [dataclasses.replace(d, namespace=ctx.namespace) for d in drafts]


async def _commit(
    backend: MemoryBackend, drafts: list[MemoryDraft], source: str, result: CaptureResult, view: Caller | None = None
) -> CaptureResult:
    """Write the drafts in one batch; each one the store rejects is listed in ``result.rejected``."""
    rejected: list[dict[str, Any]] = []
    allowed: list[tuple[int, MemoryDraft]] = []
    for i, draft in enumerate(drafts):
        reason = await _foreign_record(backend, draft)
        if reason:
            rejected.append({"index": i, "error": reason})
        else:
            allowed.append((i, draft))
    if allowed:
        allowed = await _superseding(backend, allowed, result, view)
        errors: list[tuple[int, str]] = []
        done = await backend.remember_many([d for _, d in allowed], source=source, on_error="skip", errors=errors)
        result.written = [{"id": r.id, "status": r.status} for r in done]
        rejected += [{"index": allowed[i][0], "error": e} for i, e in errors]
    result.rejected = sorted(rejected, key=lambda r: int(r["index"]))
    return result


async def _curate(backend: MemoryBackend, calls: list[dict[str, Any]], source: str, result: CaptureResult, caller: Caller) -> None:
    """Apply the staged ``memory_curate`` calls for ``caller``, in order, after the batch; each refused one (the line
    changed meanwhile, the cap reached) is reported in ``result.curated`` and does not stop the others."""
    from agent_memory.agents.curated import OWN, add_line, remove_line, replace_line

    for args in calls:
        action, rid = args.get("action"), str(args.get("id") or "")
        try:
            if action == "add":
                done = await add_line(backend, caller, args["text"], priority=args.get("priority"), source=source)
                result.curated.append({"action": action, "id": done.id, "status": done.status})
            elif action == "remove":
                removed = await remove_line(backend, caller, rid, source=source, scopes=OWN)
                result.curated.append({"action": action, "id": rid, "status": "removed" if removed else "absent"})
            else:
                done = await replace_line(backend, caller, rid, args.get("text"), priority=args.get("priority"), source=source, scopes=OWN)
                result.curated.append({"action": action, "id": done.id, "status": done.status})
        except AgentMemoryError as exc:
            result.curated.append({"action": action, "id": rid or None, "error": f"{type(exc).__name__}: {exc}"})


async def _superseding(
    backend: MemoryBackend, drafts: list[tuple[int, MemoryDraft]], result: CaptureResult, view: Caller | None = None
) -> list[tuple[int, MemoryDraft]]:
    """Each draft that contradicts a current record capture wrote in the draft's own partition supersedes it instead of
    standing beside it (a keyed draft on that record's key replaces it). A contradicted record capture may not change
    is kept and listed. Fails open: a check that fails leaves the draft as it was."""
    from agent_memory.consolidate.contradict import backend_contradictions

    taken: set[str] = set()
    out: list[tuple[int, MemoryDraft]] = []
    for i, draft in drafts:
        try:
            if draft.supersedes is not None or not isinstance(draft.content, str):
                raise _Unchecked
            # checked as the writer reads (its namespace and isolation): a record it cannot see is never named
            caller = Caller(draft.session_id, draft.user_id, draft.namespace, view.isolation if view is not None else None)
            found = await backend_contradictions(backend, draft.content, caller, key=draft.memory_key)
        except Exception:  # fail open: the fact is stored as it would have been
            out.append((i, draft))
            continue
        for c in found:
            note = {"index": i, "contradicts": c.record.id, "title": c.record.title, "reason": c.reason}
            if c.record.id in taken or not _may_supersede(draft, c.record):
                result.contradicted.append({**note, "action": "kept", "why": "not a current record capture wrote in this partition"})
                continue
            taken.add(c.record.id)
            if draft.memory_key is not None and draft.memory_key == c.record.memory_key:
                draft = dataclasses.replace(draft, on_existing="replace")
            elif draft.memory_key is None or not await _key_in_use(backend, draft.memory_key, caller):
                draft = dataclasses.replace(draft, supersedes=c.record.id)
            else:
                result.contradicted.append({**note, "action": "kept", "why": "the draft's memory_key names another record"})
                continue
            result.contradicted.append({**note, "action": "superseded"})
            break
        out.append((i, draft))
    return out


async def _key_in_use(backend: MemoryBackend, key: str, caller: Caller) -> bool:
    """Whether a current record the caller sees holds ``key`` (then the store's keyed policy decides, not supersession)."""
    for hit in (await backend.search(key, caller, limit=5)).hits:
        if (await backend.get(hit.id, caller)).memory_key == key:
            return True
    return False


class _Unchecked(Exception):
    """A draft the contradiction check does not apply to."""


def _may_supersede(draft: MemoryDraft, rec: Any) -> bool:
    """``rec`` is a current record capture wrote, in the partition ``draft`` is written to."""
    scope = str(getattr(draft.scope, "value", draft.scope) or "")
    if rec.source not in _CAPTURE_SOURCES or rec.superseded_by or rec.scope.value != scope:
        return False
    if rec.namespace != (draft.namespace or ""):  # an ancestor's record is read, never superseded, from below
        return False
    if scope == "user":
        return bool(rec.user_id == draft.user_id)
    if scope == "session":
        return bool(rec.session_id == draft.session_id)
    return True


async def _foreign_record(backend: MemoryBackend, draft: MemoryDraft) -> str | None:
    """Why a capture may not write ``draft``: its ``memory_key`` names a record capture did not write."""
    if draft.memory_key is None:
        return None
    try:
        existing = await backend.get(draft.memory_key, Caller(draft.session_id, draft.user_id, draft.namespace))
    except AgentMemoryError:  # not a record id (a plain key), or not visible: the store keeps partitions apart
        return None
    if existing.source in _CAPTURE_SOURCES:
        return None
    return f"memory_key {draft.memory_key!r} is a record capture did not write (source {existing.source!r}); capture never changes it"


class StagingToolset(RecordingToolset):
    """Stages ``memory_remember``/``memory_supersede``/``memory_curate`` calls instead of running them; the worker
    commits them if the run succeeds. Each is checked when it is made (a bad one is a retry for the model)."""

    caller: Caller = Caller()
    backend: Any = None
    source: str = "turn_capture"

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
        if name not in STAGED:
            return await super().call_tool(name, tool_args, ctx, tool)
        record = ToolCallRecord(name, dict(tool_args))
        try:
            if name == "memory_curate":
                await self._check_curate(tool_args)
            else:
                check_content(tool_args.get("content"))
                if isinstance(tool_args.get("content"), str) and not drop_questions(tool_args["content"]):
                    raise InvalidInputError("content is a question; a memory states a fact the user gave (store facts, not questions)")
                if tool_args.get("memory_key") is not None:
                    validate_key(tool_args["memory_key"])
            if name == "memory_supersede":
                await self._check_supersede(tool_args.get("id"))
        except AgentMemoryError as exc:
            raise ModelRetry(f"{type(exc).__name__}: {exc}") from None
        self.calls.append(record)
        record.result = {"status": "accepted", "note": "stored (verified and deduplicated) when capture finishes"}
        return record.result

    async def _check_curate(self, args: Mapping[str, Any]) -> None:
        """What ``memory_curate`` would refuse now: a bad line or priority, or a line not the caller's own that
        capture wrote (the same checks run again when the staged call is applied)."""
        from agent_memory.agents.curated import OWN, own_line
        from agent_memory.model.curated import check_line, check_priority

        action, text, priority = args.get("action"), args.get("text"), args.get("priority")
        if action not in ("add", "replace", "remove"):
            raise InvalidInputError("action is add, replace or remove")
        if priority is not None:
            check_priority(priority)
        if action == "add":
            if text is None:
                raise InvalidInputError("add needs the text of the line")
            check_line(text)
            return
        if not isinstance(args.get("id"), str) or not args["id"]:
            raise InvalidInputError(f"{action} needs the id of one of this user's curated lines")
        if text is not None:
            check_line(text)
        if action == "replace" and text is None and priority is None:
            raise InvalidInputError("replace a curated line with a new text, a new priority, or both")
        await own_line(self.backend, self.caller, args["id"], OWN, self.source)

    def curations(self) -> list[dict[str, Any]]:
        """The staged ``memory_curate`` calls' arguments, in call order."""
        return [dict(c.args) for c in self.calls if c.name == "memory_curate" and c.result is not None]

    async def _check_supersede(self, record_id: Any) -> None:
        """Capture may supersede only a current record capture wrote in the caller's own partition."""
        own = caller_scope(self.caller)
        if not isinstance(record_id, str) or self.backend is None or own is None:
            raise InvalidInputError("memory_supersede needs the id of a record capture wrote in this conversation's memory")
        rec = await self.backend.get(record_id, self.caller)
        if rec.scope.value != own or rec.source not in _CAPTURE_SOURCES or rec.superseded_by:
            raise InvalidInputError(
                f"record {record_id!r} is not a current record capture wrote here; "
                "capture may only supersede its own records (use memory_remember for a new fact)"
            )

    def drafts(self, ctx: CaptureContext) -> list[MemoryDraft]:
        fields = ("content", "title", "kind", "scope", "tags", "memory_key", "on_existing", "happened_at", "valid_from", "valid_to")
        out = []
        for c in self.calls:
            if c.name == "memory_supersede" and c.result is not None:
                args = {k: v for k, v in c.args.items() if k in fields and v is not None}
                if isinstance(args.get("content"), str):
                    args["content"] = drop_questions(args["content"]) or args["content"]
                if isinstance(args.get("tags"), list):
                    args["tags"] = tuple(args["tags"])
                out.append(
                    MemoryDraft(
                        **args,
                        scope=caller_scope(ctx.caller),
                        session_id=ctx.session_id,
                        user_id=ctx.user_id,
                        supersedes=str(c.args.get("id")),
                    )
                )
            if c.name == "memory_remember" and c.result is not None:
                args = {k: v for k, v in c.args.items() if k in fields and v is not None}
                if isinstance(args.get("content"), str):
                    args["content"] = drop_questions(args["content"]) or args["content"]
                if isinstance(args.get("tags"), list):
                    args["tags"] = tuple(args["tags"])
                draft = MemoryDraft(**args, session_id=ctx.session_id, user_id=ctx.user_id)
                for one in _one_fact_per_key(draft):  # a person's facts follow the person, not the project
                    out.append(_placed(one, ctx.caller, personal=is_personal({**args, "content": one.content})))
        return out


def is_personal(args: Mapping[str, Any]) -> bool:
    """Whether a draft is about the person: a preference, a ``user.*`` key, or text about "the user"/"I"/"my" or
    personal matters (allergies, diet, family, health …)."""
    content = str(args.get("content") or "")
    return (
        args.get("kind") == "preference"
        or str(args.get("memory_key") or "").startswith("user.")
        or bool(_PERSONAL_START.search(content.strip()))
        or bool(_PERSONAL_WORDS.search(content))
    )


async def _run_extractor(backend: MemoryBackend, extractor: Extractor, ctx: CaptureContext, source: str, started: float) -> CaptureResult:
    result = CaptureResult(model=f"extractor:{getattr(extractor, '__name__', type(extractor).__name__)}")
    try:
        value = extractor(ctx)
        if inspect.isawaitable(value):
            value = await value
        await _commit(backend, _homed(_drafts(value, ctx), ctx), source, result, ctx.caller)
    except Exception as exc:
        result.written, result.fallback, result.reason = [], True, describe_error(exc)
    result.elapsed_s = time.perf_counter() - started
    return result


# -- the worker -------------------------------------------------------------------------------------
Worker = Union["WorkerProfile", Callable[[], "WorkerProfile"]]


async def _capture(
    backend: MemoryBackend, ctx: CaptureContext, worker: Worker | None, extractor: Extractor | None, source: str
) -> CaptureResult:
    started = time.perf_counter()
    if extractor is not None:
        return await _run_extractor(backend, extractor, ctx, source, started)
    usage = RunUsage()
    result = CaptureResult()
    timeout_s: float | None = None
    try:
        if worker is None:
            raise ValueError("no capture worker profile and no extractor")
        profile = resolve_worker(worker)
        result.model, timeout_s = profile.model_label, profile.timeout_s
        if ctx.kind == "turn" and profile.tool_mode != "native" and profile.model != "offline" and only_asks(ctx.input):
            # small models told to call memory_remember turned a bare question into a record ("User prefers to be
            # remembered with the result of 2+2 being 4."): a turn where the user only asks is not sent to them
            usage.details["question_turns_skipped"] = 1
        elif ctx.transcript.strip():
            toolset = bound_toolset(backend, profile.tools, ctx.caller, source=source, wrapper=StagingToolset)
            toolset.caller, toolset.backend, toolset.source = ctx.caller, backend, source
            await run_worker(profile, capture_prompt(ctx), toolset, usage, name=f"agent_memory_{source}")
            await _commit(backend, _homed(toolset.drafts(ctx), ctx), source, result, ctx.caller)
            await _curate(backend, toolset.curations(), source, result, ctx.caller)
    except Exception as exc:  # fail open: nothing staged is written, never raise
        result.written, result.fallback, result.reason = [], True, describe_error(exc, timeout_s)
    result.usage, result.elapsed_s = usage_dict(usage), time.perf_counter() - started
    return result


def dated(transcript: str, at: dt.datetime | None) -> str:
    """``transcript`` headed by a ``Date:`` line naming when it was said (relative dates resolve against it)."""
    return f"Date: {at.isoformat(timespec='seconds')}\n{transcript}" if at is not None and transcript else transcript


def _said_at(at: Any) -> dt.datetime | None:
    return at if isinstance(at, dt.datetime) else None


async def capture_turn(
    backend: MemoryBackend,
    input: str,
    output: str | None = None,
    *,
    caller: Caller,
    worker: Worker | None = None,
    extractor: Extractor | None = None,
    at: dt.datetime | None = None,
) -> CaptureResult:
    """Capture durable facts from one turn (the user's ``input`` and the assistant's ``output``). Never raises.

    ``extractor`` (a plain function) replaces the ``worker`` agent when given. ``at`` is when the turn was said
    (relative dates resolve against it; without it, against dates the transcript itself gives).
    """
    messages = [{"role": "user", "content": input}] + ([{"role": "assistant", "content": output}] if output else [])
    at = _said_at(at)
    ctx = CaptureContext(
        "turn",
        dated(render_messages(messages), at),
        input=input,
        output=output,
        session_id=caller.session_id,
        user_id=caller.user_id,
        said_at=at,
        namespace=caller.namespace,
        isolation=caller.isolation,
    )
    return await _capture(backend, ctx, worker, extractor, "turn_capture")


async def capture_before_compaction(
    backend: MemoryBackend,
    removed_messages: Sequence[Any],
    next_summary: str | None = None,
    *,
    caller: Caller,
    worker: Worker | None = None,
    extractor: Extractor | None = None,
    at: dt.datetime | None = None,
) -> CaptureResult:
    """Last-chance capture from ``removed_messages`` before a compaction commits. Never raises."""
    removed = list(removed_messages or ())
    at = _said_at(at) or _first_timestamp(removed)
    ctx = CaptureContext(
        "compaction",
        dated(render_messages(removed), at),
        removed_messages=removed,
        next_summary=next_summary if isinstance(next_summary, str) else None,
        session_id=caller.session_id,
        user_id=caller.user_id,
        said_at=at,
        namespace=caller.namespace,
        isolation=caller.isolation,
    )
    return await _capture(backend, ctx, worker, extractor, "compaction_capture")
