"""Core injection: the caller's curated lines, ``USER.md`` and the caller-visible ``MEMORY.md`` lines, within a token budget.

Works from any :class:`~agent_memory.backends.base.MemoryBackend` (``list``, ``user_md`` and ``core_lines``);
``USER.md`` is redacted on its way into the block, like every other text that reaches a model. Curated lines
(:mod:`agent_memory.model.curated`: the caller's user's and the shared ones) come first, highest priority first,
then newest, up to the budget; they are not repeated in the memory index.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, overload

from agent_memory.agents.tokens import count_tokens
from agent_memory.backends.base import Caller
from agent_memory.backends.files.namespaces import caller_view
from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import InvalidInputError
from agent_memory.model import scopes
from agent_memory.model.curated import KIND, CuratedLine, curated_order
from agent_memory.model.records import MemoryRecord
from agent_memory.redaction.api import redact

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.base import MemoryBackend

__all__ = ["DEFAULT_CORE_BUDGET", "TRUNCATION_MARKER", "MemoryBlock", "inject", "build_block"]

DEFAULT_CORE_BUDGET = 1500
TRUNCATION_MARKER = "… (truncated to fit the token budget; use memory search for more)"
MAX_CANDIDATE_LINES = 2000
MAX_CURATED = 500  # curated records read for one block (two partitions of model.curated.MAX_LINES, and extras)


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


CURATED_HEADING = "## Curated memory"


def build_block(user_text: str, lines: list[str], budget: int, curated: Sequence[str] = ()) -> MemoryBlock:
    """The block for curated lines, ``USER.md`` text (redacted here) and index lines, never over ``budget`` tokens.

    ``curated`` lines (already in block order) come first and may use the whole budget (cut on a line boundary
    with a marker); then ``USER.md``, kept whole when it fits; then the index lines in order, cut on a line
    boundary with a marker when over budget. Pure CPU work: async callers run it in a thread.
    """
    budget = _check_budget(budget)
    if not curated:
        return _build_rest(user_text, lines, budget)
    cur = list(curated)

    def render(body: list[str], cut: bool) -> str:
        return CURATED_HEADING + "\n" + "\n".join(body + ([TRUNCATION_MARKER] if cut else []))

    head = render(cur, False)
    if count_tokens(head) > budget:  # the curated lines alone are over budget: the highest priorities win
        n = _fit_lines(cur, budget, lambda ls: render(ls, True))
        text = render(cur[:n], True)
        text = text if count_tokens(text) <= budget else ""
        return MemoryBlock(text, count_tokens(text), True)
    if not (user_text or "").strip() and not lines:
        return MemoryBlock(head, count_tokens(head), False)
    room = budget - count_tokens(head + "\n\n")
    while room > 0:
        rest = _build_rest(user_text, lines, room)
        text = head + "\n\n" + rest.text if rest.text else head
        over = count_tokens(text) - budget
        if over <= 0:
            return MemoryBlock(text, count_tokens(text), rest.truncated)
        room -= over  # tokens may merge across the seam: shrink the rest and try again
    return MemoryBlock(head, count_tokens(head), True)


def _build_rest(user_text: str, lines: list[str], budget: int) -> MemoryBlock:
    """The block without curated lines: ``USER.md`` (redacted) then index lines, never over ``budget`` tokens."""
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


def _split(records: list[MemoryRecord], lines: list[str]) -> tuple[list[str], list[str]]:
    """The curated lines in block order, and the index lines without them (a curated line is shown once)."""
    ordered = curated_order(records)
    ids = {r.id for r in ordered}
    rest = [ln for ln in lines if not (ln.startswith("- [") and ln[3:].split("]", 1)[0] in ids)]
    return [CuratedLine.of(r).line() for r in ordered], rest


async def _inject_async(backend: "MemoryBackend", budget: int, who: Caller) -> MemoryBlock:
    user_text = await backend.user_md()
    records = await backend.list(who, kind=KIND, limit=MAX_CURATED)
    curated, lines = _split(records, await backend.core_lines(who, MAX_CANDIDATE_LINES))
    return await asyncio.to_thread(build_block, user_text, lines, budget, curated)


def _inject_store(store: MemoryStore, budget: int, who: Caller) -> MemoryBlock:
    store.open()
    path = store.root / "USER.md"
    user_text = path.read_text(encoding="utf-8") if path.is_file() and not path.is_symlink() else ""
    # a caller naming a namespace reads its view, as FilesBackend binds it; one naming none reads the view its
    # surroundings bound (the CLI binds --namespace/--isolation for the whole command), else the root's
    view = scopes.viewing(caller_view(store.root, who)) if who.namespace else contextlib.nullcontext()
    with view:
        records = store.list(session_id=who.session_id, user_id=who.user_id, kind=KIND, limit=MAX_CURATED)
        lines = store.visible_lines(session_id=who.session_id, user_id=who.user_id, limit=MAX_CANDIDATE_LINES)
    curated, lines = _split(records, lines)
    return build_block(user_text, lines, budget, curated)


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
    The caller's curated lines come first (highest priority first, then newest); ``USER.md`` (redacted) is kept
    whole when it fits; then one line per other record the caller may see
    (shared records plus the caller's own session and user records), newest first, cut on a line
    boundary with a marker when over budget. The result never exceeds ``budget`` tokens.
    ``caller`` or ``session_id``/``user_id`` name the caller.
    """
    budget = _check_budget(budget)
    who = caller if caller is not None else Caller(session_id=session_id, user_id=user_id)
    if isinstance(source, MemoryStore):
        return _inject_store(source, budget, who)
    return _inject_async(source, budget, who)
