"""The offline worker model: deterministic rules, **no LLM**, no network, no API key.

:class:`OfflineModel` is a pydantic-ai ``Model`` that plays the recall or the capture worker by
fixed rules. It answers through tool calls exactly as a real model would, so the worker's
``Agent``, toolset permissions and usage limits are all exercised for real:

* **recall**: ``memory_search`` with the message and a few useful variants (names, numbers and
  quoted phrases; the last sentence) → reciprocal-rank fusion of the hits → ``memory_get`` on the
  best few records by line range → the lines sharing most (rarest) terms with the message packed
  into the token budget, each run of lines cited as ``[record-id:L12-L14]``.
* **capture**: explicit memory statements are extracted from the user's lines of the transcript
  (see :func:`extract_statements`) → ``memory_search`` for each → ``memory_remember`` for those
  memory does not hold yet (keyed ``"my X is Y"`` facts replace their old value) → ``NO_REPLY``.

It is a baseline: it understands only explicit statements and lexical overlap.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    ModelResponsePart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from ..redact import contains_secret
from ..search import STOP_WORDS, default_tokenizer, light_stem
from ..tokens import count_tokens

__all__ = ["OfflineModel", "Statement", "extract_statements", "parse_recall_prompt", "query_variants", "NO_REPLY",
           "NO_RELEVANT_MEMORY"]

NO_REPLY = "NO_REPLY"
NO_RELEVANT_MEMORY = "NO_RELEVANT_MEMORY"
DEFAULT_BUDGET = 400
_BUDGET_RE = re.compile(r"^Budget:\s*(\d+)\s*tokens", re.MULTILINE | re.IGNORECASE)
_MESSAGE_RE = re.compile(r"^Message:[ \t]*\n(.*)\Z", re.MULTILINE | re.DOTALL)
_TRANSCRIPT_RE = re.compile(r"<transcript>\n?(.*)</transcript>", re.DOTALL)
_QUESTION_WORDS = frozenset("what when where who whom whose which why how does did do is are was were can could".split())


class OfflineModel(Model):
    """Deterministic stand-in for a worker LLM (no LLM; rules only). ``role`` is ``recall`` or ``capture``."""

    def __init__(self, role: Literal["recall", "capture"] = "recall", *, max_records: int = 6,
                 max_statements: int = 12, settings: ModelSettings | None = None) -> None:
        if role not in ("recall", "capture"):
            raise ValueError(f"role must be 'recall' or 'capture', not {role!r}")
        self.role = role
        self.max_records = max_records
        self.max_statements = max_statements
        super().__init__(settings=settings)

    @property
    def model_name(self) -> str:
        return f"offline-{self.role}"

    @property
    def system(self) -> str:
        return "agent_memory"

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        _, params = self.prepare_request(model_settings, model_request_parameters)
        tools = {t.name for t in params.function_tools}
        state = _State.read(messages)
        parts = _recall_step(state, tools, self.max_records) if self.role == "recall" else \
            _capture_step(state, tools, self.max_statements)
        # No model runs, so no tokens are spent: usage counts the request only.
        return ModelResponse(parts=parts, usage=RequestUsage(), model_name=self.model_name, provider_name="agent_memory")


# -- reading the conversation so far ------------------------------------------------------
@dataclass
class _State:
    """What the run has done so far: the worker prompt, the tool calls made and their results."""

    prompt: str = ""
    called: dict[str, list[ToolCallPart]] = field(default_factory=lambda: defaultdict(list))
    returns: dict[str, Any] = field(default_factory=dict)  # tool_call_id -> content

    @classmethod
    def read(cls, messages: Sequence[ModelMessage]) -> "_State":
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
    return (message.group(1).strip() if message else prompt.strip(),
            int(budget.group(1)) if budget else DEFAULT_BUDGET)


def query_variants(message: str, limit: int = 3) -> list[str]:
    """The message, then names/quoted phrases/numbers, then the last sentence: each only if it adds a new term set."""
    variants = [message]
    quoted = re.findall(r"[\"“]([^\"”]{2,80})[\"”]", message)
    names = [w for sentence in re.split(r"(?<=[.!?])\s+", message) for w in re.findall(r"\w[\w'-]*", sentence)[1:]
             if w[0].isupper() and w.lower() not in STOP_WORDS]
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


def _recall_step(state: _State, tools: set[str], max_records: int) -> list[ModelResponsePart]:
    message, budget = parse_recall_prompt(state.prompt)
    if "memory_search" not in tools or not message.strip():
        return [TextPart(NO_RELEVANT_MEMORY)]
    if not state.called.get("memory_search"):
        return [ToolCallPart("memory_search", {"query": q, "limit": 8}, tool_call_id=f"search-{i}")
                for i, q in enumerate(query_variants(message))]
    hits = _fuse(state.results("memory_search"))
    if not hits:
        return [TextPart(NO_RELEVANT_MEMORY)]
    best = hits[:max(1, min(max_records, budget // 80))]  # about one record per 80 tokens of budget
    if "memory_get" in tools and not state.called.get("memory_get"):
        return [ToolCallPart("memory_get", {"id": h["id"], "line_start": max(1, h["line_start"] - 2),
                                            "line_end": h["line_end"] + 2}, tool_call_id=f"get-{i}")
                for i, h in enumerate(best)]
    return [TextPart(_pack(message, best, state, budget) or NO_RELEVANT_MEMORY)]


def _fuse(results: list[tuple[ToolCallPart, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Reciprocal-rank fusion of several searches; the first (the message itself) weighs most."""
    score: dict[str, float] = defaultdict(float)
    first: dict[str, dict[str, Any]] = {}
    for n, (_, content) in enumerate(results):
        weight = 1.0 if n == 0 else 0.8
        for rank, hit in enumerate(content.get("hits") or []):
            if not isinstance(hit, dict) or "id" not in hit:
                continue
            score[hit["id"]] += weight / (rank + 4)
            first.setdefault(hit["id"], hit)
    order = sorted(score, key=lambda i: str(first[i].get("updated", "")), reverse=True)  # newer first on ties
    order.sort(key=lambda i: -score[i])
    return [dict(first[i], fused=score[i]) for i in order]


def _line_items(best: list[dict[str, Any]], state: _State) -> list[tuple[int, str, int, str]]:
    """``(record rank, id, line number, text)`` for every line read with memory_get, else the snippet lines."""
    got = {c.args_as_dict().get("id"): (c.args_as_dict(), r) for c, r in state.results("memory_get")}
    items: list[tuple[int, str, int, str]] = []
    for rank, hit in enumerate(best):
        rid = hit["id"]
        if rid in got:
            args, rec = got[rid]
            start = max(int(args.get("line_start") or 1), int(rec.get("body_line") or 1))
            lines = str(rec.get("content", "")).split("\n")
        else:
            start, lines = int(hit.get("line_start", 1)), str(hit.get("snippet", "")).split("\n")
        items.extend((rank, rid, start + k, line) for k, line in enumerate(lines) if line.strip())
    return items


def _pack(message: str, best: list[dict[str, Any]], state: _State, budget: int) -> str:
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
            if 0 <= new_lo and new_hi < len(words) and count_tokens(" ".join(words[new_lo:new_hi + 1])) <= max_tokens - 2:
                lo, hi, grew = new_lo, new_hi, True
    return ("… " if lo else "") + " ".join(words[lo:hi + 1]) + (" …" if hi < len(words) - 1 else "")


def _clean(line: str) -> str:
    return re.sub(r"^\s*(?:[-*+]\s+|#+\s+)", "", line).strip()


def _cite(items: list[tuple[int, str, int, str]], texts: dict[int, str], run: list[int]) -> str:
    text = " ".join(texts[i] for i in run)
    rid, lo, hi = items[run[0]][1], items[run[0]][2], items[run[-1]][2]
    return f"- {text} [{rid}:L{lo}-L{hi}]"


# -- capture --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Statement:
    """One explicit memory statement found in a transcript."""

    content: str
    kind: str = "fact"
    memory_key: str | None = None
    tags: tuple[str, ...] = ()

    @property
    def on_existing(self) -> str:
        return "replace" if self.memory_key else "append"


_FILLER = re.compile(r"^(?:(?:ok(?:ay)?|oh|so|and|also|btw|by the way|hey|hi|well|great|thanks|thank you|please)\b[,!.]?\s+)+", re.I)
_CORRECTION = re.compile(r"^(?:actually|correction|sorry|wait|oops|update)\b[,:!]?\s+(?:no[,!.]?\s+)?(.+)$", re.I)
_NO = re.compile(r"^no[,!.]?\s+(.+)$", re.I)
_PRONOUN = re.compile(r"^(?:it'?s|it is|that'?s|that is|it was|its)\s+(.+)$", re.I)
_REMEMBER = re.compile(
    r"^(?:please\s+)?(?:remember|note|keep in mind|don'?t forget|do not forget|make a note)"
    r"(?:\s+(?:that|this))?\s*[:,]?\s+(.+)$", re.I)
_REMEMBER_TAIL = re.compile(r"^(.+?)[,;]?\s+(?:please\s+)?(?:remember|note) (?:that|this)[.!]?$", re.I)
_MY_FACT = re.compile(r"^my\s+([\w' -]{1,60}?)\s+(is|are|was|were)\s+(.+)$", re.I)
_THE_FACT = re.compile(r"^(?:the|our)\s+([\w' -]{1,60}?)\s+(is|are|will be)\s+(.+)$", re.I)
_CALL_ME = re.compile(r"^(?:call me|my name'?s)\s+(.+)$", re.I)
_LIVE = re.compile(r"^i\s+(?:live|am living|'m living)\s+in\s+(.+)$", re.I)
_WORK = re.compile(r"^i\s+(?:work|am working|'m working)\s+(at|for|as)\s+(.+)$", re.I)
_PREFER = re.compile(
    r"^i\s+(?:really\s+|strongly\s+|much\s+|definitely\s+|usually\s+|generally\s+|always\s+|also\s+)?"
    r"(prefer|like|love|enjoy|hate|dislike|can'?t stand|cannot stand|don'?t like|do not like|would rather|'d rather)\s+(.+)$",
    re.I)
_PREFER_VERB = {"prefer": "prefers", "like": "likes", "love": "loves", "enjoy": "enjoys", "hate": "hates",
                "dislike": "dislikes", "can't stand": "can't stand", "cant stand": "can't stand",
                "cannot stand": "can't stand", "don't like": "dislikes", "dont like": "dislikes",
                "do not like": "dislikes", "would rather": "would rather", "'d rather": "would rather"}
_ALWAYS = re.compile(r"^(?:please\s+)?(always|never)\s+(.+)$", re.I)
_DECIDED = re.compile(r"^(?:we|i|the team)\s+(?:have\s+|'ve\s+)?(?:decided|agreed|chose|settled)\s*(?:to|that|on)?\s+(.+)$", re.I)
_LETS = re.compile(r"^(?:let'?s|let us|we(?:'ll| will| are going to|'re going to))\s+"
                   r"(use|go with|stick with|switch to|adopt|keep|pick|choose|move to|standardi[sz]e on)\s+(.+)$", re.I)
_DECISION_IS = re.compile(r"^the decision is\s+(?:to\s+|that\s+)?(.+)$", re.I)
_YOUR_FACT = re.compile(r"\byour\s+([\w' -]{1,60}?)\s+(?:is|are|was)\s+", re.I)
_ROLE_LINE = re.compile(r"^(user|assistant|system|tool|summary|message)\s*:\s?(.*)$|^([A-Z][\w.-]{0,30}):\s(.*)$", re.I)
_TRANSIENT_SUBJECTS = frozenset("question problem issue point guess answer bad fault pleasure turn understanding".split())
_PERSON = [
    (r"\bI am\b|\bI'm\b", "the user is"), (r"\bI've\b|\bI have\b", "the user has"), (r"\bI'd\b", "the user would"),
    (r"\bI'll\b", "the user will"), (r"\bI was\b", "the user was"), (r"\bI\b", "the user"),
    (r"\bmyself\b", "the user"), (r"\bmine\b", "the user's"), (r"\bmy\b", "the user's"), (r"\bme\b", "the user"),
]


def _sentence(text: str) -> str:
    text = " ".join(text.split()).strip(" ,;:")
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def _third_person(text: str) -> str:
    for pattern, repl in _PERSON:
        text = re.sub(pattern, repl, text, flags=re.I)
    return text


def _key(subject: str, prefix: str = "") -> str | None:
    slug = re.sub(r"[^a-z0-9]+", "-", subject.lower()).strip("-")[:60].strip("-")
    return f"{prefix}{slug}" if slug else None


def _value(text: str) -> str:
    return text.strip().rstrip(".!").strip()


def _fact(subject: str, verb: str, value: str, *, mine: bool) -> Statement | None:
    subject, value = " ".join(subject.split()), _value(value)
    if not value or value.endswith("?") or subject.lower().split()[-1] in _TRANSIENT_SUBJECTS:
        return None
    if mine:
        return Statement(_sentence(f"User's {subject} {verb.lower()} {_third_person(value)}"), "fact", _key(subject, "user."))
    return Statement(_sentence(f"The {subject} {verb.lower()} {_third_person(value)}"), "fact", _key(subject))


def _split_transcript(text: str) -> list[tuple[str, str]]:
    """``(role, text)`` messages from ``role: text`` lines (another ``Name:`` is a speaker ``other``).

    Text before any label counts as the user's; ``message:`` (author unknown) counts as the user's too.
    """
    match = _TRANSCRIPT_RE.search(text)
    body = match.group(1) if match else text
    messages: list[tuple[str, str]] = []
    for line in body.split("\n"):
        role_line = _ROLE_LINE.match(line)
        if role_line and role_line.group(1):
            role = role_line.group(1).lower()
            messages.append(("user" if role == "message" else role, role_line.group(2)))
        elif role_line and role_line.group(3)[0].isupper():
            messages.append(("other", role_line.group(4)))
        elif messages:
            messages[-1] = (messages[-1][0], messages[-1][1] + "\n" + line)
        elif line.strip():
            messages.append(("user", line))
    return messages


def _statement(sentence: str, last_subject: str | None) -> tuple[Statement | None, str | None]:
    """One sentence → a statement (or None) and the subject it makes current."""
    s = _FILLER.sub("", sentence.strip()).strip()
    correction = _CORRECTION.match(s) or _NO.match(s)
    if correction:
        s = correction.group(1).strip()
        pronoun = _PRONOUN.match(s)
        if pronoun and last_subject:
            return _fact(last_subject, "is", pronoun.group(1), mine=True), last_subject
    if s.endswith("?"):
        return None, last_subject
    remember = _REMEMBER.match(s) or _REMEMBER_TAIL.match(s)
    if remember:
        inner = remember.group(1).strip()
        for pattern, mine in ((_MY_FACT, True), (_THE_FACT, False)):
            m = pattern.match(inner)
            if m:
                return _fact(m.group(1), m.group(2), m.group(3), mine=mine), m.group(1) if mine else last_subject
        specific, subject = _statement(inner, last_subject)  # "remember that I prefer tabs" is a preference
        if specific is not None:
            return specific, subject
        return Statement(_sentence(_third_person(inner)), "fact", None), last_subject
    if m := _MY_FACT.match(s):
        return _fact(m.group(1), m.group(2), m.group(3), mine=True), m.group(1)
    if correction and (m := _THE_FACT.match(s)):
        return _fact(m.group(1), m.group(2), m.group(3), mine=False), last_subject
    if m := _CALL_ME.match(s):
        return _fact("name", "is", m.group(1), mine=True), "name"
    if m := _LIVE.match(s):
        return Statement(_sentence(f"User lives in {_value(m.group(1))}"), "fact", "user.home"), last_subject
    if m := _WORK.match(s):
        return Statement(_sentence(f"User works {m.group(1).lower()} {_value(m.group(2))}"), "fact", "user.work"), last_subject
    if m := _PREFER.match(s):
        verb = _PREFER_VERB.get(m.group(1).lower().replace("’", "'"), m.group(1).lower())
        return Statement(_sentence(f"User {verb} {_third_person(_value(m.group(2)))}"), "preference", None, ("preference",)), last_subject
    if m := _ALWAYS.match(s):
        return Statement(_sentence(f"User asks to {m.group(1).lower()} {_third_person(_value(m.group(2)))}"), "preference",
                         None, ("preference",)), last_subject
    if m := _DECIDED.match(s) or _DECISION_IS.match(s):
        return Statement(_sentence(f"Decision: {_value(m.group(m.lastindex or 1))}"), "decision", None, ("decision",)), last_subject
    if m := _LETS.match(s):
        return Statement(_sentence(f"Decision: {m.group(1).lower()} {_value(m.group(2))}"), "decision", None, ("decision",)), last_subject
    return None, last_subject


def extract_statements(transcript: str, *, limit: int | None = None) -> list[Statement]:
    """Explicit memory statements in the user's lines of ``transcript`` (rules, no LLM).

    Recognised: "remember that …", "note that …"; "I prefer/like/love/hate/dislike …",
    "always/never …"; "we decided …", "let's use/go with …"; "my X is Y", "call me …",
    "I live in …", "I work at …" (keyed ``user.<x>``, so a later value replaces the old one);
    corrections "actually, X is Y" and "no, it's Y" (about the last subject mentioned).
    Later statements win: one statement per memory key, the most recent ``limit`` kept.
    Statements holding a secret (API key, password, …) are dropped.
    """
    found: list[Statement] = []
    last_subject: str | None = None
    for role, text in _split_transcript(transcript):
        if role == "assistant":
            for m in _YOUR_FACT.finditer(text):
                last_subject = m.group(1)
            continue
        if role != "user":
            continue
        for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
            if contains_secret(sentence):  # checked on the raw words, before any rewording
                continue
            st, last_subject = _statement(sentence, last_subject)
            if st is not None and len(st.content) > 8 and not contains_secret(st.content):
                found.append(st)  # a secret is never worth remembering (the store would redact it anyway)
    latest: dict[str, Statement] = {}
    for st in found:
        ident = st.memory_key or st.content.lower()
        latest.pop(ident, None)
        latest[ident] = st
    out = list(latest.values())
    return out[-limit:] if limit else out


def _norm(text: str) -> str:
    return " ".join(default_tokenizer(text))


def _capture_step(state: _State, tools: set[str], max_statements: int) -> list[ModelResponsePart]:
    statements = extract_statements(state.prompt, limit=max_statements)
    if not statements or "memory_remember" not in tools:
        return [TextPart(NO_REPLY)]
    if "memory_search" in tools and not state.called.get("memory_search"):
        return [ToolCallPart("memory_search", {"query": st.content, "limit": 3}, tool_call_id=f"search-{i}")
                for i, st in enumerate(statements)]
    if state.called.get("memory_remember"):
        return [TextPart(NO_REPLY)]
    held = {c.tool_call_id: [_norm(str(h.get("snippet", ""))) for h in (r.get("hits") or []) if isinstance(h, dict)]
            for c, r in state.results("memory_search")}
    calls: list[ModelResponsePart] = []
    for i, st in enumerate(statements):
        if any(_norm(st.content) in snippet for snippet in held.get(f"search-{i}", [])):
            continue  # memory already says exactly this
        args: dict[str, Any] = {"content": st.content, "kind": st.kind}
        if st.tags:
            args["tags"] = list(st.tags)
        if st.memory_key:
            args.update(memory_key=st.memory_key, on_existing=st.on_existing)
        calls.append(ToolCallPart("memory_remember", args, tool_call_id=f"remember-{i}"))
    return calls or [TextPart(NO_REPLY)]
