"""Vector sketches for PostgreSQL's server-side coarse filter (migration 11).

A sketch is ``BITS`` sign bits of random hyperplanes (SimHash): bit ``j`` of a vector ``v`` is ``v · R[:, j] > 0``,
with ``R`` a fixed ±1 matrix per dimension count. The Hamming distance of two sketches estimates the angle between
the vectors, and PostgreSQL computes it natively (``bit_count(sketch # query)``), so the server ranks a caller's
visible vectors and sends only a shortlist. With 2,048 bits a 2,000-row shortlist holds the exact top 10 at 100k
vectors (recall@10 ≥ .99 on ``benchmarks/bench_million.py``'s set; 384 sign bits of the raw vector, migration 10's
``sig``, held .88).

``R`` comes from SHAKE-256 of a fixed label, not from a seeded NumPy generator, so it is the same on every
machine and every NumPy version (a different ``R`` would silently break every stored sketch). numpy is imported
lazily: the schema module, which the one-shot CLI path imports, uses :func:`backfill` only while migrating.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["BITS", "MIGRATION_VERSION", "backfill", "hex_sketches", "migration", "projection", "write"]

BITS = 2048
MIGRATION_VERSION = 11
_LABEL = b"agent_memory vector sketch v1"


@lru_cache(maxsize=8)
def projection(dims: int) -> npt.NDArray[np.float32]:
    """The fixed ``(dims, BITS)`` ±1 hyperplanes of vectors of ``dims`` components."""
    import numpy as np

    raw = hashlib.shake_256(_LABEL + b" %d %d" % (dims, BITS)).digest(dims * BITS // 8)
    bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8)).reshape(dims, BITS)
    return (bits.astype(np.float32) * 2 - 1).astype(np.float32)


def hex_sketches(vectors: npt.NDArray[np.float32]) -> list[str]:
    """Each row's sketch as PostgreSQL ``bit varying`` input (``x`` + hex, ``BITS`` bits)."""
    import numpy as np

    m = np.asarray(vectors, dtype=np.float32)
    if m.ndim != 2 or not len(m):
        return []
    packed = np.packbits(m @ projection(int(m.shape[1])) > 0, axis=1)
    return ["x" + row.tobytes().hex() for row in packed]


def migration(s: str) -> list[tuple[int, str, list[str]]]:
    """Migration 11: ``record_sketches``, one narrow row per vector (its key, dims, content hash and sketch),
    filled by :func:`backfill` for the vectors already there, then by every write of a vector. A separate table,
    so the scan a dense search makes reads ~300 bytes a row instead of the 1.6 KB vector row; deleting the
    vector (or its record) deletes the sketch."""
    return [
        (
            MIGRATION_VERSION,
            f"{BITS}-bit random-hyperplane sketches of vectors for the server-side coarse filter",
            [
                f"""CREATE TABLE IF NOT EXISTS "{s}".record_sketches (
                tenant text NOT NULL,
                id text NOT NULL,
                model text NOT NULL,
                dims integer NOT NULL,
                content_hash text NOT NULL,
                sketch bit varying NOT NULL,
                PRIMARY KEY (tenant, id, model),
                FOREIGN KEY (tenant, id, model) REFERENCES "{s}".record_vectors (tenant, id, model) ON DELETE CASCADE
            )""",
            ],
        )
    ]


UPSERT = (
    'INSERT INTO "{s}".record_sketches (tenant, id, model, dims, content_hash, sketch)'
    " SELECT u.tenant, u.id, u.model, u.dims, u.content_hash, u.sketch::bit varying"
    " FROM unnest(%s::text[], %s::text[], %s::text[], %s::int[], %s::text[], %s::text[]) AS u(tenant, id, model, dims, content_hash, sketch)"
    ' WHERE EXISTS (SELECT 1 FROM "{s}".record_vectors v WHERE v.tenant = u.tenant AND v.id = u.id AND v.model = u.model)'
    " ON CONFLICT (tenant, id, model) DO UPDATE SET dims = excluded.dims, content_hash = excluded.content_hash, sketch = excluded.sketch"
)


async def write(conn: Any, schema: str, keys: list[tuple[str, str, str, str]], vectors: npt.NDArray[np.float32]) -> None:
    """Upsert the sketches of ``vectors`` under ``keys`` (``(tenant, id, model, content_hash)`` each)."""
    if not keys:
        return
    dims = int(vectors.shape[1])
    await conn.execute(
        UPSERT.format(s=schema),
        ([k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys], [dims] * len(keys), [k[3] for k in keys], hex_sketches(vectors)),
    )


async def backfill(conn: Any, schema: str, batch: int = 5_000) -> int:
    """Sketch every vector whose sketch is missing or of another content hash (in batches by key); returns how many."""
    import numpy as np

    done = 0
    after: tuple[str, str, str] = ("", "", "")
    while True:
        cur = await conn.execute(
            f'SELECT v.tenant, v.id, v.model, v.dims, v.content_hash, array_send(v.embedding) AS raw FROM "{schema}".record_vectors v'
            f' LEFT JOIN "{schema}".record_sketches k ON k.tenant = v.tenant AND k.id = v.id AND k.model = v.model'
            " WHERE (v.tenant, v.id, v.model) > (%s, %s, %s) AND (k.id IS NULL OR k.content_hash <> v.content_hash OR k.dims <> v.dims)"
            " ORDER BY v.tenant, v.id, v.model LIMIT %s",
            (*after, batch),
            binary=True,
        )
        rows = await cur.fetchall()
        if not rows:
            return done
        after = (rows[-1]["tenant"], rows[-1]["id"], rows[-1]["model"])
        by_dims: dict[int, list[Any]] = {}
        for r in rows:
            if int(r["dims"]) > 0 and len(bytes(r["raw"])) == 20 + 8 * int(r["dims"]):
                by_dims.setdefault(int(r["dims"]), []).append(r)
        for dims, group in by_dims.items():
            raw = np.frombuffer(b"".join(bytes(r["raw"]) for r in group), dtype=np.uint8).reshape(len(group), 20 + 8 * dims)
            vecs = raw[:, 20:].copy().view(">f4").reshape(len(group), -1, 2)[:, :, 1].astype(np.float32)
            await write(conn, schema, [(r["tenant"], r["id"], r["model"], r["content_hash"]) for r in group], vecs)
            done += len(group)
