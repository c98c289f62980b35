"""Links as a retrieval signal (opt-in): the records a top hit links to, or is linked from, join the candidates.

For a question whose answer sits one hop away ("where does the lead of project Falcon live?": the project's record
links its lead's), the linked records of the first :data:`SEEDS` hits are added with the seed's score times
:data:`DISCOUNT`, then the list is re-sorted and cut to the limit — so a linked record can move past a weak direct
hit, never past the seed that brought it. Backends supply the links (resolved for the caller, so only records it may
see); this module only merges. Measured in ``docs/benchmarks.md`` ("Links as a retrieval signal"); off by default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from agent_memory.search.types import SearchHit

__all__ = ["DISCOUNT", "SEEDS", "expand_hits"]

#: How many of the best hits bring their linked records.
SEEDS = 5
#: A linked record's score: its seed's score times this.
DISCOUNT = 0.5


def expand_hits(
    hits: Sequence[SearchHit], linked: Mapping[str, Sequence[SearchHit]], *, limit: int, discount: float = DISCOUNT
) -> list[SearchHit]:
    """``hits`` with the records ``linked`` to each seed hit (seed id → hits of its linked records) added at the
    seed's score × ``discount`` (a record already among the hits keeps the better of the two), best first, at most
    ``limit``."""
    best: dict[str, SearchHit] = {h.id: h for h in hits}
    for seed in hits:
        for hit in linked.get(seed.id, ()):
            score = round(seed.score * discount, 4)
            held = best.get(hit.id)
            if held is None or held.score < score:
                best[hit.id] = dataclasses.replace(hit if held is None else held, score=score)
    order = {h.id: i for i, h in enumerate(hits)}
    ranked = sorted(best.values(), key=lambda h: (-h.score, order.get(h.id, len(order)), h.id))
    return ranked[:limit]
