"""A cheap proof that the redaction engine would find nothing in a text, so :func:`engine.redact` can skip it.

Most memories are plain prose: words, a few short numbers, ordinary punctuation. The engine costs the same few
hundred microseconds on such a text whatever it holds, because every family has to look. :func:`plain` answers in a
few compiled scans whether a text is *plain*: it then cannot hold anything the engine redacts, and the engine is
skipped. A text is plain when all of these hold (anything else goes to the engine):

* it is ASCII and made only of words (lower case, Capitalised, or ALL CAPS up to four letters, optionally joined by
  hyphens or an apostrophe), numbers of at most four digits (``3.5``, ``1,000``, ``10:30``, ``2026-11-27``),
  single spaces/newlines and ordinary punctuation (``. , ; ! ? ( ) " '``); no colon after a word (labels), no
  ``= @ / _ # | % $ & * + < > [ ] { } ` ~ \\``, no tabs;
* no run of 20 or more non-space characters (the random-token detectors look at 20+), no group of digits joined by
  spaces, line breaks or punctuation holding more than five digits except a date (card, identity and account numbers need more),
  no letter spelt out one at a time (``g h p _ …``), no quote seam (``"ab" "cd"``);
* none of the engine's cues: the triggers its gated rules look for (``structured``/``keyvalue`` rules, provider
  prefixes, prose and chat triggers, command words and flags), as substrings of the lower-cased text as the engine
  looks for them; the identifier parts the name rules read (``anchored``'s word sets) as whole words; and the
  multilingual label lexicons (``generic``, ``general``, ``anchored``, ``contextual``) as the engine's own regexes;
* fewer than twelve (the seed-phrase minimum) BIP-39 words in the text (English, or any other list typed in ASCII);
* **refined gates** (issue 32): a gate opened by common words ("?", "with", "two", "same", "back", "part", "api",
  "log", "mot", "name" …) whose one rule has a cheap first step is no substring cue. When one of its words occurs,
  that rule's own first step, imported from its module, is asked instead: the security-question rule itself
  (``cues._secq_spans``: a question, then an answer after it on the line, as ``"?" and "you"`` or a ``SECQ_GATE``
  word opens it; a "?" also opens the URL-code rule, which needs a "="), the split rule's cue (``_SPLIT_CUE``),
  the OTP rule's cue (``_OTP_CUE``), "same as always" (``_SAME_AS``), the CVV rule's card (``_CARD_MARK``), named
  pairs (``_NAMED_PAIR``), the chunked password's password cue (``PW_GATE``), general's chat rules and causes'
  value-before-label rule, matched where their triggers start as those rules match them. A word is dropped from the
  cues only when every rule that reads it is a refined gate (:func:`_dropped`: every ``*_GATE`` tuple of ``cues``
  and every other cue list is looked at), so a word another rule also reads stays a cue.

Every cue is imported from the module that uses it, never copied: a trigger added there is a cue here.
``tests/test_redact_prefilter.py`` runs the full engine over every corpus under ``tests/fixtures/secrets*``, the
engine's test inputs and random mixes, and fails if the engine finds a span in a text this module calls plain — the
guard against a new rule this module does not know. ``AGENT_MEMORY_REDACT_PREFILTER=0`` turns the prefilter off.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from agent_memory.redaction import anchored, bip39, causes, contextual, families, general, generic, keyvalue, structured, views
from agent_memory.redaction import cues as cue_rules
from agent_memory.redaction.base import Lazy
from agent_memory.redaction.bip39 import WORDS as BIP39_WORDS
from agent_memory.redaction.providers import PROVIDERS

# words: lower case or Capitalised ("don't", "well-known"), or short ALL CAPS ("I", "OK", "NASA")
_W = r"(?:[A-Z]?[a-z]+|[A-Z]{1,4})(?:'[a-z]{1,3})?"
_WORD = rf"{_W}(?:-{_W}){{0,3}}"
_NUM = r"\d{1,4}(?:[.,:/-]\d{1,4}){0,2}"
_TOKEN = rf"[(\"']?(?:{_WORD}|{_NUM})[.,;!?)\"']{{0,3}}"
_SHAPE = re.compile(rf"[ \n]*(?:{_TOKEN}(?:[ \n]+{_TOKEN})*[ \n]*)?")
_LONG_RUN = re.compile(r"(?<!\S)\S{20}")
_DIGIT_GROUP = re.compile(r"\d(?:\d|(?:[.\-/,:]|[ \n]{1,3})(?=\d))*")  # a card in wide-spaced groups or over lines is one group
_DATE = re.compile(r"\d{4}([- ])\d{2}\1\d{2}")  # also spaced: a record id's date as the id check spaces it
_LETTERS = re.compile(r"[a-z]+")
_TOKENISH = re.compile(r"(?<!\S)\S{14,}")
_DIGIT = re.compile(r"\d")
_MAX_GROUP_DIGITS = 5


def _refined() -> tuple[tuple[tuple[str, ...], Callable[[str, str], bool]], ...]:
    """Gates that common words open ("with", "two", "back", "api", "mot", a "?"), each with the first step of the one
    rule it opens, imported from that rule's module: ``check(text, low)`` is False only when that rule finds nothing
    in ``text``. A word of these gates is then no cue by itself (:func:`_dropped`); a text holding one is plain only
    if the check of every refined gate it opens says False."""
    c = cue_rules

    def question(text: str, low: str) -> bool:
        # the engine: `_any(low, SECQ_GATE) or "?" in text and "you" in low` runs the security-question rule (its
        # question, then an answer after it on the line); a "?" also opens the URL-code rule, which needs a "="
        if "=" in text:
            return True
        if not (c._any(low, c.SECQ_GATE) or "?" in text and "you" in low):
            return False
        return next(c._secq_spans(text), None) is not None

    def chat(text: str, low: str) -> bool:
        # general's chat rules match their patterns where a trigger starts, as they do (with the longer trigger list)
        same = len(low) == len(text)
        return any(
            next(general._at(pattern, text, low, general._CHAT_TRIGGERS_UNICODE, same), None) is not None
            for pattern in (general._CHAT, general._CHAT_BARE)
        )

    def after_label(text: str, low: str) -> bool:
        # the label is matched where one of its stems starts, as causes.after_value_spans does
        if len(low) != len(text):
            return causes._AFTER_LABEL.get().search(text) is not None
        match = causes._AFTER_LABEL.get().match
        return any(match(text, i) is not None for stem in causes.AFTER_LABEL_STEMS for i in causes._find_all(low, stem))

    return (
        ((*c.SECQ_GATE, "?"), question),
        # the split rule reads a value only after its own cue ("starts with …", "second half …", "rest is …")
        (c.SPLIT_GATE, lambda text, low: c._SPLIT_CUE.get().search(text) is not None),
        # the chunked-password rule needs a password cue as well (every PW_GATE word stays a cue)
        (c.CHUNK_GATE, lambda text, low: c._any(low, c.PW_GATE)),
        # the OTP rule keeps a base32 run only with its cue ("2fa", "two-factor", "setup key" …) before it
        (c.OTP_GATE, lambda text, low: c._OTP_CUE.get().search(text) is not None),
        # "the same as always: …", "the usual one: …"
        (c.SAME_GATE, lambda text, low: c._SAME_AS.get().search(text) is not None),
        # the CVV rule runs only beside a card number (or its marker)
        (c.CVV_GATE, lambda text, low: c._CARD_MARK.get().search(text) is not None),
        # define('NAME', '…'), setenv, <key>…</key><string>…
        (c.NAMED_GATE, lambda text, low: c._NAMED_PAIR.get().search(text) is not None),
        # "mot de passe: …", "mdp …": the chat rules
        (general._CHAT_TRIGGERS, chat),
        (general._CHAT_TRIGGERS_UNICODE, chat),
        # a value before its label ("… is the api key", "… to log in"): the label is matched where a stem starts
        (causes.AFTER_LABEL_STEMS, after_label),
    )


def _sources(prose: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Every list of words the engine's gated rules test with ``trigger in low`` (and command flags tested by
    ``startswith``), ``cues.TRIGGERS`` (the union of that module's gates) last."""
    out: list[tuple[str, ...]] = [prose]
    out.extend(tuple(triggers) for _, _, triggers in structured.SHAPE_RULES + structured.LATE_RULES + keyvalue.RULES)
    out += [general._CHAT_TRIGGERS, general._CHAT_TRIGGERS_UNICODE, general._KEY_SPACE_TRIGGERS, general._CLI_FLAGS]
    out += [causes.TRIGGERS, causes.AFTER_LABEL_STEMS]
    out.append(("value", "identified", "random_", "private-", "ssws", "[redacted:"))
    # an identifier of two parts naming an id ("id-no"): the name rules' pairs, joined as a plain text can join them
    out.append(tuple(f"{a}-{b}" for a, b in anchored._ID_PAIRS))
    out.append(cue_rules.TRIGGERS)
    return out


def _all_substring_cues(prose: tuple[str, ...]) -> set[str]:
    return {c.lower() for source in _sources(prose) for c in source if c}


def _dropped(prose: tuple[str, ...]) -> set[str]:
    """The words of the refined gates that no other rule reads: no cue by themselves (their gates' checks are).
    The other rules' words: every source but the refined ones, every ``*_GATE`` tuple of ``cues`` but the refined
    ones, and the words ``cues.TRIGGERS`` adds of its own ("?", "&", "insert" …) but "?"."""
    refined = [g for g, _ in _refined()]
    refined_words = {w.lower() for g in refined for w in g}
    gates = [v for k, v in vars(cue_rules).items() if k.endswith("_GATE") and isinstance(v, tuple)]
    in_gates = {w for g in gates for w in g}
    other = {w.lower() for w in cue_rules.TRIGGERS if w not in in_gates and w.lower() not in refined_words}
    for source in _sources(prose)[:-1] + gates:
        if not any(source is r for r in refined):
            other.update(w.lower() for w in source)
    return refined_words - other


def _substring_cues(prose: tuple[str, ...], *, refined: bool = True) -> tuple[str, ...]:
    """The substring cues (longest first); with ``refined``, less the words :func:`_dropped` (their gates' checks
    stand for them)."""
    cues = _all_substring_cues(prose)
    if refined:
        cues -= _dropped(prose)
    return tuple(sorted(cues, key=len, reverse=True))


def _word_cues() -> frozenset[str]:
    """Identifier parts the name rules read, and command words: as whole words of the lower-cased text."""
    words: set[str] = set()
    for group in (anchored._PW, anchored._KEY, anchored._PIN, anchored._PIN_CODE_QUALIFIER, anchored._ID, anchored._KEY_WORDS):
        words.update(group)
    words.update(general._CLI_WORDS)
    return frozenset(w.lower() for w in words)


def _trie(words: list[str]) -> str:
    """A regex matching any of ``words`` (none empty), factored by common prefixes: the engine's ``re`` then tries
    one branch per next character instead of every word at every position."""
    heads: dict[str, list[str]] = {}
    for w in words:
        heads.setdefault(w[0], []).append(w[1:])
    alts = []
    for head, tails in sorted(heads.items()):
        rest = [t for t in tails if t]
        if not rest:
            alts.append(re.escape(head))
            continue
        sub = _trie(rest)
        alts.append(re.escape(head) + (f"(?:{sub})?" if len(rest) < len(tails) else f"(?:{sub})"))
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def _alternation(cues: set[str] | tuple[str, ...]) -> re.Pattern[str]:
    """One scan for any of ``cues`` (a match of the shortest is enough: we only ask whether one occurs)."""
    return re.compile(_trie(sorted(set(cues))))


class _Cues:
    __slots__ = ("digit_labels", "labels", "providers", "question", "refined", "refined_words", "routing", "substrings", "words")

    def __init__(self, prose: tuple[str, ...]) -> None:
        self.substrings = _alternation(_substring_cues(prose))
        dropped = _dropped(prose)
        self.refined_words = _alternation(dropped) if dropped else None
        # each refined gate as one scan of the lower-cased text, with its rule's check
        self.refined = tuple((_alternation({w.lower() for w in gate}), check) for gate, check in _refined())
        self.words = _word_cues()
        # provider prefixes, case as the engine matches them, looked for in runs of 14+ token characters (a plain
        # text's runs lie inside its space-separated tokens, which are tested whole: a superset)
        self.providers = _alternation({t for _, triggers, _ in PROVIDERS for t in triggers})
        # the label lexicons the engine runs on any text (the rest are gated on a trigger above or need a digit)
        # (the lists of backup codes, anchored._CODE_HEAD_ANY and generic._CODE_HEAD, name "code", "key" or "token" in
        # an ASCII text: substring cues above)
        # (an ASCII text: the lower-cased text against the lower-case lexicon, which is faster than ignoring case)
        self.labels = (re.compile(contextual._SECRET_NAME),)
        # bank routing words bind digits only (a routing number of 6+ digits)
        self.routing = _alternation(general._ROUTING_WORDS)
        # labels that only bind digits: looked for when the text has one
        self.digit_labels = (
            re.compile(r"(?<![\w])(?:" + general._ID_WORDS + r")(?![a-z])", re.I),
            re.compile(families._ID_LABEL, re.I),
            families._ID.get(),
            anchored._CARD_CODE.get(),
        )
        # a chat question naming a secret (the engine looks for it when the text has a "?" and a new line)
        self.question = anchored._QUESTION_LABEL.get()


_cues: _Cues | None = None


def cue_set(prose: tuple[str, ...]) -> _Cues:
    """The prefilter's cues, built on first use from the engine's ``prose`` triggers (:mod:`slugs` reads them too)."""
    global _cues
    built = _cues
    if built is None:
        built = _cues = _Cues(prose)
    return built


def opens(text: str, low: str, gate: re.Pattern[str], check: Callable[[str, str], bool]) -> bool:
    """Does a refined gate (``gate``: a scan for its words, :attr:`_Cues.refined`) open in ``text`` (``low``: it
    lower-cased) and its rule's check say the rule may find something?"""
    return gate.search(low) is not None and check(text, low)


def _question(text: str, label: re.Pattern[str]) -> bool:
    """Could ``anchored.qa_spans`` answer here: a line with a "?" naming a secret, and in the three lines after it
    one that may hold a one-token reply (no space inside, or a speaker's colon, or digits)?"""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if "?" not in line:
            continue
        if any(" " not in nxt.strip() or ":" in nxt or _DIGIT.search(nxt) for nxt in lines[i + 1 : i + 4]):
            if label.search(line) is not None:
                return True
    return False


def enabled() -> bool:
    return os.environ.get("AGENT_MEMORY_REDACT_PREFILTER", "1") != "0"


def plain(text: str, prose: tuple[str, ...], spaced: Lazy) -> bool:
    """True when ``text`` provably holds nothing the engine redacts (see the module's docstring); False means
    "ask the engine", not "holds a secret". ``prose`` and ``spaced`` are the engine's own prose triggers and its
    pattern of a token spelt out one character at a time (passed in: the engine imports this module)."""
    if not text:
        return True
    if not text.isascii() or _SHAPE.fullmatch(text) is None or _LONG_RUN.search(text) is not None:
        return False
    for m in _DIGIT_GROUP.finditer(text):
        g = m.group()
        if sum(c.isdigit() for c in g) > _MAX_GROUP_DIGITS and _DATE.fullmatch(g) is None:
            return False
    if ("'" in text or '"' in text) and views._SEAM.get().search(text) is not None:
        return False
    if spaced.get().search(text) is not None:
        return False
    cues = _cues if _cues is not None else cue_set(prose)
    low = text.lower()
    if cues.substrings.search(low) is not None:
        return False
    words = _LETTERS.findall(low)
    if not cues.words.isdisjoint(words):
        return False
    if len(words) >= families._MIN_WORDS:
        other = bip39.other_words()  # the other BIP-39 lists, typed in ASCII (a non-ASCII text never gets here)
        if sum(w in BIP39_WORDS for w in words) >= families._MIN_WORDS or sum(w in other for w in words) >= families._MIN_WORDS:
            return False
    long_tokens = _TOKENISH.findall(text)
    if long_tokens and cues.providers.search(" ".join(long_tokens)) is not None:
        return False
    # the engine tries its label lexicon on an ASCII text only at words whose first three letters are a stem of it
    if any(w[:3] in generic._STEMS or w in generic._SHORT for w in words) and next(generic._labels(text), None) is not None:
        return False
    if any(p.search(low) for p in cues.labels):
        return False
    if "?" in text and "\n" in text and _question(text, cues.question):
        return False
    if cues.refined_words is not None and cues.refined_words.search(low) is not None:
        if any(opens(text, low, gate, check) for gate, check in cues.refined):
            return False
    if _DIGIT.search(text) is None:
        return True
    return cues.routing.search(low) is None and not any(p.search(text) for p in cues.digit_labels)
