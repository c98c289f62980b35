"""``agent-memory curate``: a user's curated ("hot") memory — add, replace, list and remove short lines.

The lines are records (kind ``curated``; see :mod:`agent_memory.model.curated`), so ``history``, ``undo``,
``restore``, ``purge``, ``export`` and ``search`` work on them like on any record; ``inject`` shows them first.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from agent_memory.cli._base import UsageError, add_identity, emit, read_text
from agent_memory.cli._records import _same_caller
from agent_memory.cli._target import BackendTarget, StoreTarget, caller_of, open_target

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.base import MemoryBackend

Handler = Callable[[argparse.Namespace], "int | None"]


def _priority(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"priority must be an integer from 1 to 10, not {text!r}") from None
    if not 1 <= value <= 10:
        raise argparse.ArgumentTypeError(f"priority must be an integer from 1 to 10, not {value}")
    return value


def register(add: Callable[..., argparse.ArgumentParser]) -> dict[str, Handler]:
    p = add(
        "curate",
        "A user's curated memory: short lines (priority 1-10) always first in that user's core block.",
        [
            'agent-memory curate "Prefers answers in metric units" --user ada --priority 8',
            "agent-memory curate --list --user ada",
            'agent-memory curate "Prefers imperial units" --replace ID --user ada',
            "agent-memory curate --remove ID --user ada --json",
            'agent-memory curate "Deploys happen on Fridays" --shared',
        ],
        epilog_extra="A line is one line of at most 300 characters, redacted like every write; a user holds at most\n"
        "50 lines (and the project 50 shared ones). Removed or replaced lines come back with `undo`/`restore`.",
    )
    p.add_argument("text", nargs="?", help="the line ('-' reads stdin); with --replace: its new text (optional)")
    p.add_argument("--priority", type=_priority, metavar="N", help="1 (low) to 10 (high); default 5 (replace: keep the line's)")
    p.add_argument("--shared", action="store_true", help="a project line, shown to every caller (default: the --user's own)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--list", action="store_true", help="list the caller's curated lines in block order (its user's and shared)")
    group.add_argument("--remove", metavar="ID", help="remove one curated line (archived: `undo` brings it back)")
    group.add_argument("--replace", metavar="ID", help="replace the text and/or priority of one curated line")
    add_identity(p)
    return {"curate": cmd_curate}


def _run(target: StoreTarget | BackendTarget, work: Callable[["MemoryBackend"], Coroutine[Any, Any, Any]]) -> Any:
    if isinstance(target, StoreTarget):
        from agent_memory.backends.files.backend import FilesBackend

        return asyncio.run(work(FilesBackend(target.store)))
    return target._run(work(target.backend))


def cmd_curate(args: argparse.Namespace) -> None:
    from agent_memory.agents import curated as ops
    from agent_memory.model.events import acting

    caller = caller_of(args.session_id, args.user_id)  # in the command's --namespace
    if args.list:
        if args.text is not None or args.priority is not None:
            raise UsageError("--list takes no TEXT and no --priority")
        with open_target(args.root, create=False) as target:
            lines = _run(target, lambda b: ops.curated_lines(b, caller, scope="project" if args.shared else None))
        emit(
            args,
            {"lines": [line.to_dict() for line in lines]},
            lambda: "\n".join(f"{ln.id}  (priority {ln.priority}, {ln.scope})  {ln.text}" for ln in lines) or "no curated lines",
        )
        return
    if args.remove is not None:
        if args.text is not None or args.priority is not None:
            raise UsageError("--remove takes no TEXT and no --priority")
        with open_target(args.root, create=False) as target, acting("cli"):
            _run(target, lambda b: ops.remove_line(b, caller, args.remove, source="manual"))
        emit(
            args,
            {"id": args.remove, "removed": True},
            lambda: f"removed: {args.remove} (`agent-memory undo{_same_caller(args)}` brings it back)",
        )
        return
    text = None if args.text is None else read_text(args.text, "TEXT")
    if args.replace is not None:
        with open_target(args.root, create=False) as target, acting("cli"):
            res = _run(target, lambda b: ops.replace_line(b, caller, args.replace, text, priority=args.priority, source="manual"))
    else:
        if text is None:
            raise UsageError("curate needs TEXT (or --list, --remove ID, --replace ID)")
        scope = "project" if args.shared else "user"
        with open_target(args.root, create=True) as target, acting("cli"):
            res = _run(target, lambda b: ops.add_line(b, caller, text, priority=args.priority, scope=scope, source="manual"))
    redacted = f" ({res.redactions} secret{'s' if res.redactions != 1 else ''} redacted)" if res.redactions else ""
    emit(args, res.to_dict(), lambda: f"{res.status}: {res.id}{redacted}")
