"""Strict visibility ranking: BM25 computed from the caller's visible records only.

FTS5's ``bm25()`` takes its statistics (number of documents, documents per term, average
length) from the whole index, hidden partitions included. Scores and the order of hits
therefore shift when another user's record holds a query term, which lets a caller probe
another partition (e.g. guess a PIN by watching one of its own records drop in the ranking).
With ``strict_visibility`` the FTS index only *finds* the visible matches; every statistic
of the ranking comes from records the caller may see, so nothing hidden can move a score.
Cost: every visible match is scored in Python (O(visible matches) per query, not O(limit)).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from agent_memory.search.text import term_counts

K1 = 1.2
B = 0.75
FLOOR = 1e-9  # a match whose terms the scorer cannot see (porter vs light stemming) still ranks, last


def visible_bm25(
    conn: Any, match_sql: str, visible_count_sql: str, params: dict[str, Any], keys: Iterable[str], weights: Sequence[float], fetch: int
) -> list[dict[str, Any]]:
    """The ``fetch`` best visible matches, each a row dict with ``rank`` = minus its visible-only BM25."""
    rows = [dict(zip(r.keys(), r, strict=True)) for r in conn.execute(match_sql, params).fetchall()]
    if not rows:
        return []
    total = max(int(conn.execute(visible_count_sql, params).fetchone()[0]), len(rows))
    keys = sorted(set(keys))
    w_title, w_tags, w_body, w_context = (float(w) for w in (tuple(weights) + (1.0,) * 4)[:4])
    stats = []
    for row in rows:
        tf = dict.fromkeys(keys, 0.0)
        length = 0
        for text, weight in (
            (row["title"] or "", w_title),
            (row["ftags"] or "", w_tags),
            (row["body"] or "", w_body),
            (row["context"] or "", w_context),
        ):
            counts, n = term_counts(keys, text)
            length += n
            for key, c in counts.items():
                tf[key] += weight * c
        stats.append((tf, length))
    avgdl = max(1.0, sum(n for _, n in stats) / len(stats))
    df = {k: sum(1 for tf, _ in stats if tf[k] > 0) for k in keys}
    idf = {k: math.log(1.0 + (total - df[k] + 0.5) / (df[k] + 0.5)) for k in keys}
    scored = []
    for row, (tf, length) in zip(rows, stats, strict=True):
        norm = K1 * (1.0 - B + B * length / avgdl)
        score = sum(idf[k] * tf[k] * (K1 + 1.0) / (tf[k] + norm) for k in keys if tf[k] > 0)
        row["rank"] = -max(score, FLOOR)
        scored.append(row)
    scored.sort(key=lambda r: (r["rank"], r["id"]))  # ties broken by id, never by insertion order
    return scored[:fetch]
