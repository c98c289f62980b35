"""Namespaces of session logs and episodes, purge by namespace and the registry in an export (issue 29, part A).

Driven through ``MemoryProvider`` on both backends (the ``backend`` fixture of conftest.py): two agents of one
user in ``acme/support`` and ``acme/coding``, a root agent, and the parent ``acme``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agent_memory import MemoryProvider
from agent_memory.errors import InvalidInputError, NotFoundError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

NS = {
    "": "root wifi rota",
    "acme": "acme escalation wiki",
    "acme/coding": "coding turbocharger cache",
    "acme/support": "support refunds manager",
}


async def _seed_logs(backend: Any, user: str = "alice") -> None:
    """One log of session ``s1`` of ``user`` in each namespace of :data:`NS` (the same session id everywhere)."""
    for ns, text in NS.items():
        p = backend.provider(namespace=ns or None)
        await p.log_messages([{"role": "user", "text": text}], session_id="s1", user_id=user)


async def test_session_logs_follow_the_callers_view(backend: Any) -> None:
    await _seed_logs(backend)
    seen = {}
    for ns, iso in [("", None), ("acme", None), ("acme/support", None), ("acme/support", "full"), ("acme/coding", "full")]:
        p = backend.provider(namespace=ns or None, isolation=iso)
        seen[(ns, iso)] = {i.namespace for i in await p.sessions(session_id="s1", user_id="alice")}
    assert seen[("", None)] == {""}  # the root sees root logs only (existing logs are the root's)
    assert seen[("acme", None)] == {"acme", ""}
    assert seen[("acme/support", None)] == {"acme/support", "acme", ""}  # inherited: its ancestors, never a sibling
    assert seen[("acme/support", "full")] == {"acme/support"}
    assert seen[("acme/coding", "full")] == {"acme/coding"}
    # one session read: the caller's own namespace's log first, never a sibling's
    full = backend.provider(namespace="acme/support", isolation="full")
    info, messages = await full.session("s1", session_id="s1", user_id="alice")
    assert info.namespace == "acme/support" and [m.text for m in messages] == [NS["acme/support"]]
    inherited = backend.provider(namespace="acme/coding")
    _, messages = await inherited.session("s1", session_id="s1", user_id="alice")
    assert [m.text for m in messages] == [NS["acme/coding"]]
    hits = await full.search_sessions("turbocharger refunds wifi", session_id="s1", user_id="alice")
    shown = json.dumps(hits)
    assert "refunds" in shown and "turbocharger" not in shown and "wifi" not in shown
    # a per-call namespace overrides the provider's
    root = backend.provider()
    assert {i.namespace for i in await root.sessions(session_id="s1", user_id="alice", namespace="acme/coding", isolation="full")} == {
        "acme/coding"
    }


async def test_contextual_search_over_session_logs_obeys_the_view(backend: Any) -> None:
    await _seed_logs(backend)
    full = backend.provider(namespace="acme/support", isolation="full")
    res = await full.search("turbocharger OR refunds OR wifi", session_id="s1", user_id="alice", mode="contextual", limit=20)
    texts = " ".join(h.snippet for h in res.hits)
    assert "refunds" in texts and "turbocharger" not in texts and "wifi" not in texts
    root = backend.provider()
    res = await root.search("turbocharger OR refunds OR wifi", session_id="s1", user_id="alice", mode="contextual", limit=20)
    texts = " ".join(h.snippet for h in res.hits)
    assert "wifi" in texts and "turbocharger" not in texts and "refunds" not in texts


async def test_a_session_written_in_a_namespace_is_its_own_log(backend: Any) -> None:
    coding = backend.provider(namespace="acme/coding")
    root = backend.provider()
    await root.log_messages([{"role": "user", "text": "root line"}], session_id="s1", user_id="alice")
    made = await coding.log_messages([{"role": "user", "text": "coding line"}], session_id="s1", user_id="alice")
    assert made[0].n == 1  # numbered in its own log, not after the root's line
    _, messages = await root.session("s1", session_id="s1", user_id="alice")
    assert [m.text for m in messages] == ["root line"]


async def test_episodes_are_namespaced(backend: Any) -> None:
    made = {}
    for ns, text in NS.items():
        p = backend.provider(namespace=ns or None)
        made[ns] = await p.record_episode(f"Goal: {text}", user_id="alice", session_id="s1")
        assert made[ns].namespace == ns
    for ns, iso, want in [
        ("", None, {""}),
        ("acme/support", None, {"acme/support", "acme", ""}),
        ("acme/support", "full", {"acme/support"}),
        ("acme/coding", "full", {"acme/coding"}),
    ]:
        p = backend.provider(namespace=ns or None, isolation=iso)
        assert {e.namespace for e in await p.episodes(user_id="alice", session_id="s1")} == want
        assert {e.namespace for e in await p.episodes("turbocharger refunds wifi escalation", user_id="alice", session_id="s1")} <= want
        for other, ep in made.items():
            if other in want:
                assert (await p.episode(ep.id, user_id="alice", session_id="s1")).namespace == other
            else:
                with pytest.raises(NotFoundError):
                    await p.episode(ep.id, user_id="alice", session_id="s1")


async def test_an_episode_naming_another_namespace_is_refused(tmp_path: Path) -> None:
    import dataclasses

    from agent_memory.episodes import build_episode

    p = MemoryProvider(tmp_path / "m", namespace="acme/support")
    store = p._episodes()
    foreign = dataclasses.replace(build_episode("sneak into coding", user_id="alice"), namespace="acme/coding")
    from agent_memory.model import scopes

    with scopes.viewing(("acme/support",)), pytest.raises(InvalidInputError, match="another|names namespace"):
        store.write(foreign)
    assert await p.in_namespace("acme/coding").episodes(user_id="alice") == []


async def test_files_root_logs_and_episodes_keep_their_bytes(tmp_path: Path) -> None:
    """A root caller writes what it wrote before namespaces: no namespace in meta.json, in the episode file."""
    p = MemoryProvider(tmp_path / "m")
    await p.log_messages([{"role": "user", "text": "hello"}], session_id="s1", user_id="alice")
    meta = json.loads((tmp_path / "m" / "sessions" / "alice" / "s1" / "meta.json").read_text())
    assert set(meta) == {"session_id", "user_id", "created"}
    ep = await p.record_episode("a root run", user_id="alice")
    assert "namespace" not in Path(str(ep.path)).read_text()
    q = MemoryProvider(tmp_path / "m", namespace="acme/support")
    await q.log_messages([{"role": "user", "text": "hi"}], session_id="s1", user_id="alice")
    meta = json.loads((tmp_path / "m" / "sessions" / "@acme+support" / "alice" / "s1" / "meta.json").read_text())
    assert meta["namespace"] == "acme/support"
    ep = await q.record_episode("a support run", user_id="alice")
    assert "namespace: acme/support" in Path(str(ep.path)).read_text()
    # a hand-moved log whose meta.json names another namespace is not served (and doctor names it)
    moved = tmp_path / "m" / "sessions" / "@acme+coding"
    (tmp_path / "m" / "sessions" / "@acme+support").rename(moved)
    coding = MemoryProvider(tmp_path / "m", namespace="acme/coding", isolation="full")
    assert await coding.sessions(session_id="s1", user_id="alice") == []
    assert any("namespace" in pr.reason for pr in coding.session_store.problems())
    for x in (p, q, coding):
        await x.aclose()


# -- purge by namespace -------------------------------------------------------------------------------------------
async def _seed_all(backend: Any) -> dict[tuple[str, str], str]:
    """For alice and bob in the root, acme, acme/support, acme/support/agent-7 and acme/coding: a user record,
    a session log and an episode. Returns ``{(namespace, user): record id}``."""
    ids = {}
    for ns in ("", "acme", "acme/support", "acme/support/agent-7", "acme/coding"):
        p = backend.provider(namespace=ns or None)
        for user in ("alice", "bob"):
            made = await p.remember(f"{user} note in {ns or 'root'} about the quarterly plan", scope="user", user_id=user)
            ids[(ns, user)] = made.id
            await p.log_messages([{"role": "user", "text": f"{user} said in {ns or 'root'}"}], session_id="s1", user_id=user)
            await p.record_episode(f"{user} run in {ns or 'root'}", user_id=user, session_id="s1")
    return ids


async def _left(backend: Any, user: str) -> dict[str, tuple[int, int, int]]:
    """Per namespace, what ``user`` still has there: (records, session logs, episodes)."""
    out = {}
    for ns in ("", "acme", "acme/support", "acme/support/agent-7", "acme/coding"):
        p = backend.provider(namespace=ns or None, isolation="full")
        recs = await p.list(user_id=user, limit=50)
        logs = await p.sessions(session_id="s1", user_id=user)
        eps = await p.episodes(user_id=user, session_id="s1")
        out[ns] = (len(recs), len(logs), len(eps))
    return out


async def test_purge_by_namespace_takes_it_and_its_descendants(backend: Any) -> None:
    ids = await _seed_all(backend)
    root = backend.provider()
    rep = await root.purge(namespace="acme/support")
    gone = {ids[(ns, u)] for ns in ("acme/support", "acme/support/agent-7") for u in ("alice", "bob")}
    assert set(rep.records) == gone
    assert rep.stores["sessions"] == 4 and rep.stores["episodes"] == 4  # two users × two namespaces
    for user in ("alice", "bob"):
        left = await _left(backend, user)
        assert left == {
            "": (1, 1, 1),
            "acme": (1, 1, 1),
            "acme/support": (0, 0, 0),
            "acme/support/agent-7": (0, 0, 0),
            "acme/coding": (1, 1, 1),
        }
    # events about purged records keep no payload that names them
    events = await root.in_namespace("acme/support", "full").events(user_id="alice")
    assert all(e.id not in gone for e in events)


async def test_purge_by_namespace_and_user_takes_that_users_data_there(backend: Any) -> None:
    ids = await _seed_all(backend)
    root = backend.provider()
    rep = await root.purge(namespace="acme/coding", user_id="alice")
    assert rep.records == [ids[("acme/coding", "alice")]]
    assert (rep.stores["sessions"], rep.stores["episodes"]) == (1, 1)
    alice, bob = await _left(backend, "alice"), await _left(backend, "bob")
    assert alice["acme/coding"] == (0, 0, 0) and alice[""] == alice["acme/support"] == (1, 1, 1)
    assert all(v == (1, 1, 1) for v in bob.values())


async def test_purge_of_the_root_namespace_is_refused(backend: Any) -> None:
    ids = await _seed_all(backend)
    root = backend.provider()
    for bad in ("", "Acme", "../x"):
        with pytest.raises(InvalidInputError):
            await root.purge(namespace=bad)
    with pytest.raises(InvalidInputError):
        await root.purge(ids[("", "alice")], namespace="acme")
    assert (await _left(backend, "alice"))[""] == (1, 1, 1)  # nothing went


# -- export and import ------------------------------------------------------------------------------------------
async def test_full_export_carries_namespaced_logs_episodes_and_the_registry(backend: Any, tmp_path: Path) -> None:
    from agent_memory.backends.base import Caller
    from agent_memory.portable import export_records, import_file

    await _seed_all(backend)
    root = backend.provider()
    await root.configure_namespace("acme/coding", shared=True)
    await root.configure_namespace("acme/support", isolation="full")
    out = tmp_path / "full.jsonl"
    export_records(root.backend, out, full=True)
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    [reg] = [x for x in lines if x.get("section") == "namespaces"]
    assert reg["namespaces"] == {"acme/coding": {"shared": True, "isolation": None}, "acme/support": {"shared": False, "isolation": "full"}}
    sessions = [x for x in lines if x.get("section") == "session"]
    assert sorted(x.get("namespace", "") for x in sessions) == sorted(
        ["", "acme", "acme/support", "acme/support/agent-7", "acme/coding"] * 2
    )
    assert "namespace" not in next(x for x in sessions if x["messages"][0]["text"].endswith("in root"))  # a root line is unchanged
    # a caller's export holds the logs and episodes its view sees, no registry
    mine = tmp_path / "support.jsonl"
    export_records(
        root.backend, mine, full=True, caller=Caller(user_id="alice", session_id="s1", namespace="acme/support", isolation="full")
    )
    got = [json.loads(x) for x in mine.read_text().splitlines()]
    assert {x.get("namespace") for x in got if x.get("section") == "session"} == {"acme/support"}
    assert {x["episode"]["namespace"] for x in got if x.get("section") == "episode"} == {"acme/support"}
    assert not [x for x in got if x.get("section") == "namespaces"]
    # restored into a fresh files root: the registry, and every log and episode in its namespace
    fresh = MemoryProvider(tmp_path / "restored")
    rep = import_file(fresh.backend, out)
    assert {"namespace:acme/coding", "namespace:acme/support"} <= set(rep.written)
    assert await fresh.backend.namespaces() == {  # type: ignore[attr-defined]
        "acme/coding": {"shared": True, "isolation": None},
        "acme/support": {"shared": False, "isolation": "full"},
    }
    support = fresh.in_namespace("acme/support")  # its configured isolation (full) applies
    assert {i.namespace for i in await support.sessions(session_id="s1", user_id="alice")} == {"acme/support"}
    assert {e.namespace for e in await support.episodes(user_id="alice", session_id="s1")} == {"acme/support"}
    again = import_file(fresh.backend, out)  # idempotent: nothing written twice
    assert not [w for w in again.written if w.startswith(("namespace:", "session:", "ep-"))]
    await fresh.aclose()


async def test_an_import_never_changes_a_configured_namespace(tmp_path: Path) -> None:
    from agent_memory.portable import export_records, import_file

    src = MemoryProvider(tmp_path / "src")
    await src.configure_namespace("acme/coding", shared=True)
    await src.configure_namespace("acme/support", isolation="inherited")
    await src.remember("something", scope="project")
    out = tmp_path / "x.jsonl"
    export_records(src.backend, out, full=True)
    dst = MemoryProvider(tmp_path / "dst")
    await dst.configure_namespace("acme/coding", shared=False)
    await dst.configure_namespace("acme/support", isolation="full")
    rep = import_file(dst.backend, out)
    assert await dst.backend.namespaces() == {  # type: ignore[attr-defined]
        "acme/coding": {"shared": False, "isolation": None},
        "acme/support": {"shared": False, "isolation": "full"},
    }
    conflicts = [s for s in rep.skipped if s.reason == "conflict"]
    assert sorted(str(s.id) for s in conflicts) == ["namespace:acme/coding", "namespace:acme/support"]
    assert all("kept" in s.message for s in conflicts)
    await src.aclose()
    await dst.aclose()


async def test_postgres_schema_8_is_migrated_in_place(tmp_path: Path) -> None:
    """Session logs and episodes written before migration 9 gain the namespace columns and keys in place: they are
    the root's, and the same session id in a namespace is another log beside them."""
    from _pg import fresh_schema, require_psycopg, server

    require_psycopg()
    import psycopg

    url, schema = server().url, fresh_schema()
    old = MemoryProvider(url, schema=schema)
    await old.log_messages([{"role": "user", "text": "said before namespaces"}], session_id="s1", user_id="alice")
    await old.summarize_session("s1", session_id="s1", user_id="alice", force=True)
    ep = await old.record_episode("a run before namespaces", user_id="alice")
    await old.aclose()
    s = f'"{schema}"'
    with psycopg.connect(url, autocommit=True) as conn:  # undo migration 9: what a version-8 schema holds
        for t in ("session_messages", "session_summaries"):
            conn.execute(f"ALTER TABLE {s}.{t} DROP CONSTRAINT {t}_tenant_namespace_session_id_fkey")
        conn.execute(f"ALTER TABLE {s}.sessions DROP COLUMN namespace, ADD PRIMARY KEY (tenant, session_id)")
        for t, n in (("session_messages", "n"), ("session_summaries", "version")):
            conn.execute(
                f"ALTER TABLE {s}.{t} DROP COLUMN namespace, ADD PRIMARY KEY (tenant, session_id, {n}),"
                f" ADD FOREIGN KEY (tenant, session_id) REFERENCES {s}.sessions (tenant, session_id) ON DELETE CASCADE"
            )
        conn.execute(f"ALTER TABLE {s}.episodes DROP COLUMN namespace")
        conn.execute(f"DELETE FROM {s}.schema_version WHERE version >= 9")
    root = MemoryProvider(url, schema=schema)
    info, messages = await root.session("s1", session_id="s1", user_id="alice")
    assert info.namespace == "" and [m.text for m in messages] == ["said before namespaces"] and info.summary is not None
    assert [e.id for e in await root.episodes(user_id="alice")] == [ep.id]
    support = root.in_namespace("acme/support", "full")
    assert await support.sessions(session_id="s1", user_id="alice") == [] and await support.episodes(user_id="alice") == []
    made = await support.log_messages([{"role": "user", "text": "said in support"}], session_id="s1", user_id="alice")
    assert made[0].n == 1
    _, messages = await root.session("s1", session_id="s1", user_id="alice")
    assert [m.text for m in messages] == ["said before namespaces"]
    from agent_memory.backends.postgres.schema import LATEST

    with psycopg.connect(url) as conn:
        row = conn.execute(f"SELECT max(version) FROM {s}.schema_version").fetchone()
        assert row is not None and row[0] == LATEST
    await root.aclose()


@pytest.mark.parametrize("kind", ["files", "postgres"])
def test_cli_sessions_episodes_and_purge_by_namespace(kind: str, tmp_path: Path) -> None:
    """From the CLI as a real subprocess: two users, two namespaces; --namespace on sessions, session, episodes
    and purge (a unique namespace per run on the shared PostgreSQL schema)."""
    import os
    import subprocess
    import sys
    import uuid

    if kind == "postgres":
        from _pg import require_psycopg, server

        require_psycopg()
        root = server().url
    else:
        root = str(tmp_path / "mem")
    top = f"t{uuid.uuid4().hex[:8]}"
    sup, cod = f"{top}/support", f"{top}/coding"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

    def cli(*args: str, ok: bool = True) -> Any:
        out = subprocess.run(
            [sys.executable, "-m", "agent_memory.cli", "--root", root, "--json", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            cwd=tmp_path,
        )
        assert (out.returncode == 0) is ok, out.stderr + out.stdout
        return json.loads(out.stdout) if ok else out.stderr

    if kind == "files":
        subprocess.run([sys.executable, "-m", "agent_memory.cli", "init", root], check=True, capture_output=True, env=env, timeout=120)
    for ns in (sup, cod):
        for user in ("alice", "bob"):
            cli("session", "append", "s1", f"{user} in {ns}", "--user", user, "--namespace", ns)
            cli("remember", f"{user} note in {ns}", "--user", user, "--scope", "user", "--namespace", ns)
    shown = cli("session", "show", "s1", "--user", "alice", "--namespace", sup, "--isolation", "full")
    assert [m["text"] for m in shown["log"]] == [f"alice in {sup}"] and shown["namespace"] == sup
    listed = cli("sessions", "--user", "alice", "--namespace", cod, "--isolation", "full")["sessions"]
    assert [(s["session_id"], s["namespace"]) for s in listed] == [("s1", cod)]
    assert (
        cli("sessions", "--user", "alice", "--namespace", top, "--isolation", "full")["sessions"] == []
    )  # a parent never reads its children
    rep = cli("purge", "--namespace", sup, "--user", "alice")
    assert rep["stores"]["sessions"] == 1 and len(rep["records"]) == 1
    assert cli("sessions", "--user", "alice", "--namespace", sup, "--isolation", "full")["sessions"] == []
    assert len(cli("sessions", "--user", "bob", "--namespace", sup, "--isolation", "full")["sessions"]) == 1
    assert len(cli("sessions", "--user", "alice", "--namespace", cod, "--isolation", "full")["sessions"]) == 1
    rep = cli("purge", "--namespace", top)
    assert rep["stores"]["sessions"] == 3 and len(rep["records"]) == 3
    assert cli("sessions", "--user", "bob", "--namespace", cod, "--isolation", "full")["sessions"] == []
    assert "namespace" in cli("purge", "--namespace", "", ok=False)


# -- the property: random logs, episodes and callers -----------------------------------------------------------------
NAMESPACES = ["", "acme", "acme/support", "acme/coding", "acme/support/x"]
SHARED = {"acme/coding"}  # marked shared in the registry (configured once per store)
IDS = ["a", "b"]


def model_view(ns: str, isolation: str) -> set[str]:
    """The namespaces a caller reads, written from docs/namespaces.md independently of the library."""
    parts = ns.split("/") if ns else []
    ancestors = {"/".join(parts[:i]) for i in range(len(parts))}  # '' (the root) included for a namespaced caller
    if isolation == "full":
        return {ns}
    view = {ns} | ancestors
    if isolation == "shared" and ns:
        parent = ns.rpartition("/")[0]
        view |= {o for o in SHARED if o != ns and o.rpartition("/")[0] == parent}
    return view


def test_session_logs_and_episodes_obey_every_view(backend: Any) -> None:
    """Over random session logs and episodes (namespace × session × user × scope) and random callers (namespace ×
    isolation × session × user): ``sessions`` and ``episodes`` show exactly what the model says."""
    import asyncio
    import uuid

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    loop = asyncio.new_event_loop()
    maybe_id = st.one_of(st.none(), st.sampled_from(IDS))
    log = st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(IDS), maybe_id)
    episode = st.tuples(
        st.sampled_from(NAMESPACES), st.sampled_from(["session", "user", "project"]), st.sampled_from(IDS), st.sampled_from(IDS)
    )
    caller = st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(["full", "inherited", "shared"]), maybe_id, maybe_id)
    root = backend.provider()
    loop.run_until_complete(root.configure_namespace("acme/coding", shared=True))
    cases = {"n": 0}

    @settings(max_examples=12, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(
        logs=st.lists(log, min_size=1, max_size=5), episodes=st.lists(episode, max_size=4), callers=st.lists(caller, min_size=1, max_size=3)
    )
    def case(logs: list[Any], episodes: list[Any], callers: list[Any]) -> None:
        cases["n"] += 1
        tag = uuid.uuid4().hex[:8]

        def own(v: str | None) -> str | None:
            return None if v is None else f"{tag}{v}"

        async def run() -> None:
            for ns, sid, uid in logs:
                await root.log_messages(
                    [{"role": "user", "text": f"{tag} says"}], session_id=own(sid), user_id=own(uid), namespace=ns or None
                )
            made = {}
            for ns, scope, sid, uid in episodes:
                p = root.in_namespace(ns or None)
                ep = await p.record_episode(f"{tag} run", scope=scope, session_id=own(sid), user_id=own(uid))
                made[ep.id] = (ns, scope, sid, uid)
            for cns, iso, csid, cuid in callers:
                view = model_view(cns, iso)
                who = {"session_id": own(csid), "user_id": own(cuid), "namespace": cns or None, "isolation": iso}
                want = {
                    (ns, sid, uid)
                    for ns, sid, uid in logs
                    if ns in view and (uid == cuid if uid is not None else sid == csid) and (csid or cuid)
                }
                got = {(i.namespace, i.session_id[len(tag) :], i.user_id and i.user_id[len(tag) :]) for i in await root.sessions(**who)}
                got = {g for g in got if g[1] in IDS}
                assert got == want, (who, logs)
                seen = {
                    rid
                    for rid, (ns, scope, sid, uid) in made.items()
                    if ns in view
                    and (
                        scope == "project"
                        or (scope == "user" and uid == cuid)
                        or (scope == "session" and sid == csid and uid in (None, cuid))
                    )
                }
                listed = {e.id for e in await root.episodes(limit=1000, **who) if e.goal.startswith(tag)}
                assert listed == seen, (who, episodes)

        loop.run_until_complete(run())

    try:
        case()
    finally:
        loop.run_until_complete(backend.close())
        loop.close()
    assert cases["n"] >= 5


async def test_a_summary_is_written_only_to_the_callers_own_namespaces_log(backend: Any) -> None:
    root = backend.provider()
    await root.log_messages([{"role": "user", "text": "the root's conversation"}], session_id="s1", user_id="alice")
    coding = backend.provider(namespace="acme/coding")  # inherited: it reads the root's log …
    assert [i.namespace for i in await coding.sessions(session_id="s1", user_id="alice")] == [""]
    try:
        made = await coding.summarize_session("s1", session_id="s1", user_id="alice", force=True)
    except NotFoundError:
        made = None
    assert made is None  # … but never writes into it
    info, _ = await root.session("s1", session_id="s1", user_id="alice")
    assert info.summary is None
    await coding.log_messages([{"role": "user", "text": "coding's own"}], session_id="s1", user_id="alice")
    made = await coding.summarize_session("s1", session_id="s1", user_id="alice", force=True)
    assert made is not None
    own, _ = await coding.session("s1", session_id="s1", user_id="alice")
    assert own.namespace == "acme/coding" and own.summary is not None
    assert (await root.session("s1", session_id="s1", user_id="alice"))[0].summary is None
    # the same per call from the root provider: namespace= names the log that gets the summary
    await root.log_messages([{"role": "user", "text": "support's own"}], session_id="s1", user_id="alice", namespace="acme/support")
    made = await root.summarize_session("s1", session_id="s1", user_id="alice", force=True, namespace="acme/support")
    assert made is not None
    assert (await root.session("s1", session_id="s1", user_id="alice", namespace="acme/support"))[0].summary is not None
    assert (await root.session("s1", session_id="s1", user_id="alice"))[0].summary is None


async def test_a_namespaced_import_restores_no_section_line(backend: Any, tmp_path: Path) -> None:
    """An import confined to a namespace is a caller's import: a registry line (which could make a sibling shared),
    session/episode lines naming another namespace and forged events are refused, as for --as-user; records land
    in the importer's namespace."""
    from agent_memory.portable import import_file

    victim = backend.provider(namespace="victim", isolation="full")
    await victim.remember("Victim payroll rotation is on fridays.", scope="project")
    crafted = tmp_path / "evil.jsonl"
    lines = [
        {"format": "agent-memory", "version": 2, "sections": ["namespaces", "session", "episode", "event"]},
        {"section": "namespaces", "namespaces": {"victim": {"shared": True, "isolation": None}}},
        {
            "id": "2026-11-27-evil-note-0a1b2c3d",
            "content": "Evil's own note.",
            "scope": "project",
            "namespace": "victim",
            "created": "2026-11-27T10:00:00Z",
            "updated": "2026-11-27T10:00:00Z",
        },
    ]
    crafted.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    b = backend.backend()
    try:
        report = await asyncio.to_thread(import_file, b, crafted, namespace="evil")
    finally:
        done = b.close()
        if asyncio.iscoroutine(done):
            await done
    assert [s.reason for s in report.skipped] == ["unsupported"], report.skipped
    shared = backend.provider(namespace="evil", isolation="shared")
    assert (await shared.search("payroll")).hits == []  # victim was not made shared
    assert [r.content for r in await backend.provider(namespace="evil", isolation="full").list()] == ["Evil's own note."]
    assert [r.content for r in await victim.list()] == ["Victim payroll rotation is on fridays."]
