"""The shapes of a search, whatever backend answers it: the request, a hit, the result, and readable scores."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from agent_memory.model.curated import KIND as CURATED_KIND
from agent_memory.model.curated import priority_of
from agent_memory.model.lines import dates_text
from agent_memory.model.records import Scope

__all__ = ["MIN_SCORE", "SearchHit", "SearchRequest", "SearchResult", "readable_score"]

MIN_SCORE = 0.001


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One search, as the engine receives it. ``session_id``/``user_id`` decide visibility."""

    query: str
    session_id: str | None = None
    user_id: str | None = None
    tags: tuple[str, ...] = ()
    scopes: tuple[Scope, ...] = ()
    kinds: tuple[str, ...] = ()
    limit: int = 10
    created_after: str | None = None
    created_before: str | None = None
    updated_after: str | None = None
    updated_before: str | None = None
    trace: bool = False
    strict_visibility: bool = False
    include_superseded: bool = False
    as_of: str | None = None  # a normalised UTC instant: only records in force then (superseded ones included)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A ranked match: where it is (path, line range) and a bounded snippet."""

    id: str
    path: str
    line_start: int
    line_end: int
    snippet: str
    score: float
    title: str = ""
    kind: str = ""
    scope: str = ""
    tags: tuple[str, ...] = ()
    updated: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    recorded_at: str = ""
    happened_at: str | None = None
    valid_from: str | None = None
    valid_to: str | None = None
    superseded_by: str | None = None

    @property
    def curated(self) -> bool:
        """Whether the hit is a curated line (:mod:`agent_memory.model.curated`): its priority is :attr:`priority`."""
        return self.kind == CURATED_KIND

    @property
    def priority(self) -> int | None:
        """A curated line's priority (1-10); None for other records."""
        return priority_of(self.metadata) if self.curated else None

    @property
    def dates(self) -> str:
        """When it was said and when it was true, in words (``on 2023-05-07; true until 2023-06-01``)."""
        return dates_text(self.recorded_at, self.happened_at, self.valid_from, self.valid_to)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tags"] = list(self.tags)
        if self.curated:
            data["curated"], data["priority"] = True, self.priority
        return data


@dataclass(slots=True)
class SearchResult:
    """The one search result shape: ranked ``hits`` (scores in (0, 1]: 1 = the best hit of a lexical search; a hybrid
    or dense search's best hit shows the query's match quality, :mod:`agent_memory.search.floor`) and an optional trace."""

    hits: list[SearchHit]
    trace: list[dict[str, Any]] | None = None

    def __iter__(self) -> Any:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    def __getitem__(self, i: int) -> SearchHit:
        return self.hits[i]

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"hits": [h.to_dict() for h in self.hits]}
        if self.trace is not None:
            data["trace"] = self.trace
        return data


def readable_score(raw: float, top: float) -> float:
    """A hit's score in (0, 1]: its share of the best hit's score, never below :data:`MIN_SCORE`.

    FTS5 floors the IDF of a term found in most records to almost nothing, so raw BM25 on a
    small store prints 0.000; relative to the best hit, the order is kept and the figure reads."""
    if top <= 0 or raw >= top:
        return 1.0
    return max(MIN_SCORE, round(raw / top, 4))
