"""Purgers an application registered (``register_purger``) are told a namespace purge's namespace.

The rule (docs/namespaces.md, "Purge by namespace"): a purger taking a ``namespace`` keyword (or ``**kwargs``) is
called on every owner or namespace purge with ``namespace=`` (None: no namespace purge); an older purger,
``fn(root, user_id, session_id)``, keeps being called on user/session purges and is skipped — and named in the
report — by a namespace purge, which it could not keep to the namespace. The registry is the files backend's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_memory.backends.files.purge import knows_namespaces, register_purger, unregister_purger
from agent_memory.backends.files.store import MemoryStore
from agent_memory.errors import InvalidInputError
from agent_memory.model.drafts import MemoryDraft

Call = tuple[str | None, str | None, str | None]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    made = MemoryStore(tmp_path / "mem", durable=False)
    made.remember_many([MemoryDraft("Acme support rota is weekly.", scope="project", namespace="acme")])
    yield made
    made.close()


@pytest.fixture
def registered() -> Iterator[dict[str, list[Any]]]:
    calls: dict[str, list[Any]] = {"aware": [], "kwargs": [], "old": []}

    def aware(root: Path, user_id: str | None, session_id: str | None, *, namespace: str | None = None) -> int:
        calls["aware"].append((user_id, session_id, namespace))
        return 2

    def kwargs(root: Path, user_id: str | None, session_id: str | None, **options: Any) -> int:
        calls["kwargs"].append((user_id, session_id, options.get("namespace")))
        return 1

    def old(root: Path, user_id: str | None, session_id: str | None) -> int:
        calls["old"].append((user_id, session_id))
        return 5

    for fn in (aware, kwargs, old):
        register_purger(fn)
    try:
        yield calls
    finally:
        for fn in (aware, kwargs, old):
            unregister_purger(fn)


def test_a_namespace_purge_tells_the_purgers_that_take_it(store: MemoryStore, registered: dict[str, list[Any]]) -> None:
    report = store.purge(namespace="acme")
    assert registered["aware"] == [(None, None, "acme")] and registered["kwargs"] == [(None, None, "acme")]
    assert registered["old"] == []  # it would take the user's items in every namespace: not called...
    assert report.others == {"aware": 2, "kwargs": 1} and report.skipped == ["old"]  # ...and named
    assert report.to_dict()["skipped"] == ["old"]
    store.purge(user_id="alice", namespace="acme/support")
    assert registered["aware"][-1] == ("alice", None, "acme/support")


def test_an_owner_purge_calls_every_purger_as_before(store: MemoryStore, registered: dict[str, list[Any]]) -> None:
    report = store.purge(user_id="alice")
    assert registered["old"] == [("alice", None)] and registered["aware"] == [("alice", None, None)]
    assert report.others == {"aware": 2, "kwargs": 1, "old": 5} and report.skipped == []
    assert "skipped" not in report.to_dict()


def test_the_rule_reads_the_signature() -> None:
    assert knows_namespaces(lambda root, user_id, session_id, namespace=None: 0)
    assert knows_namespaces(lambda root, user_id, session_id, **kw: 0)
    assert not knows_namespaces(lambda root, user_id, session_id: 0)
    assert not knows_namespaces(lambda root, user_id, session_id, *namespace: 0)  # positional-only tail: not the keyword
    with pytest.raises(InvalidInputError, match="callable"):
        register_purger("not a function")  # type: ignore[arg-type]
