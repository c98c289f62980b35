"""Links as a retrieval signal: a small multi-hop set written for it (LoCoMo holds no wiki-links).

Forty projects, each led by one of forty people; a project's record links its lead by title (``[[Name]]``), a
person's record says where they live and what they like, and never names the project. Three question sets:

* ``forward`` (two hops, along a link): "Which city does the lead of project X live in?" — the answer is the
  person's record, which shares no distinctive word with the question;
* ``backward`` (two hops, against a link): "Which project is led by the person who lives in C and likes H?" —
  the answer is the project's record, found through the person's backlink;
* ``direct`` (one hop, the control): "Where does N live and what do they like?" — the answer is a direct hit,
  which expansion must not push out.

Each question is searched with ``MemoryProvider.search`` as it stands and with ``expand_links=True``; the score is
recall@k of the answer record. Run: ``python benchmarks/bench_links.py [--json]`` (files backend, a temp root).

``--locomo FILE``: the LoCoMo test. Its data hold no wiki-links, so this makes some from the conversation's
structure — each turn's record links the previous and the next turn of its session (``[[id]]`` lines appended by a
keyed replace after the transcript import) — and scores evidence recall@k for three arms: ``as imported`` (no links:
the default figures), ``links, default search`` (the link lines change what is indexed) and ``links +
expand_links``. It tests whether following links to neighbouring turns finds more evidence, nothing more.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
from typing import Any

FIRST = ["Maria", "Tomas", "Aiko", "Kwame", "Elena", "Ravi", "Sofia", "Jonas", "Lena", "Omar"]
LAST = ["Lopez", "Berg", "Tanaka", "Mensah"]
CITIES = ["Porto", "Oslo", "Kyoto", "Accra", "Lyon", "Pune", "Turin", "Graz", "Leeds", "Tunis", "Quito", "Perth", "Cork", "Brno"]
HOBBIES = ["chess", "sailing", "pottery", "climbing", "cello", "birding", "rowing", "baking", "fencing", "origami", "surfing"]
PROJECTS = [
    "Falcon", "Heron", "Osprey", "Kestrel", "Magpie", "Plover", "Curlew", "Dunlin", "Egret", "Gannet",
    "Harrier", "Ibis", "Jacana", "Kite", "Lapwing", "Merlin", "Nightjar", "Oriole", "Petrel", "Quail",
    "Rail", "Shrike", "Tern", "Veery", "Wigeon", "Avocet", "Bittern", "Crake", "Dotterel", "Eider",
    "Fulmar", "Godwit", "Hobby", "Jay", "Knot", "Linnet", "Murre", "Noddy", "Ouzel", "Pipit",
]  # fmt: skip
KS = (1, 3, 5, 10)


def corpus(seed: int = 7) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """People and projects (records to write) and the questions, each with the title of its answer record."""
    rnd = random.Random(seed)
    names = rnd.sample([f"{f} {n}" for f in FIRST for n in LAST], len(PROJECTS))
    people = [{"title": n, "city": rnd.choice(CITIES), "hobby": rnd.choice(HOBBIES)} for n in names]
    records = [
        {"title": p["title"], "content": f"{p['title']} lives in {p['city']} and likes {p['hobby']} on weekends."} for p in people
    ] + [
        {"title": f"Project {proj}", "content": f"Project {proj} is led by [[{p['title']}]]; it ships in the spring."}
        for proj, p in zip(PROJECTS, people, strict=True)
    ]
    questions = []
    for proj, p in zip(PROJECTS, people, strict=True):
        questions.append({"set": "forward", "q": f"Which city does the lead of project {proj} live in?", "answer": p["title"]})
        questions.append(
            {
                "set": "backward",
                "q": f"Which project is led by the person who lives in {p['city']} and likes {p['hobby']}?",
                "answer": f"Project {proj}",
            }  # fmt: skip
        )
        questions.append({"set": "direct", "q": f"Where does {p['title']} live and what do they like?", "answer": p["title"]})
    return records, questions


async def run() -> dict[str, Any]:
    from agent_memory import MemoryProvider

    records, questions = corpus()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as root:
        memory = MemoryProvider(root, durable=False)
        ids = {}
        for r in records:
            ids[r["title"]] = (await memory.remember(r["content"], title=r["title"], scope="project")).id
        out: dict[str, dict[str, dict[str, float]]] = {}
        for expand in (False, True):
            name = "expand_links" if expand else "default"
            sums: dict[str, dict[int, float]] = {}
            counts: dict[str, int] = {}
            for q in questions:
                hits = (await memory.search(q["q"], limit=max(KS), expand_links=expand)).hits
                ranked = [h.id for h in hits]
                counts[q["set"]] = counts.get(q["set"], 0) + 1
                for k in KS:
                    sums.setdefault(q["set"], {}).setdefault(k, 0.0)
                    sums[q["set"]][k] += float(ids[q["answer"]] in ranked[:k])
            out[name] = {s: {f"R@{k}": round(v / counts[s], 3) for k, v in ks.items()} for s, ks in sums.items()}
        memory.close()
    return {"records": len(records), "questions": len(questions), "results": out, "seconds": round(time.perf_counter() - started, 1)}


LOCOMO_KS = (5, 10, 25, 50)


async def _score(
    memory: Any, qa: list[dict[str, Any]], turn_of: dict[str, str], into: dict[str, dict[str, list[float]]], expand: bool
) -> None:
    """Evidence recall@k of each question, by category (multi-hop apart), appended to ``into``."""
    from agent_memory.eval.locomo import evidence_recall, normalize_evidence

    for q in qa:
        hits = (await memory.search(str(q.get("question") or ""), limit=max(LOCOMO_KS), expand_links=expand)).hits
        ranked = [turn_of.get(h.id) for h in hits]
        for cat in ("overall", "1 multi-hop" if str(q.get("category")) == "1" else "other"):
            for k in LOCOMO_KS:
                into.setdefault(cat, {}).setdefault(f"R@{k}", []).append(evidence_recall(normalize_evidence(q.get("evidence")), ranked[:k]))


async def locomo(path: str, conversations: int | None) -> dict[str, Any]:
    """Evidence recall@k of the LoCoMo questions: as imported, with neighbour links, with links + expansion."""
    from agent_memory import MemoryProvider
    from agent_memory.eval.locomo import canonical_turn_id, load_samples, sample_sessions
    from agent_memory.portable.transcripts import transcript_drafts

    samples = load_samples(path)[:conversations]
    arms = ("as imported", "links, default search", "links + expand_links")
    rows: dict[str, dict[str, dict[str, list[float]]]] = {a: {} for a in arms}  # arm -> category -> R@k -> scores
    started = time.perf_counter()
    for index, sample in enumerate(samples):
        thread = str(sample.get("sample_id") or f"conversation-{index + 1}")
        drafts = transcript_drafts(sample_sessions(sample), thread=thread)
        with tempfile.TemporaryDirectory() as root:
            memory = MemoryProvider(root, durable=False, rescan_interval=None)
            results = memory.store.remember_many(drafts, source="import")
            turn_of: dict[str, str] = {}
            for draft, res in zip(drafts, results, strict=True):
                if (tid := canonical_turn_id((draft.metadata or {}).get("turn_id"))) is not None:
                    turn_of.setdefault(res.id, tid)
            qa = [q for q in sample.get("qa") or [] if isinstance(q, dict)]

            await _score(memory, qa, turn_of, rows[arms[0]], False)
            by_session: dict[str, list[tuple[int, int]]] = {}
            for i, res in enumerate(results):
                tid = turn_of.get(res.id)
                if tid is not None and res.status == "created":
                    session, turn = tid[1:].split(":")
                    by_session.setdefault(session, []).append((int(turn), i))
            for turns in by_session.values():
                turns.sort()
                for j, (_, i) in enumerate(turns):
                    near = [results[turns[n][1]].id for n in (j - 1, j + 1) if 0 <= n < len(turns)]
                    d = drafts[i]
                    memory.store.remember(
                        d.content + "\n\n" + " ".join(f"[[{rid}]]" for rid in near),
                        memory_key=results[i].id,
                        on_existing="replace",
                        scope=d.scope,
                        session_id=d.session_id,
                        user_id=d.user_id,
                        source="import",
                    )
            await _score(memory, qa, turn_of, rows[arms[1]], False)
            await _score(memory, qa, turn_of, rows[arms[2]], True)
            memory.close()
    means = {a: {c: {k: round(sum(v) / len(v), 3) for k, v in r.items()} for c, r in cats.items()} for a, cats in rows.items()}
    counts = {c: len(r["R@5"]) for c, r in rows[arms[0]].items()}
    return {"questions": counts, "results": means, "seconds": round(time.perf_counter() - started, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--locomo", metavar="FILE", help="the LoCoMo test instead (links made from session structure)")
    parser.add_argument("--conversations", type=int, default=None, help="with --locomo: only the first N conversations")
    args = parser.parse_args()
    if args.locomo:
        found = asyncio.run(locomo(args.locomo, args.conversations))
        print(json.dumps(found, indent=2))
        return
    result = asyncio.run(run())
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['records']} records, {result['questions']} questions ({result['seconds']} s)")
    print(f"{'set':10} {'search':14} " + " ".join(f"{'R@' + str(k):>6}" for k in KS))
    for name, sets in result["results"].items():
        for s, scores in sets.items():
            print(f"{s:10} {name:14} " + " ".join(f"{scores[f'R@{k}']:6.3f}" for k in KS))


if __name__ == "__main__":
    main()
