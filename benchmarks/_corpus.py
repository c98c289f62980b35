"""Synthetic, deterministic corpora for the benchmarks: Zipf-distributed vocabulary, natural-ish queries.

Words are drawn from one Zipf distribution (exponent ~1) whose most frequent ranks are real
English function words, as in text; the rest are pronounceable pseudo-words. Records have a
short title, one to four sentences and sometimes a tag; a few are session- or user-scoped so
visibility filtering is exercised. Queries are questions: function words around two to four
content words, half of them taken from one record (so there is a right answer), half drawn
from the content vocabulary (so posting lists of common words are exercised too).
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_memory.backends.files.store import MemoryDraft  # noqa: E402

FUNCTION_WORDS = (
    "the of and to a in is that it for was on with as we be at this by i have from or had not but what "
    "all were when there can an your which their said if do will each about how up out them then she many "
    "some so these would other into has more her two like him see time could no make than first been its "
    "who now people my made over did down only way find use may water long little very after words called "
    "just where most know get through back much go good new write our me man too any day same right look think"
).split()
TAGS = [f"topic-{i}" for i in range(40)]
QUESTION_FRAMES = (
    "What did we decide about {}?",
    "When is the {} due?",
    "Who mentioned {}?",
    "Do you remember the {}?",
    "what was said about {} last time",
    "{}?",
    "Any notes on {} and the plan?",
    "Where did we put the {}?",
)


class Corpus:
    """A vocabulary with Zipf weights and a seeded generator of records and queries."""

    def __init__(self, seed: int = 1, content_words: int = 30_000, exponent: float = 1.0) -> None:
        self.rng = random.Random(seed)
        syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["an", "er", "on", "is", "or", "el", "ur"]
        words: set[str] = set()
        while len(words) < content_words:
            words.add("".join(self.rng.choice(syllables) for _ in range(self.rng.randint(2, 4))))
        self.content = sorted(words)
        self.rng.shuffle(self.content)
        self.vocab = list(FUNCTION_WORDS) + self.content
        self.cum: list[float] = []
        total = 0.0
        for rank in range(len(self.vocab)):
            total += 1.0 / (rank + 1) ** exponent
            self.cum.append(total)
        self.content_cum = [c - self.cum[len(FUNCTION_WORDS) - 1] for c in self.cum[len(FUNCTION_WORDS) :]]

    def words(self, k: int) -> list[str]:
        return self.rng.choices(self.vocab, cum_weights=self.cum, k=k)

    def content_words(self, k: int) -> list[str]:
        return self.rng.choices(self.content, cum_weights=self.content_cum, k=k)

    def sentence(self) -> str:
        words = self.words(self.rng.randint(8, 22))
        return " ".join(words).capitalize() + self.rng.choice(".....?!")

    def draft(self, i: int) -> MemoryDraft:
        rng = self.rng
        title = " ".join(self.content_words(rng.randint(2, 5))).capitalize()
        body = "\n".join(self.sentence() for _ in range(rng.randint(1, 4)))
        scope, session_id, user_id = "project", None, None
        roll = rng.random()
        if roll < 0.05:
            scope, session_id = "session", f"s{rng.randint(0, 50)}"
        elif roll < 0.10:
            scope, user_id = "user", f"u{rng.randint(0, 20)}"
        tags = (rng.choice(TAGS),) if rng.random() < 0.3 else ()
        return MemoryDraft(content=body, title=title, scope=scope, session_id=session_id, user_id=user_id, tags=tags)

    def drafts(self, n: int) -> Iterator[MemoryDraft]:
        for i in range(n):
            yield self.draft(i)

    def queries(self, n: int, known: list[str]) -> list[str]:
        """``n`` questions; half built from words of the ``known`` record bodies."""
        out: list[str] = []
        for i in range(n):
            if i % 2 == 0 and known:
                text = self.rng.choice(known)
                pool = [w for w in text.lower().replace(".", " ").replace("?", " ").replace("!", " ").split() if w not in FUNCTION_WORDS]
                picked = self.rng.sample(pool, min(len(pool), self.rng.randint(2, 4))) or self.content_words(2)
            else:
                picked = self.content_words(self.rng.randint(2, 4))
            frame = QUESTION_FRAMES[i % len(QUESTION_FRAMES)]
            out.append(frame.format(" ".join(picked)))
        return out


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1) of a non-empty list."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))]


def zipf_check(corpus: Corpus, samples: int = 50_000) -> float:
    """Share of sampled tokens that are the single most frequent word (sanity check for the shape)."""
    words = corpus.words(samples)
    return words.count(corpus.vocab[0]) / samples


__all__ = ["Corpus", "percentile", "zipf_check", "FUNCTION_WORDS"]
