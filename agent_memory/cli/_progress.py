"""Progress on stderr for long work, drawn by tqdm — only when stderr is a terminal (quiet in pipes).

tqdm is imported only when a bar is actually shown, so scripted use pays nothing for it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any


def enabled() -> bool:
    stream = sys.stderr
    return stream is not None and hasattr(stream, "isatty") and stream.isatty()


def _size() -> dict[str, int]:
    """The terminal's size for tqdm, 80×24 when it reports none (a fresh pty says 0×0 and tqdm would hide the bar)."""
    try:
        columns, lines = os.get_terminal_size(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):
        columns = lines = 0
    return {"ncols": columns or 80, "nrows": lines or 24}


class Progress:
    """A ``progress(n)`` callback (the convention of ``remember_many``) that counts, and draws when enabled."""

    def __init__(self, label: str, total: int | None = None, unit: str = "record", *, show: bool | None = None) -> None:
        self.done = 0
        self._bar: Any = None
        if enabled() if show is None else show:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total, desc=label, unit=f" {unit}s", unit_scale=False, file=sys.stderr, leave=True, mininterval=0.1, **_size()
            )

    @property
    def total(self) -> int | None:
        return None if self._bar is None else self._bar.total

    @total.setter
    def total(self, value: int | None) -> None:
        if self._bar is not None:
            self._bar.total = value
            self._bar.refresh()

    def __call__(self, n: int = 1) -> None:
        first = self.done == 0
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
            if first:  # the first step is drawn at once (tqdm would wait out its mininterval)
                self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


@contextlib.contextmanager
def ticking(label: str) -> Iterator[None]:
    """For work that reports no counts: an elapsed-time line that ticks while the work runs."""
    if not enabled():
        yield
        return
    import threading

    from tqdm import tqdm

    bar = tqdm(total=None, desc=label, file=sys.stderr, bar_format="{desc} … {elapsed}", leave=False, **_size())
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(0.2):
            bar.refresh()

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        bar.close()


def run(fn: Callable[..., Any], label: str, unit: str = "record", total: int | None = None) -> Any:
    """Call ``fn()`` with progress: counted if it takes a ``progress`` callback, else a ticking line."""
    if not enabled():
        return fn()
    import inspect

    try:
        takes_progress = "progress" in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins
        takes_progress = False
    if takes_progress:
        bar = Progress(label, total, unit)
        try:
            return fn(progress=bar)
        finally:
            bar.close()
    with ticking(label):
        return fn()
