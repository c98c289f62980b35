"""Recall and capture workers driven by a real model on an OpenAI-compatible server, over a fixed labelled set.

    python benchmarks/bench_model_workers.py --base-url http://127.0.0.1:18089/v1 [--model NAME]
        [--recall 6] [--capture 6] [--multihop 2] [--tool-mode auto] [--out result.json]

The workers use the shipped ``local`` profile (its instructions, tools and step limits) pointed at the server.
The set is ``benchmarks/data/model_workers.json``: records seeded for user ``ada``, recall questions with the records
that answer them (multi-hop ones need all), capture conversations with the facts that should be stored and
must-nots (secrets, chit-chat). ``--recall N`` / ``--capture N`` / ``--multihop N`` take the first N of each, so a
slow model can be measured on a subset (say which in the report). The offline worker runs the same items in the same
run as a baseline.

Reported per model: tool calls that were valid (executed) out of those attempted (executed + refused by the tools +
unparseable + repeated), recall summaries whose every citation is a record the worker read (grounded; the worker
refuses any other summary and falls back, flagged), questions whose evidence the worker's searches reached, capture
precision/recall against the labelled facts, must-nots stored, fallbacks and their reasons, latency and tokens per
turn. On multi-hop questions a one-search worker is compared with one told to decompose the question and search for
each part, both within their step limit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_memory import MemoryProvider  # noqa: E402
from agent_memory.agents.extensions import ToolCall  # noqa: E402
from agent_memory.agents.profiles import Profile, load_profile, server_model_name  # noqa: E402

DATA = Path(__file__).with_name("data") / "model_workers.json"
USER = "ada"

# Both end "as the last message asks": the step after results says what to reply (numbers in the select answer mode,
# the local profile's default; a cited summary in the summary mode, ``--answer-mode summary``).
ONE_SEARCH = """\
You are a private memory recall worker; your reply goes to another agent. Call memory_search once with the
message. Then reply exactly as the last message asks."""

DECOMPOSE = """\
You are a private memory recall worker; your reply goes to another agent. The question may need several facts
that are stored in different records. Search for the first fact with memory_search; then search again for the
next fact, using names found in the earlier results; stop when you have every fact. Then reply exactly as the last
message asks."""


def model_profile(base_url: str, model: str, tool_mode: str, timeout_s: float, max_tokens: int, answer_mode: str = "auto") -> Profile:
    """The shipped ``local`` profile pointed at ``base_url`` / ``model``, with this run's tool mode, answer mode and limits."""
    import dataclasses

    local = load_profile("local")
    local = dataclasses.replace(local, recall=dataclasses.replace(local.recall, answer_mode=answer_mode))
    settings = {
        "model": f"openai-chat:{model}",
        "api_base": base_url,
        "base_url_env": None,
        "tool_mode": tool_mode,
        "timeout_s": timeout_s,
        "max_tokens": max_tokens,
    }
    return dataclasses.replace(
        local, recall=dataclasses.replace(local.recall, **settings), capture=dataclasses.replace(local.capture, **settings)
    )


def with_recall(profile: Profile, instructions: str, max_steps: int) -> Profile:
    import dataclasses

    return dataclasses.replace(profile, recall=dataclasses.replace(profile.recall, instructions=instructions, max_steps=max_steps))


class Log:
    """Tool middleware recording each executed call and what it returned."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any], Any]] = []

    async def __call__(self, call: ToolCall, proceed: Callable[..., Awaitable[Any]]) -> Any:
        result = await proceed()
        self.calls.append((call.worker, call.name, dict(call.args), result))
        return result

    def seen_ids(self) -> set[str]:
        ids: set[str] = set()
        for _, _, _, result in self.calls:
            if isinstance(result, dict):
                if "id" in result:
                    ids.add(str(result["id"]))
                for hit in result.get("hits") or []:
                    if isinstance(hit, dict) and "id" in hit:
                        ids.add(str(hit["id"]))
        return ids


TRANSCRIPT: list[dict[str, str]] = []


def record_transcripts() -> None:
    """Keep, per model request of the text tool modes, the last message sent and the reply (``--transcripts``)."""
    from pydantic_ai.messages import ModelRequest, TextPart, UserPromptPart

    from agent_memory.agents.models.tool_mode import ToolModeModel

    ask = ToolModeModel._ask

    async def recorded(self: ToolModeModel, history: Any, settings: Any, params: Any, tools: Any, **kw: Any) -> Any:
        response = await ask(self, history, settings, params, tools, **kw)
        last = history[-1] if history else None
        sent = [str(p.content) for p in last.parts if isinstance(p, UserPromptPart)] if isinstance(last, ModelRequest) else []
        reply = "".join(p.content for p in response.parts if isinstance(p, TextPart))
        TRANSCRIPT.append({"sent": "\n".join(sent)[-600:], "reply": reply})
        return response

    ToolModeModel._ask = recorded  # type: ignore[method-assign]


def issues(usage: dict[str, Any]) -> dict[str, int]:
    return dict(usage.get("tool_issues") or {})


def attempted(executed: int, usage: dict[str, Any]) -> int:
    i = issues(usage)
    return executed + i.get("tool_retries", 0) + i.get("invalid_tool_calls", 0) + i.get("repeated_tool_calls", 0)


async def seeded(root: Path, profile: Profile, log: Log, records: list[dict[str, Any]]) -> tuple[MemoryProvider, dict[str, str]]:
    provider = MemoryProvider(root, profile=profile, tool_middleware=log, durable=False)
    ids = {}
    for r in records:
        ids[r["key"]] = (await provider.remember(r["content"], title=r["title"], user_id=USER, scope="user")).id
    return provider, ids


async def run_recall(
    profile: Profile, data: dict[str, Any], items: list[dict[str, Any]], tmp: Path, done: Callable[[list[Any]], None] = lambda rows: None
) -> dict[str, Any]:
    log = Log()
    provider, ids = await seeded(tmp, profile, log, data["records"])
    rows: list[dict[str, Any]] = []
    out = {"rows": rows}
    for item in items:
        log.calls.clear()
        started = time.perf_counter()
        result = await provider.recall(item["question"], user_id=USER, session_id="bench")
        wall = time.perf_counter() - started
        evidence = {ids[k] for k in item["evidence"]}
        seen = log.seen_ids()
        rows.append(
            {
                "id": item["id"],
                "grounded": not result.fallback and bool(result.sources),
                "no_memory": not result.fallback and not result.summary,
                "fallback": result.fallback,
                "reason": result.reason,
                "evidence_reached": evidence <= seen,
                "evidence_part": len(evidence & seen) / len(evidence),
                "cited_evidence": bool({s["id"] for s in result.sources} & evidence),
                "cited_all_evidence": evidence <= {s["id"] for s in result.sources},
                "executed": len(log.calls),
                "attempted": attempted(len(log.calls), result.usage),
                "searches": sum(1 for c in log.calls if c[1] == "memory_search"),
                "usage": result.usage,
                "wall_s": round(wall, 2),
                "summary": result.summary,
                "transcript": take_transcript(),
            }
        )
        done(rows)
    provider.close()
    return out


def matches(content: str, words: list[str]) -> bool:
    low = content.lower()
    return all(w.lower() in low for w in words)


async def run_capture(
    profile: Profile, items: list[dict[str, Any]], tmp: Path, done: Callable[[list[Any]], None] = lambda rows: None
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for item in items:
        log = Log()
        provider = MemoryProvider(tmp / item["id"], profile=profile, tool_middleware=log, durable=False)
        started = time.perf_counter()
        result = await provider.capture_turn(item["input"], item["output"], user_id=USER, session_id=f"bench-{item['id']}")
        wall = time.perf_counter() - started
        stored = []
        for w in result.written:
            record = await provider.get(w["id"], user_id=USER, session_id=f"bench-{item['id']}")
            stored.append(record.content if record is not None else "")
        provider.close()
        facts_found = sum(1 for fact in item["facts"] if any(matches(s, fact) for s in stored))
        useful = sum(1 for s in stored if any(matches(s, fact) for fact in item["facts"]))
        must_not = [m for m in item["must_not"] if any(m.lower() in s.lower() for s in stored)]
        rows.append(
            {
                "id": item["id"],
                "stored": stored,
                "labelled": len(item["facts"]),
                "facts_found": facts_found,
                "useful": useful,
                "must_not_stored": must_not,
                "fallback": result.fallback,
                "reason": result.reason,
                "executed": len(log.calls),
                "attempted": attempted(len(log.calls), result.usage),
                "usage": result.usage,
                "wall_s": round(wall, 2),
                "transcript": take_transcript(),
            }
        )
        done(rows)
    return {"rows": rows}


def take_transcript() -> list[dict[str, str]]:
    out = list(TRANSCRIPT)
    TRANSCRIPT.clear()
    return out


def per_turn(rows: list[dict[str, Any]]) -> dict[str, Any]:
    walls = [r["wall_s"] for r in rows] or [0.0]
    return {
        "wall_s_median": round(statistics.median(walls), 1),
        "wall_s_max": round(max(walls), 1),
        "requests": round(statistics.mean(r["usage"]["requests"] for r in rows), 1) if rows else 0,
        "input_tokens": round(statistics.mean(r["usage"]["input_tokens"] for r in rows)) if rows else 0,
        "output_tokens": round(statistics.mean(r["usage"]["output_tokens"] for r in rows)) if rows else 0,
    }


def tally(rows: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        for k, v in issues(r["usage"]).items():
            out[k] = out.get(k, 0) + v
    return out


def summarise_recall(result: dict[str, Any]) -> dict[str, Any]:
    rows = result["rows"]
    return {
        "n": len(rows),
        "valid_tool_calls": f"{sum(r['executed'] for r in rows)}/{sum(r['attempted'] for r in rows)}",
        "grounded": sum(r["grounded"] for r in rows),
        "no_memory": sum(r["no_memory"] for r in rows),
        "evidence_reached": sum(r["evidence_reached"] for r in rows),
        "cited_evidence": sum(r["cited_evidence"] for r in rows),
        "cited_all_evidence": sum(r.get("cited_all_evidence", False) for r in rows),
        "fallbacks": sum(r["fallback"] for r in rows),
        "reasons": sorted({(r["reason"] or "").split(":")[0] for r in rows if r["fallback"]}),
        "issues": tally(rows),
        **per_turn(rows),
    }


def summarise_capture(result: dict[str, Any]) -> dict[str, Any]:
    rows = result["rows"]
    stored = sum(len(r["stored"]) for r in rows)
    labelled = sum(r["labelled"] for r in rows)
    return {
        "n": len(rows),
        "valid_tool_calls": f"{sum(r['executed'] for r in rows)}/{sum(r['attempted'] for r in rows)}",
        "stored": stored,
        "precision": round(sum(r["useful"] for r in rows) / stored, 2) if stored else None,
        "recall": round(sum(r["facts_found"] for r in rows) / labelled, 2) if labelled else None,
        "facts_found": f"{sum(r['facts_found'] for r in rows)}/{labelled}",
        "must_nots_stored": sum(len(r["must_not_stored"]) for r in rows),
        "fallbacks": sum(r["fallback"] for r in rows),
        "reasons": sorted({(r["reason"] or "").split(":")[0] for r in rows if r["fallback"]}),
        "issues": tally(rows),
        **per_turn(rows),
    }


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    model = args.model or server_model_name(args.base_url, timeout_s=120.0)
    real = model_profile(args.base_url, model, args.tool_mode, args.timeout, args.max_tokens, args.answer_mode)
    only = set(args.only.split(",")) if args.only else None
    single = [q for q in data["recall"] if not q.get("multihop") and (only is None or q["id"] in only)][: args.recall]
    multi = [q for q in data["recall"] if q.get("multihop") and (only is None or q["id"] in only)][: args.multihop]
    if args.multihop_shipped:  # the multi-hop questions through the shipped recall worker, not the two flows
        single, multi = single + multi, []
    capture = [c for c in data["capture"] if only is None or c["id"] in only][: args.capture]
    out: dict[str, Any] = {
        "model": model,
        "base_url": args.base_url,
        "tool_mode": args.tool_mode,
        "answer_mode": args.answer_mode,
        "items": {},
    }
    out["items"] = {"recall": [q["id"] for q in single], "multihop": [q["id"] for q in multi], "capture": [c["id"] for c in capture]}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        runs: dict[str, Any] = {}
        out["runs"] = runs
        for name, profile in (("offline", load_profile("offline")), (model, real)):
            if args.skip_offline and name == "offline":
                continue
            print(f"[{name}] recall x{len(single)}", file=sys.stderr, flush=True)
            runs[name] = {}

            def partial(key: str, run: dict[str, Any] = runs[name]) -> Callable[[list[Any]], None]:
                return lambda rows: (run.__setitem__(key, {"rows": rows, "partial": True}), save(args, out))

            recall = await run_recall(profile, data, single, root / f"{name}-recall".replace("/", "_"), partial("recall"))
            runs[name].update({"recall": recall, "recall_summary": summarise_recall(recall)})
            save(args, out)
            print(f"[{name}] capture x{len(capture)}", file=sys.stderr, flush=True)
            cap = await run_capture(profile, capture, root / f"{name}-capture".replace("/", "_"), partial("capture"))
            runs[name].update({"capture": cap, "capture_summary": summarise_capture(cap)})
            save(args, out)
            if multi and name != "offline":
                for label, instructions, steps in (("one_search", ONE_SEARCH, 2), ("decompose", DECOMPOSE, 5)):
                    print(f"[{name}] multihop {label} x{len(multi)}", file=sys.stderr, flush=True)
                    where = root / f"{name}-{label}".replace("/", "_")
                    mh = await run_recall(with_recall(profile, instructions, steps), data, multi, where, partial(f"multihop_{label}"))
                    runs[name][f"multihop_{label}"] = mh
                    runs[name][f"multihop_{label}_summary"] = summarise_recall(mh)
                    save(args, out)
    return out


def save(args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Write what is measured so far (a long run on a slow model keeps its finished parts)."""
    if args.out:
        args.out.write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")


def table(report: dict[str, Any]) -> str:
    lines = [
        "| model | worker | items | valid tool calls | grounded / no-memory | evidence reached (all) | cited evidence (all) | "
        "capture P / R (facts) | must-nots stored | fallbacks | median s/turn (max) | requests, in/out tokens per turn |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, run in report["runs"].items():
        for key in ("recall", "multihop_one_search", "multihop_decompose", "capture"):
            s = run.get(f"{key}_summary")
            if not s and run.get(key):  # a run cut short: summarise the rows it finished
                s = (summarise_capture if key == "capture" else summarise_recall)(run[key])
            if not s:
                continue
            cap = key == "capture"
            lines.append(
                f"| {name} | {key.replace('_', ' ')} | {s['n']} | {s['valid_tool_calls']} | "
                + (
                    "— | — | — | "
                    if cap
                    else f"{s['grounded']} / {s['no_memory']} | {s['evidence_reached']} | {s['cited_evidence']} ({s.get('cited_all_evidence', '?')}) | "
                )
                + (
                    f"{s['precision']} / {s['recall']} ({s['facts_found']}, {s['stored']} stored) | {s['must_nots_stored']} | "
                    if cap
                    else "— | — | "
                )
                + f"{s['fallbacks']}{' (' + ', '.join(s['reasons']) + ')' if s['reasons'] else ''} | "
                + f"{s['wall_s_median']} ({s['wall_s_max']}) | {s['requests']}, {s['input_tokens']}/{s['output_tokens']} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="", help="the server's /v1 URL (required unless --table)")
    parser.add_argument("--model", default=None, help="model name (default: the first the server lists)")
    parser.add_argument("--recall", type=int, default=8, help="single-hop recall questions (first N)")
    parser.add_argument("--multihop", type=int, default=4, help="multi-hop questions (first N), each run twice")
    parser.add_argument("--capture", type=int, default=12, help="capture conversations (first N)")
    parser.add_argument("--tool-mode", default="auto", choices=["native", "auto", "prompted"])
    parser.add_argument(
        "--answer-mode",
        default="auto",
        choices=["auto", "summary", "select"],
        help="recall's answer mode (auto: select in a text tool mode)",
    )
    parser.add_argument(
        "--multihop-shipped", action="store_true", help="run the multi-hop questions through the shipped recall worker (not the two flows)"
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="per worker run, seconds")
    parser.add_argument("--max-tokens", type=int, default=200, help="cap on each model reply")
    parser.add_argument("--only", default="", help="comma-separated item ids (c3,c5,m1,…): run only these")
    parser.add_argument("--transcripts", action="store_true", help="keep each model request's last message and the reply in the rows")
    parser.add_argument("--skip-offline", action="store_true", help="skip the offline baseline")
    parser.add_argument("--table", type=Path, default=None, help="print the table of a saved --out report and exit")
    parser.add_argument("--out", type=Path, default=None, help="write the full report (every row) as JSON")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text(encoding="utf-8"))))
        return
    if not args.base_url:
        parser.error("--base-url is required")
    if args.transcripts:
        record_transcripts()
    started = time.perf_counter()
    cpu = time.process_time()
    report = asyncio.run(bench(args))
    report["wall_s"] = round(time.perf_counter() - started, 1)
    report["client_cpu_s"] = round(time.process_time() - cpu, 1)
    save(args, report)
    print(table(report))
    print(f"\nitems: {report['items']}; wall {report['wall_s']} s, client CPU {report['client_cpu_s']} s")


if __name__ == "__main__":
    main()
