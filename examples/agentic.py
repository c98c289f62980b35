"""The private workers at work: capture reads a transcript and writes memories; recall answers from them.

    python examples/agentic.py                    # offline workers (deterministic, no LLM, no API key)
    python examples/agentic.py --profile openai   # the same with real worker models
    python examples/agentic.py --root DIR

Part 3 wires memory into a hand-written chat loop with :class:`agent_memory.integrations.hooks.MemoryHooks`,
with no pydantic-ai main agent: the same lifecycle works in any runtime.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import textwrap
from pathlib import Path
from typing import Any

from agent_memory import MemoryProvider
from agent_memory.integrations.hooks import MemoryHooks

TRANSCRIPT = [
    {"role": "user", "content": "Let's use Postgres 16 for the new billing service."},
    {"role": "assistant", "content": "Good choice. Should staging mirror production?"},
    {"role": "user", "content": "Yes. Remember that the staging deploy runs every night at 02:00 UTC."},
    {"role": "assistant", "content": "Noted. Anything about code review?"},
    {"role": "user", "content": "I prefer pull requests under 400 lines. My timezone is CET."},
    {"role": "assistant", "content": "Got it."},
    {"role": "user", "content": "We decided that the public API is versioned with a /v2 prefix."},
    {"role": "assistant", "content": "I'll keep that in mind."},
]
QUESTIONS = [
    "Which database does the billing service use?",
    "When does the staging deploy run?",
    "How big should my pull requests be?",
]
WHO = {"session_id": "planning-chat", "user_id": "ada"}


def show(text: str, indent: str = "     ") -> None:
    for line in text.rstrip().splitlines():
        print(textwrap.fill(line, 100, initial_indent=indent, subsequent_indent=indent + "  ", break_on_hyphens=False))


def usage_line(result: Any) -> str:
    usage = result.usage or {}
    flag = f", FALLBACK ({result.reason})" if result.fallback else ""
    return (f"{result.model}: {usage.get('requests', 0)} model request(s), {usage.get('tool_calls', 0)} tool call(s), "
            f"{result.elapsed_s * 1000:.0f} ms{flag}")


async def main(root: Path, profile: str) -> None:
    provider = MemoryProvider(root, profile=profile)
    print(f"memory root: {root}   worker profile: {profile!r}\n")

    print("1. The capture worker reads a transcript and writes memories")
    print("   (here: a long chat is being compacted; its old messages are captured before they are dropped)")
    for message in TRANSCRIPT:
        show(f"{message['role']:>9}: {message['content']}", indent="   ")
    captured = await provider.capture_before_compaction(TRANSCRIPT, "Planning chat about the billing service.", **WHO)
    print(f"\n   → {usage_line(captured)}")
    for item in captured.written:
        record = await provider.get(item["id"], **WHO)
        key = f", key {record.memory_key}" if record.memory_key else ""
        print(f"     {item['status']:<9} {record.content.strip()}  ({record.kind}{key})")

    print("\n2. The recall worker answers from them: one compact, cited summary per message")
    for question in QUESTIONS:
        result = await provider.recall(question, **WHO)
        print(f'\n   "{question}"')
        show(result.summary or "(nothing relevant)")
        print(f"     → {len(result.sources)} source(s), {result.tokens} tokens; {usage_line(result)}")

    print("\n3. Any runtime: MemoryHooks in a hand-written chat loop (no pydantic-ai main agent)")
    hooks = MemoryHooks(provider, session_id="support-chat", user_id="ada")
    system_base = "You are a helpful engineering assistant."
    history: list[dict[str, str]] = []
    previous: str | None = None
    for message in ["Remember that my on-call week starts on Monday.", "When does the staging deploy run?"]:
        ctx = await hooks.on_turn_start(message)
        system = system_base + ("\n\n" + ctx.core if ctx.core else "")  # frozen: same bytes every turn
        history.append({"role": "user", "content": message})
        if ctx.recall:  # user role, right after the message it is about, kept in history
            history.append({"role": "user", "content": ctx.recall})
        request = repr([{"role": "system", "content": system}, *history])
        answer = fake_llm(system, history)
        history.append({"role": "assistant", "content": answer})
        await hooks.on_turn_end(message, answer)  # capture in the background
        stable = "" if previous is None else f"; starts with the previous request unchanged: {request.startswith(previous[:-1])}"
        print(f"\n   user: {message}")
        print(f"     core block {len(ctx.core)} chars in the system prompt; recall {len(ctx.recall)} chars as a user message"
              f"{stable}")
        print(f"     assistant: {answer}")
        previous = request
    results = await hooks.flush()  # wait for pending captures before the process exits
    print(f"\n   flushed {len(results)} background capture(s)")
    provider.close()


def fake_llm(system: str, history: list[dict[str, str]]) -> str:
    """Stands in for any chat-completion call: answers from the recalled memory it was sent."""
    recalled = [m["content"] for m in history if m["role"] == "user" and "<<<MEMORY" in m["content"]]
    asked = [m["content"] for m in history if m["role"] == "user" and "<<<MEMORY" not in m["content"]]
    if recalled and "deploy" in asked[-1]:
        line = next((row for row in recalled[-1].splitlines() if "02:00" in row), None)
        if line:
            return "From memory: " + line.lstrip("- ").split(" [")[0]
    return "Noted."


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="offline", help="worker profile name or TOML path (default: offline)")
    parser.add_argument("--root", type=Path, help="memory root (default: a fresh temporary directory)")
    args = parser.parse_args()
    if args.root:
        asyncio.run(main(args.root, args.profile))
    else:
        with tempfile.TemporaryDirectory(prefix="agent-memory-agentic-") as tmp:
            asyncio.run(main(Path(tmp) / ".agent-memory", args.profile))


if __name__ == "__main__":
    cli()
