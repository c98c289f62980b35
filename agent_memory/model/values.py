"""Record values: scopes, ids, keys, kinds, tags, content checks and instants (no file format here).

The lowest layer of the package: :mod:`agent_memory.model.records` (the record and its file) and
:mod:`agent_memory.model.record_fields` (frontmatter checks) build on it.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import TYPE_CHECKING

from agent_memory.errors import InvalidIdError, InvalidInputError

if TYPE_CHECKING:
    from agent_memory.redaction import ids as ids_module


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
FIELDS = (
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
    "happened_at",
    "valid_from",
    "valid_to",
    "superseded_by",
    "supersedes",
)
CLOCK_FIELDS = ("happened_at", "valid_from", "valid_to")  # instants besides created/updated/expires


def shown(value: object) -> str:
    """``repr(value)`` for an error message, with any secret in it redacted (messages reach logs and reports)."""
    from agent_memory.redaction.api import redact_text  # only on the error path: reads never load the redaction rules

    text = repr(value)
    red = redact_text(text)
    if red == text and isinstance(value, str) and looks_secret(value):
        return "(a value that looks like a secret)"
    return red


def looks_secret(value: str) -> bool:
    """True if ``value`` holds a secret, also one glued into an identifier (the id rule's home:
    :func:`agent_memory.redaction.ids.looks_secret`)."""
    from agent_memory.redaction import ids  # writes and error paths only: reads never load the redaction rules
    from agent_memory.redaction.api import contains_secret

    return ids.looks_secret(value, contains_secret)


def _rule() -> tuple[ids_module.Contains, ids_module.Plain]:
    from agent_memory.redaction.api import contains_secret  # writes and error paths only
    from agent_memory.redaction.slugs import plain_slug

    return contains_secret, plain_slug


def looks_secret_glued(value: str) -> bool:
    """:func:`looks_secret`, and also a secret glued after a prefix (``chat-sk-…``): the check of every identifier the
    store writes (ids, keys, tags), its verdict remembered per stem (:func:`agent_memory.redaction.ids.looks_secret_glued`)."""
    from agent_memory.redaction import ids

    return ids.looks_secret_glued(value, *_rule())


def id_stem(title: str, created: str) -> str:
    """What :func:`new_id` checks of the id it mints from ``title`` on ``created``'s day (the id less its random
    suffix): checking it ahead (:func:`stem_verdicts`, e.g. on another core) makes the mint free."""
    return f"{created[:10]}-{slugify(title)}"


def stem_verdicts(stems: Iterable[str]) -> dict[str, bool]:
    """The identifier check's verdict on each of ``stems`` (:func:`id_stem`), remembered as well."""
    from agent_memory.redaction import ids

    return ids.stem_verdicts(stems, *_rule())


def remember_verdicts(verdicts: Mapping[str, bool]) -> None:
    """Take verdicts :func:`stem_verdicts` gave in another process running this same code (a draft worker of
    ``remember_many``): the ids minted from those stems then cost no engine pass here."""
    from agent_memory.redaction import ids

    ids.remember_verdicts(verdicts)


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def validate_id(record_id: object) -> str:
    """Return ``record_id`` if it is a safe file stem, else raise :class:`InvalidIdError`."""
    if not isinstance(record_id, str) or not _ID_RE.fullmatch(record_id):
        raise InvalidIdError(f"invalid record id: {shown(record_id)}")
    if record_id.startswith((".", " ")) or record_id.endswith((" ", ".")) or ".." in record_id:
        raise InvalidIdError(f"invalid record id: {shown(record_id)}")
    try:  # a file name: valid UTF-8 and within NAME_MAX (255 bytes) with ".md"
        too_long = len(record_id.encode("utf-8")) > 240
    except UnicodeEncodeError:
        raise InvalidIdError(f"invalid record id: {shown(record_id)} (not valid Unicode)") from None
    if too_long:
        raise InvalidIdError(f"invalid record id: {shown(record_id)} (longer than 240 bytes)")
    return record_id


def validate_key(key: object) -> str:
    """Return ``key`` if it is a valid ``memory_key`` (never used as a path), else raise."""
    if not isinstance(key, str) or not _KEY_RE.fullmatch(key) or ".." in key:
        raise InvalidIdError(f"invalid memory_key: {shown(key)} (letters, digits, _ . : @ -; at most 128)")
    return key


def content_hash(content: str) -> str:
    """Hash used for exact-duplicate detection (line endings and outer whitespace ignored)."""
    norm = content.replace("\r\n", "\n").strip()
    import hashlib  # writes only: a read-only process never loads OpenSSL for it

    return hashlib.sha256(norm.encode("utf-8")).hexdigest()[:16]


def slugify(text: str, max_len: int = 40) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    slug = _SLUG_RE.sub("-", ascii_text).strip("-")[:max_len].strip("-")
    return slug or "memory"


def new_id(title: str, created: str) -> str:
    """``YYYY-MM-DD-<slug>-<8 hex>``: derived from date, a sanitised slug and randomness."""
    import secrets

    rid = f"{id_stem(title, created)}-{secrets.token_hex(4)}"
    if looks_secret_glued(rid):  # a slug cut short can read as a token ("token-bucket-…-for-the-ap"): the id would be
        rid = f"{created[:10]}-memory-{rid[-8:]}"  # refused or redacted by the event gate, so it is never minted
    return rid


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
        raise InvalidInputError(f"invalid kind: {shown(kind)}")
    return kind


def parse_scope(scope: Scope | str | None, default: Scope = Scope.PROJECT) -> Scope:
    if scope is None or scope == "":
        return default
    try:
        return Scope(str(scope).lower())
    except ValueError:
        raise InvalidInputError(f"unknown scope {shown(scope)}; use session, project, user or global") from None


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
