"""Which embedder and mode a search uses: the one place that decides, for every backend (docs/meaning.md).

Each backend answers "which embedder made my vectors" (``VectorsBackend.recorded_embedder``: files from
``vectors.db``'s ``embedders`` table, PostgreSQL from its ``embedders`` table); :func:`choose` turns that answer and
the caller's ``mode`` / embedder into what to attach and how to search. The provider and the CLI both ask it.

- ``mode`` lexical: lexical, nothing attached.
- No mode, no embedder: a store with vectors is searched hybrid with the embedder recorded with them (``default``:
  if that embedder cannot run here — a missing extra — the search falls back to lexical with a one-line notice);
  vectors whose embedder cannot be rebuilt from a name (a user function) mean lexical, with a notice.
- An explicit embedder or mode: that embedder (else ``local``), that mode (else hybrid); a missing extra fails
  (:class:`~agent_memory.errors.MissingExtraError`). ``dense`` on a store with no vectors fails with what to run
  (:meth:`Choice.check`); ``hybrid`` there searches lexically with the same hint as a notice (:meth:`Choice.bare`).
- After attaching, :func:`mismatch` says when the attached embedder is not the one that made the vectors: a search
  never ranks by another model's vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_memory.backends.base import RecordedEmbedder
from agent_memory.errors import InvalidInputError

__all__ = ["Choice", "choose", "mismatch"]

EMBED_HINT = "run `agent-memory embed` first"


@dataclass(frozen=True)
class Choice:
    """``spec``: the embedder to attach (None: none, lexical); ``mode``: the search mode to pass (None: the
    backend's default, lexical without an embedder); ``notice``: one line for the user when vectors go unused;
    ``default``: chosen because vectors exist, not asked for (a missing extra then means lexical, said once);
    ``empty``: dense or hybrid search asked of a store with no vectors (:meth:`check` raises for dense, after the
    embedder's extra is checked: what to install comes before what to run; :meth:`bare` gives hybrid's notice)."""

    spec: str | None
    mode: str | None
    notice: str | None = None
    default: bool = False
    empty: bool = False

    def check(self) -> None:
        """Raise :class:`InvalidInputError` when this search has nothing to rank by (dense, no vectors)."""
        if self.empty and self.mode == "dense":
            raise InvalidInputError(f"dense search needs vectors and this root has none: {EMBED_HINT}")

    def bare(self) -> str | None:
        """The notice when this hybrid search has no vectors to fuse (then it is lexical, and reads no vector cache)."""
        return f"hybrid search needs vectors and this root has none: {EMBED_HINT}; searching lexically" if self.empty else None


def choose(found: RecordedEmbedder | None, mode: str | None, embedder: str | None) -> Choice:
    """What a search with ``mode`` and ``embedder`` (None: not given) uses on a store whose vectors ``found`` says."""
    if mode == "lexical":
        return Choice(None, None if embedder is None else "lexical")
    if mode is None and embedder is None:
        if found is None:
            return Choice(None, None)
        if found.spec is None:
            return Choice(
                None,
                None,
                f"this root's vectors were made by {found.model}, which cannot be rebuilt from its name; searching lexically (pass --embedder)",
                default=True,
            )
        return Choice(found.spec, "hybrid", default=True)
    return Choice(embedder or "local", mode or "hybrid", empty=found is None)


def mismatch(found: RecordedEmbedder | None, model: str) -> str | None:
    """The notice when embedder ``model`` did not make the stored vectors (search lexically then), else None."""
    if found is None or found.model == model:
        return None
    return f"this root's vectors were made by {found.model}, not {model}; searching lexically (to re-embed the root with it: agent-memory embed --embedder <that same embedder>)"
