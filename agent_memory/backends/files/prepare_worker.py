"""A big ``remember_many`` prepares its drafts on the second core: while the store writes one batch, a worker
process validates and redacts the next (:func:`agent_memory.model.drafts.prepare_draft`) and checks the stems of
the ids the store will mint for it (:func:`agent_memory.model.values.stem_verdicts`), the two costs of a write
that need nothing of the store.

The worker is this module run as ``python -m`` (a fresh interpreter: never a fork of a process that may hold
threads and connections, and the caller's ``__main__`` is never imported again), fed one batch at a time over a
pipe (length-prefixed pickles), one batch outstanding. It runs the very code of this process (the same package
directory first on its path: it says which it imported, and a different one is not used) and it returns, in
order, each draft prepared or the typed error the draft raised, and the verdicts, which the store remembers so the
mint costs no engine pass. Nothing leaves the worker but what ``prepare_draft`` made: the records are redacted
there exactly as here, with the import's ``RESTORING`` passed along (the one context
``prepare_draft`` reads).

It is used only for a sized input of at least :data:`MIN_DRAFTS` drafts (``AGENT_MEMORY_DRAFT_WORKER``: ``0``
never, ``1`` for any size of two batches or more) and fails open: a worker that cannot start, dies or answers
nonsense is dropped and the drafts are prepared in this process, as without it.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import struct
import subprocess
import sys
from collections.abc import Sequence
from typing import IO, Any

from agent_memory.backends.files.lifecycle import PROVENANCE
from agent_memory.errors import InvalidInputError
from agent_memory.model.drafts import RESTORING, MemoryDraft, explicit_fields, prepare_draft
from agent_memory.model.records import MemoryRecord, Scope
from agent_memory.model.values import id_stem, remember_verdicts, stem_verdicts

MIN_DRAFTS = 4000
COMMAND = ["-m", "agent_memory.backends.files.prepare_worker"]  # the worker, after sys.executable
Prepared = tuple[MemoryRecord, int, str, frozenset[str]]  # keyed.Prepared
Item = Prepared | InvalidInputError
_LEN = struct.Struct("!Q")
_THIS = os.path.abspath(__file__)  # the worker must be this very file (the same package)


def prepare_item(draft: MemoryDraft, source: str, default_scope: Scope | None) -> Prepared:
    """One draft as the store writes it (raises :class:`InvalidInputError`)."""
    rec, redactions = prepare_draft(draft, source, default_scope)
    if PROVENANCE in rec.metadata and source != "import":
        rec = rec.replace(metadata={k: v for k, v in rec.metadata.items() if k != PROVENANCE})
    return rec, redactions, draft.on_existing, explicit_fields(draft)


def prepare_batch(drafts: Sequence[MemoryDraft], source: str, default_scope: Scope | None) -> tuple[list[Item], dict[str, bool]]:
    """Each draft prepared (or its error), and the verdicts on the stems of the ids minted for them."""
    items: list[Item] = []
    for draft in drafts:
        try:
            items.append(prepare_item(draft, source, default_scope))
        except InvalidInputError as exc:
            items.append(exc)
    stems = {id_stem(it[0].memory_key or it[0].title, it[0].created) for it in items if not isinstance(it, InvalidInputError)}
    return items, stem_verdicts(stems)


def _send(fh: IO[bytes], obj: object) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    fh.write(_LEN.pack(len(data)) + data)
    fh.flush()


def _receive(fh: IO[bytes]) -> Any:
    head = fh.read(_LEN.size)
    if len(head) < _LEN.size:
        raise EOFError("the draft worker closed its pipe")
    (size,) = _LEN.unpack(head)
    data = fh.read(size)
    if len(data) < size:
        raise EOFError("the draft worker closed its pipe")
    return pickle.loads(data)  # noqa: S301 - our own child, over its private pipe


def _python_interpreter() -> bool:
    """Whether ``sys.executable`` is a Python to start (embedded hosts — uWSGI, a frozen app — name their own binary,
    which ``-m`` would not run as this module)."""
    name = os.path.basename(sys.executable or "").lower()
    return name.startswith(("python", "pypy")) and not getattr(sys, "frozen", False)


def wanted(drafts: object, batch_size: int) -> bool:
    """Whether a ``remember_many`` of ``drafts`` uses a worker (see the module docstring)."""
    setting = os.environ.get("AGENT_MEMORY_DRAFT_WORKER", "")
    if setting == "0" or not isinstance(drafts, Sequence) or not _python_interpreter():
        return False
    size = len(drafts)
    return size > batch_size if setting == "1" else size >= max(MIN_DRAFTS, 2 * batch_size)


class DraftWorker:
    """One worker process; :meth:`submit` a batch, then :meth:`result` (None: prepare it here instead)."""

    def __init__(self) -> None:
        self._package = _THIS
        package_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(_THIS))))  # above agent_memory/
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (package_dir, os.environ.get("PYTHONPATH")) if p)}
        self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, *COMMAND],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=package_dir,
        )
        self._checked = False
        self._pending = False
        self.batches = 0  # how many batches it prepared

    def submit(self, drafts: Sequence[MemoryDraft], source: str, default_scope: Scope | None) -> bool:
        """Hand a batch over; False if the worker is gone (prepare the batch here)."""
        if self._proc is None or self._pending:
            return False
        try:
            assert self._proc.stdin is not None
            _send(self._proc.stdin, (list(drafts), source, default_scope, RESTORING.get()))
        except (OSError, ValueError, pickle.PicklingError, TypeError, AttributeError, RecursionError):
            self.close()
            return False
        self._pending = True
        return True

    def result(self, expected: int) -> list[Item] | None:
        """The submitted batch prepared, in order; None if the worker failed (it is then closed)."""
        if self._proc is None or not self._pending:
            return None
        self._pending = False
        try:
            assert self._proc.stdout is not None
            if not self._checked:
                hello = _receive(self._proc.stdout)
                if hello != ("agent_memory", self._package):
                    raise ValueError(f"the draft worker runs another package: {hello!r}")
                self._checked = True
            answer = _receive(self._proc.stdout)
            items, verdicts = answer
            if not isinstance(items, list) or len(items) != expected or not isinstance(verdicts, dict):
                raise ValueError("the draft worker answered out of step")
            if not all(isinstance(it, InvalidInputError) or (isinstance(it, tuple) and isinstance(it[0], MemoryRecord)) for it in items):
                raise ValueError("the draft worker answered something else")
        except Exception:  # noqa: BLE001 - fail open: the batch is prepared here
            self.close()
            return None
        remember_verdicts(verdicts)
        self.batches += 1
        return items

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for pipe in (proc.stdin, proc.stdout):  # end of input; an answer nobody reads fails its write
            with contextlib.suppress(OSError, ValueError):
                if pipe is not None:
                    pipe.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> int:
    """The worker's loop: a batch in, its preparation out, until the pipe closes."""
    out = sys.stdout.buffer
    inp = sys.stdin.buffer
    _send(out, ("agent_memory", _THIS))
    while True:
        try:
            drafts, source, default_scope, restoring = _receive(inp)
        except EOFError:
            return 0
        token = RESTORING.set(bool(restoring))
        try:
            _send(out, prepare_batch(drafts, source, default_scope))
        finally:
            RESTORING.reset(token)


if __name__ == "__main__":
    raise SystemExit(main())
