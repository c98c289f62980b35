"""The parser and ``main``: one place that turns every outcome into an exit code and at most one error line."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from agent_memory.cli import _base, _target
from agent_memory.cli._base import DEFAULT_ROOT, Parser, UsageError, dumps
from agent_memory.cli._errors import classify, one_line
from agent_memory.model.wording import redact_quoted

Handler = Callable[[argparse.Namespace], "int | None"]
COMMANDS: dict[str, Handler] = {}

#: The command modules, in help order (relative to this package), and the commands each registers. A cold run of
#: one command imports only its module (``agent-memory search`` never imports the sessions, events or MCP code);
#: ``tests/test_cli_imports.py`` checks this table against what each module registers.
MODULES: dict[str, tuple[str, ...]] = {
    "._records": ("remember", "search", "get", "list", "forget", "inject"),
    "._maint": ("init", "import", "reindex", "doctor", "sweep", "embed"),
    "._workers": ("recall", "capture"),
    "._eval": ("eval",),
    ".export": ("export",),
    ".curate": ("curate",),
    ".sessions": ("session", "sessions"),
    ".episodes": ("episodes",),
    ".lifecycle": ("events", "history", "purge", "restore", "undo"),
    ".consolidate": ("consolidate", "reflect"),
    ".tidy": ("tidy",),
    ".namespaces": ("namespace",),
    "..mcp.cli": ("mcp",),
}

EPILOG = """\
Exit codes: 0 ok, 1 error, 2 usage error, 3 a worker fell back (recall/capture), 130 interrupted.
Errors are one line on stderr; with --json also {"error": {"type", "message"}} on stdout.
Progress is drawn on stderr only when it is a terminal. Full reference: docs/cli.md."""


def _common(default: Any) -> Parser:
    p = Parser(add_help=False)
    p.add_argument(
        "--root",
        default=default,
        metavar="DIR|URL",
        help=f"memory root directory or postgresql:// URL (default $AGENT_MEMORY_ROOT, else {DEFAULT_ROOT})",
    )
    p.add_argument("--json", action="store_true", default=default, help="print exactly one JSON document on stdout")
    return p


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv`` (None for --help/--version or none): the first word after the global options."""
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token == "--root":
            skip = True
        elif not token.startswith("-"):
            return token
        elif token not in ("--json",) and not token.startswith("--root="):
            return None
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``agent-memory`` parser; fills :data:`COMMANDS` with one handler per subcommand.

    Given the ``argv`` about to be parsed and naming a known command, only the module of that command is
    imported (see :data:`MODULES`): a cold ``agent-memory search`` imports only what it runs."""
    from agent_memory import __version__

    parser = Parser(prog="agent-memory", description="Durable, searchable memory for LLM agents.", parents=[_common(None)], epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"agent-memory {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    common = _common(argparse.SUPPRESS)

    def add(name: str, text: str, examples: Sequence[str], epilog_extra: str = "") -> argparse.ArgumentParser:
        epilog = "Examples:\n" + "\n".join(f"  {e}" for e in examples) + (f"\n\n{epilog_extra}" if epilog_extra else "")
        return sub.add_parser(name, help=text, description=text, epilog=epilog, parents=[common])

    named = None if argv is None else _command_of(argv)
    wanted = [m for m, names in MODULES.items() if named in names] or list(MODULES)  # help or a typo: all of them
    here: dict[str, Handler] = {}
    for name in wanted:
        here.update(importlib.import_module(name, __package__).register(add))
    COMMANDS.update(here)
    return parser


# An optional positional given after options (`session append s7 --user ada "hello"`): argparse fills the
# positionals in one run before the options, leaving it unmatched; it is the command's, not an unknown argument.
_LATE_POSITIONALS = {"session": "text"}


def _late_positional(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> None:
    name = _LATE_POSITIONALS.get(getattr(args, "command", None) or "")
    if name is not None and getattr(args, name, None) is None and len(extra) == 1 and (extra[0] == "-" or not extra[0].startswith("-")):
        setattr(args, name, extra.pop())
    if extra:
        command = getattr(args, "command", None)
        if command:  # the command's own help, where its arguments are listed
            raise UsageError(f"unrecognized arguments: {' '.join(extra)} (see agent-memory {command} --help)")
        parser.error(f"unrecognized arguments: {' '.join(extra)}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (never raises, never prints a traceback)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    want_json = "--json" in argv
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("PYDANTIC_AI_NO_BANNER", "1")  # a library's CLI prints only its own output
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")  # a lone surrogate in a record never crashes printing
    _base.LIBRARY_LOGS.clear()
    try:
        parser = build_parser(argv)
        args, extra = parser.parse_known_args(argv)
        _late_positional(parser, args, extra)
        args.root_given = args.root is not None
        args.root = args.root or os.environ.get("AGENT_MEMORY_ROOT") or DEFAULT_ROOT
        if not ("://" in args.root and args.command == "search"):  # a one-shot PostgreSQL search never imports logging
            _base.library_logs()
        args.json = bool(args.json)
        _target.use_identity(getattr(args, "namespace", None), getattr(args, "isolation", None))
        code = COMMANDS[args.command](args) or 0
        sys.stdout.flush()
        quarantined = _base.LIBRARY_LOGS[0] if _base.LIBRARY_LOGS else None
        if quarantined is not None and quarantined.count and args.command != "doctor":
            print(
                f"agent-memory: warning: {quarantined.count} record file(s) quarantined (excluded from every read); "
                "`agent-memory doctor` names them with a fix",
                file=sys.stderr,
            )
        return code
    except SystemExit as exc:  # --help / --version
        return exc.code if isinstance(exc.code, int) else 0
    except BrokenPipeError:  # e.g. `agent-memory … | head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except BaseException as exc:  # noqa: BLE001 - the one place every failure becomes a line
        kind, message, code = classify(exc)
        return fail(want_json, kind, message, code)


def fail(want_json: bool, kind: str, message: str, code: int) -> int:
    message = one_line(redact_quoted(message))  # a secret a caller typed (e.g. as an id) is never echoed
    try:
        if want_json:
            print(dumps({"error": {"type": kind, "message": message}}))
        print(f"agent-memory: error: {message}", file=sys.stderr)
    except (BrokenPipeError, ValueError):  # pragma: no cover - nowhere left to report to
        pass
    return code
