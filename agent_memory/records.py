"""Memory records: the data model, ids, and the Markdown + frontmatter file format.

A record file is ``---`` + YAML frontmatter + ``---`` + the content. YAML is written;
YAML and JSON frontmatter are read (JSON is what some other providers write).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import re
import secrets
import unicodedata
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any

import yaml

from .errors import InvalidIdError, InvalidInputError

try:  # the C loader/dumper are ~10x faster; fall back to pure Python
    _Loader: Any = yaml.CSafeLoader
    _Dumper: Any = yaml.CSafeDumper
except AttributeError:  # pragma: no cover
    _Loader, _Dumper = yaml.SafeLoader, yaml.SafeDumper


class Scope(str, Enum):
    """Who may see a record. Scopes are hard partitions."""

    SESSION = "session"
    PROJECT = "project"
    USER = "user"
    GLOBAL = "global"

    def __str__(self) -> str:
        return self.value


SOURCES = ("tool", "turn_capture", "compaction_capture", "import", "manual")
MAX_CONTENT_BYTES = 1_000_000
MAX_TITLE_CHARS = 200
MAX_TAGS = 32
MAX_TAG_CHARS = 64

_ID_RE = re.compile(r"[^\x00-\x1f\x7f/\\]{1,200}")
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
    """A record file's frontmatter could not be read."""


def _split(text: str) -> tuple[str | None, str, int]:
    """Split file text into (frontmatter text or None, body, 1-based line where the body starts)."""
    if not (text.startswith("---\n") or text.startswith("---\r\n")):
        return None, text, 1
    lines = text.splitlines(keepends=True)
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n") == "---":
            return "".join(lines[1:i]), "".join(lines[i + 1:]), i + 2
    raise RecordParseError("frontmatter block is not closed by a '---' line")


def _as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def parse_record(text: str, record_id: str, *, path: str | None = None, mtime_iso: str | None = None) -> MemoryRecord:
    """Build a record from file text. Unknown frontmatter keys are kept in ``metadata``."""
    header, body, body_line = _split(text)
    data: dict[str, Any] = {}
    if header is not None and header.strip():
        try:
            loaded = json.loads(header) if header.lstrip().startswith("{") else yaml.load(header, Loader=_Loader)
        except (ValueError, yaml.YAMLError) as exc:
            raise RecordParseError(f"unreadable frontmatter: {str(exc).splitlines()[0]}") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise RecordParseError("frontmatter is not a mapping")
        data = dict(loaded or {})
    nl = text.find("\n")  # a CRLF file? ours are LF, so content ending in "\r" keeps it
    if nl > 0 and text[nl - 1] == "\r" and body.endswith("\r\n"):
        body = body[:-2]
    elif body.endswith("\n"):
        body = body[:-1]
    metadata = data.pop("metadata", None)
    metadata = dict(metadata) if isinstance(metadata, dict) else {}
    for camel, snake in _CAMEL.items():  # camelCase metadata from JSON-frontmatter providers
        if camel in metadata and snake not in data:
            data[snake] = metadata.pop(camel)
    known = {k: data.pop(k) for k in list(data) if k in FIELDS}
    metadata.update(data)  # unknown top-level keys survive as metadata
    try:
        scope = parse_scope(known.get("scope"))
    except InvalidInputError as exc:
        raise RecordParseError(str(exc)) from None
    tags_raw = known.get("tags") or ()
    if isinstance(tags_raw, str):
        tags_raw = [t for t in re.split(r"[,\s]+", tags_raw) if t]
    tags = tuple(str(t).strip().lower() for t in tags_raw if str(t).strip())
    importance = known.get("importance")
    try:
        importance = float(importance) if importance is not None else None
    except (TypeError, ValueError):
        importance = None
    created = _as_text(known.get("created")) or mtime_iso or ""
    return MemoryRecord(
        id=record_id,
        content=body,
        title=_as_text(known.get("title")) or default_title(body),
        kind=str(known.get("kind") or "fact"),
        scope=scope,
        session_id=_as_text(known.get("session_id")),
        user_id=_as_text(known.get("user_id")),
        tags=tags,
        memory_key=_as_text(known.get("memory_key")),
        source=str(known.get("source") or "manual"),
        created=created,
        updated=_as_text(known.get("updated")) or created,
        expires=_as_text(known.get("expires")),
        importance=importance,
        content_hash=content_hash(body),
        metadata=metadata,
        path=path,
        body_line=body_line,
    )
