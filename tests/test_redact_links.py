"""A ``[[link]]`` to one of the store's own ids survives redaction (``agent_memory.redaction.ids.link_spans``).

An id minted from a title such as "key policy" (``2026-11-28-key-policy-1a2b3c4d``) passes the id rule, yet its random
suffix after the slug word reads as a label's value: before, a body linking it was stored as
``See [[2026-11-28-key-[REDACTED:secret]]]`` and the link never resolved. A secret written inside ``[[…]]`` is still
redacted, and so is one glued to a link.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_memory.model.values import looks_secret_glued, new_id
from agent_memory.redaction import engine
from agent_memory.redaction.api import contains_secret, redact

DAY = "2026-11-28T10:00:00Z"
# titles whose minted id the engine read as a label and its value (each was damaged inside [[…]] before)
TITLES = [
    "key policy",
    "token bucket",
    "password reset",
    "api key rotation",
    "secret santa",
    "pin code",
    "my password",
    "auth token plan",
    "private key handling",
    "credential store",
    "aws secret key",
    "card number",
    "passphrase policy",
    "session token ttl",
    "key 42",
]
ID = "2026-11-28-key-policy-1a2b3c4d"
GHP = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
SK = "sk-live-" + "abcdef1234567890abcdef"
SLACK = "xoxb-" + "123456789012-1234567890123-abcdefghijklmnopqrstuvwx"


@pytest.mark.parametrize("title", TITLES)
def test_a_link_to_a_minted_id_is_kept(title: str) -> None:
    rid = new_id(title, DAY)
    assert rid[11:].startswith(title.replace(" ", "-")), rid  # the id was minted from the title, not replaced
    assert not looks_secret_glued(rid)
    for text in (f"See [[{rid}]].", f"See [[ {rid} ]] and [[{rid}|our notes]] again.", f"[[{rid}]]"):
        assert redact(text).text == text
        assert not contains_secret(text)
        assert not engine.find_spans(text, gated=False)  # whatever the gating


# (text, what must go, what must stay)
SECRETS = [
    (f"See [[{SK}]]", SK, "See [["),
    (f"See [[{GHP}]]", GHP, "See [["),
    ("See [[password=hunter2]]", "hunter2", "[[password="),
    (f"[[{ID}|password=hunter2]]", "hunter2", f"[[{ID}|password="),  # a link's label is no target: read as text
    (f"password=hunter2[[{ID}]]", "hunter2", f"[[{ID}]]"),  # glued before a link: the value goes, the link stays
    (f"my password is hunter2 [[{ID}]]", "hunter2", f"[[{ID}]]"),
    (f"{GHP}[[{ID}]]", GHP, f"[[{ID}]]"),
    (f"[[{ID}]]{GHP}", GHP, f"[[{ID}]]"),
    (f"token=[[{ID}]]xK9mP2qR7vL4nW8sT3", "xK9mP2qR7vL4nW8sT3", f"[[{ID}]]"),
    # id-shaped, but the stem holds a token: the id rule refuses it, so the link is read as any text
    (f"See [[2026-11-28-{SLACK}-1a2b3c4d]]", SLACK, "See [[2026-11-28-"),
    # id-shaped targets written to smuggle a secret (the last probe of 2026-11-28): the slug read as prose, a long
    # word after a label word, a long random-looking word: not kept whole, so read as any text
    ("L [[2026-01-01-db-password-correcthorsebattery-1a2b3c4d]] x", "correcthorsebattery", "L [[2026-01-01-db-password"),
    (
        "see [[2026-01-01-aws-secret-access-key-wjalrxutnfemik7mdengbpxrficyexamplekey-1a2b3c4d]] ok",
        "wjalrxutnfemik7mdengbpxrficyexamplekey",
        "see [[2026-01-01-aws-secret",
    ),
    ("see [[2026-01-01-my-password-is-tangerine-1a2b3c4d]] ok", "tangerine", "see [[2026-01-01-my-password-is-"),
]


@pytest.mark.parametrize(("text", "secret", "kept"), SECRETS)
def test_a_secret_in_or_beside_a_link_still_goes(text: str, secret: str, kept: str) -> None:
    out = redact(text).text
    assert secret not in out and "[REDACTED:" in out, out
    assert kept in out, out
    assert redact(out).text == out  # idempotent


def test_the_id_shaped_token_link_is_refused_by_the_id_rule() -> None:
    assert looks_secret_glued(f"2026-11-28-{SLACK}-1a2b3c4d")


async def test_remember_then_get_keeps_the_link_and_it_resolves(backend: Any) -> None:
    m = backend.provider()
    target = await m.remember("Keys rotate every 90 days.", title="key policy", scope="project")
    assert "-key-policy-" in target.id
    body = f"See [[{target.id}]] and [[{target.id}|the policy]]; the admin password=hunter2."
    source = await m.remember(body, title="Rotation notes", scope="project")
    got = await m.get(source.id)
    assert f"See [[{target.id}]] and [[{target.id}|the policy]]" in got.content
    assert "hunter2" not in got.content and "password=[REDACTED:password]" in got.content
    links = await m.links(source.id)
    assert [(x.target, x.record_id) for x in links.outgoing] == [(target.id, target.id)]
    assert [b.record_id for b in (await m.links(target.id)).backlinks] == [source.id]


def test_the_cli_stores_a_link_to_a_minted_id_intact(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    cli = [sys.executable, "-m", "agent_memory.cli", "--root", str(root)]

    def run(*args: str) -> Any:
        done = subprocess.run([*cli, *args, "--json"], check=True, capture_output=True, text=True, timeout=120)
        return json.loads(done.stdout)

    target = run("remember", "--title", "password reset", "Reset links expire after an hour.")
    rid = target["id"]
    assert "-password-reset-" in rid
    source = run("remember", "--title", "Support notes", f"See [[{rid}]] before answering.")
    got = run("get", source["id"])
    assert f"See [[{rid}]] before answering." in json.dumps(got)
    assert rid in Path(str(source["path"])).read_text(encoding="utf-8")
