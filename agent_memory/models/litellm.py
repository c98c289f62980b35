"""A pydantic-ai `Model` that calls the litellm library directly (not a LiteLLM proxy).

`LiteLLMModel("openai/gpt-4o-mini")`, `LiteLLMModel("anthropic/claude-...")` or
`LiteLLMModel("ollama_chat/llama3.1", api_base="http://127.0.0.1:11434")` can be handed to a
`pydantic_ai.Agent` like any built-in model. Messages and tools are rendered in the OpenAI chat
format that `litellm.acompletion` accepts for every provider, and litellm's errors are re-raised as
pydantic-ai's `ModelAPIError` family so callers can catch one set of exceptions.
"""

from __future__ import annotations

import os

# litellm fetches its model cost map over the network at import time unless told otherwise.
os.environ.setdefault('LITELLM_LOCAL_MODEL_COST_MAP', 'True')

import asyncio  # noqa: E402
import json  # noqa: E402
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence  # noqa: E402
from contextlib import asynccontextmanager  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from decimal import Decimal, InvalidOperation  # noqa: E402
from typing import Any, ClassVar  # noqa: E402

import httpx  # noqa: E402
import litellm  # noqa: E402
import openai  # noqa: E402
from pydantic_ai.exceptions import (  # noqa: E402
    ModelAPIError,
    ModelAuthenticationError,
    ModelConnectionError,
    ModelContextWindowExceededError,
    ModelHTTPError,
    ModelNotFoundError,
    ModelQuotaExceededError,
    ModelRateLimitError,
    ModelRequestRejectedError,
    ModelServerError,
    ModelTimeoutError,
    ModelUnavailableError,
    UnexpectedModelBehavior,
    UserError,
)
from pydantic_ai.messages import (  # noqa: E402
    BinaryContent,
    CachePoint,
    CompactionPart,
    FilePart,
    FinishReason,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
    RetryPromptPart,
    SpeechPart,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserContent,
    UserPromptPart,
)
from pydantic_ai.models import (  # noqa: E402
    CompletedStreamedResponse,
    Model,
    ModelRequestParameters,
    StreamedResponse,
    check_allow_model_requests,
)
from pydantic_ai.profiles import ModelProfile, ModelProfileSpec  # noqa: E402
from pydantic_ai.settings import ModelSettings  # noqa: E402
from pydantic_ai.tools import ToolDefinition  # noqa: E402
from pydantic_ai.usage import RequestUsage  # noqa: E402

__all__ = ('LiteLLMModel', 'make_model')

# Without this litellm prints "Give Feedback / Get Help" banners to stdout on every error.
litellm.suppress_debug_info = True

ChatMessage = dict[str, Any]
"""One OpenAI-style chat message, as `litellm.acompletion(messages=...)` takes it."""

_FINISH_REASONS: dict[str, FinishReason] = {
    'stop': 'stop',
    'end_turn': 'stop',
    'stop_sequence': 'stop',
    'length': 'length',
    'max_tokens': 'length',
    'tool_calls': 'tool_call',
    'function_call': 'tool_call',
    'tool_use': 'tool_call',
    'content_filter': 'content_filter',
    'error': 'error',
}
"""litellm (OpenAI-normalized, plus a few raw provider) finish reasons -> pydantic-ai's."""

_STATUS_CATEGORIES: dict[
    int,
    type[
        ModelRateLimitError
        | ModelQuotaExceededError
        | ModelUnavailableError
        | ModelServerError
        | ModelRequestRejectedError
    ],
] = {
    400: ModelRequestRejectedError,
    401: ModelAuthenticationError,
    402: ModelQuotaExceededError,
    403: ModelAuthenticationError,
    404: ModelNotFoundError,
    408: ModelServerError,
    409: ModelRequestRejectedError,
    413: ModelRequestRejectedError,
    422: ModelRequestRejectedError,
    429: ModelRateLimitError,
    503: ModelUnavailableError,
}
"""HTTP status -> the pydantic-ai error category it implies; other 5xx are `ModelServerError`."""

_TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (
    openai.APIConnectionError,
    httpx.TransportError,
    ConnectionError,
)
try:  # litellm's async HTTP handler is aiohttp-based for several providers
    import aiohttp

    _TRANSPORT_ERRORS += (aiohttp.ClientConnectionError,)
except ImportError:  # pragma: no cover
    pass

_TIMEOUT_ERRORS: tuple[type[BaseException], ...] = (
    openai.APITimeoutError,
    httpx.TimeoutException,
    asyncio.TimeoutError,
    TimeoutError,
)

_CAUGHT_ERRORS: tuple[type[BaseException], ...] = (openai.OpenAIError, httpx.HTTPError, OSError, *_TRANSPORT_ERRORS)
"""What `litellm.acompletion` raises for a failed call (litellm's own exceptions subclass `openai.OpenAIError`)."""


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

    unsupported_settings: ClassVar[frozenset[Any]] = frozenset({'top_k', 'service_tier', 'citations'})
    _unsupported_file_inputs: ClassVar[frozenset[Any]] = frozenset({'audio', 'document', 'video'})

    _model_name: str = field(repr=False)  # `Model.__repr__` already shows `model_name`
    _api_base: str | None = field(default=None, repr=True)
    _api_key: str | None = field(default=None, repr=False)
    _temperature: float | None = field(default=None, repr=True)
    _timeout_s: float | None = field(default=None, repr=True)
    _num_retries: int = field(default=0, repr=True)
    _extra: dict[str, Any] = field(default_factory=dict[str, Any], repr=False)

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
        """Create a model for one litellm model string.

        Args:
            model_name: The litellm model string, e.g. `openai/gpt-4o-mini` or `ollama_chat/llama3.1`.
            api_base: Base URL of the provider's API, for local or self-hosted servers.
            api_key: API key; litellm reads the provider's usual environment variable when omitted.
            temperature: Default sampling temperature; `ModelSettings["temperature"]` overrides it.
            timeout_s: Per-attempt timeout in seconds; `ModelSettings["timeout"]` overrides it.
            num_retries: Retries for failed calls (litellm's and the provider SDK's); 0 fails fast.
            extra: Extra keyword arguments for `litellm.acompletion` (e.g. `{"drop_params": True}`).
            settings: Default pydantic-ai model settings for this model.
            profile: A pydantic-ai model profile, merged over this model's defaults.
        """
        if not model_name:
            raise UserError('`LiteLLMModel` needs a litellm model string, e.g. "openai/gpt-4o-mini".')
        self._model_name = model_name
        self._api_base = api_base
        self._api_key = api_key
        self._temperature = temperature
        self._timeout_s = timeout_s
        self._num_retries = num_retries
        self._extra = dict(extra or {})
        super().__init__(settings=settings, profile=profile)

    @property
    def model_name(self) -> str:
        """The litellm model string."""
        return self._model_name

    @property
    def system(self) -> str:
        """The provider name used for telemetry and `model_id` (`litellm:<model_name>`)."""
        return 'litellm'

    @property
    def base_url(self) -> str | None:
        """The `api_base` given to the constructor, if any."""
        return self._api_base

    def _provider_model_profile(self) -> ModelProfile:
        """Defaults for a Chat-Completions-shaped API, plus the context window from litellm's local model map."""
        profile = ModelProfile(supports_json_schema_output=True)
        if (window := _context_window(self._model_name)) is not None:
            profile['context_window'] = window
        return profile

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """Send one chat completion request through `litellm.acompletion`."""
        check_allow_model_requests()
        model_settings, model_request_parameters = self.prepare_request(model_settings, model_request_parameters)
        return await self._completion(messages, model_settings, model_request_parameters)

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
        model_settings, model_request_parameters = self.prepare_request(model_settings, model_request_parameters)
        response = await self._completion(messages, model_settings, model_request_parameters)
        yield CompletedStreamedResponse(
            response, model_request_parameters=model_request_parameters, replay_events=True
        )

    # ----------------------------------------------------------------- request

    async def _completion(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        params: ModelRequestParameters,
    ) -> ModelResponse:
        kwargs = self._completion_kwargs(messages, model_settings or {}, params)
        try:
            response = await litellm.acompletion(**kwargs)
        except _CAUGHT_ERRORS as e:
            raise self._map_error(e) from e
        return self._process_response(response)

    def _completion_kwargs(
        self, messages: list[ModelMessage], settings: ModelSettings, params: ModelRequestParameters
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {'num_retries': self._num_retries, 'max_retries': self._num_retries}
        if self._api_base is not None:
            kwargs['api_base'] = self._api_base
        if self._api_key is not None:
            kwargs['api_key'] = self._api_key
        if self._temperature is not None:
            kwargs['temperature'] = self._temperature
        if self._timeout_s is not None:
            kwargs['timeout'] = self._timeout_s
        kwargs.update(self._extra)

        for setting, kwarg in (
            ('max_tokens', 'max_tokens'),
            ('temperature', 'temperature'),
            ('top_p', 'top_p'),
            ('seed', 'seed'),
            ('presence_penalty', 'presence_penalty'),
            ('frequency_penalty', 'frequency_penalty'),
            ('logit_bias', 'logit_bias'),
            ('stop_sequences', 'stop'),
            ('extra_headers', 'extra_headers'),
            ('extra_body', 'extra_body'),
            ('timeout', 'timeout'),
        ):
            if setting in settings:
                kwargs[kwarg] = settings[setting]  # type: ignore[literal-required]
        if 'max_retries' in settings:
            kwargs['num_retries'] = kwargs['max_retries'] = settings['max_retries']

        tools, tool_choice = self._tools_and_choice(settings, params)
        if tools:
            kwargs['tools'] = tools
            kwargs['tool_choice'] = tool_choice
            if 'parallel_tool_calls' in settings:
                kwargs['parallel_tool_calls'] = settings['parallel_tool_calls']
        if params.output_mode == 'native' and params.output_object is not None:
            output = params.output_object
            schema: dict[str, Any] = {'name': output.name or 'final_result', 'schema': output.json_schema}
            if output.description:
                schema['description'] = output.description
            if output.strict is not None:
                schema['strict'] = output.strict
            kwargs['response_format'] = {'type': 'json_schema', 'json_schema': schema}

        kwargs['model'] = self._model_name
        kwargs['messages'] = self._map_messages(messages, params)
        kwargs['stream'] = False
        return kwargs

    def _tools_and_choice(
        self, settings: ModelSettings, params: ModelRequestParameters
    ) -> tuple[list[dict[str, Any]], str | dict[str, Any] | None]:
        """The `tools` list and `tool_choice`, honouring the `tool_choice` model setting."""
        tool_defs = params.tool_defs
        if not tool_defs:
            return [], None
        output_names = [t.name for t in params.output_tools]
        function_names = [t.name for t in params.function_tools]
        default_mode = 'auto' if params.allow_text_output else 'required'

        choice = settings.get('tool_choice')
        names: list[str] | None = None  # None: send every tool
        mode: str = default_mode
        if choice in (None, 'auto'):
            pass
        elif choice == 'none' or choice == []:
            if output_names:
                names = output_names
            else:
                mode = 'none'
        elif choice == 'required':
            if not function_names:
                raise UserError('`tool_choice="required"` was set, but no function tools are defined.')
            mode = 'required'
        elif isinstance(choice, list):
            names = [n for n in choice if n in tool_defs]
            if not names:
                raise UserError(f'No tool in `tool_choice` is defined: {sorted(choice)}.')
            mode = 'required'
        else:  # `ToolOrOutput`: the chosen function tools plus every output tool
            chosen = list(getattr(choice, 'function_tools', None) or [])
            names = [n for n in chosen if n in function_names] + output_names

        selected = tool_defs if names is None else {n: tool_defs[n] for n in names if n in tool_defs}
        tools = [_tool_param(t) for t in selected.values()]
        if not tools:
            return [], None
        if mode == 'required' and len(tools) == 1:
            return tools, {'type': 'function', 'function': {'name': tools[0]['function']['name']}}
        return tools, mode

    # --------------------------------------------------------- message mapping

    def _map_messages(self, messages: Sequence[ModelMessage], params: ModelRequestParameters) -> list[ChatMessage]:
        """Render pydantic-ai history as OpenAI chat messages, with instructions as leading system messages."""
        chat: list[ChatMessage] = []
        for message in messages:
            if isinstance(message, ModelRequest):
                chat.extend(self._map_request(message))
            elif isinstance(message, ModelResponse):
                if (assistant := _map_response(message)) is not None:
                    chat.append(assistant)
            else:  # pragma: no cover
                raise UserError(f'Unexpected message type {type(message).__name__}.')

        instructions = self._get_instruction_parts(messages, params) or []
        if instructions:
            leading = 0
            while leading < len(chat) and chat[leading]['role'] == 'system':
                leading += 1
            chat[leading:leading] = [{'role': 'system', 'content': part.content} for part in instructions]
        return chat

    def _map_request(self, message: ModelRequest) -> Iterator[ChatMessage]:
        tool_files: list[UserContent] = []
        for part in message.parts:
            if isinstance(part, SystemPromptPart):
                yield {'role': 'system', 'content': part.content}
            elif isinstance(part, UserPromptPart):
                yield _map_user_prompt(part.content)
            elif isinstance(part, ToolReturnPart):
                text, files = part.model_response_str_and_user_content()
                tool_files.extend(files)
                yield {'role': 'tool', 'tool_call_id': part.tool_call_id, 'content': text}
            elif isinstance(part, RetryPromptPart):  # legacy; `prepare_messages` normally translates it
                if part.tool_name is not None:
                    yield {'role': 'tool', 'tool_call_id': part.tool_call_id, 'content': part.model_response()}
                else:
                    yield {'role': 'user', 'content': part.model_response()}
            elif isinstance(part, RetryFeedbackPart):
                yield {'role': 'user', 'content': part.model_response()}
            elif isinstance(part, CompactionPart):
                yield {'role': 'user', 'content': f'Summary of the earlier conversation:\n{part.content or ""}'}
            elif isinstance(part, SpeechPart):
                raise UserError(
                    '`SpeechPart` cannot be sent to `LiteLLMModel` as-is; call `model.prepare_messages()` first.'
                )
            else:
                raise UserError(
                    f'`{type(part).__name__}` cannot be rendered by `LiteLLMModel`. Call '
                    '`model.prepare_messages(messages)` first (`Agent` does this for you).'
                )
        if tool_files:
            yield _map_user_prompt(tool_files)

    # -------------------------------------------------------- response parsing

    def _process_response(self, response: Any) -> ModelResponse:
        choices = getattr(response, 'choices', None)
        if not choices:
            raise UnexpectedModelBehavior(f'litellm returned no choices for {self._model_name!r}: {response!r}')
        choice = choices[0]
        message = getattr(choice, 'message', None)
        if message is None:
            raise UnexpectedModelBehavior(f'litellm returned a choice without a message for {self._model_name!r}')

        parts: list[ModelResponsePart] = []
        reasoning = getattr(message, 'reasoning_content', None)
        if isinstance(reasoning, str) and reasoning:
            parts.append(ThinkingPart(content=reasoning, provider_name=self.system))
        content = getattr(message, 'content', None)
        if isinstance(content, str) and content:
            parts.append(TextPart(content=content))
        for call in getattr(message, 'tool_calls', None) or []:
            function = getattr(call, 'function', None)
            name = getattr(function, 'name', None)
            if not name:
                raise UnexpectedModelBehavior(f'litellm returned a tool call without a name: {call!r}')
            arguments = getattr(function, 'arguments', None)
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments or {})
            call_id = getattr(call, 'id', None)
            parts.append(ToolCallPart(name, arguments, **({'tool_call_id': call_id} if call_id else {})))

        raw_finish = getattr(choice, 'finish_reason', None)
        cost = _response_cost(response)
        usage = _map_usage(response, cost)

        details: dict[str, Any] = {}
        if cost is not None:
            details['cost_usd'] = cost
        if raw_finish:
            details['finish_reason'] = raw_finish
        if provider_model := getattr(response, 'model', None):
            details['model'] = provider_model
        hidden = getattr(response, '_hidden_params', None) or {}
        if llm_provider := hidden.get('custom_llm_provider'):
            details['litellm_provider'] = llm_provider

        return ModelResponse(
            parts=parts,
            usage=usage,
            model_name=self._model_name,
            provider_name=self.system,
            provider_url=self._api_base,
            provider_response_id=getattr(response, 'id', None) or None,
            provider_details=details or None,
            finish_reason=_FINISH_REASONS.get(raw_finish) if isinstance(raw_finish, str) else None,
        )

    # ------------------------------------------------------------------ errors

    def _map_error(self, error: BaseException) -> ModelAPIError:
        """Translate a litellm / SDK / transport exception into pydantic-ai's error hierarchy."""
        name = self._model_name
        message = _error_message(error)
        transport = _transport_cause(error)
        if transport is not None:
            if isinstance(transport, _TIMEOUT_ERRORS):
                return ModelTimeoutError(name, message)
            phase = 'connect' if _is_connect_failure(transport) else None
            return ModelConnectionError(name, message, phase=phase)

        status = getattr(error, 'status_code', None)
        if isinstance(status, int) and 400 <= status < 600:
            if isinstance(error, litellm.exceptions.ContextWindowExceededError):
                category: type[Any] | None = ModelContextWindowExceededError
            else:
                category = _STATUS_CATEGORIES.get(status, ModelServerError if status >= 500 else None)
            return ModelHTTPError.for_category(
                category,
                status_code=status,
                model_name=name,
                body=_error_body(error),
                headers=_error_headers(error),
                provider_error_code=_str_or_none(getattr(error, 'code', None)),
                provider_error_type=_str_or_none(getattr(error, 'type', None)),
            )
        return ModelAPIError(name, message)


def make_model(spec: str, **kw: Any) -> Model:
    """Build a model from a spec string: `"litellm:<litellm model>"` -> `LiteLLMModel(<litellm model>, **kw)`.

    Any other spec is handed to `pydantic_ai.models.infer_model` (which takes no keyword arguments).
    """
    prefix, sep, name = spec.partition(':')
    if sep and prefix == 'litellm':
        return LiteLLMModel(name, **kw)
    if kw:
        raise UserError(f'Keyword arguments are only supported for "litellm:<model>" specs, got {spec!r}.')
    from pydantic_ai.models import infer_model

    return infer_model(spec)


# --------------------------------------------------------------------- helpers


def _context_window(model_name: str) -> int | None:
    """The model's input window from `litellm.model_cost` (a local dict; `get_model_info` may call the server)."""
    cost_map = getattr(litellm, 'model_cost', None)
    if not isinstance(cost_map, Mapping):
        return None
    provider, _, bare = model_name.partition('/')
    for key in (model_name, bare):
        info = cost_map.get(key) if key else None
        if not isinstance(info, Mapping) or (key != model_name and info.get('litellm_provider') != provider):
            continue
        window = info.get('max_input_tokens') or info.get('max_tokens')
        if isinstance(window, int) and window > 0:
            return window
    return None


def _tool_param(tool: ToolDefinition) -> dict[str, Any]:
    function: dict[str, Any] = {
        'name': tool.name,
        'description': tool.description or '',
        'parameters': tool.parameters_json_schema,
    }
    if tool.strict:
        function['strict'] = True
    return {'type': 'function', 'function': function}


def _map_response(message: ModelResponse) -> ChatMessage | None:
    """An earlier model response as an assistant message, or None when it has nothing to resend."""
    texts: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            texts.append(part.content)
        elif isinstance(part, ToolCallPart):
            tool_calls.append(
                {
                    'id': part.tool_call_id,
                    'type': 'function',
                    'function': {'name': part.tool_name, 'arguments': part.args_as_json_str()},
                }
            )
        elif isinstance(part, ThinkingPart | FilePart | CompactionPart | NativeToolCallPart | NativeToolReturnPart):
            # Reasoning, generated files, provider compaction state and native-tool traffic have no
            # place in a Chat Completions assistant message; they're not resent.
            continue
        elif isinstance(part, SpeechPart):
            raise UserError(
                '`SpeechPart` cannot be sent to `LiteLLMModel` as-is; call `model.prepare_messages()` first.'
            )
        else:
            raise UserError(f'`{type(part).__name__}` cannot be rendered by `LiteLLMModel`.')
    if not texts and not tool_calls:
        return None
    assistant: ChatMessage = {'role': 'assistant', 'content': '\n\n'.join(texts) if texts else None}
    if tool_calls:
        assistant['tool_calls'] = tool_calls
    return assistant


def _map_user_prompt(content: str | Sequence[UserContent]) -> ChatMessage:
    if isinstance(content, str):
        return {'role': 'user', 'content': content}
    items: list[dict[str, Any]] = []
    for item in content:
        if isinstance(item, str):
            items.append({'type': 'text', 'text': item})
        elif isinstance(item, TextContent):
            items.append({'type': 'text', 'text': item.content})
        elif isinstance(item, ImageUrl):
            items.append({'type': 'image_url', 'image_url': {'url': item.url}})
        elif isinstance(item, BinaryContent) and item.is_image:
            items.append({'type': 'image_url', 'image_url': {'url': item.data_uri}})
        elif isinstance(item, CachePoint):
            continue
        else:
            raise UserError(f'`LiteLLMModel` can only send text and images in user prompts, not {type(item).__name__}.')
    if all(i['type'] == 'text' for i in items):
        return {'role': 'user', 'content': '\n'.join(i['text'] for i in items)}
    return {'role': 'user', 'content': items}


def _response_cost(response: Any) -> float | None:
    """The USD cost litellm attached to the response, or computed from its local price map."""
    hidden = getattr(response, '_hidden_params', None) or {}
    cost = hidden.get('response_cost') if isinstance(hidden, Mapping) else None
    if cost is None:
        try:
            cost = litellm.completion_cost(completion_response=response)
        except Exception:  # unpriced model: litellm raises
            return None
    try:
        value = float(cost)
    except (TypeError, ValueError):
        return None
    return value if value > 0 else None


def _map_usage(response: Any, cost: float | None) -> RequestUsage:
    raw = getattr(response, 'usage', None)
    if raw is None:
        return RequestUsage(unmeasured_requests=1)
    usage = RequestUsage(
        input_tokens=_int(getattr(raw, 'prompt_tokens', 0)),
        output_tokens=_int(getattr(raw, 'completion_tokens', 0)),
    )
    prompt_details = getattr(raw, 'prompt_tokens_details', None)
    usage.cache_read_tokens = _int(getattr(prompt_details, 'cached_tokens', 0))
    completion_details = getattr(raw, 'completion_tokens_details', None)
    usage.output_reasoning_tokens = _int(getattr(completion_details, 'reasoning_tokens', 0))
    if cost is not None:
        try:
            usage.cost = Decimal(str(cost))
        except InvalidOperation:  # pragma: no cover
            pass
    return usage


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _causes(error: BaseException) -> Iterator[BaseException]:
    """`error` and the exceptions it was raised from, outermost first."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(seen) < 32:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _transport_cause(error: BaseException) -> BaseException | None:
    """The transport failure (refused connection, timeout, ...) behind `error`, if that's what it is.

    litellm reports a refused connection as a 500 `InternalServerError`, so the chain is searched. An
    HTTP status error from the underlying SDK or httpx ends the search: the server did answer.
    """
    for exc in _causes(error):
        if isinstance(exc, _TIMEOUT_ERRORS):
            return exc
        if isinstance(exc, _TRANSPORT_ERRORS):
            return exc
        if isinstance(exc, httpx.HTTPStatusError):
            return None
        if isinstance(exc, openai.APIStatusError) and not type(exc).__module__.startswith('litellm'):
            return None
    return None


def _is_connect_failure(exc: BaseException) -> bool:
    return any(
        isinstance(e, httpx.ConnectError | ConnectionRefusedError) or type(e).__name__ == 'ClientConnectorError'
        for e in _causes(exc)
    )


def _error_message(error: BaseException) -> str:
    return str(getattr(error, 'message', None) or error) or type(error).__name__


def _error_body(error: BaseException) -> object | None:
    body = getattr(error, 'body', None)
    if body is not None:
        return body
    response = getattr(error, 'response', None)
    if isinstance(response, httpx.Response):
        try:
            return response.json()
        except Exception:
            try:
                return response.text or None
            except Exception:
                return None
    return _error_message(error)


def _error_headers(error: BaseException) -> dict[str, str] | None:
    headers = getattr(error, 'litellm_response_headers', None)
    if headers is None:
        response = getattr(error, 'response', None)
        headers = getattr(response, 'headers', None) if isinstance(response, httpx.Response) else None
    if headers is None:
        return None
    try:
        return {str(k): str(v) for k, v in dict(headers).items()}
    except Exception:
        return None


def _str_or_none(value: object) -> str | None:
    return str(value) if value is not None else None
