"""Schema and versioned migrations of the PostgreSQL backend.

Every table lives in one schema (one "root"). ``schema_version`` records each applied migration; migrations
run once, in order, under a transaction-scoped advisory lock, so many app servers may start at once.

Rows carry ``tenant`` (the owning user id of a user or session record, ``''`` for shared ones): every read of a caller touches at most
the tenants ``''`` and its own user, which is what lets the table be distributed by ``tenant`` (Citus) and
every unique key include it. ``part`` is the dedupe partition inside a tenant (scope, and session id).
"""

from __future__ import annotations

import re
from typing import Any

from agent_memory.backends.postgres.links import MIGRATION_VERSION as LINKS_VERSION
from agent_memory.backends.postgres.links import imported_migration
from agent_memory.backends.postgres.links import migration as links_migration
from agent_memory.backends.postgres.links import rebuild as rebuild_links
from agent_memory.backends.postgres.sketch import MIGRATION_VERSION as SKETCH_VERSION
from agent_memory.backends.postgres.sketch import backfill as backfill_sketches
from agent_memory.backends.postgres.sketch import migration as sketch_migration
from agent_memory.backends.postgres.vector_meta import migration as embedders_migration
from agent_memory.errors import InvalidInputError

SCHEMA_RE = re.compile(r"[a-z_][a-z0-9_]{0,62}")
TEXT_CONFIG = "english"
CAPTURE_SQL = "source IN ('turn_capture', 'compaction_capture')"  # the writer class of a keyed row


def check_schema(name: str) -> str:
    if not isinstance(name, str) or not SCHEMA_RE.fullmatch(name):
        raise InvalidInputError(f"schema must match {SCHEMA_RE.pattern}, not {name!r}")
    return name


def _tsv(cfg: str) -> str:
    return (
        f"setweight(to_tsvector('{cfg}'::regconfig, title), 'A')"
        f" || setweight(to_tsvector('{cfg}'::regconfig, tag_text), 'B')"
        f" || setweight(to_tsvector('{cfg}'::regconfig, content), 'C')"
        f" || setweight(to_tsvector('{cfg}'::regconfig, coalesce(metadata->>'context', '')), 'D')"
    )


def migrations(s: str, cfg: str = TEXT_CONFIG) -> list[tuple[int, str, list[str]]]:
    """``(version, description, statements)`` for schema ``s``; append new versions, never edit old ones (the one
    exception, migration 10, is emptied because 14 undoes it: :func:`vector_signatures`)."""
    return [
        (
            1,
            "records, archive, user_md",
            [
                f"""CREATE TABLE IF NOT EXISTS "{s}".records (
                tenant text NOT NULL,
                id text NOT NULL,
                part text NOT NULL,
                scope text NOT NULL CHECK (scope IN ('session', 'project', 'user', 'global')),
                session_id text,
                user_id text,
                kind text NOT NULL,
                title text NOT NULL,
                tags text[] NOT NULL DEFAULT '{{}}',
                tag_text text NOT NULL DEFAULT '',
                memory_key text,
                source text NOT NULL,
                created timestamptz NOT NULL,
                updated timestamptz NOT NULL,
                expires timestamptz,
                expires_text text,
                importance double precision,
                content_hash text NOT NULL,
                content text NOT NULL,
                summary text NOT NULL,
                metadata jsonb NOT NULL DEFAULT '{{}}',
                tsv tsvector GENERATED ALWAYS AS ({_tsv(cfg)}) STORED,
                PRIMARY KEY (tenant, id),
                CHECK (CASE WHEN scope IN ('project', 'global') THEN tenant = '' ELSE tenant = coalesce(user_id, '') END)
            )""",
                f'CREATE UNIQUE INDEX IF NOT EXISTS records_hash ON "{s}".records (tenant, part, content_hash) WHERE memory_key IS NULL',
                f'CREATE UNIQUE INDEX IF NOT EXISTS records_key ON "{s}".records (tenant, part, memory_key) WHERE memory_key IS NOT NULL',
                f'CREATE INDEX IF NOT EXISTS records_keyed_hash ON "{s}".records (tenant, part, content_hash) WHERE memory_key IS NOT NULL',
                f'CREATE INDEX IF NOT EXISTS records_tsv ON "{s}".records USING gin (tsv)',
                f'CREATE INDEX IF NOT EXISTS records_tags ON "{s}".records USING gin (tags)',
                f'CREATE INDEX IF NOT EXISTS records_updated ON "{s}".records (updated DESC)',
                f'CREATE INDEX IF NOT EXISTS records_expires ON "{s}".records (expires) WHERE expires IS NOT NULL',
                f"""CREATE TABLE IF NOT EXISTS "{s}".archive (
                tenant text NOT NULL,
                id text NOT NULL,
                reason text NOT NULL,
                archived timestamptz NOT NULL DEFAULT now(),
                record jsonb NOT NULL,
                PRIMARY KEY (tenant, id, archived)
            )""",
                f"""CREATE TABLE IF NOT EXISTS "{s}".user_md (
                name text PRIMARY KEY DEFAULT 'USER.md',
                content text NOT NULL,
                updated timestamptz NOT NULL DEFAULT now()
            )""",
            ],
        ),
        (
            2,
            "vectors beside rows (reserved: filled by the meaning issue)",
            [
                f"""CREATE TABLE IF NOT EXISTS "{s}".record_vectors (
                tenant text NOT NULL,
                id text NOT NULL,
                model text NOT NULL,
                dims integer NOT NULL,
                embedding real[] NOT NULL,
                content_hash text NOT NULL,
                PRIMARY KEY (tenant, id, model),
                FOREIGN KEY (tenant, id) REFERENCES "{s}".records (tenant, id) ON DELETE CASCADE
            )""",
            ],
        ),
        (
            3,
            "two clocks and supersession",
            [
                f'ALTER TABLE "{s}".records ADD COLUMN IF NOT EXISTS happened_at timestamptz,'
                " ADD COLUMN IF NOT EXISTS valid_from timestamptz, ADD COLUMN IF NOT EXISTS valid_to timestamptz,"
                " ADD COLUMN IF NOT EXISTS superseded_by text, ADD COLUMN IF NOT EXISTS supersedes text",
                # a superseded row keeps its key and content beside the current one: uniqueness is among current rows
                f'DROP INDEX IF EXISTS "{s}".records_hash',
                f'DROP INDEX IF EXISTS "{s}".records_key',
                f'CREATE UNIQUE INDEX IF NOT EXISTS records_hash_current ON "{s}".records (tenant, part, content_hash)'
                " WHERE memory_key IS NULL AND superseded_by IS NULL",
                f'CREATE UNIQUE INDEX IF NOT EXISTS records_key_current ON "{s}".records (tenant, part, memory_key)'
                " WHERE memory_key IS NOT NULL AND superseded_by IS NULL",
                f'CREATE INDEX IF NOT EXISTS records_supersedes ON "{s}".records (tenant, supersedes) WHERE supersedes IS NOT NULL',
            ],
        ),
        *time_layers(s, cfg),  # 5 (4 was reserved for vectors, which needed no migration)
        (
            6,
            "capture keeps its own keyed record beside a typed one; content lookups use an index at any size",
            [
                # one current keyed row per (tenant, partition, key) *and writer class*: capture and everyone else
                f'CREATE UNIQUE INDEX IF NOT EXISTS records_key_writer ON "{s}".records (tenant, part, memory_key,'
                f" ({CAPTURE_SQL})) WHERE memory_key IS NOT NULL AND superseded_by IS NULL",
                f'DROP INDEX IF EXISTS "{s}".records_key_current',
                # "which current row holds this content", keyed or not (the two partial indexes serve neither alone)
                f'CREATE INDEX IF NOT EXISTS records_hash_any ON "{s}".records (tenant, part, content_hash) WHERE superseded_by IS NULL',
                f'DROP INDEX IF EXISTS "{s}".records_keyed_hash',
            ],
        ),
        (
            7,
            "namespaces: a record's namespace ('' is the root) and the registry of shared namespaces",
            [
                f"ALTER TABLE \"{s}\".records ADD COLUMN IF NOT EXISTS namespace text NOT NULL DEFAULT ''",
                f"ALTER TABLE \"{s}\".events ADD COLUMN IF NOT EXISTS owner_namespace text NOT NULL DEFAULT ''",
                f"""CREATE TABLE IF NOT EXISTS "{s}".namespaces (
                name text PRIMARY KEY,
                shared boolean NOT NULL DEFAULT false,
                isolation text CHECK (isolation IN ('full', 'inherited', 'shared')),
                updated timestamptz NOT NULL DEFAULT now()
            )""",
            ],
        ),
        links_migration(s),  # 8: links between records (its rows are filled by migrate, below)
        (
            9,
            "namespaces of session logs and episodes ('' is the root): a session is one per (user, namespace, id)",
            [
                *(
                    f"ALTER TABLE \"{s}\".{t} ADD COLUMN IF NOT EXISTS namespace text NOT NULL DEFAULT ''"
                    for t in ("sessions", "session_messages", "session_summaries", "episodes")
                ),
                # in place and re-runnable: the keys of a session's rows gain the namespace
                *(
                    f'ALTER TABLE "{s}".{t} DROP CONSTRAINT IF EXISTS {t}_tenant_session_id_fkey,'
                    f" DROP CONSTRAINT IF EXISTS {t}_tenant_namespace_session_id_fkey"
                    for t in ("session_messages", "session_summaries")
                ),
                f'ALTER TABLE "{s}".sessions DROP CONSTRAINT IF EXISTS sessions_pkey, ADD PRIMARY KEY (tenant, namespace, session_id)',
                *(
                    f'ALTER TABLE "{s}".{t} DROP CONSTRAINT IF EXISTS {t}_pkey, ADD PRIMARY KEY (tenant, namespace, session_id, {n}),'
                    f' ADD FOREIGN KEY (tenant, namespace, session_id) REFERENCES "{s}".sessions (tenant, namespace, session_id)'
                    " ON DELETE CASCADE"
                    for t, n in (("session_messages", "n"), ("session_summaries", "version"))
                ),
            ],
        ),
        *vector_signatures(s),  # 10, emptied (its column is dropped by 14; 9 is the sessions/episodes namespaces')
        *sketch_migration(s),  # 11
        *embedders_migration(s),  # 12: the embedder recorded with the vectors
        imported_migration(s),  # 13: the ids records were imported under, indexed ([[id]] links)
        *drop_signatures(s),  # 14: migration 10's unread column goes
    ]


def time_layers(s: str, cfg: str) -> list[tuple[int, str, list[str]]]:
    """Migration 5: session logs, summaries, episodes and events, keyed by ``tenant`` (the owning user id, ``''`` for none)."""
    return [
        (
            5,
            "session logs, session summaries, episodes, events",
            [
                f"""CREATE TABLE IF NOT EXISTS "{s}".sessions (
                tenant text NOT NULL,
                session_id text NOT NULL,
                user_id text,
                created text NOT NULL,
                messages integer NOT NULL DEFAULT 0,
                PRIMARY KEY (tenant, session_id),
                CHECK (tenant = coalesce(user_id, ''))
            )""",
                f"""CREATE TABLE IF NOT EXISTS "{s}".session_messages (
                tenant text NOT NULL,
                session_id text NOT NULL,
                n integer NOT NULL,
                role text NOT NULL,
                text text NOT NULL,
                at text NOT NULL,
                speaker text,
                turn_id text,
                meta jsonb NOT NULL DEFAULT '{{}}',
                PRIMARY KEY (tenant, session_id, n),
                FOREIGN KEY (tenant, session_id) REFERENCES "{s}".sessions (tenant, session_id) ON DELETE CASCADE
            )""",
                f"""CREATE TABLE IF NOT EXISTS "{s}".session_summaries (
                tenant text NOT NULL,
                session_id text NOT NULL,
                version integer NOT NULL,
                text text NOT NULL,
                made_at text NOT NULL,
                messages integer NOT NULL,
                source text NOT NULL,
                fallback boolean NOT NULL DEFAULT false,
                PRIMARY KEY (tenant, session_id, version),
                FOREIGN KEY (tenant, session_id) REFERENCES "{s}".sessions (tenant, session_id) ON DELETE CASCADE
            )""",
                f"""CREATE TABLE IF NOT EXISTS "{s}".episodes (
                tenant text NOT NULL,
                id text NOT NULL,
                scope text NOT NULL,
                session_id text,
                user_id text,
                started text NOT NULL,
                status text NOT NULL,
                goal text NOT NULL,
                body text NOT NULL,
                data jsonb NOT NULL,
                tsv tsvector GENERATED ALWAYS AS (setweight(to_tsvector('{cfg}'::regconfig, goal), 'A')
                    || setweight(to_tsvector('{cfg}'::regconfig, body), 'B')) STORED,
                PRIMARY KEY (tenant, id),
                CHECK (CASE WHEN scope IN ('project', 'global') THEN tenant = '' ELSE tenant = coalesce(user_id, '') END)
            )""",
                f'CREATE INDEX IF NOT EXISTS episodes_started ON "{s}".episodes (tenant, started DESC)',
                f'CREATE INDEX IF NOT EXISTS episodes_tsv ON "{s}".episodes USING gin (tsv)',
                # the event log: what changed, which record, who; hashes only, never text (see agent_memory.backends.files.events)
                f"""CREATE TABLE IF NOT EXISTS "{s}".events (
                tenant text NOT NULL,
                seq bigserial,
                eid text NOT NULL,
                ts timestamptz NOT NULL DEFAULT clock_timestamp(),
                event text NOT NULL,
                id text NOT NULL,
                actor text,
                session_id text,
                user_id text,
                run_id text,
                tool_call_id text,
                before text,
                after text,
                scope text,
                owner_session text,
                owner_user text,
                detail jsonb NOT NULL DEFAULT '{{}}',
                PRIMARY KEY (tenant, seq)
            )""",
                f'CREATE INDEX IF NOT EXISTS events_id ON "{s}".events (tenant, id)',
            ],
        ),
    ]


def vector_signatures(s: str) -> list[tuple[int, str, list[str]]]:
    """Migration 10, emptied: it added ``record_vectors.sig``, a generated column of 384 sign bits computed by a SQL
    function. The sketches of migration 11 replaced it and nothing reads it, yet every vector write paid for it
    (inserting 20k vectors took 10.4 s instead of 2.0 s of server time) and adding it rewrote the table under an
    exclusive lock (13.7 s at 30k vectors, minutes at a million). A schema older than 10 skips it; one that has it
    loses it in migration 14 (:func:`drop_signatures`): both end the same."""
    return [(10, "sign-bit signatures of vectors for a server-side coarse filter", [])]


def drop_signatures(s: str) -> list[tuple[int, str, list[str]]]:
    """Migration 14: drop migration 10's unread ``sig`` column and its function (catalog changes only: no rewrite)."""
    return [
        (
            14,
            "drop the unread sign-bit signatures of vectors (every vector write computed them)",
            [
                f'ALTER TABLE "{s}".record_vectors DROP COLUMN IF EXISTS sig',
                f'DROP FUNCTION IF EXISTS "{s}".vector_signature(real[])',
            ],
        )
    ]


LATEST = max(v for v, _, _ in migrations("x"))


async def migrate(conn: Any, schema: str) -> int:
    """Apply pending migrations in one transaction; returns the resulting version."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"agent_memory:{schema}",))
        await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        await conn.execute(
            f'CREATE TABLE IF NOT EXISTS "{schema}".schema_version'
            " (version integer PRIMARY KEY, description text NOT NULL, applied timestamptz NOT NULL DEFAULT now())"
        )
        cur = await conn.execute(f'SELECT coalesce(max(version), 0) AS v FROM "{schema}".schema_version')
        current = int((await cur.fetchone())["v"])
        for version, description, statements in migrations(schema):
            if version <= current:
                continue
            for stmt in statements:
                await conn.execute(stmt)
            await conn.execute(f'INSERT INTO "{schema}".schema_version (version, description) VALUES (%s, %s)', (version, description))
            current = version
            if version == LINKS_VERSION:  # link rows of the records already there (Python parses them)
                await rebuild_links(conn, schema)
            if version == SKETCH_VERSION:  # sketches of the vectors already there (computed in Python)
                await backfill_sketches(conn, schema)
        return current


async def has_pgvector(conn: Any) -> bool:
    """True when the server offers the ``vector`` extension (installable with ``CREATE EXTENSION vector``)."""
    cur = await conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
    return await cur.fetchone() is not None


async def pgvector_version(conn: Any) -> str | None:
    """The version of the ``vector`` extension installed in this database, or None: dense search ranks with it
    (an HNSW index, :mod:`agent_memory.backends.postgres.vectors`) when it is there, and with the sketches when not.
    The library never installs it (that needs a privilege it should not hold): ``CREATE EXTENSION vector``."""
    cur = await conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    row = await cur.fetchone()
    return None if row is None else str(row["extversion"] if isinstance(row, dict) else row[0])
