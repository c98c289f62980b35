"""Shared pieces of the redaction rules: lazy regexes, decisions, value heuristics, markers."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

MARKER_RE = re.compile(r"\[REDACTED:[a-z0-9_]+\]")


def marker(kind: str) -> str:
    """The replacement string for a secret of ``kind``."""
    return f"[REDACTED:{kind}]"


class Lazy:
    """A regex compiled on first use: importing stays cheap (CLI cold start)."""

    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    def get(self) -> re.Pattern[str]:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(*self._args)
        return compiled


I = re.IGNORECASE  # noqa: E741
A = re.ASCII  # with IGNORECASE: "K" (Kelvin sign) must not match "k"
X = re.VERBOSE
# Whitespace, including the Unicode spaces that chat text carries (re.ASCII narrows \s to ASCII).
WS = r"\s\u00a0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff"

# A rule finds candidates; ``decide`` returns (kind, start, end, resume): the span to replace and
# where to continue searching, or None to leave the match alone (the search then continues after
# its key, or after the match).
Decision = tuple[str, int, int, int]
Decide = Callable[[re.Match[str]], "Decision | None"]
# (pattern, decide, triggers): a rule can only match text whose lower-cased form contains a trigger.
Rule = tuple[Lazy, Decide, tuple[str, ...]]


def has_digit(s: str) -> bool:
    return any("0" <= c <= "9" for c in s)


def token_like(s: str) -> bool:
    """Random-looking: a digit, or lower case mixed with a non-initial capital.

    Rejects words ("Internationalization", "well-known-phrase").
    """
    if has_digit(s):
        return True
    return any("a" <= c <= "z" for c in s) and any("A" <= c <= "Z" for c in s[1:])


_ALNUM_RUN = Lazy(r"[A-Za-z0-9]+")


def longest_alnum_run(s: str) -> int:
    return max((len(run) for run in _ALNUM_RUN.get().findall(s)), default=0)


def fixed(kind: str, check: Callable[[str], bool] | None = None, group: str = "secret", rstrip: str = "") -> Decide:
    """A decision that replaces the ``secret`` group when ``check`` (on ``group``) accepts it."""

    def decide(m: re.Match[str]) -> Decision | None:
        value = m.group("secret")
        if rstrip:
            value = value.rstrip(rstrip)  # "... Bearer abc123." ends a sentence
        if not value:
            return None
        if check is not None and not check(value if group == "secret" else m.group(group)):
            return None
        start = m.start("secret")
        return kind, start, start + len(value), m.end()

    return decide


def starts_near(low: str, triggers: tuple[str, ...], before: int) -> list[int]:
    """Sorted positions from ``before`` characters ahead of each trigger occurrence up to it."""
    starts: set[int] = set()
    for t in triggers:
        i = low.find(t)
        while i >= 0:
            starts.update(range(max(0, i - before), i + 1))
            i = low.find(t, i + 1)
    return sorted(starts)


def accepted_at(lazy: Lazy, decide: Decide, text: str, starts: list[int]) -> Iterator[Decision]:
    """:func:`accepted` for a rule whose matches can only start at ``starts`` (sorted).

    Anchored attempts at a few positions cost far less than a search through the whole text
    with a pattern that begins with look-behinds and a dozen case-insensitive alternatives.
    """
    match = lazy.get().match
    pos = 0
    for p in starts:
        if p < pos:
            continue
        m = match(text, p)
        if m is None:
            continue
        decision = decide(m)
        if decision is None:
            pos = m.end("key") if m.start("key") >= 0 else m.end()
        else:
            yield decision
            pos = decision[3]
        if pos <= p:
            pos = p + 1


def accepted(lazy: Lazy, decide: Decide, text: str) -> Iterator[Decision]:
    """Yield the accepted decisions of a rule over ``text``, in order.

    Like ``finditer`` except that a rejected candidate does not swallow its text: the search
    resumes right after its key ("token: aws_secret_key = x" is rejected as ``token`` but then
    found as ``aws_secret_key``).
    """
    pattern = lazy.get()
    search = pattern.search
    after_key = "key" in pattern.groupindex
    pos = 0
    n = len(text)
    while pos <= n:
        m = search(text, pos)
        if m is None:
            return
        decision = decide(m)
        if decision is None:
            pos = m.end("key") if after_key and m.start("key") >= 0 else m.end()
        else:
            yield decision
            pos = decision[3]
        if pos <= m.start():
            pos = m.start() + 1
