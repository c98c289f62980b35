"""Batched writes of the files store: validate and redact a batch, then write it under one lock and one
index transaction, with one flush of the file system for the whole batch."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Literal

import agent_memory.backends.files.keyed as _keyed
import agent_memory.backends.files.lifecycle as _lifecycle
from agent_memory.errors import InvalidInputError
from agent_memory.model.drafts import MemoryDraft, RememberResult, explicit_fields, prepare_draft
from agent_memory.model.events import acting, current_acting

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.files.parts import StoreParts


def remember_many(
    store: StoreParts,
    drafts: Iterable[MemoryDraft],
    *,
    source: str,
    batch_size: int,
    on_error: Literal["raise", "skip"],
    progress: Callable[[int], None] | None,
    errors: list[tuple[int, str]] | None,
) -> list[RememberResult]:
    """:meth:`MemoryStore.remember_many`: drafts in batches of ``batch_size``, each batch all-or-nothing."""
    store.open()
    results: list[RememberResult] = []
    batch: list[MemoryDraft] = []
    position = 0

    def flush() -> None:
        nonlocal position
        if not batch:
            return
        prepared: list[_keyed.Prepared] = []
        for draft in batch:  # validate and redact the whole batch before writing any of it
            try:
                rec, redactions = prepare_draft(draft, source, store.default_scope)
                if _lifecycle.PROVENANCE in rec.metadata and source != "import":  # the store's to set
                    rec = rec.replace(metadata={k: v for k, v in rec.metadata.items() if k != _lifecycle.PROVENANCE})
                prepared.append((rec, redactions, draft.on_existing, explicit_fields(draft)))
            except InvalidInputError as exc:
                if on_error == "raise":
                    raise
                if errors is not None:
                    errors.append((position, str(exc)))
            position += 1
        single = len(prepared) == 1

        def write_batch() -> list[RememberResult]:
            done = []
            with store.lock.hold(), store.events.batch():  # one events write (and fsync) per batch
                store.index.refresh(periodic=False)
                with store.index.transaction() as conn:
                    for item in prepared:
                        with acting(session_id=item[0].session_id, user_id=item[0].user_id):  # the writer
                            done.append(_keyed.remember_locked(store, conn, item, store.durable and single))
                    if store.durable and len(prepared) > 1:
                        os.sync()  # one flush for the batch instead of an fsync per file
                    store.index.mark_synced(conn)
                store.write_memory_md()
            return done

        with acting(current_acting().actor or source):
            results.extend(store.index.healing(write_batch))  # a corrupt index is rebuilt, the batch retried
        if progress:
            progress(len(batch))
        batch.clear()

    for draft in drafts:
        batch.append(draft)
        if len(batch) >= batch_size:
            flush()
    flush()
    return results
