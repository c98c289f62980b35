"""Write a files-backend root of N synthetic records fast: rendered by the record renderer, written directly.

No ``remember`` (no redaction pass, no lock, no index): the files are what a long-lived store holds, and the
index is then built by whatever is being measured (``reindex``, or the first open). Deterministic for a seed.

    .venv/bin/python benchmarks/_genroot.py ROOT N [--seed S]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _corpus import Corpus  # noqa: E402

from agent_memory.model.records import MemoryRecord, Scope, content_hash, slugify  # noqa: E402


def records(corpus: Corpus, n: int) -> Iterator[MemoryRecord]:
    """``n`` records built from the corpus's drafts, with deterministic ids and timestamps."""
    for i, d in enumerate(corpus.drafts(n)):
        day = 1 + i % 28
        created = f"2026-{1 + (i // 28) % 12:02d}-{day:02d}T{(i // 336) % 24:02d}:{i % 60:02d}:00Z"
        title = d.title or "memory"
        rid = f"{created[:10]}-{slugify(title)}-{i:08x}"
        yield MemoryRecord(
            id=rid,
            content=d.content,
            title=title,
            scope=Scope(d.scope or "project"),
            session_id=d.session_id,
            user_id=d.user_id,
            tags=tuple(d.tags),
            source="import",
            created=created,
            updated=created,
            content_hash=content_hash(d.content),
        )


def write_root(root: Path, n: int, seed: int | None = None) -> tuple[Corpus, list[str]]:
    """Create ``root/records`` with ``n`` record files; returns the corpus and a sample of bodies (for queries)."""
    corpus = Corpus(seed=n if seed is None else seed)
    records_dir = root / "records"
    records_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(root, 0o700)
    sample: list[str] = []
    step = max(1, n // 500)
    for i, rec in enumerate(records(corpus, n)):
        fd = os.open(records_dir / f"{rec.id}.md", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, rec.render().encode("utf-8"))
        finally:
            os.close(fd)
        if i % step == 0:
            sample.append(rec.content)
    return corpus, sample


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("n", type=int)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    write_root(args.root, args.n, args.seed)


if __name__ == "__main__":
    main()
