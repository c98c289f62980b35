"""The provider's lifecycle face: history, restore, undo, events, purge, extension hooks, consolidation, reflect."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from agent_memory.backends.base import Caller, MemoryBackend
from agent_memory.model.records import MemoryRecord

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.agents.profiles import Profile
    from agent_memory.agents.workers.reflect import Reflection
    from agent_memory.consolidate import ConsolidationReport


class LifecycleAPI:
    """Mixed into :class:`~agent_memory.provider.MemoryProvider` (which supplies ``backend`` and the profile)."""

    if TYPE_CHECKING:  # pragma: no cover
        backend: MemoryBackend

        @property
        def profile(self) -> Profile: ...

        async def _loaded_profile(self) -> None: ...

        async def flush(self) -> builtins.list[Any]: ...

    def _lifecycle(self, name: str) -> Any:
        fn = getattr(self.backend, name, None)
        if fn is None:
            from agent_memory.backends.files.events import NotSupportedError

            raise NotSupportedError(f"{name} is not supported by the {type(self.backend).__name__} backend yet")
        return fn

    async def purge(self, record_id: str | None = None, *, session_id: str | None = None,
                    user_id: str | None = None) -> Any:
        """Delete content for good (irreversible): one record the caller may see, or, without ``record_id``,
        everything of ``user_id`` and/or ``session_id`` (see :mod:`agent_memory.backends.files.purge`). Returns a ``PurgeReport``."""
        return await self._lifecycle("purge")(record_id, session_id=session_id, user_id=user_id)

    async def history(self, record_id: str, *, session_id: str | None = None, user_id: str | None = None) -> Any:
        """Every version of a visible record (live or archived), oldest first, with its events."""
        return await self._lifecycle("history")(record_id, Caller(session_id, user_id))

    async def restore(self, record_id: str, *, version: int | None = None, session_id: str | None = None,
                      user_id: str | None = None) -> MemoryRecord:
        """Bring back a forgotten/swept record, or make ``version`` (default: the previous one) current."""
        return await self._lifecycle("restore")(record_id, Caller(session_id, user_id), version=version)  # type: ignore[no-any-return]

    async def undo(self, *, session_id: str | None = None, user_id: str | None = None) -> Any:
        """Reverse this caller's last change not undone yet; returns the event it reversed."""
        return await self._lifecycle("undo")(Caller(session_id, user_id))

    async def events(self, *, record_id: str | None = None, session_id: str | None = None, user_id: str | None = None,
                     limit: int | None = None) -> Any:
        """Events of records the caller may see, oldest first."""
        return await self._lifecycle("events")(Caller(session_id, user_id), record_id=record_id, limit=limit)

    async def provenance(self, record_id: str, *, session_id: str | None = None, user_id: str | None = None) -> Any:
        """Who created and last changed a visible record."""
        return await self._lifecycle("provenance")(record_id, Caller(session_id, user_id))

    # -- extensions, consolidation, reflect ------------------------------------------------
    def on(self, name: str, fn: Any) -> Any:
        """Register an extension hook (``on_memory_written``, ``on_memory_retrieved``, ``on_session_end``); returns ``fn``.

        See :mod:`agent_memory.backends.extended`. Registering the first hook wraps the backend, so tools and workers
        built afterwards see it."""
        from agent_memory.backends.extended import ExtendedBackend, Hooks

        if not isinstance(self.backend, ExtendedBackend):
            self.backend = ExtendedBackend(self.backend, Hooks())
        return self.backend.hooks.add(name, fn)

    async def end_session(self, session_id: str | None, *, user_id: str | None = None, **info: Any) -> None:
        """Tell ``on_session_end`` hooks a conversation ended (pending captures are awaited first). Never raises."""
        await self.flush()
        end = getattr(self.backend, "end_session", None)
        if end is not None:
            await end(session_id, user_id, **info)

    async def consolidate(self, *, dry_run: bool = False, max_share: float | None = None, worker: bool = False,
                          session_id: str | None = None, user_id: str | None = None, **options: Any) -> "ConsolidationReport":
        """Consolidate memory without destroying it (merge near-duplicates, TTL, scope-path, decay; lint); see
        :mod:`agent_memory.consolidate`. Changes are archives (restorable), at most ``max_share`` (default 10%).

        Default: the deterministic pass over every partition (or over what ``session_id``/``user_id`` see, when
        given). ``worker=True``: the consolidate worker of the profile reviews that plan for the caller and acts
        on it (fails open: a model error is reported, never raised)."""
        from agent_memory.consolidate import consolidate_backend, fire_archived

        if not worker:
            caller = Caller(session_id, user_id) if session_id or user_id else None
            return await consolidate_backend(self.backend, dry_run=dry_run, max_share=max_share, caller=caller, **options)
        from agent_memory.agents.workers.consolidate import run_consolidate

        await self._loaded_profile()
        report = await run_consolidate(self.backend, caller=Caller(session_id, user_id), worker=lambda: self.profile.consolidate,
                                       max_share=max_share, dry_run=dry_run, **options)
        await fire_archived(self.backend, report)
        return report

    async def reflect(self, question: str, *, session_id: str | None = None, user_id: str | None = None,
                      timeout_s: float | None = None) -> "Reflection":
        """A synthesised answer to ``question`` citing the records it rests on (the reflect worker). Never raises."""
        from agent_memory.agents.workers.reflect import run_reflect

        await self._loaded_profile()
        return await run_reflect(self.backend, question, caller=Caller(session_id, user_id),
                                 worker=lambda: self.profile.reflect, timeout_s=timeout_s)
