"""Batched writes of the files store: validate and redact a batch, then write it under one lock and one
index transaction, with one flush of the file system for the whole batch."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Literal

import agent_memory.backends.files.keyed as _keyed
import agent_memory.backends.files.prepare_worker as _worker
from agent_memory.errors import InvalidInputError
from agent_memory.model.drafts import MemoryDraft, RememberResult
from agent_memory.model.events import acting, current_acting

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.files.parts import StoreParts

#: During a write of many batches MEMORY.md is regenerated at most this often (seconds) and once at the end: a
#: million-record import need not rewrite it after each of its batches.
MEMORY_MD_EVERY = 1.0


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
    """:meth:`MemoryStore.remember_many`: drafts in batches of ``batch_size``, each batch all-or-nothing.

    A big input (:func:`agent_memory.backends.files.prepare_worker.wanted`) has each next batch prepared by a
    worker process on another core while this one writes the current batch; the results, errors and their
    positions are those of preparing every batch here, in order, just before it is written."""
    store.open()
    many = not isinstance(drafts, Sequence) or len(drafts) > batch_size  # more than one batch (or maybe)
    results: list[RememberResult] = []
    position = 0
    md_stale, md_at = False, time.monotonic()  # MEMORY.md behind the index since a batch; when it was last written
    worker = None
    if _worker.wanted(drafts, batch_size):
        try:
            worker = _worker.DraftWorker()
        except OSError:
            worker = None

    def prepared_of(batch: list[MemoryDraft], items: list[_worker.Item] | None) -> list[_keyed.Prepared]:
        """The batch's prepared records in order (prepared here unless ``items`` came from the worker); a bad draft
        raises or is skipped and recorded at its position."""
        nonlocal position
        prepared: list[_keyed.Prepared] = []
        for k, draft in enumerate(batch):  # validate and redact the whole batch before writing any of it
            try:
                item = items[k] if items is not None else _worker.prepare_item(draft, source, store.default_scope)
                if isinstance(item, InvalidInputError):
                    raise item
                prepared.append(item)
            except InvalidInputError as exc:
                if on_error == "raise":
                    raise
                if errors is not None:
                    errors.append((position, str(exc)))
            position += 1
        return prepared

    def write(batch: list[MemoryDraft], prepared: list[_keyed.Prepared]) -> None:
        single = len(prepared) == 1

        def write_batch() -> list[RememberResult]:
            nonlocal md_stale, md_at
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
                md_stale = True
                if not many or time.monotonic() - md_at >= MEMORY_MD_EVERY:
                    store.write_memory_md()
                    md_stale, md_at = False, time.monotonic()
            return done

        with acting(current_acting().actor or source):
            results.extend(store.index.healing(write_batch))  # a corrupt index is rebuilt, the batch retried
        if progress:
            progress(len(batch))

    def batches() -> Iterator[list[MemoryDraft]]:
        batch: list[MemoryDraft] = []
        for draft in drafts:
            batch.append(draft)
            if len(batch) >= batch_size:
                yield batch
                batch = []
        if batch:
            yield batch

    def write_all() -> None:
        chunks = batches()
        current = next(chunks, None)
        items: list[_worker.Item] | None = None  # the current batch as the worker prepared it
        while current is not None:
            prepared = prepared_of(current, items)
            if worker is None:  # an iterator is read on only once its batch is written (it may watch the store)
                write(current, prepared)
                current, items = next(chunks, None), None
                continue
            following = next(chunks, None)  # a sequence: reading ahead changes nothing
            sent = following is not None and worker.submit(following, source, store.default_scope)
            write(current, prepared)  # meanwhile the worker prepares the following batch
            items = worker.result(len(following)) if sent and following is not None else None
            current = following

    def refresh_memory_md() -> None:
        with store.lock.hold():
            store.write_memory_md()

    try:
        with store.index.bulk() if many else contextlib.nullcontext():
            write_all()
    except BaseException:
        if md_stale:  # the batches written before a failure or an interrupt are listed; their error is what is raised
            with contextlib.suppress(Exception):
                refresh_memory_md()
        raise
    finally:
        if worker is not None:
            worker.close()
    if md_stale:
        refresh_memory_md()
    return results
