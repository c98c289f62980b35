"""LoCoMo retrieval evaluation: evidence recall@k and budgeted recall coverage.

For each conversation of a LoCoMo-format file (a JSON list of samples, see the dataset's
``SCHEMA.md``): a fresh temporary memory root, one record per dialog turn written through
the bulk import path (:func:`agent_memory.portable.transcripts.transcript_drafts` →
``MemoryStore.remember_many``), then every question searched as it stands.

- ``recall@k``: the fraction of a question's evidence ``dia_id``s among the top k records,
  as in the LoCoMo paper (Maharana et al., ACL 2024, Table 3); a question without evidence
  counts 1. "overall" averages all questions, "by_category" averages within each category.
- ``coverage@<budget>`` (when ``budget`` is given): the recall worker answers each question
  with a summary of at most ``budget`` tokens; the score is the fraction of evidence turns
  whose content made it into the summary (the turn's record is cited in ``sources`` or its
  text appears in the summary).

Malformed evidence ids are normalised, never dropped with their question:
``"D8:6; D9:17"`` → ``D8:6``, ``D9:17``; ``"D:11:26"`` → ``D11:26``; ``"D30:05"`` → ``D30:5``;
a bare ``"D"`` is ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agent_memory.errors import InvalidInputError
from agent_memory.portable.transcripts import Session, Turn, transcript_drafts

__all__ = [
    "evaluate",
    "render_table",
    "normalize_evidence",
    "evidence_recall",
    "load_samples",
    "sample_sessions",
    "CATEGORY_NAMES",
]

CATEGORY_NAMES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "5": "adversarial"}
DEFAULT_KS = (5, 10, 25, 50)
_SESSION_KEY = re.compile(r"session_(\d+)$")
_EVIDENCE_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)", re.I)

Progress = Callable[[int], None]


# -- data -------------------------------------------------------------------------------------
def load_samples(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The list of samples of a LoCoMo-format JSON file (``-``: standard input; a single sample object is accepted too).

    Errors are :class:`~agent_memory.errors.InvalidInputError` naming the file and the line (or the sample)."""
    name = "<stdin>" if os.fspath(path) == "-" else os.fspath(path)
    try:
        if name == "<stdin>":
            data = json.load(sys.stdin)
        else:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{name}: line {exc.lineno} column {exc.colno}: not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise InvalidInputError(f"{name}: JSON nested too deeply") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise InvalidInputError(f"{name}: not a LoCoMo-format file (a list of samples with 'conversation' and 'qa')")
    for i, sample in enumerate(data):
        if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
            raise InvalidInputError(
                f"{name}: sample {i} ({_sample_name(sample, i)}): not a LoCoMo sample "
                "(an object with a 'conversation' object and a 'qa' list)"
            )
        if not isinstance(sample.get("qa", []), list):
            raise InvalidInputError(f"{name}: sample {i} ({_sample_name(sample, i)}): 'qa' must be a list")
    return data


def _sample_name(sample: Any, index: int) -> str:
    return str(sample.get("sample_id") or f"conversation-{index + 1}") if isinstance(sample, dict) else f"conversation-{index + 1}"


def sample_sessions(sample: Mapping[str, Any]) -> list[Session]:
    """The sessions of one sample, in order (``session_<N>`` keys; date keys without turns are ignored)."""
    conv = sample["conversation"]
    numbers = sorted(int(m.group(1)) for key in conv if (m := _SESSION_KEY.fullmatch(key)) and isinstance(conv[key], list))
    sessions = []
    for n in numbers:
        turns = [
            Turn(
                speaker=str(t.get("speaker") or "speaker"), text=str(t.get("text") or ""), id=t.get("dia_id"), caption=t.get("blip_caption")
            )
            for t in conv[f"session_{n}"]
            if isinstance(t, dict)
        ]
        sessions.append(Session(turns=turns, date=conv.get(f"session_{n}_date_time"), id=f"session_{n}"))
    return sessions


def normalize_evidence(evidence: Iterable[Any] | Any) -> list[str]:
    """Canonical ``D<session>:<turn>`` ids from a question's evidence list, in order, without duplicates."""
    if evidence is None:
        return []
    if isinstance(evidence, (str, bytes)):
        evidence = [evidence]
    out: list[str] = []
    for item in evidence:
        for m in _EVIDENCE_ID.finditer(str(item)):
            ev = f"D{int(m.group(1))}:{int(m.group(2))}"
            if ev not in out:
                out.append(ev)
    return out


def canonical_turn_id(dia_id: Any) -> str | None:
    ids = normalize_evidence([dia_id])
    return ids[0] if ids else None


def evidence_recall(evidence: Sequence[str], retrieved: Iterable[str | None]) -> float:
    """Fraction of ``evidence`` found in ``retrieved``; 1.0 when there is no evidence (as the paper)."""
    if not evidence:
        return 1.0
    got = {r for r in retrieved if r}
    return sum(1 for e in evidence if e in got) / len(evidence)


# -- evaluation -------------------------------------------------------------------------------
def evaluate(
    path: str | os.PathLike[str],
    *,
    ks: Sequence[int] = DEFAULT_KS,
    budget: int | None = None,
    profile: str = "offline",
    progress: Progress | None = None,
    limit_conversations: int | None = None,
    store_options: Mapping[str, Any] | None = None,
    transcript_options: Mapping[str, Any] | None = None,
    root: str | os.PathLike[str] | None = None,
    search: str = "lexical",
    embedder: Any = None,
    layer: str = "records",
    qa: Any = None,
    limit_questions: int | None = None,
) -> dict[str, Any]:
    """Evaluate retrieval on a LoCoMo-format file; returns the JSON document described in the module doc.

    ``qa`` (a :class:`~agent_memory.eval.locomo_qa.QAModels`): also answer each question from what recall returns
    (at ``budget`` tokens, default 400) and have the judge grade it (the ``qa`` metric, and ``models`` in the
    result); ``limit_questions`` stops after the first N questions of the run.

    ``progress(1)`` is called after every question (the convention of ``remember_many``); if
    ``progress`` has a ``total`` attribute that is None, it is set to the number of questions first.
    ``limit_conversations`` limits the run to the first N samples (quick checks). ``store_options``/``transcript_options`` reach
    :class:`~agent_memory.backends.files.store.MemoryStore` and :func:`~agent_memory.portable.transcripts.transcript_drafts`.
    ``root``: keep each conversation's memory root as ``root/<sample_id>/`` (reused when run again: the import
    is idempotent); without it every root is a temporary directory removed after its conversation.
    ``search``: ``lexical`` (default), ``dense`` or ``hybrid``; the last two embed every turn first with
    ``embedder`` (``"local"`` by default: MiniLM from the ``embeddings`` extra; or a litellm model id, or an object).
    ``layer``: ``records`` (one record per turn, the default) or ``sessions`` (each LoCoMo session a session log with
    our own summaries, questions answered by two-stage contextual search; see :mod:`.locomo_sessions`); there
    ``search`` picks the contextual ranking (lexical, or with the embedder's message vectors dense or hybrid).
    """
    if root is not None:
        keep_roots_in(root, "root")
    if layer not in ("records", "sessions"):
        raise ValueError(f"layer must be records or sessions, not {layer!r}")
    if layer == "sessions" and (budget is not None or qa is not None):
        raise ValueError("layer sessions scores contextual search only (no --budget, no --qa)")
    if search not in ("lexical", "dense", "hybrid"):
        raise ValueError(f"search must be lexical, dense or hybrid, not {search!r}")
    if search != "lexical":
        from agent_memory.embeddings import make_embedder

        embedder = make_embedder(embedder or "local")  # one model for every conversation
        store_options = {**dict(store_options or {}), "embedder": embedder}
    else:
        embedder = None
    ks = tuple(sorted({int(k) for k in ks}))
    if not ks or ks[0] < 1 or ks[-1] > 1000:
        raise ValueError("k values must be between 1 and 1000")
    if budget is not None and int(budget) < 1:
        raise ValueError("budget must be a positive number of tokens")
    started = time.perf_counter()
    samples = load_samples(path)
    if limit_conversations is not None:
        samples = samples[: max(0, int(limit_conversations))]
    if limit_questions is not None:
        samples = _first_questions(samples, int(limit_questions))
    if progress is not None and getattr(progress, "total", 0) is None:
        progress.total = sum(len(s.get("qa") or []) for s in samples)  # type: ignore[attr-defined]
    rows: list[tuple[str, dict[str, float]]] = []
    for index, sample in enumerate(samples):

        def tick() -> None:
            if progress is not None:
                progress(1)

        if layer == "sessions":
            rows.extend(_sessions_sample(sample, index, ks, tick, root, embedder, search))
            continue
        rows.extend(
            _evaluate_sample(sample, index, ks, budget, profile, tick, store_options or {}, transcript_options or {}, root, search, qa)
        )
    result = _aggregate(rows, ks, budget, time.perf_counter() - started, qa=qa is not None)
    if qa is not None:
        result["models"] = {"recall": _profile_label(profile), "answer": qa.answer_name, "judge": qa.judge_name}
        result["qa_unjudged"] = sum(int(scores.get("qa_unjudged", 0)) for _, scores in rows)
        result["qa_budget"] = budget or 400
    return result


def keep_roots_in(root: str | os.PathLike[str], label: str) -> Path:
    """``root`` if the per-conversation roots may be kept in it as ``root/<sample_id>/``: never a memory root nor a
    folder inside one (each would be a root inside a root, its records read as the outer root's); an
    ``InvalidInputError`` naming ``label`` otherwise, before anything is created."""
    from agent_memory.backends.files.layout import outside_roots

    return outside_roots(root, label, "eval keeps each conversation's memory root in it; pass a folder outside every memory root")


def _first_questions(samples: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The samples holding the first ``limit`` questions of the run (the last one cut to fit)."""
    out: list[dict[str, Any]] = []
    left = max(0, limit)
    for sample in samples:
        if left <= 0:
            break
        qa = [q for q in sample.get("qa") or [] if isinstance(q, dict)][:left]
        left -= len(qa)
        out.append({**sample, "qa": qa})
    return out


def _profile_label(profile: Any) -> str:
    from agent_memory.agents.profiles import load_profile

    try:
        return f"{profile if isinstance(profile, str) else 'custom'} ({load_profile(profile).recall.model_label})"
    except Exception:  # the label is informative only
        return str(profile)


def _root_for(stack: contextlib.ExitStack, root: str | os.PathLike[str] | None, thread: str, index: int) -> Path:
    if root is None:
        return Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="agent-memory-locomo-"))) / "memory"
    Path(root).mkdir(exist_ok=True)
    return Path(root) / (re.sub(r"[^A-Za-z0-9_.-]+", "-", thread).strip(".-") or f"conversation-{index + 1}")


def _sessions_sample(
    sample: Mapping[str, Any],
    index: int,
    ks: Sequence[int],
    tick: Callable[[], None],
    root: str | os.PathLike[str] | None,
    embedder: Any = None,
    search: str = "lexical",
) -> list[tuple[str, dict[str, float]]]:
    from agent_memory.eval.locomo_sessions import session_rows

    thread = _sample_name(sample, index)
    user = re.sub(r"[^A-Za-z0-9_.@-]+", "-", thread).strip(".-") or f"conversation-{index + 1}"
    with contextlib.ExitStack() as stack:
        where = _root_for(stack, root, thread, index)
        return session_rows(
            sample,
            sample_sessions(sample),
            where,
            user,
            ks,
            canonical_turn_id,
            normalize_evidence,
            evidence_recall,
            tick,
            embedder=embedder,
            search=search,
        )


def _evaluate_sample(
    sample: Mapping[str, Any],
    index: int,
    ks: Sequence[int],
    budget: int | None,
    profile: str,
    tick: Callable[[], None],
    store_options: Mapping[str, Any],
    transcript_options: Mapping[str, Any],
    root: str | os.PathLike[str] | None = None,
    search: str = "lexical",
    qa_models: Any = None,
) -> list[tuple[str, dict[str, float]]]:
    from agent_memory.provider import MemoryProvider

    thread = _sample_name(sample, index)
    drafts = transcript_drafts(sample_sessions(sample), thread=thread, **dict(transcript_options))
    options = {"durable": False, "rescan_interval": None, **dict(store_options)}
    with contextlib.ExitStack() as stack:
        if root is None:
            where = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="agent-memory-locomo-"))) / "memory"
        else:
            Path(root).mkdir(exist_ok=True)
            where = Path(root) / (re.sub(r"[^A-Za-z0-9_.-]+", "-", thread).strip(".-") or f"conversation-{index + 1}")
        provider = MemoryProvider(where, profile=profile, **options)
        store = provider.store
        try:
            results = store.remember_many(drafts, source="import")
            if search != "lexical":
                store.embed()  # vectors are derived: catch up once, before the questions
            turn_of: dict[str, str] = {}
            text_of: dict[str, str] = {}
            for draft, res in zip(drafts, results, strict=True):
                tid = canonical_turn_id((draft.metadata or {}).get("turn_id"))
                if tid is not None:
                    turn_of.setdefault(res.id, tid)
                    text_of.setdefault(tid, draft.content.split("\n", 1)[0].split(": ", 1)[-1])
            qa = [q for q in sample.get("qa") or [] if isinstance(q, dict)]
            rows: list[tuple[str, dict[str, float]]] = []
            for q in qa:
                evidence = normalize_evidence(q.get("evidence"))
                hits = store.search(str(q.get("question") or ""), limit=ks[-1], mode=search).hits
                ranked = [turn_of.get(h.id) for h in hits]
                scores = {f"recall@{k}": evidence_recall(evidence, ranked[:k]) for k in ks}
                rows.append((str(q.get("category", "?")), scores))
                if budget is None:
                    tick()
            if budget is not None:
                asyncio.run(_coverage(provider, qa, rows[-len(qa) :] if qa else [], int(budget), turn_of, text_of, tick))
            if qa_models is not None:
                asyncio.run(_answer_all(provider, qa, rows[-len(qa) :] if qa else [], int(budget or 400), qa_models))
            return rows
        finally:
            provider.close()


async def _coverage(
    provider: Any,
    qa: Sequence[Mapping[str, Any]],
    rows: Sequence[tuple[str, dict[str, float]]],
    budget: int,
    turn_of: Mapping[str, str],
    text_of: Mapping[str, str],
    tick: Callable[[], None],
) -> None:
    key = f"coverage@{budget}"
    for q, (_, scores) in zip(qa, rows, strict=True):
        evidence = normalize_evidence(q.get("evidence"))
        try:
            result = await provider.recall(str(q.get("question") or ""), summary_tokens=budget)
            summary = str(getattr(result, "summary", "") or "")
            sources = getattr(result, "sources", None) or []
        except Exception:  # a failed recall covers nothing; the evaluation goes on
            summary, sources = "", []
        cited = {turn_of.get(str(s.get("id") if isinstance(s, Mapping) else getattr(s, "id", s))) for s in sources}
        scores[key] = coverage_score(evidence, cited, summary, text_of)
        tick()


async def _answer_all(
    provider: Any, qa: Sequence[Mapping[str, Any]], rows: Sequence[tuple[str, dict[str, float]]], budget: int, models: Any
) -> None:
    from agent_memory.eval.locomo_qa import answer_and_grade

    for q, (_, scores) in zip(qa, rows, strict=True):
        question = str(q.get("question") or "")
        try:
            memory = str((await provider.recall(question, summary_tokens=budget)).summary or "")
        except Exception:  # recall never raises; if it did, the answer has no memory to go on
            memory = ""
        gold = q.get("answer", q.get("adversarial_answer", ""))
        graded = await answer_and_grade(models, question, gold, memory)
        scores["qa"] = graded["grade"]
        scores["qa_unjudged"] = 0.0 if graded["judged"] else 1.0


def _norm_text(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def coverage_score(evidence: Sequence[str], cited: Iterable[str | None], summary: str, text_of: Mapping[str, str]) -> float:
    """Fraction of evidence turns that made it into a recall summary: cited as a source, or quoted
    (the turn's text, or its first 12 words, appears in the summary). 1.0 without evidence."""
    if not evidence:
        return 1.0
    cited_set = {c for c in cited if c}
    flat = _norm_text(summary)
    covered = 0
    for ev in evidence:
        if ev in cited_set:
            covered += 1
            continue
        text = _norm_text(text_of.get(ev, ""))
        probe = " ".join(text.split()[:12])
        if probe and probe in flat:
            covered += 1
    return covered / len(evidence)


def _aggregate(
    rows: Sequence[tuple[str, dict[str, float]]], ks: Sequence[int], budget: int | None, elapsed: float, *, qa: bool = False
) -> dict[str, Any]:
    metrics = [f"recall@{k}" for k in ks] + ([f"coverage@{budget}"] if budget is not None else []) + (["qa"] if qa else [])

    def mean(values: Sequence[dict[str, float]]) -> dict[str, float]:
        return {m: round(sum(v.get(m, 0.0) for v in values) / len(values), 4) if values else 0.0 for m in metrics}

    by_cat: dict[str, list[dict[str, float]]] = {}
    for cat, scores in rows:
        by_cat.setdefault(cat, []).append(scores)
    order = sorted(by_cat, key=lambda c: (not c.isdigit(), int(c) if c.isdigit() else 0, c))
    return {
        "questions": len(rows),
        "overall": mean([s for _, s in rows]),
        "by_category": {c: {"questions": len(by_cat[c]), **mean(by_cat[c])} for c in order},
        "elapsed_s": round(elapsed, 2),
    }


# -- presentation -----------------------------------------------------------------------------
def render_table(result: Mapping[str, Any]) -> str:
    """A fixed-width table of a result from :func:`evaluate`: one row per category, then overall."""
    metrics = [m for m in result.get("overall", {})]
    header = ["category", "questions", *metrics]
    body: list[list[str]] = []
    for cat, scores in result.get("by_category", {}).items():
        name = f"{cat} {CATEGORY_NAMES.get(cat, '')}".strip()
        body.append([name, str(scores.get("questions", "")), *(f"{scores.get(m, 0.0):.3f}" for m in metrics)])
    body.append(["overall", str(result.get("questions", "")), *(f"{result['overall'].get(m, 0.0):.3f}" for m in metrics)])
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(cells)).rstrip()

    out = [line(header), line(["-" * w for w in widths]), *(line(r) for r in body[:-1]), line(["-" * w for w in widths]), line(body[-1])]
    if "models" in result:
        m = result["models"]
        out.append(
            f"qa: recall {m.get('recall')}, answer {m.get('answer')}, judge {m.get('judge')}; budget {result.get('qa_budget')} "
            f"tokens; {result.get('qa_unjudged', 0)} unjudged (graded 0). Not comparable with figures made with other models."
        )
    if "elapsed_s" in result:
        out.append(f"({result['elapsed_s']:.1f} s)")
    return "\n".join(out)
