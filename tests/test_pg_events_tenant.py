"""A write's event joins its own record, not another tenant's record with the same id.

Ids are unique per tenant only (PostgreSQL's key is ``(tenant, id)``). The event of a write joined the records
table on the id alone, so when another user held a record with the same id, the write also appended an event to that
user's log — their ``events`` listed it (a stranger's write shown as theirs, each event twice).
"""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path

import pytest
from _pg import make_target


def test_a_write_appends_no_event_to_another_tenants_record_of_the_same_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secrets, "token_hex", lambda n: "0" * (2 * n))  # both users mint the same id
    target = make_target("postgres", tmp_path)  # the files backend keeps ids unique across users

    async def run() -> None:
        p = target.provider()
        bob = await p.remember("The office plant needs water.", scope="user", user_id="bob")
        ada = await p.remember("The office plant needs water.", scope="user", user_id="ada")
        assert bob.id == ada.id  # the premise: one id, two tenants
        for user in ("ada", "bob"):
            events = [e for e in await p.events(user_id=user) if e.id == bob.id]
            assert [(e.event, e.owner_user) for e in events] == [("created", user)], (user, events)

    try:
        asyncio.run(run())
    finally:
        asyncio.run(target.close())
