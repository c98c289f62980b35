"""The write gate: what a write asks for, checked, redacted and owned before any backend stores a byte.

Every record, session message and summary, episode, event and archive note that reaches a backend passes here,
so validation, redaction, ownership and defaults are one policy:

- :func:`prepare_draft` turns a :class:`MemoryDraft` (a new memory) into a record without an id. Callers: the
  files store (``_batch.remember_many`` through ``prepare_worker.prepare_item``, in its draft worker process for a
  big input, hence ``MemoryStore.remember``, the tools, the CLI ``remember`` and
  ``import`` of drafts, the MCP server, Claude's memory tool, the capture workers, transcripts and every foreign
  import), and the PostgreSQL backend's ``remember_many``.
- :func:`prepare_record` checks a *whole* record given as a mapping (our JSONL export: ids and timestamps kept)
  field by field with the same rules; caller: :mod:`agent_memory.portable.restore`. Its records go to a backend
  other than files as drafts inside :func:`passed_gate` (``portable._write``): what the gate already produced is
  not redacted a second time; what the draft adds is.
- :func:`apply_override` puts a write into the caller's partition when an import runs on someone's behalf
  (``--as-user``/``--as-session``); callers: every import path (portable restore, foreign importers, CLI drafts).
- :func:`check_id`, :func:`check_owner`, :func:`check_label` and :func:`clean_metadata` are the field rules both
  use: a string that can hold a secret is redacted (content, title, every metadata key and value, a value under a
  secret-named key) or, where a marker would break it (ids, owners, keys, tags, kind), refused
  (:func:`looks_secret`: also a secret glued after a prefix, ``chat-sk-…``).

What is not a record passes the same gate, through the functions below (the field rules are these, nowhere else):

- :func:`check_ident`: a session or user id of a log, an episode or an event's attribution, an actor, a run or
  tool-call id: one line, never a secret (refused). Callers: ``sessions._messages.owner_ids`` (hence
  ``SessionStore.append`` on both backends), ``episodes._model.check_owner``/``gated`` and :func:`check_acting`.
- :func:`prepare_message`: one session message (role a label, text/speaker/turn_id redacted, metadata through
  :func:`clean_metadata`, ``at`` one instant); caller: ``sessions._messages.message_line``, hence
  ``SessionStore.append`` over ``SessionFiles`` and ``backends.postgres.sessions.PgSessionLog``.
- :func:`prepare_summary`: a session summary (text redacted, source a label, count, instant); callers:
  ``SessionFiles.write_summary`` and ``PgSessionLog.write_summary`` (hence ``SessionStore.write_summary`` and the
  summarize worker).
- :func:`prepare_episode` (with :func:`clean_text`/:func:`clean_ident`): every text of an episode redacted and
  trimmed, its owners checked; callers: ``episodes._model.gated``, called by ``EpisodeStore.write``/``replace``
  and ``PgEpisodeStore.write``/``replace`` (so ``build_episode``'s, a hand-built and a refined episode alike), and
  ``episodes._build`` (tool names, notes) and the episode worker (``episodes._model.clean``).
- :func:`check_acting`: who a change is attributed to, refused before the change; caller:
  ``model.events.acting`` (events and provenance on both backends).
- :func:`prepare_event`: an event's strings and ``detail`` keys and values redacted; caller:
  ``model.events.gated``, called by ``backends.files.events.EventLog.append``; and
  ``backends.postgres.events.record_event`` (restore and undo events, their ``detail``).
- :func:`archive_note`: why a record was archived, one redacted line; caller: ``consolidate`` (the pass and the
  worker's ``archive_record``).

Not through it: the archive/restore/undo moves of the lifecycle (bytes that passed, moved whole), PostgreSQL's
events written by SQL from rows (``record_writes``, ``record_archive_event``: ids, hashes, owners that passed), and ``USER.md``
(hand-edited, never written by us; redacted on its way into the prompt by ``agents.core_block``).

Rules:

- **Default scope** (no ``scope`` given): a write that names a user goes to that user's partition (``user``,
  also when it names a session too: private to the person and still there next conversation); one that names
  only a session goes to that session; one that names neither goes to ``project``. Only an explicit
  ``scope="project"|"global"`` (or a store opened with an explicit ``default_scope``) shares a record.
- **Overrides** (an import as a user or a session): the file's owners are dropped and the override's stamped (a
  line of our export whose user is the override's, imported with no session override, keeps its session: it is
  the caller's own);
  a ``user`` record stays ``user`` (``session`` without a user override), a ``session`` record stays ``session``
  (``user`` without a session override), and a ``project``/``global`` record is *downgraded* to the caller's
  partition (``user`` when a user is given, else ``session``): an uploaded file never shares a record or writes
  into another user's partition. Each scope change is reported.
- **Namespaces**: a draft's ``namespace`` is the writer's, stamped from its ``Caller`` by whoever builds the draft
  (provider, tools, capture, memory tool, MCP) and checked here (:func:`agent_memory.model.scopes.check_namespace`);
  a model's or a file's arguments never choose it. An import lands in the importer's namespace (the root's operator,
  importing with no override, keeps the namespaces of an export's lines).
- **Expiry** is one UTC instant (``YYYY-MM-DDTHH:MM:SS.ffffffZ``) from the moment of writing; an ``expires``
  already past is refused ("already expired"). A whole record (restore) keeps its ``expires`` text when it is an
  ISO instant (an expired record stays invisible); an unreadable one is refused.
- **Clocks**: ``happened_at`` (when it happened or was said) and ``valid_from``/``valid_to`` (when it was true) are
  kept as a day (``2023-05-07``) when given as one, else as one UTC instant; an interval that ends before it starts
  is refused. ``supersedes`` names the record this draft replaces as the current fact (see ``docs/time.md``).
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import json
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, NamedTuple

import agent_memory.redaction.api as _redact
from agent_memory.errors import InvalidInputError
from agent_memory.model.records import (
    CLOCK_FIELDS,
    MAX_TITLE_CHARS,
    SOURCES,
    MemoryRecord,
    Scope,
    check_content,
    check_text_field,
    content_hash,
    default_title,
    normalize_instant,
    normalize_kind,
    normalize_tags,
    now_iso,
    parse_scope,
    validate_id,
    validate_key,
)
from agent_memory.model.scopes import check_namespace
from agent_memory.model.values import looks_secret_glued, shown

OnExisting = Literal["append", "replace", "skip"]
Status = Literal["created", "duplicate", "appended", "replaced", "skipped", "superseded"]


@dataclass(frozen=True, slots=True)
class RememberResult:
    """Outcome of one ``remember``: the record id and what happened."""

    id: str
    status: Status
    path: str
    redactions: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "path": self.path, "redactions": self.redactions}


@dataclass(frozen=True, slots=True)
class MemoryDraft:
    """A memory proposed for writing (by an extractor, an import file or a tool call)."""

    content: str
    title: str | None = None
    kind: str | None = None
    scope: Scope | str | None = None
    session_id: str | None = None
    user_id: str | None = None
    tags: tuple[str, ...] | list[str] = ()
    memory_key: str | None = None
    on_existing: OnExisting = "append"
    expires: str | None = None
    importance: float | None = None
    metadata: Mapping[str, Any] | None = None
    happened_at: str | None = None
    valid_from: str | None = None
    valid_to: str | None = None
    supersedes: str | None = None
    namespace: str | None = None  # the writer's namespace, stamped from its Caller (None: the root)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryDraft:
        if not isinstance(data, Mapping):
            raise InvalidInputError("a memory draft must be a JSON object")
        allowed = set(cls.__dataclass_fields__)
        unknown = set(data) - allowed
        if unknown:
            raise InvalidInputError(f"unknown field(s): {', '.join(sorted(map(str, unknown)))}")
        if "content" not in data:
            raise InvalidInputError("a memory draft needs 'content'")
        return cls(**dict(data))


MAX_METADATA_DEPTH = 16
looks_secret = looks_secret_glued  # an identifier holds a secret (alone, spaced at separators, or glued after a prefix)


def _parse_when(value: str) -> dt.datetime | None:
    """An ISO date or datetime as an aware UTC datetime (naive means UTC), or None if it is not one."""
    try:
        when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        when = when if when.tzinfo else when.replace(tzinfo=dt.UTC)
        return when.astimezone(dt.UTC)  # an offset at the edge of the calendar overflows here
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None


def utc_text(when: dt.datetime) -> str:
    """The stored form of an instant: UTC with microseconds and ``Z`` (sorts as text in time order)."""
    return when.astimezone(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


RESTORING: contextvars.ContextVar[bool] = contextvars.ContextVar("agent_memory_restoring", default=False)
"""Set (True) only by an import of whole records of an export (``portable._write``), whose drafts carry what the
records had: a past ``expires`` is kept, the record stored expired (invisible, swept later), as the files
backend's restore keeps it, instead of refused; and the :data:`IMPORT_KEYS` metadata the import writes is kept."""
KEEP_PAST_EXPIRES = RESTORING  # the older name

#: Metadata only an import of whole records writes (the id, owner id and creation time a record had where it came
#: from): links resolve through ``imported_id`` (``model.links``) and purge tombstones match ``imported_owner_id``,
#: so :func:`prepare_draft` drops them from every other write — a record cannot claim to be another one.
IMPORT_KEYS = frozenset({"imported_id", "imported_owner_id", "imported_created"})


def normalize_expires(value: object, *, now: dt.datetime | None = None) -> str:
    """``expires`` as one UTC instant; refuse text that is not a date and instants already past."""
    when = _parse_when(value) if isinstance(value, str) else None
    if when is None:
        raise InvalidInputError(f"expires must be an ISO date or datetime (e.g. 2026-12-31 or 2026-12-31T18:00:00Z), not {shown(value)}")
    if when <= (now or dt.datetime.now(dt.UTC)) and not RESTORING.get():
        raise InvalidInputError(f"expires {shown(value)} is already expired; give a future date or datetime")
    return utc_text(when)


_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def normalize_when(name: str, value: object) -> str:
    """A clock value as stored: ``YYYY-MM-DD`` for a day, else one UTC instant; a typed error for anything else."""
    if isinstance(value, dt.datetime):
        value = value.isoformat()
    elif isinstance(value, dt.date):
        value = value.isoformat()
    if not isinstance(value, str) or len(value) > 64:
        raise InvalidInputError(f"{name} must be an ISO date or datetime (e.g. 2023-05-07 or 2023-05-07T18:00:00Z)")
    text = value.strip()
    when = _parse_when(text)
    if when is None:
        raise InvalidInputError(f"{name} must be an ISO date or datetime (e.g. 2023-05-07 or 2023-05-07T18:00:00Z), not {shown(value)}")
    return text if _DAY.fullmatch(text) else utc_text(when)


def clock_values(draft: MemoryDraft) -> dict[str, str | None]:
    """The draft's ``happened_at``/``valid_from``/``valid_to`` checked and normalised, and ``supersedes``."""
    out = {
        name: None if getattr(draft, name) is None else normalize_when(name, getattr(draft, name))
        for name in ("happened_at", "valid_from", "valid_to")
    }
    start = _parse_when(out["valid_from"] or "")
    end = _parse_when(out["valid_to"] or "")
    if start is not None and end is not None and end < start:
        raise InvalidInputError(f"valid_to {out['valid_to']} is earlier than valid_from {out['valid_from']}")
    return {**out, "supersedes": None if draft.supersedes is None else check_id("supersedes", draft.supersedes)}


def default_scope_for(session_id: str | None, user_id: str | None, default: Scope | None) -> Scope:
    """The scope of a write that names none (see the module docstring)."""
    if default is not None:
        return default
    if user_id:
        return Scope.USER
    if session_id:
        return Scope.SESSION
    return Scope.PROJECT


def explicit_fields(draft: MemoryDraft) -> frozenset[str]:
    """The optional fields a draft actually sets: a keyed replace or append applies exactly these."""
    names = ("title", "kind", "expires", "importance", "happened_at", "valid_from", "valid_to")
    out = {n for n in names if getattr(draft, n) is not None}
    if draft.tags:
        out.add("tags")
    return frozenset(out)


def clean_metadata(value: Any, counter: list[int] | None = None, depth: int = 0) -> Any:
    """Metadata as stored: every key and string value redacted (a value also as ``key=value``, so the value of a
    secret-named key such as ``db_password`` is caught), non-JSON values as text; ``counter[0]`` counts markers."""
    counter = [0] if counter is None else counter
    if depth > MAX_METADATA_DEPTH:
        raise InvalidInputError(f"metadata is nested more than {MAX_METADATA_DEPTH} levels deep")
    if isinstance(value, str):
        return _redacted(value, counter)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            key = _redacted(str(k), counter)
            if isinstance(v, str):
                _check_unicode(v)  # (this was a whole redaction whose result was thrown away: a third pass over v)
                passed = _PASSED.get()
                if passed is not None and (key, v) in passed[1]:  # the gate's own output pair (see passed_gate)
                    out[key] = v
                    continue
                pair = _redact.redact(f"{key}={v}")
                if pair.count and pair.text.startswith(f"{key}="):
                    counter[0] += pair.count
                    out[key] = pair.text[len(key) + 1 :]
                    continue
            out[key] = clean_metadata(v, counter, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [clean_metadata(v, counter, depth + 1) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return json.dumps(value)  # NaN/Infinity are not JSON: kept as their text
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return _redacted(str(value), counter)


def _check_unicode(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError("metadata is not valid Unicode (lone surrogate)") from None


def _redacted(text: str, counter: list[int]) -> str:
    _check_unicode(text)
    res = _redact_once(text)
    counter[0] += res.count
    return res.text


# Strings and metadata (key, value) pairs that the write gate itself produced in this context (passed_gate).
_PASSED: contextvars.ContextVar[tuple[frozenset[str], frozenset[tuple[str, str]]] | None] = contextvars.ContextVar(
    "agent_memory_passed_gate", default=None
)


def _redact_once(text: str) -> _redact.RedactionResult:
    """``redact(text)``, unless ``text`` is the gate's own output in this context (then it is stored as it is)."""
    passed = _PASSED.get()
    if passed is not None and text in passed[0]:
        return _redact.RedactionResult(text, 0, ())
    return _redact.redact(text)


def _collect(value: object, strings: set[str], pairs: set[tuple[str, str]]) -> None:
    if isinstance(value, str):
        strings.add(value)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            strings.add(str(k))
            if isinstance(v, str):
                pairs.add((str(k), v))
            _collect(v, strings, pairs)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _collect(v, strings, pairs)


@contextlib.contextmanager
def passed_gate(records: Iterable[MemoryRecord]) -> Iterator[None]:
    """Within this block, :func:`prepare_draft` does not redact again what ``records`` hold: records that already
    passed the gate (:func:`prepare_record`, an export-format import) and that a backend is handed as drafts.

    Their content, title, metadata keys and string values, and each metadata ``(key, value)`` pair, are the gate's
    own output, so a second pass would store the same text (the files backend writes that output as it is); the
    export-format import into PostgreSQL paid for it twice (~3 ms a line, most of it the provenance block). Any
    other string — a field the caller adds to the draft, a value under another key — is redacted as always. Only
    this process's code can enter the block (a context variable, copied into ``remember_many``'s threads)."""
    strings: set[str] = set()
    pairs: set[tuple[str, str]] = set()
    for rec in records:
        strings.add(rec.content)
        strings.add(rec.title)
        _collect(rec.metadata, strings, pairs)
    token = _PASSED.set((frozenset(strings), frozenset(pairs)))
    try:
        yield
    finally:
        _PASSED.reset(token)


_clean_metadata = clean_metadata  # the old private name


def check_label(label: str, value: str | None) -> str | None:
    """Refuse a short identifier-like value (tag, kind, memory_key, source) that looks like a secret: a marker
    would break it and it is written to disk and shown in listings."""
    if value and looks_secret(value):
        raise InvalidInputError(f"{label} looks like a secret; refusing to store it")
    return value


def check_id(name: str, value: object) -> str:
    """A record id (or a link to one) that is a safe file stem and not a secret (it is a file name)."""
    rid = validate_id(value)
    if looks_secret(rid):
        raise InvalidInputError(f"{name} looks like a secret; refusing to store it")
    return rid


def check_on_existing(on_existing: object, memory_key: object) -> None:
    """``on_existing`` says what a ``memory_key`` write does when that memory exists, so ``replace`` or ``skip``
    without a key is an :class:`InvalidInputError`: one rule for every surface a caller names both on (the API,
    ``MemoryStore``, the CLI, MCP, the agent tools); drafts are not (an import's all say ``skip``, keyed or not)."""
    if on_existing in ("replace", "skip") and memory_key is None:
        raise InvalidInputError(f"on_existing={on_existing!r} needs a memory_key (it says what to do when that memory already exists)")


def check_owner(scope: Scope, session_id: str | None, user_id: str | None) -> tuple[str | None, str | None]:
    """The owners of a record of ``scope``: one-line ids, never a secret, present when the scope needs them."""
    for name, value in (("session_id", session_id), ("user_id", user_id)):
        # the one id rule (check_ident): the same ids attribute the write's event, so a record must never accept an
        # owner its event would refuse half-way through a batch (a control character did: remember_many raised)
        check_ident(name, value)
    if scope is Scope.SESSION and not session_id:
        raise InvalidInputError("scope 'session' needs a session_id")
    if scope is Scope.USER and not user_id:
        raise InvalidInputError("scope 'user' needs a user_id")
    return session_id, user_id


def prepare_draft(draft: MemoryDraft, source: str, default_scope: Scope | None = None) -> tuple[MemoryRecord, int]:
    """Validate and redact one draft into a record without an id (the backend allocates it)."""
    content = check_content(draft.content)
    red = _redact_once(content)
    title_in = draft.title if draft.title is not None else None
    if title_in is not None:
        title_in = check_text_field("title", title_in, MAX_TITLE_CHARS).strip()
    # a title derived from the already-redacted content needs no second pass
    title_red = _redact_once(title_in) if title_in else _redact.RedactionResult(default_title(red.text), 0, ())
    if draft.scope is None or draft.scope == "":
        scope = default_scope_for(draft.session_id, draft.user_id, default_scope)
    else:
        scope = parse_scope(draft.scope)
    session_id, user_id = check_owner(scope, draft.session_id, draft.user_id)
    namespace = check_namespace(draft.namespace)
    tags = normalize_tags(draft.tags)
    key = validate_key(draft.memory_key) if draft.memory_key is not None else None
    raw_tags = [draft.tags] if isinstance(draft.tags, str) else list(draft.tags or ())
    raw = [(label, v) for label, v in (("kind", draft.kind), *(("tag", t) for t in raw_tags)) if isinstance(v, str)]
    for label, value in (("memory_key", key), *(("tag", t) for t in tags), *raw):
        check_label(label, value)
    if source not in SOURCES:
        raise InvalidInputError(f"unknown source {shown(source)}")
    if draft.on_existing not in ("append", "replace", "skip"):
        raise InvalidInputError(f"on_existing must be append, replace or skip, not {shown(draft.on_existing)}")
    expires = None if draft.expires is None else normalize_expires(draft.expires)
    importance = draft.importance
    if importance is not None:
        try:
            ok = not isinstance(importance, bool) and isinstance(importance, (int, float)) and 0 <= float(importance) <= 1
        except OverflowError:  # a huge int
            ok = False
        if not ok:
            raise InvalidInputError("importance must be a number between 0 and 1")
    if draft.metadata is not None and not isinstance(draft.metadata, Mapping):
        raise InvalidInputError("metadata must be a mapping")
    counter = [0]
    metadata = clean_metadata(dict(draft.metadata or {}), counter)
    if not RESTORING.get() and not IMPORT_KEYS.isdisjoint(metadata):  # the import's own keys (see IMPORT_KEYS)
        metadata = {k: v for k, v in metadata.items() if k not in IMPORT_KEYS}
    clocks = clock_values(draft)
    now = now_iso()
    rec = MemoryRecord(
        id="",
        content=red.text,
        title=title_red.text or "memory",
        kind=normalize_kind(draft.kind),
        scope=scope,
        session_id=session_id,
        user_id=user_id,
        namespace=namespace,
        tags=tags,
        memory_key=key,
        source=source,
        created=now,
        updated=now,
        expires=expires,
        importance=None if importance is None else float(importance),
        content_hash=content_hash(red.text),
        metadata=metadata,
        **clocks,  # type: ignore[arg-type]
    )
    return rec, red.count + title_red.count + counter[0]


@dataclass(frozen=True, slots=True)
class Override:
    """The caller an import runs for: the one home of the rule "whose import is this".

    ``user_id``/``session_id`` (``--as-user``/``--as-session``): every record lands in that partition
    (:attr:`owners`). ``namespace`` (``--namespace``): every record lands in it, scopes and owners kept (a
    namespace alone downgrades nothing). Any of the three makes the import a caller's (:attr:`caller`): a file's ids
    are never trusted, so no outcome tells whether another owner holds one. An Override has no truth value: ask
    :attr:`owners` or :attr:`caller` (a namespace-only override read as "none" once let an import escape it)."""

    user_id: str | None = None
    session_id: str | None = None
    namespace: str | None = None

    def __post_init__(self) -> None:
        if self.user_id is not None or self.session_id is not None:
            check_owner(Scope.PROJECT, self.session_id, self.user_id)
        object.__setattr__(self, "namespace", check_namespace(self.namespace) or None)

    @property
    def owners(self) -> bool:
        """Does it replace a file's owners (``--as-user``/``--as-session``)?"""
        return bool(self.user_id or self.session_id)

    @property
    def caller(self) -> bool:
        """Is it an import as a caller (an owner or a namespace): never the root's operator restoring as is?"""
        return self.owners or self.namespace is not None

    def __bool__(self) -> bool:
        raise TypeError("an Override has no truth value: use .owners (the file's owners replaced) or .caller")

    def describe(self) -> str:
        return " and ".join(f"{n} {v!r}" for n, v in (("user", self.user_id), ("session", self.session_id)) if v)


class Owned(NamedTuple):
    """Where a write lands after :func:`apply_override`; ``rescoped`` is the scope the source asked for when it
    was changed (e.g. ``global`` downgraded to ``user``), else None."""

    scope: Scope | None
    session_id: str | None
    user_id: str | None
    rescoped: Scope | None = None


def apply_override(
    scope: Scope | str | None, session_id: str | None, user_id: str | None, override: Override | None, *, own_session: bool = False
) -> Owned:
    """Ownership of one record of an import (see "Overrides" in the module docstring).

    Without an override (the root's operator importing) the source's scope and owners are kept as they are.
    ``own_session`` (a line of our export): a record whose user is the override's user, imported with no session
    override, keeps its session: it is that caller's own, so a caller's export re-imported lands where it was."""
    asked = None if scope is None or scope == "" else parse_scope(scope)
    if override is None or not override.owners:
        return Owned(asked, session_id, user_id)
    session = override.session_id
    if own_session and session is None and user_id is not None and user_id == override.user_id:
        session = session_id or None
    if asked is Scope.SESSION:
        scope_out = Scope.SESSION if session else Scope.USER
    elif asked is Scope.USER:
        scope_out = Scope.USER if override.user_id else Scope.SESSION
    else:
        scope_out = Scope.USER if override.user_id else Scope.SESSION
    changed = asked if asked is not None and asked is not scope_out else None
    return Owned(scope_out, session, override.user_id, changed)


def override_draft(draft: MemoryDraft, override: Override | None) -> tuple[MemoryDraft, Scope | None]:
    """``draft`` put in the override's partition (the CLI ``import --as-user`` of JSONL drafts), and the scope
    it asked for when that changed; unchanged without an override."""
    if override is not None and override.caller:
        draft = replace(draft, namespace=override.namespace)  # the importer's namespace, never the line's
    if override is None or not override.owners:
        return draft, None
    owned = apply_override(draft.scope, draft.session_id, draft.user_id, override)
    return replace(draft, scope=owned.scope, session_id=owned.session_id, user_id=owned.user_id), owned.rescoped


def stamp_override(metadata: Mapping[str, Any], override: Override | None, created: str, updated: str) -> dict[str, Any]:
    """``metadata`` of a record imported on a caller's behalf: a ``provenance`` the file claims (who created and
    changed it) is not evidence, so it is replaced by the import itself as that caller; kept without override."""
    out = dict(metadata)
    if override is None or not override.owners:
        return out
    who = {k: v for k, v in (("actor", "import"), ("session_id", override.session_id), ("user_id", override.user_id)) if v}
    out["provenance"] = {"created": {"at": created, **who}, "updated": {"at": updated, **who}}
    return out


_RECORD_FIELDS = frozenset(
    {
        "id",
        "title",
        "kind",
        "scope",
        "session_id",
        "user_id",
        "namespace",
        "tags",
        "memory_key",
        "source",
        "created",
        "updated",
        "expires",
        "importance",
        "content_hash",
        "metadata",
        "content",
        "path",
        "happened_at",
        "valid_from",
        "valid_to",
        "superseded_by",
        "supersedes",
        "recorded_at",
    }
)


def _opt_text(data: Mapping[str, Any], name: str, max_chars: int = 200) -> str | None:
    value = data.get(name)
    if value is None or value == "":
        return None
    return check_text_field(name, value, max_chars)


def _instant(data: Mapping[str, Any], name: str) -> str | None:
    """An instant field of a whole record: kept as written when it is an ISO date or datetime, else refused."""
    value = _opt_text(data, name, 64)
    if value is not None and normalize_instant(value) is None:
        raise InvalidInputError(f"{name} must be an ISO date or datetime (e.g. 2026-12-31T18:00:00Z), not {shown(value)}")
    return value


def _importance(value: object) -> float | None:
    if value is None:
        return None
    try:
        ok = not isinstance(value, bool) and isinstance(value, (int, float)) and 0 <= float(value) <= 1
    except OverflowError:
        ok = False
    if not ok:
        raise InvalidInputError("importance must be a number between 0 and 1")
    return float(value)  # type: ignore[arg-type]


def prepare_record(data: object, override: Override | None = None, namespace: str | None = None) -> tuple[MemoryRecord, int, Scope | None]:
    """A whole record given as a mapping (a line of our export) checked by the same rules as :func:`prepare_draft`.

    Ids, timestamps, keys and links are kept; every text is redacted (content, title, metadata keys and values)
    and every identifier that could hold a secret is refused (id, links, owners, key, tags, kind); ``kind`` is
    normalised, ``source`` is one of ours, instants must be ISO. With ``override`` the record is put in that
    caller's partition (:func:`apply_override`). ``namespace`` is the importer's: every record lands in it (the
    root's operator, ``None`` and no override, keeps the namespace a line names). Returns ``(record, redactions, rescoped_from)``; raises
    :class:`InvalidInputError` (or :class:`~agent_memory.errors.InvalidIdError`) naming the field.
    """
    if not isinstance(data, Mapping):
        raise InvalidInputError("a line must be a JSON object")
    unknown = set(data) - _RECORD_FIELDS
    if unknown:
        raise InvalidInputError(f"unknown field(s): {', '.join(sorted(map(str, unknown)))}")
    rid = check_id("id", data.get("id"))
    counter = [0]
    red = _redact.redact(check_content(data.get("content")))
    counter[0] += red.count
    title = _opt_text(data, "title", MAX_TITLE_CHARS)
    if title is not None:
        title_red = _redact.redact(title)
        counter[0] += title_red.count
        title = title_red.text
    owned = apply_override(data.get("scope"), _opt_text(data, "session_id"), _opt_text(data, "user_id"), override, own_session=True)
    scope = owned.scope or Scope.PROJECT
    session_id, user_id = check_owner(scope, owned.session_id, owned.user_id)
    if namespace is None and override is not None and override.caller:
        namespace = override.namespace or ""
    home = check_namespace(data.get("namespace") if namespace is None else namespace)
    raw_tags = data.get("tags") or []
    if not isinstance(raw_tags, list) or not all(isinstance(t, str) for t in raw_tags):
        raise InvalidInputError("tags must be a list of strings")
    tags = normalize_tags(raw_tags)
    key = None if data.get("memory_key") is None else validate_key(data.get("memory_key"))
    kind = normalize_kind(data.get("kind"))  # type: ignore[arg-type]
    for label, value in (("memory_key", key), ("kind", kind), *(("tag", t) for t in (*tags, *raw_tags))):
        check_label(label, value)
    source = data.get("source") or "manual"
    if source not in SOURCES:
        raise InvalidInputError(f"unknown source {shown(source)}; one of {', '.join(SOURCES)}")
    created = _instant(data, "created")
    if not created:
        raise InvalidInputError("created is missing (an export always has it)")
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise InvalidInputError("metadata must be an object")
    clocks: dict[str, str | None] = {}
    for name in CLOCK_FIELDS:
        value = _opt_text(data, name, 64)
        clocks[name] = None if value is None else normalize_when(name, value)
    start, end = _parse_when(clocks["valid_from"] or ""), _parse_when(clocks["valid_to"] or "")
    if start is not None and end is not None and end < start:
        raise InvalidInputError(f"valid_to {clocks['valid_to']} is earlier than valid_from {clocks['valid_from']}")
    for name in ("superseded_by", "supersedes"):
        value = data.get(name)
        clocks[name] = None if value is None or value == "" else check_id(name, value)
        if clocks[name] == rid:
            raise InvalidInputError(f"{name} names the record itself")
    rec = MemoryRecord(
        id=rid,
        content=red.text,
        title=title or default_title(red.text),
        kind=kind,
        scope=scope,
        session_id=session_id,
        user_id=user_id,
        namespace=home,
        tags=tags,
        memory_key=key,
        source=str(source),
        created=created,
        updated=_instant(data, "updated") or created,
        expires=_instant(data, "expires"),
        importance=_importance(data.get("importance")),
        content_hash=content_hash(red.text),
        metadata=stamp_override(clean_metadata(dict(metadata), counter), override, created, _instant(data, "updated") or created),
        **clocks,  # type: ignore[arg-type]
    )
    return rec, counter[0], owned.rescoped


def decode_line(raw: bytes) -> str | None:
    """One line of a UTF-8 file as text, or None when it is not valid UTF-8 (the caller skips that line only)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, MemoryDraft | str]]:
    """Yield ``(line_number, draft or error message)`` for each non-empty line of a JSONL file."""
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            line = decode_line(raw)
            if line is None:
                yield n, f"line {n}: not valid UTF-8"
                continue
            if not line.strip():
                continue
            try:
                yield n, MemoryDraft.from_dict(json.loads(line))
            except (ValueError, TypeError) as exc:
                yield n, f"line {n}: {exc}"
            except RecursionError:  # JSON nested thousands deep
                yield n, f"line {n}: JSON nested too deeply"


# -- the gate for what is not a record: session logs, episodes, events, archive notes ------------------------------
MAX_ID_CHARS = 200
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def check_ident(name: str, value: object, *, required: bool = False, max_chars: int = MAX_ID_CHARS) -> str | None:
    """A session or user id (of a log, an episode, an event's attribution), an actor or a run/tool-call id: None
    (unless ``required``) or one non-blank line of at most ``max_chars`` characters, valid Unicode, never a secret
    (ids are directory names, columns and listings: a marker would break them, so a secret is refused)."""
    if value is None:
        if required:
            raise InvalidInputError(f"{name} is required")
        return None
    text = check_text_field(name, value, max_chars)
    if not text.strip() or _CONTROL.search(text):
        raise InvalidInputError(f"{name} must be one non-empty line of at most {max_chars} characters without control characters")
    if looks_secret(text):
        raise InvalidInputError(f"{name} looks like a secret; refusing to store it (use an opaque id)")
    return text


def clean_text(value: object, limit: int, *, one_line: bool = False) -> str:
    """Free text as stored outside a record (episode goal and notes, tool names, archive notes): control
    characters dropped, redacted, trimmed to ``limit`` characters with ``…``. Idempotent."""
    text = "" if value is None else str(value)
    text = _CONTROL.sub(" ", text.replace("\r\n", "\n"))
    if one_line:
        text = " ".join(text.split())
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates: never a write that cannot be read
    text = _redact.redact_text(text.strip())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def clean_ident(value: object, limit: int) -> str:
    """A one-line name or id that is not a key of anything (a tool's name, a model, a run id in an episode): as
    :func:`clean_text`, and wholly a marker when a secret is glued into it (redaction wants a boundary)."""
    text = clean_text(value, limit, one_line=True)
    return _redact.marker("identifier") if text and looks_secret(text) else text


def _clean_opt(value: object, limit: int) -> str | None:
    return clean_ident(value, limit) or None


# session logs ----------------------------------------------------------------------------------------------------
MAX_MESSAGE_CHARS = 200_000
MAX_ROLE_CHARS = 40


_LINE_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _one_line(label: str, value: str) -> str:
    """Refuse a label (a message's role, speaker, turn id) holding a line break or another control character: it is
    printed inside one line of a prompt or a listing, where a newline would forge lines of its own."""
    if _LINE_BREAKS.search(value):
        raise InvalidInputError(f"{label} must be one line without control characters (a line break would forge prompt lines)")
    return value


def prepare_message(message: object) -> dict[str, Any]:
    """One session message as stored: ``role`` (a short label, never a secret), ``text`` redacted, ``at`` one UTC
    instant (now when absent), ``speaker``/``turn_id`` redacted, ``meta`` through :func:`clean_metadata`.
    Anything else is an :class:`InvalidInputError` naming the field; nothing is stored."""
    if not isinstance(message, Mapping):
        raise InvalidInputError("a message must be a mapping with 'role' and 'text'")
    role, text = message.get("role", "user"), message.get("text", message.get("content"))
    if not isinstance(role, str) or not role.strip() or len(role) > MAX_ROLE_CHARS:
        raise InvalidInputError("a message's role must be a short non-empty string")
    check_label("a message's role", role)
    _one_line("a message's role", role)
    if not isinstance(text, str):
        raise InvalidInputError("a message's text must be a string")
    if len(text) > MAX_MESSAGE_CHARS:
        raise InvalidInputError(f"a message is limited to {MAX_MESSAGE_CHARS} characters")
    at = message.get("at")
    when = _parse_when(at) if isinstance(at, str) else at if isinstance(at, dt.datetime) else None
    if at is not None and when is None:
        raise InvalidInputError(f"a message's 'at' must be an ISO date or datetime, not {shown(at)}")
    if isinstance(when, dt.datetime) and when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    counter = [0]
    obj: dict[str, Any] = {"role": role.strip(), "text": _redacted(text, counter), "at": utc_text(when or dt.datetime.now(dt.UTC))}
    for key in ("speaker", "turn_id"):
        value = message.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, (str, int)) or len(str(value)) > 200:
                raise InvalidInputError(f"a message's {key} must be a short string")
            obj[key] = _redacted(_one_line(f"a message's {key}", str(value)), counter)
    meta = message.get("metadata")
    if meta:
        if not isinstance(meta, Mapping):
            raise InvalidInputError("a message's metadata must be a mapping")
        try:
            obj["meta"] = json.loads(json.dumps(clean_metadata(dict(meta)), ensure_ascii=False, allow_nan=False))
        except (TypeError, ValueError, RecursionError):
            raise InvalidInputError("a message's metadata must be JSON-serialisable") from None
    return obj


def prepare_summary(text: object, *, messages: object, source: object, fallback: object, made_at: object = None) -> dict[str, Any]:
    """A session summary's fields as stored: ``text`` redacted (non-empty), ``messages`` a count ≥ 0, ``source``
    a label (never a secret), ``made_at`` one UTC instant (now when absent), ``fallback`` a bool."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError("a summary must be non-empty text")
    if len(text) > MAX_MESSAGE_CHARS:
        raise InvalidInputError(f"a summary is limited to {MAX_MESSAGE_CHARS} characters")
    if isinstance(messages, bool) or not isinstance(messages, int) or messages < 0:
        raise InvalidInputError("a summary's messages must be a whole number ≥ 0")
    label = check_ident("a summary's source", source, required=True, max_chars=MAX_ROLE_CHARS * 2)
    when = made_at if isinstance(made_at, dt.datetime) else _parse_when(made_at) if isinstance(made_at, str) else None
    if made_at is not None and when is None:
        raise InvalidInputError(f"a summary's made_at must be an ISO date or datetime, not {shown(made_at)}")
    if isinstance(when, dt.datetime) and when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return {
        "text": _redacted(text, [0]),
        "messages": messages,
        "source": label,
        "fallback": bool(fallback),
        "made_at": utc_text(when or dt.datetime.now(dt.UTC)),
    }


# episodes --------------------------------------------------------------------------------------------------------
MAX_GOAL_CHARS = 1000
MAX_DETAIL_CHARS = 500
MAX_NOTE_CHARS = 300
MAX_SUMMARY_CHARS = 600
MAX_NOTES = 20
MAX_SEQUENCE = 100
MAX_TOOL_NAME = 64
MAX_EPISODE_SOURCE = 32


def _texts(value: object, name: str, limit: int, max_items: int) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise InvalidInputError(f"an episode's {name} must be a list of texts")
    return [t for v in list(value)[:max_items] if (t := clean_text(v, limit, one_line=True))]


def prepare_episode(fields: Mapping[str, Any]) -> dict[str, Any]:
    """An episode's fields (as :meth:`Episode.to_dict` gives them) as stored: owners checked (:func:`check_ident`),
    every text redacted and trimmed (goal, exit detail, summary, notes, tool names, run/conversation ids, model,
    source, refined_by, git_sha). Numbers, choices and instants stay the episode model's to check. Returns a new mapping."""
    out = dict(fields)
    if not isinstance(fields.get("goal"), str):
        raise InvalidInputError(f"an episode's goal must be a string, not {type(fields.get('goal')).__name__}")
    for name in ("session_id", "user_id"):
        out[name] = check_ident(name, fields.get(name))
    out["goal"] = clean_text(fields["goal"], MAX_GOAL_CHARS) or "(no prompt)"
    out["exit_detail"] = clean_text(fields.get("exit_detail"), MAX_DETAIL_CHARS)
    out["summary"] = clean_text(fields.get("summary"), MAX_SUMMARY_CHARS)
    for name in ("run_id", "conversation_id", "model", "refined_by"):
        out[name] = _clean_opt(fields.get(name), MAX_ID_CHARS)
    if isinstance(fields.get("git_sha"), str):  # redacted like any text: a secret there fails the model's hex check
        out["git_sha"] = _clean_opt(fields["git_sha"], MAX_ID_CHARS)
    out["source"] = clean_ident(fields.get("source"), MAX_EPISODE_SOURCE) or "api"
    out["sequence"] = [clean_ident(t, MAX_TOOL_NAME) for t in _texts(fields.get("sequence"), "sequence", MAX_TOOL_NAME, MAX_SEQUENCE)]
    out["worked"] = _texts(fields.get("worked"), "worked", MAX_NOTE_CHARS, MAX_NOTES)
    out["failed"] = _texts(fields.get("failed"), "failed", MAX_NOTE_CHARS, MAX_NOTES)
    tools = fields.get("tools") or []
    if not isinstance(tools, (list, tuple)) or not all(isinstance(t, Mapping) for t in tools):
        raise InvalidInputError("an episode's tools must be a list of {name, calls, errors}")
    out["tools"] = [{**t, "name": clean_ident(t.get("name"), MAX_TOOL_NAME) or "?"} for t in tools]
    return out


# events ----------------------------------------------------------------------------------------------------------
ACTING_FIELDS = ("actor", "run_id", "tool_call_id", "session_id", "user_id")


def check_acting(values: Mapping[str, object]) -> None:
    """Who a change is attributed to (:func:`agent_memory.model.events.acting`): each of ``actor``, ``run_id``,
    ``tool_call_id``, ``session_id``, ``user_id`` given is a one-line id that is never a secret, refused before
    any change is made (they reach events, provenance metadata and rows)."""
    for name, value in values.items():
        check_ident(name, value)


_ID_SHAPE = re.compile(r"[\w.-]{1,200}")


def prepare_event(fields: Mapping[str, Any]) -> dict[str, Any]:
    """An event's fields as stored (:meth:`Event.to_dict`): every string field redacted, ``detail`` keys and values
    through :func:`clean_metadata`. Never raises on strings: the change the event reports is already made."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key == "detail":
            out[key] = clean_metadata(value if isinstance(value, Mapping) else {"value": value})
        elif key == "id" and isinstance(value, str) and _ID_SHAPE.fullmatch(value) and not looks_secret(value):
            out[key] = value  # a record id that passed the id gate: redacting it as text would corrupt it
        elif isinstance(value, str):
            out[key] = clean_text(value, 1000, one_line=True)
        else:
            out[key] = value
    return out


# archive notes ---------------------------------------------------------------------------------------------------
MAX_NOTE_REASON = 300


def archive_note(reason: object) -> str:
    """Why a record was archived (consolidation, a worker's ``memory_archive``) as stored in the archive file's
    one-line annotation and its event: one line (an annotation cannot be broken out of), redacted, trimmed."""
    return clean_text(reason, MAX_NOTE_REASON, one_line=True).replace("-->", "->") or "no reason given"
