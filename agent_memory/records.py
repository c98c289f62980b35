"""Memory records: the data model, ids, and the Markdown + frontmatter file format.

A record file is ``---`` + YAML frontmatter + ``---`` + the content. YAML is written;
YAML and JSON frontmatter are read (JSON is what some other providers write).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import math
import re
import secrets
import unicodedata
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from .errors import InvalidIdError, InvalidInputError
from .frontmatter_safe import FrontmatterError, as_text, split_text


class Scope(StrEnum):
    """Who may see a record. Scopes are hard partitions."""

    SESSION = "session"
    PROJECT = "project"
    USER = "user"
    GLOBAL = "global"

    def __str__(self) -> str:
        return self.value


SOURCES = ("tool", "turn_capture", "compaction_capture", "import", "manual", "consolidation")
MAX_CONTENT_BYTES = 1_000_000
MAX_TITLE_CHARS = 200
MAX_TAGS = 32
MAX_TAG_CHARS = 64

# no control, format (bidi, zero-width) or line-separator characters: an id is a file name and a MEMORY.md token
_ID_RE = re.compile("[^\x00-\x1f\x7f-\x9f/\\\\\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]{1,200}")
_KEY_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:@-]{0,127}")
_KIND_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_SLUG_RE = re.compile(r"[^a-z0-9]+")
_CAMEL = {"sessionId": "session_id", "userId": "user_id", "memoryKey": "memory_key", "contentHash": "content_hash"}
FIELDS = (
    "id", "title", "kind", "scope", "session_id", "user_id", "tags", "memory_key", "source",
    "created", "updated", "expires", "importance", "content_hash",
)


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def validate_id(record_id: object) -> str:
    """Return ``record_id`` if it is a safe file stem, else raise :class:`InvalidIdError`."""
    if not isinstance(record_id, str) or not _ID_RE.fullmatch(record_id):
        raise InvalidIdError(f"invalid record id: {record_id!r}")
    if record_id.startswith((".", " ")) or record_id.endswith((" ", ".")) or ".." in record_id:
        raise InvalidIdError(f"invalid record id: {record_id!r}")
    try:  # a file name: valid UTF-8 and within NAME_MAX (255 bytes) with ".md"
        too_long = len(record_id.encode("utf-8")) > 240
    except UnicodeEncodeError:
        raise InvalidIdError(f"invalid record id: {record_id!r} (not valid Unicode)") from None
    if too_long:
        raise InvalidIdError(f"invalid record id: {record_id!r} (longer than 240 bytes)")
    return record_id


def validate_key(key: object) -> str:
    """Return ``key`` if it is a valid ``memory_key`` (never used as a path), else raise."""
    if not isinstance(key, str) or not _KEY_RE.fullmatch(key) or ".." in key:
        raise InvalidIdError(f"invalid memory_key: {key!r} (letters, digits, _ . : @ -; at most 128)")
    return key


def content_hash(content: str) -> str:
    """Hash used for exact-duplicate detection (line endings and outer whitespace ignored)."""
    norm = content.replace("\r\n", "\n").strip()
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()[:16]


def slugify(text: str, max_len: int = 40) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    slug = _SLUG_RE.sub("-", ascii_text).strip("-")[:max_len].strip("-")
    return slug or "memory"


def new_id(title: str, created: str) -> str:
    """``YYYY-MM-DD-<slug>-<8 hex>``: derived from date, a sanitised slug and randomness."""
    return f"{created[:10]}-{slugify(title)}-{secrets.token_hex(4)}"


def default_title(content: str) -> str:
    first = next((line.strip(" #*-\t") for line in content.splitlines() if line.strip()), "")
    return first[:60] or "memory"


def check_content(content: object) -> str:
    if not isinstance(content, str):
        raise InvalidInputError(f"content must be a string, not {type(content).__name__}")
    if not content.strip():
        raise InvalidInputError("content is empty")
    if "\x00" in content:
        raise InvalidInputError("content contains a NUL character")
    try:
        size = len(content.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInputError("content is not valid Unicode (lone surrogate)") from None
    if size > MAX_CONTENT_BYTES:
        raise InvalidInputError(f"content is {size} bytes; the limit is {MAX_CONTENT_BYTES}")
    return content


def check_text_field(name: str, value: object, max_chars: int) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string")
    if any(c in value for c in "\x00\r\n") or len(value) > max_chars:
        raise InvalidInputError(f"{name} must be one line of at most {max_chars} characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(f"{name} is not valid Unicode") from None
    return value


def normalize_tags(tags: Iterable[str] | str | None) -> tuple[str, ...]:
    if tags is None:
        return ()
    if isinstance(tags, str):
        tags = [tags]
    elif not isinstance(tags, Iterable) or isinstance(tags, Mapping):  # e.g. from JSON: a number or an object
        raise InvalidInputError("tags must be a list of strings")
    out: list[str] = []
    for tag in tags:
        tag = check_text_field("tag", tag, MAX_TAG_CHARS).strip().lower()
        if tag and tag not in out:
            out.append(tag)
    if len(out) > MAX_TAGS:
        raise InvalidInputError(f"at most {MAX_TAGS} tags")
    return tuple(out)


def normalize_kind(kind: str | None) -> str:
    if kind is not None and not isinstance(kind, str):
        raise InvalidInputError("kind must be a string")
    kind = (kind or "fact").strip().lower().replace(" ", "_")
    if not _KIND_RE.fullmatch(kind):
        raise InvalidInputError(f"invalid kind: {kind!r}")
    return kind


def parse_scope(scope: Scope | str | None, default: Scope = Scope.PROJECT) -> Scope:
    if scope is None or scope == "":
        return default
    try:
        return Scope(str(scope).lower())
    except ValueError:
        raise InvalidInputError(f"unknown scope {scope!r}; use session, project, user or global") from None


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
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    path: str | None = None
    body_line: int = 1

    def replace(self, **changes: Any) -> "MemoryRecord":
        return dataclasses.replace(self, **changes)

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
        for name in ("session_id", "user_id", "memory_key", "expires", "importance"):
            data.setdefault(name, None)
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


_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9 _.,/@()'+-]*")
_RESERVED = frozenset("true false yes no on off null none y n".split())
_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")


def yaml_scalar(value: Any) -> str:
    """Render one YAML value: plain when unambiguous, else a JSON string or flow collection.

    JSON is valid YAML flow syntax; characters YAML would reject or fold are escaped.
    """
    if isinstance(value, str) and _PLAIN.fullmatch(value) and value.lower() not in _RESERVED and not value.endswith(" "):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    text = json.dumps(value, ensure_ascii=False, default=str, separators=(", ", ": "))
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


class RecordParseError(InvalidInputError):
    """A record file the store cannot fully understand: it is quarantined (never read, never shared).

    ``reason`` says what is wrong and ``fix`` how to repair the file (shown by ``doctor``)."""

    def __init__(self, reason: str, fix: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.fix = fix


_OWNER_FIX = "quote it as text, e.g. user_id: \"bob\""


def _field_text(data: Mapping[str, Any], name: str, *, max_chars: int = 200, scalars: bool = False) -> str | None:
    """A one-line text field, or a typed refusal. ``scalars``: numbers and dates are accepted as text."""
    value = data.get(name)
    if value is None:
        return None
    ok = (str, int, float, dt.date, dt.time) if scalars else (str, dt.date, dt.datetime)
    if isinstance(value, bool) or not isinstance(value, ok) or (isinstance(value, float) and not math.isfinite(value)):
        raise RecordParseError(f"{name} must be text, not {type(value).__name__}", f"write {name} as quoted text")
    text = as_text(value) or ""
    if len(text) > max_chars or any(c in text for c in "\x00\r\n") or (scalars is False and not text.strip()):
        raise RecordParseError(f"{name} must be one non-empty line of at most {max_chars} characters", f"shorten {name}")
    return text


def _field_when(data: Mapping[str, Any], name: str) -> str | None:
    text = _field_text(data, name, max_chars=64)
    if text is not None and normalize_instant(text) is None:
        raise RecordParseError(f"{name} is not an ISO date or datetime", f"write {name} like 2026-11-22T10:00:00Z")
    return text


def _field_tags(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [t for t in re.split(r"[,\s]+", value) if t]
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise RecordParseError("tags must be a list of text tags", "write tags: [a, b] with words, quoting numbers")
    try:
        return normalize_tags(value)
    except InvalidInputError as exc:
        raise RecordParseError(f"tags: {exc}", f"at most {MAX_TAGS} one-line tags of {MAX_TAG_CHARS} characters") from None


def _field_importance(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, str) and len(value) <= 32:  # YAML 1.1 reads "1e-05" (as our writer renders it) as text
        try:
            value = float(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RecordParseError("importance must be a number", "write importance as a number from 0 to 1")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number) or not 0 <= number <= 1:
        raise RecordParseError("importance is not a number from 0 to 1", "write importance from 0 to 1")
    return number


def _field_scope(known: Mapping[str, Any]) -> tuple[Scope, str | None, str | None]:
    """Scope and owner; a file that names an owner but whose scope cannot be established is refused."""
    session_id = _field_text(known, "session_id")
    user_id = _field_text(known, "user_id")
    raw = known.get("scope")
    if raw is None:
        if session_id is not None or user_id is not None:
            raise RecordParseError("names an owner (user_id/session_id) but no scope",
                                   "add scope: user (or session), or remove the owner fields")
        return Scope.PROJECT, None, None
    if not isinstance(raw, str):
        raise RecordParseError(f"scope must be text, not {type(raw).__name__}", "write scope: project, user, session or global")
    try:
        scope = Scope(raw.strip().lower())
    except ValueError:
        raise RecordParseError("unknown scope", "write scope: project, user, session or global") from None
    if scope is Scope.USER and user_id is None:
        raise RecordParseError("scope user without a user_id", "add user_id: <the user>")
    if scope is Scope.SESSION and session_id is None:
        raise RecordParseError("scope session without a session_id", "add session_id: <the session>")
    return scope, session_id, user_id


def _known_fields(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split frontmatter into known fields (keys matched case-insensitively, camelCase accepted) and the rest."""
    metadata = data.pop("metadata", data.pop("Metadata", None))
    if metadata is not None and not isinstance(metadata, dict):
        raise RecordParseError("metadata must be a mapping", "write metadata as key: value lines")
    metadata = dict(metadata or {})
    for camel, snake in _CAMEL.items():  # camelCase metadata from JSON-frontmatter providers
        if camel in metadata and snake not in data:
            data[snake] = metadata.pop(camel)
    known: dict[str, Any] = {}
    for key in list(data):
        if not isinstance(key, str):
            raise RecordParseError("a frontmatter key is not text", "write keys as words")
        name = _CAMEL.get(key, key.strip().lower().replace("-", "_"))
        if name in FIELDS:
            if name in known and known[name] != data[key]:
                raise RecordParseError(f"field {name} is given twice with different values", f"keep one {name}")
            known[name] = data.pop(key)
    metadata.update(data)  # unknown top-level keys survive as metadata
    return known, _clean_metadata(metadata)


def _clean_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Metadata values must be JSON: text keys, finite numbers; dates become ISO text (iterative)."""
    todo: list[Any] = [metadata]
    while todo:
        item = todo.pop()
        pairs = list(item.items()) if isinstance(item, dict) else list(enumerate(item))
        for key, value in pairs:
            if isinstance(item, dict) and not isinstance(key, str):
                item.pop(key)
                item[str(key)] = value
            if isinstance(value, (dict, list)):
                todo.append(value)
            elif isinstance(value, float) and not math.isfinite(value):
                raise RecordParseError("metadata holds NaN or infinity", "write finite numbers")
            elif isinstance(value, (dt.date, dt.time)):
                item[str(key) if isinstance(item, dict) else key] = as_text(value)
    return metadata


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
    return MemoryRecord(
        id=record_id,
        content=body,
        title=_field_text(known, "title", max_chars=MAX_TITLE_CHARS, scalars=True) or default_title(body),
        kind=kind,
        scope=scope,
        session_id=session_id,
        user_id=user_id,
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
    )


def normalize_instant(value: str) -> str | None:
    """An ISO date/datetime as one UTC instant ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (naive = UTC); None if unreadable.

    Instants outside the representable range clamp to its ends, so comparisons stay right."""
    try:
        when = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    try:
        when = when.astimezone(dt.UTC)
    except OverflowError:
        when = dt.datetime.min if when.year < 5000 else dt.datetime.max
    return when.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
