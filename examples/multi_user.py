"""One agent, one MemoryCapability, many users: the caller comes from each run's ``deps``.

    python examples/multi_user.py            # offline: scripted main model, offline workers
    python examples/multi_user.py --root DIR

A server keeps one agent for everyone. ``MemoryCapability(provider, identity=...)`` reads who a
run is for from ``ctx.deps``, so Ada's memory reaches Ada's runs only, and Bob's Bob's.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory import MemoryProvider
from agent_memory.backends.base import Caller
from agent_memory.integrations.pydantic_ai import MemoryCapability


@dataclass
class Deps:
    """What the server knows about the request: the signed-in user and their chat."""

    user_id: str
    chat_id: str


def identity(ctx: RunContext[Deps]) -> Caller:
    return Caller(session_id=ctx.deps.chat_id, user_id=ctx.deps.user_id)


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Stands in for an LLM: says which memory it was given (the fenced recall and core block)."""
    seen = " ".join(str(getattr(p, "content", "")) for m in messages for p in m.parts) + " " + (info.instructions or "")
    facts = [w for w in ("peanuts", "shellfish", "Porto", "Oslo") if w in seen]
    return ModelResponse(parts=[TextPart(f"memory I was given mentions: {', '.join(facts) or 'nothing'}")])


async def main(root: Path) -> None:
    async with MemoryProvider(root) as provider:  # flushes background captures and closes on exit
        memory = MemoryCapability(provider, identity=identity)
        agent = Agent(FunctionModel(scripted_model), deps_type=Deps, capabilities=[memory])
        turns = [
            (Deps("ada", "ada-chat-1"), "Remember that I'm allergic to peanuts. I live in Porto."),
            (Deps("bob", "bob-chat-1"), "Remember that I'm allergic to shellfish. I live in Oslo."),
        ]
        for deps, message in turns:
            await agent.run(message, deps=deps)
        await provider.flush()  # the captures above ran in the background
        for deps, question in [(Deps("ada", "ada-chat-2"), "What am I allergic to, and where do I live?"),
                               (Deps("bob", "bob-chat-2"), "What am I allergic to, and where do I live?")]:
            result = await agent.run(question, deps=deps)
            print(f"{deps.user_id}: {question}\n  → {result.output}")
        ada = [r.content for r in await provider.list(user_id="ada", limit=None)]
        bob = [r.content for r in await provider.list(user_id="bob", limit=None)]
        print(f"ada's records: {sorted(ada)}")
        print(f"bob's records: {sorted(bob)}")


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, help="memory root (default: a fresh temporary directory)")
    args = parser.parse_args()
    if args.root:
        asyncio.run(main(args.root))
    else:
        with tempfile.TemporaryDirectory(prefix="agent-memory-multi-user-") as tmp:
            asyncio.run(main(Path(tmp) / ".agent-memory"))


if __name__ == "__main__":
    cli()
