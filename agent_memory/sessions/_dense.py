"""Message and summary vectors of session logs: derived data, cached beside each log, computed lazily.

Each message is embedded as ``speaker: text`` with its previous message as a little context (so an answer
finds its question); each summary as its text. A vector is keyed by the SHA-256 of exactly the text that was
embedded, so a changed message (or neighbour) is embedded again and a vector nothing uses any more is dropped
when the file is next saved. The cache lives in ``<session dir>/vectors-<model>.npz`` (a new model means a new
file; the session's purge removes the directory and so the vectors) and in memory. Vectors are made at search
time, in batches, never on an append; a failure to save them is ignored (they are made again next time), and an
embedder failure is raised as :class:`~agent_memory.embeddings.EmbeddingError` for the caller to fall back on.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from .._fs import atomic_write
from ..embeddings import Embedder, EmbeddingError
from ..purge import register_purger
from ._files import SessionDir, SessionMessage, SessionSummary

__all__ = ["SessionVectors", "message_text", "clear_memory"]

Matrix = npt.NDArray[np.float32]
BATCH = 128
CONTEXT_CHARS = 200

_MEMORY: dict[tuple[str, str], dict[str, Matrix]] = {}  # (session dir, model) -> {text hash: vector}
_LOCK = threading.Lock()


def message_text(messages: Sequence[SessionMessage], i: int) -> str:
    """What is embedded for message ``i``: its speaker and text, then the previous message as context."""
    m = messages[i]
    own = f"{m.speaker}: {m.text}" if m.speaker else m.text
    if i == 0:
        return own
    p = messages[i - 1]
    prev = (f"{p.speaker}: {p.text}" if p.speaker else p.text)[:CONTEXT_CHARS]
    return f"{own}\n(replying to {prev})"


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _file(sdir: SessionDir, model: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", model).strip(".-")[:60] or "model"
    return Path(sdir.path) / f"vectors-{slug}-{_key(model)[:8]}.npz"


def clear_memory(root: Path | None = None, user_id: str | None = None, session_id: str | None = None) -> int:
    """Forget the vectors held in memory (registered as a purger: the files go with the purged session
    directories, and no copy of a purged message's vector may outlive them in this process). Returns 0: it
    removes no stored item of its own."""
    with _LOCK:
        _MEMORY.clear()
    return 0


register_purger(clear_memory)


class SessionVectors:
    """Vectors of the messages and summaries of session logs for one embedder."""

    def __init__(self, embedder: Embedder, *, persist: bool = True) -> None:
        self.embedder = embedder
        self.model = embedder.name
        self.persist = persist
        self.embedded = 0  # texts embedded by this object (tests and traces)

    def _loaded(self, sdir: SessionDir) -> dict[str, Matrix]:
        key = (str(sdir.path), self.model)
        with _LOCK:
            held = _MEMORY.get(key)
        if held is not None:
            return held
        found: dict[str, Matrix] = {}
        path = _file(sdir, self.model)
        if self.persist and path.is_file():
            with contextlib.suppress(Exception):  # an unreadable cache is rebuilt, never an error
                with np.load(path, allow_pickle=False) as data:
                    if str(data["model"]) == self.model:
                        found = {str(h): v.astype(np.float32) for h, v in zip(data["keys"], data["vectors"], strict=True)}
        with _LOCK:
            _MEMORY[key] = found
        return found

    def _save(self, sdir: SessionDir, held: dict[str, Matrix], used: set[str]) -> None:
        keep = [k for k in held if k in used]
        for k in [k for k in held if k not in used]:
            del held[k]
        if not self.persist or not Path(sdir.path).is_dir():
            return
        buf = io.BytesIO()
        vectors = np.stack([held[k] for k in keep]) if keep else np.zeros((0, 0), dtype=np.float32)
        np.savez(buf, model=np.array(self.model), keys=np.array(keep), vectors=vectors)
        with contextlib.suppress(OSError):  # derived data: made again next time
            atomic_write(_file(sdir, self.model), buf.getvalue(), durable=False)

    def vectors(self, logs: Sequence[tuple[SessionDir, Sequence[SessionMessage], SessionSummary | None]]
                ) -> list[tuple[Matrix, Matrix | None]]:
        """Per log: its messages' vectors (one row each) and its summary's vector (or None); missing ones are
        embedded now, in batches across all logs, and saved beside each log."""
        texts: list[list[str]] = []
        held: list[dict[str, Matrix]] = []
        missing: dict[str, str] = {}
        for sdir, msgs, summary in logs:
            own = [message_text(msgs, i) for i in range(len(msgs))] + ([summary.text] if summary else [])
            texts.append(own)
            cache = self._loaded(sdir)
            held.append(cache)
            for t in own:
                k = _key(t)
                if k not in cache:
                    missing.setdefault(k, t)
        fresh: dict[str, Matrix] = {}
        items = list(missing.items())
        for start in range(0, len(items), BATCH):
            chunk = items[start:start + BATCH]
            out = self.embedder.embed([t for _, t in chunk])
            if out.shape[0] != len(chunk):
                raise EmbeddingError(f"{self.model} returned {out.shape[0]} vectors for {len(chunk)} texts")
            fresh.update({k: out[j] for j, (k, _) in enumerate(chunk)})
        self.embedded += len(items)
        result: list[tuple[Matrix, Matrix | None]] = []
        dim = next(iter(fresh.values())).shape[0] if fresh else None
        for (sdir, msgs, summary), own, cache in zip(logs, texts, held, strict=True):
            keys = [_key(t) for t in own]
            added = [k for k in keys if k in fresh and k not in cache]
            for k in added:
                cache[k] = fresh[k]
            if added or len(cache) > len(set(keys)):
                self._save(sdir, cache, set(keys))
            rows = [cache[k] for k in keys]
            if dim is None and rows:
                dim = rows[0].shape[0]
            n = len(msgs)
            mat = np.stack(rows[:n]).astype(np.float32) if n else np.zeros((0, dim or 1), dtype=np.float32)
            result.append((mat, rows[n] if summary else None))
        return result
