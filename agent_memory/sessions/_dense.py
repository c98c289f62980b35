"""Message and summary vectors of session logs: derived data, cached beside each log, computed lazily.

Each message is embedded as ``speaker: text`` with its previous message as a little context (so an answer
finds its question); a message of several sentences also sentence by sentence (``speaker: sentence``), so one
fact in a long message is not averaged away by the rest: a message's cosine to a query is the best of its own
and its sentences'. Each summary is embedded as its text. A vector is keyed by the SHA-256 of exactly the text that was
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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from agent_memory.embeddings import Embedder, EmbeddingError
from agent_memory.formats.atomic import atomic_write
from agent_memory.sessions._files import SessionDir, SessionMessage, SessionSummary

__all__ = ["LogVectors", "SessionVectors", "message_text", "sentence_texts", "clear_memory"]

Matrix = npt.NDArray[np.float32]
BATCH = 128
CONTEXT_CHARS = 200
MAX_SENTENCES = 16  # sentences embedded on their own per message (the rest count through the message's vector)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")

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


def sentence_texts(m: SessionMessage) -> list[str]:
    """The sentences of a message of more than one (up to :data:`MAX_SENTENCES`), each as ``speaker: sentence``;
    ``[]`` for a message of one sentence (its own vector says it all)."""
    parts = [p.strip() for p in _SENTENCE_END.split(m.text.strip()) if len(p.strip()) > 3]
    if len(parts) < 2:
        return []
    return [f"{m.speaker}: {p}" if m.speaker else p for p in parts[:MAX_SENTENCES]]


@dataclass(frozen=True)
class LogVectors:
    """One log's vectors: a row per message, its summary's (or None), and its messages' sentences with the
    index of the message each belongs to."""

    messages: Matrix
    summary: Matrix | None
    sentences: Matrix
    owners: npt.NDArray[np.intp]

    def cosines(self, query: Matrix) -> tuple[Matrix, Matrix]:
        """Per message: its own vector's cosine to ``query``, and the best of that and its sentences'."""
        own = (self.messages @ query).astype(np.float32)
        best = own.copy()
        if self.sentences.shape[0]:
            np.maximum.at(best, self.owners, (self.sentences @ query).astype(np.float32))
        return own, best


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _file(sdir: SessionDir, model: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", model).strip(".-")[:60] or "model"
    return Path(sdir.path) / f"vectors-{slug}-{_key(model)[:8]}.npz"


def clear_memory(root: Path | None = None, user_id: str | None = None, session_id: str | None = None) -> int:
    """Forget the vectors held in memory (called by :func:`agent_memory.sessions.store.purge_sessions`: the files
    go with the purged session directories, and no copy of a purged message's vector may outlive them in this
    process). Returns 0: it removes no stored item of its own."""
    with _LOCK:
        _MEMORY.clear()
    return 0


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

    def vectors(self, logs: Sequence[tuple[SessionDir, Sequence[SessionMessage], SessionSummary | None]]) -> list[LogVectors]:
        """Per log: its messages', summary's and sentences' vectors; missing ones are embedded now, in batches
        across all logs, and saved beside each log."""
        texts: list[tuple[list[str], list[str], list[int]]] = []
        held: list[dict[str, Matrix]] = []
        missing: dict[str, str] = {}
        for sdir, msgs, summary in logs:
            own = [message_text(msgs, i) for i in range(len(msgs))] + ([summary.text] if summary else [])
            sentences: list[str] = []
            owners: list[int] = []
            for i, m in enumerate(msgs):
                parts = sentence_texts(m)
                sentences.extend(parts)
                owners.extend([i] * len(parts))
            texts.append((own, sentences, owners))
            cache = self._loaded(sdir)
            held.append(cache)
            for t in own + sentences:
                k = _key(t)
                if k not in cache:
                    missing.setdefault(k, t)
        fresh: dict[str, Matrix] = {}
        items = list(missing.items())
        for start in range(0, len(items), BATCH):
            chunk = items[start : start + BATCH]
            out = self.embedder.embed([t for _, t in chunk])
            if out.shape[0] != len(chunk):
                raise EmbeddingError(f"{self.model} returned {out.shape[0]} vectors for {len(chunk)} texts")
            fresh.update({k: out[j] for j, (k, _) in enumerate(chunk)})
        self.embedded += len(items)
        result: list[LogVectors] = []
        dim = next(iter(fresh.values())).shape[0] if fresh else None
        for (sdir, msgs, summary), (own, sentences, owners), cache in zip(logs, texts, held, strict=True):
            keys = [_key(t) for t in own]
            skeys = [_key(t) for t in sentences]
            added = [k for k in keys + skeys if k in fresh and k not in cache]
            for k in added:
                cache[k] = fresh[k]
            used = set(keys) | set(skeys)
            if added or len(cache) > len(used):
                self._save(sdir, cache, used)
            rows = [cache[k] for k in keys]
            if dim is None and rows:
                dim = rows[0].shape[0]
            n = len(msgs)
            width = dim or 1
            mat = np.stack(rows[:n]).astype(np.float32) if n else np.zeros((0, width), dtype=np.float32)
            sent = np.stack([cache[k] for k in skeys]).astype(np.float32) if skeys else np.zeros((0, width), dtype=np.float32)
            result.append(LogVectors(mat, rows[n] if summary else None, sent, np.asarray(owners, dtype=np.intp)))
        return result
