"""LoCoMo through the sessions layer: every conversation session becomes a session log, summarised by our summariser.

Each sample gets one user (its ``sample_id``) and one session per LoCoMo session, messages dated at
the session's date (in order, a second apart), each message keeping its ``dia_id`` as ``turn_id`` so
a hit maps back to evidence exactly as a record does in the records layer. Summaries are made by the
offline extractive summariser (never the dataset's own summaries). Questions are then answered by
two-stage contextual search as the sample's user.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agent_memory.agents.models.offline_summarize import summarize_messages
from agent_memory.portable.transcripts import Session, parse_when
from agent_memory.sessions import SessionStore, contextual_search
from agent_memory.sessions.contextual import ContextualOptions

__all__ = ["import_sample", "session_rows"]


def import_sample(store: SessionStore, sessions: Sequence[Session], *, user_id: str) -> dict[str, int]:
    """Write each session's turns as messages and summarise it; returns ``{session_id: messages}`` (idempotent)."""
    out: dict[str, int] = {}
    for index, session in enumerate(sessions, 1):
        sid = f"{user_id}.{session.id or index}"
        when = parse_when(session.date) or dt.datetime(2000, 1, 1)
        start = when.replace(tzinfo=dt.UTC)
        messages = []
        for i, turn in enumerate(session.turns):
            text = turn.text or ""
            if turn.caption and turn.caption.strip():
                text = f"{text} [shared an image: {' '.join(turn.caption.split())}]".strip()
            if not text.strip():
                continue
            messages.append(
                {
                    "role": "user",
                    "speaker": turn.speaker,
                    "text": text,
                    "at": (start + dt.timedelta(seconds=i)).isoformat(),
                    "turn_id": None if turn.id is None else str(turn.id),
                }
            )
        try:
            existing = store.messages(sid, user_id=user_id)
        except Exception:
            existing = []
        if not existing:
            existing = store.append(sid, messages, user_id=user_id)
        summary = store.summary(sid, user_id=user_id)
        if summary is None or summary.messages != len(existing):
            text = summarize_messages(existing, session_id=sid)
            if text:
                store.write_summary(sid, text, user_id=user_id, messages=len(existing), source="offline")
        out[sid] = len(existing)
    return out


def session_rows(
    sample: Mapping[str, Any],
    sessions: Sequence[Session],
    where: Path,
    user_id: str,
    ks: Sequence[int],
    canonical: Callable[[Any], str | None],
    evidence_of: Callable[[Any], list[str]],
    recall: Callable[[Sequence[str], Sequence[str | None]], float],
    tick: Callable[[], None],
    options: ContextualOptions | None = None,
    embedder: Any = None,
    search: str = "lexical",
) -> list[tuple[str, dict[str, float]]]:
    """Import one sample into ``where`` and score its questions with contextual search (``search`` lexical,
    dense or hybrid; the last two with ``embedder``). A hit is one message, mapped to its one turn."""
    store = SessionStore(where, durable=False)
    import_sample(store, sessions, user_id=user_id)
    rows: list[tuple[str, dict[str, float]]] = []
    for q in sample.get("qa") or []:
        if not isinstance(q, dict):
            continue
        evidence = evidence_of(q.get("evidence"))
        hits = contextual_search(
            store,
            str(q.get("question") or ""),
            user_id=user_id,
            limit=ks[-1],
            options=options,
            embedder=embedder if search != "lexical" else None,
            search=search,  # type: ignore[arg-type]
        ).hits
        ranked = [canonical(h.metadata.get("turn_id")) for h in hits]
        rows.append((str(q.get("category", "?")), {f"recall@{k}": recall(evidence, ranked[:k]) for k in ks}))
        tick()
    return rows
