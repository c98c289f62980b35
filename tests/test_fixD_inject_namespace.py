"""``core_block.inject`` over a synchronous ``MemoryStore`` reads as its caller's namespace, as the provider (and so
the CLI) does over a backend (issue 27, attacker finding inject1: a ``Caller(namespace="acme", isolation="full")``
got the root's records and none of acme's)."""

from __future__ import annotations

from pathlib import Path

from agent_memory import Caller, MemoryProvider, MemoryStore
from agent_memory.agents.core_block import inject
from agent_memory.model import scopes


async def test_store_inject_binds_the_callers_namespace_view_as_the_provider_does(tmp_path: Path) -> None:
    root = tmp_path / "root"
    async with MemoryProvider(root, durable=False) as p:
        await p.remember("ROOT-ONLY project plan alpha", scope="project")
        await p.remember("ACME-ONLY note beta", scope="project", namespace="acme")
        await p.curate("ROOT curated line gamma", scope="project")
        await p.curate("ACME curated line delta", scope="project", namespace="acme")
        wanted = {
            (ns, iso): (await p.inject(namespace=ns, isolation=iso)).text
            for ns, iso in ((None, None), ("acme", "full"), ("acme", "inherited"))
        }
    store = MemoryStore(root, durable=False)
    try:
        full = inject(store, caller=Caller(namespace="acme", isolation="full")).text
        assert "ACME-ONLY" in full and "ACME curated" in full
        assert "ROOT-ONLY" not in full and "ROOT curated" not in full
        inherited = inject(store, caller=Caller(namespace="acme", isolation="inherited")).text
        assert all(s in inherited for s in ("ACME-ONLY", "ROOT-ONLY", "ACME curated", "ROOT curated"))
        at_root = inject(store).text
        assert "ROOT-ONLY" in at_root and "ACME" not in at_root
        assert wanted == {(None, None): at_root, ("acme", "full"): full, ("acme", "inherited"): inherited}
        # a caller naming no namespace reads the view its surroundings bound (as the CLI binds --namespace)
        with scopes.viewing(Caller(namespace="acme", isolation="full").own_view()):
            assert inject(store).text == full
    finally:
        store.close()
