"""A token glued to a word by a separator ("x-ghp_…", "notes-ghp_….md") is still a secret (issue 27, an attacker's find).

It used to reach disk through the title (and from it the record id and file name, a slug of the token), the memory
tool's file name and free-text fields, because provider patterns refused a match right after '-', '_' or '.'.
"""

from __future__ import annotations

import secrets
import string
from pathlib import Path

import pytest

from agent_memory import MemoryProvider, MemoryStore, MemoryToolHandler
from agent_memory.redaction.api import redact_text


def _token(prefix: str, n: int = 36) -> str:
    rng = secrets.SystemRandom(7)
    return prefix + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


GHP = _token("ghp_")
PROJ = _token("sk-proj-", 40)


@pytest.mark.parametrize("glued", [f"x-{GHP}", f"notes-{GHP}.md", f"chat.{PROJ}", f"ada_{GHP}", f"id-{PROJ}"])
def test_a_glued_token_is_redacted_and_its_glue_kept(glued: str) -> None:
    out = redact_text(glued)
    assert GHP not in out and PROJ not in out and "[REDACTED:" in out
    assert out.split("[REDACTED:")[0] == glued.split("ghp_" if "ghp_" in glued else "sk-proj-")[0]


def _no_byte_holds(root: Path, *needles: str) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for needle in needles:
                for form in (needle, needle.lower(), needle.lower().replace("_", "-")):
                    assert form.encode() not in data, f"{form[:12]}… in {path.relative_to(root)}"
            assert needle[-20:].lower().encode() not in data.lower(), path


def test_a_glued_token_in_a_title_reaches_no_byte_id_or_file_name(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    with MemoryStore(root) as store:
        r = store.remember("c1", title=f"x-{GHP}", user_id="alice")
        assert GHP[4:].lower() not in r.id.lower()
    _no_byte_holds(root, GHP)
    assert not any(GHP[4:].lower()[:20] in p.name.lower() for p in root.rglob("*"))


def test_a_glued_token_in_a_memory_tool_file_name_reaches_no_byte(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    provider = MemoryProvider(root)
    handler = MemoryToolHandler(provider, user_id="alice")
    reply = handler.execute_sync({"command": "create", "path": f"/memories/notes-{GHP}.md", "file_text": "hello"})
    assert GHP not in str(reply)
    provider.close()
    _no_byte_holds(root, GHP)
