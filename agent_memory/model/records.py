"""Memory records: the data model and the Markdown + frontmatter file format.

A record file is ``---`` + YAML frontmatter + ``---`` + the content. YAML is written;
YAML and JSON frontmatter are read (JSON is what some other providers write).
Values (scopes, ids, tags, instants) are checked in :mod:`agent_memory.model.values` and
frontmatter fields in :mod:`agent_memory.model.record_fields`; both are re-exported here.

Two clocks: ``created`` is when the record was written (``recorded_at``); ``happened_at`` is when
what it says happened or was said, and ``valid_from``/``valid_to`` when it was true. A record
replaced by a newer fact names it in ``superseded_by`` (the newer one names it in ``supersedes``).
"""

from __future__ import annotations

import copyreg
import dataclasses
from collections.abc import Mapping
from typing import Any

from agent_memory.errors import InvalidInputError
from agent_memory.formats.frontmatter import FrontmatterError, split_text
from agent_memory.formats.yaml_writer import yaml_scalar
from agent_memory.model.record_fields import (
    RecordParseError,
    _field_importance,
    _field_scope,
    _field_tags,
    _field_text,
    _field_when,
    _known_fields,
    clock_fields,
)
from agent_memory.model.scopes import check_namespace
from agent_memory.model.values import (
    CLOCK_FIELDS,
    FIELDS,
    MAX_CONTENT_BYTES,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_TITLE_CHARS,
    SOURCES,
    Scope,
    check_content,
    check_text_field,
    content_hash,
    default_title,
    new_id,
    normalize_instant,
    normalize_kind,
    normalize_tags,
    now_iso,
    parse_scope,
    slugify,
    validate_id,
    validate_key,
)

__all__ = [
    "CLOCK_FIELDS",
    "FIELDS",
    "MAX_CONTENT_BYTES",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "MAX_TITLE_CHARS",
    "SOURCES",
    "MemoryRecord",
    "RecordParseError",
    "Scope",
    "check_content",
    "check_text_field",
    "content_hash",
    "default_title",
    "new_id",
    "normalize_instant",
    "normalize_kind",
    "normalize_tags",
    "now_iso",
    "parse_record",
    "parse_scope",
    "slugify",
    "validate_id",
    "validate_key",
    "yaml_scalar",
]


@dataclasses.dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One durable memory. ``content`` is the Markdown body of the record file."""

    id: str
    content: str
    title: str = ""
    kind: str = "fact"
    scope: Scope = Scope.PROJECT
    session_id: str | None = None
    user_id: str | None = None
    tags: tuple[str, ...] = ()
    memory_key: str | None = None
    source: str = "manual"
    created: str = ""
    updated: str = ""
    expires: str | None = None
    importance: float | None = None
    content_hash: str = ""
    happened_at: str | None = None
    valid_from: str | None = None
    valid_to: str | None = None
    superseded_by: str | None = None
    supersedes: str | None = None
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    path: str | None = None
    body_line: int = 1
    namespace: str = ""  # '' is the root namespace (omitted from the file)

    def replace(self, **changes: Any) -> "MemoryRecord":
        """``dataclasses.replace`` (a MemoryRecord has no ``__post_init__`` nor ``init=False`` field), without its
        per-call walk of the fields: a bulk write replaces twice per record."""
        if type(self) is not MemoryRecord or not changes.keys() <= _NAME_SET:
            return dataclasses.replace(self, **changes)
        new = object.__new__(MemoryRecord)
        for name in _NAMES:
            _set(new, name, changes[name] if name in changes else getattr(self, name))
        return new

    def __reduce__(self) -> str | tuple[Any, ...]:
        """Pickled as its field values in order (the draft worker sends thousands: no walk of the fields per record)."""
        if type(self) is not MemoryRecord:  # a subclass: as dataclasses pickles it (its own fields' state)
            return (copyreg.__newobj__, (type(self),), self.__getstate__())  # type: ignore[attr-defined]
        return (_record_of, tuple(getattr(self, name) for name in _NAMES))

    @property
    def recorded_at(self) -> str:
        """When the record was written (the ``created`` field)."""
        return self.created

    def frontmatter(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for name in FIELDS:
            value = getattr(self, name)
            if name == "scope":
                value = value.value
            elif name == "tags":
                value = list(value)
            if value is None or value == [] or value == "":
                continue
            data[name] = value
        if self.metadata:
            data["metadata"] = dict(self.metadata)
        return data

    def to_dict(self, *, content: bool = True) -> dict[str, Any]:
        data = self.frontmatter()
        data.setdefault("tags", [])
        for name in ("session_id", "user_id", "memory_key", "expires", "importance", *CLOCK_FIELDS, "superseded_by", "supersedes"):
            data.setdefault(name, None)
        data["recorded_at"] = self.created
        data["metadata"] = dict(self.metadata)
        data["path"] = self.path
        if content:
            data["content"] = self.content
        return data

    def render(self) -> str:
        """The file text: YAML frontmatter, then the content and one trailing newline."""
        out = ["---"]
        for key, value in self.frontmatter().items():
            if isinstance(value, list) and value:
                out.append(f"{key}:")
                out.extend(f"- {yaml_scalar(v)}" for v in value)
            else:
                out.append(f"{key}: {yaml_scalar(value)}")
        out.append("---")
        out.append(self.content)
        return "\n".join(out) + "\n"


_NAMES = tuple(f.name for f in dataclasses.fields(MemoryRecord))
_NAME_SET = frozenset(_NAMES)
_set = object.__setattr__


def _record_of(*values: Any) -> MemoryRecord:
    """A record from its field values in order (what :meth:`MemoryRecord.__reduce__` pickles)."""
    return MemoryRecord(*values)


def parse_record(text: str, record_id: str, *, path: str | None = None, mtime_iso: str | None = None) -> MemoryRecord:
    """Build a record from file text, or raise :class:`RecordParseError` (the file is then quarantined).

    Unknown frontmatter keys are kept in ``metadata``; every known field is type-checked."""
    try:
        split = split_text(text)
    except FrontmatterError as exc:
        raise RecordParseError(exc.reason, exc.fix) from None
    except (RecursionError, MemoryError, OverflowError, TypeError, ValueError) as exc:
        raise RecordParseError(f"unreadable frontmatter ({type(exc).__name__})", "simplify the frontmatter") from None
    body = split.body[:-1] if split.body.endswith("\n") else split.body
    if len(body.encode("utf-8", "surrogatepass")) > MAX_CONTENT_BYTES:
        raise RecordParseError(f"content is larger than {MAX_CONTENT_BYTES} bytes", "split the record into smaller ones")
    if "\x00" in body:
        raise RecordParseError("content contains a NUL character", "remove the NUL characters")
    known, metadata = _known_fields(split.data)
    scope, session_id, user_id = _field_scope(known)
    kind = known.get("kind")
    try:
        kind = normalize_kind(kind if kind is None or isinstance(kind, str) else 0)  # type: ignore[arg-type]
        memory_key = None if known.get("memory_key") is None else validate_key(known.get("memory_key"))
    except InvalidInputError as exc:
        raise RecordParseError(str(exc), "use letters, digits, '_' and '-'") from None
    source = _field_text(known, "source", max_chars=32) or "manual"
    created = _field_when(known, "created") or mtime_iso or ""
    clocks = clock_fields(known, record_id)
    return MemoryRecord(
        id=record_id,
        content=body,
        title=_field_text(known, "title", max_chars=MAX_TITLE_CHARS, scalars=True) or default_title(body),
        kind=kind,
        scope=scope,
        session_id=session_id,
        user_id=user_id,
        namespace=_field_namespace(known.get("namespace")),
        tags=_field_tags(known.get("tags")),
        memory_key=memory_key,
        source=source,
        created=created,
        updated=_field_when(known, "updated") or created,
        expires=_field_when(known, "expires"),
        importance=_field_importance(known.get("importance")),
        content_hash=content_hash(body),
        metadata=metadata,
        path=path,
        body_line=split.body_line,
        **clocks,  # type: ignore[arg-type]
    )


def _field_namespace(value: object) -> str:
    """The ``namespace`` frontmatter field (absent: the root), checked by the one namespace rule."""
    try:
        return check_namespace(value)
    except InvalidInputError as exc:
        raise RecordParseError(str(exc), "fix or remove the namespace field") from None
