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

from agent_memory.errors import InvalidIdError, InvalidInputError


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


_SEPARATORS = re.compile(r"[-.:@/+=~]+")
_OUR_ID = re.compile(r"\d{4}-\d{2}-\d{2}-[a-z0-9-]*-[0-9a-f]{8}")  # new_id's shape: its last 8 hex are random


def looks_secret(value: str) -> bool:
    """True if ``value`` holds a secret, also one glued into an identifier (``2026-01-01-ghp_…``, ``user-sk_live_…``):
    the redaction engine wants a boundary before a token, and ``-`` is not one for it."""
    from agent_memory.redaction.api import contains_secret  # writes and error paths only

    if _OUR_ID.fullmatch(value):  # our own random suffix after a slug word ("…-token-c4f6d89e") is no secret
        value = value[:-9]
    if contains_secret(value):
        return True
    spaced = _SEPARATORS.sub(" ", value)
    # the spaced form looks for a token glued after a prefix; labels read across a slug's words ("the key to the
    # roadmap ab12cd34") would refuse ordinary ids, so only the token rules look at it
    return spaced != value and contains_secret(spaced, general=False)


_GLUE = re.compile(r"[-.:@/+=~_]+")


def looks_secret_glued(value: str) -> bool:
    """:func:`looks_secret`, and also a secret glued after a prefix (``chat-sk-…``, ``ada.ghp_…``: spacing the
    separators would also split the token's own ``sk-``): the check of every identifier the store writes (ids, keys,
    tags).

    The verdict on an id of :func:`new_id`'s shape is its stem's (the date and slug: the random suffix is never
    read), and it is remembered per stem (:func:`_stem_verdict`; redaction has no state): the id a write mints is
    checked once, by :func:`new_id`, and neither the event that names it, nor another id minted from the same title
    on the same day (a re-mint after a name clash, a repeated title) runs the engine again. Whoever supplied the
    id, the verdict is the same function of its text: an id from an import, ``--id`` or the API that was never
    minted here gets the full check."""
    if _OUR_ID.fullmatch(value):  # new_id's random suffix after a slug word ("…-token-c4f6d89e") is no secret
        value = value[:-9]
    return _stem_verdict(value)


_VERDICTS: dict[str, bool] = {}  # identifier (without our random suffix) -> holds a secret; emptied when full
_VERDICTS_MAX = 8192


def _stem_verdict(value: str) -> bool:
    """:func:`looks_secret_glued` of an identifier without our random suffix (a pure function of ``value``)."""
    verdict = _VERDICTS.get(value)
    if verdict is None:
        verdict = _glued_check(value)
        if len(_VERDICTS) >= _VERDICTS_MAX:
            _VERDICTS.clear()
        _VERDICTS[value] = verdict
    return verdict


def _glued_check(value: str) -> bool:
    from agent_memory.redaction.api import contains_secret  # writes and error paths only
    from agent_memory.redaction.slugs import plain_slug  # a minted id's stem of plain words: provably no secret, no pass

    if plain_slug(value):
        return False
    if looks_secret(value):
        return True
    return any(contains_secret(value[m.end() :]) for m in _GLUE.finditer(value) if len(value) - m.end() >= 16)


def id_stem(title: str, created: str) -> str:
    """What :func:`new_id` checks of the id it mints from ``title`` on ``created``'s day (the id less its random
    suffix): checking it ahead (:func:`stem_verdicts`, e.g. on another core) makes the mint free."""
    return f"{created[:10]}-{slugify(title)}"


def stem_verdicts(stems: Iterable[str]) -> dict[str, bool]:
    """The identifier check's verdict on each of ``stems`` (:func:`id_stem`), remembered here as well."""
    return {stem: _stem_verdict(stem) for stem in stems}


def remember_verdicts(verdicts: Mapping[str, bool]) -> None:
    """Take verdicts :func:`stem_verdicts` gave in another process running this same code (a draft worker of
    ``remember_many``): the ids minted from those stems then cost no engine pass here."""
    if len(_VERDICTS) + len(verdicts) > _VERDICTS_MAX:
        _VERDICTS.clear()
    _VERDICTS.update({k: bool(v) for k, v in verdicts.items() if isinstance(k, str)})


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
