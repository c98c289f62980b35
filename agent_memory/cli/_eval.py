"""``eval``: retrieval quality on a benchmark file (LoCoMo), with per-conversation roots."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from agent_memory.cli import _progress
from agent_memory.cli._base import emit, positive
from agent_memory.errors import InvalidInputError

Handler = Callable[[argparse.Namespace], "int | None"]

LOCOMO_HELP = """\
FILE is a LoCoMo-format JSON file (a list of samples with "conversation" and "qa"; see the dataset's
SCHEMA.md). LoCoMo itself (Maharana et al., ACL 2024) is published by Snap Research at
https://github.com/snap-research/locomo (data/locomo10.json); this repository's checks use the dev half
kept in ../shared/eval/locomo/.

Roots: each conversation is loaded into its own memory root. Without an explicit --root they are
temporary and removed after the run; with --root DIR they are kept as DIR/<sample_id>/ (re-running reuses
them: the import is idempotent), so you can search them afterwards. DIR may not be a memory root nor lie inside
one (each kept root would be a root inside a root): that is refused before anything is created."""


def register(add: Callable[..., argparse.ArgumentParser]) -> dict[str, Handler]:
    p = add(
        "eval",
        "Evaluate retrieval on a benchmark: evidence recall@k and budgeted recall coverage.",
        [
            "agent-memory eval locomo locomo10.json",
            "agent-memory eval locomo locomo10.json --k 5,10 --budget 400 --json",
            "agent-memory --root ./locomo-roots eval locomo locomo10.json --limit-conversations 1",
            "agent-memory eval locomo locomo10.json --layer sessions",
            "agent-memory eval locomo locomo10.json --qa --answer-model openai-chat:qwen --model-url http://127.0.0.1:8080/v1 --limit-questions 10",
        ],
        epilog_extra=LOCOMO_HELP,
    )
    p.add_argument("benchmark", choices=["locomo"], help="the benchmark (locomo)")
    p.add_argument("file", help="benchmark data file (- for standard input)")
    p.add_argument("--k", default="5,10,25,50", metavar="K,K,…", help="comma-separated cut-offs for recall@k (default 5,10,25,50)")
    p.add_argument(
        "--budget",
        type=positive,
        metavar="TOKENS",
        help="also score budgeted recall coverage at this summary budget in tokens (default: off; slower)",
    )
    p.add_argument("--profile", default="offline", help="recall worker profile for --budget (default offline)")
    p.add_argument(
        "--search",
        choices=("lexical", "dense", "hybrid"),
        default=None,
        help="retrieval mode (default: hybrid with --embedder, else lexical); dense and hybrid embed every turn first",
    )
    p.add_argument(
        "--embedder",
        metavar="NAME",
        help="for --search dense|hybrid: local (MiniLM, the embeddings extra; the default), local:PATH (a sentence-transformers model directory) or a litellm model id",
    )
    p.add_argument(
        "--layer",
        choices=("records", "sessions"),
        default="records",
        help="records: one record per turn (default); sessions: each conversation session a session log "
        "with our own summaries, questions answered by two-stage contextual search",
    )
    p.add_argument("--limit-conversations", type=positive, metavar="N", help="evaluate only the first N conversations (default: all)")
    p.add_argument("--limit-questions", type=positive, metavar="N", help="evaluate only the first N questions (default: all)")
    p.add_argument(
        "--qa",
        action="store_true",
        help="also answer each question from what recall returns (--answer-model) and grade it (--judge-model): the qa score",
    )
    p.add_argument("--answer-model", metavar="MODEL", help="for --qa: a pydantic-ai model (openai-chat:NAME, ...) or local")
    p.add_argument("--judge-model", metavar="MODEL", help="for --qa: the grading model (default: the answer model)")
    p.add_argument("--model-url", metavar="URL", help="for --qa: the /v1 URL of an OpenAI-compatible server for openai-chat: models")
    return {"eval": cmd_eval}


def cmd_eval(args: argparse.Namespace) -> None:
    from agent_memory.eval.locomo import evaluate, keep_roots_in, render_table

    if args.budget is not None or args.qa:
        from agent_memory.agents.profiles import load_profile

        load_profile(args.profile)  # fail on a mistyped profile before a long run
    qa = None
    if args.qa:
        from agent_memory.eval.locomo_qa import QAModels, qa_model

        if not args.answer_model:
            raise InvalidInputError("--qa needs --answer-model (e.g. openai-chat:NAME with --model-url, or local)")
        judge = args.judge_model or args.answer_model
        qa = QAModels(qa_model(args.answer_model, args.model_url), qa_model(judge, args.model_url), args.answer_model, judge)
    elif args.answer_model or args.judge_model:
        raise InvalidInputError("--answer-model and --judge-model apply to --qa only")
    try:
        ks = tuple(int(k) for k in args.k.split(",") if k.strip())
    except ValueError:
        raise InvalidInputError(f"--k must be comma-separated integers, not {args.k!r}") from None
    keep = args.root if args.root_given else None
    if keep is not None and "://" in keep:
        raise InvalidInputError("eval needs a directory for --root (its per-conversation roots), not a URL")
    if keep is not None:
        keep_roots_in(keep, "--root")  # never a memory root nor inside one: its roots would be roots in a root
    progress = _progress.Progress("evaluating", None, "question")
    kwargs: dict[str, Any] = {
        "ks": ks,
        "budget": args.budget,
        "profile": args.profile,
        "progress": progress,
        "root": keep,
        "search": args.search or ("hybrid" if args.embedder else "lexical"),
        "embedder": args.embedder,
    }
    if args.layer != "records":
        kwargs["layer"] = args.layer
    if args.limit_conversations:
        kwargs["limit_conversations"] = args.limit_conversations
    if args.limit_questions:
        kwargs["limit_questions"] = args.limit_questions
    if qa is not None:
        kwargs["qa"] = qa
    try:
        result = evaluate(args.file, **kwargs)
    finally:
        progress.close()
    result["root"] = os.path.abspath(keep) if keep else None
    where = f"(roots kept under {result['root']})" if keep else "(temporary roots, removed; --root DIR keeps them)"
    emit(args, result, lambda: f"{render_table(result)}\n{where}")
