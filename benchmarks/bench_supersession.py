"""Search cost of history: a store where every key was replaced twice (2 of 3 records superseded).

Ratios in one run: default search (current facts only) and ``as_of`` against ``include_superseded=True``
(no supersession predicate). Run: ``python benchmarks/bench_supersession.py [records] [queries]``.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time

from agent_memory.backends.files.store import MemoryStore
from agent_memory.model.drafts import MemoryDraft

WORDS = "alpha beta gamma delta release deploy friday paris berlin team colour tea coffee bike train plan budget".split()


def main(n: int = 6000, queries: int = 300) -> dict[str, float]:
    rng = random.Random(7)
    store = MemoryStore(tempfile.mkdtemp(), durable=False)
    keys = max(1, n // 3)
    store.remember_many(
        [MemoryDraft(" ".join(rng.choices(WORDS, k=12)) + f" n{i}", memory_key=f"k{i % keys}", on_existing="replace") for i in range(n)]
    )
    qs = [" ".join(rng.choices(WORDS, k=3)) for _ in range(queries)]

    def per_query(**kw: object) -> float:
        start = time.perf_counter()
        for q in qs:
            store.search(q, limit=10, **kw)  # type: ignore[arg-type]
        return (time.perf_counter() - start) / len(qs) * 1000

    per_query()  # warm
    base, current, as_of = per_query(include_superseded=True), per_query(), per_query(as_of="2099-01-01")
    out = {
        "records": float(store.count(include_superseded=True)),
        "current": float(store.count()),
        "ms_include_superseded": base,
        "ms_current": current,
        "ms_as_of": as_of,
        "ratio_current": current / base,
        "ratio_as_of": as_of / base,
    }
    print(" ".join(f"{k}={v:.2f}" for k, v in out.items()))
    return out


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
