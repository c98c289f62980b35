"""``agent-memory mcp``: options, environment, and the command-line hooks.

``serve(argv_or_options)`` runs the server; ``add_mcp_command(subparsers)`` adds the ``mcp`` subcommand
to any argparse parser; ``register(add)`` fits the ``agent_memory.cli`` per-module pattern.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agent_memory.errors import needs_extra
from agent_memory.mcp._config import ACCESS, TOOL_SETS, ConfigError, Identity, ServerOptions, TokenMap
from agent_memory.model.values import shown

__all__ = ["serve", "add_mcp_command", "register", "options_from_args", "configure_parser"]

ENV = {
    "session": "AGENT_MEMORY_SESSION",
    "user": "AGENT_MEMORY_USER",
    "scope": "AGENT_MEMORY_SCOPE",
    "tokens": "AGENT_MEMORY_MCP_TOKENS",
    "root": "AGENT_MEMORY_ROOT",
}
HELP = "Serve memory to MCP clients (Claude Desktop, Claude Code, Cursor, …) over stdio or streamable HTTP."
EXAMPLES = [
    "agent-memory mcp --user alice",
    "agent-memory mcp --tools read",
    "agent-memory mcp --tools foreground --session chat-42",
    "agent-memory mcp --transport http --port 8765 --tokens tokens.json",
]


def _port(text: str) -> int:
    """``--port``: a TCP port, 0-65535 (0: any free one); anything else is a usage error naming the flag."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {shown(text)} (0-65535)") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0-65535, not {value}")
    return value


def _tool_sets(text: str) -> tuple[str, ...]:
    sets = tuple(t.strip() for t in text.replace("+", ",").split(",") if t.strip())
    bad = [t for t in sets if t not in TOOL_SETS]
    if bad or not sets:
        raise argparse.ArgumentTypeError(f"tool sets are {', '.join(TOOL_SETS)} (comma-separated), not {shown(text)}")
    return sets


def configure_parser(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``mcp`` options to ``p``."""
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="stdio (default) or streamable http")
    p.add_argument(
        "--tools",
        type=_tool_sets,
        default="read,capture",
        metavar="SETS",
        help=", ".join(f"{name} ({', '.join(t.removeprefix('memory_') for t in tools)})" for name, tools in TOOL_SETS.items())
        + "; each set includes the ones before it; default read,capture",
    )
    p.add_argument("--session", default=None, help=f"session id the server acts for (default ${ENV['session']})")
    p.add_argument("--user", default=None, help=f"user id the server acts for (default ${ENV['user']})")
    p.add_argument("--namespace", default=None, help="namespace the server acts in (acme/support; default the root)")
    p.add_argument("--isolation", choices=("full", "inherited", "shared"), default=None, help="what the namespace reads besides its own")
    p.add_argument(
        "--scope",
        dest="default_scope",
        choices=("session", "project", "user", "global"),
        default=None,
        help=f"scope of writes that name none (default ${ENV['scope']}, else the user's, else the session's)",
    )
    p.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    p.add_argument("--port", type=_port, default=8765, help="HTTP port (default 8765)")
    p.add_argument("--path", default="/mcp", help="HTTP endpoint path (default /mcp)")
    p.add_argument(
        "--tokens",
        default=None,
        metavar="FILE",
        help=f"HTTP tokens file mapping bearer tokens to users (default ${ENV['tokens']}); required to bind beyond loopback",
    )
    p.add_argument(
        "--access",
        choices=ACCESS,
        default=None,
        help="what the flag/env identity may change: read, own (its user/session records) or shared "
        "(also project/global; default). Tokens set theirs in the tokens file",
    )
    p.add_argument(
        "--strict-visibility",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="rank with statistics from each caller's visible records only; default on when the tokens "
        "act for more than one user or session",
    )
    p.add_argument("--profile", default="offline", help="model profile of the recall worker (default offline)")
    p.add_argument("--max-output-chars", type=int, default=20_000, help="bound on one tool result (default 20000)")
    p.add_argument(
        "--summarize-idle-every",
        type=float,
        metavar="SECONDS",
        default=None,
        help="summarise idle sessions (30 min idle or 20 new messages) every SECONDS while serving (default off)",
    )
    return p


def options_from_args(args: argparse.Namespace, env: "os._Environ[str] | dict[str, str] | None" = None) -> ServerOptions:
    """:class:`ServerOptions` from parsed arguments, with the environment filling what flags leave out."""
    env = os.environ if env is None else env
    tokens_path = args.tokens or env.get(ENV["tokens"]) or None
    identity = Identity(
        session_id=args.session or env.get(ENV["session"]) or None,
        user_id=args.user or env.get(ENV["user"]) or None,
        default_scope=args.default_scope or env.get(ENV["scope"]) or None,
        access=getattr(args, "access", None) or "shared",
        namespace=getattr(args, "namespace", None),
        isolation=getattr(args, "isolation", None),
    )
    if args.max_output_chars < 2000:
        raise ConfigError("--max-output-chars must be at least 2000")
    return ServerOptions(
        root=getattr(args, "root", None) or env.get(ENV["root"]) or ".agent-memory",
        transport=args.transport,
        tools=tuple(args.tools),
        identity=identity,
        host=args.host,
        port=args.port,
        path=args.path,
        tokens=TokenMap.load(tokens_path) if tokens_path else None,
        profile=args.profile,
        max_output_chars=args.max_output_chars,
        strict_visibility=getattr(args, "strict_visibility", None),
        summarize_idle_every=getattr(args, "summarize_idle_every", None),
    )


def serve(argv_or_options: Sequence[str] | ServerOptions | None = None, *, provider: Any = None) -> None:
    """Run the MCP server until its transport closes (stdio EOF) or it is interrupted (HTTP)."""
    if isinstance(argv_or_options, ServerOptions):
        options = argv_or_options
    else:
        parser = configure_parser(argparse.ArgumentParser(prog="agent-memory mcp", description=HELP))
        parser.add_argument("--root", default=None, help=f"memory root (default ${ENV['root']}, else .agent-memory)")
        options = options_from_args(parser.parse_args(argv_or_options))
    import asyncio  # imported here: registering the command stays cheap for every other CLI command

    asyncio.run(_serve(options, provider))


async def _serve(options: ServerOptions, provider: Any) -> None:
    with needs_extra("the MCP server (agent-memory mcp)"):
        from agent_memory.mcp.server import run_http, run_stdio
    from agent_memory.provider import MemoryProvider

    own = provider is None
    if own and "://" not in options.root and not (Path(options.root) / "records").is_dir():
        from agent_memory.backends.files.layout import missing_root

        raise missing_root(options.root)  # as every command but `init`: a mistyped --root creates nothing
    memory = MemoryProvider(options.root, profile=options.profile) if own else provider
    schedule = start_idle_summaries(memory, options)
    try:
        await (run_http if options.transport == "http" else run_stdio)(memory, options)
    finally:
        if schedule is not None:
            await schedule.stop()
        if own:
            await memory.aclose()


def start_idle_summaries(memory: Any, options: ServerOptions, **kwargs: Any) -> Any:
    """With ``--summarize-idle-every``: the started idle-session summary schedule (for the server's user when it acts
    for one user, else every session of the store); ``None`` when off."""
    if options.summarize_idle_every is None:
        return None
    user = options.identity.user_id if not options.tokens else None
    return memory.schedule_idle_summaries(options.summarize_idle_every, user_id=user, **kwargs)


def _handler(args: argparse.Namespace) -> int:
    serve(options_from_args(args))
    return 0


def add_mcp_command(subparsers: Any, **parser_kwargs: Any) -> argparse.ArgumentParser:
    """Add ``mcp`` to an argparse ``subparsers``; the handler is set as ``func`` (``args.func(args)``)."""
    p: argparse.ArgumentParser = subparsers.add_parser("mcp", help=HELP, description=HELP, **parser_kwargs)
    configure_parser(p)
    p.set_defaults(func=_handler)
    return p


def register(add: Callable[..., argparse.ArgumentParser]) -> dict[str, Callable[[argparse.Namespace], "int | None"]]:
    """The ``agent_memory.cli`` per-module hook: ``COMMANDS.update(register(add))``."""
    configure_parser(
        add(
            "mcp",
            HELP,
            EXAMPLES,
            "Identity (session, user, scope) comes from flags/env for stdio and from the tokens file "
            "for HTTP; never from a tool argument. Docs: docs/mcp.md.",
        )
    )
    return {"mcp": _handler}
