"""Export and migration commands: ``export`` (JSONL or a Markdown tree) and ``import --format …``.

``register(add)`` follows the per-command-module pattern of this package (``add(name, help, examples,
epilog_extra)`` returns the subparser). ``add_import_format``/``wants_portable``/``cmd_import_format`` let the
``import`` command of ``_maint`` read our export and other memories' files (see docs/export.md).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from agent_memory.cli._base import add_namespace
from agent_memory.cli._target import IDENTITY, caller_of, check_output
from agent_memory.errors import InvalidInputError
from agent_memory.model.wording import plural

Handler = Callable[[argparse.Namespace], "int | None"]
IMPORT_FORMATS = ("auto", "drafts", "agent-memory", "alfred-v2", "alfred-py", "cuylabs", "mem0")
_OPENED: list[Any] = []  # what `_target` opened for the running command: `_closing` closes it when the command ends
_R = TypeVar("_R")


def _tracked(fn: Callable[..., Any]) -> Callable[..., Any]:
    def target(root: str, *, create: bool) -> Any:
        made = fn(root, create=create)
        _OPENED.append(made)
        return made

    return target


def _closing(handler: Callable[[argparse.Namespace], _R]) -> Callable[[argparse.Namespace], _R]:
    """The command, then (however it ends) the close of every store or backend it opened: a database backend's
    connections and its session/episode pool go with the command (agent_memory.backends.postgres.pool)."""

    @functools.wraps(handler)
    def run(args: argparse.Namespace) -> _R:
        try:
            return handler(args)
        finally:
            while _OPENED:
                closed = _OPENED.pop().close()
                if closed is not None:  # a backend's close is a coroutine; a files store's is done
                    import asyncio  # not at the top: a cold one-shot search never imports it

                    asyncio.run(closed)

    return run


def _dumps(doc: Any) -> str:
    def finite(v: Any) -> Any:
        if isinstance(v, float):
            return v if math.isfinite(v) else None
        if isinstance(v, dict):
            return {k: finite(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [finite(x) for x in v]
        return v

    return json.dumps(finite(doc), ensure_ascii=False, allow_nan=False, default=str)


@_tracked
def _target(root: str, *, create: bool) -> Any:
    if "://" in root:
        from agent_memory.cli._target import open_url

        return open_url(root)  # one process, one command: no pool (a pool outlives the loop of a sync export)
    import os

    from agent_memory.cli._base import note
    from agent_memory.cli._target import prepare_root

    path, created = prepare_root(root, create=create)  # the root policy of every command (cli/_target.py)
    from agent_memory.backends.files.store import MemoryStore

    store = MemoryStore(path)
    if created:
        note(f"created memory root {os.path.abspath(path)}")
    return store


def register(add: Callable[..., argparse.ArgumentParser]) -> dict[str, Handler]:
    p = add(
        "export",
        "Export every record: JSONL with every field (lossless for records; stdout by default) or a Markdown tree; --full: the whole root.",
        [
            "agent-memory export > memories.jsonl",
            "agent-memory export --out memories.jsonl --json",
            "agent-memory export --format markdown --out ./memory-tree",
            "agent-memory export --user alice --out alice.jsonl",
            "agent-memory export --full --out root.jsonl   # + archive, namespace registry, session logs, episodes, events",
            "agent-memory export | agent-memory --root ./other import -",
        ],
        epilog_extra="Without --session/--user the whole store is exported, every user's records (expired ones too), on\n"
        "files and PostgreSQL alike; with them, only what that caller may see (the export's header and\n"
        "the report say so). Plain JSONL and the Markdown tree hold records only (superseded versions too);\n"
        "--full also carries the archive, the namespace registry, session logs and summaries, episodes and\n"
        "events. `agent-memory import FILE` (or `import -` from a pipe) reads the JSONL back byte for byte.",
    )
    p.add_argument("--format", choices=("jsonl", "markdown"), default="jsonl", help="jsonl (default) or markdown")
    p.add_argument("--out", metavar="PATH", help="file (jsonl) or new directory (markdown); default: standard output")
    p.add_argument("--session", dest="session_id", metavar="ID", help="export only what this session may see")
    p.add_argument("--user", dest="user_id", metavar="ID", help="export only what this user may see")
    add_namespace(p)
    p.add_argument(
        "--full",
        action="store_true",
        help="every section of the store (JSONL): records, archive, namespace registry, session logs and summaries, episodes, events",
    )
    return {"export": cmd_export}


@_closing
def cmd_export(args: argparse.Namespace) -> None:
    from agent_memory.portable import export_records

    caller = caller_of(args.session_id, args.user_id) if (args.session_id or args.user_id or args.namespace) else None
    if args.format == "markdown" and not args.out:
        raise InvalidInputError("--format markdown needs --out DIR (a new or empty directory)")
    if args.out is not None:
        check_output(args.out, "--out")  # never over a record, USER.md, index.db or the root itself
    target = _target(args.root, create=False)
    problems: dict[str, str] = {}
    counts: dict[str, int] = {}
    full = bool(getattr(args, "full", False))
    if caller is None:
        contents: Any = "whole store"
        what = "the whole store (every user)"
    else:
        contents = {"caller": {"session_id": caller.session_id, "user_id": caller.user_id}}
        if caller.namespace:
            contents["caller"]["namespace"] = caller.namespace
        who = " and ".join(
            f"{k} {v}" for k, v in (("user", caller.user_id), ("session", caller.session_id), ("namespace", caller.namespace)) if v
        )
        what = f"only what {who} may see"
    if args.out is None:
        if args.json:
            raise InvalidInputError("--json needs --out PATH (standard output carries the export itself)")
        export_records(target, sys.stdout, format="jsonl", caller=caller, problems=problems, full=full, counts=counts)
    else:
        n = export_records(target, args.out, format=args.format, caller=caller, problems=problems, full=full, counts=counts)
        doc = {"exported": n, "format": args.format, "out": str(args.out), "unreadable": problems, "contents": contents, "sections": counts}
        extra = "".join(f", {_count(k, v)}" for k, v in counts.items() if k != "records")
        print(_dumps(doc) if args.json else f"exported {plural(n, 'record')}{extra} to {args.out} ({args.format}): {what}")
    if caller is not None:
        print(f"agent-memory: this export holds {what}; without --user/--session it holds the whole store", file=sys.stderr)
    for name, why in problems.items():
        where = name if "/" in name else f"records/{name}"
        print(f"agent-memory: not exported: {where}: {why} (see `agent-memory doctor`)", file=sys.stderr)


def add_import_format(p: argparse.ArgumentParser) -> None:
    """The options ``import`` gains: which format FILE is, and the caller an import runs as (every record in its
    partition: :func:`agent_memory.model.drafts.apply_override`)."""
    p.add_argument(
        "--format",
        choices=IMPORT_FORMATS,
        default="auto",
        help="auto (default: our export or another memory's files, else JSONL drafts), drafts, agent-memory, "
        "alfred-v2, alfred-py, cuylabs or mem0",
    )
    p.add_argument(
        "--as-user",
        dest="as_user",
        metavar="ID",
        help="import as this user: every record lands in their partition (a shared one is downgraded)",
    )
    p.add_argument(
        "--as-session",
        dest="as_session",
        metavar="ID",
        help="import as this session: every record lands in its partition (a shared one is downgraded)",
    )
    p.add_argument(
        "--allow-purged",
        dest="allow_purged",
        action="store_true",
        help="re-import records (and a purged owner's session logs and episodes) purged from this store; by default "
        "they are skipped as `purged` (a purge is the right to be forgotten)",
    )
    add_namespace(p)


def wants_portable(args: argparse.Namespace) -> bool:
    """True if ``import`` should go to :func:`cmd_import_format` rather than read JSONL drafts."""
    fmt = getattr(args, "format", "drafts")
    if fmt == "drafts" or args.file == "-":
        return False
    if fmt != "auto":
        return True
    from agent_memory.portable.importers import detect

    try:
        return detect(Path(args.file)) is not None
    except (InvalidInputError, OSError):
        return False


_KIND_WORDS = {
    "archived": "archived record",
    "session": "session log",
    "episode": "episode",
    "event": "event",
    "namespace": "namespace",
    "cursor": "distill cursor",
}
_SECTION_WORDS = {"archive": "archived record", "namespaces": "namespace registry"}  # export --full's other sections


def _what(doc: dict[str, Any]) -> str:
    """``2 records, 1 session log, 2 events``: what an import wrote, by kind (records first, always named)."""
    kinds = dict(doc.get("written_by_kind") or {})
    parts = [_count("record", kinds.pop("record", 0))]
    parts += [_count(kind, n) for kind in _KIND_WORDS if (n := kinds.pop(kind, 0))]
    return ", ".join(parts)


def _count(kind: str, n: int) -> str:
    """``1 event``, ``7 events``, ``2 session logs``: a count of one kind of item (an export section, an import kind)."""
    return plural(n, _KIND_WORDS.get(kind) or _SECTION_WORDS.get(kind, kind))


#: per kind of skip other than ``invalid`` (always listed line by line), how many the text output names
SHOWN_SKIPS = 3


def _skip_lines(skips: list[dict[str, Any]]) -> str:
    """Each invalid line named; any other reason (``exists`` on a re-run: one per record) as a count and the first
    few (``--json`` lists every one)."""
    out: list[str] = []
    by_reason: dict[str, list[dict[str, Any]]] = {}
    for s in skips:
        by_reason.setdefault(s["reason"], []).append(s)
    for reason, group in by_reason.items():
        shown = group if reason == "invalid" else group[:SHOWN_SKIPS]
        out.extend(f"\n  skipped {s['where']}: {s['reason']}: {s['message']}" for s in shown)
        if len(group) > len(shown):
            out.append(f"\n  … and {len(group) - len(shown)} more {reason} (--json lists every one)")
    return "".join(out)


def _count_lines(path: str) -> int | None:
    try:
        with open(path, "rb") as fh:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
    except OSError:
        return None


@_closing
def cmd_import_format(args: argparse.Namespace) -> int:
    """``import`` of our export or another memory's files; ``args.piped``: our export's numbered lines read from
    standard input (``import -``)."""
    from agent_memory.cli import _progress
    from agent_memory.cli._errors import Interrupted
    from agent_memory.portable import BadLine, ImportReport, import_file, import_lines

    lines: Iterable[tuple[int, str | None]] | None = getattr(args, "piped", None)
    target = _target(args.root, create=True)
    strict = not getattr(args, "skip_invalid", False)
    source = "<stdin>" if lines is not None else str(args.file)
    report = ImportReport(format=args.format, path=source)
    total = _count_lines(args.file) if _progress.enabled() and lines is None else None
    bar = _progress.Progress("importing", total, "line")
    options: dict[str, Any] = {
        "user_id": getattr(args, "as_user", None),
        "session_id": getattr(args, "as_session", None),
        "namespace": IDENTITY["namespace"],
        "allow_purged": bool(getattr(args, "allow_purged", False)),
        "strict": strict,
        "progress": bar,
        "report": report,
    }
    try:
        if lines is not None:
            import_lines(target, lines, where=source, **options)
        else:
            import_file(target, args.file, format=args.format, **options)
    except BadLine as exc:
        raise InvalidInputError(
            f"{source}: line {exc.line}: {exc.reason} (nothing imported; fix the line, or pass --skip-invalid)"
        ) from None
    except KeyboardInterrupt:
        bar.close()
        raise Interrupted(
            f"interrupted: {_what(report.to_dict())} from {source} were written ({plural(len(report.skipped), 'line')} skipped); "
            "re-running the same import is safe (what is already there is skipped as `exists`)"
        ) from None
    finally:
        bar.close()
    report.settle()
    doc = report.to_dict()
    if args.json:
        print(_dumps(doc))
    else:
        reasons = ", ".join(f"{v} {k}" for k, v in sorted(doc["skipped_by_reason"].items()))
        print(
            f"imported {_what(doc)} from {source} ({doc['format']})"
            + (f"; skipped {doc['skipped']}: {reasons}" if doc["skipped"] else "")
            + _skip_lines(doc["skips"])
            + "".join(f"\n  {r['where']}: {r['message']}" for r in doc["rescoped"])
        )
        purged = [s for s in doc["skips"] if s["reason"] == "purged"]
        if purged:
            print(
                f"agent-memory: {len(purged)} item(s) were purged from this store and were not re-imported"
                " (pass --allow-purged to bring them back deliberately)",
                file=sys.stderr,
            )
    return 0
