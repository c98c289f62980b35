"""Meaning: retrieval quality of lexical, dense and hybrid variants, and what dense retrieval costs.

Quality (``--quality``): LoCoMo dev half and its reworded questions (one record per dialog turn,
question as query, evidence recall@5/10/25), plus the hand-written paraphrase fixture
(``tests/fixtures/paraphrase_pairs.json``, recall@1/5/10). Every variant runs through the real
modules: ``MemoryStore`` for lexical, ``VectorCache`` + ``LocalEmbedder`` for dense, ``fusion`` for the
fusions. Variants: lexical, dense, RRF(k=60), convex a=0.5, z-score (fixed a=0.6), a hard gate on lexical
strength at 0.15, and the default (z-score, lexical weight ramping 0 → 0.7 as lexical strength goes 0.05 → 0.25).

Cost (``--cost``): at N synthetic records (default 100k): ingest rate with embedding deferred, local
embedding throughput (records/s, measured on a sample), vectors' disk (``vectors.db``) and memory size,
lexical p95 vs hybrid p95 (query embedding excluded, reported apart). The vectors at 100k are
random unit vectors stored under the real content hashes (embedding 100k records with MiniLM on a
shared 2-core machine takes longer than the benchmark should); sizes and search cost do not depend
on the values.

    .venv/bin/python benchmarks/bench_meaning.py --quality [--dev PATH --para PATH] [--json]
    .venv/bin/python benchmarks/bench_meaning.py --cost [--size 100000] [--queries 200] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _corpus import Corpus, percentile  # noqa: E402

from agent_memory.backends.files.hybrid import (
    hybrid_search,  # noqa: E402
    index_strength,  # noqa: E402
)
from agent_memory.backends.files.store import MemoryDraft, MemoryStore  # noqa: E402
from agent_memory.backends.files.vectors import VectorCache, live_items, visible_hashes  # noqa: E402
from agent_memory.embeddings import LocalEmbedder  # noqa: E402
from agent_memory.eval.locomo import (  # noqa: E402
    canonical_turn_id,
    evidence_recall,
    load_samples,
    normalize_evidence,
    sample_sessions,
)
from agent_memory.portable.transcripts import transcript_drafts  # noqa: E402
from agent_memory.search.fusion import Fuse, Pipeline, QueryContext  # noqa: E402
from agent_memory.search.types import SearchRequest  # noqa: E402

DEV = Path(os.environ.get("LOCOMO_DEV", "/work/shared/eval/locomo/locomo-dev.json"))
PARA = Path(os.environ.get("LOCOMO_PARA", "/work/shared/eval/locomo/locomo-dev-paraphrase.json"))
FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "paraphrase_pairs.json"
POOL = int(os.environ.get("MEANING_POOL", "100"))
LEX_POOL = int(os.environ.get("MEANING_LEX_POOL", "100"))

Ranker = Callable[[list[tuple[str, float]], list[tuple[str, float]], QueryContext, Callable[[Any], dict[str, float]]], list[str]]


def variants() -> dict[str, Ranker]:
    def pipe(fuse: Fuse) -> Ranker:
        def rank(
            lex: list[tuple[str, float]], dense: list[tuple[str, float]], ctx: QueryContext, cosines: Callable[[Any], dict[str, float]]
        ) -> list[str]:
            return [c.id for c in Pipeline(replace(fuse, dense_scores=cosines)).run(lex, dense, ctx)]

        return rank

    return {
        "lexical": lambda lex, dense, ctx, cos: [r for r, _ in lex],
        "dense": lambda lex, dense, ctx, cos: [r for r, _ in dense],
        "rrf60": pipe(Fuse(method="rrf", k=60)),
        "convex_a0.5": pipe(Fuse(method="convex", weight=0.5, weak_weight=0.5)),
        "zscore_a0.6": pipe(Fuse(weight=0.6, weak_weight=0.6)),
        "gate_0.15": pipe(Fuse(weak_weight=0.0, ramp_from=0.15, confident_at=0.15)),
        "default": pipe(Fuse()),
    }


def _query(
    store: MemoryStore, cache: VectorCache, emb: LocalEmbedder, allowed: dict[str, str], text: str, qvec: Any
) -> tuple[list[tuple[str, float]], list[tuple[str, float]], QueryContext, Callable[[Any], dict[str, float]]]:
    """Lexical and dense candidates and the query context, exactly as ``hybrid_search`` builds them."""
    lex = [(row["id"], raw) for raw, row in store.engine.ranked(store.index, SearchRequest(query=text, limit=LEX_POOL))]  # type: ignore[attr-defined]
    stats: dict[str, float] = {}
    dense = cache.search(emb.name, qvec, allowed, limit=POOL, stats=stats)
    conf = index_strength(store.index, store.engine, text, lex[0][1]) if lex else None  # type: ignore[arg-type]
    ctx = QueryContext(query=text, confidence=conf, dense_mean=stats.get("mean"), dense_std=stats.get("std"))
    return lex, dense, ctx, lambda ids: cache.scores(emb.name, qvec, {i: allowed[i] for i in ids if i in allowed})


def _mean(xs: Sequence[float]) -> float:
    return round(float(statistics.fmean(xs)), 3) if xs else 0.0


def quality_locomo(dev: Path, para: Path, emb: LocalEmbedder, ks: Sequence[int] = (5, 10, 25)) -> dict[str, Any]:
    ranks = variants()
    scores: dict[str, dict[str, dict[int, list[float]]]] = {w: {v: {k: [] for k in ks} for v in ranks} for w in ("orig", "para")}
    embed_s = 0.0
    for s_dev, s_para in zip(load_samples(dev), load_samples(para), strict=True):
        drafts = transcript_drafts(sample_sessions(s_dev), thread=str(s_dev.get("sample_id")))
        with tempfile.TemporaryDirectory() as tmp:
            store = MemoryStore(Path(tmp) / "m", durable=False, rescan_interval=None)
            results = store.remember_many(drafts, source="import")
            turn_of: dict[str, str] = {}
            for d, r in zip(drafts, results, strict=True):
                t = canonical_turn_id((d.metadata or {}).get("turn_id"))
                if t:
                    turn_of.setdefault(r.id, t)
            cache = VectorCache.for_root(store.root)
            t0 = time.perf_counter()
            cache.backfill(live_items(store.index), emb)
            embed_s += time.perf_counter() - t0
            allowed = visible_hashes(store.index)
            for which, sample in (("orig", s_dev), ("para", s_para)):
                qa = [q for q in sample.get("qa") or [] if isinstance(q, dict)]
                qv = emb.embed([str(q.get("question") or "") for q in qa])
                for i, q in enumerate(qa):
                    lex, dense, ctx, cosines = _query(store, cache, emb, allowed, str(q.get("question") or ""), qv[i])
                    ev = normalize_evidence(q.get("evidence"))
                    for name, rank in ranks.items():
                        turns = [turn_of.get(r) for r in rank(lex, dense, ctx, cosines)]
                        for k in ks:
                            scores[which][name][k].append(evidence_recall(ev, turns[:k]))
            cache.close()
            store.close()
    out: dict[str, Any] = {"embedding_seconds": round(embed_s, 1)}
    for which, per in scores.items():
        out[which] = {name: {f"R@{k}": _mean(v[k]) for k in ks} | {"n": len(v[ks[0]])} for name, v in per.items()}
    return out


def quality_fixture(emb: LocalEmbedder) -> dict[str, Any]:
    pairs = json.loads(FIXTURE.read_text(encoding="utf-8"))["pairs"]
    ranks = variants()
    got: dict[str, dict[int, list[float]]] = {v: {k: [] for k in (1, 5, 10)} for v in ranks}
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore(Path(tmp) / "m", durable=False, rescan_interval=None)
        ids = [r.id for r in store.remember_many([MemoryDraft(content=p["fact"]) for p in pairs], source="import")]
        cache = VectorCache.for_root(store.root)
        cache.backfill(live_items(store.index), emb)
        allowed = visible_hashes(store.index)
        qv = emb.embed([p["question"] for p in pairs])
        for i, p in enumerate(pairs):
            lex, dense, ctx, cosines = _query(store, cache, emb, allowed, p["question"], qv[i])
            for name, rank in ranks.items():
                ranked = rank(lex, dense, ctx, cosines)
                for k in (1, 5, 10):
                    got[name][k].append(1.0 if ids[i] in ranked[:k] else 0.0)
        cache.close()
        store.close()
    return {name: {f"R@{k}": _mean(v[k]) for k in v} for name, v in got.items()} | {"n": len(pairs)}


def _p(samples: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(samples, 0.5), 3), "p95": round(percentile(samples, 0.95), 3)}


def deferred_ingest(tmp: Path, drafts: list[MemoryDraft], rounds: int = 3) -> dict[str, Any]:
    """records/s of ``MemoryProvider.remember_many`` without and with an embedder attached (alternating, same run).

    With an embedder the provider kicks the background catch-up after the write; the write itself must not
    wait for it. The embedder here is a cheap random one, so what is measured is the write path, not a model
    competing for the CPU (a real model's throughput is ``embedding_records_per_s``)."""
    from agent_memory.embeddings import CallableEmbedder
    from agent_memory.provider import MemoryProvider

    rng = np.random.default_rng(5)
    emb = CallableEmbedder(lambda texts: rng.normal(size=(len(texts), 384)).astype(np.float32), name="bench-ingest")
    rates: dict[str, list[float]] = {"without": [], "with": []}
    for r in range(rounds):
        for name in ("without", "with") if r % 2 == 0 else ("with", "without"):
            provider = MemoryProvider(
                tmp / f"ingest-{name}-{r}", durable=False, rescan_interval=None, **({"embedder": emb} if name == "with" else {})
            )
            t0 = time.perf_counter()
            asyncio.run(provider.remember_many(drafts, source="import"))
            rates[name].append(len(drafts) / (time.perf_counter() - t0))
            provider.close()
    med = {k: statistics.median(v) for k, v in rates.items()}
    return {
        "records": len(drafts),
        "rounds": rounds,
        "without_records_per_s": round(med["without"]),
        "with_records_per_s": round(med["with"]),
        "ratio_with_over_without": round(med["with"] / med["without"], 3),
    }


def cost(size: int, queries_n: int, emb: LocalEmbedder | None, sample: int = 2000) -> dict[str, Any]:
    corpus = Corpus(seed=3)
    out: dict[str, Any] = {"records": size}
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore(Path(tmp) / "m", durable=False, rescan_interval=None)
        drafts = list(corpus.drafts(size))
        t0 = time.perf_counter()
        store.remember_many(drafts, source="import", batch_size=5000)
        out["ingest_records_per_s_embedding_deferred"] = round(size / (time.perf_counter() - t0))
        out["ingest_with_vs_without_embedder"] = deferred_ingest(Path(tmp), drafts[: min(size, 10_000)])
        items = list(live_items(store.index))
        if emb is not None:
            emb.embed(["warm up"])
            texts = [t for _, t in items[:sample]]
            t0 = time.perf_counter()
            emb.embed(texts)
            out["embedding_records_per_s"] = round(len(texts) / (time.perf_counter() - t0), 1)
            out["embedding_sample"] = len(texts)
        rng = np.random.default_rng(0)
        mat = rng.normal(size=(len(items), 384)).astype(np.float32)
        mat /= np.linalg.norm(mat, axis=1, keepdims=True)
        cache = VectorCache.for_root(store.root)
        for i in range(0, len(items), 10_000):
            cache.put("bench-random", [h for h, _ in items[i : i + 10_000]], mat[i : i + 10_000])
        cache.close()
        db = store.root / "vectors.db"
        out["vectors_disk_mb"] = round(sum(p.stat().st_size for p in db.parent.glob("vectors.db*")) / 1e6, 1)
        known = [d.content for d in drafts[:200]]
        queries = corpus.queries(queries_n, known)
        fake = type("Fixed", (), {"name": "bench-random", "dim": 384})()  # hybrid_search needs only .name when given a vector
        qv = rng.normal(size=(len(queries), 384)).astype(np.float32)
        cache = VectorCache.for_root(store.root)
        for q in queries[:3]:
            store.search(q)
        hybrid_search(store, cache, fake, queries[0], query_vector=qv[0])
        out["vectors_memory_mb"] = round(cache.memory_bytes("bench-random") / 1e6, 1)
        lex_ms, hyb_ms, vis_ms = [], [], []
        for i, q in enumerate(queries):
            t0 = time.perf_counter()
            store.search(q, limit=10)
            lex_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            hybrid_search(store, cache, fake, q, query_vector=qv[i], limit=10)
            hyb_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            visible_hashes(store.index, session_id="s1")
            vis_ms.append((time.perf_counter() - t0) * 1000)
        out["lexical_ms"] = _p(lex_ms)
        out["hybrid_ms_excluding_query_embedding"] = _p(hyb_ms)
        out["visible_map_ms"] = _p(vis_ms)
        out["hybrid_p95_over_lexical_p95"] = round(out["hybrid_ms_excluding_query_embedding"]["p95"] / out["lexical_ms"]["p95"], 2)
        if emb is not None:
            q_ms = []
            for q in queries[:50]:
                t0 = time.perf_counter()
                emb.embed([q])
                q_ms.append((time.perf_counter() - t0) * 1000)
            out["query_embedding_ms"] = _p(q_ms)
        cache.close()
        store.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quality", action="store_true")
    ap.add_argument("--cost", action="store_true")
    ap.add_argument("--dev", type=Path, default=DEV)
    ap.add_argument("--para", type=Path, default=PARA)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--no-model", action="store_true", help="cost only, without the local model")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    emb = None if args.no_model else LocalEmbedder()
    report: dict[str, Any] = {}
    if args.quality or not args.cost:
        assert emb is not None, "quality needs the local model"
        report["fixture"] = quality_fixture(emb)
        print(json.dumps({"fixture": report["fixture"]}), file=sys.stderr, flush=True)
        report["locomo_dev"] = quality_locomo(args.dev, args.para, emb)
    if args.cost:
        report["cost"] = cost(args.size, args.queries, emb)
    print(json.dumps(report, indent=None if args.json else 1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
