"""Lifecycle commands: history, restore, undo, purge, events (files and PostgreSQL roots)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from agent_memory.cli._base import UsageError, add_identity, emit, positive
from agent_memory.cli._target import StoreTarget, open_target
from agent_memory.errors import InvalidInputError, PermissionDeniedError
from agent_memory.model.events import NotSupportedError, acting

Handler = Callable[[argparse.Namespace], "int | None"]


def register(add: Callable[..., argparse.ArgumentParser]) -> dict[str, Handler]:
    p = add(
        "history",
        "Every version of a record (live or archived), oldest first, with its events.",
        [
            "agent-memory history 2026-11-22-deploy-day-a1b2c3d4",
            "agent-memory history 2026-11-22-deploy-day-a1b2c3d4 --user ada --json",
        ],
    )
    p.add_argument("id", help="record id")
    add_identity(p)

    p = add(
        "restore",
        "Bring back a forgotten or swept record, or make an earlier version current.",
        [
            "agent-memory restore 2026-11-22-deploy-day-a1b2c3d4",
            "agent-memory restore 2026-11-22-deploy-day-a1b2c3d4 --version 1 --json",
        ],
    )
    p.add_argument("id", help="record id")
    p.add_argument(
        "--version", type=positive, metavar="N", help="the version to make current, as numbered by `history` (default: the previous one)"
    )
    add_identity(p)

    p = add(
        "undo",
        "Reverse the caller's last change (identity flags say who) that is not undone yet.",
        ["agent-memory undo", "agent-memory undo --user ada --json"],
    )
    add_identity(p)

    p = add(
        "purge",
        "Delete content for good: one record (ID) or everything of one owner. Irreversible.",
        [
            "agent-memory purge 2026-11-22-deploy-day-a1b2c3d4",
            "agent-memory purge --user ada --json",
            "agent-memory purge --user ada --session s1",
            "agent-memory purge --session s1",
            "agent-memory purge --namespace acme/support",
            "agent-memory purge --namespace acme/support --user ada",
        ],
        epilog_extra="With an ID, --session/--user are the caller (who must see the record); without, they name ONE\n"
        "owner, never another: --user U is everything of U (all scopes, all U's sessions); --user U\n"
        "--session S is only U's session S; --session S alone is only the session S without a user\n"
        "(the same session id under another user is another session and stays). That owner's data goes\n"
        "from every store of the root: records, kept versions, archive, index pages, vectors, event\n"
        "payloads, the recall log, session logs and episodes (the report names each); shared records\n"
        "that stay keep their text but lose the owner's ids from their provenance.\n"
        "--namespace NS (no ID) takes what is in NS and its descendants (acme/support/agent-7 too):\n"
        "alone, every record, session log and episode there, whoever owns it, and their events'\n"
        "payloads; with --user/--session, only that owner's there. The root namespace is refused.",
    )
    p.add_argument("id", nargs="?", help="record id (omit to purge by --user/--session)")
    add_identity(p)

    p = add(
        "events",
        "The event log: who changed what, when (records the caller may see), oldest first.",
        ["agent-memory events --limit 20", "agent-memory events --id 2026-11-22-deploy-day-a1b2c3d4 --json"],
    )
    p.add_argument("--id", dest="record_id", metavar="ID", help="only events of this record")
    p.add_argument("--limit", type=positive, metavar="N", help="only the last N events")
    add_identity(p)
    return {"history": cmd_history, "restore": cmd_restore, "undo": cmd_undo, "purge": cmd_purge, "events": cmd_events}


PG_LIFECYCLE = frozenset({"history", "restore", "purge", "forget --purge", "undo", "events"})


class _PgLifecycle:
    """history, restore, undo, events and purge of a PostgreSQL root, with the files store's call shapes (one call,
    then closed)."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return self.target._run(getattr(self.target.backend, name)(*args, **kwargs))
        finally:
            self.target.close()

    def history(self, record_id: str, **caller: Any) -> Any:
        return self._call("history", record_id, self.target._caller(caller))

    def restore(self, record_id: str, *, version: int | None = None, **caller: Any) -> Any:
        return self._call("restore", record_id, self.target._caller(caller), version=version)

    def purge(self, record_id: str | None = None, **caller: Any) -> Any:
        if record_id is None:
            return self._call("purge", record_id, **caller)
        from agent_memory.model import scopes

        view = self.target._caller({}).own_view()  # a record id is found in the command's own namespace

        async def in_view() -> Any:
            with scopes.viewing(view):
                return await self.target.backend.purge(record_id, **caller)

        try:
            return self.target._run(in_view())
        finally:
            self.target.close()

    def undo(self, **caller: Any) -> Any:
        return self._call("undo", self.target._caller(caller))

    def events_for(self, record_id: str | None = None, *, limit: int | None = None, **caller: Any) -> Any:
        return self._call("events", self.target._caller(caller), record_id=record_id, limit=limit)


def files_store(args: argparse.Namespace, what: str) -> Any:
    """The files store behind ``--root``; on a database root, its history/restore/undo/events/purge (else a typed error)."""
    target = open_target(args.root, create=False)
    if not isinstance(target, StoreTarget):
        if what in PG_LIFECYCLE:
            return _PgLifecycle(target)
        target.close()
        raise NotSupportedError.of(what, target.backend, "files roots only")
    return target.store


@contextlib.contextmanager
def _changing() -> Iterator[None]:
    """A change (restore, undo) acts in the command's own namespace only, never an ancestor's it may read."""
    from agent_memory.cli._target import caller_of
    from agent_memory.model import scopes

    with scopes.viewing(caller_of().own_view()):
        yield


def _caller(args: argparse.Namespace) -> dict[str, Any]:
    return {"session_id": args.session_id, "user_id": args.user_id}


def _event_line(e: dict[str, Any]) -> str:
    who = " ".join(f"{k}={e[k]}" for k in ("session_id", "user_id", "run_id") if e.get(k))
    change = f"{e.get('before') or '-'} -> {e.get('after') or '-'}"
    return f"{e['ts']}  {e['event']:<10} {e['id']}  by {e.get('actor', '?')}{' ' + who if who else ''}  {change}"


def cmd_history(args: argparse.Namespace) -> None:
    doc = files_store(args, "history").history(args.id, **_caller(args)).to_dict()

    def human() -> str:
        state = f"superseded by {doc['superseded_by']}" if doc.get("superseded_by") else doc["state"]
        out = [f"{doc['id']} ({state})"]
        for v in doc["versions"]:
            out.append(f"  v{v['version']}{' (current)' if v['current'] else ''}  {v['updated']}  {v['title']}")
        out.extend("  " + _event_line(e) for e in doc["events"])
        return "\n".join(out)

    emit(args, doc, human)


def cmd_restore(args: argparse.Namespace) -> None:
    store = files_store(args, "restore")  # opened first: its own view binding is the read view
    with acting("cli"), _changing():
        try:
            rec = store.restore(args.id, version=args.version, **_caller(args))
        except InvalidInputError as exc:
            if str(exc).startswith("version must be"):  # a --version out of range is a usage error (exit 2)
                raise UsageError(f"--{exc} (see `agent-memory history {args.id}`)") from None
            raise
    emit(args, {"id": rec.id, "restored": True, "content_hash": rec.content_hash}, lambda: f"restored: {rec.id}")


def cmd_undo(args: argparse.Namespace) -> None:
    store = files_store(args, "undo")
    with acting("cli"), _changing():
        ev = store.undo(**_caller(args))
    emit(args, {"undone": ev.to_dict()}, lambda: f"undone: {ev.event} of {ev.id} ({ev.ts})")


def cmd_purge(args: argparse.Namespace) -> None:
    namespace = getattr(args, "namespace", None)
    if args.id is None and not (args.session_id or args.user_id) and namespace is None:
        raise UsageError("purge needs a record ID, --user U, --session S or --namespace NS")
    who = _caller(args)
    if args.id is None and namespace is not None:  # an owner purge: --namespace is what goes (with its descendants)
        who["namespace"] = namespace
    if args.id is not None and namespace:  # a namespaced caller purges only in its namespace and below
        purgeable(args, namespace)
    with acting("cli"):
        rep = files_store(args, "purge").purge(args.id, **who)
    stores = getattr(rep, "stores", None) or {}
    named = "\n  stores: " + ", ".join(f"{k} {v}" for k, v in stores.items()) if stores else ""
    emit(
        args,
        rep.to_dict(),
        lambda: (
            f"purged {len(rep.records)} record(s), {rep.files} file(s), "
            f"{rep.vectors} vector(s); {rep.events} event(s) now tombstones{named}"
        ),
    )


def purgeable(args: argparse.Namespace, namespace: str) -> None:
    """Refuse (:class:`PermissionDeniedError`) a record the ``--namespace`` caller may read but that lies outside
    its namespace and descendants (an ancestor's, which it inherits); one it cannot see is a NotFoundError."""
    from agent_memory.model import scopes

    mine = scopes.check_namespace(namespace)
    versions = files_store(args, "history").history(args.id, **_caller(args)).versions
    theirs = (versions[-1].namespace or "") if versions else ""
    if theirs != mine and not theirs.startswith(mine + "/"):
        raise PermissionDeniedError(
            f"record {args.id} is in namespace {theirs!r}, outside {mine!r}: purge it as its own namespace's caller"
        )


def cmd_events(args: argparse.Namespace) -> None:
    events = files_store(args, "events").events_for(args.record_id, limit=args.limit, **_caller(args))
    doc = {"events": [e.to_dict() for e in events]}
    emit(args, doc, lambda: "\n".join(_event_line(e) for e in doc["events"]) or "no events")
