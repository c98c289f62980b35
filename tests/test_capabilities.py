"""Optional backend capabilities (issue 28): one protocol per capability, one UnsupportedError, one wording.

Both backends satisfy the protocols they claim (checked with ``isinstance``); a backend lacking one gets
:class:`agent_memory.errors.UnsupportedError` saying ``"<feature>: not supported on the <Backend> backend"`` from the
provider, the tools and the CLI; the four old error names are subclasses and still catch it.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import agent_memory
from agent_memory import MemoryProvider, MemoryStore
from agent_memory.backends.base import (
    Caller,
    EpisodesBackend,
    LifecycleBackend,
    MemoryBackend,
    SessionsBackend,
    VectorsBackend,
    capability,
    require,
)
from agent_memory.backends.files.backend import FilesBackend
from agent_memory.consolidate import ConsolidationUnsupported
from agent_memory.episodes import Episodes, EpisodeStore, EpisodesUnsupportedError, build_episode, episode_store
from agent_memory.errors import BackendError, UnsupportedError
from agent_memory.model.events import NotSupportedError
from agent_memory.sessions import SessionStore
from agent_memory.sessions.api import SessionsNotSupportedError, session_store

CAPABILITIES = (LifecycleBackend, SessionsBackend, EpisodesBackend, VectorsBackend)
DEAD_URL = "postgresql://nobody@127.0.0.1:1/none"  # never connected to: every check here fails before any I/O


class Bare:
    """A backend with exactly :class:`MemoryBackend` (e.g. a remote service): no optional capability at all."""

    def __init__(self, inner: FilesBackend) -> None:
        self._inner = inner

    async def remember(self, draft: Any, *, source: str = "tool") -> Any:
        return await self._inner.remember(draft, source=source)

    async def remember_many(self, drafts: Any, **kw: Any) -> Any:
        return await self._inner.remember_many(drafts, **kw)

    async def supersede(self, old_id: str, draft: Any, *, source: str = "tool") -> Any:
        return await self._inner.supersede(old_id, draft, source=source)

    async def get(self, record_id: str, caller: Caller) -> Any:
        return await self._inner.get(record_id, caller)

    async def list(self, caller: Caller, *, limit: int | None = 50, **filters: Any) -> Any:
        return await self._inner.list(caller, limit=limit, **filters)

    async def count(self, caller: Caller, **filters: Any) -> int:
        return await self._inner.count(caller, **filters)

    async def search(self, query: str, caller: Caller, *, limit: int = 10, **options: Any) -> Any:
        return await self._inner.search(query, caller, limit=limit, **options)

    async def forget(self, record_id: str, caller: Caller) -> bool:
        return await self._inner.forget(record_id, caller)

    async def core_lines(self, caller: Caller, limit: int | None) -> Any:
        return await self._inner.core_lines(caller, limit)

    async def user_md(self) -> str:
        return await self._inner.user_md()

    async def sweep(self) -> Any:
        return await self._inner.sweep()

    async def reindex(self) -> Any:
        return await self._inner.reindex()

    async def doctor(self) -> Any:
        return await self._inner.doctor()

    async def close(self) -> None:
        await self._inner.close()


def _postgres() -> Any:
    from _pg import require_psycopg

    require_psycopg()
    from agent_memory.backends.postgres.backend import PostgresBackend

    return PostgresBackend(DEAD_URL, pooled=False)


def test_the_files_backend_offers_every_capability(tmp_path: Path) -> None:
    backend = FilesBackend(MemoryStore(tmp_path / "m", durable=False))
    assert isinstance(backend, MemoryBackend)
    for protocol in CAPABILITIES:
        assert isinstance(backend, protocol), protocol.__name__
        assert capability(backend, protocol) is backend
    assert isinstance(backend.sessions, SessionStore)
    assert isinstance(backend.episodes, EpisodeStore) and backend.episodes is backend.episodes  # no root sniffing
    assert episode_store(backend) is backend.episodes
    asyncio.run(backend.close())


def test_the_postgres_backend_offers_every_capability() -> None:
    backend = _postgres()
    assert isinstance(backend, MemoryBackend)
    for protocol in CAPABILITIES:
        assert isinstance(backend, protocol), protocol.__name__
    assert isinstance(backend, SessionsBackend) and isinstance(backend, EpisodesBackend) and isinstance(backend, VectorsBackend)
    assert isinstance(backend.sessions, SessionStore) and isinstance(backend.episodes, Episodes)
    assert backend.embedder is None
    asyncio.run(backend.close())


def test_a_bare_backend_offers_none_and_the_provider_says_so_one_way(tmp_path: Path) -> None:
    bare = Bare(FilesBackend(MemoryStore(tmp_path / "m", durable=False)))
    assert isinstance(bare, MemoryBackend)
    assert not any(isinstance(bare, p) for p in CAPABILITIES)
    provider = MemoryProvider(bare)  # type: ignore[arg-type]

    async def main() -> None:
        for feature, call in (
            ("history", provider.history("x")),
            ("undo", provider.undo()),
            ("purge", provider.purge(user_id="u")),
            ("restore", provider.restore("x")),
            ("events", provider.events()),
            ("provenance", provider.provenance("x")),
            ("forget --purge", provider.forget("x", purge=True)),
            ("episodes", provider.episodes(user_id="u")),
            ("session logs", provider.sessions(user_id="u")),
            ("session logs", provider.search("x", mode="contextual")),
            ("consolidation", provider.consolidate(dry_run=True)),
        ):
            with pytest.raises(UnsupportedError) as info:
                await call
            assert str(info.value).startswith(f"{feature}: not supported on the Bare backend"), str(info.value)
            assert info.value.feature == feature and info.value.backend == "Bare"
        assert await provider.embedded(0.1) is True  # no vectors: nothing to wait for
        await provider.aclose()

    asyncio.run(main())


def test_old_error_names_are_subclasses_and_still_catch_it(tmp_path: Path) -> None:
    for old in (NotSupportedError, SessionsNotSupportedError, EpisodesUnsupportedError, ConsolidationUnsupported):
        assert issubclass(old, UnsupportedError) and issubclass(old, BackendError)
        assert getattr(agent_memory, old.__name__, old) is old
    assert agent_memory.UnsupportedError is UnsupportedError and "UnsupportedError" in agent_memory.__all__
    bare = Bare(FilesBackend(MemoryStore(tmp_path / "m", durable=False)))
    provider = MemoryProvider(bare)  # type: ignore[arg-type]
    with pytest.raises(NotSupportedError):
        asyncio.run(provider.history("x"))
    with pytest.raises(SessionsNotSupportedError, match="not supported on the Bare backend"):
        session_store(bare)
    with pytest.raises(EpisodesUnsupportedError, match="^episodes: not supported on the Bare backend$"):
        episode_store(bare)
    with pytest.raises(ConsolidationUnsupported, match="^consolidation: not supported on the Bare backend"):
        asyncio.run(provider.consolidate())


def test_capabilities_are_found_through_a_wrapper_without_attribute_forwarding(tmp_path: Path) -> None:
    """``ExtendedBackend`` forwards attributes with ``__getattr__``, which ``isinstance`` on a protocol does not see
    from Python 3.12 on: capabilities follow its ``inner`` instead, and errors name the wrapped backend."""
    files = FilesBackend(MemoryStore(tmp_path / "m", durable=False))

    class Wrapper:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

    wrapped = Wrapper(Wrapper(files))
    for protocol in CAPABILITIES:
        assert capability(wrapped, protocol) is files
    assert session_store(wrapped) is files.sessions and episode_store(wrapped) is files.episodes
    with pytest.raises(UnsupportedError, match="^vector search: not supported on the Bare backend"):
        require(Wrapper(Bare(files)), VectorsBackend, "vector search")

    async def main() -> None:
        seen: list[Any] = []
        async with MemoryProvider(tmp_path / "h") as provider:
            provider.on("on_memory_written", seen.append)  # the backend is now an ExtendedBackend
            r = await provider.remember("Hooks and lifecycle together.", user_id="ada")
            assert [e.event for e in await provider.events(user_id="ada")] == ["created"]
            assert (await provider.history(r.id, user_id="ada")).state == "live"
            episode = await provider.record_episode("Wrap a backend", user_id="ada", output="done")
            assert [e.id for e in await provider.episodes(user_id="ada")] == [episode.id]
            assert provider.session_store is capability(provider.backend, SessionsBackend).sessions  # type: ignore[union-attr]
        assert seen

    asyncio.run(main())


def test_files_backend_vectors_attach_embed_and_detach(tmp_path: Path) -> None:
    from agent_memory.embeddings import CallableEmbedder

    def vectors(texts: list[str]) -> Any:
        return np.array([[float(len(t)), 1.0, float(t.count("e"))] for t in texts], dtype=np.float32)

    async def main() -> None:
        backend = FilesBackend(MemoryStore(tmp_path / "m", durable=False))
        await backend.remember(agent_memory.MemoryDraft("Vectors are derived data.", scope="project"))
        assert backend.embedder is None and await backend.embedded(0.1) is True
        with pytest.raises(agent_memory.InvalidInputError, match="no embedder"):
            await backend.embed()
        embedder = CallableEmbedder(vectors, name="toy", dim=3)
        backend.use_embedder(embedder)
        assert backend.embedder is embedder
        report = await backend.embed()
        assert report.error is None and report.embedded == 1
        backend.use_embedder(None)
        assert backend.embedder is None and backend.store.meaning is None
        await backend.close()

    asyncio.run(main())


def test_tools_offer_only_what_the_backend_has(tmp_path: Path) -> None:
    pytest.importorskip("pydantic_ai")
    from agent_memory.agents.tools import READ, memory_toolset

    files = FilesBackend(MemoryStore(tmp_path / "m", durable=False))
    assert {"memory_episodes", "memory_search_sessions"} <= set(memory_toolset(files, READ).tools)
    bare_tools = set(memory_toolset(Bare(files), READ).tools)
    assert "memory_search" in bare_tools and not {"memory_episodes", "memory_search_sessions"} & bare_tools


def test_provider_and_cli_say_the_same_thing_for_postgres_consolidation(tmp_path: Path) -> None:
    backend = _postgres()
    provider = MemoryProvider(backend)

    async def main() -> tuple[str, str]:
        with pytest.raises(ConsolidationUnsupported) as consolidation:
            await provider.consolidate(dry_run=True)
        with pytest.raises(NotSupportedError) as provenance:
            await provider.provenance("x", user_id="ada")
        await provider.aclose()
        return str(consolidation.value), str(provenance.value)

    said, prov = asyncio.run(main())
    assert said.startswith("consolidation: not supported on the Postgres backend (")
    assert prov.startswith("provenance: not supported on the Postgres backend (")
    out = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli", "--root", DEAD_URL, "--json", "consolidate", "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert json.loads(out.stdout) == {"error": {"type": "ConsolidationUnsupported", "message": said}}


def test_episode_store_still_takes_a_root_a_store_or_a_provider(tmp_path: Path) -> None:
    store = EpisodeStore(tmp_path / "m")
    assert episode_store(store) is store
    assert isinstance(episode_store(tmp_path / "m"), EpisodeStore)
    provider = MemoryProvider(tmp_path / "p")
    written = episode_store(provider).write(build_episode("Find the store", user_id="ada", output="found"))
    assert [e.id for e in episode_store(provider.backend).list(user_id="ada")] == [written.id]
    provider.close()
