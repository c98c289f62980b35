"""Core injection: ``USER.md`` plus the caller-visible ``MEMORY.md`` lines, within a token budget.

Works from any :class:`~agent_memory.backends.base.MemoryBackend` (``user_md`` and ``core_lines``);
``USER.md`` is redacted on its way into the block, like every other text that reaches a model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, overload

from agent_memory.agents.tokens import count_tokens
from agent_memory.backends.base import Caller
from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import InvalidInputError
from agent_memory.redaction.api import redact

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.base import MemoryBackend

__all__ = ["DEFAULT_CORE_BUDGET", "TRUNCATION_MARKER", "MemoryBlock", "inject", "build_block"]

DEFAULT_CORE_BUDGET = 1500
TRUNCATION_MARKER = "… (truncated to fit the token budget; use memory search for more)"
MAX_CANDIDATE_LINES = 2000


@dataclass(frozen=True, slots=True)
class MemoryBlock:
    """Text to place in an agent's instructions, its token count, and whether it was cut."""

    text: str
    tokens: int
    truncated: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _fit_lines(lines: list[str], budget: int, render: Any) -> int:
    """Largest n such that render(lines[:n]) fits ``budget`` (binary search, token-exact)."""
    lo, hi = 0, len(lines)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count_tokens(render(lines[:mid])) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _check_budget(budget: Any) -> int:
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 0:
        raise InvalidInputError("budget must be a non-negative integer")
    return budget


def build_block(user_text: str, lines: list[str], budget: int) -> MemoryBlock:
    """The block for ``USER.md`` text (redacted here) and index lines, never over ``budget`` tokens.

    ``USER.md`` is kept whole when it fits; then the lines in order, cut on a line boundary with a
    marker when over budget. Pure CPU work: async callers run it in a thread.
    """
    budget = _check_budget(budget)
    user_text = redact(user_text).text.strip() if user_text else ""

    def render(head: str, body: list[str], cut: bool) -> str:
        parts = [head] if head else []
        if body or cut:
            parts.append("## Memory index\n" + "\n".join(body + ([TRUNCATION_MARKER] if cut else [])))
        return "\n\n".join(parts)

    full = render(user_text, lines, False)
    if count_tokens(full) <= budget:
        return MemoryBlock(full, count_tokens(full), False)
    head = user_text
    if count_tokens(render(head, [], True)) > budget:  # USER.md alone is over budget: cut it on lines too
        user_lines = user_text.splitlines()
        n = _fit_lines(user_lines, budget, lambda ls: "\n".join(ls + [TRUNCATION_MARKER]))
        text = "\n".join(user_lines[:n] + [TRUNCATION_MARKER]) if count_tokens(TRUNCATION_MARKER) <= budget else ""
        return MemoryBlock(text, count_tokens(text), True)
    n = _fit_lines(lines, budget, lambda ls: render(head, ls, True))
    text = render(head, lines[:n], True)
    return MemoryBlock(text, count_tokens(text), True)


async def _inject_async(backend: "MemoryBackend", budget: int, who: Caller) -> MemoryBlock:
    user_text = await backend.user_md()
    lines = await backend.core_lines(who, MAX_CANDIDATE_LINES)
    return await asyncio.to_thread(build_block, user_text, lines, budget)


def _inject_store(store: MemoryStore, budget: int, who: Caller) -> MemoryBlock:
    store.open()
    path = store.root / "USER.md"
    user_text = path.read_text(encoding="utf-8") if path.is_file() and not path.is_symlink() else ""
    lines = store.visible_lines(session_id=who.session_id, user_id=who.user_id, limit=MAX_CANDIDATE_LINES)
    return build_block(user_text, lines, budget)


@overload
def inject(
    source: MemoryStore, budget: int = ..., *, caller: Caller | None = ..., session_id: str | None = ..., user_id: str | None = ...
) -> MemoryBlock: ...


@overload
def inject(
    source: "MemoryBackend", budget: int = ..., *, caller: Caller | None = ..., session_id: str | None = ..., user_id: str | None = ...
) -> Awaitable[MemoryBlock]: ...


def inject(
    source: "MemoryStore | MemoryBackend",
    budget: int = DEFAULT_CORE_BUDGET,
    *,
    caller: Caller | None = None,
    session_id: str | None = None,
    user_id: str | None = None,
) -> MemoryBlock | Awaitable[MemoryBlock]:
    """Build the core block for one caller.

    From a :class:`~agent_memory.backends.base.MemoryBackend` it is awaitable (``await inject(backend, …)``); from
    a synchronous :class:`~agent_memory.backends.files.store.MemoryStore` it returns the block directly.
    ``USER.md`` (redacted) is kept whole when it fits; then one line per record the caller may see
    (shared records plus the caller's own session and user records), newest first, cut on a line
    boundary with a marker when over budget. The result never exceeds ``budget`` tokens.
    ``caller`` or ``session_id``/``user_id`` name the caller.
    """
    budget = _check_budget(budget)
    who = caller if caller is not None else Caller(session_id=session_id, user_id=user_id)
    if isinstance(source, MemoryStore):
        return _inject_store(source, budget, who)
    return _inject_async(source, budget, who)
