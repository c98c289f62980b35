"""Session commands: ``sessions`` (list the caller's session logs; ``summarize --idle``, ``distill``) and
``session show|summarize ID``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from agent_memory.cli._base import UsageError, add_identity, emit, positive, read_text
from agent_memory.cli._target import is_url, open_url, prepare_root
from agent_memory.model.wording import plural
from agent_memory.sessions import SessionStore
from agent_memory.sessions.api import read_session

Handler = Callable[[argparse.Namespace], "int | None"]


def _when(text: str) -> str:
    """``--at``: checked here, so a bad value is a usage error naming the flag (the value itself is passed on)."""
    from agent_memory.model.drafts import _parse_when
    from agent_memory.model.values import shown

    if _parse_when(text) is None:
        raise argparse.ArgumentTypeError(f"not an ISO date or datetime: {shown(text)} (e.g. 2026-11-01 or 2026-11-01T09:00:00Z)")
    return text


def register(add: Callable[..., argparse.ArgumentParser]) -> dict[str, Handler]:
    p = add(
        "sessions",
        "List the session logs the caller may see (its own session, its user's), newest first; or tend them all: "
        "summarize --idle (every session idle 30 min or with 20 new messages since its summary) and distill "
        "(the capture worker over messages not captured yet, imported logs included; never twice).",
        [
            "agent-memory sessions --user ada",
            "agent-memory sessions --session chat-42 --json",
            "agent-memory sessions summarize --idle",
            "agent-memory sessions summarize --idle --user ada --limit 5 --json",
            "agent-memory sessions distill --user ada",
        ],
    )
    p.add_argument(
        "action",
        nargs="?",
        choices=["list", "summarize", "distill"],
        default="list",
        help="list (default), summarize --idle (every due session), or distill (capture facts from messages not read yet)",
    )
    add_identity(p)
    p.add_argument(
        "--limit", type=positive, metavar="N", help="at most N sessions (list: default all; summarize: 20) or messages (distill: 500)"
    )
    p.add_argument("--idle", action="store_true", help="summarize: every session due under the summary policy (required)")
    p.add_argument("--profile", default="offline", help="summarize/distill: the profile whose model is used (default offline)")
    p = add(
        "session",
        "Append to one session's log, show its messages and summary, or summarise it now.",
        [
            'agent-memory session append chat-42 "We ship on Friday." --user ada --role user',
            "agent-memory session show chat-42 --session chat-42",
            "agent-memory session show chat-42 --user ada --last 20 --json",
            "agent-memory session summarize chat-42 --user ada --force",
        ],
    )
    p.add_argument(
        "action",
        choices=["append", "show", "summarize"],
        help="append TEXT as one message, show the log, or summarize it (when due, or --force)",
    )
    p.add_argument("id", help="the session id")
    p.add_argument("text", nargs="?", help="append: the message text (- for standard input)")
    p.add_argument("--role", default="user", help="append: the message's role (default user)")
    p.add_argument("--speaker", help="append: the speaker's name (default: none)")
    p.add_argument("--at", metavar="WHEN", type=_when, help="append: when it was said, ISO date or datetime (default: now)")
    add_identity(p)
    p.add_argument("--last", type=positive, metavar="N", help="show: only the last N messages (default: all)")
    p.add_argument("--force", action="store_true", help="summarize: even when not due (idle 30 min or 20 new messages)")
    p.add_argument("--profile", default="offline", help="summarize: the profile whose [summarize] model is used (default offline)")
    return {"sessions": cmd_sessions, "session": cmd_session}


def pg_time_layers(url: str) -> Any:
    """The session-log and episode stores of a PostgreSQL URL (their pool is closed at exit)."""
    import atexit

    backend: Any = open_url(url)
    layers = backend.time_layers
    atexit.register(layers.close)
    return layers


@contextlib.contextmanager
def seeing(args: argparse.Namespace, *, change: bool = False) -> Iterator[tuple[str, ...]]:
    """Bind the command's namespace view (``--namespace``/``--isolation`` and the root's registry) for the block:
    session logs and episodes read it and their writes land in its first namespace, the caller's own. ``change``:
    the caller's own namespace only (delete, restore)."""
    from agent_memory.cli._target import caller_of
    from agent_memory.model import scopes

    caller = caller_of()
    if change or not caller.namespace:
        view = caller.own_view()
    elif is_url(args.root):
        view = caller.view(pg_registry(pg_time_layers(args.root).pool))
    else:
        from agent_memory.backends.files.namespaces import read_registry

        view = caller.view(read_registry(prepare_root(args.root, create=False)[0]))
    with scopes.viewing(view):
        yield view


def pg_registry(pool: Any) -> dict[str, dict[str, Any]]:
    """The namespace registry of a PostgreSQL schema, over the time layers' synchronous pool."""
    with pool.connection() as conn:
        rows = conn.execute(f'SELECT name, shared, isolation FROM "{pool.schema}".namespaces').fetchall()
    return {r["name"]: {"shared": bool(r["shared"]), "isolation": r["isolation"]} for r in rows}


def _store(args: argparse.Namespace) -> SessionStore:
    if is_url(args.root):  # PostgreSQL: the schema's session rows
        store: SessionStore = pg_time_layers(args.root).sessions
        return store
    path, _ = prepare_root(args.root, create=False)
    return SessionStore(path)


def _identity(args: argparse.Namespace) -> dict[str, Any]:
    if args.session_id is None and args.user_id is None:
        raise UsageError("give --session ID and/or --user ID: session logs are private to their session and user")
    return {"session_id": args.session_id, "user_id": args.user_id}


def cmd_sessions(args: argparse.Namespace) -> int | None:
    if args.action == "summarize":
        if not args.idle:
            raise UsageError("sessions summarize needs --idle (one session: `agent-memory session summarize ID`)")
        return _tend(args, "summarize")
    if args.action == "distill":
        return _tend(args, "distill")
    if args.idle:
        raise UsageError("--idle goes with `sessions summarize`")
    with seeing(args):
        _list(args)
    return None


def _tend(args: argparse.Namespace, what: str) -> int:
    """``sessions summarize --idle`` / ``sessions distill`` through the provider (events on the store's log)."""
    from agent_memory.cli._workers import _run
    from agent_memory.cli.consolidate import _provider

    if args.session_id is not None and what == "summarize":
        raise UsageError("sessions summarize --idle takes --user (or nothing: every session), not --session")
    provider = _provider(args)
    if what == "summarize":
        rep: Any = _run(provider, provider.summarize_idle(user_id=args.user_id, limit=args.limit or 20))
    else:
        rep = _run(provider, provider.distill(user_id=args.user_id, session=args.session_id, limit=args.limit or 500))
    emit(args, rep.to_dict(), rep.text)
    return 0


def _list(args: argparse.Namespace) -> None:
    infos = _store(args).sessions(**_identity(args), limit=args.limit)
    doc = {"sessions": [i.to_dict() for i in infos]}

    def human() -> str:
        if not infos:
            return "no sessions visible to this caller"
        return "\n".join(
            f"{i.session_id}  {i.messages:4d} messages  {(i.first_at or '')[:16]} … {(i.last_at or '')[:16]}"
            f"  summary v{i.summary.version if i.summary else 0}"
            for i in infos
        )

    emit(args, doc, human)


def cmd_session(args: argparse.Namespace) -> None:
    with seeing(args):
        _session(args)


def _session(args: argparse.Namespace) -> None:
    store, who = _store(args), _identity(args)
    if args.action == "append":
        if args.text is None:
            raise UsageError("session append needs TEXT (or - for standard input)")
        if args.session_id not in (None, args.id):
            raise UsageError("append writes to the caller's own session: --session must be the session id")
        message = {"role": args.role, "text": read_text(args.text, "TEXT"), "speaker": args.speaker, "at": args.at}
        written = store.append(args.id, [message], user_id=args.user_id)
        emit(args, {"messages": [m.to_dict() for m in written]}, lambda: f"appended: {written[0].id}")
        return
    if args.action == "summarize":
        from agent_memory.agents.profiles import load_profile
        from agent_memory.agents.workers.summarize import summarize_session

        profile = load_profile(args.profile)
        made = asyncio.run(summarize_session(store, args.id, **who, worker=profile.summarize, force=args.force))
        emit(
            args, {"summary": made.to_dict() if made else None}, lambda: made.text if made else "not due (use --force to summarize anyway)"
        )
        return
    info, messages = read_session(store, args.id, who["session_id"], who["user_id"], args.last)
    doc = {**info.to_dict(), "log": [m.to_dict() for m in messages]}

    def human() -> str:
        out = [f"session {info.session_id} ({plural(info.messages, 'message')})"]
        if info.summary:
            out += [f"summary v{info.summary.version}:", info.summary.text, ""]
        out += [f"[{m.n}] {m.at[:16].replace('T', ' ')} {' '.join((m.speaker or m.role).split())}: {m.text}" for m in messages]
        return "\n".join(out)

    emit(args, doc, human)
