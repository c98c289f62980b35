"""Every read method of both backends runs inside the caller's namespace view: a sibling sees nothing.

The records of namespace ``acme`` (live, keyed, superseded, user-scoped, forgotten into the archive, linked, with
their events), its session log and its episode, read by a caller in the sibling ``other`` — ``inherited`` (its
ancestors: the root) and ``full`` — through every public read of ``FilesBackend`` and ``PostgresBackend``, of
the synchronous ``MemoryStore`` that takes a caller (its namespace view bound as ``FilesBackend`` binds it), and
of each backend's session-log and episode stores: nothing of ``acme`` is returned, counted or revealed (or the
call fails closed, ``NotFoundError``). Each row is controlled: the same call as a caller in ``acme`` does see it,
so a row cannot pass by reaching nothing.

The tables are checked against the code: a new public method of one of those classes that is not a row (or an
exemption with its reason) fails here, as ``tests/test_namespaces_methods.py`` does for the provider.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import re
from collections.abc import Awaitable, Callable
from typing import Any, cast

import pytest

from agent_memory.backends.base import Caller, innermost
from agent_memory.errors import NotFoundError, UnsupportedError
from agent_memory.model import scopes
from agent_memory.model.drafts import MemoryDraft

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MARK = "zebrafinch"  # in every text of acme, in nothing else
SID = "s-7"
ALICE = {"session_id": SID, "user_id": "alice"}


@dataclasses.dataclass
class World:
    backend: Any
    ids: dict[str, str]  # acme's records (hidden) and other's own ("own")
    episode: str

    @property
    def hidden(self) -> set[str]:
        return {v for k, v in self.ids.items() if k not in ("own", "rooted")} | {self.episode}


async def _world(target: Any) -> World:
    root = target.provider()
    acme = root.in_namespace("acme")
    other = root.in_namespace("other")
    ids: dict[str, str] = {}
    ids["own"] = (await other.remember("Other's notes link [[Build keyed note]].", scope="project", **ALICE)).id
    ids["keyed"] = (
        await acme.remember(f"The {MARK} build cache is warm.", title="Build keyed note", scope="project", memory_key="build.cache")
    ).id
    await acme.remember(f"The {MARK} build cache is cold now.", title="Build keyed note", scope="project", memory_key="build.cache")
    ids["user"] = (await acme.remember(f"Alice's {MARK} locker is on floor 3.", scope="user", **ALICE)).id
    ids["linker"] = (await acme.remember(f"The {MARK} wiki page links [[{ids['keyed']}]].", scope="project")).id
    ids["gone"] = (await acme.remember(f"The {MARK} old rota was weekly.", scope="project")).id
    await acme.forget(ids["gone"])
    ids["old"] = (await acme.remember(f"The {MARK} office is in Porto.", scope="project")).id
    ids["now"] = (await acme.supersede(ids["old"], MemoryDraft(f"The {MARK} office is in Braga.", scope="project"))).id
    ids["rooted"] = (await root.remember("Root notes link [[Build keyed note]].", scope="project")).id  # everyone's ancestor
    await acme.log_messages([{"role": "user", "text": f"My {MARK} question about rotas."}], session_id=SID, user_id="alice")
    await acme.summarize_session(SID, user_id="alice", force=True)
    made = await acme.record_episode(f"help alice with the {MARK} rota", output="done", session_id=SID, user_id="alice")
    return World(target.backend(), ids, made.id)


def _leaks(result: Any, world: World) -> bool:
    text = repr(result)
    if isinstance(result, (list, tuple)):
        text += repr([getattr(x, "to_dict", lambda: x)() for x in result])
    return MARK in text or "acme" in text or any(re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", text) for i in world.hidden)


def _count(n: Any, world: World, how: str) -> bool:
    return n == {"inherited": 2, "full": 1}[how]  # other's own record, and the root's when inherited


Call = Callable[[World, Caller], Awaitable[Any]]
Check = Callable[[Any, World], bool]  # the result shows something of acme
Exact = Callable[[Any, World, str], bool]  # the sibling's exact result, per isolation


def _not(check: Check) -> Check:
    return lambda r, w: not check(r, w)


def _resolved(links: Any, world: World) -> bool:
    return any(x.record_id is not None for x in links.outgoing)


# -- the async backends: (name, call, seen) — hidden is "not seen" ------------------------------------------------
BACKEND: list[tuple[str, Call, Check, Exact | None]] = [
    ("count", lambda w, c: w.backend.count(c), lambda n, w: n > 1, _count),
    ("list", lambda w, c: w.backend.list(c, limit=None, include_superseded=True), _leaks, None),
    ("search", lambda w, c: w.backend.search(f"{MARK} OR rota OR cache", c, limit=50), _leaks, None),
    ("get", lambda w, c: w.backend.get(w.ids["keyed"], c), _leaks, None),
    ("core_lines", lambda w, c: w.backend.core_lines(c, None), _leaks, None),
    ("history", lambda w, c: w.backend.history(w.ids["keyed"], c), _leaks, None),
    ("events", lambda w, c: w.backend.events(c), _leaks, None),
    ("provenance", lambda w, c: w.backend.provenance(w.ids["keyed"], c), _leaks, None),
    ("links", lambda w, c: w.backend.links(w.ids["rooted"], c), _resolved, None),
]
BACKEND_EXEMPT = {
    "recorded_embedder": "which embedder made the store's vectors: store-wide metadata, no record, no caller",
    # changes: acting only in the caller's own namespace is tests/test_namespaces_methods.py's (every one a row there)
    **dict.fromkeys(("remember", "remember_many", "supersede", "forget", "forget_purge", "restore", "undo"), "a change"),
    "purge": "the operator's deletion (tests/test_purge*.py, purge by namespace)",
    "sweep": "store-wide maintenance, no caller",
    "reindex": "store-wide maintenance, no caller",
    "doctor": "store-wide maintenance, no caller",
    "embed": "the operator's backfill of derived vectors (counts only)",
    "embedded": "awaits background embedding",
    "close": "closes the backend",
    "user_md": "the root owner's USER.md: no record, no namespace",
    "set_user_md": "the root owner's USER.md",
    "configure_namespace": "the registry (configuration)",
    "namespaces": "the registry (configuration: which namespaces exist and are shared), an operator's read",
}

# -- the synchronous files store (reads with session_id/user_id; its view bound as FilesBackend binds it) -----------
STORE: list[tuple[str, Callable[[Any, World, dict[str, Any]], Any], Check, Exact | None]] = [
    ("count", lambda s, w, k: s.count(**k), lambda n, w: n > 1, _count),
    ("list", lambda s, w, k: s.list(limit=None, include_superseded=True, **k), _leaks, None),
    ("search", lambda s, w, k: s.search(f"{MARK} OR rota OR cache", limit=50, **k), _leaks, None),
    ("get", lambda s, w, k: s.get(w.ids["keyed"], **k), _leaks, None),
    ("history", lambda s, w, k: s.history(w.ids["keyed"], **k), _leaks, None),
    ("versions", lambda s, w, k: s.versions(w.ids["now"], **k), _leaks, None),
    ("events_for", lambda s, w, k: s.events_for(None, **k), _leaks, None),
    ("provenance", lambda s, w, k: s.provenance(w.ids["keyed"], **k), _leaks, None),
    ("links", lambda s, w, k: s.links(w.ids["rooted"], **k), _resolved, None),
    ("visible_lines", lambda s, w, k: s.visible_lines(limit=None, **k), _leaks, None),
    ("visible_row", lambda s, w, k: s.visible_row(w.ids["keyed"], **k), lambda r, w: r is not None, None),
]
STORE_EXEMPT = {
    **dict.fromkeys(("remember", "remember_many", "supersede", "forget", "restore", "undo"), "a change (its own namespace)"),
    "purge": "the operator's deletion",
    "sweep": "store-wide maintenance",
    "reindex": "store-wide maintenance",
    "doctor": "store-wide maintenance",
    "embed": "the operator's backfill",
    "open": "opens the store",
    "close": "closes the store",
    "event": "appends an event (a write's own)",
    "stamp": "stamps a record being written",
    "write_memory_md": "regenerates MEMORY.md (root and project records of the root namespace only)",
}

# -- the session-log and episode stores of each backend (sync; the view bound around each call) --------------------
TIME: list[tuple[str, str, Callable[[Any, World, dict[str, Any]], Any], Check]] = [
    ("sessions", "sessions", lambda s, w, k: s.sessions(limit=None, **k), _leaks),
    ("sessions", "visible_logs", lambda s, w, k: s.visible_logs(**k), _leaks),
    ("sessions", "messages", lambda s, w, k: s.messages(SID, **k), _leaks),
    ("sessions", "session", lambda s, w, k: s.session(SID, **k), _leaks),
    ("sessions", "summaries", lambda s, w, k: s.summaries(SID, **k), _leaks),
    ("sessions", "summary", lambda s, w, k: s.summary(SID, **k), _leaks),
    ("sessions", "resolve", lambda s, w, k: s.resolve(SID, **k), _leaks),
    ("episodes", "list", lambda s, w, k: s.list(MARK, **k), _leaks),
    ("episodes", "get", lambda s, w, k: s.get(w.episode, **k), _leaks),
]
TIME_EXEMPT = {
    "append": "a write (lands in the caller's own namespace)",
    "write_summary": "a write",
    "info": "facts about a log already resolved for the caller (takes no caller)",
    "problems": "doctor's list of unreadable logs (operator)",
    "purge": "the operator's deletion",
    "write": "a write",
    "replace": "a write",
    "delete": "a change (its own namespace: tests/test_namespaces_time.py)",
    "restore": "a change (its own namespace: tests/test_namespaces_time.py)",
    "count": "store-wide total for reindex (operator), no caller",
    "doctor": "store-wide maintenance",
    "reindex": "store-wide maintenance",
    "drop_index": "store-wide maintenance",
    "path_of": "a path from an id, reads nothing",
    "deleted_path": "a path from an id, reads nothing",
}


def _public(cls: type, *, coroutines: bool) -> set[str]:
    return {
        n
        for n, f in inspect.getmembers(cls)
        if not n.startswith("_") and inspect.isfunction(f) and inspect.iscoroutinefunction(f) == coroutines
    }


def test_every_read_method_is_a_row() -> None:
    from agent_memory.backends.files.backend import FilesBackend
    from agent_memory.backends.files.store import MemoryStore
    from agent_memory.backends.postgres.backend import PostgresBackend
    from agent_memory.backends.postgres.episodes import PgEpisodeStore
    from agent_memory.episodes import EpisodeStore
    from agent_memory.sessions.store import SessionStore

    rows = {r[0] for r in BACKEND}
    for cls in (FilesBackend, PostgresBackend):
        missing = _public(cls, coroutines=True) - rows - set(BACKEND_EXEMPT)
        assert not missing, f"{cls.__name__}: a new public coroutine {sorted(missing)}: add a read row (or an exemption)"
    missing = _public(MemoryStore, coroutines=False) - {r[0] for r in STORE} - set(STORE_EXEMPT)
    assert not missing, f"MemoryStore: a new public method {sorted(missing)}: add a read row (or an exemption)"
    for kind, store_cls in (("sessions", SessionStore), ("episodes", EpisodeStore), ("episodes", PgEpisodeStore)):
        missing = _public(store_cls, coroutines=False) - {r[1] for r in TIME if r[0] == kind} - set(TIME_EXEMPT)
        assert not missing, f"{store_cls.__name__}: a new public method {sorted(missing)}: add a read row (or an exemption)"


async def _outcome(call: Callable[[], Awaitable[Any]]) -> tuple[bool, Any]:
    try:
        return True, await call()
    except NotFoundError as exc:  # fails closed
        return False, exc


CALLERS = {"inherited": Caller(SID, "alice", "other", "inherited"), "full": Caller(SID, "alice", "other", "full")}
CONTROL = Caller(SID, "alice", "acme", "inherited")


async def test_a_sibling_sees_nothing_through_any_backend_read(backend: Any) -> None:
    world = await _world(backend)
    try:
        for name, call, seen, exact in BACKEND:
            try:
                ok, result = await _outcome(lambda: call(world, CONTROL))  # noqa: B023
            except UnsupportedError:  # this backend has no such read (PostgreSQL's provenance)
                continue
            assert ok and seen(result, world), f"{name}: the control in acme does not see acme ({result!r})"
            for how, caller in CALLERS.items():
                ok, result = await _outcome(lambda: call(world, caller))  # noqa: B023
                assert not ok or (exact(result, world, how) if exact else not seen(result, world)), f"{name} ({how}) leaks: {result!r}"
    finally:
        await world.backend.close()


def _view(store: Any, caller: Caller) -> tuple[str, ...]:
    from agent_memory.backends.files.namespaces import read_registry

    return caller.view(read_registry(store.root))


async def test_a_sibling_sees_nothing_through_any_files_store_read(tmp_path: Any) -> None:
    from _pg import make_target

    target = make_target("files", tmp_path)
    world = await _world(target)
    store = cast(Any, innermost(world.backend)).store
    try:
        for name, call, seen, exact in STORE:
            with scopes.viewing(_view(store, CONTROL)):
                result = call(store, world, {"session_id": SID, "user_id": "alice"})
            assert seen(result, world), f"MemoryStore.{name}: the control in acme does not see acme ({result!r})"
            for how, caller in CALLERS.items():
                try:
                    with scopes.viewing(_view(store, caller)):
                        result = call(store, world, {"session_id": SID, "user_id": "alice"})
                except NotFoundError:
                    continue
                assert exact(result, world, how) if exact else not seen(result, world), f"MemoryStore.{name} ({how}) leaks: {result!r}"
    finally:
        await world.backend.close()
        await target.close()


async def test_a_sibling_sees_nothing_of_session_logs_and_episodes(backend: Any) -> None:
    world = await _world(backend)
    inner: Any = innermost(world.backend)
    if backend.kind == "files":
        from agent_memory.backends.files.namespaces import read_registry

        registry = read_registry(inner.store.root)
    else:
        registry = await inner.namespaces()

    async def run(kind: str, call: Any, caller: Caller) -> tuple[bool, Any]:
        def go() -> Any:
            with scopes.viewing(caller.view(registry)):
                return call(getattr(inner, kind), world, {"session_id": SID, "user_id": "alice"})

        try:
            return True, await asyncio.to_thread(go)
        except NotFoundError as exc:
            return False, exc

    try:
        for kind, name, call, seen in TIME:
            ok, result = await run(kind, call, CONTROL)
            assert ok and seen(result, world), f"{kind}.{name}: the control in acme does not see acme ({result!r})"
            for how, caller in CALLERS.items():
                ok, result = await run(kind, call, caller)
                assert not ok or not seen(result, world), f"{kind}.{name} ({how}) leaks: {result!r}"
    finally:
        await world.backend.close()
