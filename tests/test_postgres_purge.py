"""A user/session purge takes what is the user's *or* the session's in every store, on both backends.

Records always matched either owner; session logs and episodes on PostgreSQL used to need both to match when
both were given (``purge(user_id=…, session_id=…)`` then kept the user's other sessions and the session's other
users). The report's ``stores`` counts what went from each store.
"""

from __future__ import annotations

from typing import Any

import pytest

# (user, session): a log message and an episode each; ada in two sessions, bob shares s1 with her and owns s3
OWNERS = [("ada", "s1"), ("ada", "s2"), ("bob", "s1"), ("bob", "s3"), ("cyd", "s4")]


async def _fill(provider: Any) -> dict[tuple[str, str], str]:
    records = {}
    for user, sid in OWNERS:
        await provider.log_messages([{"role": "user", "text": f"{user} says hi in {sid}"}], session_id=sid, user_id=user)
        await provider.record_episode(f"{user} works in {sid}", user_id=user, session_id=sid)
        rec = await provider.remember(f"{user} noted a fact in {sid}.", user_id=user, session_id=sid, scope="session")
        records[(user, sid)] = rec.id
    return records


async def _left(provider: Any) -> set[tuple[str, str, str]]:
    """What each owner still sees of its own: ("log" | "episode" | "record", user, session)."""
    out = set()
    for user, sid in OWNERS:
        if any(i.session_id == sid for i in await provider.sessions(session_id=sid, user_id=user)):
            out.add(("log", user, sid))
        if any(e.session_id == sid for e in await provider.episodes(session_id=sid, user_id=user)):
            out.add(("episode", user, sid))
        if any(r.session_id == sid for r in await provider.list(session_id=sid, user_id=user)):
            out.add(("record", user, sid))
    return out


@pytest.mark.parametrize(("who", "gone"), [
    ({"user_id": "ada"}, {("ada", "s1"), ("ada", "s2")}),
    ({"session_id": "s1"}, {("ada", "s1"), ("bob", "s1")}),
    ({"user_id": "ada", "session_id": "s3"}, {("ada", "s1"), ("ada", "s2"), ("bob", "s3")}),
], ids=["user", "session", "user-or-session"])
async def test_purge_takes_the_users_or_the_sessions_logs_episodes_and_records(backend: Any, who: dict[str, str],
                                                                               gone: set[tuple[str, str]]) -> None:
    provider = backend.provider()
    records = await _fill(provider)
    everything = {(kind, u, s) for u, s in OWNERS for kind in ("log", "episode", "record")}
    assert await _left(provider) == everything
    report = await provider.purge(**who)
    assert await _left(provider) == {(k, u, s) for k, u, s in everything if (u, s) not in gone}
    assert sorted(report.records) == sorted(records[o] for o in gone)
    assert report.stores["sessions"] == len(gone), report.stores
    assert report.stores["episodes"] == len(gone), report.stores
    assert report.stores["records"] == len(gone), report.stores
