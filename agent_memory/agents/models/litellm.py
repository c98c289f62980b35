"""A pydantic-ai `Model` that calls the litellm library directly (not a LiteLLM proxy).

`LiteLLMModel("openai/gpt-4o-mini")`, `LiteLLMModel("anthropic/claude-...")` or
`LiteLLMModel("ollama_chat/llama3.1", api_base="http://127.0.0.1:11434")` can be handed to a
`pydantic_ai.Agent` like any built-in model. Messages and tools are rendered in the OpenAI chat
format that `litellm.acompletion` accepts for every provider, and litellm's errors are re-raised as
pydantic-ai's `ModelAPIError` family so callers can catch one set of exceptions.

litellm is an optional extra (``pip install 'agent-memory[litellm]'``). Importing this module does not
import litellm: construction starts that import (several seconds) in a background thread and the first
request awaits it, so the event loop never blocks on it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import importlib
import importlib.util
import json
import math
import sys
import threading
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

from pydantic_ai.exceptions import ModelTimeoutError, UserError
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import (
    CompletedStreamedResponse,
    Model,
    ModelRequestParameters,
    StreamedResponse,
    check_allow_model_requests,
)
from pydantic_ai.profiles import ModelProfile, ModelProfileSpec
from pydantic_ai.settings import ModelSettings

from agent_memory.agents.models._litellm_messages import map_messages, tools_and_choice

__all__ = ("LITELLM_MISSING", "LiteLLMModel", "litellm_installed", "make_model")

LITELLM_MISSING = (
    "litellm is not installed: pip install 'agent-memory[litellm]' "
    "(litellm pins openai<3, so use an environment without pydantic-ai-slim[openai])"
)
_BACKEND = f"{__package__}._litellm_response"  # imports `_litellm_runtime`, which imports litellm
_backend_lock = threading.Lock()
_backend_future: concurrent.futures.Future[ModuleType] | None = None

_SETTINGS_TO_KWARGS = (
    ("max_tokens", "max_tokens"),
    ("temperature", "temperature"),
    ("top_p", "top_p"),
    ("seed", "seed"),
    ("presence_penalty", "presence_penalty"),
    ("frequency_penalty", "frequency_penalty"),
    ("logit_bias", "logit_bias"),
    ("stop_sequences", "stop"),
    ("extra_headers", "extra_headers"),
    ("extra_body", "extra_body"),
)


def litellm_installed() -> bool:
    """Whether litellm can be imported (checked without importing it)."""
    return "litellm" in sys.modules or importlib.util.find_spec("litellm") is not None


def _start_backend_import() -> concurrent.futures.Future[ModuleType]:
    """Import litellm and our litellm-side modules once, in a daemon thread; later calls share the future."""
    global _backend_future
    with _backend_lock:
        if _backend_future is None or (_backend_future.done() and _backend_future.exception() is not None):
            future: concurrent.futures.Future[ModuleType] = concurrent.futures.Future()

            def run() -> None:
                try:
                    future.set_result(importlib.import_module(_BACKEND))
                except BaseException as exc:  # handed to whoever awaits the import
                    future.set_exception(exc)

            threading.Thread(target=run, name="agent-memory-litellm-import", daemon=True).start()
            _backend_future = future
        return _backend_future


@dataclass(init=False)
class LiteLLMModel(Model):
    """A pydantic-ai model backed by `litellm.acompletion`, so any litellm provider string works.

    Function tools and output tools go out as OpenAI `tools`; `tool_choice` is `"required"` when the
    agent doesn't accept plain text. A cost litellm reports is put on `ModelResponse.usage.cost` and
    on `ModelResponse.provider_details["cost_usd"]`.

    Streaming isn't native: `request_stream` makes one non-streamed call and replays its parts, so
    `Agent.run_stream()` and event stream handlers still work, just without incremental output.
    `top_k`, `service_tier` and `citations` settings are ignored.
    """

    unsupported_settings: ClassVar[frozenset[Any]] = frozenset({"top_k", "service_tier", "citations"})
    _unsupported_file_inputs: ClassVar[frozenset[Any]] = frozenset({"audio", "document", "video"})

    _model_name: str = field(repr=False)  # `Model.__repr__` already shows `model_name`
    _api_base: str | None = field(default=None, repr=True)
    _api_key: str | None = field(default=None, repr=False)
    _temperature: float | None = field(default=None, repr=True)
    _timeout_s: float | None = field(default=None, repr=True)
    _num_retries: int = field(default=0, repr=True)
    _extra: dict[str, Any] = field(default_factory=dict[str, Any], repr=False)
    _profile_complete: bool = field(default=True, repr=False)

    # Keep identity hashing (and with it `Model.__eq__`'s identity comparison); `@dataclass` would unset it.
    __hash__ = Model.__hash__

    def __init__(
        self,
        model_name: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        temperature: float | None = None,
        timeout_s: float | None = None,
        num_retries: int = 0,
        extra: dict[str, Any] | None = None,
        settings: ModelSettings | None = None,
        profile: ModelProfileSpec | None = None,
    ) -> None:
        """Create a model for one litellm model string; raises `ImportError` when litellm is not installed.

        Args:
            model_name: The litellm model string, e.g. `openai/gpt-4o-mini` or `ollama_chat/llama3.1`.
            api_base: Base URL of the provider's API, for local or self-hosted servers.
            api_key: API key; litellm reads the provider's usual environment variable when omitted.
            temperature: Default sampling temperature; `ModelSettings["temperature"]` overrides it.
            timeout_s: Timeout in seconds for one request, including the first request's wait for
                litellm's import; `ModelSettings["timeout"]` overrides it.
            num_retries: Retries for failed calls (litellm's and the provider SDK's); 0 fails fast.
            extra: Extra keyword arguments for `litellm.acompletion` (e.g. `{"drop_params": True}`).
            settings: Default pydantic-ai model settings for this model.
            profile: A pydantic-ai model profile, merged over this model's defaults.
        """
        if not model_name:
            raise UserError('`LiteLLMModel` needs a litellm model string, e.g. "openai/gpt-4o-mini".')
        if not litellm_installed():
            raise ImportError(LITELLM_MISSING)
        self._model_name = model_name
        self._api_base = api_base
        self._api_key = api_key
        self._temperature = temperature
        self._timeout_s = timeout_s
        self._num_retries = num_retries
        self._extra = dict(extra or {})
        super().__init__(settings=settings, profile=profile)
        _start_backend_import()  # off the event loop; the first request awaits it

    @property
    def model_name(self) -> str:
        """The litellm model string."""
        return self._model_name

    @property
    def system(self) -> str:
        """The provider name used for telemetry and `model_id` (`litellm:<model_name>`)."""
        return "litellm"

    @property
    def base_url(self) -> str | None:
        """The `api_base` given to the constructor, if any."""
        return self._api_base

    def _provider_model_profile(self) -> ModelProfile:
        """Defaults for a Chat-Completions-shaped API, plus the context window from litellm's local model map.

        On the event loop before litellm is imported the window is left out (reading the 3 MB map would block
        the loop); the profile is recomputed, with it, once the import is done.
        """
        profile = ModelProfile(supports_json_schema_output=True)
        cost_map = _cost_map(may_block=not _in_event_loop())
        self._profile_complete = cost_map is not None
        if cost_map is not None and (window := _context_window(cost_map, self._model_name)) is not None:
            profile["context_window"] = window
        return profile

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """Send one chat completion request through `litellm.acompletion`."""
        check_allow_model_requests()
        deadline = await self._await_backend(model_settings)  # before `prepare_request` reads `self.profile`
        model_settings, model_request_parameters = self.prepare_request(model_settings, model_request_parameters)
        return await self._completion(messages, model_settings, model_request_parameters, deadline)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncIterator[StreamedResponse]:
        """Make a non-streamed request and replay it as a stream of complete parts."""
        check_allow_model_requests()
        deadline = await self._await_backend(model_settings)
        model_settings, model_request_parameters = self.prepare_request(model_settings, model_request_parameters)
        response = await self._completion(messages, model_settings, model_request_parameters, deadline)
        yield CompletedStreamedResponse(response, model_request_parameters=model_request_parameters, replay_events=True)

    async def _await_backend(self, settings: ModelSettings | None) -> float | None:
        """Wait (off the event loop) for litellm's import, within the request timeout; returns the deadline."""
        timeout = (settings or {}).get("timeout", self._timeout_s)
        if not isinstance(timeout, int | float) or not math.isfinite(timeout):
            timeout = None
        deadline = None if timeout is None else time.monotonic() + timeout
        future = _start_backend_import()
        if not future.done():
            try:
                await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), timeout)
            except TimeoutError:
                raise ModelTimeoutError(self._model_name, f"litellm was still importing after {timeout}s") from None
        if (exc := future.exception()) is not None:
            raise ImportError(f"{LITELLM_MISSING} ({exc})") from exc
        if not getattr(self, "_profile_complete", True):
            self.__dict__.pop("profile", None)  # computed without the model map: recompute now it is loaded
        return deadline

    async def _completion(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        params: ModelRequestParameters,
        deadline: float | None,
    ) -> ModelResponse:
        kwargs = self._completion_kwargs(messages, model_settings or {}, params)
        if deadline is not None:  # the wait for the import counts against the request's timeout
            kwargs["timeout"] = max(0.001, deadline - time.monotonic())
        runtime = sys.modules[f"{__package__}._litellm_runtime"]
        response = await runtime.complete(self._model_name, kwargs)
        backend = sys.modules[_BACKEND]
        result: ModelResponse = backend.process_response(response, self._model_name, self._api_base)
        return result

    def _completion_kwargs(self, messages: list[ModelMessage], settings: ModelSettings, params: ModelRequestParameters) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"num_retries": self._num_retries, "max_retries": self._num_retries}
        for key, value in (
            ("api_base", self._api_base),
            ("api_key", self._api_key),
            ("temperature", self._temperature),
            ("timeout", self._timeout_s),
        ):
            if value is not None:
                kwargs[key] = value
        kwargs.update(self._extra)
        for setting, kwarg in _SETTINGS_TO_KWARGS:
            if setting in settings:
                kwargs[kwarg] = settings[setting]  # type: ignore[literal-required]
        if "timeout" in settings and isinstance(settings["timeout"], int | float):
            kwargs["timeout"] = settings["timeout"]
        if "max_retries" in settings:
            kwargs["num_retries"] = kwargs["max_retries"] = settings["max_retries"]

        tools, tool_choice = tools_and_choice(settings, params)
        if tools:
            kwargs["tools"] = tools
            kwargs["tool_choice"] = tool_choice
            if "parallel_tool_calls" in settings:
                kwargs["parallel_tool_calls"] = settings["parallel_tool_calls"]
        if params.output_mode == "native" and params.output_object is not None:
            output = params.output_object
            schema: dict[str, Any] = {"name": output.name or "final_result", "schema": output.json_schema}
            if output.description:
                schema["description"] = output.description
            if output.strict is not None:
                schema["strict"] = output.strict
            kwargs["response_format"] = {"type": "json_schema", "json_schema": schema}

        kwargs["model"] = self._model_name
        kwargs["messages"] = map_messages(messages, self._get_instruction_parts(messages, params) or [])
        kwargs["stream"] = False
        return kwargs


def make_model(spec: str, **kw: Any) -> Model:
    """Build a model from a spec string: `"litellm:<litellm model>"` -> `LiteLLMModel(<litellm model>, **kw)`.

    Any other spec is handed to `pydantic_ai.models.infer_model` (which takes no keyword arguments).
    """
    prefix, sep, name = spec.partition(":")
    if sep and prefix == "litellm":
        return LiteLLMModel(name, **kw)
    if kw:
        raise UserError(f'Keyword arguments are only supported for "litellm:<model>" specs, got {spec!r}.')
    from pydantic_ai.models import infer_model

    return infer_model(spec)


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _cost_map(*, may_block: bool) -> Mapping[str, Any] | None:
    """litellm's model map: the imported one, else the bundled JSON (read only if ``may_block`` or already read)."""
    loaded = getattr(sys.modules.get("litellm"), "model_cost", None)
    if isinstance(loaded, Mapping) and loaded:
        return loaded
    if may_block or _bundled_model_map.cache_info().currsize:
        return _bundled_model_map()
    return None


def _context_window(cost_map: Mapping[str, Any], model_name: str) -> int | None:
    """The model's input window from litellm's model map."""
    provider, _, bare = model_name.partition("/")
    for key in (model_name, bare):
        info = cost_map.get(key) if key else None
        if not isinstance(info, Mapping) or (key != model_name and info.get("litellm_provider") != provider):
            continue
        window = info.get("max_input_tokens") or info.get("max_tokens")
        if isinstance(window, int) and window > 0:
            return window
    return None


@functools.lru_cache(maxsize=1)
def _bundled_model_map() -> Mapping[str, Any] | None:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "model_prices_and_context_window_backup.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, Mapping) else None
