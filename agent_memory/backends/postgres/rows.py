"""Rows ↔ records, and the SQL fragments every read shares (visibility, filters).

Visibility is the files backend's table, in SQL: project/global records for everyone; a session record for
its session and, when it names one, its user; a user record for its user; expired records for no one.
The ``tenant IN ('', uid)`` term is implied by the rest; it lets a distributed table route the query.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from typing import Any

from agent_memory.errors import InvalidInputError
from agent_memory.model import scopes
from agent_memory.model.lines import summary_line
from agent_memory.model.queries import as_of_filter, date_filters, kinds_of, scopes_of
from agent_memory.model.records import MemoryRecord, Scope, normalize_tags

_PARAM_PASSWORD = re.compile(r"((?:^|[?&;\s])(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'|[^&#\s]*)", re.I)


def _mask_hosts(netloc: str) -> str:
    """``user:pw@host[,user:pw@host…]`` with every password masked (a password may hold ``@``, ``:`` or ``,``)."""
    parts = netloc.split("@")
    out = []
    for i, part in enumerate(parts[:-1]):  # each part ends with a userinfo (after the hosts of the part before)
        hosts, sep, userinfo = part.rpartition(",") if i else ("", "", part)
        if i and not sep:  # no host list before it: the rest of a password that held "@"
            out.append("***")
            continue
        user, colon, _ = userinfo.partition(":")
        out.append(f"{hosts}{sep}{user}{':***' if colon else ''}")
    return "@".join([*out, parts[-1]])


def _split(url: str) -> tuple[str, str, str]:
    """``(scheme://, authority, /path?query#fragment)``; a string that is no URL is all "rest"."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return "", "", url
    at = rest.rfind("@", 0, min([i for i in (rest.find("?"), rest.find("#")) if i >= 0], default=len(rest)))
    end = min([i for i in (rest.find("/", at + 1), rest.find("?", at + 1), rest.find("#", at + 1)) if i >= 0], default=len(rest))
    return scheme + sep, rest[:end], rest[end:]


def redact_url(url: str) -> str:
    """The URL (or ``key=value`` connection string) without any password: the ``user:***@`` of every host of a
    multi-host URL, and the values of ``password=``/``sslpassword=`` parameters (for messages)."""
    head, netloc, rest = _split(url)
    return head + _mask_hosts(netloc) + _PARAM_PASSWORD.sub(r"\1***", rest)


def url_location(url: str) -> str:
    """Where a database is, for paths of results: :func:`redact_url` without the query and fragment (which a path
    does not need, and where a password may be given)."""
    head, netloc, rest = _split(url)
    if not head:
        return redact_url(url)
    return head + _mask_hosts(netloc) + rest.split("?", 1)[0].split("#", 1)[0]


COLUMNS = (
    "tenant",
    "id",
    "part",
    "scope",
    "session_id",
    "user_id",
    "namespace",
    "kind",
    "title",
    "tags",
    "tag_text",
    "memory_key",
    "source",
    "created",
    "updated",
    "expires",
    "expires_text",
    "importance",
    "content_hash",
    "content",
    "summary",
    "metadata",
    "happened_at",
    "valid_from",
    "valid_to",
    "superseded_by",
    "supersedes",
)
SELECT = ", ".join(c for c in COLUMNS)


def tenant_part(rec: MemoryRecord) -> tuple[str, str]:
    """The distribution key and the dedupe partition of a record (same partitions as the files backend: a
    namespaced record's partition is prefixed by its namespace, a root record's is unchanged)."""
    if rec.scope is Scope.SESSION:
        tenant, part = rec.user_id or "", f"session:{rec.session_id}"
    elif rec.scope is Scope.USER:
        tenant, part = rec.user_id or "", "user"
    else:
        tenant, part = "", rec.scope.value
    return tenant, (f"{rec.namespace}|{part}" if rec.namespace else part)


def parse_time(value: str | None) -> dt.datetime | None:
    from agent_memory.model.drafts import _parse_when  # drafts brings redaction: only writes need it

    return None if value is None else _parse_when(value)


def iso(value: dt.datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def record_params(rec: MemoryRecord) -> dict[str, Any]:
    """Column values of a record (``metadata`` as a Python mapping: wrap it in ``Jsonb`` to bind)."""
    tenant, part = tenant_part(rec)
    return {
        "tenant": tenant,
        "id": rec.id,
        "part": part,
        "scope": rec.scope.value,
        "session_id": rec.session_id,
        "user_id": rec.user_id,
        "namespace": rec.namespace or "",
        "kind": rec.kind,
        "title": rec.title,
        "tags": list(rec.tags),
        "tag_text": " ".join(rec.tags),
        "memory_key": rec.memory_key,
        "source": rec.source,
        "created": parse_time(rec.created),
        "updated": parse_time(rec.updated),
        "expires": parse_time(rec.expires),
        "expires_text": rec.expires,
        "importance": rec.importance,
        "content_hash": rec.content_hash,
        "content": rec.content,
        "summary": summary_line(rec.content),
        "metadata": dict(rec.metadata),
        "happened_at": parse_time(rec.happened_at),
        "valid_from": parse_time(rec.valid_from),
        "valid_to": parse_time(rec.valid_to),
        "superseded_by": rec.superseded_by,
        "supersedes": rec.supersedes,
    }


def row_to_record(row: dict[str, Any], path: str) -> MemoryRecord:
    return MemoryRecord(
        id=row["id"],
        content=row["content"],
        title=row["title"],
        kind=row["kind"],
        scope=Scope(row["scope"]),
        session_id=row["session_id"],
        user_id=row["user_id"],
        namespace=row.get("namespace") or "",
        tags=tuple(row["tags"] or ()),
        memory_key=row["memory_key"],
        source=row["source"],
        created=iso(row["created"]) or "",
        updated=iso(row["updated"]) or "",
        expires=row["expires_text"] if row["expires_text"] is not None else iso(row["expires"]),
        importance=row["importance"],
        content_hash=row["content_hash"],
        metadata=row["metadata"] or {},
        path=path,
        body_line=1,
        happened_at=iso(row["happened_at"]),
        valid_from=iso(row["valid_from"]),
        valid_to=iso(row["valid_to"]),
        superseded_by=row["superseded_by"],
        supersedes=row["supersedes"],
    )


def visibility(params: dict[str, Any], alias: str = "r") -> str:
    """The scope rule (:func:`agent_memory.model.scopes.postgres_sql`) and "not expired"; binds ``sid``, ``uid``,
    ``tenants`` and ``ns`` (the namespace view bound for the call) in ``params``."""
    scopes.postgres_params(params)
    return f"({scopes.postgres_sql(alias)} AND ({alias}.expires IS NULL OR {alias}.expires > now()))"


def check_strings(**values: Any) -> None:
    for name, value in values.items():
        if value is None:
            continue
        if not isinstance(value, str):
            raise InvalidInputError(f"{name} must be a string")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInputError(f"{name} is not valid Unicode (lone surrogate)") from None
        if "\x00" in value:
            raise InvalidInputError(f"{name} contains a NUL character")


_DATE_OPS = (
    ("created_after", "created", ">="),
    ("created_before", "created", "<"),
    ("updated_after", "updated", ">="),
    ("updated_before", "updated", "<"),
)


def time_sql(params: dict[str, Any], *, include_superseded: bool = False, as_of: Any = None, alias: str = "r") -> str:
    """`` AND …``: current rows only, all of them (``include_superseded``), or those in force at ``as_of``."""
    when = as_of_filter(as_of)
    if when is not None:
        params["f_as_of"] = parse_time(when)
        start = f"coalesce({alias}.valid_from, {alias}.happened_at, {alias}.created)"
        return f" AND {start} <= %(f_as_of)s AND ({alias}.valid_to IS NULL OR {alias}.valid_to > %(f_as_of)s)"
    return "" if include_superseded else f" AND {alias}.superseded_by IS NULL"


def filters_sql(
    params: dict[str, Any],
    *,
    tags: Iterable[str] = (),
    scope: Any = None,
    kind: Any = None,
    alias: str = "r",
    include_superseded: bool = False,
    as_of: Any = None,
    **dates: str | None,
) -> str:
    """Exact filters shared by list/count/search: scope(s), kind(s), dates, supersession; tags (all must match)."""
    unknown = set(dates) - {name for name, _, _ in _DATE_OPS}
    if unknown:
        raise InvalidInputError(f"unknown filter(s): {', '.join(sorted(unknown))}")
    sql = time_sql(params, include_superseded=bool(include_superseded), as_of=as_of, alias=alias)
    scopes = scopes_of(scope)
    if scopes:
        params["f_scopes"] = [s.value for s in scopes]
        sql += f" AND {alias}.scope = ANY(%(f_scopes)s)"
    kinds = kinds_of(kind)
    if kinds:
        params["f_kinds"] = list(kinds)
        sql += f" AND {alias}.kind = ANY(%(f_kinds)s)"
    for name, column, op in _DATE_OPS:
        value = dates.get(name)
        if value is None:
            continue
        check_strings(**{name: value})
        [text] = date_filters(**{name: value})  # the files backend's rules: a day given as an end includes that day
        when = parse_time(text or "")
        if when is None:  # pragma: no cover - date_filters raised already
            raise InvalidInputError(f"{name} must be an ISO date or datetime (e.g. 2026-11-22), not {value!r}")
        params[f"f_{name}"] = when
        sql += f" AND {alias}.{column} {op} %(f_{name})s"
    wanted = normalize_tags(tags)
    if wanted:
        params["f_tags"] = list(wanted)
        sql += f" AND {alias}.tags @> %(f_tags)s"
    return sql
