"""Automatic memory for a pydantic-ai agent: ``MemoryCapability`` over several turns.

    python examples/automatic_recall.py                 # offline: scripted main model, offline workers
    python examples/automatic_recall.py --model openai:gpt-4.1-mini --profile openai
    python examples/automatic_recall.py --model litellm:ollama_chat/llama3.1 --profile ollama

Ada tells the agent a few facts in a first chat. The next day, in a new chat with no shared
message history, the agent books a dinner using them: they reach the model only through memory.
Each turn prints what memory injected (the core block, in the instructions, frozen per
conversation), what it recalled (a fenced user-role message in the turn's first request),
and what the capture worker stored after the turn.

Offline (the default) the main agent is a small scripted model that answers only from what it
finds in its instructions and messages; no API key, no network. ``--model`` takes any
pydantic-ai model string or ``litellm:<name>``; ``--profile`` picks the memory workers' profile.
A fresh temporary memory root is used unless ``--root`` is given.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pydantic_ai
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory import MemoryProvider
from agent_memory.agents.fence import CLOSE, OPEN
from agent_memory.integrations.hooks import RECALL_NOTICE
from agent_memory.integrations.pydantic_ai import MemoryCapability

INSTRUCTIONS = "You are Ada's assistant. Be brief. Use the find_restaurant tool to book restaurants."

# (conversation, user message). A new conversation starts with no message history.
SCRIPT = [
    ("Monday chat", "Hi! Please remember that I'm vegetarian. I live in Porto."),
    ("Monday chat", "We decided to hold the team offsite on 12 June."),
    ("Tuesday chat", "Can you book a dinner for the team offsite?"),
    ("Tuesday chat", "Actually, I live in Lisbon now."),
    ("Tuesday chat", "Where do I live?"),
]

WIDTH = 100
LABEL = 11


# -- the offline main model: answers only from what it sees -------------------------------------
def memory_texts(messages: list[ModelMessage], instructions: str | None) -> list[str]:
    """The memory the model was given, freshest first: this turn's recall, earlier recalls, then the core block."""
    recalled = [p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts
                if isinstance(p, UserPromptPart) and isinstance(p.content, str) and p.content.startswith(RECALL_NOTICE)]
    core = [instructions] if instructions and OPEN in instructions else []
    return [t.split(OPEN, 1)[1].split(CLOSE, 1)[0] for t in reversed(recalled)] + \
           [t.split(OPEN, 1)[1].split(CLOSE, 1)[0] for t in core]


def find(pattern: str, texts: list[str]) -> str | None:
    for text in texts:
        if m := re.search(pattern, text, re.IGNORECASE):
            return m.group(1)
    return None


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    returns = [p for p in last.parts if isinstance(p, ToolReturnPart)] if isinstance(last, ModelRequest) else []
    if returns:
        return ModelResponse(parts=[TextPart(f"Done: {returns[0].content}")])
    prompt = next(p.content for m in reversed(messages) if isinstance(m, ModelRequest) for p in m.parts
                  if isinstance(p, UserPromptPart) and not str(p.content).startswith(RECALL_NOTICE))
    memory = memory_texts(messages, info.instructions)
    city = find(r"lives in ([A-Z][a-z]+)", memory)
    lowered = prompt.lower()
    if "book" in lowered or "dinner" in lowered:
        args = {"city": city or "unknown", "date": find(r"offsite on (\d+ \w+)", memory) or "unknown",
                "diet": find(r"\b(vegetarian|vegan)\b", memory) or "any"}
        return ModelResponse(parts=[ToolCallPart("find_restaurant", args)])
    if lowered.startswith("where do i live"):
        return ModelResponse(parts=[TextPart(f"You live in {city}." if city else "I don't know yet.")])
    if "remember" in lowered or "decided" in lowered or lowered.startswith("actually"):
        return ModelResponse(parts=[TextPart("Noted.")])
    return ModelResponse(parts=[TextPart("Hello!")])


def find_restaurant(city: str, date: str, diet: str = "any") -> str:
    """Find and book a restaurant for a group dinner.

    Args:
        city: The city to book in.
        date: The date of the dinner, e.g. "12 June".
        diet: A dietary requirement, e.g. "vegetarian", or "any".
    """
    place = {"Porto": "Casa Verde", "Lisbon": "Jardim 33"}.get(city, "a restaurant")
    style = f"{diet} " if diet and diet != "any" else ""
    return f"booked {place}, a {style}restaurant in {city}, for the team on {date}."


# -- printing -------------------------------------------------------------------------------------
def say(label: str, text: str = "", *, more: list[str] | None = None) -> None:
    pad = " " * (2 + LABEL)
    lines = textwrap.wrap(text, WIDTH - len(pad)) or [""]
    print(f"  {label:<{LABEL}}{lines[0]}".rstrip())
    for line in lines[1:]:
        print(pad + line)
    for line in more or []:
        print(pad + "  " + textwrap.shorten(line, WIDTH - len(pad) - 2, placeholder=" …"))


def memory_lines(fenced: str) -> list[str]:
    """The lines inside a fence, with record ids shortened for display."""
    body = fenced.split(OPEN, 1)[1].split(CLOSE, 1)[0] if OPEN in fenced else fenced
    lines = [line for line in body.strip().splitlines() if line.strip() and not line.startswith("## ")]
    return [re.sub(r"\b\d{4}-\d{2}-\d{2}-[a-z0-9-]*?-([0-9a-f]{8})\b", r"…\1", line) for line in lines]


async def describe_capture(provider: MemoryProvider, capture: Any, session_id: str, user_id: str) -> None:
    result = capture.result() if isinstance(capture, asyncio.Task) else capture
    if result is None:
        say("captured", "nothing (capture failed; see the log)")
        return
    changed = [w for w in result.written if w.get("status") in ("created", "appended", "replaced")]
    if not changed:
        say("captured", "nothing new" + (f" (fallback: {result.reason})" if result.fallback else ""))
        return
    lines = []
    for item in changed:
        record = await provider.get(item["id"], session_id=session_id, user_id=user_id)
        key = f", key {record.memory_key}" if record.memory_key else ""
        lines.append(f"+ {record.content.strip()}  [{item['status']}: {record.kind}, {record.scope} scope{key}]")
    say("captured", f"{len(changed)} memor{'y' if len(changed) == 1 else 'ies'}, stored by the capture worker "
                    "in the background after the answer:", more=lines)


# -- the demo -------------------------------------------------------------------------------------
async def main(root: Path, model_spec: str | None, profile: str) -> None:
    provider = MemoryProvider(root, profile=profile)
    if model_spec:
        from agent_memory.agents.models.litellm import make_model

        main_model: Any = make_model(model_spec)
        model_label = model_spec
    else:
        main_model, model_label = FunctionModel(scripted_model), "scripted offline model (answers only from what it sees)"

    print("agent_memory · automatic recall with MemoryCapability")
    print(f"main model   {model_label}")
    print(f"workers      profile {profile!r}")
    print(f"memory root  {root}")

    user_id = "ada"
    history: list[ModelMessage] | None = None
    memory: MemoryCapability | None = None
    agent: Agent[None, str] | None = None
    current = None
    cores_shown: set[str] = set()
    turn_no = 0
    for conversation, message in SCRIPT:
        if conversation != current:
            current, history = conversation, None
            session_id = conversation.lower().replace(" ", "-")
            memory = MemoryCapability(provider, session_id=session_id, user_id=user_id)
            agent = Agent(main_model, instructions=INSTRUCTIONS, capabilities=[memory], tools=[find_restaurant])
            title = f"{conversation} · session {session_id!r} · user {user_id!r}"
            note = "a new chat: no message history shared with Monday" if turn_no else "memory starts empty"
            print(f"\n{'═' * WIDTH}\n{title}  ({note})\n{'═' * WIDTH}")
        assert memory is not None and agent is not None
        turn_no += 1
        print(f"\nTurn {turn_no}")
        say("user", message)

        result = await agent.run(message, message_history=history)
        history = result.all_messages()
        await provider.flush()  # wait for the background capture (the answer did not wait for it)
        turn = memory.last_turn
        assert turn is not None

        first_turn = current not in cores_shown
        cores_shown.add(current)
        size = f"{turn.core_block.tokens} tokens" if turn.core_block else ""
        if not turn.core:
            say("injected", "core block: empty (nothing stored yet)" + ("" if first_turn else "; unchanged"))
        elif first_turn:
            say("injected", f"core block in the instructions ({size}), computed once and frozen for this conversation:",
                more=memory_lines(turn.core))
        else:
            say("injected", f"core block unchanged ({size}): byte-identical instructions, so the prompt cache keeps hitting")

        recall = turn.recall_result
        if turn.recall:
            extra = f"; fallback: {recall.reason}" if recall is not None and recall.fallback else ""
            sources = len(recall.sources) if recall is not None else 0
            say("recalled", f"{sources} source(s) → a fenced user-role message in this turn's first request, "
                            f"kept in history{extra}:", more=memory_lines(turn.recall))
        else:
            reason = f" (fallback: {recall.reason})" if recall is not None and recall.fallback else ""
            say("recalled", "nothing relevant, so nothing was added" + reason)

        for msg in result.new_messages():
            if isinstance(msg, ModelResponse):
                for part in msg.parts:
                    if isinstance(part, ToolCallPart):
                        args = ", ".join(f"{k}={v!r}" for k, v in part.args_as_dict().items())
                        say("tool call", f"{part.tool_name}({args})")
        say("assistant", str(result.output))
        await describe_capture(provider, turn.capture, memory.session_id or "", user_id)

    print(f"\n{'─' * WIDTH}")
    print("In the Tuesday chat the model never saw Monday's messages: Porto, vegetarian and 12 June came from memory.")
    print("Lisbon arrived through recall while the core block stayed frozen: earlier bytes of the conversation were")
    print("resent unchanged on every request, so a provider's prompt cache can hit them.")
    await provider.flush()  # always flush before exit: pending background captures are otherwise lost
    provider.close()


def cli() -> None:
    pydantic_ai.BANNER_ENABLED = False  # a demo prints only its own output (the memory workers never show it)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="main agent model: any pydantic-ai model string or litellm:<name> (default: scripted, offline)")
    parser.add_argument("--profile", default="offline", help="memory worker profile name or TOML path (default: offline)")
    parser.add_argument("--root", type=Path, help="memory root (default: a fresh temporary directory)")
    args = parser.parse_args()
    if args.root:
        asyncio.run(main(args.root, args.model, args.profile))
    else:
        with tempfile.TemporaryDirectory(prefix="agent-memory-demo-") as tmp:
            asyncio.run(main(Path(tmp) / ".agent-memory", args.model, args.profile))


if __name__ == "__main__":
    cli()
