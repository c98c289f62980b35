"""Ranking stage arguments: a value too large for a float is a typed error, not a raw OverflowError (MCP echoed it)."""

from __future__ import annotations

import pytest

from agent_memory.errors import InvalidInputError
from agent_memory.search.tuning import search_stages


@pytest.mark.parametrize("name", ["mmr", "decay_days", "min_score"])
def test_a_huge_integer_is_a_typed_error(name: str) -> None:
    with pytest.raises(InvalidInputError, match="finite number") as err:
        search_stages(**{name: 10**400})
    assert len(str(err.value)) < 200  # the 400 digits are not echoed back
