"""The offline worker model: deterministic rules, **no LLM**, no network, no API key.

:class:`OfflineModel` is a pydantic-ai ``Model`` that plays the recall or the capture worker by
fixed rules. It answers through tool calls exactly as a real model would, so the worker's
``Agent``, toolset permissions and usage limits are all exercised for real:

* **recall** (:mod:`.offline_recall`): ``memory_search`` with the message and a few variants →
  fusion → ``memory_get`` on the best records → the best lines packed into the budget, cited.
* **capture**: statements are extracted from the user's lines of the transcript by the rules of
  :mod:`.statements` (see ``docs/capture.md``) → ``memory_search`` for each → ``memory_remember``
  for those memory does not hold yet (keyed facts replace their old value) → ``NO_REPLY``.

It is a baseline: it understands only the statement shapes its rules know and lexical overlap.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic_ai.messages import ModelMessage, ModelResponse, ModelResponsePart, TextPart, ToolCallPart
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from agent_memory.agents.models.offline_recall import NO_RELEVANT_MEMORY, RunState, parse_recall_prompt, query_variants, recall_step
from agent_memory.agents.models.statements import Statement, extract_statements
from agent_memory.search.text import default_tokenizer

__all__ = ["OfflineModel", "Statement", "extract_statements", "parse_recall_prompt", "query_variants", "NO_REPLY", "NO_RELEVANT_MEMORY"]

NO_REPLY = "NO_REPLY"


class OfflineModel(Model):
    """Deterministic stand-in for a worker LLM (no LLM; rules only). ``role`` is ``recall`` or ``capture``."""

    def __init__(
        self,
        role: Literal["recall", "capture"] = "recall",
        *,
        max_records: int = 6,
        max_statements: int = 12,
        settings: ModelSettings | None = None,
    ) -> None:
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

    async def request(
        self, messages: list[ModelMessage], model_settings: ModelSettings | None, model_request_parameters: ModelRequestParameters
    ) -> ModelResponse:
        _, params = self.prepare_request(model_settings, model_request_parameters)
        tools = {t.name for t in params.function_tools}
        state = RunState.read(messages)
        parts = recall_step(state, tools, self.max_records) if self.role == "recall" else _capture_step(state, tools, self.max_statements)
        # No model runs, so no tokens are spent: usage counts the request only.
        return ModelResponse(parts=parts, usage=RequestUsage(), model_name=self.model_name, provider_name="agent_memory")


def _norm(text: str) -> str:
    return " ".join(default_tokenizer(text))


def _capture_step(state: RunState, tools: set[str], max_statements: int) -> list[ModelResponsePart]:
    statements = extract_statements(state.prompt, limit=max_statements)
    if not statements or "memory_remember" not in tools:
        return [TextPart(NO_REPLY)]
    if "memory_search" in tools and not state.called.get("memory_search"):
        return [
            ToolCallPart("memory_search", {"query": st.content, "limit": 3}, tool_call_id=f"search-{i}") for i, st in enumerate(statements)
        ]
    if state.called.get("memory_remember"):
        return [TextPart(NO_REPLY)]
    held = {
        c.tool_call_id: [_norm(str(h.get("snippet", ""))) for h in (r.get("hits") or []) if isinstance(h, dict)]
        for c, r in state.results("memory_search")
    }
    calls: list[ModelResponsePart] = []
    for i, st in enumerate(statements):
        if any(_norm(st.content) in snippet for snippet in held.get(f"search-{i}", [])):
            continue  # memory already says exactly this
        args: dict[str, Any] = {"content": st.content, "kind": st.kind}
        if st.tags:
            args["tags"] = list(st.tags)
        if st.memory_key:  # a keyed replace supersedes the old value (kept, no longer current)
            args.update(memory_key=st.memory_key, on_existing=st.on_existing)
        if st.happened_at:  # the day it is about, resolved against when it was said
            args["happened_at"] = st.happened_at.isoformat()
        calls.append(ToolCallPart("memory_remember", args, tool_call_id=f"remember-{i}"))
    return calls or [TextPart(NO_REPLY)]
