"""A user/session purge takes exactly one owner's partition in every store, on both backends.

``user_id`` alone: everything of that user; ``user_id`` and ``session_id``: that user's session only;
``session_id`` alone: the session without a user. This test used to encode "the user's *or* the session's" (a
purge of ada and s3 took bob's s3, a purge of s1 took every user's s1): another owner's data went. The report's
``stores`` counts what went from each store.
"""

from __future__ import annotations

from typing import Any

import pytest
from _doubles import fill_owners, owned_left

# (user, session): a log message and an episode each; ada in two sessions, bob and nobody use s1 too, bob owns s3
OWNERS: list[tuple[str | None, str]] = [("ada", "s1"), ("ada", "s2"), ("bob", "s1"), ("bob", "s3"), ("cyd", "s4"), (None, "s1")]


@pytest.mark.parametrize(
    ("who", "gone"),
    [
        ({"user_id": "ada"}, {("ada", "s1"), ("ada", "s2")}),
        ({"session_id": "s1"}, {(None, "s1")}),
        ({"user_id": "ada", "session_id": "s1"}, {("ada", "s1")}),
        ({"user_id": "ada", "session_id": "s3"}, set()),
    ],
    ids=["user", "anonymous-session", "users-session", "no-such-session-of-the-user"],
)
async def test_purge_takes_one_owners_logs_episodes_and_records(
    backend: Any, who: dict[str, str], gone: set[tuple[str | None, str]]
) -> None:
    provider = backend.provider()
    records = await fill_owners(provider, OWNERS)
    everything = {(kind, u, s) for u, s in OWNERS for kind in ("log", "episode", "record")}
    assert await owned_left(provider, OWNERS) == everything
    report = await provider.purge(**who)
    assert await owned_left(provider, OWNERS) == {(k, u, s) for k, u, s in everything if (u, s) not in gone}
    assert sorted(report.records) == sorted(records[o] for o in gone)
    assert report.stores["sessions"] == len(gone), report.stores
    assert report.stores["episodes"] == len(gone), report.stores
    assert report.stores["records"] == len(gone), report.stores
