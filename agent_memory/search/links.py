"""Links as a retrieval signal (opt-in): the records a top hit links to, or is linked from, join the candidates.

For a question whose answer sits one hop away ("where does the lead of project Falcon live?": the project's record
links its lead's), the linked records of the first :data:`SEEDS` hits are added with the seed's score times
:data:`DISCOUNT`, then the list is re-sorted and cut to the limit — so a linked record can move past a weak direct
hit, never past the seed that brought it. Backends supply the links (resolved for the caller, so only records it may
see); this module only merges. Measured in ``docs/benchmarks.md`` ("Links as a retrieval signal"); off by default.

A linked record passes every filter of the search that brought it (:class:`LinkedFilter`): ``scope``, ``kind``,
the date bounds, the current-versions-only rule (``include_superseded``, ``as_of``: a link to a version no longer
current follows ``superseded_by`` to the version the search would show, else the record is left out) and the
:class:`~agent_memory.search.stages.MinScore` floors of its ``stages`` (on ``score``: the linked record's
discounted score; on a raw signal, dense or lexical, which a linked record has not got: left out).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from agent_memory.model.queries import as_of_filter, date_filters, kinds_of, scopes_of
from agent_memory.model.records import MemoryRecord
from agent_memory.search.types import SearchHit

__all__ = ["DISCOUNT", "FOLLOW", "SEEDS", "LinkedFilter", "expand_hits"]

#: How many of the best hits bring their linked records.
SEEDS = 5
#: A linked record's score: its seed's score times this.
DISCOUNT = 0.5
#: Most ``superseded_by`` steps followed from a linked version to the one a search shows.
FOLLOW = 16


def _instant(text: str | None) -> dt.datetime | None:
    """A stored or given instant as an aware datetime (None: absent or unreadable)."""
    if not text:
        return None
    try:
        [norm] = date_filters(created_after=text)
    except Exception:  # an unreadable stored date: the backend's comparison would not match it either
        return None
    return dt.datetime.fromisoformat(norm.replace("Z", "+00:00")) if norm else None


class LinkedFilter:
    """The filters of one search (its keyword options), applied to a linked record the backend's filters never saw.

    Built before the search runs, so a bad filter is the backend's own :class:`~agent_memory.errors.InvalidInputError`
    (raised the same way by the search itself)."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.scopes = {s.value for s in scopes_of(options.get("scope"))}
        self.kinds = set(kinds_of(options.get("kind")))
        names = ("created_after", "created_before", "updated_after", "updated_before")
        given = {n: options.get(n) for n in names}
        self.dates = {n: _instant(v) for n, v in zip(names, date_filters(**given), strict=True) if v is not None}
        when = as_of_filter(options.get("as_of"))
        self.as_of = _instant(when) if when is not None else None
        self.include_superseded = bool(options.get("include_superseded"))
        self.floor: float | None = None  # MinScore on "score": × the best direct hit's score
        self.no_links = False  # a MinScore on a raw signal: linked records have none
        from agent_memory.search.stages import MinScore  # the stages module loads numpy: only when stages are given

        for stage in options.get("stages") or ():
            if isinstance(stage, MinScore):
                if stage.signal == "score":
                    self.floor = max(self.floor or 0.0, float(stage.threshold))
                else:
                    self.no_links = True

    def in_time(self, rec: MemoryRecord) -> bool:
        """Whether ``rec`` is a version the search shows: in force at ``as_of``, else current (unless superseded
        versions are asked for)."""
        if self.as_of is not None:
            start = _instant(rec.valid_from or rec.happened_at or rec.created)
            end = _instant(rec.valid_to)
            return start is not None and start <= self.as_of and (end is None or end > self.as_of)
        return self.include_superseded or not rec.superseded_by

    def admits(self, rec: MemoryRecord) -> bool:
        """Whether ``rec`` passes the search's scope, kind, date and version filters."""
        if self.no_links or not self.in_time(rec):
            return False
        if self.scopes and rec.scope.value not in self.scopes:
            return False
        if self.kinds and rec.kind not in self.kinds:
            return False
        for name, bound in self.dates.items():
            value = _instant(rec.created if name.startswith("created") else rec.updated)
            if value is None or bound is None:
                return False
            if (value < bound) if name.endswith("_after") else (value >= bound):
                return False
        return True

    def scored(self, hits: Sequence[SearchHit], direct: Sequence[SearchHit]) -> list[SearchHit]:
        """``hits`` (direct and linked, merged) without the linked ones under the ``MinScore`` floor."""
        if self.floor is None or not direct:
            return list(hits)
        own = {h.id for h in direct}
        least = self.floor * max(h.score for h in direct)
        return [h for h in hits if h.id in own or h.score >= least]


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
