"""Where the writer of ``remember_many`` spends wall and CPU time, into an existing big root (issue 32).

Wraps the writer's steps (the record file, the index rows, the dedupe query, BEGIN/COMMIT, ``os.sync``, the events,
``MEMORY.md``, the wait for the draft worker, the end of the bulk index settings) with wall and ``process_time``
counters, writes ``N`` drafts of the bench corpus (seed ``SEED``) into ``ROOT`` (default: the 1M root of
``bench_ingest_1m.py``, which grows by ``N``) and prints the totals per step. CPU is this process's only (not the
draft worker's). Run it once per tree, alternating::

    AGENT_MEMORY_DRAFT_WORKER=1 python benchmarks/bench_ingest_phases.py /work/main 5000 11
    AGENT_MEMORY_DRAFT_WORKER=1 python benchmarks/bench_ingest_phases.py /tmp/w-ingestw 5000 12
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

TOTALS: dict[str, list[float]] = {}


def _add(name: str, wall: float, cpu: float) -> None:
    row = TOTALS.setdefault(name, [0.0, 0.0, 0.0])
    row[0] += wall
    row[1] += cpu
    row[2] += 1


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            _add(name, time.perf_counter() - wall, time.process_time() - cpu)

    return wrapped


def main(argv: list[str]) -> int:
    tree = os.path.abspath(argv[0])
    n = int(argv[1]) if len(argv) > 1 else 5000
    seed = int(argv[2]) if len(argv) > 2 else 11
    root = argv[3] if len(argv) > 3 else "/tmp/bench-1m-ingest/root"
    sys.path.insert(0, os.path.join(tree, "benchmarks"))
    sys.path.insert(0, tree)
    from _corpus import Corpus  # type: ignore[import-not-found]

    import agent_memory.backends.files.events as events
    import agent_memory.backends.files.index_sync as index_sync
    import agent_memory.backends.files.keyed as keyed
    import agent_memory.backends.files.prepare_worker as prepare_worker
    import agent_memory.backends.files.record_files as record_files
    from agent_memory.backends.files.index import Index
    from agent_memory.backends.files.store import MemoryStore

    os.sync = _timed("os.sync", os.sync)
    record_files.create_new = _timed("record file", record_files.create_new)
    Index.upsert = _timed("index rows", Index.upsert)  # type: ignore[method-assign]
    keyed.find_duplicate = _timed("dedupe query", keyed.find_duplicate)
    MemoryStore.write_memory_md = _timed("MEMORY.md", MemoryStore.write_memory_md)  # type: ignore[method-assign]
    events.EventLog.append = _timed("event (gate)", events.EventLog.append)  # type: ignore[method-assign]
    events.EventLog._write = _timed("events write", events.EventLog._write)  # type: ignore[method-assign]
    prepare_worker.DraftWorker.result = _timed("worker wait", prepare_worker.DraftWorker.result)  # type: ignore[method-assign]

    @contextlib.contextmanager
    def immediate(conn: Any) -> Iterator[Any]:
        wall, cpu = time.perf_counter(), time.process_time()
        conn.execute("BEGIN IMMEDIATE")
        _add("BEGIN", time.perf_counter() - wall, time.process_time() - cpu)
        try:
            yield conn
            wall, cpu = time.perf_counter(), time.process_time()
            conn.execute("COMMIT")
            _add("COMMIT", time.perf_counter() - wall, time.process_time() - cpu)
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    index_sync.immediate = immediate
    bulk = getattr(Index, "bulk", None)
    if bulk is not None:

        @contextlib.contextmanager
        def timed_bulk(self: Any) -> Iterator[None]:
            manager = bulk(self)
            manager.__enter__()
            try:
                yield
            finally:
                wall, cpu = time.perf_counter(), time.process_time()
                manager.__exit__(None, None, None)
                _add("bulk end (checkpoint)", time.perf_counter() - wall, time.process_time() - cpu)

        Index.bulk = timed_bulk  # type: ignore[method-assign]

    drafts = list(Corpus(seed=seed).drafts(n))
    store = MemoryStore(root, rescan_interval=None)
    store.open()
    wall, cpu = time.perf_counter(), time.process_time()
    store.remember_many(drafts, source="import", batch_size=500)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{tree}: {n} records, wall {wall:.2f} s, writer CPU {cpu:.2f} s ({cpu / n * 1e6:.0f} us/record), load {os.getloadavg()[0]:.1f}")
    for name, (w, c, calls) in sorted(TOTALS.items(), key=lambda item: -item[1][1]):
        print(f"  {name:22s} {int(calls):6d} calls  CPU {c / n * 1e6:5.0f} us/record  wall {w / n * 1e6:5.0f} us/record")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
