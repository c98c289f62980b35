"""Offline (no LLM) models for the reflect and consolidate workers.

* :class:`OfflineReflectModel` answers **extractively**: it searches with the question and a few variants, reads
  the best records and replies with their most relevant lines, each cited ``[record-id:L12-L14]`` (the recall
  rules of :mod:`.offline_recall`). It never writes.
* :class:`OfflineConsolidateModel` carries out the deterministic plan it is given: one ``memory_archive`` call per
  ``ARCHIVE <id> | <reason>`` line of its prompt, then ``NO_REPLY``.
"""

from __future__ import annotations

import re

from pydantic_ai.messages import ModelMessage, ModelResponse, ModelResponsePart, TextPart, ToolCallPart
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from agent_memory.agents.models.offline_recall import RunState, recall_step

__all__ = ["OfflineReflectModel", "OfflineConsolidateModel", "ARCHIVE_LINE"]

ARCHIVE_LINE = re.compile(r"^ARCHIVE ([^\s|]+) \| (.+)$", re.MULTILINE)


class _Offline(Model):
    role = "reflect"

    @property
    def model_name(self) -> str:
        return f"offline-{self.role}"

    @property
    def system(self) -> str:
        return "agent_memory"

    def step(self, state: RunState, tools: set[str]) -> list[ModelResponsePart]:  # pragma: no cover - abstract
        raise NotImplementedError

    async def request(
        self, messages: list[ModelMessage], model_settings: ModelSettings | None, model_request_parameters: ModelRequestParameters
    ) -> ModelResponse:
        _, params = self.prepare_request(model_settings, model_request_parameters)
        parts = self.step(RunState.read(messages), {t.name for t in params.function_tools})
        return ModelResponse(parts=parts, usage=RequestUsage(), model_name=self.model_name, provider_name="agent_memory")


class OfflineReflectModel(_Offline):
    """Deterministic reflect worker: an extractive, cited answer (no synthesis)."""

    role = "reflect"

    def __init__(self, *, max_records: int = 6, settings: ModelSettings | None = None) -> None:
        self.max_records = max_records
        super().__init__(settings=settings)

    def step(self, state: RunState, tools: set[str]) -> list[ModelResponsePart]:
        return recall_step(state, tools, self.max_records)


class OfflineConsolidateModel(_Offline):
    """Deterministic consolidate worker: archives exactly the records its plan lists."""

    role = "consolidate"

    def step(self, state: RunState, tools: set[str]) -> list[ModelResponsePart]:
        if "memory_archive" not in tools or state.called.get("memory_archive"):
            return [TextPart("NO_REPLY")]
        calls: list[ModelResponsePart] = [
            ToolCallPart("memory_archive", {"id": m.group(1), "reason": m.group(2).strip()}, tool_call_id=f"archive-{i}")
            for i, m in enumerate(ARCHIVE_LINE.finditer(state.prompt))
        ]
        return calls or [TextPart("NO_REPLY")]
