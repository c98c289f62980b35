"""The arguments of a read, checked and normalised once for every backend: caller ids, scopes, kinds, dates, as-of.

Each raises :class:`~agent_memory.errors.InvalidInputError` with the argument's name on bad input, before any query.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import Any

from agent_memory.errors import InvalidInputError
from agent_memory.model.records import Scope, normalize_kind, parse_scope
from agent_memory.model.values import shown

__all__ = ["as_of_filter", "check_strings", "date_filters", "kinds_of", "scopes_of", "utc_text"]


def check_strings(**values: Any) -> None:
    """Caller ids and filters reach SQL: each must be None or a valid Unicode string (typed error otherwise)."""
    for name, value in values.items():
        if value is None:
            continue
        if not isinstance(value, str):
            raise InvalidInputError(f"{name} must be a string")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInputError(f"{name} is not valid Unicode (lone surrogate)") from None


_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _parse_when(value: str) -> dt.datetime | None:
    from agent_memory.model.drafts import _parse_when as parse  # drafts import the redaction package: only when a date is given

    return parse(value)


def utc_text(when: dt.datetime) -> str:
    from agent_memory.model.drafts import utc_text as text

    return text(when)


def date_filters(**values: str | None) -> list[str | None]:
    """Validate ISO date/datetime filters and normalise them to the stored UTC form (``…Z``)."""
    out: list[str | None] = []
    for name, value in values.items():
        if value is None:
            out.append(None)
            continue
        when = _parse_when(value) if isinstance(value, str) and len(value) <= 64 else None
        if when is None:
            raise InvalidInputError(f"{name} must be an ISO date or datetime (e.g. 2026-11-22 or 2026-11-22T10:00:00Z), not {shown(value)}")
        if name.endswith("_before") and _DATE_ONLY.fullmatch(value.strip()):
            try:  # a day given as an end date includes that whole day
                when = when + dt.timedelta(days=1)
            except OverflowError:
                raise InvalidInputError(f"{name} is out of range: {shown(value)}") from None
        out.append(utc_text(when))
    return out


def as_of_filter(value: object) -> str | None:
    """``as_of`` as the stored UTC form; a day means the end of that day ("what did we hold on 2023-06-30?")."""
    if value is None:
        return None
    if isinstance(value, (dt.date, dt.datetime)):
        value = value.isoformat()
    [when] = date_filters(as_of=value if isinstance(value, str) else repr(value))
    if when is not None and isinstance(value, str) and _DATE_ONLY.fullmatch(value.strip()):
        parsed = _parse_when(when)
        if parsed is not None:
            try:
                when = utc_text(parsed + dt.timedelta(days=1) - dt.timedelta(microseconds=1))
            except OverflowError:
                raise InvalidInputError(f"as_of is out of range: {shown(value)}") from None
    return when


def scopes_of(scope: Scope | str | Sequence[Scope | str] | None) -> tuple[Scope, ...]:
    if scope is None or scope == "":
        return ()
    if isinstance(scope, (str, Scope)):
        return (parse_scope(scope),)
    return tuple(parse_scope(s) for s in scope)


def kinds_of(kind: str | Sequence[str] | None) -> tuple[str, ...]:
    if not kind:
        return ()
    if isinstance(kind, str):
        return (normalize_kind(kind),)
    return tuple(normalize_kind(k) for k in kind)
