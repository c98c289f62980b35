"""A cheap acceptor for the slugs of the ids the store mints (``YYYY-MM-DD-<slug>``, the stem of
:func:`agent_memory.model.values.new_id`): when :func:`plain_slug` says a stem is plain, the identifier check
(:func:`agent_memory.redaction.ids.looks_secret_glued`: 4–5 passes of the redaction engine over the stem, spaced and
each glued suffix) would find nothing in it, so the check is skipped. It lives here, beside the rules it reads: the
id rule (:mod:`agent_memory.redaction.ids`) asks :func:`plain_slug`.

It accepts only a narrow shape and asks the redaction prefilter (:func:`agent_memory.redaction.prefilter.plain`,
the engine's own proof that a text holds nothing it redacts) about the stem with its hyphens as spaces, and looks
for the prefilter's other cues in the stem itself. Redaction is read, never changed: its cue lists are imported
from it (a cue added there is one here). Why that covers
what the engine could read in the hyphen-joined stem and its glued suffixes:

* **Shape**: the date, then words of 1–12 lower-case ASCII letters joined by single hyphens, each with a vowel
  (``a e i o u y``); no digit besides the date's, no other character. So the stem has no ``_ . : / + = ~ @``, no
  upper case, no run of more than 12 letters, and its only digits are the 8 of the date.
* **The spaced form** (``2026 11 28 w1 w2 …``) is plain: none of the engine's cues occurs in it — triggers of its
  gated rules and prose (``token``, ``pass``, ``key`` …, as substrings), the words its name rules read (whole
  words), the label lexicons of every language (its regexes), twelve BIP-39 words, digit groups beyond a date.
  A label-and-value reading of the stem (``token-bucket-…``: a label, then the rest of the run as its value) needs a
  label, and every label is such a cue.
* **Across the hyphens**: the engine's substring cues that hold a hyphen (``private-``, ``id-no``, ``-----begin``
  …) and the label regexes the prefilter runs (every language's secret names, the labels that bind digits) are
  looked for in the stem itself, where the spaced form cannot show them; the command-line flags ``-u -l -d`` are
  not (the engine reads them only after a space or tab, and a stem has none).
* **Refined gates** (the prefilter's words that are no cue alone, "with", "api", "two" …: their rules' own first
  step stands for them): the spaced form passed those checks in the prefilter, and they are asked again of the stem
  itself and of each suffix from a hyphen on (the texts the identifier check reads besides the spaced form).
* **Provider tokens**: no provider trigger (case as the engine matches it) occurs in the stem, so none of the
  provider rules runs on it or on any of its suffixes (a suffix's triggers are the stem's).
* **Base64**: the engine decodes a run of 24+ base64 characters (hyphens included) to look inside; the stem and
  every suffix from a hyphen on are tried as the engine would (URL-safe, its bytes UTF-8), and any that decodes
  sends the stem to the full check.
* **Random-looking runs** (the stem and its suffixes are single runs of 16+ token characters, which the random-
  token detectors read): their shape is words with vowels of at most 12 lower-case letters and a date — no mixed
  case, no digits inside the words. This is the part argued from the detectors' shape, not from a cue list, and it
  is what ``tests/test_stem_acceptor.py`` probes hardest (hypothesis over random letter strings, words, cue words,
  provider triggers and secret samples cut to slugs: the acceptor never accepts a stem the full check refuses).

Anything outside the shape, or with a cue, goes to the full check. With the prefilter turned off
(``AGENT_MEMORY_REDACT_PREFILTER=0``) this acceptor is off too.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from functools import cache

from agent_memory.redaction import engine, prefilter
from agent_memory.redaction.providers import PROVIDERS

_STEM = re.compile(r"(\d{4})-(\d{2})-(\d{2})((?:-[a-z]{1,12})+)")
_VOWEL = frozenset("aeiouy")
# the command-line flags the engine's ``_CLI`` rule reads only after a space or tab (``(?<![\w-])`` before a user
# flag, ``[ \t]`` before a password flag): a stem has neither
_SPACE_FLAGS = ("-u", "-l", "-d")


class _Checks:
    """What the acceptor reads of the redaction rules (imported, never copied: a cue added there is one here)."""

    __slots__ = ("hyphen_cues", "labels", "providers", "refined", "refined_words")

    def __init__(self) -> None:
        prose = engine._PROSE_TRIGGERS
        cues = prefilter.cue_set(prose)
        stemlike = re.compile(r"[a-z0-9-]+")
        # provider triggers as the engine matches them (case kept) that can occur in a stem
        triggers = {t for _, ts, _ in PROVIDERS for t in ts if stemlike.fullmatch(t)}
        self.providers = _any(triggers)
        # the substring cues that hold a hyphen (the spaced form cannot show them): all of them, refined or not
        hyphen = {c for c in prefilter._substring_cues(prose, refined=False) if "-" in c and c not in _SPACE_FLAGS}
        self.hyphen_cues = _any(hyphen)
        self.labels = (*cues.labels, *cues.digit_labels)
        # the refined gates (a word such as "with" or "api" that is no cue alone, its rule's own check standing for
        # it): the engine reads the stem and its suffixes too, so their checks are asked of each
        self.refined_words: re.Pattern[str] | None = cues.refined_words
        self.refined: tuple[tuple[re.Pattern[str], Callable[[str, str], bool]], ...] = cues.refined


def _any(words: set[str]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) or r"(?!)")


def _may_decode(run: str) -> bool:
    """Could the engine read ``run`` (the stem, or a suffix it checks alone) as URL-safe base64 hiding a text: 24
    characters or more whose bytes are UTF-8? (A superset of what its base64 rules decode.)"""
    if len(run) < 24 or len(run) % 4 == 1:
        return False
    try:
        base64.urlsafe_b64decode(run + "=" * (-len(run) % 4)).decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return True


@cache
def _checks() -> _Checks:
    return _Checks()


def plain_slug(value: str) -> bool:
    """True when ``value`` is a stem of :func:`agent_memory.model.values.new_id`'s shape that provably holds nothing
    the identifier check reads as a secret (see the module's docstring); False means "run the full check"."""
    if not prefilter.enabled():
        return False
    m = _STEM.fullmatch(value)
    if m is None:
        return False
    words = m.group(4)[1:].split("-")
    if any(_VOWEL.isdisjoint(w) for w in words):
        return False
    checks = _checks()
    if checks.providers.search(value) or checks.hyphen_cues.search(value):
        return False
    if any(p.search(value) for p in checks.labels):
        return False
    suffixes = [value[i + 1 :] for i, c in enumerate(value) if c == "-"]
    if _may_decode(value) or any(_may_decode(s) for s in suffixes):
        return False
    spaced = f"{m.group(1)} {m.group(2)} {m.group(3)} {' '.join(words)}"
    if not prefilter.plain(spaced, engine._PROSE_TRIGGERS, engine._SPACED_CHARS):
        return False
    if checks.refined_words is not None and checks.refined_words.search(value) is not None:
        # the spaced form passed its refined gates' checks; the stem and its suffixes are read too
        for text in (value, *suffixes):
            if checks.refined_words.search(text) is None:
                break  # the later suffixes are parts of this one
            if any(prefilter.opens(text, text, gate, check) for gate, check in checks.refined):
                return False
    return True
