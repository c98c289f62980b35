"""The two checks every round of stated passwords (tests/test_redact_round11.py – round13.py) makes of its secrets."""

from __future__ import annotations

from agent_memory.redaction import engine, prefilter
from agent_memory.redaction.api import redact


def only_the_value_goes(text: str, secret: str, *, marker: str = "[REDACTED:password]", others: tuple[tuple[str, str], ...] = ()) -> None:
    """``secret`` is gone, ``marker`` is in its place, and putting the values back (``secret`` for each password
    marker, then each of ``others``: (marker, value)) gives ``text``: nothing around the values was touched."""
    out = redact(text).text
    assert secret not in out and marker in out, out
    back = out.replace("[REDACTED:password]", secret)
    for other, value in others:
        back = back.replace(other, value)
    assert back == text  # only the value goes


def never_plain(text: str) -> None:
    """The prefilter (which skips the engine for a text it proves plain) never calls ``text`` plain."""
    assert not prefilter.plain(text, engine._PROSE_TRIGGERS, engine._SPACED_CHARS)
