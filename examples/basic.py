"""The store in one minute: remember, search (snippets and line ranges), list, get, forget.

    python examples/basic.py            # a fresh temporary root each run
    python examples/basic.py --root DIR # or keep the memories in DIR

Offline: no model, no API key.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from agent_memory import MemoryProvider


async def main(root: Path) -> None:
    provider = MemoryProvider(root)
    print(f"memory root: {root}\n")

    print("1. remember")
    notes = [
        ("Staging database", "The staging database is Postgres 16 on db-staging.internal; "
         "migrations run with `make migrate`.", ["infra", "database"]),
        ("Release plan", "Release plan: freeze on Thursday, ship v2.4 on Monday after the smoke tests pass.", ["release"]),
        ("Answer style", "Ada prefers short answers with code first, and British spelling.", ["preference"]),
        ("Production deploys", "Deploys to production need a second reviewer on the pull request.", ["release", "process"]),
    ]
    ids = []
    for title, content, tags in notes:
        result = await provider.remember(content, title=title, tags=tags)
        ids.append(result.id)
        print(f"   {result.status:<9} {result.id}")
    again = await provider.remember(notes[0][1], title=notes[0][0], tags=notes[0][2])
    print(f"   {again.status:<9} {again.id}   (same text again: nothing new is written)")

    print("\n2. search: a natural-language question works as the query")
    for query in ("how do I run database migrations?", "when do we ship the release"):
        print(f'   "{query}"')
        for hit in (await provider.search(query, limit=2)).hits:
            snippet = " ".join(hit.snippet.split())
            print(f"     {hit.score:5.2f}  {Path(hit.path).name}  lines {hit.line_start}-{hit.line_end}")
            print(f"            {snippet}")

    print("\n3. list, filtered on tags")
    for record in await provider.list(tags=["release"]):
        print(f"   {record.title:<20} [{', '.join(record.tags)}]  {record.id}")

    print("\n4. get one record (frontmatter fields and content)")
    record = await provider.get(ids[2])
    print(f"   id={record.id} kind={record.kind} scope={record.scope} tags={list(record.tags)}")
    print(f"   content: {record.content.strip()}")

    print("\n5. forget it")
    print(f"   forgot: {await provider.forget(ids[2])}")
    left = (await provider.search("short answers British spelling")).hits
    print(f"   search for it now finds {len(left)} record(s); {len(await provider.list())} record(s) left")

    await provider.flush()  # no background work here, but flushing before exit is a good habit
    provider.close()


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, help="memory root (default: a fresh temporary directory)")
    args = parser.parse_args()
    if args.root:
        asyncio.run(main(args.root))
    else:
        with tempfile.TemporaryDirectory(prefix="agent-memory-basic-") as tmp:
            asyncio.run(main(Path(tmp) / ".agent-memory"))


if __name__ == "__main__":
    cli()
