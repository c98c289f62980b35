"""``agent-memory``: a thin command line over the store and the provider.

Store commands (remember, search, get, list, forget, inject, reindex, doctor, sweep, import)
never import pydantic-ai or litellm. Every command takes ``--json`` and then prints exactly
one JSON document; errors exit non-zero with one line on stderr (and a JSON error object
on stdout with ``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from .errors import AgentMemoryError, InvalidInputError, NotFoundError

DEFAULT_ROOT = ".agent-memory"


class UsageError(Exception):
    """Bad command-line usage (exit code 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one clear line instead of usage + error
        raise UsageError(f"{message} (see {self.prog} --help)")


def _common(json_default: Any) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--root", default=json_default, help=f"memory root directory (default {DEFAULT_ROOT}, or $AGENT_MEMORY_ROOT)")
    p.add_argument("--json", action="store_true", default=json_default, help="print one JSON document")
    return p


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _identity(p: argparse.ArgumentParser) -> None:
    p.add_argument("--session", dest="session_id", help="caller session id (sees that session's records)")
    p.add_argument("--user", dest="user_id", help="caller user id (sees that user's records)")


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tag", dest="tags", action="append", default=[], help="tag (repeatable)")
    p.add_argument("--scope", choices=["session", "project", "user", "global"])
    p.add_argument("--kind")
    p.add_argument("--limit", type=_positive)
    p.add_argument("--created-after")
    p.add_argument("--created-before")
    p.add_argument("--updated-after")
    p.add_argument("--updated-before")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="agent-memory", description="Durable, searchable memory for LLM agents.", parents=[_common(None)])
    from . import __version__

    parser.add_argument("--version", action="version", version=f"agent-memory {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    common = _common(argparse.SUPPRESS)

    def add(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help, parents=[common])

    p = add("remember", "Store one memory (CONTENT, or - for stdin).")
    p.add_argument("content")
    p.add_argument("--title")
    p.add_argument("--kind")
    p.add_argument("--scope", choices=["session", "project", "user", "global"])
    _identity(p)
    p.add_argument("--tag", dest="tags", action="append", default=[])
    p.add_argument("--key", dest="memory_key", help="memory_key (or an existing record id) of one logical memory")
    p.add_argument("--on-existing", choices=["append", "replace", "skip"], help="with --key: what to do if it exists (default append)")
    p.add_argument("--expires", help="ISO date/datetime after which `sweep` archives the record")

    p = add("search", "Rank memories for a query (BM25) with snippets and line ranges.")
    p.add_argument("query")
    _identity(p)
    _filters(p)
    p.add_argument("--trace", action="store_true", help="show candidates and scores per stage")

    p = add("get", "Print one record.")
    p.add_argument("id")
    _identity(p)

    p = add("list", "List records, newest first, filtered exactly.")
    _identity(p)
    _filters(p)

    p = add("forget", "Delete one record (file and index rows).")
    p.add_argument("id")
    _identity(p)

    p = add("inject", "Print the core block (USER.md + visible MEMORY.md lines) within a token budget.")
    p.add_argument("--budget", type=int, default=1500)
    _identity(p)

    p = add("recall", "Run the recall worker for a message.")
    p.add_argument("message")
    _identity(p)
    p.add_argument("--profile", default="offline", help="profile name or path to a TOML file")
    p.add_argument("--budget", type=int, help="summary token budget (default: the profile's)")

    p = add("capture", "Run the capture worker over one turn.")
    p.add_argument("--input", required=True)
    p.add_argument("--output")
    _identity(p)
    p.add_argument("--profile", default="offline")

    p = add("import", "Bulk import a JSONL file (one memory object per line).")
    p.add_argument("file")
    p.add_argument("--batch-size", type=_positive, default=5000, help="records per lock, transaction and sync (default 5000)")
    p.add_argument("--skip-invalid", action="store_true", help="skip bad lines instead of stopping")

    add("reindex", "Rebuild the index from the record files.")
    add("doctor", "Report unreadable record files and index drift.")
    add("sweep", "Archive expired records and exact duplicates.")

    p = add("eval", "Evaluate retrieval on a benchmark.")
    p.add_argument("benchmark", choices=["locomo"])
    p.add_argument("file")
    p.add_argument("--k", default="5,10,25,50", help="comma-separated cut-offs")
    p.add_argument("--budget", type=int, help="also score budgeted recall coverage at this summary budget")
    p.add_argument("--profile", default="offline")
    p.add_argument("--limit-conversations", type=_positive, help="evaluate only the first N conversations")
    return parser


# -- output -------------------------------------------------------------------------------
def _emit(args: argparse.Namespace, doc: Any, human: Callable[[], str]) -> None:
    if args.json:
        print(json.dumps(doc, ensure_ascii=False, default=str))
    else:
        text = human()
        if text:
            print(text)


class _Progress:
    """A one-line progress bar on stderr (only when stderr is a terminal)."""

    def __init__(self, label: str, total: int | None = None) -> None:
        self.label, self.total, self.done, self.start = label, total, 0, time.monotonic()
        self.tty = sys.stderr.isatty()

    def __call__(self, n: int) -> None:
        self.done += n
        if self.tty:
            rate = self.done / max(time.monotonic() - self.start, 1e-9)
            if self.total:
                filled = int(30 * self.done / self.total)
                bar = "█" * filled + "·" * (30 - filled)
                sys.stderr.write(f"\r{self.label} {bar} {self.done}/{self.total} ({rate:,.0f}/s)")
            else:
                sys.stderr.write(f"\r{self.label} {self.done} ({rate:,.0f}/s)")
            sys.stderr.flush()

    def close(self) -> None:
        if self.tty:
            sys.stderr.write("\n")


# -- commands ------------------------------------------------------------------------------
READ_ONLY = {"search", "get", "list", "forget", "inject", "recall", "doctor", "sweep", "reindex"}


def _store(args: argparse.Namespace) -> Any:
    from .store import MemoryStore

    if args.command in READ_ONLY and not os.path.isdir(os.path.join(args.root, "records")):
        raise NotFoundError(f"no memory root at {args.root} (create one with remember or import, or pass --root)")
    return MemoryStore(args.root)


def _filter_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    return {k: getattr(args, k) for k in ("created_after", "created_before", "updated_after", "updated_before")}


def cmd_remember(args: argparse.Namespace) -> None:
    if args.on_existing and not args.memory_key:
        raise UsageError("--on-existing needs --key (it says what to do when that memory already exists)")
    content = args.content
    if content == "-":
        content = sys.stdin.read()
        content = content[:-1] if content.endswith("\n") else content
    r = _store(args).remember(
        content, title=args.title, kind=args.kind, scope=args.scope, session_id=args.session_id, user_id=args.user_id,
        tags=args.tags, memory_key=args.memory_key, on_existing=args.on_existing or "append", source="manual", expires=args.expires,
    )
    _emit(args, {"id": r.id, "status": r.status, "path": r.path}, lambda: f"{r.status}: {r.id}")


def cmd_search(args: argparse.Namespace) -> None:
    res = _store(args).search(
        args.query, session_id=args.session_id, user_id=args.user_id, tags=args.tags, scope=args.scope, kind=args.kind,
        limit=10 if args.limit is None else args.limit, trace=args.trace, **_filter_kwargs(args),
    )
    doc: dict[str, Any] = {"hits": [h.to_dict() for h in res.hits]}
    if args.trace:
        doc["trace"] = res.trace

    def human() -> str:
        out = []
        for h in res.hits:
            out.append(f"{h.score:7.3f}  {h.id}  {h.path}:{h.line_start}-{h.line_end}")
            out.extend("         " + line for line in h.snippet.splitlines())
        if args.trace:
            out.append(json.dumps(res.trace, indent=2, ensure_ascii=False))
        return "\n".join(out) or "no matches"

    _emit(args, doc, human)


def cmd_get(args: argparse.Namespace) -> None:
    rec = _store(args).get(args.id, session_id=args.session_id, user_id=args.user_id)
    _emit(args, rec.to_dict(), lambda: f"{rec.id} ({rec.kind}, {rec.scope.value}) {rec.path}\n\n{rec.content}")


def cmd_list(args: argparse.Namespace) -> None:
    recs = _store(args).list(session_id=args.session_id, user_id=args.user_id, tags=args.tags, scope=args.scope, kind=args.kind,
                             limit=50 if args.limit is None else args.limit, **_filter_kwargs(args))
    from .index import summary_line

    _emit(args, {"records": [r.to_dict() for r in recs]},
          lambda: "\n".join(f"{r.id}  ({r.kind}, {r.scope.value})  {summary_line(r.content, 70)}" for r in recs) or "no records")


def cmd_forget(args: argparse.Namespace) -> None:
    if not _store(args).forget(args.id, session_id=args.session_id, user_id=args.user_id):
        raise NotFoundError(f"no record {args.id!r} visible to this caller")
    _emit(args, {"id": args.id, "forgotten": True}, lambda: f"forgotten: {args.id}")


def cmd_inject(args: argparse.Namespace) -> None:
    from .core import inject

    block = inject(_store(args), args.budget, session_id=args.session_id, user_id=args.user_id)
    _emit(args, block.to_dict(), lambda: block.text)


def _provider(args: argparse.Namespace) -> Any:
    from .profiles import load_profile
    from .provider import MemoryProvider

    profile = load_profile(args.profile)  # a mistyped profile is an error here, not a silent fallback
    if args.command == "recall":
        _store(args)  # refuses a missing root
    return MemoryProvider(args.root, profile=profile)


def cmd_recall(args: argparse.Namespace) -> None:
    import asyncio

    res = asyncio.run(_provider(args).recall(args.message, session_id=args.session_id, user_id=args.user_id, summary_tokens=args.budget))
    doc = res.to_dict()
    _emit(args, doc, lambda: (res.summary or "(no relevant memory)") + (f"\n(fallback: {res.reason})" if res.fallback else ""))


def cmd_capture(args: argparse.Namespace) -> None:
    import asyncio

    async def run() -> Any:
        provider = _provider(args)
        result = await provider.capture_turn(args.input, args.output, session_id=args.session_id, user_id=args.user_id)
        await provider.flush()
        return result

    res = asyncio.run(run())
    doc = res.to_dict()
    doc["records"] = doc.get("written", [])  # every verified write with its status
    doc["written"] = list(res.ids)  # ids actually created, appended or replaced
    _emit(args, doc, lambda: "\n".join(f"written: {i}" for i in doc["written"]) or "nothing to remember")


def cmd_import(args: argparse.Namespace) -> None:
    from .store import read_jsonl

    store = _store(args)
    errors: list[tuple[int, str]] = []
    drafts, lines = [], []
    for n, item in read_jsonl(args.file):
        if isinstance(item, str):
            if not args.skip_invalid:
                raise InvalidInputError(f"{args.file}: {item}")
            errors.append((n, item.split(": ", 1)[1] if item.startswith(f"line {n}: ") else item))
        else:
            drafts.append(item)
            lines.append(n)
    rejected: list[tuple[int, str]] = []
    progress = _Progress("importing", len(drafts))
    start = time.monotonic()
    results = store.remember_many(drafts, source="import", batch_size=max(1, args.batch_size), progress=progress,
                                  on_error="skip" if args.skip_invalid else "raise", errors=rejected)
    errors = sorted(errors + [(lines[i], msg) for i, msg in rejected])  # draft positions → file line numbers
    progress.close()
    elapsed = time.monotonic() - start
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    doc = {"imported": len(results), "statuses": counts, "errors": [{"line": n, "message": m} for n, m in errors],
           "elapsed_s": round(elapsed, 3), "rate_per_s": round(len(results) / elapsed, 1) if elapsed else None}
    _emit(args, doc, lambda: f"imported {len(results)} records in {elapsed:.2f}s ({doc['rate_per_s']}/s): "
          + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
          + "".join(f"\n  skipped line {n}: {m}" for n, m in errors))


def cmd_reindex(args: argparse.Namespace) -> None:
    rep = _store(args).reindex()
    doc = {"records": rep.added + rep.updated, "scanned": rep.scanned, "problems": rep.problems}
    _emit(args, doc, lambda: f"reindexed {doc['records']} records" + "".join(f"\n  problem: {k}: {v}" for k, v in rep.problems.items()))


def cmd_doctor(args: argparse.Namespace) -> int:
    rep = _store(args).doctor()
    _emit(args, rep.to_dict(), lambda: ("ok" if rep.ok else "problems found") + f": {rep.records} files, {rep.indexed} indexed"
          + "".join(f"\n  unreadable: {k}: {v}" for k, v in rep.problems.items())
          + "".join(f"\n  drift: {k} = {v}" for k, v in rep.drift.items() if v))
    return 0 if rep.ok else 1  # usable as a check in scripts; the report is already printed


def cmd_sweep(args: argparse.Namespace) -> None:
    rep = _store(args).sweep()
    _emit(args, rep.to_dict(), lambda: f"archived {len(rep.expired)} expired and {len(rep.duplicates)} duplicate records"
          + "".join(f"\n  expired: {i}" for i in rep.expired) + "".join(f"\n  duplicate: {i}" for i in rep.duplicates))


def cmd_eval(args: argparse.Namespace) -> None:
    from .eval.locomo import evaluate, render_table
    from .profiles import load_profile

    if args.budget is not None:
        load_profile(args.profile)  # fail on a mistyped profile before a long run

    try:
        ks = tuple(int(k) for k in args.k.split(",") if k.strip())
    except ValueError:
        raise InvalidInputError(f"--k must be comma-separated integers, not {args.k!r}") from None
    progress = None if args.json else _Progress("evaluating")
    kwargs: dict[str, Any] = {"ks": ks, "budget": args.budget, "profile": args.profile, "progress": progress}
    if args.limit_conversations:
        kwargs["limit_conversations"] = args.limit_conversations
    result = evaluate(args.file, **kwargs)
    if progress:
        progress.close()
    _emit(args, result, lambda: render_table(result))


COMMANDS: dict[str, Callable[[argparse.Namespace], int | None]] = {
    "remember": cmd_remember, "search": cmd_search, "get": cmd_get, "list": cmd_list, "forget": cmd_forget,
    "inject": cmd_inject, "recall": cmd_recall, "capture": cmd_capture, "import": cmd_import, "reindex": cmd_reindex,
    "doctor": cmd_doctor, "sweep": cmd_sweep, "eval": cmd_eval,
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    want_json = "--json" in argv
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        args = build_parser().parse_args(argv)
        args.root = args.root or os.environ.get("AGENT_MEMORY_ROOT") or DEFAULT_ROOT
        args.json = bool(args.json)
        return COMMANDS[args.command](args) or 0
    except UsageError as exc:
        return _fail(want_json, "UsageError", str(exc), 2)
    except AgentMemoryError as exc:
        return _fail(want_json, type(exc).__name__, str(exc), 1)
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):  # e.g. `agent-memory … | head`: stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 141
        return _fail(want_json, type(exc).__name__, f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), 1)
    except ValueError as exc:  # e.g. a malformed data file handed to eval
        return _fail(want_json, "InvalidInputError", str(exc), 1)
    except KeyboardInterrupt:
        return _fail(want_json, "Interrupted", "interrupted", 130)


def _fail(want_json: bool, kind: str, message: str, code: int) -> int:
    message = " ".join(message.split())
    if want_json:
        print(json.dumps({"error": {"type": kind, "message": message}}, ensure_ascii=False))
    print(f"agent-memory: error: {message}", file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
