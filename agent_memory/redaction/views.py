"""Normalised views of a text, with a map back to the original offsets.

Secrets are disguised by zero-width characters, look-alike letters (Cyrillic "А" for "A"),
full-width forms (NFKC), percent-encoding and string-literal seams (``"ghp_" "abc…"``); a token
may also be split by spaces.  A view undoes these so the rules can see the secret, and every
span found in it maps back to the original text, which alone is ever edited.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from agent_memory.redaction.base import Lazy

# Invisible characters: zero-width spaces and joiners, soft hyphen, word joiner, BOM, bidi controls.
_INVISIBLE = (
    "\u00ad\u180e\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\ufeff"
)
# Latin look-alikes that NFKC keeps apart (Cyrillic and Greek capitals and small letters).
_HOMOGLYPHS = dict(
    zip(
        "АВЕКМНОРСТХаеорсухіјѕЅІЈԁһԛԝΑΒΕΖΗΙΚΜΝΟΡΤΥΧονϲ",
        "ABEKMHOPCTXaeopcyxijsSIJdhqwABEZHIKMNOPTYXovc",
        strict=True,
    )
)
# Digit groups written with any decimal digits (Arabic-Indic, Devanagari, …) or joined by any Unicode dash, dot or
# middle dot ("4532·0151", "123‐45‐6789"): digits become ASCII, and such a joiner between two digits becomes "-" or ".".
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\ufe58\ufe63\u2e3a\u2e3b\u301c\u30a0"
_DOTS = "\u00b7\u2027\u2219\u22c5\u30fb\u0387\u16eb\u2e31"
_JOINERS = {**dict.fromkeys(_DASHES, "-"), **dict.fromkeys(_DOTS, ".")}
_DISGUISE = Lazy("[" + _INVISIBLE + "".join(_HOMOGLYPHS) + "]|(?![0-9])\\d|\\d[" + _DASHES + _DOTS + "]\\d")
_PERCENT = Lazy(r"%[0-9A-Fa-f]{2}")
# "ab" "cd", "ab" + "cd", "ab" + \<newline> "cd", "ab" . "cd", "ab" & "cd", "ab" || "cd"; and ["ab", "cd"] (an
# element of a list, not a JSON key: "tok", "model": … stays apart)
_SEAM = Lazy(
    r"(?<=[\w-])([\"'])[ \t]*+(?:(?:\+|\.\.?|&|\|\|)[ \t]*+)?(?:\\?[ \t]*+\r?\n[ \t]*+)?\1(?=[\w-])"
    r"|(?<=[\w-])([\"'])[ \t]*+,[ \t]*+\2(?=[\w-][^\"'\r\n]{0,200}\2[ \t]*+[\],)])"
)
_CHAIN = Lazy(r"(?<![\w-])[\w.-]{4,}+(?:[ \t]++[\w.-]{4,}+){1,8}")
_GAP = Lazy(r"[ \t]++")

Edit = tuple[int, int, str]


class View:
    """A text derived from an original one; ``lo[i]``/``hi[i]`` are the original span of char ``i``."""

    __slots__ = ("hi", "lo", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.lo = list(range(len(text)))
        self.hi = list(range(1, len(text) + 1))

    @classmethod
    def of(cls, parent: View) -> View:
        """A view that starts as ``parent`` (so its offsets map to ``parent``'s original)."""
        view = cls("")
        view.text, view.lo, view.hi = parent.text, list(parent.lo), list(parent.hi)
        return view

    def apply(self, edits: Iterable[Edit]) -> bool:
        """Replace ``[start, end)`` by ``replacement`` for each (sorted, disjoint) edit; True if any."""
        pieces: list[str] = []
        lo: list[int] = []
        hi: list[int] = []
        last = 0
        changed = False
        for start, end, repl in edits:
            changed = True
            pieces.append(self.text[last:start])
            lo.extend(self.lo[last:start])
            hi.extend(self.hi[last:start])
            pieces.append(repl)
            lo.extend([self.lo[start]] * len(repl))
            hi.extend([self.hi[end - 1]] * len(repl))
            last = end
        if not changed:
            return False
        pieces.append(self.text[last:])
        lo.extend(self.lo[last:])
        hi.extend(self.hi[last:])
        self.text, self.lo, self.hi = "".join(pieces), lo, hi
        return True

    def original(self, start: int, end: int) -> tuple[int, int]:
        return self.lo[start], self.hi[end - 1]


def _unicode_edits(text: str) -> Iterable[Edit]:
    for i, ch in enumerate(text):
        if ch < "\x80":
            continue
        if ch in _INVISIBLE:
            yield i, i + 1, ""
        elif ch in _HOMOGLYPHS:
            yield i, i + 1, _HOMOGLYPHS[ch]
        elif ch.isdecimal():
            yield i, i + 1, str(unicodedata.decimal(ch))
        elif ch in _JOINERS and 0 < i < len(text) - 1 and text[i - 1].isdecimal() and text[i + 1].isdecimal():
            yield i, i + 1, _JOINERS[ch]
        else:
            norm = unicodedata.normalize("NFKC", ch)
            if norm != ch:
                yield i, i + 1, norm


def normalized(text: str) -> View | None:
    """The text with disguises undone, or None when there is nothing to undo (the common case)."""
    view = View(text)
    changed = False
    if not text.isascii() and (_DISGUISE.get().search(text) or not unicodedata.is_normalized("NFKC", text)):
        changed |= view.apply(_unicode_edits(view.text))
    if "%" in text:
        changed |= view.apply((m.start(), m.end(), chr(int(m.group()[1:], 16))) for m in _PERCENT.get().finditer(view.text))
    if "'" in text or '"' in text:
        changed |= view.apply((m.start(), m.end(), "") for m in _SEAM.get().finditer(view.text))
    return view if changed else None


def despaced(parent: View, triggers: tuple[str, ...]) -> View | None:
    """``parent`` with the spaces inside runs of token-like chunks that hold a provider prefix removed."""
    edits: list[Edit] = []
    for m in _CHAIN.get().finditer(parent.text):
        chain = m.group()
        if any(t in chain for t in triggers):
            edits.extend((m.start() + g.start(), m.start() + g.end(), "") for g in _GAP.get().finditer(chain))
    if not edits:
        return None
    view = View.of(parent)
    view.apply(edits)
    return view
