"""PostgreSQL's event rows pass the write gate (:func:`agent_memory.model.drafts.prepare_event`), as the files
backend's event lines do: a secret in an event's ``detail`` (key or value) never reaches a row."""

from __future__ import annotations

import secrets
import string
from pathlib import Path
from typing import Any

from _pg import make_target

from agent_memory.backends.base import Caller
from agent_memory.backends.postgres.lifecycle import restore

ALNUM = string.ascii_letters + string.digits


async def _rows_holding(b: Any, needle: str) -> list[str]:
    found = []
    async with b.pool.connection() as conn:
        cur = await conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (b.schema,))
        for row in await cur.fetchall():
            cur = await conn.execute(
                f'SELECT count(*) AS n FROM "{b.schema}"."{row["table_name"]}" x WHERE position(%s in x::text) > 0', (needle,)
            )
            if (await cur.fetchone())["n"]:
                found.append(row["table_name"])
    return found


async def test_a_secret_in_an_event_detail_never_reaches_a_row(tmp_path: Path) -> None:
    token = "sk-proj-" + "".join(secrets.choice(ALNUM) for _ in range(48))
    password = "hunter2-" + secrets.token_hex(8)
    target = make_target("postgres", tmp_path)
    provider = target.provider()
    try:
        b = provider.backend
        rec = await provider.remember("The ferry leaves at nine.", user_id="ada", scope="user")
        assert await provider.forget(rec.id, user_id="ada") is True
        caller = Caller(None, "ada")
        extra: dict[str, Any] = {f"key {token}": "x"}
        await restore(b, rec.id, caller, note=f"asked by {token}", password=password, **extra)
        ev = [e for e in await b.events(caller) if e.event == "restored"][-1]
        assert ev.id == rec.id and ev.detail.get("from") == "archive" and "note" in ev.detail  # the event is kept
        for needle in (token, token[len("sk-proj-") :], password, password[len("hunter2-") :]):
            assert await _rows_holding(b, needle) == [], needle
            assert needle not in repr(ev)
    finally:
        await target.close()
