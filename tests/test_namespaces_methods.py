"""Every public read and write method honours the namespace (issue 29, part B), on files and PostgreSQL.

One table per layer — the provider's public coroutines (each called with a per-call ``namespace=``/``isolation=`` on
a root provider) and each backend's (bare and behind the extension wrapper, called with a :class:`Caller`) — and
the same check for every row: a caller in ``acme/support`` with ``full`` isolation neither sees nor changes the
records of its parent ``acme``. The parent is chosen on purpose: with ``inherited`` isolation the same caller
*does* see them, and each read row is run that way too (the control), so a row that could not reach the records
at all fails instead of passing by accident.

The tables are checked against the code: every public coroutine of ``MemoryProvider`` is a row or is listed as
exempt with a reason, every row takes ``namespace``/``isolation``, and every public coroutine of the backend
protocols (``backends/base.py``), of ``ExtendedBackend`` and of each concrete backend that takes a ``caller`` is a
row — a new read method that forgets to bind the caller's view fails here.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from agent_memory import MemoryDraft, MemoryProvider
from agent_memory.backends.base import Caller, LifecycleBackend, LinksBackend, MemoryBackend
from agent_memory.backends.extended import ExtendedBackend, Hooks
from agent_memory.errors import AgentMemoryError, UnsupportedError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

WORD = "turbocharger"  # in every record of the parent namespace, in no other; the reads ask for it
MARK = "qx7"  # in every record of the parent namespace too, never in a query: a result showing it leaks
NS, PARENT = "acme/support", "acme"
ALICE: dict[str, Any] = {"user_id": "alice", "session_id": "s1"}


@dataclasses.dataclass
class World:
    root: MemoryProvider
    ids: dict[str, str]  # the parent's records (x, x2, user, curated, linker) and the caller's own (own)

    @property
    def hidden(self) -> set[str]:
        return {v for k, v in self.ids.items() if k != "own"}


async def _world(backend: Any) -> World:
    root = backend.provider()
    acme = root.in_namespace(PARENT)
    ids: dict[str, str] = {}
    # the caller's own namespace: one shared record, written by someone else (alice has no change of her own to undo)
    ids["own"] = (await root.remember("Support notes: see [[Build cache note]].", scope="project", user_id="bob", namespace=NS)).id
    ids["x"] = (
        await acme.remember(f"The build cache is {WORD} {MARK}.", title="Build cache note", scope="project", memory_key="build.cache")
    ).id
    ids["x2"] = (await acme.remember(f"The  release train uses the {WORD} {MARK} cache.", scope="project")).id
    await acme.remember(f"The release train uses the {WORD} {MARK} cache.", scope="project")  # an exact duplicate of x2, newer
    ids["user"] = (await acme.remember(f"Alice's {WORD} {MARK} locker room is 1234.", scope="user", **ALICE)).id
    ids["linker"] = (await acme.remember(f"The {WORD} {MARK} wiki page links [[{ids['x']}]].", scope="project")).id
    ids["curated"] = (await acme.curate(f"Alice likes {WORD} {MARK} summaries.", **ALICE)).id
    if backend.kind == "files":  # a consolidation run of the parent, for consolidation_history (files only)
        await acme.consolidate(dry_run=True, max_share=1.0)
    return World(root, ids)


def _wrote(result: Any, world: World) -> bool:
    """A change row's result names no record of the parent as changed (a new record's id may contain a key)."""
    from agent_memory.model.drafts import RememberResult

    results = result if isinstance(result, list) else [result]
    if all(isinstance(r, RememberResult) for r in results):
        return all(r.id not in world.hidden for r in results)
    return result is not True and not _leaks(result, world)


def _leaks(result: Any, world: World) -> bool:
    text = repr(result)
    return MARK in text or any(re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", text) for i in world.hidden)


async def _intact(world: World) -> None:
    """The parent's records are all there, current and unchanged, as their own namespace reads them."""
    acme = world.root.in_namespace(PARENT, "full")
    for key in ("x", "x2", "user", "linker", "curated"):
        rec = await acme.get(world.ids[key], **ALICE)
        assert rec.superseded_by is None and rec.namespace == PARENT and WORD in rec.content, key


def _hides(result: Any, world: World) -> bool:
    return _wrote(result, world)


Call = Callable[[World, dict[str, Any]], Awaitable[Any]]  # (world, per-call identity kwargs) -> result
Hidden = Callable[[Any, World], bool]  # the result shows nothing of the parent (default: not _leaks)


Row = tuple[str, Call, Hidden | None, Hidden | None]


def _row(name: str, call: Call, hidden: Hidden | None = None, seen: Hidden | None = None) -> Row:
    """A table row: the method, the call, what "nothing seen" means for its result and, for a read, what the
    inherited control must see (None: a change)."""
    return name, call, hidden, seen


def _seen_default(result: Any, world: World) -> bool:
    return _leaks(result, world)


def _resolved(links: Any, world: World) -> bool:
    return any(x.record_id == world.ids["x"] for x in links.outgoing)


def _unresolved(links: Any, world: World) -> bool:
    return all(x.record_id is None for x in links.outgoing) and not _leaks(links.backlinks, world)


def _draft(world: World, **kw: Any) -> MemoryDraft:
    return MemoryDraft(f"Support overwrite attempt {kw.pop('n', 0)}.", scope="project", namespace=NS, **kw)


# -- the provider ---------------------------------------------------------------------------------------------
P: list[Row] = [
    # reads: the control (inherited isolation) must see the parent's records through each of them
    _row("count", lambda w, k: w.root.count(**k), lambda n, w: n == 1, lambda n, w: n > 1),
    _row("list", lambda w, k: w.root.list(limit=None, **k), seen=_seen_default),
    _row("search", lambda w, k: w.root.search(f"{WORD} OR support", limit=50, expand_links=True, **k), seen=_seen_default),
    _row("search_trace", lambda w, k: w.root.search_trace(WORD, **k), seen=_seen_default),
    _row("get", lambda w, k: w.root.get(w.ids["x"], **k), seen=_seen_default),
    _row("inject", lambda w, k: w.root.inject(4000, **k), seen=_seen_default),
    _row("recall", lambda w, k: w.root.recall(f"What is the {WORD} build cache?", **k), seen=_seen_default),
    _row("reflect", lambda w, k: w.root.reflect(f"What is the {WORD} build cache?", **k), seen=_seen_default),
    _row("history", lambda w, k: w.root.history(w.ids["x"], **k), seen=_seen_default),
    _row("events", lambda w, k: w.root.events(**k), seen=_seen_default),
    _row("provenance", lambda w, k: w.root.provenance(w.ids["x"], **k), seen=_seen_default),
    _row("links", lambda w, k: w.root.links(w.ids["own"], **k), _unresolved, _resolved),
    _row("curated", lambda w, k: w.root.curated(**k), seen=_seen_default),
    _row("contradict", lambda w, k: w.root.contradict("The build cache is redis.", key="build.cache", **k), seen=_seen_default),
    _row("consolidation_history", lambda w, k: w.root.consolidation_history(**k), seen=_seen_default),
    # changes: nothing of the parent's may move (checked after every row)
    _row(
        "remember",
        lambda w, k: w.root.remember(
            "Support: keyed write.", scope="project", memory_key=w.ids["x"], on_existing="replace", namespace=k["namespace"], **ALICE
        ),
    ),
    _row(
        "remember_many",
        lambda w, k: w.root.remember_many(
            [_draft(w, memory_key="build.cache", on_existing="replace")], namespace=k["namespace"], source="tool"
        ),
    ),
    _row("supersede", lambda w, k: w.root.supersede(w.ids["x"], _draft(w, n=1), namespace=k["namespace"])),
    _row("forget", lambda w, k: w.root.forget(w.ids["x"], **k)),
    _row("restore", lambda w, k: w.root.restore(w.ids["x"], version=1, **k)),
    _row("curate", lambda w, k: w.root.curate("Replaced line.", replace=w.ids["curated"], **k)),
    _row("uncurate", lambda w, k: w.root.uncurate(w.ids["curated"], **k)),
    _row("capture_turn", lambda w, k: w.root.capture_turn("The build cache is redis now.", "Noted.", **k)),
    _row(
        "capture_before_compaction",
        lambda w, k: w.root.capture_before_compaction([{"role": "user", "content": "The build cache is redis now."}], **k),
    ),
    _row("consolidate", lambda w, k: w.root.consolidate(max_share=1.0, **k)),
    _row("tidy", lambda w, k: w.root.tidy(max_share=1.0, **k)),
    _row("distill", lambda w, k: w.root.distill(user_id="alice", namespace=k["namespace"])),
    _row("consolidation_digest", lambda w, k: w.root.consolidation_digest(**k)),
    _row("undo", lambda w, k: w.root.undo(**k)),  # last: alice made no change in acme/support; the parent's is not hers to undo
    _row("forget", lambda w, k: w.root.forget(w.ids["x"], purge=True, **k)),
]

#: Public coroutines of MemoryProvider that are no rows, and why.
P_EXEMPT = {
    "configure_namespace": "configures the registry (an operator's call), reads no record",
    "sweep": "store-wide maintenance, no caller",
    "reindex": "store-wide maintenance, no caller",
    "doctor": "store-wide maintenance, no caller",
    "purge": "an operator's deletion by record or owner (tests/test_purge*.py)",
    "flush": "awaits background tasks",
    "embedded": "awaits background embedding",
    "aclose": "closes the provider",
    "end_session": "tells hooks a session ended; reads and writes nothing",
    # session logs and episodes have their own world of logs per namespace: tests/test_namespaces_time.py
    "summarize_idle": "the operator's pass over every due log, each in its own namespace (test_namespaces_time.py)",
    "log_messages": "session logs: per namespace in tests/test_namespaces_time.py",
    "sessions": "session logs: per namespace in tests/test_namespaces_time.py",
    "session": "session logs: per namespace in tests/test_namespaces_time.py",
    "summarize_session": "session logs: per namespace in tests/test_namespaces_time.py",
    "search_sessions": "session logs: per namespace in tests/test_namespaces_time.py",
    "record_episode": "episodes: per namespace in tests/test_namespaces_time.py",
    "episodes": "episodes: per namespace in tests/test_namespaces_time.py",
    "episode": "episodes: per namespace in tests/test_namespaces_time.py",
    "delete_episode": "episodes: per namespace in tests/test_namespaces_time.py",
    "restore_episode": "episodes: per namespace in tests/test_namespaces_time.py",
}

FORWARDS = {"search_trace": "search"}  # passes its keywords on to search
P_NAMES = {row[0] for row in P}  # rows run in order: reads first, then changes, undo and purge last


def _public_coroutines(cls: type) -> set[str]:
    return {n for n, f in inspect.getmembers(cls) if not n.startswith("_") and inspect.iscoroutinefunction(f)}


def test_the_provider_table_covers_every_public_coroutine_and_each_row_takes_a_namespace() -> None:
    public = _public_coroutines(MemoryProvider)
    assert not P_NAMES & set(P_EXEMPT)
    assert public - P_NAMES - set(P_EXEMPT) == set(), "a new public method: add a row (or an exemption with its reason)"
    assert P_NAMES | set(P_EXEMPT) <= public  # no stale row
    for name in P_NAMES:
        params = inspect.signature(getattr(MemoryProvider, FORWARDS.get(name, name))).parameters
        assert "namespace" in params, f"MemoryProvider.{name} takes no per-call namespace="
        writes_only = name in ("remember", "remember_many", "supersede", "distill")  # where it lands; nothing read
        assert writes_only or "isolation" in params, f"MemoryProvider.{name} takes no per-call isolation="


async def _outcome(call: Call, world: World, kw: dict[str, Any]) -> tuple[bool, Any]:
    try:
        return True, await call(world, kw)
    except UnsupportedError as exc:  # this backend has no such feature: nothing to see through it
        return False, exc
    except AgentMemoryError as exc:  # NotFoundError and the like: hidden
        return False, exc


async def test_a_full_caller_sees_and_changes_nothing_of_its_parent_through_any_provider_method(backend: Any) -> None:
    world = await _world(backend)
    full = {"namespace": NS, "isolation": "full", **ALICE}
    inherited = {"namespace": NS, "isolation": "inherited", **ALICE}
    controlled = []
    for name, call, hidden, seen in P:
        if seen is not None:  # the control first: the same read, inherited, reaches the parent's records
            ok, result = await _outcome(call, world, inherited)
            if ok or not isinstance(result, UnsupportedError):
                assert ok and seen(result, world), f"{name}: the inherited control does not see the parent ({result!r})"
                controlled.append(name)
        ok, result = await _outcome(call, world, full)
        if ok:
            assert (hidden or _hides)(result, world), f"{name} leaks: {result!r}"
        await _intact(world)
    assert len(controlled) >= 12, controlled  # the reads reached something to hide


# -- the backends ---------------------------------------------------------------------------------------------
B: list[Row] = [
    _row("count", lambda w, k: k["b"].count(k["c"]), lambda n, w: n == 1, lambda n, w: n > 1),
    _row("list", lambda w, k: k["b"].list(k["c"], limit=None), seen=_seen_default),
    _row("search", lambda w, k: k["b"].search(f"{WORD} OR support", k["c"], limit=50), seen=_seen_default),
    _row("get", lambda w, k: k["b"].get(w.ids["x"], k["c"]), seen=_seen_default),
    _row("core_lines", lambda w, k: k["b"].core_lines(k["c"], None), seen=_seen_default),
    _row("history", lambda w, k: k["b"].history(w.ids["x"], k["c"]), seen=_seen_default),
    _row("events", lambda w, k: k["b"].events(k["c"]), seen=_seen_default),
    _row("provenance", lambda w, k: k["b"].provenance(w.ids["x"], k["c"]), seen=_seen_default),
    _row("links", lambda w, k: k["b"].links(w.ids["own"], k["c"]), _unresolved, _resolved),
    _row("remember", lambda w, k: k["b"].remember(_draft(w, memory_key=w.ids["x"], on_existing="replace"))),
    _row("remember_many", lambda w, k: k["b"].remember_many([_draft(w, n=2, memory_key="build.cache", on_existing="replace")])),
    _row("supersede", lambda w, k: k["b"].supersede(w.ids["x"], _draft(w, n=3))),
    _row("forget", lambda w, k: k["b"].forget(w.ids["x"], k["c"])),
    _row("restore", lambda w, k: k["b"].restore(w.ids["x"], k["c"], version=1)),
    _row("undo", lambda w, k: k["b"].undo(k["c"])),
    _row("forget_purge", lambda w, k: k["b"].forget_purge(w.ids["x"], k["c"])),
]

#: Public coroutines of the backend protocols and backends that are no rows, and why.
B_EXEMPT = {
    "recorded_embedder": "which embedder made the store's vectors: store-wide metadata, no record, no caller",
    "user_md": "the root owner's USER.md: no record, no owner",
    "sweep": "store-wide maintenance, no caller",
    "reindex": "store-wide maintenance, no caller",
    "doctor": "store-wide maintenance, no caller",
    "close": "closes the backend",
    "purge": "an operator's deletion by record or owner (tests/test_purge*.py)",
    "end_session": "tells hooks a session ended",
    "configure_namespace": "configures the registry, reads no record",
    "namespaces": "the registry itself (configuration, no record)",
    "set_user_md": "the root owner's USER.md",
    "embed": "backfills derived vectors of every record (an operator's call, returns counts)",
    "embedded": "awaits background embedding",
}


def _takes_caller(fn: Any) -> bool:
    return "caller" in inspect.signature(fn).parameters


def test_the_backend_table_covers_every_protocol_coroutine_and_every_method_taking_a_caller() -> None:
    from agent_memory.backends.files.backend import FilesBackend

    classes: list[type] = [MemoryBackend, LifecycleBackend, LinksBackend, ExtendedBackend, FilesBackend]
    try:
        from agent_memory.backends.postgres.backend import PostgresBackend

        classes.append(PostgresBackend)
    except ImportError:  # pragma: no cover - the postgres extra is installed in the test environment
        pass
    protocol = set().union(*(_public_coroutines(c) for c in classes[:4]))
    assert protocol - {row[0] for row in B} - set(B_EXEMPT) == set(), "a new protocol method: add a row (or an exemption with its reason)"
    for cls in classes:
        for name in _public_coroutines(cls):
            if _takes_caller(getattr(cls, name)):
                assert name in {row[0] for row in B}, f"{cls.__name__}.{name} takes a caller and is not checked here: add a row"
            else:
                assert name in {row[0] for row in B} or name in B_EXEMPT, f"{cls.__name__}.{name}: add a row or an exemption"


@pytest.mark.parametrize("wrapped", [False, True], ids=["bare", "extended"])
async def test_a_full_caller_sees_and_changes_nothing_of_its_parent_through_any_backend_method(backend: Any, wrapped: bool) -> None:
    world = await _world(backend)
    bare = backend.backend()
    store = ExtendedBackend(bare, Hooks(on_memory_retrieved=lambda event: None)) if wrapped else bare
    try:
        controlled = []
        for name, call, hidden, seen in B:
            if seen is not None:
                ok, result = await _outcome(call, world, {"b": store, "c": Caller(ALICE["session_id"], "alice", NS, "inherited")})
                if ok or not isinstance(result, UnsupportedError):
                    assert ok and seen(result, world), f"{name}: the inherited control does not see the parent ({result!r})"
                    controlled.append(name)
            ok, result = await _outcome(call, world, {"b": store, "c": Caller(ALICE["session_id"], "alice", NS, "full")})
            if ok:
                assert (hidden or _hides)(result, world), f"{name} leaks: {result!r}"
            await _intact(world)
        assert len(controlled) >= 7, controlled
    finally:
        await bare.close()


async def test_the_memory_reflect_tool_reads_as_its_callers_namespace(backend: Any) -> None:
    """A toolset built from a provider answers ``memory_reflect`` for its caller's namespace and isolation."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from agent_memory.agents.tools import FOREGROUND, memory_toolset

    world = await _world(backend)
    for isolation, sees in (("full", False), ("inherited", True)):
        returned: list[Any] = []

        def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            if len(messages) == 1:
                return ModelResponse(parts=[ToolCallPart("memory_reflect", {"question": f"What is the {WORD} build cache?"})])
            returned.extend(p.content for p in messages[-1].parts if isinstance(p, ToolReturnPart))
            return ModelResponse(parts=[TextPart("done")])

        toolset = memory_toolset(world.root, FOREGROUND, caller=Caller("s1", "alice", NS, isolation))  # type: ignore[arg-type]
        await Agent(FunctionModel(model), toolsets=[toolset]).run("go")
        assert returned and _leaks(returned, world) is sees, (isolation, returned)
