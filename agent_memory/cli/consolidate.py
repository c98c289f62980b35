"""Lifecycle commands: ``consolidate`` (merge, sweep, decay, lint; never destroys) and ``reflect`` (a cited answer)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from agent_memory.cli._base import UsageError, add_identity, emit, fraction, note, read_text
from agent_memory.cli._errors import EXIT_FALLBACK
from agent_memory.cli._target import IDENTITY, open_target
from agent_memory.cli._workers import PROFILE_HELP, _run  # the work and the provider's close on one event loop

if TYPE_CHECKING:
    from agent_memory.consolidate.report import Change

Handler = Callable[[argparse.Namespace], "int | None"]


def _since(text: str) -> str:
    """``--since``: checked here, so a bad value is a usage error naming the flag (the value itself is passed on)."""
    from agent_memory.model.values import normalize_instant, shown

    if normalize_instant(text) is None:
        raise argparse.ArgumentTypeError(f"not a date or instant: {shown(text)} (e.g. 2026-11-01 or 2026-11-01T09:00:00Z)")
    return text


def register(add: Callable[..., argparse.ArgumentParser]) -> dict[str, Handler]:
    p = add(
        "consolidate",
        "Merge near-duplicates, archive expired, orphaned and decayed records, and lint the store; "
        "every change is an archive (restorable), at most --max-share of the records per run.",
        [
            "agent-memory consolidate --dry-run",
            "agent-memory consolidate --max-share 0.05 --json",
            "agent-memory consolidate --worker --user ada --profile openai",
            "agent-memory consolidate --history --since 2026-11-01",
            "agent-memory consolidate --digest --user ada",
        ],
    )
    p.add_argument("--dry-run", action="store_true", help="show the plan; change nothing")
    p.add_argument("--max-share", type=fraction, metavar="F", help="change at most this share of the records (default 0.1)")
    p.add_argument("--rules", metavar="R,R", help="only these rules: ttl,scope_path,merge,decay (default all)")
    p.add_argument("--threshold", type=fraction, metavar="J", help="near-duplicate similarity threshold (default 0.6)")
    p.add_argument("--workspace", metavar="DIR", help="base of relative scope_path metadata (default: the root's parent)")
    add_identity(p)
    p.add_argument("--worker", action="store_true", help="let the consolidate worker of --profile review the plan and act")
    p.add_argument("--profile", default="offline", help=PROFILE_HELP)
    p.add_argument("--history", action="store_true", help="list past runs instead: when, what changed, what was skipped and why, drift")
    p.add_argument(
        "--digest", action="store_true", help="write one record summarising what consolidation changed (since --since; default 7 days)"
    )
    p.add_argument("--since", metavar="WHEN", type=_since, help="with --history/--digest: runs from this ISO date or instant on")

    p = add(
        "reflect",
        "Answer QUESTION from memory with a short synthesis citing the records it rests on.",
        [
            'agent-memory reflect "what did we decide about the release?"',
            'agent-memory reflect "what does Ada drink?" --user ada --json',
        ],
    )
    p.add_argument("question", help="the question (- for standard input)")
    add_identity(p)
    p.add_argument("--profile", default="offline", help=PROFILE_HELP)
    p.add_argument("--allow-fallback", action="store_true", help="exit 0 even when the answer fell back (default: exit 3)")
    return {"consolidate": cmd_consolidate, "reflect": cmd_reflect}


def _provider(args: argparse.Namespace) -> Any:
    from agent_memory.agents.profiles import load_profile
    from agent_memory.provider import MemoryProvider

    profile = load_profile(args.profile)
    target = open_target(args.root, create=False)
    root = target.url or target.root
    target.close()
    return MemoryProvider(root, profile=profile, namespace=IDENTITY["namespace"], isolation=IDENTITY["isolation"])


def cmd_consolidate(args: argparse.Namespace) -> int:
    if args.history or args.digest:
        return _governance(args)
    if args.since:
        raise UsageError("--since goes with --history or --digest")
    options: dict[str, Any] = {}
    if args.rules:
        options["rules"] = tuple(r.strip() for r in args.rules.split(",") if r.strip())
    if args.threshold is not None:
        options["merge_threshold"] = args.threshold
    if args.workspace:
        options["workspace"] = args.workspace
    from agent_memory.model.events import acting

    provider = _provider(args)
    with acting("cli"):  # the pass's archive events name who ran it
        rep = _run(
            provider,
            provider.consolidate(
                dry_run=args.dry_run,
                max_share=args.max_share,
                worker=args.worker,
                session_id=args.session_id,
                user_id=args.user_id,
                **options,
            ),
        )
    emit(args, rep.to_dict(), rep.text)
    if rep.applied and not args.dry_run:
        note("archived records are in archive/ with the reason; " + undo_hint(args, rep.applied))
    if rep.fallback:
        note(f"warning: the consolidate worker fell back: {rep.reason}")
        return EXIT_FALLBACK
    return 0


def undo_hint(args: argparse.Namespace, applied: Sequence[Change]) -> str:
    """The commands that bring back what a pass archived, as printed: ``restore ID`` with the identity that sees
    each record, and ``undo`` as the one each archive is attributed to (the run's caller; an operator's pass, run
    without identity flags, the record's owner)."""
    import shlex

    from agent_memory.cli._records import _same_caller, _same_root

    who = _same_caller(args)
    root = _same_root(args)

    def flags(owner: tuple[str | None, str | None, str | None]) -> str:
        if who != root:  # the run had identity flags: the hint acts as that caller
            return who
        # an operator's pass: the record's owner in the record's namespace (the one its archive event names)
        pairs = (("--session", owner[0]), ("--user", owner[1]), ("--namespace", owner[2]))
        return "".join(f" {flag} {shlex.quote(value)}" for flag, value in pairs if value) + root

    undo: dict[str, int] = {}
    for change in applied:
        key = flags(change.owner)
        undo[key] = undo.get(key, 0) + 1
    undos = "; ".join(f"`agent-memory undo{k}`" + (f" ({n} times, one archive each)" if n > 1 else "") for k, n in undo.items())
    shown = list(applied)[:10]
    restores = "\n".join(f"  agent-memory restore {shlex.quote(c.record_id)}{flags(c.owner)}" for c in shown)
    more = f"\n  … and {len(applied) - len(shown)} more (see the report)" if len(applied) > len(shown) else ""
    return f"undo this pass with {undos}, or bring one back with:\n{restores}{more}"


def cmd_reflect(args: argparse.Namespace) -> int:
    question = read_text(args.question, "QUESTION")
    provider = _provider(args)
    res = _run(provider, provider.reflect(question, session_id=args.session_id, user_id=args.user_id))
    emit(
        args,
        res.to_dict(),
        lambda: (
            (res.answer or "(memory does not answer this)")
            + f"\n(confidence {res.confidence:.2f}"
            + (f"; {len(res.conflicts)} conflict(s) among the cited records, the newest preferred" if res.conflicts else "")
            + (f"; fallback: {res.reason})" if res.fallback else ")")
        ),
    )
    if res.fallback:
        note(
            f"warning: reflect fell back to an extractive answer: {res.reason}"
            + ("" if args.allow_fallback else " (check --profile; --allow-fallback exits 0)")
        )
        return 0 if args.allow_fallback else EXIT_FALLBACK
    return 0


def _governance(args: argparse.Namespace) -> int:
    """``consolidate --history`` (the runs the caller may see) or ``--digest`` (one record of what changed)."""
    if args.history and args.digest:
        raise UsageError("--history and --digest are two commands: give one")
    if args.dry_run or args.worker:
        raise UsageError("--dry-run and --worker go with a consolidation run, not with --history/--digest")
    from agent_memory.model.events import acting

    provider = _provider(args)
    who = {"session_id": args.session_id, "user_id": args.user_id}
    if args.history:
        runs = _run(provider, provider.consolidation_history(since=args.since, **who))
        emit(args, {"runs": runs}, lambda: "\n".join(_run_text(r) for r in runs) or "no consolidation runs")
        return 0
    with acting("cli"):
        written = _run(provider, provider.consolidation_digest(since=args.since, **who))
    if written is None:
        emit(args, {"digest": None}, lambda: "nothing changed in that period: no digest written")
    else:
        emit(args, {"digest": written.to_dict()}, lambda: f"{written.status}: {written.id}")
    return 0


def _run_text(run: dict[str, Any]) -> str:
    applied = sum(1 for c in run["changes"] if c.get("status") == "applied")
    head = f"{run.get('at', '?')}  run {run.get('run')}  {'dry run' if run.get('dry_run') else 'applied'}: "
    head += f"{len(run['changes'])} change(s), {applied} applied (limit {run.get('limit')} of {run.get('total')})"
    lines = [head] + ([f"  stopped: {run['stop_reason']}"] if run.get("stopped") else [])
    for c in run["changes"]:
        why = f" ({c['note']})" if c.get("note") else ""
        lines.append(f"  {c['status']:<11} {c.get('action', 'archive')} {c['id']}  [{c['rule']}] {c['reason']}{why}")
    lines += [f"  drift {d['kind']:<22} {', '.join(d['record_ids'])}  {d['detail']}" for d in run.get("drift") or []]
    return "\n".join(lines)
