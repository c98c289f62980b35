"""Redaction on the secret corpora and its speed per 300-character record.

    .venv/bin/python benchmarks/bench_redaction_corpus.py [-v]

``-v`` also lists the missed secrets and damaged look-alikes of each corpus.  Every corpus listed here is tuning data:
shipped, tune, holdout and holdout2 were tuned on after their first measure, and so was holdout3 (written blind,
measured once at 307/347 redacted, 8/101 look-alikes changed; its misses then grown into general families), holdout4,
since round 3 (redaction/anchored.py) holdout5, since round 4 (redaction/causes.py) holdout6, and since round 4b
(redaction/cues.py) holdout7 (blind measures 578/637 with 12/240 changed on round 3, 594/637 with 7/240 on round 4).
holdout8 was blind until round 6 read its misses (blind measures in docs/benchmarks.md); it is tuning data now, and so is
holdout9 since round 7 read its misses (blind measure 1085/1148 with 12/303 changed), and holdout10 since round 8
(blind measure 997/1037 with 4/222 changed), and holdout11 since round 9 (blind measures 871/903 with 6/270 changed
after round 7, 875/903 with 5/270 after round 8), and holdout12 since round 10 (blind measure 703/717 with 3/255
changed after round 9).  A corpus
measures generalisation only until its misses are studied: the blind figure is the first one, kept in
docs/benchmarks.md.
"""

from __future__ import annotations

import random
import string
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(FIXTURES / "secrets"))

from score import score  # noqa: E402

from agent_memory.redaction.api import redact  # noqa: E402

CORPORA = (
    "secrets",
    "secrets_tune",
    "secrets_holdout",
    "secrets_holdout2",
    "secrets_holdout3",
    "secrets_holdout4",
    "secrets_holdout5",
    "secrets_holdout6",
    "secrets_holdout7",
    "secrets_holdout8",
    "secrets_holdout9",
    "secrets_holdout10",
    "secrets_holdout11",
    "secrets_holdout12",
)


def per_record_us(n: int = 2000) -> float:
    rng = random.Random(7)
    words = [
        "deploy",
        "the",
        "service",
        "notes",
        "meeting",
        "Lisbon",
        "prefers",
        "short",
        "answers",
        "v2.3.1",
        "2026-01-05",
        "db",
        "migration",
        "ok",
        "token",
        "budget",
        "password",
        "policy",
        "user-42",
        "https://x.io/a",
    ]
    records = []
    for _ in range(200):
        text = ""
        while len(text) < 300:
            text += rng.choice(words) + rng.choice([" ", " ", ", ", ". ", "\n"])
        records.append(text[:300] + rng.choice(string.ascii_letters))
    for r in records:
        redact(r)
    start = time.process_time()  # CPU time: wall time says little on a shared machine
    for i in range(n):
        redact(records[i % len(records)])
    return (time.process_time() - start) / n * 1e6


def main() -> None:
    verbose = "-v" in sys.argv
    for name in CORPORA:
        result = score(lambda text: redact(text).text, FIXTURES / name)
        print(f"{name:16} {result.line()}")
        if verbose:
            print(f"  missed: {result.missed}\n  damaged: {result.damaged_cases}")
    print(f"speed: {per_record_us():.0f} us of CPU per 300-character record")


if __name__ == "__main__":
    main()
