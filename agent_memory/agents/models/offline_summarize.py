"""The deterministic offline session summariser: extractive and dated, no model.

A summary names the session, its dates and speakers, lists each speaker's most frequent topics
(content words, in their most common spelling; chat filler such as "wow" or "awesome" and the words of a
``[shared an image: …]`` note's own wrapper left out), then quotes the most informative sentences in
order, each with its date. The same messages always give the same summary.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from agent_memory.redaction.api import MARKER_RE
from agent_memory.search.text import STOP_WORDS, default_tokenizer, term_key

__all__ = ["summarize_messages", "MAX_SENTENCES", "MAX_TOPICS"]

MAX_SENTENCES = 10
MAX_TOPICS = 12
MAX_TOPIC_CHARS = 40  # a longer "word" (a hash, a pasted blob) is no topic
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_MONTHS = ["", "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]


def _field(m: Any, name: str) -> Any:
    return m.get(name) if isinstance(m, Mapping) else getattr(m, name, None)


def _day(at: str | None) -> str:
    if not at or len(at) < 10 or not at[:4].isdigit():
        return ""
    try:
        return f"{int(at[8:10])} {_MONTHS[int(at[5:7])]} {int(at[:4])}"
    except (ValueError, IndexError):
        return ""


_NOTE = re.compile(r"\[shared an? [a-z]+:", re.IGNORECASE)  # "[shared an image: …]": the note's own words say nothing
_FILLER_KEYS = frozenset(
    term_key(w)
    for w in (  # said in every chat; never a topic
        "wow awesome amazing cool yeah hey thanks thank glad totally really super nice lol haha omg great definitely"
    ).split()
)


def _words(text: str) -> list[str]:
    text = _NOTE.sub(" ", MARKER_RE.sub(" ", text))
    return [t for t in default_tokenizer(text) if t not in STOP_WORDS and len(t) > 2 and not t.isdigit()]


def summarize_messages(
    messages: Sequence[Any], *, session_id: str | None = None, max_sentences: int = MAX_SENTENCES, max_topics: int = MAX_TOPICS
) -> str:
    """An extractive, dated summary of ``messages`` (mappings or objects with ``text``, ``speaker``/``role``, ``at``)."""
    items = [
        (
            " ".join(str(_field(m, "speaker") or _field(m, "role") or "speaker").split()) or "speaker",
            str(_field(m, "text") or ""),
            str(_field(m, "at") or ""),
        )
        for m in messages
    ]
    items = [x for x in items if x[1].strip()]
    if not items:
        return ""
    days = [d for d in (_day(at) for _, _, at in items) if d]
    span = (days[0] if days[0] == days[-1] else f"{days[0]} to {days[-1]}") if days else "undated"
    speakers = list(dict.fromkeys(s for s, _, _ in items))
    lines = [f"Session {session_id or ''}".rstrip() + f", {span}: {len(items)} messages between {', '.join(speakers)}."]
    # topics: content words by frequency per speaker, shown in their most common spelling
    freq: Counter[str] = Counter()
    spelled: dict[str, Counter[str]] = {}
    per_speaker: dict[str, Counter[str]] = {s: Counter() for s in speakers}
    for speaker, text, _ in items:
        for w in _words(text):
            k = term_key(w)
            freq[k] += 1
            per_speaker[speaker][k] += 1
            spelled.setdefault(k, Counter())[w] += 1
    for speaker in speakers:
        ranked = sorted(
            ((k, n) for k, n in per_speaker[speaker].items() if k not in _FILLER_KEYS and len(k) <= MAX_TOPIC_CHARS),
            key=lambda kv: (-kv[1], kv[0]),
        )
        top = [k for k, _ in ranked[:max_topics]]
        if top:
            lines.append(f"{speaker} talked about: " + ", ".join(spelled[k].most_common(1)[0][0] for k in top) + ".")
    # sentences: informative (rare-in-session words weigh more once, frequent topic words add up), then in order
    candidates: list[tuple[float, int, str]] = []
    position = 0
    for speaker, text, at in items:
        for sentence in _SENTENCE.findall(text):
            sentence = " ".join(sentence.split())
            words = {term_key(w) for w in _words(sentence)}
            if len(words) < 3:
                continue
            score = sum(math.log(1 + freq[k]) for k in words) / math.sqrt(len(words) + 2)
            day = _day(at)
            quoted = sentence if len(sentence) <= 200 else sentence[:199].rsplit(" ", 1)[0] + "…"
            candidates.append((score, position, f"- {day + ', ' if day else ''}{speaker}: {quoted}"))
            position += 1
    best = sorted(candidates, key=lambda c: (-c[0], c[1]))[:max_sentences]
    lines.extend(line for _, _, line in sorted(best, key=lambda c: c[1]))
    return "\n".join(lines)
