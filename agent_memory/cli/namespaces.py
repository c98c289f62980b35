"""``agent-memory namespace``: the root's namespace registry (which namespaces are shared, their default isolation)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from agent_memory.cli._base import emit
from agent_memory.cli._target import BackendTarget, StoreTarget, is_url, open_target

Handler = Callable[[argparse.Namespace], "int | None"]


def register(add: Callable[..., argparse.ArgumentParser]) -> dict[str, Handler]:
    p = add(
        "namespace",
        "Configure a namespace (mark it shared, set its default isolation), or list the configured ones.",
        [
            "agent-memory namespace acme/coding --shared",
            "agent-memory namespace acme/support --default-isolation full",
            "agent-memory namespace --json",
        ],
        "A namespace marked shared is read by its siblings that use `--isolation shared` (docs/namespaces.md).",
    )
    p.add_argument("name", nargs="?", metavar="NAMESPACE", help="the namespace to configure (none: list the registry)")
    p.add_argument("--shared", action=argparse.BooleanOptionalAction, default=None, help="mark it shared (or, --no-shared, not)")
    p.add_argument(
        "--default-isolation",
        dest="default_isolation",
        choices=("full", "inherited", "shared"),
        help="the isolation of a caller in this namespace that names none",
    )
    return {"namespace": cmd_namespace}


def cmd_namespace(args: argparse.Namespace) -> None:
    with open_target(args.root, create=args.name is not None) as target:
        if is_url(args.root):
            assert isinstance(target, BackendTarget)
            backend: Any = target.backend
            if args.name is None:
                doc: Any = {"namespaces": target._run(backend.namespaces())}
            else:
                doc = target._run(backend.configure_namespace(args.name, shared=args.shared, isolation=args.default_isolation))
        else:
            from agent_memory.backends.files.namespaces import configure, read_registry

            assert isinstance(target, StoreTarget)
            store = target.store
            if args.name is None:
                doc = {"namespaces": read_registry(store.root)}
            else:
                doc = configure(store.root, args.name, shared=args.shared, isolation=args.default_isolation, lock=store.lock)
    if args.name is None:
        emit(args, doc, lambda: "\n".join(_line(ns, cfg) for ns, cfg in doc["namespaces"].items()) or "no namespace configured")
    else:
        emit(args, doc, lambda: _line(doc["namespace"], doc))


def _line(ns: str, cfg: dict[str, Any]) -> str:
    return f"{ns}  {'shared' if cfg.get('shared') else 'not shared'}  isolation {cfg.get('isolation') or 'inherited (default)'}"
