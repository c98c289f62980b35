"""Evaluation harnesses (retrieval quality on public benchmarks).

``agent_memory.eval.locomo``: evidence recall@k and budgeted recall coverage on LoCoMo-format files.
"""

from __future__ import annotations

__all__ = ["locomo"]
