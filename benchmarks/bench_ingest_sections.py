"""Where the CPU of ``remember_many`` goes, per record and per section, in one process (issue 32).

Wraps the write path's steps (``prepare_draft``, ``allocate_id``, the record file, the index rows, the event,
``MEMORY.md``) with ``time.process_time`` counters, writes ``--records`` drafts of the bench corpus into a new root
of 300, and prints one JSON line: CPU µs per record by section (sections nest: ``write`` holds the file and the
index rows), the draft worker's CPU per record, records/s wall and the load. Run it once per tree, alternating::

    python benchmarks/bench_ingest_sections.py /work/main 2000
    AGENT_MEMORY_DRAFT_WORKER=1 python benchmarks/bench_ingest_sections.py /tmp/w-ingest2 2000
"""

from __future__ import annotations

import functools
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any


def main(argv: list[str]) -> int:
    tree = os.path.abspath(argv[0])
    n = int(argv[1]) if len(argv) > 1 else 2000
    seed = int(argv[2]) if len(argv) > 2 else 7
    sys.path.insert(0, tree)
    import agent_memory

    sys.path.insert(0, os.path.join(tree, "benchmarks"))
    assert agent_memory.__file__.startswith(tree), agent_memory.__file__
    from _corpus import Corpus

    from agent_memory.backends.files import batch, keyed, lifecycle, record_files, store
    from agent_memory.backends.files import index as index_mod
    from agent_memory.backends.files.events import EventLog

    cpu: dict[str, float] = {}

    def wrap(owner: Any, name: str, label: str) -> None:
        real: Callable[..., Any] = getattr(owner, name)

        @functools.wraps(real)
        def timed(*a: Any, **k: Any) -> Any:
            c = time.process_time()
            try:
                return real(*a, **k)
            finally:
                cpu[label] = cpu.get(label, 0.0) + time.process_time() - c

        setattr(owner, name, timed)

    try:
        from agent_memory.backends.files import prepare_worker

        wrap(prepare_worker, "prepare_draft", "prepare_draft")
    except ImportError:  # a tree before the draft worker
        wrap(batch, "prepare_draft", "prepare_draft")
    if hasattr(keyed, "allocate_id"):  # before 2026-11-28: the id (and its name probe), then the file
        wrap(keyed, "allocate_id", "allocate_id")
        wrap(keyed, "write", "write")
    else:  # the id minted and the file created in one (a taken name: minted again)
        wrap(keyed, "write_new", "write")
    wrap(record_files, "new_id", "new_id")
    wrap(keyed, "find_duplicate", "find_duplicate")
    wrap(record_files, "atomic_write", "atomic_write")
    if hasattr(record_files, "create_new"):
        wrap(record_files, "create_new", "atomic_write")  # the record file, however it is made
    wrap(index_mod.Index, "upsert", "index_upsert")
    wrap(EventLog, "append", "event_append")
    wrap(lifecycle, "emit", "emit")
    wrap(store.MemoryStore, "write_memory_md", "memory_md")
    wrap(os, "sync", "os_sync")  # once per batch: its CPU depends on what the whole machine has dirty

    root = os.path.join(tempfile.mkdtemp(prefix="bench-ingest-sections-"), "root")
    st = store.MemoryStore(root, rescan_interval=None)
    st.open()
    st.remember_many(list(Corpus(seed=5).drafts(300)), source="import")
    cpu.clear()
    drafts = list(Corpus(seed=seed).drafts(n))
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    c, t = time.process_time(), time.perf_counter()
    st.remember_many(drafts, source="import", batch_size=500)
    total, wall = time.process_time() - c, time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    worker = after.ru_utime + after.ru_stime - kids.ru_utime - kids.ru_stime
    out: dict[str, Any] = {
        "tree": tree,
        "draft_worker": os.environ.get("AGENT_MEMORY_DRAFT_WORKER", "auto"),
        "total_us": round(total / n * 1e6),
        "worker_us": round(worker / n * 1e6),
        "per_s_wall": round(n / wall),
        "load": round(os.getloadavg()[0], 1),
    }
    out.update({k: round(v / n * 1e6) for k, v in sorted(cpu.items())})
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
