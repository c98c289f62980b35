"""The words of messages people read: counts with their plural, and why a record was not found.

One home for each, so every backend and surface (API, CLI, MCP) says it the same way; every id a caller typed
goes through :func:`agent_memory.model.values.shown` (a secret given as an id is never echoed).
"""

from __future__ import annotations

import re

from agent_memory.errors import NotFoundError
from agent_memory.model.values import shown

#: Appended to every "no record" answer, always the same text: it tells nothing about other partitions.
NOT_FOUND_HINT = (
    "records in a namespace are seen only with it: --namespace, namespace=; `agent-memory doctor` names record files it cannot read"
)


def plural(n: int, noun: str, many: str | None = None) -> str:
    """``1 record``, ``5 records``, ``0 records`` (``many``: an irregular plural)."""
    return f"{n} {noun if n == 1 else (many or noun + 's')}"


def record_not_found(record_id: object, *, archived: bool = False, what: str = "") -> NotFoundError:
    """The answer to an id the caller cannot read. ``archived``: only when the caller may see the archived record
    (say so, and how to bring it back); ``what``: words before "visible" (e.g. ``"(live or archived) "``)."""
    if archived:
        return NotFoundError(
            f"record {shown(record_id)} is archived (forgotten or consolidated): `agent-memory restore {record_id}` "
            f"as the same caller brings it back, `agent-memory history {record_id}` shows its story"
        )
    return NotFoundError(f"no record {shown(record_id)} {what}visible to this caller ({NOT_FOUND_HINT})")


_QUOTED = re.compile(r"'([^'\n]{1,500})'")


def redact_quoted(message: str) -> str:
    """``message`` with each quoted value that holds a secret replaced by its :func:`shown` form (the last guard of a
    surface that prints messages: a value a caller typed, quoted by whoever raised, never reaches the output)."""
    if "'" not in message:
        return message

    def one(m: re.Match[str]) -> str:
        safe = shown(m.group(1))
        return m.group(0) if safe == repr(m.group(1)) else safe

    return _QUOTED.sub(one, message)
