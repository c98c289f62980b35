"""Recall's ``select`` answer step: the model picks numbers, the worker writes the summary.

Small models (0.5B–1.5B) searched well but wrote poor cited summaries: the template copied literally, or
``NO_RELEVANT_MEMORY`` over the very records that answer (measured: ``docs/benchmarks.md``, *Workers on real
models*). In ``select`` mode the worker shows the records its tools returned as a numbered list and asks only for the
numbers of those that answer the message (``3, 1`` or ``NONE``); recall then builds the summary from the chosen
records' own text with their real citations. The model never writes a citation, so a summary is grounded by
construction, and the reply is a few tokens.

:data:`SELECTING` carries the state of the running recall (set by the recall worker, read by
:class:`~agent_memory.agents.models.tool_mode.ToolModeModel`): the message and the numbered records shown so far, so
the numbers the model gives map to exactly the list it was shown.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Choice", "SelectState", "SELECTING", "Selection", "choices_in", "parse_selection", "select_step", "numbered_list"]

_SNIPPET_CHARS = 240  # a record's text in the numbered list is cut to this many characters


@dataclass(frozen=True)
class Choice:
    """One record a memory tool returned, as the numbered list shows it and the summary cites it."""

    id: str
    line_start: int | None
    line_end: int | None
    title: str
    text: str
    curated: bool = False


@dataclass
class SelectState:
    """What a recall run in select mode shares with its model wrapper."""

    message: str
    shown: list[Choice] = field(default_factory=list)  # the numbered list as last shown: number n is shown[n - 1]


#: The select state of the running recall worker (None: the summary answer mode).
SELECTING: contextvars.ContextVar[SelectState | None] = contextvars.ContextVar("agent_memory_selecting", default=None)


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _one_line(text: Any) -> str:
    return " ".join(str(text or "").split())


def choices_in(results: Iterable[Any]) -> list[Choice]:
    """The records in memory tool results (search hits, a record read), each id once, in the order first returned."""
    out: list[Choice] = []
    seen: set[str] = set()

    def add(choice: Choice) -> None:
        if choice.id and choice.id not in seen:
            seen.add(choice.id)
            out.append(choice)

    for result in results:
        if not isinstance(result, Mapping):
            continue
        hits = result.get("hits")
        if isinstance(hits, list):
            for hit in hits:
                if isinstance(hit, Mapping) and hit.get("id"):
                    add(
                        Choice(
                            str(hit["id"]),
                            _int(hit.get("line_start")),
                            _int(hit.get("line_end")),
                            _one_line(hit.get("title")),
                            _one_line(hit.get("snippet")),
                            hit.get("curated") is True,
                        )
                    )
        elif result.get("id") and "content" in result and "body_line" in result:  # memory_get
            body = str(result.get("content") or "")
            first = _int(result.get("body_line")) or 1
            add(
                Choice(
                    str(result["id"]),
                    first,
                    first + body.count("\n"),
                    _one_line(result.get("title")),
                    _one_line(body),
                    result.get("curated") is True,
                )
            )
    return out


def numbered_line(n: int, choice: Choice) -> str:
    """``3. title: text`` (text cut short): how a record appears in the list the model picks from."""
    text = choice.text if len(choice.text) <= _SNIPPET_CHARS else choice.text[:_SNIPPET_CHARS].rstrip() + " …"
    title = f"{choice.title}: " if choice.title and not text.startswith(choice.title) else ""
    return f"{n}. {title}{text}"


def numbered_list(choices: list[Choice]) -> str:
    return "\n".join(numbered_line(n, c) for n, c in enumerate(choices, 1))


def select_step(message: str, last: bool = False) -> str:
    """What the model is asked after results in select mode (``last``: the last request the step limit allows)."""
    return (
        f"Message: {' '.join(message.split())}\n"
        "Which numbered results answer this message? Reply with their numbers only, best first (for example: 2, 1), "
        "or NONE if none does." + (" Do not search again." if last else "")
    )


def select_repair(count: int) -> str:
    return (
        f"Your reply gave no result number. Reply with only the numbers (1 to {count}) of the results that answer "
        "the message, for example: 2, 1 — or NONE if none does."
    )


@dataclass(frozen=True)
class Selection:
    """A parsed select reply: ``numbers`` (1-based, in range, each once, in the order given), ``ignored`` (numbers out of
    range, dropped), ``none`` (the reply says none answers), ``from_citations`` (read from citations of shown ids)."""

    numbers: tuple[int, ...] = ()
    ignored: int = 0
    none: bool = False
    from_citations: bool = False


_CITED = re.compile(r"\[([^\[\]\s:]*[A-Za-z][^\[\]\s:]*)(?::L\d+(?:\s*-\s*L?\d+)?)?\]")  # an id has a letter: [3] is a number
_NUMBER = re.compile(r"(?<![\w.])(\d{1,6})(?!\w)")
_NONE = re.compile(r"\bNONE\b|\bNO_RELEVANT_MEMORY\b|\bNO_REPLY\b|\bNO_MEMORY\b|\bnone of (?:them|the)\b|\bno (?:result|record)s?\b", re.I)


def parse_selection(text: str, shown: list[Choice]) -> Selection:
    """Read which of ``shown`` (numbered from 1) a reply picks, tolerantly.

    ``3, 1``, ``[3] [1]``, ``#3 and #1``, ``Records: 3, 1.``, ``1.\\n3.`` all pick 3 then 1; numbers outside 1..N are
    ignored (counted); a reply that cites shown records (``[id:L1-L2]``: a model writing a summary anyway) picks those
    records; ``NONE`` / ``NO_RELEVANT_MEMORY`` (with no number) picks none. Anything else picks nothing and says no
    ``none``: the caller asks again or gives up.
    """
    body = text or ""
    index = {c.id: n for n, c in enumerate(shown, 1)}
    cited = [index[m.group(1)] for m in _CITED.finditer(body) if m.group(1) in index]
    if cited:
        return Selection(tuple(dict.fromkeys(cited)), 0, False, True)
    stripped = _CITED.sub(" ", body)
    picked: list[int] = []
    ignored = 0
    for m in _NUMBER.finditer(stripped):
        n = int(m.group(1))
        if 1 <= n <= len(shown):
            if n not in picked:
                picked.append(n)
        else:
            ignored += 1
    if picked:
        return Selection(tuple(picked), ignored, False)
    return Selection((), ignored, bool(_NONE.search(body)))
