"""What lands on disk: one Markdown file per memory, scopes, ``memory_key`` append/replace, hand edits.

    python examples/records.py            # a fresh temporary root each run
    python examples/records.py --root DIR

Offline: no model, no API key. Files are the truth; ``index.db`` is derived and rebuilt when deleted.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from agent_memory import MemoryProvider


def show_file(path: Path, indent: str = "   │ ") -> None:
    for line in path.read_text(encoding="utf-8").rstrip().splitlines():
        print(indent + line)


async def main(root: Path) -> None:
    provider = MemoryProvider(root)
    print(f"memory root: {root}\n")

    print("1. One memory, one file: YAML frontmatter, then the content")
    first = await provider.remember(
        "We use trunk-based development; feature flags guard unfinished work.",
        title="Branching model", kind="decision", tags=["process"],
    )
    show_file(Path(first.path))

    print("\n2. Scopes are hard partitions")
    await provider.remember("Ada's editor is Helix.", scope="user", user_id="ada", title="Ada's editor")
    await provider.remember("Bob's editor is Emacs.", scope="user", user_id="bob", title="Bob's editor")
    await provider.remember("This chat is about the v2.4 release.", scope="session", session_id="chat-1", title="Chat topic")
    await provider.remember("The company style guide is at docs/style.md.", scope="global", title="Style guide")
    for who in ({"user_id": "ada", "session_id": "chat-1"}, {"user_id": "bob", "session_id": "chat-2"}):
        titles = sorted(r.title for r in await provider.list(**who))
        print(f"   {who['user_id']} in {who['session_id']} sees: {', '.join(titles)}")

    print("\n3. memory_key: one evolving record instead of many near-duplicates")
    r1 = await provider.remember("Sprint 12: ship search trace.", memory_key="sprint-goals", title="Sprint goals")
    r2 = await provider.remember("Sprint 12: add the doctor command.", memory_key="sprint-goals")
    r3 = await provider.remember("Sprint 12: add the doctor command.", memory_key="sprint-goals")
    print(f"   {r1.status}, then {r2.status}, then {r3.status} (the line is already there: no double)")
    print("   body: " + " / ".join((await provider.get(r1.id)).content.strip().splitlines()))
    r4 = await provider.remember("Sprint 13: ship the capability.", memory_key="sprint-goals", on_existing="replace")
    print(f"   {r4.status}: " + (await provider.get(r1.id)).content.strip())
    r5 = await provider.remember("Sprint 14: something else.", memory_key="sprint-goals", on_existing="skip")
    print(f"   {r5.status}: on_existing='skip' keeps what is there")

    print("\n4. Hand edits are picked up")
    path = Path(first.path)
    path.write_text(path.read_text(encoding="utf-8").replace("feature flags", "feature toggles (LaunchDarkly)"), encoding="utf-8")
    edited = await provider.get(first.id)  # get always reads the file itself
    print(f"   get: {edited.content.strip()}")
    # search uses the index: in-place edits are re-indexed on the next periodic rescan
    # (MemoryStore rescan_interval, 10 s by default), or at once with reindex()
    await provider.reindex()
    hits = (await provider.search("LaunchDarkly toggles")).hits
    print(f"   after reindex(), search 'LaunchDarkly toggles' → {hits[0].id if hits else 'nothing'}")
    (root / "USER.md").write_text("# About the user\nAda, staff engineer. Prefers concise answers.\n", encoding="utf-8")
    block = await provider.inject(300, user_id="ada")
    print(f"   a hand-written USER.md leads the core block ({block.tokens} tokens):")
    for line in block.text.splitlines()[:6]:
        print(f"   │ {line}")

    print("\n5. The root, as files")
    for item in sorted(root.rglob("*")):
        if item.is_file() and not item.name.startswith(".") and "index.db" not in item.name:
            print(f"   {item.relative_to(root)}")
    print("   index.db  (derived: delete it and it is rebuilt from the files)")

    await provider.flush()
    provider.close()


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, help="memory root (default: a fresh temporary directory)")
    args = parser.parse_args()
    if args.root:
        asyncio.run(main(args.root))
    else:
        with tempfile.TemporaryDirectory(prefix="agent-memory-records-") as tmp:
            asyncio.run(main(Path(tmp) / ".agent-memory"))


if __name__ == "__main__":
    cli()
