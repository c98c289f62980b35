"""Our own ids are never refused as secret-looking, and a secret glued into an id still is.

``new_id`` ends with 8 random hex; after a slug word that names a credential ("…-github-token-c4f6d89e") the
label rules once read that suffix as the token's value, so about one id in ten of such a title was refused on
import (a flaky export → import round trip).
"""

from __future__ import annotations

import pytest

from agent_memory.model.drafts import check_id
from agent_memory.model.drafts import looks_secret as looks_secret_glued
from agent_memory.model.values import looks_secret, new_id

TITLES = [
    "bob keeps the key [REDACTED:github_token] for good",
    "bob keeps the key [REDACTED:github_token]",
    "alice keeps the key [REDACTED:openai_key]",
    "api key rotation",
]


@pytest.mark.parametrize("suffix", ["c4f6d89e", "394ae2c8", "7df7244e", "00000000", "deadbeef"])
@pytest.mark.parametrize("title", TITLES)
def test_an_id_with_a_credential_word_in_its_slug_is_ours(title: str, suffix: str) -> None:
    made = new_id(title, "2026-11-27T10:00:00Z")[:-8] + suffix
    assert not looks_secret(made) and not looks_secret_glued(made)
    assert check_id("id", made) == made  # what an import checks


def test_many_fresh_ids_pass() -> None:
    made = [new_id(t, "2026-11-27") for t in TITLES for _ in range(2000)]
    assert not [i for i in made if looks_secret(i) or looks_secret_glued(i)]


@pytest.mark.parametrize(
    "glued",
    [
        "2026-11-27-ghp_abcdEFGH1234ijklMNOP5678qrstUVWX9012-c4f6d89e",
        "2026-11-27-notes-sk-proj-abcdEFGH1234ijklMNOP5678qrst-c4f6d89e",
    ],
)
def test_a_secret_glued_into_an_id_shape_is_still_refused(glued: str) -> None:
    assert looks_secret(glued) and looks_secret_glued(glued)


def test_an_event_keeps_our_id_and_still_redacts_a_secret_one() -> None:
    from agent_memory.model.drafts import prepare_event

    ours = "2026-11-27-bob-keeps-the-key-redacted-github-token-b325ce97"  # the id an export round trip corrupted
    assert prepare_event({"id": ours, "event": "created"})["id"] == ours
    assert "ghp_" not in prepare_event({"id": "ghp_aB3xK9mQ2vL7pR4tW8yZ1cD5fG6hJ0nS2uE4"})["id"]
