"""Export/import throughput and the byte-identical round trip on N synthetic records.

Usage: ``N=5000 .venv/bin/python benchmarks/bench_portable.py`` → one JSON line: records/s for export, for
import into an empty root, and the time of a re-run of the same import (which writes nothing).
"""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_memory.backends.files.store import MemoryStore  # noqa: E402
from agent_memory.model.drafts import MemoryDraft  # noqa: E402
from agent_memory.portable import export_records, import_file  # noqa: E402


def main() -> None:
    n = int(os.environ.get("N", "5000"))
    with tempfile.TemporaryDirectory() as tmp:
        src = MemoryStore(Path(tmp, "a"), durable=False)
        src.remember_many(
            [
                MemoryDraft(
                    f"memory number {i} about topic {i % 97} and more words",
                    tags=[f"t{i % 5}"],
                    user_id=f"u{i % 3}" if i % 2 else None,
                    metadata={"i": i},
                )
                for i in range(n)
            ],
            source="import",
        )
        dump = Path(tmp, "e.jsonl")
        t = time.perf_counter()
        export_records(src, dump)
        t_export = time.perf_counter() - t
        dst = MemoryStore(Path(tmp, "b"))
        t = time.perf_counter()
        first = import_file(dst, dump)
        t_import = time.perf_counter() - t
        t = time.perf_counter()
        again = import_file(dst, dump)
        t_rerun = time.perf_counter() - t
        buf = io.StringIO()
        export_records(dst, buf)
        print(
            json.dumps(
                {
                    "records": n,
                    "bytes": dump.stat().st_size,
                    "export_per_s": round(n / t_export),
                    "import_per_s": round(n / t_import),
                    "written": len(first.written),
                    "rerun_s": round(t_rerun, 2),
                    "rerun_written": len(again.written),
                    "byte_identical": buf.getvalue() == dump.read_text(encoding="utf-8"),
                }
            )
        )


if __name__ == "__main__":
    main()
