"""``remember``'s contradiction check: which visible records a new text contradicts, on either kind of target."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_memory.cli._target import BackendTarget, StoreTarget

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.consolidate.contradict import Contradiction

__all__ = ["AUTO", "contradictions"]

#: ``--supersede`` given without an id: supersede the record the new text contradicts.
AUTO = "\0contradicted"


def contradictions(
    target: StoreTarget | BackendTarget, text: str, *, key: str | None, session_id: str | None, user_id: str | None
) -> list["Contradiction"]:
    """The records ``text`` contradicts that the caller sees (best first); a failing check is no contradiction."""
    from agent_memory.cli._target import caller_of
    from agent_memory.consolidate.contradict import backend_contradictions, find_contradictions
    from agent_memory.model.records import MemoryRecord
    from agent_memory.redaction.api import redact

    key = redact(key).text if isinstance(key, str) and key else key  # the key search carries no secret either
    try:
        if isinstance(target, BackendTarget):
            found: list[Contradiction] = target._run(backend_contradictions(target.backend, text, caller_of(session_id, user_id), key=key))
            return found
        store = target.store

        async def search(query: str, n: int) -> list[Any]:
            hits = list(store.search(query, limit=n, session_id=session_id, user_id=user_id).hits)
            if key:
                hits += list(store.search(key, limit=2, session_id=session_id, user_id=user_id).hits)
            return hits

        async def get(record_id: str) -> MemoryRecord:
            return store.get(record_id, session_id=session_id, user_id=user_id)

        import asyncio  # here: a cold search never imports asyncio (tests/test_store_imports.py)

        return asyncio.run(find_contradictions(text, search=search, get=get, key=key))
    except Exception:  # the check is advice: the write itself must not fail for it
        return []
