"""``tidy``: the run's-end tidy pass by hand (expired, orphaned and exactly duplicated records; never destroys)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from agent_memory.cli._base import add_identity, emit, fraction, note
from agent_memory.cli._workers import _run  # the work and the provider's close on one event loop
from agent_memory.cli.consolidate import _provider, undo_hint

Handler = Callable[[argparse.Namespace], "int | None"]


def register(add: Callable[..., argparse.ArgumentParser]) -> dict[str, Handler]:
    p = add(
        "tidy",
        "Archive expired records, records whose scope_path is gone and exact duplicates (the newest copy stays), at most "
        "--max-share of the records (at least one), and refresh MEMORY.md: what runs by itself when an agent run ends.",
        [
            "agent-memory tidy --dry-run",
            "agent-memory tidy --user ada --json",
            "agent-memory tidy --max-share 0.05 --rules ttl,duplicate",
        ],
    )
    p.add_argument("--dry-run", action="store_true", help="show the plan; change nothing")
    p.add_argument("--max-share", type=fraction, metavar="F", help="change at most this share of the records (default 0.01, at least 1)")
    p.add_argument("--rules", metavar="R,R", help="only these rules: ttl,scope_path,duplicate (default all)")
    p.add_argument("--workspace", metavar="DIR", help="base of relative scope_path metadata (default: the root's parent)")
    add_identity(p)
    p.set_defaults(profile="offline")
    return {"tidy": cmd_tidy}


def cmd_tidy(args: argparse.Namespace) -> int:
    rules = tuple(r.strip() for r in args.rules.split(",") if r.strip()) if args.rules else None
    provider = _provider(args)
    rep = _run(
        provider,
        provider.tidy(
            session_id=args.session_id,
            user_id=args.user_id,
            max_share=args.max_share,
            dry_run=args.dry_run,
            workspace=args.workspace,
            rules=rules,
        ),
    )
    emit(args, rep.to_dict(), rep.text)
    if rep.applied:
        note("archived records are in the archive with the reason; " + undo_hint(args, rep.applied))
    return 0
