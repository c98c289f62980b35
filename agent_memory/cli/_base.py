"""Shared pieces of the command line: the parser class, argument types, stdin, and output."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import re
import sys
from collections.abc import Callable
from typing import Any

from agent_memory.model.values import shown

DEFAULT_ROOT = ".agent-memory"
SCOPES = ["session", "project", "user", "global"]


class UsageError(Exception):
    """Bad command-line usage (exit code 2)."""


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the hand-wrapped examples of each command's epilog as written."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32, width=100)


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and exit 2 (through :class:`UsageError`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> Any:  # one clear line instead of usage + error
        # argparse quotes the value it refused ("invalid choice: '…'", "invalid float value: '…'"): never a secret
        raise UsageError(f"{_QUOTED.sub(_quoted, message)} (see {self.prog} --help)")


def _quoted(m: re.Match[str]) -> str:
    """A value argparse quoted, as :func:`shown` shows it (a secret as such), else as argparse quoted it."""
    value = m.group(1)
    text = shown(value)
    return text if text != repr(value) else m.group(0)


_QUOTED = re.compile(r"'([^'\n]{1,500})'")


# -- argument types ---------------------------------------------------------------------------
def positive(text: str) -> int:
    """An integer ≥ 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {shown(text)}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def fraction(text: str) -> float:
    """A number between 0 and 1 (importance)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {shown(text)}") from None
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, not {text}")
    return value


_DURATION = re.compile(r"\+?(\d{1,6})\s*([mhdw])", re.I)
_UNIT_S = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def expiry(text: str, *, now: dt.datetime | None = None) -> str:
    """``--expires``: an ISO date/datetime or a duration from now (``90m``, ``12h``, ``30d``, ``2w``), in the future.

    Returns an ISO UTC datetime. A time already past is refused (a record that is born expired is never visible).
    """
    now = now or dt.datetime.now(dt.UTC)
    m = _DURATION.fullmatch(text.strip())
    if m:
        when = now + dt.timedelta(seconds=int(m.group(1)) * _UNIT_S[m.group(2).lower()])
    else:
        try:
            when = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"not an ISO date/datetime or a duration like 30d: {shown(text)} (e.g. 2027-01-31, 2027-01-31T18:00:00Z, 12h, 30d)"
            ) from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
    if when <= now:
        raise argparse.ArgumentTypeError(f"{shown(text)} is already in the past (an expired record is never visible)")
    return when.astimezone(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def read_text(value: str, what: str) -> str:
    """``-`` means standard input (one trailing newline dropped); any other value is the text itself."""
    if value != "-":
        return value
    if sys.stdin is None or sys.stdin.isatty():
        raise UsageError(f"{what} is '-' (standard input) but nothing is piped in")
    text = sys.stdin.read()
    return text[:-1] if text.endswith("\n") else text


def add_identity(p: argparse.ArgumentParser) -> None:
    p.add_argument("--session", dest="session_id", metavar="ID", help="caller session id: sees (and owns) that session's records")
    p.add_argument("--user", dest="user_id", metavar="ID", help="caller user id: sees (and owns) that user's records")
    add_namespace(p)


def add_namespace(p: argparse.ArgumentParser) -> None:
    """``--namespace``/``--isolation``: the caller's namespace (writes land there) and what else it reads."""
    p.add_argument("--namespace", metavar="PATH", help="caller namespace (acme/support): writes land there; default the root")
    p.add_argument(
        "--isolation",
        choices=("full", "inherited", "shared"),
        help="what the namespace reads besides its own: nothing (full), its ancestors (inherited, default), shared siblings too",
    )


# -- output -----------------------------------------------------------------------------------
def finite(value: Any) -> Any:
    """``value`` with every NaN/±Infinity float replaced by None (strict JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def dumps(doc: Any) -> str:
    return json.dumps(finite(doc), ensure_ascii=False, allow_nan=False, default=str)


def emit(args: argparse.Namespace, doc: Any, human: Callable[[], str]) -> None:
    """Print one JSON document with ``--json``, else the human text (if any)."""
    if args.json:
        print(dumps(doc))
    else:
        text = human()
        if text:
            print(text)


def note(message: str) -> None:
    """One informational line on stderr (never on stdout, which belongs to the result)."""
    print(f"agent-memory: {message}", file=sys.stderr)


def fmt_score(score: float) -> str:
    """A score a person can read: 3 decimals, or 2 significant digits when it is that small."""
    if not isinstance(score, (int, float)) or not math.isfinite(score):
        return "   n/a"
    if score == 0 or abs(score) >= 0.001:
        return f"{score:6.3f}"
    return f"{score:6.1e}"


LIBRARY_LOGS: list[Any] = []  # the handler below, once made (one command per process; main() clears it)


def library_logs() -> Any:
    """Route the library's log lines to a handler that only counts quarantine warnings (the CLI says so in one
    line instead of many; library lines never interleave with our output). Made on first use: a one-shot
    PostgreSQL search never imports ``logging``."""
    if LIBRARY_LOGS:
        return LIBRARY_LOGS[0]
    import logging

    class QuarantineCounter(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.WARNING)
            self.count = 0

        def emit(self, record: logging.LogRecord) -> None:
            if "quarantined" in record.getMessage():
                self.count += 1

    counter = QuarantineCounter()
    logger = logging.getLogger("agent_memory")
    for old in [h for h in logger.handlers if type(h).__name__ == "QuarantineCounter"]:
        logger.removeHandler(old)  # an earlier main() in this process (tests call it many times)
    logger.addHandler(counter)
    logger.propagate = False
    LIBRARY_LOGS.append(counter)
    return counter
