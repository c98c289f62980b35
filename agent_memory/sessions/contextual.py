"""Two-stage contextual retrieval: find the caller's sessions by their summaries, then rank messages within them.

Stage 1 scores every visible session: BM25 of the query over the session summaries (the session's
own words condensed: speakers, topics, dated key sentences) blended with BM25 over the whole session's
text. Stage 2 scores messages (each with its neighbours as low-weight context, so a question and its
answer find each other) and lifts those of the best sessions (fully when stage 1 has a clear winner, less as
the best sessions draw level: then the answer is likely spread over them; not at all for a question asking for a
set of things, :mod:`._question`); a result is diversified across sessions
so a question whose answer is spread over several conversations gets each of them. Records from the
store can be merged in (``records``), interleaved by reciprocal rank.

With an ``embedder`` (``search="hybrid"``, the default then) both stages also use meaning: stage 1 blends in
the cosine of the query to each session's summary and best messages, stage 2 fuses each message's lexical
score with its cosine (message vectors from :mod:`._dense`) by the records layer's z-score fusion, whose
lexical weight follows the query's lexical strength (:mod:`agent_memory.search.fusion`). An embedder failure falls
back to the lexical ranking (said in the trace). Without an embedder the ranking is lexical, as it was.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from agent_memory.model.dates import date_words, resolve_relative_dates
from agent_memory.model.drafts import _parse_when
from agent_memory.search.text import STOP_WORDS, default_tokenizer, term_key
from agent_memory.search.types import SearchHit, SearchResult
from agent_memory.sessions._files import SessionDir, SessionMessage, SessionSummary
from agent_memory.sessions._messages import cite_id
from agent_memory.sessions._question import asks_for_set, ends_by_asking
from agent_memory.sessions._rank import Bm25, keys, query_keys, weighted
from agent_memory.sessions.store import SessionStore

if TYPE_CHECKING:  # pragma: no cover
    from agent_memory.embeddings import Embedder

__all__ = ["ContextualOptions", "contextual_search", "embedder_of", "rank_sessions", "message_hit", "search_sessions"]


@dataclass(frozen=True, slots=True)
class ContextualOptions:
    """Tuning of :func:`contextual_search` (defaults measured on LoCoMo's dev half, see docs/sessions.md)."""

    top_sessions: int = 8  # stage 1: sessions whose messages are lifted
    session_weight: float = 0.6  # how much a top session lifts its messages
    lift_margin: float = 0.4  # the lift is full when the best session leads the next by this share of its score
    summary_share: float = 0.5  # stage 1 blend: summary BM25 vs whole-session BM25
    context_weight: float = 0.4  # neighbour messages' words, relative to the message's own
    neighbours: int = 2  # neighbours on each side counted as context
    diversity: float = 1.0  # each further hit of the same session is scaled by this (1 = off)
    coordination: float = 1.0  # exponent of the share of query terms a message holds (0 = off)
    context_share: float = 0.5  # a query term found only in the neighbours counts this much for coordination
    speaker_boost: float = 0.5  # a message by a speaker the query names is lifted by this share
    question_weight: float = 0.8  # a message that ends by asking ("…?") is scaled by this (1 = off)
    set_session_weight: float | None = 0.0  # session_weight for a question asking for a set (None: no change)
    set_context_share: float = 0.8  # context_share for such a question
    set_question_weight: float = 1.0  # question_weight for such a question (what prompted an instance is often evidence)
    expansion: float = 0.0  # weight of topic words taken from the best sessions' summaries (0 = off)
    expansion_sessions: int = 3
    expansion_terms: int = 12
    dates: bool = True  # index each message's date in words ("Monday, 8 May 2023") and resolved relative dates
    snippet_chars: int = 320
    dense_sessions: float = 0.5  # stage 1 with an embedder: weight of the sessions' cosine (summary + best messages)
    dense_pool: int = 50  # stage 2: nearest messages entering the fusion (besides the lexical candidates)
    lexical_weight: float = 0.4  # stage 2 fusion: lexical weight when lexical search is strong (fusion.Fuse.weight)
    weak_lexical_weight: float = 0.0  # … and when it is weak (fusion.Fuse.weak_weight)


@dataclass
class _Indexed:
    key: tuple[Any, ...]
    session_doc: Counter[str]
    summary_doc: Counter[str]
    message_docs: list[Counter[str]]
    own: list[frozenset[str]]
    near: list[frozenset[str]]
    asks: list[bool]


_CACHE_ATTR = "_contextual_cache"


@runtime_checkable
class _WithEmbedder(Protocol):
    @property
    def embedder(self) -> Embedder | None: ...


def embedder_of(backend: Any) -> Embedder | None:
    """The embedder a backend's records were given (``MemoryStore(embedder=…)``), if any: contextual search
    and ``memory_search_sessions`` use meaning exactly when the records do. Through an extension wrapper, ask
    ``backends.base.capability(backend, VectorsBackend)`` instead (this layer cannot see backends)."""
    return backend.embedder if isinstance(backend, _WithEmbedder) else None


def _indexed(
    store: SessionStore, sdir: SessionDir, messages: Sequence[SessionMessage], summary: SessionSummary | None, opts: ContextualOptions
) -> _Indexed:
    cache: dict[Any, _Indexed] = store.__dict__.setdefault(_CACHE_ATTR, {})
    key = (
        len(messages),
        messages[-1].at if messages else None,
        summary.version if summary else 0,
        summary.text if summary else "",
        opts.neighbours,
        opts.context_weight,
    )
    hit = cache.get(sdir.path)
    if hit is not None and hit.key == key:
        return hit
    own = [keys(_message_text(m)) for m in messages]
    dated = [keys(_date_text(m)) if opts.dates else [] for m in messages]
    docs, near_sets = [], []
    for i, terms in enumerate(own):
        near = [t for j in range(max(0, i - opts.neighbours), min(len(own), i + opts.neighbours + 1)) if j != i for t in own[j]]
        docs.append(weighted((terms, 1.0), (dated[i], 1.0), (near, opts.context_weight)))
        near_sets.append(frozenset(near))
    whole: Counter[str] = Counter()
    for terms in own:
        whole.update(terms)
    built = _Indexed(
        key,
        whole,
        Counter(keys(summary.text)) if summary else Counter(),
        docs,
        [frozenset(a) | frozenset(b) for a, b in zip(own, dated, strict=True)],
        near_sets,
        [ends_by_asking(m.text) for m in messages],
    )
    if len(cache) > 4096:
        cache.clear()
    cache[sdir.path] = built
    return built


def _expansion(
    logs: Sequence[tuple[SessionDir, Sequence[SessionMessage], SessionSummary | None]],
    best: Sequence[tuple[int, float]],
    named: set[str],
    q: set[str],
    n: int,
) -> list[str]:
    """Topic words of the best sessions' summaries (those of a named speaker when the query names one)."""
    out: list[str] = []
    for li, _ in best:
        summary = logs[li][2]
        if summary is None:
            continue
        for line in summary.text.splitlines():
            head, _, topics = line.partition(" talked about: ")
            if not topics or (named and term_key(head.lower().split()[0] if head.split() else "") not in named):
                continue
            for k in keys(topics)[:n]:
                if k not in q and k not in out:
                    out.append(k)
    return out


def _named_speakers(query: str, logs: Sequence[tuple[SessionDir, Sequence[SessionMessage], SessionSummary | None]]) -> set[str]:
    """Keys of the speakers (first names) of the visible sessions that the query names."""
    wanted = set(query_keys(query))
    names = {term_key(m.speaker.lower().split()[0]) for _, msgs, _ in logs for m in msgs if m.speaker and m.speaker.split()}
    return names & wanted


def _date_text(m: SessionMessage) -> str:
    when = _parse_when(m.at)
    if when is None:
        return ""
    day = when.date()
    rel = resolve_relative_dates(m.text, day)
    return " ".join([date_words(day), *(v for _, v in rel)])


def _message_text(m: SessionMessage) -> str:
    return f"{m.speaker}: {m.text}" if m.speaker else m.text


def _normalised(scores: dict[int, float]) -> dict[int, float]:
    top = max(scores.values(), default=0.0)
    return {i: s / top for i, s in scores.items()} if top > 0 else {}


def rank_sessions(
    query: str,
    logs: Sequence[tuple[SessionDir, Sequence[SessionMessage], SessionSummary | None]],
    store: SessionStore,
    opts: ContextualOptions | None = None,
    dense: dict[int, float] | None = None,
) -> list[tuple[int, float]]:
    """Stage 1: ``(index into logs, score in (0, 1])`` for sessions matching ``query``, best first.

    ``dense``: each session's cosine to the query (:func:`_meaning`), blended in with ``opts.dense_sessions``."""
    opts = opts or ContextualOptions()
    q = query_keys(query)
    indexed = [_indexed(store, sdir, msgs, summ, opts) for sdir, msgs, summ in logs]
    by_summary = _normalised(Bm25([x.summary_doc for x in indexed]).scores(q))
    by_text = _normalised(Bm25([x.session_doc for x in indexed]).scores(q))
    share = opts.summary_share if by_summary else 0.0
    blended = {i: share * by_summary.get(i, 0.0) + (1 - share) * by_text.get(i, 0.0) for i in set(by_summary) | set(by_text)}
    if dense:
        lo, hi = min(dense.values()), max(dense.values())
        spread = (hi - lo) or 1.0
        lexical = _normalised(blended)
        w = opts.dense_sessions
        blended = {i: (1 - w) * lexical.get(i, 0.0) + w * (dense[i] - lo) / spread for i in set(lexical) | set(dense)}
    ranked = sorted(((i, s) for i, s in _normalised(blended).items() if s > 0), key=lambda x: -x[1])
    return ranked


def _lift_gate(ranked: Sequence[tuple[int, float]], margin: float) -> float:
    """How much of the session lift applies, in [0, 1]: full when the best session leads the next by ``margin``
    of its score (or stands alone), less as they draw level. Sessions that score alike are what a question whose
    answer is spread over several looks like; lifting them would crowd the result with the first one's messages."""
    if margin <= 0 or len(ranked) < 2:
        return 1.0
    best, second = ranked[0][1], ranked[1][1]
    return min(1.0, max(0.0, (best - second) / (best * margin))) if best > 0 else 0.0


def message_hit(
    sdir: SessionDir, m: SessionMessage, score: float, rel: str, snippet_chars: int = 320, *, user_id: str | None = None, **extra: Any
) -> SearchHit:
    """One message as a search hit; its id is the caller's citation id (:func:`cite_id`: ``user_id`` is the caller's),
    unique across the logs the caller sees, so two logs of one session id never share a hit."""
    text = " ".join(_message_text(m).split())
    snippet = text if len(text) <= snippet_chars else text[: snippet_chars - 1].rsplit(" ", 1)[0] + "…"
    meta = {"session_id": m.session_id, "n": m.n, "role": m.role, "speaker": m.speaker, "at": m.at, "turn_id": m.turn_id, **extra}
    return SearchHit(
        id=cite_id(m, sdir, user_id),
        path=rel,
        line_start=m.n,
        line_end=m.n,
        snippet=snippet,
        score=round(score, 6),
        title=f"{m.session_id} · {m.at[:10]}",
        kind="message",
        scope="session",
        updated=m.at,
        metadata=meta,
    )


Search = Literal["lexical", "dense", "hybrid"]


@dataclass
class _Meaning:
    """Cosines of the query to every visible message (per log) and to each session."""

    messages: list[Any]  # per log: a float vector, one cosine per message
    sessions: dict[int, float]


def _meaning(
    embedder: Embedder | None,
    search: Search | None,
    query: str,
    logs: Sequence[tuple[SessionDir, Sequence[SessionMessage], SessionSummary | None]],
    steps: list[dict[str, Any]],
    named: set[str] | frozenset[str] = frozenset(),
) -> _Meaning | None:
    """The dense side, or None (lexical search asked, no embedder, or the embedder failed: fail open).

    The speakers the query names (``named``) are left out of the text it embeds: every message of theirs
    carries their name, so it would pull towards all of them alike (:mod:`agent_memory.search.focus`)."""
    if embedder is None or search == "lexical" or not logs or not query.strip():
        if embedder is None and search in ("dense", "hybrid"):
            steps.append({"stage": "dense", "skipped": "no embedder configured"})
        return None
    import numpy as np

    from agent_memory.embeddings import EmbeddingError
    from agent_memory.search.focus import query_words, without_words
    from agent_memory.sessions._dense import SessionVectors

    words = query_words(query, lambda w: [term_key(t) for t in default_tokenizer(w) if t not in STOP_WORDS], ())
    text, left_out = without_words(query, words, {w for w, keys in words.items() if set(keys) <= named})
    try:
        vecs = SessionVectors(embedder).vectors(logs)
        q = embedder.embed([text])[0]
    except EmbeddingError as exc:
        steps.append({"stage": "dense", "error": str(exc), "fallback": "lexical"})
        return None
    pairs = [v.cosines(q) for v in vecs]
    cos = [best for _, best in pairs]
    sessions: dict[int, float] = {}  # stage 1 on the messages' own vectors: a sentence's peak lifts its message only
    for li, (v, (own, _)) in enumerate(zip(vecs, pairs, strict=True)):
        best = float(np.sort(own)[-3:].mean()) if own.shape[0] else 0.0
        sessions[li] = best if v.summary is None else 0.5 * best + 0.5 * float(v.summary @ q)
    steps.append(
        {
            "stage": "dense",
            "model": embedder.name,
            "messages": int(sum(c.shape[0] for c in cos)),
            "sentences": int(sum(v.sentences.shape[0] for v in vecs)),
            **({"focus": {"embedded": text, "left_out": left_out}} if left_out else {}),
        }
    )
    return _Meaning(cos, sessions)


def _fused(raw: dict[int, float], strength: float, cosines: Any, opts: ContextualOptions, search: Search | None) -> dict[int, float]:
    """Lexical scores and cosines fused as the records layer fuses them, mapped into (0, 1]."""
    import numpy as np

    from agent_memory.search.fusion import Fuse, QueryContext

    lex = [] if search == "dense" else sorted(((str(d), s) for d, s in raw.items()), key=lambda x: -x[1])[: opts.dense_pool]
    order = np.argsort(-cosines, kind="stable")[: opts.dense_pool]
    dense = [(str(int(d)), float(cosines[d])) for d in order]
    fuse = Fuse(
        weight=opts.lexical_weight, weak_weight=opts.weak_lexical_weight, dense_scores=lambda ids: {i: float(cosines[int(i)]) for i in ids}
    )
    ctx = QueryContext(confidence=strength if lex else None, dense_mean=float(cosines.mean()), dense_std=float(cosines.std()) or None)
    cands = fuse.fuse(lex, dense, ctx)
    if not cands:
        return {}
    lo, hi = min(c.score for c in cands), max(c.score for c in cands)
    spread = (hi - lo) or 1.0
    return {int(c.id): 0.1 + 0.9 * (c.score - lo) / spread for c in cands}


def contextual_search(
    sessions: SessionStore,
    query: str,
    *,
    session_id: str | None = None,
    user_id: str | None = None,
    limit: int = 10,
    records: Callable[[int], SearchResult] | None = None,
    options: ContextualOptions | None = None,
    trace: bool = False,
    embedder: Embedder | None = None,
    search: Search | None = None,
) -> SearchResult:
    """Messages (and, with ``records``, record hits) the caller may see, ranked by the two stages.

    ``records(n)`` returns the store's own top ``n`` hits for the query (same caller); they are
    interleaved with the messages by reciprocal rank. Scores are relative to the best hit, in (0, 1].
    ``embedder`` adds meaning (``search``: ``hybrid``, the default with an embedder, or ``dense``; ``lexical``
    ignores it)."""
    opts = options or ContextualOptions()
    if search is not None and search not in ("lexical", "dense", "hybrid"):
        from agent_memory.errors import InvalidInputError

        raise InvalidInputError(f"search must be lexical, dense or hybrid, not {search!r}")
    asks_set = opts.set_session_weight is not None and asks_for_set(query)
    if asks_set:  # its answers are spread over sessions: the best one's messages are not lifted above the rest
        opts = dataclasses.replace(
            opts,
            session_weight=opts.set_session_weight or 0.0,
            context_share=opts.set_context_share,
            question_weight=opts.set_question_weight,
        )
    logs = sessions.visible_logs(session_id=session_id, user_id=user_id)
    q = query_keys(query)
    steps: list[dict[str, Any]] = []
    named = _named_speakers(query, logs)
    meaning = _meaning(embedder, search, query, logs, steps, named)
    ranked_sessions = rank_sessions(query, logs, sessions, opts, meaning.sessions if meaning else None)
    gate = _lift_gate(ranked_sessions, opts.lift_margin)
    lift = {i: s * gate for i, s in ranked_sessions[: opts.top_sessions]}
    flat: list[tuple[int, int]] = []
    docs: list[Counter[str]] = []
    coord: list[float] = []
    wanted = frozenset(q)
    asking: list[bool] = []
    for li, (sdir, msgs, summ) in enumerate(logs):
        ix = _indexed(sessions, sdir, msgs, summ, opts)
        asking.extend(ix.asks)
        for mi in range(len(msgs)):
            flat.append((li, mi))
            docs.append(ix.message_docs[mi])
            own = ix.own[mi] & wanted
            matched = len(own) + opts.context_share * len((ix.near[mi] & wanted) - own)
            coord.append(((matched + 1.0) / (len(wanted) + 1.0)) ** opts.coordination if len(wanted) > 1 else 1.0)
    mq = [t for t in q if t not in named] or q  # the speaker decides; their name in every message of theirs does not
    weights: dict[str, float] = {}
    if opts.expansion and ranked_sessions:
        extra = _expansion(logs, ranked_sessions[: opts.expansion_sessions], named, set(q), opts.expansion_terms)
        weights = dict.fromkeys(extra, opts.expansion)
        mq = mq + [t for t in extra if t not in mq]
    bm25 = Bm25(docs)
    scores = {d: s * coord[d] for d, s in bm25.scores(mq, weights).items()} if q else {}
    if meaning is not None and flat:
        import numpy as np

        from agent_memory.search.fusion import lexical_strength

        strength = lexical_strength(max(scores.values(), default=0.0), [bm25.idf(t) for t in mq])
        raw = _fused(scores, strength, np.concatenate(meaning.messages), opts, search)
        steps.append({"stage": "fuse", "lexical": len(scores), "strength": round(strength, 4), "fused": len(raw)})
    else:
        raw = _normalised(scores)
    if named and opts.speaker_boost:
        for d in raw:
            li, mi = flat[d]
            speaker = logs[li][1][mi].speaker
            if speaker and term_key(speaker.lower().split()[0]) in named:
                raw[d] *= 1 + opts.speaker_boost
    if opts.question_weight != 1.0:
        for d in raw:
            if asking[d]:
                raw[d] *= opts.question_weight
    scored = sorted(((s * (1 + opts.session_weight * lift.get(flat[d][0], 0.0)), d) for d, s in raw.items()), key=lambda x: -x[0])
    picked: list[tuple[float, int]] = []
    seen: Counter[int] = Counter()
    pool = scored[: max(limit * 4, 50)]
    while pool and len(picked) < limit:  # greedy: each further hit of one session counts a little less
        best = max(range(len(pool)), key=lambda k: pool[k][0] * opts.diversity ** seen[flat[pool[k][1]][0]])
        score, d = pool.pop(best)
        picked.append((score * opts.diversity ** seen[flat[d][0]], d))
        seen[flat[d][0]] += 1
    top = max((s for s, _ in picked), default=0.0) or 1.0
    hits = []
    for score, d in picked:
        li, mi = flat[d]
        sdir, msgs, _ = logs[li]
        hits.append(
            message_hit(
                sdir,
                msgs[mi],
                max(score / top, 0.001),
                sessions.files._rel(sdir.path / "log.jsonl"),
                opts.snippet_chars,
                user_id=user_id,
                session_score=round(lift.get(li, 0.0), 4),
            )
        )
    if records is not None:
        hits = _interleave(hits, list(records(limit).hits), limit)
    out_steps: list[dict[str, Any]] | None = None
    if trace:
        out_steps = [
            {
                "stage": "sessions",
                "lift": round(gate * opts.session_weight, 4),
                "asks_for_set": asks_set,
                "ranked": [{"session_id": logs[i][0].session_id, "score": round(s, 4)} for i, s in ranked_sessions[: opts.top_sessions]],
            },
            *steps,
            {"stage": "messages", "candidates": len(raw), "returned": len(hits)},
        ]
    return SearchResult(hits=hits, trace=out_steps)


def _interleave(messages: list[SearchHit], records: list[SearchHit], limit: int, k: int = 60) -> list[SearchHit]:
    """Reciprocal-rank fusion of two ranked lists (ties: messages first)."""
    fused = [(1 / (k + r), 0, r, h) for r, h in enumerate(messages)] + [(1 / (k + r), 1, r, h) for r, h in enumerate(records)]
    fused.sort(key=lambda x: (-x[0], x[1], x[2]))
    best = fused[0][0] if fused else 1.0
    return [dataclasses.replace(h, score=round(score / best, 6)) for score, _, _, h in fused[:limit]]


def search_sessions(
    sessions: SessionStore,
    query: str,
    *,
    session_id: str | None = None,
    user_id: str | None = None,
    limit: int = 5,
    messages: int = 3,
    options: ContextualOptions | None = None,
    embedder: Embedder | None = None,
) -> list[dict[str, Any]]:
    """Stage 1 and a peek into stage 2: the caller's best sessions for ``query``, each with its summary and
    its ``messages`` best-matching messages (``[{session_id, score, first_at, last_at, summary, messages}]``).
    With an ``embedder`` sessions and messages are ranked by meaning too (as :func:`contextual_search`)."""
    opts = options or ContextualOptions()
    logs = sessions.visible_logs(session_id=session_id, user_id=user_id)
    meaning = _meaning(embedder, None, query, logs, [], _named_speakers(query, logs))
    ranked = rank_sessions(query, logs, sessions, opts, meaning.sessions if meaning else None)[: max(1, limit)]
    q = query_keys(query)
    out = []
    for li, score in ranked:
        sdir, msgs, summary = logs[li]
        ix = _indexed(sessions, sdir, msgs, summary, opts)
        lexical = _normalised(Bm25(ix.message_docs).scores(q))
        if meaning is not None and len(msgs):
            cos = meaning.messages[li]
            lo, spread = float(cos.min()), (float(cos.max() - cos.min()) or 1.0)
            mixed = {i: 0.5 * lexical.get(i, 0.0) + 0.5 * (float(cos[i]) - lo) / spread for i in range(len(msgs))}
        else:
            mixed = lexical
        mixed = {i: s * (opts.question_weight if ix.asks[i] else 1.0) for i, s in mixed.items()}
        best = sorted(mixed.items(), key=lambda x: -x[1])[: max(0, messages)]
        rel = sessions.files._rel(sdir.path / "log.jsonl")
        out.append(
            {
                "session_id": sdir.session_id,
                "score": round(score, 4),
                "first_at": msgs[0].at if msgs else None,
                "last_at": msgs[-1].at if msgs else None,
                "summary": summary.text if summary else None,
                "summary_version": summary.version if summary else None,
                "messages": [message_hit(sdir, msgs[i], s, rel, opts.snippet_chars, user_id=user_id).to_dict() for i, s in best],
            }
        )
    return out
