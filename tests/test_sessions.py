"""Session logs: append-only files, scoped to their session and user, redacted, quarantined, concurrent-safe."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from typing import Any

import pytest

from agent_memory import MemoryProvider
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.integrations.hooks import MemoryHooks
from agent_memory.sessions import SessionStore, purge_sessions

SECRET = "sk-abcdefghijklmnopqrstuvwxyz1234567890"


def _say(store: SessionStore, sid: str, text: str, user: str | None = None, **kw: object) -> None:
    store.append(sid, [{"role": "user", "text": text, **kw}], user_id=user)


def test_append_numbers_lines_and_reads_back_in_order(tmp_path):
    store = SessionStore(tmp_path)
    written = store.append("chat-1", [{"role": "user", "text": "hello"}, {"role": "assistant", "text": "hi Ada"}], user_id="ada")
    assert [m.id for m in written] == ["chat-1#1", "chat-1#2"]
    _say(store, "chat-1", "third", "ada", at="2026-01-02T03:04:05Z", speaker="Ada", turn_id="D1:3")
    msgs = store.messages("chat-1", user_id="ada")
    assert [(m.n, m.role, m.text) for m in msgs] == [(1, "user", "hello"), (2, "assistant", "hi Ada"), (3, "user", "third")]
    assert msgs[2].at.startswith("2026-01-02T03:04:05") and msgs[2].speaker == "Ada" and msgs[2].turn_id == "D1:3"
    assert (tmp_path / "sessions" / "ada" / "chat-1" / "log.jsonl").is_file()
    assert not (tmp_path / "records").exists() or not any((tmp_path / "records").iterdir())  # apart from records


def test_visibility_session_user_and_strangers(tmp_path):
    store = SessionStore(tmp_path)
    _say(store, "s-ada", "ada's private plans", "ada")
    _say(store, "s-anon", "anonymous chat")
    assert [i.session_id for i in store.sessions(user_id="ada")] == ["s-ada"]
    assert store.sessions(session_id="s-ada") == []  # a user's session is that user's, as session records are
    assert [i.session_id for i in store.sessions(session_id="s-anon")] == ["s-anon"]
    assert store.sessions(user_id="bob") == [] and store.sessions() == []
    assert store.sessions(session_id="s-ada", user_id="bob") == []  # naming another user hides it
    callers: list[dict[str, Any]] = [
        {"user_id": "bob"},
        {"session_id": "s-anon"},
        {"session_id": "s-ada", "user_id": "bob"},
        {"session_id": "s-ada"},
        {},
    ]
    for caller in callers:
        with pytest.raises(NotFoundError) as err:
            store.messages("s-ada", **caller)
        assert "s-ada" in str(err.value) and "ada's" not in str(err.value)
    with pytest.raises(NotFoundError):
        store.summary("s-anon", user_id="ada")


def test_same_session_id_of_two_users_are_two_sessions(tmp_path):
    store = SessionStore(tmp_path)
    _say(store, "chat", "ada speaking", "ada")
    _say(store, "chat", "bob speaking", "bob")
    assert [m.text for m in store.messages("chat", user_id="ada")] == ["ada speaking"]
    assert [m.text for m in store.messages("chat", user_id="bob")] == ["bob speaking"]


def test_redaction_before_disk(tmp_path):
    store = SessionStore(tmp_path)
    _say(store, "s", f"my key is {SECRET}", "ada", metadata={"token": SECRET})
    raw = b"".join(p.read_bytes() for p in (tmp_path / "sessions").rglob("*") if p.is_file())
    assert SECRET.encode() not in raw and b"REDACTED" in raw
    store.write_summary("s", f"summary with {SECRET}", user_id="ada")
    raw = b"".join(p.read_bytes() for p in (tmp_path / "sessions").rglob("*") if p.is_file())
    assert SECRET.encode() not in raw


@pytest.mark.parametrize(
    "bad",
    [
        {"role": "", "text": "x"},
        {"role": "user", "text": 5},
        {"role": "user", "text": "x", "at": "yesterday"},
        {"role": "user", "text": "x", "metadata": "nope"},
        "just a string",
    ],
)
def test_bad_messages_are_typed_errors_and_write_nothing(tmp_path, bad):
    store = SessionStore(tmp_path)
    _say(store, "s", "kept", "ada")
    with pytest.raises(InvalidInputError):
        store.append("s", [{"role": "user", "text": "fine"}, bad], user_id="ada")  # type: ignore[list-item]
    assert [m.text for m in store.messages("s", user_id="ada")] == ["kept"]


@pytest.mark.parametrize("sid", ["", "  ", "a\x00b", "x" * 500, 7])
def test_bad_session_ids(tmp_path, sid):
    with pytest.raises(InvalidInputError):
        SessionStore(tmp_path).append(sid, [{"role": "user", "text": "x"}])  # type: ignore[arg-type]


def test_odd_ids_never_leave_the_root(tmp_path):
    root = tmp_path / "root"
    store = SessionStore(root)
    for sid in ("../../escape", "/etc/passwd", "a/b", "..", "ünï cödé"):
        _say(store, sid, "inside", "../user")
        assert [m.text for m in store.messages(sid, user_id="../user")] == ["inside"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["root"]
    for p in (root / "sessions").rglob("*"):
        assert p.resolve().is_relative_to(root.resolve())


def test_malformed_lines_are_skipped_and_reported_and_numbers_stay(tmp_path):
    store = SessionStore(tmp_path)
    _say(store, "s", "one", "ada")
    log = tmp_path / "sessions" / "ada" / "s" / "log.jsonl"
    with open(log, "ab") as fh:
        fh.write(b'{"role": "user", "text": "torn')  # a crash mid-line: no newline
    _say(store, "s", "three", "ada")
    with open(log, "ab") as fh:
        fh.write(b"[1, 2]\n\xff\xfe\n")
    _say(store, "s", "six", "ada")
    msgs = store.messages("s", user_id="ada")
    assert [(m.n, m.text) for m in msgs] == [(1, "one"), (3, "three"), (6, "six")]
    problems = store.problems()
    assert sorted(p.line for p in problems if p.line) == [2, 4, 5]
    assert all("log.jsonl" in p.path for p in problems)


def test_quarantined_files_never_crash(tmp_path):
    store = SessionStore(tmp_path)
    _say(store, "s", "one", "ada")
    _say(store, "t", "two", "ada")
    sdir = tmp_path / "sessions" / "ada"
    (sdir / "s" / "summary.json").write_text("{not json")
    (sdir / "t" / "meta.json").write_text("[]")
    os.symlink("/etc/passwd", sdir / "s" / "evil")  # stray file: ignored
    (tmp_path / "sessions" / "ada" / "u").mkdir()
    assert [i.session_id for i in store.sessions(user_id="ada")] == ["s"]
    assert store.summary("s", user_id="ada") is None
    reasons = {p.path: p.reason for p in store.problems()}
    assert any(k.endswith("s/summary.json") for k in reasons) and any(k.endswith("t/meta.json") for k in reasons)
    assert any(k.endswith("u/meta.json") for k in reasons)


def test_symlinked_log_is_refused(tmp_path):
    store = SessionStore(tmp_path)
    _say(store, "s", "one", "ada")
    log = tmp_path / "sessions" / "ada" / "s" / "log.jsonl"
    target = tmp_path / "elsewhere.jsonl"
    target.write_text(json.dumps({"role": "user", "text": "planted", "at": "2026-01-01T00:00:00Z"}) + "\n")
    log.unlink()
    log.symlink_to(target)
    assert store.messages("s", user_id="ada") == []
    assert any("symlink" in p.reason for p in store.problems())
    with pytest.raises(InvalidInputError):
        _say(store, "s", "more", "ada")
    assert "more" not in target.read_text()


def test_concurrent_appenders_lose_no_line(tmp_path):
    store_a, store_b = SessionStore(tmp_path), SessionStore(tmp_path)

    def work(store: SessionStore, who: str) -> None:
        for i in range(60):
            store.append("s", [{"role": "user", "text": f"{who}-{i}"}, {"role": "assistant", "text": f"{who}-{i}-r"}], user_id="ada")

    threads = [threading.Thread(target=work, args=(s, w)) for s, w in ((store_a, "a"), (store_b, "b"), (store_a, "c"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    msgs = SessionStore(tmp_path).messages("s", user_id="ada")
    assert len(msgs) == 360 and [m.n for m in msgs] == list(range(1, 361))
    texts = [m.text for m in msgs]
    for who in "abc":  # each appender's lines stay in its own order, each turn's two lines adjacent
        own = [t for t in texts if t.startswith(f"{who}-")]
        assert own == [x for i in range(60) for x in (f"{who}-{i}", f"{who}-{i}-r")]
        assert all(texts[texts.index(f"{who}-{i}") + 1] == f"{who}-{i}-r" for i in range(60))


def test_purge_deletes_every_byte_of_a_user_or_a_session(tmp_path):
    store = SessionStore(tmp_path)
    _say(store, "s1", "ada one", "ada")
    _say(store, "s2", "ada two", "ada")
    store.write_summary("s1", "a summary", user_id="ada")
    _say(store, "s3", "bob", "bob")
    _say(store, "anon", "nobody")
    assert purge_sessions(tmp_path, session_id="anon") == 1
    assert store.sessions(session_id="anon") == []
    assert purge_sessions(tmp_path, user_id="ada") == 2
    assert not (tmp_path / "sessions" / "ada").exists()
    assert store.sessions(user_id="ada") == [] and len(store.sessions(user_id="bob")) == 1
    with pytest.raises(InvalidInputError):
        purge_sessions(tmp_path)


def test_hooks_log_each_turn_for_the_session_and_user(tmp_path):
    async def run() -> None:
        async with MemoryProvider(tmp_path) as provider:
            hooks = MemoryHooks(provider, session_id="chat-9", user_id="ada", capture=False, recall=False)
            await hooks.on_turn_start("hi")
            await hooks.on_turn_end(f"my token {SECRET}, I like pottery", "Pottery is lovely.")
            await hooks.on_turn_end("and painting", None)
            anon = MemoryHooks(provider, capture=False, recall=False)  # no session: nothing logged
            await anon.on_turn_end("nothing", "logged")
            await provider.flush()
            info, msgs = await provider.session("chat-9", user_id="ada")
            assert [(m.role, m.text) for m in msgs] == [
                ("user", "my token [REDACTED:openai_key], I like pottery"),
                ("assistant", "Pottery is lovely."),
                ("user", "and painting"),
            ]
            assert info.messages == 3
            assert [i.session_id for i in await provider.sessions(user_id="ada")] == ["chat-9"]
            assert await provider.sessions(user_id="bob") == []
            assert await provider.sessions(session_id="chat-9") == []  # without its user: not visible

    asyncio.run(run())


def test_hooks_fail_open_when_the_log_cannot_be_written(tmp_path, caplog):
    async def run() -> None:
        async with MemoryProvider(tmp_path) as provider:
            hooks = MemoryHooks(provider, session_id="s", user_id="ada", capture=False, recall=False)
            await hooks.on_turn_end("first", "ok")
            log = tmp_path / "sessions" / "ada" / "s" / "log.jsonl"
            log.unlink()
            log.symlink_to(tmp_path / "elsewhere")
            await hooks.on_turn_end("second", "still fine")  # no exception into the caller's loop
            await provider.flush()

    asyncio.run(run())
    assert "session log append failed" in caplog.text


def test_cli_doctor_names_session_and_episode_files_no_read_serves(tmp_path):
    from agent_memory.backends.files.store import MemoryStore
    from agent_memory.cli import main as cli_main
    from agent_memory.episodes import EpisodeStore, build_episode

    MemoryStore(tmp_path).close()
    store = SessionStore(tmp_path)
    _say(store, "s", "one", "ada")
    assert cli_main(["--root", str(tmp_path), "doctor"]) == 0  # a healthy log is no problem
    with open(tmp_path / "sessions" / "ada" / "s" / "log.jsonl", "ab") as fh:
        fh.write(b"[1, 2]\n")
    EpisodeStore(tmp_path).write(build_episode("Ship it", user_id="ada"))
    (tmp_path / "episodes" / "stray.md").write_text("not an episode", encoding="utf-8")
    assert cli_main(["--root", str(tmp_path), "doctor"]) == 1
    problems = [p for p in MemoryStore(tmp_path).doctor().problems]
    assert problems == []  # the records themselves are fine: the CLI adds the other layers
    from agent_memory.cli._maint import layer_problems

    found = layer_problems(str(tmp_path))
    assert any("log.jsonl:2" in k for k in found) and any(k.endswith("stray.md") for k in found)
