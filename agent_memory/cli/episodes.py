"""``agent-memory episodes``: list (newest first), search, show and check the episodes of agent runs."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from agent_memory.cli._base import UsageError, add_identity, emit, positive
from agent_memory.cli._target import is_url, prepare_root
from agent_memory.cli.sessions import seeing
from agent_memory.errors import NotFoundError

Handler = Callable[[argparse.Namespace], "int | None"]
DEFAULT_LIMIT = 20


def register(add: Callable[..., argparse.ArgumentParser]) -> dict[str, Handler]:
    p = add(
        "episodes",
        "List past agent runs (episodes), newest first; --query ranks them by terms; show ID; doctor.",
        [
            "agent-memory episodes --user ada",
            'agent-memory episodes --query "deploy billing" --status failed --json',
            "agent-memory episodes show ep-20261123-101500-a1b2c3d4 --user ada",
            "agent-memory episodes doctor",
            "agent-memory episodes delete ep-20261123-101500-a1b2c3d4 --user ada",
        ],
    )
    p.add_argument(
        "action",
        nargs="?",
        metavar="show|delete|restore|doctor",
        help="show ID: print one episode; delete ID: delete one (evented; restore ID brings it back); "
        "doctor: name quarantined episode files (default: list)",
    )
    p.add_argument("id", nargs="?", help="episode id (with show, delete, restore)")
    p.add_argument("-q", "--query", metavar="TEXT", help="rank episodes by these terms (goal, tools, failures, exit)")
    p.add_argument("--status", choices=["ok", "failed", "paused"], help="only runs that ended so (default: any)")
    p.add_argument(
        "--limit", type=positive, default=DEFAULT_LIMIT, metavar="N", help=f"at most N episodes (1-1000; default {DEFAULT_LIMIT})"
    )
    add_identity(p)
    return {"episodes": cmd_episodes}


def _store(args: argparse.Namespace) -> Any:
    from agent_memory.cli.sessions import pg_time_layers
    from agent_memory.episodes import EpisodeStore

    if is_url(args.root):  # PostgreSQL: the schema's episode rows
        return pg_time_layers(args.root).episodes
    path, _ = prepare_root(args.root, create=False)
    return EpisodeStore(path)


def _line(e: Any) -> str:
    goal = " ".join(e.goal.split())
    goal = goal if len(goal) <= 60 else goal[:59] + "…"
    refined = "  (refined)" if getattr(e, "refined_by", None) else ""
    return f"{e.id}  {e.started[:16].replace('T', ' ')}  {e.status:<6}  {e.exit:<9}  {goal}  [{e.approach}]{refined}"


def _show(e: Any) -> str:
    head = [f"id: {e.id}", f"started: {e.started}", f"ended: {e.ended}", f"scope: {e.scope.value}"]
    head += [
        f"{k}: {v}"
        for k, v in (
            ("session", e.session_id),
            ("user", e.user_id),
            ("run", e.run_id),
            ("model", e.model),
            ("refined by", getattr(e, "refined_by", None)),
        )
        if v
    ]
    return "\n".join(head) + "\n\n" + str(e.body())


_WITH_ID = ("show", "delete", "restore")


def cmd_episodes(args: argparse.Namespace) -> None:
    if args.action not in (None, "doctor", *_WITH_ID):
        raise UsageError(f"unknown action {args.action!r}: use `episodes`, `episodes show|delete|restore ID` or `episodes doctor`")
    if (args.action in _WITH_ID) != (args.id is not None):
        raise UsageError(
            f"`episodes {args.action}` takes one episode id" if args.action in _WITH_ID else f"unexpected argument {args.id!r}"
        )
    if args.action in ("delete", "restore"):
        _delete_or_restore(args)
        return
    if args.limit > 1000:
        raise UsageError("--limit is at most 1000")
    with seeing(args):
        _read(args)


def _read(args: argparse.Namespace) -> None:
    store = _store(args)
    if args.action == "doctor":
        problems = store.doctor()
        emit(
            args,
            {"quarantined": problems},
            lambda: "\n".join(f"{p['path']}: {p['reason']}" for p in problems) or "all episode files are readable",
        )
        return
    who = {"session_id": args.session_id, "user_id": args.user_id}
    if args.action == "show":
        episode = store.get(args.id, **who)
        emit(args, episode.to_dict(), lambda: _show(episode))
        return
    found = store.list(args.query, limit=args.limit, status=args.status, **who)
    emit(args, {"episodes": [e.to_dict() for e in found]}, lambda: "\n".join(_line(e) for e in found) or "no episodes")


def _not_changeable(args: argparse.Namespace, store: Any, who: dict[str, Any]) -> NotFoundError | None:
    """An episode this caller reads (``episodes show``) in another namespace than its own: say that only the
    caller's own namespace can be changed (None: not readable either, the original error stands)."""
    from agent_memory.cli._target import IDENTITY, not_changeable

    if args.action != "delete":
        return None
    with seeing(args):  # the caller's read view: nothing it could not read already
        try:
            episode = store.get(args.id, **who)
        except NotFoundError:
            return None
    if (episode.namespace or "") == (IDENTITY["namespace"] or ""):
        return None
    return not_changeable("episode", args.id, episode.namespace)


def _delete_or_restore(args: argparse.Namespace) -> None:
    """``episodes delete|restore ID``: through the backend, so the change is in the event log."""
    from agent_memory.backends.base import EpisodesBackend, require
    from agent_memory.cli._target import BackendTarget, open_target
    from agent_memory.model.events import acting

    who = {"session_id": args.session_id, "user_id": args.user_id}
    with open_target(args.root, create=False) as target, acting("cli"), seeing(args, change=True):
        if isinstance(target, BackendTarget):
            store = require(target.backend, EpisodesBackend, "episodes").episodes
        else:
            from agent_memory.backends.files.backend import FilesBackend

            store = FilesBackend(target.store).episodes
        try:
            episode = store.delete(args.id, **who) if args.action == "delete" else store.restore(args.id, **who)
        except NotFoundError as exc:
            raise _not_changeable(args, store, who) or exc from None
    done = "deleted" if args.action == "delete" else "restored"
    from agent_memory.cli._records import _same_caller  # the identity that deleted it sees it: the hint runs as printed

    hint = f" (`agent-memory episodes restore {episode.id}{_same_caller(args)}` brings it back)" if args.action == "delete" else ""
    emit(args, {"id": episode.id, done: True}, lambda: f"{done}: {episode.id}{hint}")
