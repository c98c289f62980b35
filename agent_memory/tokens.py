"""Offline token counting with tiktoken, using the encodings litellm ships.

tiktoken downloads encodings on first use unless ``TIKTOKEN_CACHE_DIR`` points at a copy.
litellm ships cl100k_base, o200k_base and p50k_base; we point tiktoken there for the
duration of one load and restore the caller's environment afterwards.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import os
import threading
import warnings
from collections.abc import Callable
from pathlib import Path

DEFAULT_ENCODING = "cl100k_base"
_env_lock = threading.Lock()


def _litellm_tokenizer_dir() -> Path | None:
    spec = importlib.util.find_spec("litellm")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
    return path if path.is_dir() else None


@functools.lru_cache(maxsize=4)
def get_counter(encoding: str = DEFAULT_ENCODING) -> Callable[[str], int]:
    """Return a function counting tokens of ``encoding``; never touches the network.

    Falls back (with a warning) to a conservative bytes/3 estimate if no local encoding exists.
    """
    try:
        import tiktoken

        cache = _litellm_tokenizer_dir()
        with _env_lock:
            saved = os.environ.get("TIKTOKEN_CACHE_DIR")
            if cache is not None and saved is None:
                os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
            try:
                enc = tiktoken.get_encoding(encoding)
            finally:
                if saved is None:
                    os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        return lambda text: len(enc.encode(text, disallowed_special=()))
    except Exception as exc:  # pragma: no cover - depends on the machine
        warnings.warn(f"tiktoken encoding {encoding!r} unavailable offline ({exc}); estimating tokens", stacklevel=2)
        return lambda text: math.ceil(len(text.encode("utf-8")) / 3)


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Number of tokens in ``text`` under ``encoding`` (cl100k_base by default)."""
    return get_counter(encoding)(text) if text else 0
