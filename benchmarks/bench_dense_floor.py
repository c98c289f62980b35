"""Where dense-only hits turn into noise: the cosine of true evidence vs noise queries and foreign pairs, per embedder.

Runs the product's hybrid search (``MemoryStore.search``, limit 50) on the LoCoMo dev half and its reworded
questions, over the roots ``agent-memory eval locomo FILE --root DIR --search hybrid --embedder local`` leaves
(one per conversation, vectors embedded), and reads each candidate's signals with a recording stage appended to
the default pipeline (the floor itself off). Reports, per question set:

- ``evidence``: the cosine of every evidence turn among the candidates, split by whether lexical search found it
  too, and the same for the evidence the top 50 holds as a dense-only hit (what a floor could drop);
- ``best``: each query's best dense cosine (its nearest record);
- ``noise``: the best cosine of queries that match nothing (gibberish, off-topic questions) over each conversation;
- ``foreign``: each question's best cosine over *another* conversation's store (a real question, no evidence there);
- ``fixture``: the hand-written paraphrase pairs' recall@1/5/10 without and with the floor.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_dense_floor.py --roots DIR [--embedder local] [--json]

``--embedder hashing`` measures a bag-of-words hashing embedder (the kind tests use) on its own vectors: the roots'
records are embedded with it first into a temporary copy of each root.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_memory.backends.files.hybrid import hybrid_search  # noqa: E402
from agent_memory.backends.files.store import MemoryStore  # noqa: E402
from agent_memory.embeddings import CallableEmbedder, make_embedder  # noqa: E402
from agent_memory.eval.locomo import canonical_turn_id, load_samples, normalize_evidence  # noqa: E402
from agent_memory.search.fusion import Candidate, QueryContext, default_pipeline  # noqa: E402

DEV = Path(os.environ.get("LOCOMO_DEV", "/work/shared/eval/locomo/locomo-dev.json"))
PARA = Path(os.environ.get("LOCOMO_PARA", "/work/shared/eval/locomo/locomo-dev-paraphrase.json"))
FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "paraphrase_pairs.json"
LIMIT = 50
NOISE = [
    "zzzz qqq xylophone",
    "asdf jkl qwerty",
    "xkcd vvvv 12345",
    "lorem ipsum dolor sit amet",
    "qwpoeiru zxmcnv",
    "flibbertigibbet quux",
    "the",
    "hmm",
    "????",
    "kubernetes pod eviction threshold",
    "how do I compile a linux kernel module",
    "quantum chromodynamics lattice gauge theory",
    "what is the capital of burkina faso",
    "sql server deadlock graph analysis",
    "mitochondrial dna haplogroup frequencies",
    "tax depreciation schedule for rental property",
    "rust borrow checker lifetime error",
    "postgres vacuum freeze wraparound",
    "what is the boiling point of tungsten",
    "cron expression for every third tuesday",
]


class Record:
    """A last stage that keeps every candidate's signals and the query's cosine statistics."""

    name = "record"

    def __init__(self) -> None:
        self.cands: list[Candidate] = []
        self.ctx: QueryContext | None = None

    def params(self) -> dict[str, Any]:
        return {}

    def apply(self, cands: list[Candidate], ctx: QueryContext) -> list[Candidate]:
        self.cands = sorted(cands, key=lambda c: -c.score)
        self.ctx = ctx
        return cands


def hashing_embedder(dim: int = 256) -> CallableEmbedder:
    """Words hashed into ``dim`` buckets, unit length: a bag-of-words stand-in (the tests' kind of embedder)."""

    def vectors(texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                w = "".join(ch for ch in w if ch.isalnum())
                if w:
                    out[i, zlib.crc32(w.encode()) % dim] += 1.0
            n = float(np.linalg.norm(out[i]))
            out[i] = out[i] / n if n else out[i]
        return out

    return CallableEmbedder(vectors, name=f"bench-hashing-{dim}", dim=dim)


def search(store: MemoryStore, query: str, floor: Any = None) -> tuple[list[Candidate], QueryContext | None, list[str]]:
    """The candidates (signals), context and final ids of the product's hybrid search (``floor``: its
    ``dense_floor``; None: off, so every candidate is seen)."""
    rec = Record()
    base = default_pipeline()
    pipe = type(base)(base.fuse, [*base.stages, rec], base.show)
    meaning = store.meaning
    assert meaning is not None
    hits = hybrid_search(
        store, meaning.vectors, meaning.embedder, query, limit=LIMIT, pipeline=pipe, lexical_search=store._lexical_search, dense_floor=floor
    )
    return rec.cands, rec.ctx, [h.id for h in hits.hits]


def pct(xs: Sequence[float], qs: Sequence[float] = (0, 0.01, 0.05, 0.1, 0.5, 0.9, 0.99, 1)) -> dict[str, float]:
    if not xs:
        return {"n": 0}
    arr = np.asarray(xs, dtype=np.float64)
    return {"n": len(xs), **{f"p{round(q * 100)}": round(float(np.quantile(arr, q)), 4) for q in qs}}


def measure(roots: Path, embedder: Any) -> dict[str, Any]:
    samples = {"orig": load_samples(DEV), "para": load_samples(PARA)}
    names = [str(s.get("sample_id")) for s in samples["orig"]]
    stores: dict[str, MemoryStore] = {}
    turn_of: dict[str, dict[str, str]] = {}
    for name in names:
        store = MemoryStore(roots / name, durable=False, rescan_interval=None, embedder=embedder)
        store.embed()
        stores[name] = store
        turn_of[name] = {}
        for rid, meta in store.index.guarded(lambda c: c.execute("SELECT id, metadata FROM records").fetchall()):
            tid = canonical_turn_id(json.loads(meta or "{}").get("turn_id"))
            if tid:
                turn_of[name].setdefault(rid, tid)
    out: dict[str, Any] = {"embedder": getattr(embedder, "name", str(embedder))}
    for which, sset in samples.items():
        ev_lex, ev_dense, ev_kept_dense, best, foreign, z_kept, z_best = [], [], [], [], [], [], []
        unmatched = 0
        for i, sample in enumerate(sset):
            name = str(sample.get("sample_id"))
            other = names[(i + 1) % len(names)]
            for q in sample.get("qa") or []:
                text = str(q.get("question") or "")
                evidence = set(normalize_evidence(q.get("evidence")))
                cands, ctx, top = search(stores[name], text)
                unmatched += not any(c.lexical is not None for c in cands)
                dense = [c.dense for c in cands if c.dense is not None]
                if dense:
                    best.append(max(dense))
                    if ctx and ctx.dense_std:
                        z_best.append((max(dense) - (ctx.dense_mean or 0.0)) / ctx.dense_std)
                topset = set(top)
                for c in cands:
                    if turn_of[name].get(c.id) not in evidence or c.dense is None:
                        continue
                    (ev_lex if c.lexical is not None else ev_dense).append(c.dense)
                    if c.lexical is None and c.id in topset:
                        ev_kept_dense.append(c.dense)
                        if ctx and ctx.dense_std:
                            z_kept.append((c.dense - (ctx.dense_mean or 0.0)) / ctx.dense_std)
                fc, _, _ = search(stores[other], text)
                fd = [c.dense for c in fc if c.dense is not None and c.lexical is None]
                if fd:
                    foreign.append(max(fd))
        out[which] = {
            "evidence_found_lexically_too": pct(ev_lex),
            "evidence_dense_only": pct(ev_dense),
            "evidence_dense_only_in_top50": pct(ev_kept_dense),
            "evidence_dense_only_in_top50_z": pct(z_kept),
            "best_cosine": pct(best),
            "best_z": pct(z_best),
            "foreign_best_dense_only": pct(foreign),
            "questions_lexical_search_found_nothing_for": unmatched,
        }
    noise_best, noise_z, noise_unmatched, answered = [], [], [], 0
    for store in stores.values():
        for text in NOISE:
            cands, ctx, _ = search(store, text)
            answered += bool(search(store, text, "auto")[2])  # with the product's floor
            d = [c.dense for c in cands if c.dense is not None and c.lexical is None]
            if d:
                noise_best.append(max(d))
                if not any(c.lexical is not None for c in cands):
                    noise_unmatched.append(max(d))
                if ctx and ctx.dense_std:
                    noise_z.append((max(d) - (ctx.dense_mean or 0.0)) / ctx.dense_std)
    out["noise_best_dense_only"] = pct(noise_best)
    out["noise_best_z"] = pct(noise_z)
    out["noise_best_when_lexical_found_nothing"] = pct(noise_unmatched)
    out["noise_searches_answered_with_the_floor"] = f"{answered} of {len(stores) * len(NOISE)}"
    out["noise_by_query"] = {t: round(max(c.dense for c in search(stores[names[0]], t)[0] if c.dense is not None), 4) for t in NOISE}
    for store in stores.values():
        store.close()
    return out


def fixture(embedder: Any) -> dict[str, Any]:
    """The hand-written paraphrase pairs (a store of their facts alone): recall@1/5/10 of the product's hybrid search
    without and with the floor."""
    from agent_memory.model.drafts import MemoryDraft

    pairs = json.loads(FIXTURE.read_text(encoding="utf-8"))["pairs"]
    got: dict[str, dict[int, int]] = {"off": {1: 0, 5: 0, 10: 0}, "auto": {1: 0, 5: 0, 10: 0}}
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore(Path(tmp) / "m", durable=False, rescan_interval=None, embedder=embedder)
        ids = [r.id for r in store.remember_many([MemoryDraft(content=p["fact"]) for p in pairs], source="import")]
        store.embed()
        for i, p in enumerate(pairs):
            for name, floor in (("off", None), ("auto", "auto")):
                top = search(store, p["question"], floor)[2]
                for k in got[name]:
                    got[name][k] += ids[i] in top[:k]
        store.close()
    return {name: {f"R@{k}": round(v / len(pairs), 3) for k, v in per.items()} for name, per in got.items()} | {"n": len(pairs)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--roots", type=Path, required=True)
    ap.add_argument("--embedder", default="local", help="local (MiniLM) or hashing")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.embedder == "hashing":
        with tempfile.TemporaryDirectory() as tmp:
            for root in args.roots.iterdir():
                shutil.copytree(root, Path(tmp) / root.name, ignore=shutil.ignore_patterns("vectors.db*"))
            report = measure(Path(tmp), hashing_embedder())
        report["fixture"] = fixture(hashing_embedder())
    else:
        report = measure(args.roots, make_embedder(args.embedder))
        report["fixture"] = fixture(make_embedder(args.embedder))
    print(json.dumps(report, indent=None if args.json else 1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
