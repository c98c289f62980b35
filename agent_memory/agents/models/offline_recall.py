"""The offline model's recall rules: search with a few query variants, fuse, read, pack cited lines.

``memory_search`` with the message and a few useful variants (names, numbers and quoted phrases;
the last sentence) → reciprocal-rank fusion of the hits → ``memory_get`` on the best few records by
line range → the lines sharing most (rarest) terms with the message packed into the token budget,
each run of lines cited as ``[record-id:L12-L14]``. A message about past runs ("what did we try last
time?") also asks ``memory_episodes``; each episode found becomes one line cited ``[episode-id]``.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponsePart, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart

from agent_memory.agents.tokens import count_tokens
from agent_memory.search.text import STOP_WORDS, default_tokenizer, light_stem

__all__ = ["RunState", "NO_RELEVANT_MEMORY", "DEFAULT_BUDGET", "about_past_runs", "parse_recall_prompt", "query_variants", "recall_step"]

NO_RELEVANT_MEMORY = "NO_RELEVANT_MEMORY"
DEFAULT_BUDGET = 400
_BUDGET_RE = re.compile(r"^Budget:\s*(\d+)\s*tokens", re.MULTILINE | re.IGNORECASE)
_MESSAGE_RE = re.compile(r"^Message:[ \t]*\n(.*)\Z", re.MULTILINE | re.DOTALL)
_QUESTION_WORDS = frozenset("what when where who whom whose which why how does did do is are was were can could".split())
_PAST_RUNS = re.compile(
    r"\b(?:last time|previous(?:ly)?|past (?:runs?|attempts?)|episodes?|attempts?|tried|"
    r"what (?:did|have) (?:we|you|i) (?:do|done|try|tried)|what happened|went wrong|how did (?:it|that) go)\b",
    re.IGNORECASE,
)
_RUN_WORDS = frozenset(
    "last time previous previously past run runs attempt attempts tried try episode episodes happened went wrong go done".split()
)


# -- reading the conversation so far ------------------------------------------------------
@dataclass
class RunState:
    """What the run has done so far: the worker prompt, the tool calls made and their results."""

    prompt: str = ""
    called: dict[str, list[ToolCallPart]] = field(default_factory=lambda: defaultdict(list))
    returns: dict[str, Any] = field(default_factory=dict)  # tool_call_id -> content

    @classmethod
    def read(cls, messages: Sequence[ModelMessage]) -> "RunState":
        state = cls()
        for msg in messages:
            for part in msg.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    state.prompt = part.content
                elif isinstance(part, ToolCallPart):
                    state.called[part.tool_name].append(part)
                elif isinstance(part, ToolReturnPart) and isinstance(part.content, dict):
                    state.returns[part.tool_call_id] = part.content
        return state

    def results(self, tool: str) -> list[tuple[ToolCallPart, dict[str, Any]]]:
        return [(c, self.returns[c.tool_call_id]) for c in self.called.get(tool, []) if c.tool_call_id in self.returns]


def _terms(text: str) -> list[str]:
    words = [w for w in default_tokenizer(text) if w not in STOP_WORDS and w not in _QUESTION_WORDS]
    return list(dict.fromkeys(words))


# -- recall ---------------------------------------------------------------------------------
def parse_recall_prompt(prompt: str) -> tuple[str, int]:
    """``(message, budget)`` from a worker prompt (``Budget: N tokens`` / ``Message:``), else the whole prompt."""
    budget = _BUDGET_RE.search(prompt)
    message = _MESSAGE_RE.search(prompt)
    return (message.group(1).strip() if message else prompt.strip(), int(budget.group(1)) if budget else DEFAULT_BUDGET)


def query_variants(message: str, limit: int = 3) -> list[str]:
    """The message, then names/quoted phrases/numbers, then the last sentence: each only if it adds a new term set."""
    variants = [message]
    quoted = re.findall(r"[\"“]([^\"”]{2,80})[\"”]", message)
    names = [
        w
        for sentence in re.split(r"(?<=[.!?])\s+", message)
        for w in re.findall(r"\w[\w'-]*", sentence)[1:]
        if w[0].isupper() and w.lower() not in STOP_WORDS
    ]
    numbers = re.findall(r"\b\d[\d:/.-]*\b", message)
    focus = " ".join(dict.fromkeys(quoted + names + numbers))
    if quoted or len(_terms(focus)) >= 2:  # one bare name alone tends to match half the corpus
        variants.append(focus)
    sentences = [s for s in re.split(r"(?<=[.!?])\s+|\n+", message.strip()) if s.strip()]
    if len(sentences) > 1:
        variants.append(sentences[-1])
    out: list[str] = []
    seen: list[frozenset[str]] = []
    for v in variants:
        key = frozenset(_terms(v))
        if key and key not in seen:
            seen.append(key)
            out.append(v)
    return out[:limit]


def about_past_runs(message: str) -> bool:
    """Whether ``message`` asks about earlier agent runs (what was tried, what happened, what failed)."""
    return _PAST_RUNS.search(message) is not None


def recall_step(state: RunState, tools: set[str], max_records: int) -> list[ModelResponsePart]:
    message, budget = parse_recall_prompt(state.prompt)
    if "memory_search" not in tools or not message.strip():
        return [TextPart(NO_RELEVANT_MEMORY)]
    episodes = "memory_episodes" in tools and about_past_runs(message)
    if not state.called.get("memory_search"):
        calls: list[ModelResponsePart] = [
            ToolCallPart("memory_search", {"query": q, "limit": 8}, tool_call_id=f"search-{i}")
            for i, q in enumerate(query_variants(message))
        ]
        if "memory_search_sessions" in tools:  # earlier conversations: their best messages join the fusion
            calls.append(ToolCallPart("memory_search_sessions", {"query": message, "limit": 3}, tool_call_id="sessions-0"))
        if episodes:
            topic = " ".join(t for t in _terms(message) if t not in _RUN_WORDS)
            calls.append(
                ToolCallPart("memory_episodes", {"query": topic, "limit": 3} if topic else {"limit": 3}, tool_call_id="episodes-0")
            )
        return calls
    lines = _episode_lines(state, budget // 2) if episodes else []
    hits = _fuse(state.results("memory_search") + _session_hits(state))
    if not hits:
        return [TextPart("\n".join(lines) or NO_RELEVANT_MEMORY)]
    best = hits[: max(1, min(max_records, budget // 80))]  # about one record per 80 tokens of budget
    records = [h for h in best if not h.get("message")]  # a session message is read from its snippet
    if "memory_get" in tools and not state.called.get("memory_get") and records:
        return [
            ToolCallPart(
                "memory_get",
                {"id": h["id"], "line_start": max(1, h["line_start"] - 2), "line_end": h["line_end"] + 2},
                tool_call_id=f"get-{i}",
            )
            for i, h in enumerate(records)
        ]
    used = count_tokens("\n".join(lines)) + 1 if lines else 0
    packed = _pack(message, best, state, budget - used) if budget - used > 0 else ""
    return [TextPart("\n".join(lines + ([packed] if packed else [])) or NO_RELEVANT_MEMORY)]


def _episode_lines(state: RunState, budget: int) -> list[str]:
    """One cited line per episode ``memory_episodes`` returned, newest or best first, within ``budget`` tokens."""
    out: list[str] = []
    used = 0
    for _, content in state.results("memory_episodes"):
        for ep in content.get("episodes") or []:
            if not isinstance(ep, dict) or "id" not in ep:
                continue
            goal = " ".join(str(ep.get("goal", "")).split())[:160]
            text = f"- Past run {str(ep.get('started', ''))[:10]}: {goal}; approach: {ep.get('approach', '')}"
            if ep.get("failed"):
                text += f"; failed: {'; '.join(str(f) for f in ep['failed'][:2])}"
            text += f"; ended: {ep.get('exit', '')} ({ep.get('status', '')})"
            if ep.get("exit_detail"):
                text += f": {' '.join(str(ep['exit_detail']).split())[:160]}"
            line = f"{text} [{ep['id']}]"
            cost = count_tokens(line) + 1
            if used + cost > budget:
                continue
            used += cost
            out.append(line)
    return out


def _session_hits(state: RunState) -> list[tuple[ToolCallPart, dict[str, Any]]]:
    """memory_search_sessions results as one ranked hit list (best session's messages first), marked as messages."""
    out = []
    for call, content in state.results("memory_search_sessions"):
        asked = _stems(str(call.args_as_dict().get("query", "")))
        hits = [
            dict(m, message=True)
            for s in content.get("sessions") or []
            if isinstance(s, dict)
            for m in s.get("messages") or []
            if isinstance(m, dict) and "id" in m and _stems(str(m.get("snippet", ""))) & asked
        ]  # a message found only by its neighbours ("Noted.") says nothing
        out.append((call, {"hits": hits}))
    return out


def _stems(text: str) -> set[str]:
    return {light_stem(w) for w in default_tokenizer(text) if w not in STOP_WORDS and w not in _QUESTION_WORDS}


def _fuse(results: list[tuple[ToolCallPart, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Reciprocal-rank fusion of several searches; the first (the message itself) weighs most.

    A hit is known by what it is and its id: a record's id, or a session message's citation id (unique across the
    logs the caller sees: ``sessions._messages.cite_id``), so a message never merges with another log's message or
    with a record that happens to share its id."""
    score: dict[tuple[bool, str], float] = defaultdict(float)
    first: dict[tuple[bool, str], dict[str, Any]] = {}
    for n, (_, content) in enumerate(results):
        weight = 1.0 if n == 0 else 0.8
        for rank, hit in enumerate(content.get("hits") or []):
            if not isinstance(hit, dict) or "id" not in hit:
                continue
            key = (bool(hit.get("message")), str(hit["id"]))
            score[key] += weight / (rank + 4)
            first.setdefault(key, hit)
    order = sorted(score, key=lambda i: str(first[i].get("updated", "")), reverse=True)  # newer first on ties
    order.sort(key=lambda i: -score[i])
    return [dict(first[i], fused=score[i]) for i in order]


def _line_items(best: list[dict[str, Any]], state: RunState) -> list[tuple[int, str, int, str]]:
    """``(record rank, id, line number, text)`` for every line read with memory_get, else the snippet lines."""
    got = {c.args_as_dict().get("id"): (c.args_as_dict(), r) for c, r in state.results("memory_get")}
    items: list[tuple[int, str, int, str]] = []
    for rank, hit in enumerate(best):
        rid = hit["id"]
        if rid in got and not hit.get("message"):  # a message is read from its snippet, never a record's text
            args, rec = got[rid]
            start = max(int(args.get("line_start") or 1), int(rec.get("body_line") or 1))
            lines = str(rec.get("content", "")).split("\n")
        else:
            start, lines = int(hit.get("line_start", 1)), str(hit.get("snippet", "")).split("\n")
        items.extend((rank, rid, start + k, line) for k, line in enumerate(lines) if line.strip())
    return items


def _pack(message: str, best: list[dict[str, Any]], state: RunState, budget: int) -> str:
    """Greedily choose the best-scoring lines, then print them per record, merged into cited runs."""
    stems = {light_stem(t) for t in _terms(message)}
    items = _line_items(best, state)
    line_stems = [{light_stem(w) for w in default_tokenizer(text)} for _, _, _, text in items]
    df = {s: sum(1 for ls in line_stems if s in ls) for s in stems}
    n = max(1, len(items))
    scored = []
    for idx, (rank, _rid, line_no, _text) in enumerate(items):
        overlap = sum(math.log(1 + n / df[s]) for s in stems & line_stems[idx] if df.get(s))
        hit = best[rank]
        in_snippet = hit["line_start"] <= line_no <= hit["line_end"]
        scored.append((overlap + (0.5 if in_snippet else 0.0) + 1.0 / (rank + 2), idx))
    scored.sort(key=lambda x: (-x[0], x[1]))
    texts = {idx: _clean(item[3]) for idx, item in enumerate(items)}
    cite_cost = {rid: count_tokens(f"- [{rid}:L{line}-L{line}]") for _, rid, line, _ in items}
    max_line = max(24, budget // 3)
    chosen: set[int] = set()
    used = 0
    for score, idx in scored:
        if score <= 1.0 / (items[idx][0] + 2) and chosen:
            break  # no query term on this line or any later one
        cost = count_tokens(texts[idx])
        if cost > max_line:  # one long line: keep the window around the query terms
            texts[idx] = _clip(texts[idx], stems, max_line)
            cost = count_tokens(texts[idx])
        cost += cite_cost[items[idx][1]] + 1
        if used + cost > budget:
            continue
        chosen.add(idx)
        used += cost
    out: list[str] = []
    run: list[int] = []
    for idx in sorted(chosen, key=lambda i: (items[i][0], items[i][2])):
        if run and (items[idx][1] != items[run[-1]][1] or items[idx][2] != items[run[-1]][2] + 1):
            out.append(_cite(items, texts, run))
            run = []
        run.append(idx)
    if run:
        out.append(_cite(items, texts, run))
    while out and count_tokens("\n".join(out)) > budget:
        out.pop()
    return "\n".join(out)


def _clip(text: str, stems: set[str], max_tokens: int) -> str:
    """The words around the densest cluster of query terms, grown outwards to ~``max_tokens``, marked ``…``."""
    words = text.split()
    hits = [i for i, w in enumerate(words) if {light_stem(t) for t in default_tokenizer(w)} & stems]
    center = max(hits, key=lambda i: sum(1 for j in hits if abs(i - j) <= 8)) if hits else 0
    lo = hi = center
    grew = True
    while grew:
        grew = False
        for step_lo, step_hi in ((0, 1), (-1, 0)):  # one word to the right, then one to the left
            new_lo, new_hi = lo + step_lo, hi + step_hi
            if 0 <= new_lo and new_hi < len(words) and count_tokens(" ".join(words[new_lo : new_hi + 1])) <= max_tokens - 2:
                lo, hi, grew = new_lo, new_hi, True
    return ("… " if lo else "") + " ".join(words[lo : hi + 1]) + (" …" if hi < len(words) - 1 else "")


def _clean(line: str) -> str:
    return re.sub(r"^\s*(?:[-*+]\s+|#+\s+)", "", line).strip()


def _cite(items: list[tuple[int, str, int, str]], texts: dict[int, str], run: list[int]) -> str:
    text = " ".join(texts[i] for i in run)
    rid, lo, hi = items[run[0]][1], items[run[0]][2], items[run[-1]][2]
    return f"- {text} [{rid}:L{lo}-L{hi}]"
