"""Query text: tokens, stop words, matching keys, and CJK bigrams.

Han, kana and Hangul are written without spaces, so FTS5's ``unicode61`` tokenizer sees
"日本語のメモ" as one token and "日本語" would never find it. A trigram tokenizer fixes that
but breaks café/cafe folding and stemming for every other script. Instead, the index keeps
its Latin-friendly tokenizer and each record's CJK text is added, one character per token,
to its weak ``context`` column (:func:`with_cjk_context`); a CJK run in a query becomes its
overlapping two-character phrases (:func:`cjk_bigrams`), OR-ed like any other term, so
"日本語" finds "日本語のメモ" and ranks records holding more of the query's bigrams first.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from typing import Any

Tokenizer = Callable[[str], list[str]]

STOP_WORDS: frozenset[str] = frozenset(
    """
a about above after again against all am an and any are aren as at be because been before being below
between both but by can cannot could couldn did didn do does doesn doing don down during each else ever
few for from further had hadn has hasn have haven having he her here hers herself him himself his how
i if in into is isn it its itself just let me might more most must mustn my myself no nor not now of
off on once only or other ought our ours ourselves out over own same shall shan she should shouldn so
some such than that the their theirs them themselves then there these they this those through to too
under until up upon us very was wasn we were weren what whatever when where whether which while who
whom whose why will with won would wouldn you your yours yourself yourselves s t d ll m re ve y
also yet tell told say said know think thing things get got really like kind sort much many one ones
""".split()
)

_WORD = re.compile(r"\w+", re.UNICODE)
_CJK_CHARS = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han
    "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"  # Hangul
    "\U00020000-\U0002ffff"  # Han extensions
)
_CJK_RUN = re.compile(f"[{_CJK_CHARS}]+")  # one pattern: compiling this class costs milliseconds at import


def is_cjk(text: str) -> bool:
    return _CJK_RUN.search(text) is not None


def default_tokenizer(text: str) -> list[str]:
    """Lower-cased word tokens; punctuation dropped, digits kept (``5:30pm`` → ``5``, ``30pm``)."""
    return _WORD.findall(text.lower().replace("_", " "))


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping two-character pieces of a CJK run (a single character stays itself)."""
    return [run] if len(run) < 2 else [run[i : i + 2] for i in range(len(run) - 1)]


def split_cjk(tokens: Iterable[str]) -> list[str]:
    """Tokens with every CJK run replaced by its bigrams (other parts of a mixed token kept)."""
    out: list[str] = []
    for token in tokens:
        if not is_cjk(token):
            out.append(token)
            continue
        pos = 0
        for run in _CJK_RUN.finditer(token):
            if run.start() > pos:
                out.append(token[pos : run.start()])
            out.extend(cjk_bigrams(run.group()))
            pos = run.end()
        if pos < len(token):
            out.append(token[pos:])
    return out


def cjk_unigrams(text: str) -> str:
    """The CJK characters of ``text`` separated by spaces, one run per line ("" if there are none)."""
    if not is_cjk(text):
        return ""
    return "\n".join(" ".join(run) for run in _CJK_RUN.findall(text))


def with_cjk_context(context_of: Callable[[Any], str] | None) -> Callable[[Any], str]:
    """A ``context_of`` for the index that appends a record's CJK text as single-character tokens."""
    base = context_of or (lambda rec: str(rec.metadata.get("context") or ""))

    def context(rec: Any) -> str:
        text = base(rec)
        cjk = cjk_unigrams(f"{rec.title}\n{rec.content}")
        return f"{text}\n{cjk}" if cjk else text

    return context


def phrase(term: str) -> str:
    """The FTS5 expression for one query term: a quoted token, or a CJK bigram's phrase in ``context``."""
    if is_cjk(term):
        return 'context : "' + " ".join(term.replace('"', "")) + '"'
    return '"' + term.replace('"', '""') + '"'


def light_stem(token: str) -> str:
    """A small suffix stripper used only to locate snippet lines (the index uses porter)."""
    for suffix in ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "ly", "s"):
        if len(token) > len(suffix) + 2 and token.endswith(suffix):
            return token[: -len(suffix)]
    return token


@functools.lru_cache(maxsize=65536)
def term_key(token: str) -> str:
    """A matching key for a lower-cased word: :func:`light_stem`, then one final ``e``/``y``
    dropped, so ``race/races/raced/racing`` and ``story/stories`` share a key. Always a prefix
    of the word, which lets :func:`term_matcher` pre-filter with one regular expression.
    A CJK bigram is its own key."""
    if is_cjk(token):
        return token
    key = light_stem(token)
    if len(key) > 3 and key[-1] in "ey":
        key = key[:-1]
    return key


def term_matcher(keys: Iterable[str]) -> Callable[[str], set[str]]:
    """A function returning which of ``keys`` (see :func:`term_key`) occur in a text."""
    wanted = frozenset(k for k in keys if k)
    cjk = frozenset(k for k in wanted if is_cjk(k))
    words = wanted - cjk
    if not words:
        return lambda text: {k for k in cjk if k in text}
    alternation = "|".join(re.escape(k) for k in sorted(words, key=len, reverse=True))
    pattern = re.compile(rf"(?<![^\W_])(?:{alternation})[^\W_]*")

    def found(text: str) -> set[str]:
        hits = {key for word in pattern.findall(text.lower()) if (key := term_key(word)) in words}
        return hits | {k for k in cjk if k in text} if cjk else hits

    return found


def term_counts(keys: Iterable[str], text: str) -> tuple[dict[str, int], int]:
    """How often each key occurs in ``text`` (words by :func:`term_key`, CJK by substring), and its length in tokens."""
    wanted = set(keys)
    counts = dict.fromkeys(wanted, 0)
    tokens = default_tokenizer(text)
    for word in tokens:
        key = term_key(word)
        if key in counts:
            counts[key] += 1
    length = len(tokens)
    for key in wanted:
        if is_cjk(key):
            counts[key] = text.count(key)
    for run in _CJK_RUN.findall(text):
        length += len(run) - 1  # a run is one word token above; count its characters instead
    return counts, length


def best_window(body: str, found: Callable[[str], set[str]], n_lines: int, max_chars: int) -> tuple[int, int, str]:
    """The best window of at most ``n_lines`` lines for the matched keys (1-based, inclusive) and its text, clipped."""
    lines = body.split("\n") or [""]
    scores = [len(found(line)) if line else 0 for line in lines]
    n = min(n_lines, len(lines))
    best, best_i = -1, 0
    for i in range(len(lines) - n + 1):
        s = sum(scores[i : i + n])
        if s > best:
            best, best_i = s, i
    window = list(range(best_i, best_i + n))  # shrink to the lines that matter when the match is on one line
    while len(window) > 1 and scores[window[-1]] == 0:
        window.pop()
    while len(window) > 1 and scores[window[0]] == 0:
        window.pop(0)
    text = "\n".join(lines[window[0] : window[-1] + 1])
    if len(text) > max_chars:
        text = clip(text, found, max_chars)
    return window[0] + 1, window[-1] + 1, text


def clip(text: str, found: Callable[[str], set[str]], max_chars: int) -> str:
    """At most ``max_chars`` of ``text`` around its first matched key, with ellipses where cut."""
    lower = text.lower()
    pos = min((p for k in found(text) if (p := _word_at(lower, k)) >= 0), default=0)
    start = max(0, pos - max_chars // 3)
    if start:
        space = text.find(" ", start)
        start = space + 1 if 0 <= space < pos else start
    clipped = text[start : start + max_chars]
    return ("…" if start else "") + clipped.rstrip() + ("…" if start + max_chars < len(text) else "")


def _word_at(lower: str, key: str) -> int:
    if is_cjk(key):
        return lower.find(key)
    m = re.search(rf"(?<![^\W_]){re.escape(key)}", lower)
    return m.start() if m else -1
