"""Worker commands: recall and capture (they import pydantic-ai; store commands never do).

A worker that fell back (misconfigured profile, model error, timeout) still prints its result, says why on
stderr and exits 3, so a script notices; ``--allow-fallback`` makes that exit 0.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Coroutine
from typing import Any

from agent_memory.cli._base import UsageError, add_identity, emit, note, positive, read_text
from agent_memory.cli._errors import EXIT_FALLBACK
from agent_memory.cli._target import IDENTITY, open_target

Handler = Callable[[argparse.Namespace], "int | None"]


def shipped_profiles() -> list[str]:
    """The shipped profile names (``agent_memory.agents.profiles.available_profiles``), read from the package's
    ``_profiles`` folder without importing the agents package (the CLI builds its help at every start)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("agent_memory.agents")
    where = list(spec.submodule_search_locations or []) if spec is not None else []
    return sorted({p.stem for d in where for p in (Path(d) / "_profiles").glob("*.toml")})


PROFILE_HELP = f"model profile: a shipped name ({', '.join(shipped_profiles())}) or a path to a TOML file (default offline)"


def register(add: Callable[..., argparse.ArgumentParser]) -> dict[str, Handler]:
    p = add(
        "recall",
        "Run the recall worker: one cited summary of what memory knows about MESSAGE.",
        [
            'agent-memory recall "when do we deploy?"',
            'agent-memory recall "what does Ada drink?" --user ada --budget 200 --json',
            'echo "plan the release" | agent-memory recall - --profile ./profiles/ollama.toml',
        ],
    )
    p.add_argument("message", help="the user's message (- for standard input)")
    add_identity(p)
    p.add_argument("--profile", default="offline", help=PROFILE_HELP)
    p.add_argument("--budget", type=positive, metavar="TOKENS", help="summary budget in tokens (default: the profile's, 400)")
    p.add_argument("--allow-fallback", action="store_true", help="exit 0 even when the worker fell back (default: exit 3)")

    p = add(
        "capture",
        "Run the capture worker over one turn and store the durable facts it finds.",
        [
            'agent-memory capture --input "Remember that staging is eu-west-1" --output "Noted."',
            'agent-memory capture --input "I moved to Munich" --user ada --json',
            "cat turn.txt | agent-memory capture --input - --session s1",
        ],
    )
    p.add_argument("--input", required=True, metavar="TEXT", help="the user's message of the turn (- for standard input)")
    p.add_argument("--output", metavar="TEXT", help="the assistant's reply (- for standard input; default: none)")
    add_identity(p)
    p.add_argument("--profile", default="offline", help=PROFILE_HELP)
    p.add_argument("--allow-fallback", action="store_true", help="exit 0 even when the worker fell back (default: exit 3)")
    return {"recall": cmd_recall, "capture": cmd_capture}


def _provider(args: argparse.Namespace, *, create: bool) -> Any:
    from agent_memory.agents.profiles import load_profile

    profile = load_profile(args.profile)  # a mistyped profile is an error here, not a silent fallback
    target = open_target(args.root, create=create)  # the root policy; a URL root is checked the same way
    from agent_memory.provider import MemoryProvider

    root = target.url or target.root
    target.close()
    return MemoryProvider(root, profile=profile, namespace=IDENTITY["namespace"], isolation=IDENTITY["isolation"])


def _run(provider: Any, work: Coroutine[Any, Any, Any]) -> Any:
    """Run one worker call and close the provider on the same event loop (pending captures flushed first): the
    command owns its connections (agent_memory.backends.postgres.pool), so a database root never sees a dead loop."""
    import asyncio

    async def main() -> Any:
        try:
            return await work
        finally:
            await provider.aclose()

    return asyncio.run(main())


def _fell_back(args: argparse.Namespace, what: str, reason: str | None) -> int:
    note(
        f"warning: {what} fell back: {reason or 'unknown reason'}"
        + ("" if args.allow_fallback else " (check --profile; --allow-fallback exits 0)")
    )
    return 0 if args.allow_fallback else EXIT_FALLBACK


def cmd_recall(args: argparse.Namespace) -> int:
    message = read_text(args.message, "MESSAGE")
    provider = _provider(args, create=False)
    res = _run(provider, provider.recall(message, session_id=args.session_id, user_id=args.user_id, summary_tokens=args.budget))
    emit(args, res.to_dict(), lambda: (res.summary or "(no relevant memory)") + (f"\n(fallback: {res.reason})" if res.fallback else ""))
    return _fell_back(args, "recall", res.reason) if res.fallback else 0


def cmd_capture(args: argparse.Namespace) -> int:
    if args.input == "-" and args.output == "-":
        raise UsageError("only one of --input and --output can read standard input")
    text_in = read_text(args.input, "--input")
    text_out = read_text(args.output, "--output") if args.output is not None else None
    provider = _provider(args, create=True)

    res = _run(provider, provider.capture_turn(text_in, text_out, session_id=args.session_id, user_id=args.user_id))

    def human() -> str:
        if res.fallback:
            return f"capture failed, nothing written: {res.reason}"
        lines = [f"{w.get('status')}: {w.get('id')}" for w in res.written]
        lines += [f"rejected: {r}" for r in res.rejected]
        return "\n".join(lines) or "nothing to remember"

    emit(args, res.to_dict(), human)
    return _fell_back(args, "capture", res.reason) if res.fallback else 0
