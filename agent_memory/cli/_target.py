"""Where the command line keeps memory: a root directory (files + SQLite) or a database URL.

Root policy (docs/cli.md, "Roots"):

- read commands (search, get, list, …) never create anything: a missing root is a ``NotFoundError``;
- a write (remember, import, capture) creates a missing root only when its parent directory exists,
  and says so on stderr; a missing parent (a mistyped ``--root``) is refused — ``agent-memory init -p DIR``
  creates parents on purpose;
- an existing non-empty directory that is not a memory root (no ``records/``) is refused unless ``init``-ed;
- no write (``init`` included) makes a root inside a root, nor around one: a folder holding a memory root among
  its children (or in its ``records/``-like folders) is refused, naming that root
  (:func:`agent_memory.backends.files.layout.contained_root`);
- ``--root postgresql://…`` goes to :func:`agent_memory.backends.open_backend`; no directory is ever made from a URL.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_memory.cli._base import UsageError, note
from agent_memory.errors import InvalidInputError, MissingExtraError, NotFoundError

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.backends.base import MemoryBackend
    from agent_memory.backends.files.store import MemoryStore

URL_SCHEMES = ("postgresql", "postgres")
#: The command's namespace identity (``--namespace``/``--isolation``), set once per process by :func:`use_identity`.
IDENTITY: dict[str, str | None] = {"namespace": None, "isolation": None}


def use_identity(namespace: str | None, isolation: str | None) -> None:
    """Record the command's namespace and isolation (checked: a bad one is an ``InvalidInputError``)."""
    from agent_memory.backends.base import Caller

    who = Caller(namespace=namespace, isolation=isolation)  # type: ignore[arg-type]
    IDENTITY.update(namespace=who.namespace, isolation=who.isolation)


def caller_of(session_id: str | None = None, user_id: str | None = None) -> Any:
    """The command's :class:`~agent_memory.backends.base.Caller`: its session and user, in its namespace."""
    from agent_memory.backends.base import Caller

    return Caller(session_id, user_id, IDENTITY["namespace"], IDENTITY["isolation"])  # type: ignore[arg-type]


def stamp(drafts: list[Any]) -> list[Any]:
    """Drafts in the command's namespace (an import file or a draft line never chooses another)."""
    import dataclasses

    ns = IDENTITY["namespace"]
    return [dataclasses.replace(d, namespace=ns) if getattr(d, "namespace", None) != ns else d for d in drafts]


def is_url(root: str) -> bool:
    return "://" in root


def check_url(root: str) -> str:
    scheme = root.split("://", 1)[0].lower()
    if scheme not in URL_SCHEMES:
        raise UsageError(f"--root {root.split('://', 1)[0]}://… is not supported (a directory, or postgresql://…)")
    return root


def embedder_name(embedder: str | None) -> str | None:
    """``--embedder`` or ``$AGENT_MEMORY_EMBEDDER``; None for none/off/lexical or unset."""
    name = embedder or os.environ.get("AGENT_MEMORY_EMBEDDER") or None
    if name is not None and name.strip().lower() in ("none", "off", "lexical"):
        return None
    return name


def is_memory_root(path: Path) -> bool:
    return (path / "records").is_dir()


def prepare_root(root: str, *, create: bool, parents: bool = False, explicit: bool = False) -> tuple[Path, bool]:
    """Check (and, for writes, create) a root directory; returns ``(path, created)`` under the policy above."""
    from agent_memory.backends.files.layout import contained_root, enclosing_root, is_root, missing_root

    path = Path(root)
    if is_memory_root(path) and is_root(path):
        return path, False
    # a root is never made around a root: a folder holding one (bounded: layout.contained_root), even with a
    # records/ of its own that no command has opened yet (opening it would make it a root)
    inner = contained_root(path)
    if inner is not None:
        raise InvalidInputError(
            f"cannot make {root} a memory root: it holds the memory root {inner}, whose files would then lie inside "
            f"two roots; use --root {inner}, or choose a folder that holds no memory root (nothing was created)"
        )
    if is_memory_root(path):
        return path, False
    if not create or enclosing_root(path) is not None:  # a write never makes a root inside a root (ROOT/history)
        raise missing_root(root)
    if path.exists() and not path.is_dir():
        raise InvalidInputError(f"--root {root} exists and is not a directory")
    if path.is_dir() and any(path.iterdir()) and not explicit:
        raise InvalidInputError(
            f"{root} is not empty and not a memory root (no records/); make it one with `agent-memory init {root}`, or check --root"
        )
    parent = path.absolute().parent
    if not path.exists() and not parent.is_dir() and not parents:
        raise NotFoundError(
            f"cannot create memory root {root}: its parent directory {parent} does not exist "
            f"(mistyped --root? `agent-memory init -p {root}` creates parents)"
        )
    if parents:
        parent.mkdir(parents=True, exist_ok=True)
    return path, not path.exists()


def check_output(out: str, flag: str = "--out") -> Path:
    """An output path a command may write (``export --out``): never a memory root nor a path inside one (followed
    through symlinks), where the file would replace or be read as the root's own data (a record, ``USER.md``,
    ``index.db``). Every option that names a file a command writes goes through here; a refusal is an
    ``InvalidInputError`` naming the flag, and nothing is written."""
    from agent_memory.backends.files.layout import outside_roots

    return outside_roots(out, flag)  # the rule's one home, which export_records applies to the API too


def not_changeable(what: str, item_id: str, namespace: str | None) -> NotFoundError:
    """The error a change (forget, episodes delete) gives for an item the caller sees but may not change: it lies in
    another namespace than the caller's own (``namespace``: the item's, which the caller can read already). Only
    called once a read as the same caller has shown the item; any other miss keeps "not visible to this caller"."""
    own = IDENTITY["namespace"] or ""
    label = f"namespace {namespace}" if namespace else "the root namespace"
    mine = f"namespace {own}" if own else "the root namespace"
    how = f"--namespace {namespace}" if namespace else "without --namespace"
    return NotFoundError(
        f"{what} {item_id!r} is in {label}, not in this caller's own ({mine}): only records of the caller's own "
        f"namespace can be changed; change it as a caller of {label} ({how})"
    )


class StoreTarget:
    """The files backend, called synchronously (no event loop, no model libraries: a fast cold start)."""

    url = None

    def __init__(self, store: "MemoryStore") -> None:
        self.store = store
        self.root = str(store.root)
        self._view: Any = None
        if IDENTITY["namespace"]:  # every read of the command sees as its caller, until the target closes
            from agent_memory.backends.files.namespaces import read_registry
            from agent_memory.model import scopes

            self._view = scopes.bind(caller_of().view(read_registry(store.root)))

    def remember_many(self, drafts: list[Any], **kwargs: Any) -> list[Any]:
        return self.store.remember_many(stamp(drafts), **kwargs)

    def get(self, record_id: str, **caller: Any) -> Any:
        return self.store.get(record_id, **caller)

    def list(self, *, limit: int | None, **filters: Any) -> list[Any]:
        return self.store.list(limit=limit, **filters)

    def count(self, **filters: Any) -> int:
        return self.store.count(**filters)

    def search(self, query: str, **options: Any) -> Any:
        return self.store.search(query, **options)

    def forget(self, record_id: str, **caller: Any) -> bool:
        from agent_memory.model import scopes

        with scopes.viewing(caller_of().own_view()):  # a change: the caller's own namespace only
            return self.store.forget(record_id, **caller)

    def inject(self, budget: int, **caller: Any) -> Any:
        from agent_memory.agents.core_block import inject

        return inject(self.store, budget, **caller)

    def call(self, name: str, **kwargs: Any) -> Any:  # sweep, reindex, doctor
        return getattr(self.store, name)(**kwargs)

    def links(self, record_id: str, **caller: Any) -> Any:
        """Outgoing links and backlinks of a visible record (:mod:`agent_memory.backends.files.links`)."""
        return self.store.links(record_id, **caller)

    def close(self) -> None:
        self.store.close()
        view, self._view = self._view, None
        if view is not None:
            from agent_memory.model import scopes

            with contextlib.suppress(ValueError):  # bound in another context (a thread): nothing to undo here
                scopes.unbind(view)

    def __enter__(self) -> "StoreTarget":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class BackendTarget:
    """Any :class:`~agent_memory.backends.base.MemoryBackend` (e.g. PostgreSQL), driven from one event loop.

    Every call runs on the target's one loop; :meth:`close` (or leaving ``with open_target(…) as target:``)
    closes the backend's connections on that same loop and then the loop, so a command leaves nothing pending
    (agent_memory.backends.postgres.pool: the owner closes its connections on the loop that opened them)."""

    def __init__(self, backend: "MemoryBackend", url: str) -> None:
        import asyncio

        self.backend, self.url, self.root = backend, url, url
        self._runner: asyncio.Runner | None = asyncio.Runner()

    def _run(self, coro: Any) -> Any:
        if self._runner is None:
            coro.close()
            raise InvalidInputError("this target is closed")
        import contextvars

        # the command's context now (its ``acting("cli")``, its namespace view), not the one of the runner's first run
        return self._runner.run(coro, context=contextvars.copy_context())

    def _caller(self, caller: dict[str, Any]) -> Any:
        from agent_memory.backends.base import Caller

        return Caller(
            session_id=caller.pop("session_id", None),
            user_id=caller.pop("user_id", None),
            namespace=IDENTITY["namespace"],
            isolation=IDENTITY["isolation"],  # type: ignore[arg-type]
        )

    def remember_many(self, drafts: list[Any], **kwargs: Any) -> list[Any]:
        kwargs.pop("batch_size", None)
        return self._run(self.backend.remember_many(stamp(drafts), **kwargs))  # type: ignore[no-any-return]

    def get(self, record_id: str, **caller: Any) -> Any:
        return self._run(self.backend.get(record_id, self._caller(caller)))

    def list(self, *, limit: int | None, **filters: Any) -> list[Any]:
        caller = self._caller(filters)
        return self._run(self.backend.list(caller, limit=limit, **filters))  # type: ignore[no-any-return]

    def count(self, **filters: Any) -> int:
        caller = self._caller(filters)
        return int(self._run(self.backend.count(caller, **filters)))

    def search(self, query: str, **options: Any) -> Any:
        caller = self._caller(options)
        return self._run(self.backend.search(query, caller, **options))

    def forget(self, record_id: str, **caller: Any) -> bool:
        return bool(self._run(self.backend.forget(record_id, self._caller(caller))))

    def inject(self, budget: int, **caller: Any) -> Any:
        from agent_memory.provider import MemoryProvider

        provider: Any = MemoryProvider(self.backend, namespace=IDENTITY["namespace"], isolation=IDENTITY["isolation"])  # type: ignore[arg-type]
        return self._run(provider.inject(budget, **caller))

    def call(self, name: str, **kwargs: Any) -> Any:  # sweep, reindex, doctor: every backend has them
        kwargs.pop("progress", None)
        ops = {"sweep": self.backend.sweep, "reindex": self.backend.reindex, "doctor": self.backend.doctor}
        if name not in ops:
            raise InvalidInputError(f"unknown maintenance operation {name!r}")
        return self._run(ops[name]())

    def provenance(self, record_id: str, **caller: Any) -> Any:
        """Who created and last changed a record (a backend that keeps none raises ``UnsupportedError``)."""
        from agent_memory.backends.base import LifecycleBackend, require

        lifecycle = require(self.backend, LifecycleBackend, "provenance")
        return self._run(lifecycle.provenance(record_id, self._caller(caller)))

    def links(self, record_id: str, **caller: Any) -> Any:
        """Outgoing links and backlinks of a visible record (a backend that keeps none raises ``UnsupportedError``)."""
        from agent_memory.backends.base import LinksBackend, require

        return self._run(require(self.backend, LinksBackend, "links").links(record_id, self._caller(caller)))

    def close(self) -> None:
        """Close the backend on the target's loop, then the loop (idempotent)."""
        if self._runner is None:
            return
        runner, self._runner = self._runner, None
        try:
            runner.run(self.backend.close())
        finally:
            runner.close()

    def __enter__(self) -> "BackendTarget":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_url(url: str) -> "MemoryBackend":
    """The backend for a database URL; a clear typed error when its optional extra is missing."""
    check_url(url)
    try:
        from agent_memory.backends import open_backend

        return open_backend(url, pooled=False)  # one process, one command: no pool to start
    except ImportError as exc:
        err = MissingExtraError(
            f"--root {url.split('://', 1)[0]}://… needs the PostgreSQL backend: pip install 'agent-memory[postgres]' ({exc})",
            name=exc.name or "psycopg",
        )
        err.extra = "postgres"
        raise err from None


def open_target(root: str, *, create: bool, explicit: bool = False) -> StoreTarget | BackendTarget:
    """The target for ``--root`` under the root policy of this module."""
    if is_url(root):
        return BackendTarget(open_url(root), root)
    path, created = prepare_root(root, create=create, explicit=explicit)
    from agent_memory.backends.files.store import MemoryStore

    target = StoreTarget(MemoryStore(path))
    if created:
        note(f"created memory root {os.path.abspath(path)}")
    return target
