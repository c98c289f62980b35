"""``PostgresBackend``: the :class:`~agent_memory.backends.base.MemoryBackend` protocol over PostgreSQL rows.

Rows are the truth (Markdown via export/import). Every draft goes through
:func:`agent_memory.model.drafts.prepare_draft`, so validation, redaction and defaults match the files backend.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import dataclasses
import datetime as dt
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal

import psycopg

from agent_memory.backends.base import Caller, RecordedEmbedder
from agent_memory.backends.postgres.events import events_for, record_archive_event, record_writes
from agent_memory.backends.postgres.maintenance import Maintenance
from agent_memory.backends.postgres.namespaces import changes_as_caller, configure, reads_as_caller, registry
from agent_memory.backends.postgres.pool import Pool
from agent_memory.backends.postgres.rows import (
    SELECT,
    check_strings,
    filters_sql,
    iso,
    row_to_record,
    tenant_part,
    url_location,
    visibility,
)
from agent_memory.backends.postgres.schema import TEXT_CONFIG, check_schema
from agent_memory.backends.postgres.search import PgSearch, checked_query
from agent_memory.backends.postgres.writes import Writer, chunks
from agent_memory.errors import InvalidInputError
from agent_memory.model.drafts import MemoryDraft, RememberResult, explicit_fields, prepare_draft
from agent_memory.model.events import Event, NotSupportedError, acting
from agent_memory.model.lines import core_line
from agent_memory.model.records import MemoryRecord, Scope, normalize_tags, parse_scope, validate_id
from agent_memory.model.reports import BackfillReport, DoctorReport, History, PurgeReport, SweepReport, SyncReport
from agent_memory.model.supersession import UNDEDUPED_KINDS
from agent_memory.model.wording import record_not_found
from agent_memory.search.lexical import LexicalEngine
from agent_memory.search.types import SearchResult

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.embeddings import Embedder
    from agent_memory.episodes import Episodes
    from agent_memory.model.links import RecordLinks
    from agent_memory.sessions import SessionStore

Prepared = tuple[MemoryRecord, int, str, frozenset[str]]  # record, redactions, on_existing, fields the draft set
Written = tuple[RememberResult, dict[str, Any] | None]  # a result and its note for the event log (Writer.remember_one)
# MemoryStore options that mean nothing for a database: accepted (a provider passes one option set) and unused
FILES_ONLY = frozenset({"durable", "rescan_interval", "lock_timeout_s", "memory_md_limit", "fts_tokenizer", "context_of"})
ENGINE_OPTIONS = frozenset({"tokenizer", "stop_words", "snippet_lines", "snippet_chars"})


class PostgresBackend:
    """Memory records in one PostgreSQL schema (``schema``, default ``agent_memory``).

    ``copy_threshold``: a ``remember_many`` batch with at least this many unkeyed drafts is ingested with COPY.
    ``batch_size``: drafts per transaction in ``remember_many``; ``ingest_connections``: batches written at once.
    ``pooled=False``: plain connections instead of a pool (a one-shot process such as the command line).
    ``strict_visibility``: candidate selection counts only the caller's visible records (also per search; see
    :mod:`agent_memory.backends.postgres.search`), so another user's hidden records cannot move a caller's hits.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str = "agent_memory",
        default_scope: Scope | str | None = None,
        min_size: int = 1,
        max_size: int = 10,
        timeout_s: float = 30.0,
        text_config: str = TEXT_CONFIG,
        engine: LexicalEngine | None = None,
        batch_size: int = 5000,
        copy_threshold: int = 64,
        ingest_connections: int = 2,
        pooled: bool = True,
        embedder: Any = None,
        strict_visibility: bool = False,
        **options: Any,
    ) -> None:
        unknown = set(options) - FILES_ONLY - ENGINE_OPTIONS
        if unknown:
            raise InvalidInputError(f"unknown PostgresBackend option(s): {', '.join(sorted(unknown))}")
        if not isinstance(url, str) or not url.startswith(("postgresql://", "postgres://")):
            raise InvalidInputError("url must be a postgresql:// URL")
        if not isinstance(text_config, str) or not text_config.isidentifier():
            raise InvalidInputError(f"text_config must be a text search configuration name, not {text_config!r}")
        if engine is not None and not isinstance(engine, LexicalEngine):
            raise InvalidInputError("engine must be a LexicalEngine (its query parsing, tuning and snippets are used)")
        for name, value in (("batch_size", batch_size), ("copy_threshold", copy_threshold), ("ingest_connections", ingest_connections)):
            if not isinstance(value, int) or value < 1:
                raise InvalidInputError(f"{name} must be a positive integer")
        self.url = url
        self.schema = check_schema(schema)
        # None: a write without a scope goes to the caller's own partition (user, else session, else project)
        self.default_scope = None if default_scope in (None, "") else parse_scope(default_scope)
        self.batch_size = batch_size
        self.strict_visibility = bool(strict_visibility)
        self.copy_threshold = copy_threshold
        self.ingest_connections = min(ingest_connections, max_size)
        engine_kw = {k: v for k, v in options.items() if k in ENGINE_OPTIONS and v is not None}
        self.engine = engine or LexicalEngine(**engine_kw)
        self.pool = Pool(url, self.schema, min_size=min_size, max_size=max_size, timeout_s=timeout_s, pooled=pooled)
        self.table = f'"{self.schema}".records'
        self._where = f"{url_location(url)}#{self.schema}"  # paths of results: no password, no query
        self.writer = Writer(self.schema, self.path_of)
        self.searcher = PgSearch(self.table, self.engine, text_config, self.path_of)
        self.maintenance = Maintenance(self.schema, self.writer)
        self.vectors = _vectors(self.schema, embedder, self.searcher)  # dense/hybrid search (docs/meaning.md)
        self._time: Any = None  # session logs and episodes (agent_memory.backends.postgres.time_layers), on first use

    @property
    def time_layers(self) -> Any:
        """Session logs and episodes in this schema (synchronous, over their own small pool), made on first use."""
        if self._time is None:
            from agent_memory.backends.postgres.time_layers import TimeLayers

            self._time = TimeLayers(self.url, self.schema, self._where, self.pool.timeout_s, self.searcher.cfg)
        return self._time

    @property
    def sessions(self) -> SessionStore:
        """The :class:`~agent_memory.sessions.SessionStore` of this schema (session logs and summaries in rows)."""
        store: SessionStore = self.time_layers.sessions
        return store

    @property
    def episodes(self) -> Episodes:
        """The episode store of this schema (rows; see :mod:`agent_memory.backends.postgres.episodes`)."""
        store: Episodes = self.time_layers.episodes
        return store

    def path_of(self, record_id: str) -> str:
        """Where a record lives, for results: the database URL (no password), the schema and the id."""
        return f"{self._where}/{record_id}"

    def __repr__(self) -> str:
        return f"PostgresBackend({self._where!r})"

    # -- writes ---------------------------------------------------------------------------------
    async def remember(self, draft: MemoryDraft, *, source: str = "tool") -> RememberResult:
        who = (getattr(draft, "session_id", None), getattr(draft, "user_id", None))
        with acting(session_id=who[0], user_id=who[1]):  # the writer, for its event (agent_memory.backends.files.events)
            return (await self.remember_many([draft], source=source))[0]

    async def remember_many(
        self,
        drafts: Iterable[MemoryDraft],
        *,
        source: str = "import",
        on_error: Literal["raise", "skip"] = "raise",
        errors: list[tuple[int, str]] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> list[RememberResult]:
        """Validate every draft of a batch, then write the batch in one transaction (COPY for many unkeyed).

        Batches are pipelined: the next one is validated and redacted in a thread while this one is written.
        """
        results: list[RememberResult] = []
        batches = chunks(drafts, self.batch_size)
        start = 0

        def schedule() -> asyncio.Future[tuple[int, list[Prepared]]] | None:
            nonlocal start
            batch = next(batches, None)
            if batch is None:
                return None
            job = asyncio.ensure_future(asyncio.to_thread(self._prepare_batch, batch, start, source, on_error, errors))
            start += len(batch)
            return job

        pending = schedule()
        writing: builtins.list[asyncio.Task[builtins.list[Written]]] = []
        copied = 0
        at: dt.datetime | None = None  # the events' time of the batch last started, when there are several
        try:
            while pending is not None:
                size, prepared = await pending
                pending = schedule()
                if prepared:  # up to `ingest_connections` batches in flight, each its own transaction
                    while sum(not t.done() for t in writing) >= self.ingest_connections:
                        await asyncio.wait([t for t in writing if not t.done()], return_when=asyncio.FIRST_COMPLETED)
                    if writing or pending is not None:  # several batches: their events keep the input order
                        at = await self._events_time(at)
                    writing.append(asyncio.ensure_future(self._write_batch(prepared, size, progress, source, at)))
                    copied += len(prepared) if len(prepared) >= self.copy_threshold else 0
                elif progress:
                    progress(size)
        finally:
            if pending is not None:
                pending.cancel()
            done = await asyncio.gather(*writing, return_exceptions=True)  # every started batch ends first
        for part in done:
            if isinstance(part, BaseException):
                raise part
            results.extend(r for r, _ in part)
        if copied >= 1000:  # fresh planner statistics after a bulk load (else: sequential scans until autovacuum)
            await self._analyze_after(copied)
        if self.vectors is not None and results:
            self.vectors.kick(self.pool)  # vectors catch up in the background; the write never waits for them
        return results

    async def _events_time(self, last: dt.datetime | None) -> dt.datetime:
        """The time of the events of the next batch of a ``remember_many``: the server's clock, and always after
        ``last`` (the batch before it). Batches commit in any order; their events list in input order (by time)."""
        async with self.pool.connection() as conn:
            now: dt.datetime = (await (await conn.execute("SELECT clock_timestamp() AS now")).fetchone())["now"]
        return now if last is None or now > last else last + dt.timedelta(microseconds=1)

    async def _analyze_after(self, copied: int) -> None:
        """``ANALYZE`` the records after a bulk write that changed what the planner knows: the table was never
        analyzed, or the write added at least a tenth of the rows it counted (autovacuum's own threshold). A large
        store taking a small import keeps its statistics: its ``ANALYZE`` (30,000 sampled rows, ~1.5 s at 100k)
        cost more than the import."""
        async with self.pool.connection() as conn:
            cur = await conn.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", (self.table,))
            row = await cur.fetchone()
            counted = float(row["reltuples"]) if row is not None else -1.0
            if counted < 0 or copied >= 0.1 * counted:  # reltuples -1: never analyzed (PostgreSQL 14+)
                await conn.execute(f"ANALYZE {self.table}")

    def _prepare_batch(
        self, batch: builtins.list[MemoryDraft], start: int, source: str, on_error: str, errors: builtins.list[tuple[int, str]] | None
    ) -> tuple[int, builtins.list[Prepared]]:
        prepared: builtins.list[Prepared] = []
        for position, draft in enumerate(batch, start):
            try:
                if not isinstance(draft, MemoryDraft):
                    raise InvalidInputError(f"expected a MemoryDraft, not {type(draft).__name__}")
                rec, redactions = prepare_draft(draft, source, self.default_scope)
                prepared.append((rec, redactions, draft.on_existing, explicit_fields(draft)))
            except InvalidInputError as exc:
                if on_error == "raise":
                    raise
                if errors is not None:
                    errors.append((position, str(exc)))
        return len(batch), prepared

    async def _write_batch(
        self,
        prepared: builtins.list[Prepared],
        size: int = 0,
        progress: Callable[[int], None] | None = None,
        source: str = "import",
        at: dt.datetime | None = None,
    ) -> builtins.list[Written]:
        """One transaction: the batch's rows, link rows and events commit together or not at all; retried whole
        when the server aborts it for a deadlock or a lost race (every write is idempotent). Each result comes with
        its note for the event log (:meth:`Writer.remember_one`), or None.

        COPY takes the plain new facts only: unkeyed, superseding nothing, of a kind that is deduplicated. A keyed
        draft, a supersession and a memory-tool file take :meth:`Writer.remember_one`, after the copied rows."""
        unkeyed = [
            i
            for i, (rec, *_) in enumerate(prepared)
            if rec.memory_key is None and rec.supersedes is None and rec.kind not in UNDEDUPED_KINDS
        ]
        written: builtins.list[Written] = []
        async with self.pool.connection() as conn:
            for attempt in range(5):
                out: dict[int, RememberResult] = {}
                notes: dict[int, dict[str, Any]] = {}
                try:
                    async with conn.transaction():
                        if len(unkeyed) >= self.copy_threshold:  # straight into the table; staged after a lost race
                            done = await self.writer.copy_unkeyed(
                                conn, [(prepared[i][0], prepared[i][1]) for i in unkeyed], direct=attempt == 0
                            )
                            out.update(zip(unkeyed, done, strict=True))
                        for i, (rec, redactions, mode, fields) in enumerate(prepared):
                            if i not in out:
                                note: dict[str, Any] = {}
                                out[i] = await self.writer.remember_one(conn, rec, redactions, mode, fields, note)
                                notes[i] = note
                        written = [(out[i], {**notes.get(i, {}), "tenant": tenant_part(prepared[i][0])[0]}) for i in range(len(prepared))]
                        await record_writes(self, [r for r, _ in written], source, [n for _, n in written], conn=conn, at=at)
                    break
                except (psycopg.errors.TransactionRollback, psycopg.errors.UniqueViolation):
                    if attempt == 4:
                        raise
                    await asyncio.sleep(0.02 * (attempt + 1))
        if progress:
            progress(size)
        # each note names its record's tenant: the event joins the row there (an id is unique per tenant only)
        return written

    async def supersede(self, old_id: str, draft: MemoryDraft, *, source: str = "tool") -> RememberResult:
        """Write ``draft`` as the current fact in place of ``old_id`` (kept, superseded; see ``docs/time.md``)."""
        if not isinstance(draft, MemoryDraft):
            raise InvalidInputError(f"draft must be a MemoryDraft, not {type(draft).__name__}")
        return await self.remember(dataclasses.replace(draft, supersedes=validate_id(old_id)), source=source)

    @changes_as_caller
    async def forget(self, record_id: str, caller: Caller) -> bool:
        """Delete a record the caller may see, and the records it superseded (archived as ``forgotten``). False if absent."""
        validate_id(record_id)
        params = self._caller(caller)
        params["id"] = record_id
        chain = (
            f"WITH RECURSIVE chain(tenant, id, n) AS (SELECT tenant, supersedes, 1 FROM {self.table}"
            f" WHERE id = %(id)s AND supersedes IS NOT NULL AND {visibility(params, 'records')}"
            f" UNION SELECT r.tenant, r.supersedes, c.n + 1 FROM {self.table} r JOIN chain c ON r.tenant = c.tenant"
            " AND r.id = c.id WHERE r.supersedes IS NOT NULL AND c.n < 1000) SELECT tenant, id FROM chain ORDER BY n"
        )
        async with self.pool.connection() as conn, conn.transaction():  # the chain first: it starts at the record
            older = [(r["tenant"], r["id"]) for r in await (await conn.execute(chain, params)).fetchall()]  # newest first
            archived = set()
            if older:
                keys = {"ot": [t for t, _ in older], "oi": [i for _, i in older]}
                where = "(tenant, id) IN (SELECT * FROM unnest(%(ot)s::text[], %(oi)s::text[]))"
                archived = set(await self.writer._archive_where(conn, where, keys, "forgotten (superseded by a forgotten record)"))
            gone = await self.writer._archive_where(conn, f"id = %(id)s AND {visibility(params, 'records')}", params, "forgotten")
            if gone:  # its event, then one per version that went with it (as the files backend logs them)
                await record_archive_event(self, conn, record_id, caller)
                for tenant, old in older:
                    if old in archived:
                        reason = f"forgotten with {record_id}"
                        await record_archive_event(self, conn, old, caller, "archived", tenant=tenant, reason=reason, part_of=record_id)
        return bool(gone)

    # -- lifecycle (agent_memory.backends.postgres.lifecycle): purge, history, restore -------------------
    async def purge(
        self, record_id: str | None = None, *, session_id: str | None = None, user_id: str | None = None, namespace: str | None = None
    ) -> PurgeReport:
        from agent_memory.backends.postgres.lifecycle import purge

        return await purge(self, record_id, session_id=session_id, user_id=user_id, namespace=namespace)

    @changes_as_caller
    async def forget_purge(self, record_id: str, caller: Caller) -> bool:
        from agent_memory.backends.postgres.lifecycle import forget_purge

        return await forget_purge(self, record_id, caller)

    @reads_as_caller
    async def history(self, record_id: str, caller: Caller) -> History:
        from agent_memory.backends.postgres.lifecycle import history

        return await history(self, record_id, caller)

    @changes_as_caller
    async def restore(self, record_id: str, caller: Caller, *, version: int | None = None) -> MemoryRecord:
        from agent_memory.backends.postgres.lifecycle import restore

        return await restore(self, record_id, caller, version=version)

    @changes_as_caller
    async def undo(self, caller: Caller) -> Event:
        from agent_memory.backends.postgres.lifecycle import undo

        return await undo(self, caller)

    @reads_as_caller
    async def events(self, caller: Caller, *, record_id: str | None = None, limit: int | None = None) -> builtins.list[Event]:
        return await events_for(self, caller, record_id=record_id, limit=limit)

    @reads_as_caller
    async def provenance(self, record_id: str, caller: Caller) -> dict[str, Any]:
        """Not kept on PostgreSQL yet (records carry no ``metadata.provenance``; :meth:`events` say who changed what)."""
        raise NotSupportedError.of("provenance", self, "use events(record_id=...) for who changed a record")

    async def configure_namespace(self, namespace: str, *, shared: bool | None = None, isolation: str | None = None) -> dict[str, Any]:
        """Mark ``namespace`` shared (or not) and/or set its default isolation (the ``namespaces`` table)."""
        return await configure(self, namespace, shared=shared, isolation=isolation)

    async def namespaces(self) -> dict[str, dict[str, Any]]:
        """The schema's namespace registry (``{namespace: {"shared", "isolation"}}``)."""
        return await registry(self)

    async def set_user_md(self, text: str) -> None:
        """Replace the stable user notes returned by :meth:`user_md` (the files backend's ``USER.md``)."""
        check_strings(user_md=text)
        async with self.pool.connection() as conn:
            await conn.execute(
                f'INSERT INTO "{self.schema}".user_md (name, content) VALUES (%s, %s)'
                " ON CONFLICT (name) DO UPDATE SET content = excluded.content, updated = now()",
                ("USER.md", text),
            )

    # -- reads ----------------------------------------------------------------------------------
    @staticmethod
    def _caller(caller: Caller) -> dict[str, Any]:
        if not isinstance(caller, Caller):
            raise InvalidInputError("caller must be a Caller")
        check_strings(session_id=caller.session_id, user_id=caller.user_id)
        return {"sid": caller.session_id, "uid": caller.user_id}

    @reads_as_caller
    async def get(self, record_id: str, caller: Caller) -> MemoryRecord:
        validate_id(record_id)
        params = self._caller(caller)
        params["id"] = record_id
        async with self.pool.connection() as conn:
            cur = await conn.execute(f"SELECT {SELECT} FROM {self.table} r WHERE r.id = %(id)s AND {visibility(params)}", params)
            row = await cur.fetchone()
        if row is None:
            raise record_not_found(record_id)
        return row_to_record(row, self.path_of(row["id"]))

    @reads_as_caller
    async def list(self, caller: Caller, *, limit: int | None = 50, **filters: Any) -> list[MemoryRecord]:
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise InvalidInputError("limit must be a positive integer or None")
        params = self._caller(caller)
        where = visibility(params) + filters_sql(params, **filters)
        sql = f"SELECT {SELECT} FROM {self.table} r WHERE {where} ORDER BY r.updated DESC, r.id"
        if limit is not None:
            params["limit"] = limit
            sql += " LIMIT %(limit)s"
        async with self.pool.connection() as conn:
            cur = await conn.execute(sql, params)
            rows = await cur.fetchall()
        return [row_to_record(r, self.path_of(r["id"])) for r in rows]

    @reads_as_caller
    async def count(self, caller: Caller, **filters: Any) -> int:
        params = self._caller(caller)
        where = visibility(params) + filters_sql(params, **filters)
        async with self.pool.connection() as conn:
            cur = await conn.execute(f"SELECT count(*) AS n FROM {self.table} r WHERE {where}", params)
            row = await cur.fetchone()
        return int(row["n"])

    @reads_as_caller
    async def search(self, query: str, caller: Caller, *, limit: int = 10, **options: Any) -> SearchResult:
        """Rank visible records for ``query``; ``tags`` are ranking hints (as in the files backend).

        ``stages`` re-rank the default ranking's best hits (see :mod:`agent_memory.search.tuning`)."""
        query = checked_query(query, limit)
        stages = options.pop("stages", None)
        if stages is not None:
            import agent_memory.search.tuning as tuning  # only when asked for (the stages load numpy)

            chosen = tuning.check_stages(stages)
            if chosen:
                pool = await self.search(query, caller, limit=tuning.pool_size(limit), **options)
                params = self._caller(caller)
                params["ids"] = [h.id for h in pool.hits]
                async with self.pool.connection() as conn:  # one read, with the caller's visibility like the hits
                    cur = await conn.execute(
                        f"SELECT {SELECT} FROM {self.table} r WHERE r.id = ANY(%(ids)s) AND {visibility(params)}", params
                    )
                    rows = await cur.fetchall()
                facts = {row["id"]: tuning.record_facts(row_to_record(row, self.path_of(row["id"]))) for row in rows}
                return tuning.rerank(pool, chosen, limit, facts, query=query)
        params = self._caller(caller)
        if options.get("mode") == "contextual":  # sessions by summary, then messages and records within them
            in_sessions: SearchResult = await self.time_layers.contextual(self, query, caller, limit, options)
            return in_sessions
        tags = normalize_tags(options.pop("tags", ()) or ())
        trace = bool(options.pop("trace", False))
        strict = options.pop("strict_visibility", None)
        strict = self.strict_visibility if strict is None else bool(strict)
        mode = options.pop("mode", None)
        if mode not in (None, "lexical", "dense", "hybrid"):
            raise InvalidInputError("mode must be one of lexical, dense, hybrid")
        if mode in ("dense", "hybrid") and self.vectors is None:
            raise InvalidInputError(f"mode {mode} needs an embedder (PostgresBackend(url, embedder='local'))")
        if self.vectors is not None and mode != "lexical":
            async with self.pool.connection() as conn, conn.transaction():
                found: SearchResult = await self.vectors.search(
                    conn,
                    query,
                    mode or "hybrid",
                    sid=params["sid"],
                    uid=params["uid"],
                    limit=limit,
                    tags=tags,
                    trace=trace,
                    strict=strict,
                    **options,
                )
                return found
        async with self.pool.connection() as conn, conn.transaction():
            return await self.searcher.run(
                conn, query, sid=params["sid"], uid=params["uid"], limit=limit, tags=tags, trace=trace, strict=strict, **options
            )

    @reads_as_caller
    async def core_lines(self, caller: Caller, limit: int | None) -> builtins.list[str]:
        params = self._caller(caller)
        sql = (
            f"SELECT id, kind, summary, happened_at, valid_from, valid_to FROM {self.table} r WHERE {visibility(params)}"
            " AND r.superseded_by IS NULL ORDER BY r.updated DESC, r.id"
        )
        if limit is not None:
            params["limit"] = max(0, int(limit))
            sql += " LIMIT %(limit)s"
        async with self.pool.connection() as conn:
            cur = await conn.execute(sql, params)
            rows = await cur.fetchall()
        return [core_line(r["id"], r["kind"], r["summary"], iso(r["happened_at"]), iso(r["valid_from"]), iso(r["valid_to"])) for r in rows]

    async def user_md(self) -> str:
        async with self.pool.connection() as conn:
            cur = await conn.execute(f'SELECT content FROM "{self.schema}".user_md WHERE name = %s', ("USER.md",))
            row = await cur.fetchone()
        return "" if row is None else str(row["content"])

    # -- maintenance ------------------------------------------------------------------------------
    async def sweep(self) -> SweepReport:
        async with self.pool.connection() as conn:
            return await self.maintenance.sweep(conn)

    async def reindex(self) -> SyncReport:
        async with self.pool.connection() as conn:
            return await self.maintenance.reindex(conn)

    async def doctor(self) -> DoctorReport:
        async with self.pool.connection() as conn:
            return await self.maintenance.doctor(conn, self.pool.version)

    @property
    def embedder(self) -> Embedder | None:
        """The embedder of dense/hybrid search, if one is attached."""
        return None if self.vectors is None else self.vectors.embedder  # type: ignore[no-any-return]

    def use_embedder(self, embedder: Embedder | str | None) -> None:
        """Attach (or, with ``None``, detach) an embedder after construction: dense/hybrid search and :meth:`embed`."""
        self.vectors = _vectors(self.schema, embedder, self.searcher)

    async def embed(self, progress: Callable[[int, int], None] | None = None) -> BackfillReport:
        """Embed records without a current vector (vectors are derived: writes never wait for them)."""
        if self.vectors is None:
            raise InvalidInputError("this backend has no embedder (PostgresBackend(url, embedder='local'))")
        from agent_memory.embeddings import check_installed

        check_installed(self.vectors.embedder)  # a missing extra: MissingExtraError, before any work
        await self.vectors.drain()
        report: BackfillReport = await self.vectors.embed(self.pool, progress)
        return report

    async def recorded_embedder(self) -> RecordedEmbedder | None:
        """Which embedder made this schema's vectors (the ``embedders`` table), None without vectors."""
        from agent_memory.backends.postgres.vector_meta import recorded

        async with self.pool.connection() as conn:
            return await recorded(conn, self.schema)

    async def embedded(self, timeout: float | None = None) -> bool:
        """Wait for the background embedding that writes scheduled; False if ``timeout`` passed first."""
        if self.vectors is None:
            return True
        waiting = asyncio.ensure_future(self.vectors.drain())  # drain shields the embedding task itself
        done, _ = await asyncio.wait({waiting}, timeout=timeout)
        if not done:
            waiting.cancel()
            return False
        waiting.result()
        return True

    # -- links between records (agent_memory.backends.postgres.links) -------------------------------------
    @reads_as_caller
    async def links(self, record_id: str, caller: Caller) -> RecordLinks:
        """Outgoing links and backlinks of a record the caller may see, resolved among the records it may see."""
        from agent_memory.backends.postgres.links import links_for

        return await links_for(self, record_id, caller)

    def partition_lock(self, key: str) -> contextlib.AbstractAsyncContextManager[None]:
        """Hold the advisory lock of partition ``key`` in this schema across several calls (a capped write); see
        :mod:`agent_memory.backends.postgres.partition_lock`."""
        from agent_memory.backends.postgres.partition_lock import partition_lock

        return partition_lock(self, key)

    async def close(self) -> None:
        if self.vectors is not None:
            await self.vectors.stop()
        await self.pool.close()
        if self._time is not None:
            await asyncio.to_thread(self._time.close)


def _vectors(schema: str, embedder: Any, searcher: PgSearch) -> Any:
    """The backend's vectors (``agent_memory/backends/postgres/vectors.py``), or None without an embedder."""
    if embedder is None:  # no numpy import for a lexical-only backend (the cold CLI search)
        return None
    from agent_memory.embeddings import make_embedder

    made = make_embedder(embedder)
    if made is None:
        return None
    from agent_memory.backends.postgres.vectors import PgVectors

    return PgVectors(schema, made, searcher)
