"""Questions by their wording: what a query asks for (one thing, or a set of things spread over many sessions),
and whether a message asks rather than states.

"What video games does Nate play?", "How many dogs has Maria adopted?", "What has Melanie painted?" and
"What do Jon and Gina both like?" ask for every instance, and those are usually said in different sessions;
"What did Caroline research?" asks for one. English wording only: any other question counts as asking for one
thing, which keeps the default ranking.
"""

from __future__ import annotations

import re

__all__ = ["asks_for_set", "ends_by_asking"]

_CUES = re.compile(r"\b(both|how many|in what ways|what ways|what are some|which ones|all the|ever)\b")
_WH = ("what", "which", "who", "where")
_AUXILIARIES = frozenset("has have had does do did is are was were can could will would should might may".split())
_PERFECT = re.compile(r"^(what|where|who)\s+(has|have)\s")
_KINDS = re.compile(r"^(what|which)\s+(kinds|types|sorts)\s+of\b")
_NOT_PLURAL = frozenset(
    "this his its was does has yes news series species always perhaps sometimes various previous famous serious "
    "nervous gorgeous delicious less thus across plus lens physics".split()
)
_WORD = re.compile(r"[a-z][a-z'’+/-]*")
_NOUN_PHRASE_WORDS = 6


def _plural(word: str) -> bool:
    if word.endswith(("'s", "’s")) or word in _NOT_PLURAL or len(word) <= 3:
        return False
    return word.endswith("s") and not word.endswith(("ss", "us", "is"))


def asks_for_set(question: str) -> bool:
    """True when ``question`` asks for several things: a cue ("both", "how many", "what are some", "ever"),
    a present perfect ("What has X done?"), or a plural noun in the phrase it asks about ("What LGBTQ+ events
    has Caroline attended?", "What are Joanna's hobbies?", "What kinds of …")."""
    text = " ".join(question.lower().split())
    if not text:
        return False
    if _CUES.search(text) or _PERFECT.match(text) or _KINDS.match(text):
        return True
    words = [w for part in _WORD.findall(text) for w in part.split("/")]
    if not words or words[0] not in _WH:
        return False
    phrase: list[str] = []
    for w in words[1:]:
        if w in _AUXILIARIES:
            if phrase:
                break
            continue  # "what are Joanna's hobbies": the phrase follows the auxiliary
        phrase.append(w)
        if len(phrase) >= _NOUN_PHRASE_WORDS:
            break
    if phrase[:2] in (["kind", "of"], ["type", "of"], ["sort", "of"]):
        phrase = phrase[2:3]  # "what kind of dance piece": one thing
    return any(_plural(w) for w in phrase)


def ends_by_asking(text: str) -> bool:
    """A message that ends by asking (trailing ``[shared an image: …]`` notes aside): it rarely states a fact.
    Linear in the text, however many brackets it holds."""
    end = len(text)
    while True:
        while end and text[end - 1].isspace():
            end -= 1
        start = text.rfind("[", 0, end) if end and text[end - 1] == "]" else -1
        if start < 0 or text.find("]", start, end - 1) >= 0:
            break
        end = start
    while end and text[end - 1] in "\"'”’)":
        end -= 1
    return end > 0 and text[end - 1] == "?"
