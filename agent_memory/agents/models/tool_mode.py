"""A model wrapper that makes a worker's tool calls hold up with small models (a profile's ``tool_mode``).

- ``native``: the model as it is (no wrapper).
- ``auto``: tools are offered natively; a reply with no ``tool_calls`` whose *text* is a tool call
  (``{"name": "memory_search", "arguments": {…}}``, fenced, tagged, near-miss name, wrong argument type) is turned
  into the call it means.
- ``prompted``: no native tools are sent; the request lists the tools in its text, earlier calls and results are
  replayed as text, and the reply's text is parsed the same way (for servers whose tool calling does not work).

With ``search_first`` (recall and reflect), a final answer given before any tool call is sent back once with a
request to search first (small models answer "nothing found" without looking). With ``max_steps`` (the worker's
request limit), the request that is the last one allowed ends with ``last_step`` instead of ``next_step`` (answer
now), and a tool call in it is sent back once with that text (counted ``calls_at_step_limit``): a call there could not
be followed by an answer, so the step limit would end the run. With ``empty_text`` (recall's ``NO_RELEVANT_MEMORY``),
that reply after the tools returned records is sent back once asking to answer from them if any is about the
message (counted ``empty_answers_rechecked``; a second one stands): small models took the exit over relevant hits. Both text modes repair a reply that tries to call a tool but cannot be parsed (up to ``max_repairs`` extra requests
telling the model what was wrong) and guard against loops: a call repeating an earlier one (same tool, same
arguments) is dropped, the model is asked once to do something else, and a second repeat ends the run — with
``stop_text`` when the worker has a neutral final answer (capture's ``NO_REPLY``), else with
:class:`~pydantic_ai.exceptions.UnexpectedModelBehavior`, which the worker turns into its flagged fallback.

What happened is counted (:data:`TOOL_STATS`, merged into the run's usage ``details`` by the runner): ``text_tool_calls``,
``tool_call_fixes``, ``tool_call_repairs``, ``invalid_tool_calls``, ``repeated_tool_calls``, ``tool_retries`` (a
call the tools refused and sent back to the model), ``guard_stops``, ``answers_without_search``.
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from agent_memory.agents.models.select import (
    SELECTING,
    Choice,
    SelectState,
    choices_in,
    numbered_line,
    numbered_list,
    parse_selection,
    select_repair,
    select_step,
)
from agent_memory.agents.models.tool_text import parse_tool_calls, tools_prompt

__all__ = ["TOOL_MODES", "TOOL_STATS", "ToolMode", "ToolModeModel", "STAT_KEYS"]

ToolMode = Literal["native", "prompted", "auto"]
TOOL_MODES: tuple[str, ...] = ("native", "prompted", "auto")
STAT_KEYS: tuple[str, ...] = (
    "text_tool_calls",
    "tool_call_fixes",
    "tool_call_repairs",
    "invalid_tool_calls",
    "repeated_tool_calls",
    "tool_retries",
    "guard_stops",
    "answers_without_search",
    "calls_at_step_limit",
    "empty_answers_rechecked",
    "question_turns_skipped",
    "selection_repairs",
    "selections_ignored",
    "selection_fixes",
)
#: Counters of the running worker (set by the runner; the run's task shares the dict).
TOOL_STATS: contextvars.ContextVar[dict[str, int] | None] = contextvars.ContextVar("agent_memory_tool_stats", default=None)
_TEXT_ID = "text-call-"  # the id of a call parsed from text (auto mode replays it as text)
_RESULT_CHARS = 1500  # a tool result replayed as text in prompted mode is cut to this many characters


def _count(key: str, n: int = 1) -> None:
    stats = TOOL_STATS.get()
    if stats is not None and n:
        stats[key] = stats.get(key, 0) + n


def _call_key(name: str, args: Any) -> str:
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            pass
    return f"{name}:{json.dumps(args, sort_keys=True, default=str)}"


def _earlier_calls(messages: list[ModelMessage]) -> set[str]:
    return {
        _call_key(p.tool_name, p.args) for m in messages if isinstance(m, ModelResponse) for p in m.parts if isinstance(p, ToolCallPart)
    }


def _text(response: ModelResponse) -> str:
    return "".join(p.content for p in response.parts if isinstance(p, TextPart))


def _add_usage(total: RequestUsage, more: RequestUsage) -> RequestUsage:
    out = dataclasses.replace(total)
    out.input_tokens += more.input_tokens
    out.output_tokens += more.output_tokens
    return out


class ToolModeModel(WrapperModel):
    """``wrapped`` with text tool calls parsed (``auto``) or prompted (``prompted``), repairs and loop guards."""

    def __init__(
        self,
        wrapped: Model,
        mode: ToolMode = "auto",
        *,
        max_repairs: int = 1,
        stop_text: str | None = None,
        search_first: bool = False,
        first_step: str | None = None,
        next_step: str | None = None,
        last_step: str | None = None,
        max_steps: int | None = None,
        empty_text: str | None = None,
    ) -> None:
        super().__init__(wrapped)
        self.empty_text = empty_text
        self.search_first = search_first
        self.first_step = first_step
        self.next_step = next_step
        self.last_step = last_step
        self.max_steps = max_steps
        if mode not in TOOL_MODES:
            raise ValueError(f"tool_mode must be one of {', '.join(TOOL_MODES)}, not {mode!r}")
        self.mode = mode
        self.max_repairs = max(0, max_repairs)
        self.stop_text = stop_text

    @property
    def model_name(self) -> str:
        return self.wrapped.model_name

    @property
    def system(self) -> str:
        return self.wrapped.system

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        params = model_request_parameters
        tools = {t.name: t for t in params.function_tools}
        if self.mode == "native" or not tools:
            return await self.wrapped.request(messages, model_settings, params)
        last = messages[-1] if messages else None
        if isinstance(last, ModelRequest):
            _count("tool_retries", sum(isinstance(p, RetryPromptPart) and p.tool_name is not None for p in last.parts))
        schemas = {name: t.parameters_json_schema for name, t in tools.items()}
        earlier = _earlier_calls(messages)
        history = list(messages)
        usage = RequestUsage()
        repairs = nudged = 0
        nudged_search = nudged_last = nudged_empty = nudged_select = False
        final = self._is_last_step(messages)
        selecting = SELECTING.get()  # recall in select mode: the list the model picks from is what the tools returned
        if selecting is not None:
            selecting.shown = choices_in(_tool_results(messages))
        while True:
            response = await self._ask(history, model_settings, params, tools, final=final, selecting=selecting)
            usage = _add_usage(usage, response.usage)
            native = [p for p in response.parts if isinstance(p, ToolCallPart)]
            if native:
                calls: list[tuple[str, Any]] = [(p.tool_name, p.args) for p in native]
                problem: str | None = None
            else:
                parsed = parse_tool_calls(_text(response), schemas)
                calls = list(parsed.calls)
                problem = parsed.error
                _count("tool_call_fixes", len(parsed.fixes))
                if not calls and not problem:  # a final answer
                    if self.search_first and not earlier and not nudged_search and "memory_search" in tools:
                        nudged_search = True  # small models answer "nothing found" without looking: ask once to look
                        _count("answers_without_search")
                        history += [response, ModelRequest(parts=[UserPromptPart(_SEARCH_FIRST)])]
                        continue
                    found = _records_read(messages)
                    if selecting is not None and selecting.shown and earlier:
                        picked = parse_selection(_text(response), selecting.shown)
                        if not picked.numbers and not picked.none and not nudged_select:
                            nudged_select = True  # neither numbers nor NONE: ask once more (the worker gives up after)
                            _count("selection_repairs")
                            history += [response, ModelRequest(parts=[UserPromptPart(select_repair(len(selecting.shown)))])]
                            continue
                        return dataclasses.replace(response, usage=usage)  # NONE is a judgement here: no recheck
                    if self.empty_text and not nudged_empty and found and _is_exit(_text(response), self.empty_text):
                        nudged_empty = True  # small models take the "nothing relevant" exit over relevant results: check once
                        _count("empty_answers_rechecked")
                        history += [response, ModelRequest(parts=[UserPromptPart(_recheck_prompt(found, self.empty_text))])]
                        continue
                    return dataclasses.replace(response, usage=usage)
            if problem is not None:
                if repairs >= self.max_repairs:
                    _count("invalid_tool_calls")
                    raise UnexpectedModelBehavior(f"invalid tool call after {repairs} repair(s): {problem}")
                repairs += 1
                _count("tool_call_repairs")
                history += [response, ModelRequest(parts=[UserPromptPart(_repair_prompt(problem))])]
                continue
            fresh: list[tuple[str, Any]] = []
            for name, args in calls:
                key = _call_key(name, args)
                if key in earlier:
                    _count("repeated_tool_calls")
                    continue
                earlier.add(key)
                fresh.append((name, args))
            if not fresh:
                repeated = ", ".join(sorted({n for n, _ in calls}))
                if nudged:
                    _count("guard_stops")
                    if self.stop_text is not None:
                        return dataclasses.replace(response, parts=[TextPart(self.stop_text)], usage=usage)
                    raise UnexpectedModelBehavior(f"repeated tool call: {repeated} with the same arguments twice")
                nudged += 1
                history += [response, ModelRequest(parts=[UserPromptPart(_repeat_prompt(repeated))])]
                continue
            if final and self.last_step and not nudged_last:  # a call now would end the run at the step limit: ask for the answer
                nudged_last = True
                _count("calls_at_step_limit")
                history += [response, ModelRequest(parts=[UserPromptPart(f"{_NO_MORE_CALLS} {self.last_step}")])]
                continue
            if native and len(fresh) == len(native):
                return dataclasses.replace(response, usage=usage)
            if not native:
                _count("text_tool_calls", len(fresh))
            parts = [ToolCallPart(name, args, tool_call_id=f"{_TEXT_ID}{i}-{len(messages)}") for i, (name, args) in enumerate(fresh)]
            return dataclasses.replace(response, parts=parts, usage=usage)

    def _is_last_step(self, messages: list[ModelMessage]) -> bool:
        """Whether this request is the last the step limit allows (a tool call now could not be followed by an answer)."""
        if not self.max_steps:
            return False
        return sum(isinstance(m, ModelResponse) for m in messages) + 1 >= self.max_steps

    async def _ask(
        self,
        history: list[ModelMessage],
        settings: ModelSettings | None,
        params: ModelRequestParameters,
        tools: Mapping[str, Any],
        *,
        final: bool = False,
        selecting: SelectState | None = None,
    ) -> ModelResponse:
        shown = selecting.shown if selecting is not None and selecting.shown else None
        step = (self.last_step if final and self.last_step else self.next_step) if shown is None else None
        if shown is not None and selecting is not None:
            step = select_step(selecting.message, last=final)
        if self.mode != "prompted":  # calls parsed from text go back to the model as text, as it wrote them
            sent = _as_text(history, None, only_text_calls=True, numbers=shown)
            if shown is not None and step is not None:
                sent = _with_select_step(sent, history[-1] if history else None, shown, step)
            return await self.wrapped.request(sent, settings, params)
        listing = tools_prompt({name: (t.description or "", t.parameters_json_schema) for name, t in tools.items()})
        text_params = dataclasses.replace(params, function_tools=[], tool_visibility=None, allow_text_output=True)
        return await self.wrapped.request(
            _as_text(history, listing, first_step=self.first_step, next_step=step, numbers=shown),
            settings,
            text_params,
        )


def _tool_results(messages: list[ModelMessage]) -> list[Any]:
    """The contents of every tool return in ``messages``, in order."""
    return [p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]


def _with_select_step(messages: list[ModelMessage], original: ModelMessage | None, shown: list[Choice], step: str) -> list[ModelMessage]:
    """``auto`` mode in select mode: after the latest tool results (``original``: the last message before calls parsed
    from text were turned back into text), the numbered list if a native tool return is among them (sent as it is, not
    numbered), then the select step."""
    last = messages[-1] if messages else None
    if not isinstance(original, ModelRequest) or not isinstance(last, ModelRequest):
        return messages
    returns = [p for p in original.parts if isinstance(p, ToolReturnPart)]
    if not returns:
        return messages
    native = any(not p.tool_call_id.startswith(_TEXT_ID) for p in returns)
    text = f"Results, numbered:\n{numbered_list(shown)}\n\n{step}" if native else step
    return [*messages[:-1], dataclasses.replace(last, parts=[*last.parts, UserPromptPart(text)])]


_SEARCH_FIRST = (
    "You have not searched memory yet. Search first: reply with only "
    '{"name": "memory_search", "arguments": {"query": "<key words of the message>"}}'
)


def _records_read(messages: list[ModelMessage]) -> int:
    """How many records the tools returned so far (search hits and records read)."""
    n = 0
    for m in messages:
        if isinstance(m, ModelRequest):
            for p in m.parts:
                if isinstance(p, ToolReturnPart) and isinstance(p.content, Mapping):
                    hits = p.content.get("hits")
                    n += len(hits) if isinstance(hits, list) else int("id" in p.content and "content" in p.content)
    return n


def _is_exit(text: str, exit_text: str) -> bool:
    return text.strip().strip(" .`'\"").upper() == exit_text


def _recheck_prompt(found: int, exit_text: str) -> str:
    return (
        f"The results above hold {found} record(s). If any of them says something about the message, answer from it "
        "now: short sentences, each ending with its [record-id:L<start>-L<end>] citation as shown. "
        f"Reply {exit_text} only if none of them does."
    )


_NO_MORE_CALLS = "No more tool calls: the step limit is reached."


def _repair_prompt(problem: str) -> str:
    return (
        f"Your reply is not a valid tool call: {problem}. Reply with only one JSON object "
        '{"name": "<tool name>", "arguments": {...}}, or with your final answer as plain text.'
    )


def _repeat_prompt(names: str) -> str:
    return (
        f"You already called {names} with these arguments and have the result above. Do not repeat a call: "
        "call a tool with other arguments, or reply with your final answer now."
    )


def render_result(content: Any, numbers: list[Choice] | None = None) -> str | None:
    """A memory tool's result as the few lines a small model needs (None: not a memory tool result).

    Search hits become ``- [id:L<start>-L<end>] title: snippet`` (the citation form the workers ask for), a read
    record ``[id:L<first>-L<last>] title`` and its content; the untrusted-data note is kept. With ``numbers`` (recall's
    select mode: every record shown so far, numbered), each record is ``n. title: text``, numbered as in that list.
    """
    if not isinstance(content, Mapping):
        return None
    note = str(content.get("note") or "")
    if numbers is not None:
        index = {c.id: n for n, c in enumerate(numbers, 1)}
        mine = [c for c in choices_in([content]) if c.id in index]
        lines = [note] if note else []
        if mine:
            return "\n".join([*lines, *(numbered_line(index[c.id], c) for c in mine)])
        if isinstance(content.get("hits"), list):
            return "\n".join([*lines, "no hits"])
    hits = content.get("hits")
    if isinstance(hits, list):
        lines = [note] if note else []
        for hit in hits:
            if isinstance(hit, Mapping):
                snippet = " ".join(str(hit.get("snippet") or "").split())
                lines.append(f"- [{hit.get('id')}:L{hit.get('line_start')}-L{hit.get('line_end')}] {hit.get('title') or ''}: {snippet}")
        return "\n".join(lines) if hits else "\n".join([*lines, "no hits"])
    if "content" in content and "id" in content and "body_line" in content:
        body = str(content.get("content") or "")
        first = int(content.get("body_line") or 1)
        last = first + max(0, body.count("\n"))
        head = f"[{content.get('id')}:L{first}-L{last}] {content.get('title') or ''}"
        return "\n".join(x for x in (note, head, body) if x)
    return None


def _as_text(
    messages: list[ModelMessage],
    listing: str | None,
    *,
    only_text_calls: bool = False,
    first_step: str | None = None,
    next_step: str | None = None,
    numbers: list[Choice] | None = None,
) -> list[ModelMessage]:
    """The history with tool calls and results as plain text (``only_text_calls``: those parsed from text).

    With ``listing`` (prompted mode) the first request's user prompt becomes one message: the tool listing, the
    prompt, then ``first_step`` (what the first reply should be): small models follow what they read last; and
    ``next_step`` follows the latest tool results (small models otherwise repeat the call they just made).
    """
    if only_text_calls and not any(
        isinstance(p, ToolCallPart) and p.tool_call_id.startswith(_TEXT_ID)
        for m in messages
        if isinstance(m, ModelResponse)
        for p in m.parts
    ):
        return messages
    out: list[ModelMessage] = []
    listed = listing is None
    for message in messages:
        if isinstance(message, ModelResponse):
            parts: list[Any] = []
            for p in message.parts:
                if isinstance(p, ToolCallPart) and (not only_text_calls or p.tool_call_id.startswith(_TEXT_ID)):
                    parts.append(TextPart(json.dumps({"name": p.tool_name, "arguments": p.args_as_dict()})))
                elif isinstance(p, TextPart) or only_text_calls:
                    parts.append(p)
            out.append(dataclasses.replace(message, parts=parts or [TextPart("")]))
            continue
        if not isinstance(message, ModelRequest):
            out.append(message)
            continue
        req_parts: list[Any] = []
        for q in message.parts:
            if isinstance(q, ToolReturnPart) and (not only_text_calls or q.tool_call_id.startswith(_TEXT_ID)):
                content = render_result(q.content, numbers) or q.model_response_str()
                cut = content if len(content) <= _RESULT_CHARS else content[:_RESULT_CHARS] + " …(cut)"
                req_parts.append(UserPromptPart(f"Result of {q.tool_name}:\n{cut}"))
            elif isinstance(q, RetryPromptPart) and (not only_text_calls or q.tool_call_id.startswith(_TEXT_ID)):
                req_parts.append(UserPromptPart(f"Tool call failed: {q.model_response()}"))
            else:
                req_parts.append(q)
        prompts = [q for q in req_parts if isinstance(q, UserPromptPart) and isinstance(q.content, str)]
        if not listed and listing and prompts:
            text = "\n\n".join([listing, *(str(q.content) for q in prompts), *([first_step] if first_step else [])])
            req_parts = [q for q in req_parts if q not in prompts] + [UserPromptPart(text)]
            listed = True
        if next_step and message is messages[-1] and any(isinstance(q, ToolReturnPart) for q in message.parts):
            req_parts.append(UserPromptPart(next_step))
        out.append(dataclasses.replace(message, parts=req_parts))
    return out
