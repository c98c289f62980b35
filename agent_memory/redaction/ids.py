"""Identifiers as redaction reads them: the id rule (does an id, key or tag hold a secret?) and the shape of the ids
the store mints (``YYYY-MM-DD-<slug>-<8 hex>``, :func:`agent_memory.model.values.new_id`).

One home for both: the model asks :func:`looks_secret_glued` of every identifier it writes, and the engine keeps a
``[[link]]`` to a minted id that passes it intact (:func:`link_spans`): the id's random suffix after a slug word
reads as a label's value ("…-key-policy-1a2b3c4d", "…-password-reset-725e4d09"), while the store never mints an id
whose stem the rule refuses. Verdicts are remembered per stem (a pure function of it; :func:`remember_verdicts`
takes those a draft worker running this same code gave). The engine is passed in (``contains``: its
``contains_secret``; ``plain``: :func:`agent_memory.redaction.slugs.plain_slug`, a fast accept): it imports this
module, and importing this module loads no rule.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

__all__ = ["MINTED_ID", "link_spans", "looks_secret", "looks_secret_glued", "masked", "remember_verdicts", "stem_verdicts"]

Contains = Callable[..., bool]  # the engine's ``contains_secret(text, general=True)``
Plain = Callable[[str], bool] | None  # ``slugs.plain_slug``: True only for a stem that provably holds no secret

#: The shape of the ids the store mints: its last 8 hex are random.
MINTED_ID = re.compile(r"\d{4}-\d{2}-\d{2}-[a-z0-9-]*-[0-9a-f]{8}")
_SEPARATORS = re.compile(r"[-.:@/+=~]+")
_GLUE = re.compile(r"[-.:@/+=~_]+")
# ``[[<minted id>]]`` or ``[[<minted id>|label]]`` as :func:`agent_memory.model.links.parse_links` reads a link: the
# brackets and the target (spaces around it included), never the label (a label redacted on an earlier pass of the
# engine holds its marker)
_LINK = re.compile(
    r"\[\[[ \t]*+(?P<id>\d{4}-\d{2}-\d{2}-[a-z0-9-]{0,200}-[0-9a-f]{8})[ \t]*+"
    r"(?:\]\]|\|(?=(?:[^\[\]\n]|\[REDACTED:[a-z0-9_]+\])*+\]\]))"
)


def stem(value: str) -> str:
    """``value`` less the random suffix of a minted id (which is never a secret), else ``value``."""
    return value[:-9] if MINTED_ID.fullmatch(value) else value


def looks_secret(value: str, contains: Contains) -> bool:
    """True if ``value`` holds a secret, also one glued into an identifier (``2026-01-01-ghp_…``, ``user-sk_live_…``):
    the redaction engine wants a boundary before a token, and ``-`` is not one for it."""
    value = stem(value)  # our own random suffix after a slug word ("…-token-c4f6d89e") is no secret
    if contains(value):
        return True
    spaced = _SEPARATORS.sub(" ", value)
    # the spaced form looks for a token glued after a prefix; labels read across a slug's words ("the key to the
    # roadmap ab12cd34") would refuse ordinary ids, so only the token rules look at it
    return spaced != value and contains(spaced, general=False)


def looks_secret_glued(value: str, contains: Contains, plain: Plain = None) -> bool:
    """:func:`looks_secret`, and also a secret glued after a prefix (``chat-sk-…``, ``ada.ghp_…``: spacing the
    separators would also split the token's own ``sk-``): the check of every identifier the store writes (ids, keys,
    tags).

    The verdict on a minted id is its stem's (the date and slug: the random suffix is never read), remembered per
    stem: the id a write mints is checked once, and neither the event that names it, another id minted from the
    same title on the same day, nor a ``[[link]]`` to it runs the engine again. Whoever supplied the id, the verdict
    is the same function of its text: an id from an import, ``--id`` or the API that was never minted here gets the
    full check."""
    return _stem_verdict(stem(value), contains, plain)


_VERDICTS: dict[str, bool] = {}  # identifier (without our random suffix) -> holds a secret; emptied when full
_VERDICTS_MAX = 8192


def _stem_verdict(value: str, contains: Contains, plain: Plain) -> bool:
    verdict = _VERDICTS.get(value)
    if verdict is None:
        verdict = _glued_check(value, contains, plain)
        if len(_VERDICTS) >= _VERDICTS_MAX:
            _VERDICTS.clear()
        _VERDICTS[value] = verdict
    return verdict


def _glued_check(value: str, contains: Contains, plain: Plain) -> bool:
    if plain is not None and plain(value):  # a minted id's stem of plain words: provably no secret, no engine pass
        return False
    if looks_secret(value, contains):
        return True
    return any(contains(value[m.end() :]) for m in _GLUE.finditer(value) if len(value) - m.end() >= 16)


def stem_verdicts(stems: Iterable[str], contains: Contains, plain: Plain = None) -> dict[str, bool]:
    """The identifier check's verdict on each of ``stems`` (ids less their random suffix), remembered here as well."""
    return {s: _stem_verdict(s, contains, plain) for s in stems}


def remember_verdicts(verdicts: Mapping[str, bool]) -> None:
    """Take verdicts :func:`stem_verdicts` gave in another process running this same code (a draft worker of
    ``remember_many``): the ids minted from those stems then cost no engine pass here."""
    if len(_VERDICTS) + len(verdicts) > _VERDICTS_MAX:
        _VERDICTS.clear()
    _VERDICTS.update({k: bool(v) for k, v in verdicts.items() if isinstance(k, str)})


def masked(text: str, links: list[tuple[int, int]]) -> str:
    """``text`` with the ids of ``links`` (:func:`link_spans`) written as ``x``: the engine reads the rest at the same
    offsets, and nothing of a link's slug ("key", "password", "token" …) serves as a label of what follows it."""
    out = []
    last = 0
    for start, _ in links:
        m = _LINK.match(text, start)
        if m is not None:
            out += [text[last : m.start("id")], "x" * len(m.group("id"))]
            last = m.end("id")
    out.append(text[last:])
    return "".join(out)


def link_spans(text: str, contains: Contains) -> list[tuple[int, int]]:
    """The ``[[…]]`` links of ``text`` to a minted id the id rule passes (sorted, disjoint): the engine replaces
    none of it. A secret written as a link target (``[[sk-live-…]]``, ``[[password=…]]``, an id-shaped target whose
    stem holds a token) is no such link and is redacted as anywhere else."""
    if "[[" not in text:
        return []
    return [(m.start(), m.end()) for m in _LINK.finditer(text) if _plain_target(m.group("id"), contains)]


def _plain_target(value: str, contains: Contains) -> bool:
    """Whether a link target of the minted shape is kept whole: the id rule passes it, its slug read as prose (the
    words spaced, every rule: "…-my-password-is-tangerine-…") holds nothing, and no slug word is a long random-looking
    one (a minted slug is words of a title; a 16-character word with digits, any over 32, or one of 12 or more after
    a label word such as "password" or "key" is not kept unread). A target not kept is read like any other text."""
    if looks_secret_glued(value, contains):
        return False
    words = stem(value)[11:].split("-")  # after YYYY-MM-DD-
    if any(len(w) > 32 or (len(w) >= 16 and any(c.isdigit() for c in w)) for w in words):
        return False
    if any(w in _LABEL_WORDS and len(nxt) >= 12 for w, nxt in zip(words, words[1:], strict=False)):
        return False  # "…-password-correcthorsebattery-…": a long word after a label is read as the engine reads it
    return not contains(" ".join(w for w in words if w))


_LABEL_WORDS = frozenset("password passwd pwd pass passphrase passcode secret token key apikey pin credential credentials".split())
