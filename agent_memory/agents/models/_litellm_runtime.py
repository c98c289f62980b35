"""The litellm side of `LiteLLMModel`: import litellm without side effects, call it, translate its errors.

Importing this module imports litellm (several seconds cold), so `LiteLLMModel` imports it in a worker
thread (`asyncio.to_thread`), never on the event loop. litellm sets ``TIKTOKEN_CACHE_DIR`` (and reads
``LITELLM_LOCAL_MODEL_COST_MAP``) at import time; both are restored afterwards, so the caller's
environment is left exactly as it was.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from typing import Any, Literal

import httpx
import openai
from pydantic_ai.exceptions import (
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
)

_IMPORT_ENV = ("TIKTOKEN_CACHE_DIR", "LITELLM_LOCAL_MODEL_COST_MAP")


def _import_litellm() -> Any:
    saved = {name: os.environ.get(name) for name in _IMPORT_ENV}
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # else it fetches the cost map over the network
    try:
        import litellm
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banners on stdout
    return litellm


litellm = _import_litellm()
# The SDK imports its resource classes lazily, on a client's first `.chat` access: that would run inside the
# first `acompletion`, on the event loop. Import them here, in the import thread, instead.
import openai.resources.chat  # noqa: E402, F401

_STATUS_CATEGORIES: dict[int, type[Any]] = {
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

_TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (openai.APIConnectionError, httpx.TransportError, ConnectionError)
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

_NOT_A_COMPLETION = (
    "Empty or invalid response from LLM endpoint",
    "returned 'choices' that is not a list",
    "Invalid response object",
    "response_object is None",
)
"""What litellm says (in an error it raises with status 500) when a 2xx body is not a chat completion."""


async def complete(model_name: str, kwargs: dict[str, Any]) -> Any:
    """`litellm.acompletion(**kwargs)`, with failures raised as pydantic-ai model errors."""
    try:
        return await litellm.acompletion(**kwargs)
    except _CAUGHT_ERRORS as e:
        raise map_error(model_name, e) from e


def map_error(model_name: str, error: BaseException) -> ModelAPIError | UnexpectedModelBehavior:
    """Translate a litellm / SDK / transport exception into pydantic-ai's error hierarchy."""
    message = _error_message(error)
    transport = _transport_cause(error)
    if transport is not None:
        if isinstance(transport, _TIMEOUT_ERRORS):
            return ModelTimeoutError(model_name, message)
        phase: Literal["connect"] | None = "connect" if _is_connect_failure(transport) else None
        return ModelConnectionError(model_name, message, phase=phase)
    if (received := _answered_but_not_a_completion(error)) is not None:
        return UnexpectedModelBehavior(f"{model_name}: the server answered HTTP {received}, but not with a chat completion: {message}")

    status = getattr(error, "status_code", None)
    if isinstance(status, int) and 400 <= status < 600:
        if isinstance(error, litellm.exceptions.ContextWindowExceededError):
            category: type[Any] | None = ModelContextWindowExceededError
        else:
            category = _STATUS_CATEGORIES.get(status, ModelServerError if status >= 500 else None)
        return ModelHTTPError.for_category(
            category,
            status_code=status,
            model_name=model_name,
            body=_error_body(error),
            headers=_error_headers(error),
            provider_error_code=_str_or_none(getattr(error, "code", None)),
            provider_error_type=_str_or_none(getattr(error, "type", None)),
        )
    return ModelAPIError(model_name, message)


def _answered_but_not_a_completion(error: BaseException) -> str | None:
    """The 2xx status the server really sent (``"2xx"`` if unknown), when litellm reports its unusable body as a 500."""
    for exc in _causes(error):
        response = getattr(exc, "response", None)
        if isinstance(response, httpx.Response) and 200 <= response.status_code < 300:
            return str(response.status_code)
        if isinstance(exc, openai.APIResponseValidationError):
            return str(exc.status_code)
        if _is_http_status_error(exc):  # the SDK saw a real error status: not this case
            return None
        if isinstance(exc, json.JSONDecodeError):  # the SDK only parses the body of a successful response
            return "2xx"
        if any(marker in _error_message(exc) for marker in _NOT_A_COMPLETION):
            return "200"
    return None


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
        if isinstance(exc, _TIMEOUT_ERRORS + _TRANSPORT_ERRORS):
            return exc
        if _is_http_status_error(exc):
            return None
    return None


def _is_http_status_error(exc: BaseException) -> bool:
    """An HTTP error status seen by httpx or the provider SDK itself (litellm's subclasses don't count)."""
    if isinstance(exc, httpx.HTTPStatusError):
        return True
    return isinstance(exc, openai.APIStatusError) and not type(exc).__module__.startswith("litellm")


def _is_connect_failure(exc: BaseException) -> bool:
    return any(
        isinstance(e, httpx.ConnectError | ConnectionRefusedError) or type(e).__name__ == "ClientConnectorError" for e in _causes(exc)
    )


def _error_message(error: BaseException) -> str:
    return str(getattr(error, "message", None) or error) or type(error).__name__


def _error_body(error: BaseException) -> object | None:
    body: object | None = getattr(error, "body", None)
    if body is not None:
        return body
    response = getattr(error, "response", None)
    if isinstance(response, httpx.Response):
        try:
            parsed: object = response.json()
            return parsed
        except Exception:
            try:
                return str(response.text) or None
            except Exception:
                return None
    return _error_message(error)


def _error_headers(error: BaseException) -> dict[str, str] | None:
    headers = getattr(error, "litellm_response_headers", None)
    if headers is None:
        response = getattr(error, "response", None)
        headers = getattr(response, "headers", None) if isinstance(response, httpx.Response) else None
    if headers is None:
        return None
    try:
        return {str(k): str(v) for k, v in dict(headers).items()}
    except Exception:
        return None


def _str_or_none(value: object) -> str | None:
    return str(value) if value is not None else None
