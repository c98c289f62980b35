"""Core injection: ``USER.md`` plus the caller-visible ``MEMORY.md`` lines, within a token budget."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .errors import InvalidInputError
from .store import MemoryStore
from .tokens import count_tokens

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


def inject(store: MemoryStore, budget: int = DEFAULT_CORE_BUDGET, *, session_id: str | None = None, user_id: str | None = None) -> MemoryBlock:
    """Build the core block for one caller.

    ``USER.md`` is kept whole when it fits; then one line per record the caller may see
    (shared records plus the caller's own session and user records), newest first, cut on a
    line boundary with a marker when over budget. The result never exceeds ``budget`` tokens.
    """
    if not isinstance(budget, int) or budget < 0:
        raise InvalidInputError("budget must be a non-negative integer")
    store.open()
    user_path = store.root / "USER.md"
    user_text = user_path.read_text(encoding="utf-8").strip() if user_path.is_file() and not user_path.is_symlink() else ""
    lines = store.visible_lines(session_id=session_id, user_id=user_id, limit=MAX_CANDIDATE_LINES)

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
