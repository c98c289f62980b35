"""The local model's fast cold path: the same MiniLM run by ONNX Runtime, exported once from torch and cached.

Loading torch and sentence-transformers costs seconds per process; ONNX Runtime and ``tokenizers`` load in a
fraction of that. :class:`OnnxModel` runs a sentence-transformers directory whose modules are a Transformer,
mean pooling and (optionally) Normalize — the packaged all-MiniLM-L6-v2 is one — and returns the same vectors the
torch path does (cosine ≥ 0.999; tests/test_embed_onnx.py).

The graph is exported with ``torch.onnx`` the first time a process needs it (torch is imported then, once) and
cached in :func:`cache_dir` under a key of the model's identity (its directory and each file's size and mtime), so
a changed model is exported again. The export is a folder — the graph, its weights as external data (memory-mapped
on load: a session opens in a fifth of the time a single file takes) and their sizes — written under a temporary
name and renamed: a truncated, incomplete or unreadable export is made again, never crashed on.

A query (a batch of at most :data:`SMALL_BATCH` texts) runs on a session with one intra-op thread: ORT's default
of a thread per core cost twice the CPU per query and more wall time on a busy machine (MiniLM, 40 queries at load 8:
23 ms CPU / 64 ms wall each against 11 / 28 with one thread). Larger batches (a backfill) run on a second session
with ORT's default threads, opened on first need (the weights are memory-mapped, so it adds little memory).
``$AGENT_MEMORY_ONNX_THREADS`` overrides the query session's thread count. Prepacking is off for a process's first
:data:`PREPACK_AFTER` query: it costs ~45 ms CPU and ~43 MB when a session opens, a loss for a one-query CLI
process; from the next query on, a long-lived process runs its queries on a prepacked session (opened then, once),
which saves ~3.5 ms CPU a query (MiniLM: 9.6 → 6.0 ms; the same vectors to ~1e-6).

Needs the ``onnx`` extra (``onnxruntime``, ``onnx`` for the export, ``tokenizers``); :func:`onnx_available`
says whether it is installed. Nothing here is imported by the lexical path.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_memory.embeddings.base import EmbeddingError, Matrix, quietly

__all__ = ["OnnxModel", "cache_dir", "onnx_available", "onnx_fits"]

log = logging.getLogger("agent_memory")

SMALL_BATCH = 8  # texts a call may hold and still run on the one-thread query session
PREPACK_AFTER = 1  # queries a model answers on the plain session before it opens a prepacked one (None: never)
EXPORT_FORMAT = 1  # bump when the exported graph changes (inputs, opset): old cache files are then ignored
_RUNTIME = ("onnxruntime", "tokenizers", "numpy")
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_FILES = ("model.onnx", "model.data")
_MEAN_ONLY = {"pooling_mode_mean_tokens": True}
_OTHER_POOLING = (
    "pooling_mode_cls_token",
    "pooling_mode_max_tokens",
    "pooling_mode_mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens",
)


def onnx_available() -> bool:
    """True when the ``onnx`` extra's runtime (onnxruntime, tokenizers, numpy) is installed."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in _RUNTIME)


def cache_dir() -> Path:
    """Where exported models live: ``$AGENT_MEMORY_CACHE_DIR``, else ``$XDG_CACHE_HOME/agent-memory``, else
    ``~/.cache/agent-memory`` (an ``onnx/`` folder inside)."""
    base = os.environ.get("AGENT_MEMORY_CACHE_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(xdg, "agent-memory")
    return Path(base) / "onnx"


def _read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def onnx_fits(model_dir: str | os.PathLike[str]) -> bool:
    """True when a sentence-transformers directory is Transformer → mean pooling (→ Normalize), with a
    ``tokenizer.json``: the shape this runtime reproduces exactly. Anything else stays on the torch path."""
    root = Path(model_dir)
    try:
        modules = _read_json(root / "modules.json")
        if not isinstance(modules, list) or not (root / "tokenizer.json").is_file():
            return False
        kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
        if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]) or modules[0].get("path", ""):
            return False
        pooling = _read_json(root / str(modules[1].get("path", "")) / "config.json")
        return bool(pooling.get("pooling_mode_mean_tokens")) and not any(pooling.get(k) for k in _OTHER_POOLING)
    except (OSError, ValueError, AttributeError, TypeError, IndexError):
        return False


def model_key(model_dir: str | os.PathLike[str]) -> str:
    """The model's identity for the cache: its absolute directory, each file's relative path, size and mtime, and
    the export format (cheap: no file is read)."""
    root = os.path.abspath(os.fspath(model_dir))
    h = hashlib.sha256(f"{EXPORT_FORMAT}\0{root}".encode("utf-8", "surrogateescape"))
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            st = os.stat(full)
            h.update(f"\0{os.path.relpath(full, root)}\0{st.st_size}\0{st.st_mtime_ns}".encode("utf-8", "surrogateescape"))
    return h.hexdigest()[:24]


def _max_length(root: Path) -> int:
    try:
        value = _read_json(root / "sentence_bert_config.json").get("max_seq_length")
    except (OSError, ValueError, AttributeError):
        value = None
    return int(value) if isinstance(value, int) and 0 < value <= 8192 else 512


def _query_threads() -> int:
    """Intra-op threads of the query session: ``$AGENT_MEMORY_ONNX_THREADS`` (0: ORT's default), else 1."""
    raw = os.environ.get("AGENT_MEMORY_ONNX_THREADS", "").strip()
    try:
        value = int(raw) if raw else 1
    except ValueError:
        log.warning("AGENT_MEMORY_ONNX_THREADS=%r is not a number; using one thread", raw)
        return 1
    return min(max(value, 0), 64)


class OnnxModel:
    """One sentence-transformers directory (see :func:`onnx_fits`) on ONNX Runtime: texts in, unit rows out."""

    def __init__(self, model_dir: str | os.PathLike[str], *, cache: str | os.PathLike[str] | None = None) -> None:
        self.model_dir = Path(os.path.abspath(os.fspath(model_dir)))
        self.cache = Path(cache) if cache is not None else cache_dir()
        self.exported = False  # True when this instance ran the export (tests: a second process reuses it)
        self._session: Any = None  # the query session (one intra-op thread unless $AGENT_MEMORY_ONNX_THREADS says)
        self._wide: Any = None  # the batch session (ORT's default threads), opened on the first large batch
        self._packed: Any = None  # the query session with prepacked weights, opened after PREPACK_AFTER queries
        self._queries = 0
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        """The cached export of this model: a folder with ``model.onnx`` (the graph), ``model.data`` (the weights,
        memory-mapped when loaded) and ``meta.json`` (their sizes)."""
        return self.cache / f"{self.model_dir.name}-{model_key(self.model_dir)}"

    def load(self) -> None:
        """Load the tokenizer and the cached graph, exporting it first when absent or unreadable."""
        with self._lock:
            if self._session is not None:
                return
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
            tok.enable_truncation(max_length=_max_length(self.model_dir))
            tok.enable_padding(pad_id=tok.token_to_id("[PAD]") or 0, pad_token="[PAD]")
            path = self.path
            session = self._open(path)
            if session is None:
                self._export(path)
                session = self._open(path)
                if session is None:
                    raise EmbeddingError(f"the exported ONNX model at {path} cannot be loaded")
            self._tokenizer, self._session = tok, session

    def _batch_session(self) -> Any:
        """The session large batches run on: ORT's default thread count (the query session when that is one
        thread anyway, or when this one cannot be opened)."""
        if _query_threads() != 1 or (os.cpu_count() or 1) < 2:
            return self._session
        with self._lock:
            if self._wide is None:
                self._wide = self._open(self.path, threads=0) or self._session
            return self._wide

    def _query_session(self) -> Any:
        """The session a query runs on: the plain one for the first :data:`PREPACK_AFTER` queries, then a prepacked
        one (opened once, by the query that comes after them; the plain one if it cannot be opened)."""
        if self._packed is not None:
            return self._packed
        after = PREPACK_AFTER
        with self._lock:
            self._queries += 1
            if after is None or self._queries <= after:
                return self._session
        packed = self._open(self.path, prepack=True) or self._session
        with self._lock:
            if self._packed is None:
                self._packed = packed
            return self._packed

    def _open(self, path: Path, threads: int | None = None, *, prepack: bool = False) -> Any:
        """The ONNX Runtime session of a cached export, or None when it is missing, truncated or unreadable.
        ``threads``: intra-op threads (None: the query session's, :func:`_query_threads`; 0: ORT's default);
        ``prepack``: weights prepacked when the session opens (slower to open, quicker to run)."""
        try:
            sizes = _read_json(path / "meta.json")["sizes"]
            for name in _FILES:
                got = (path / name).stat().st_size
                if got != int(sizes[name]):
                    raise ValueError(f"{name} has {got} bytes, not {sizes[name]}")
        except FileNotFoundError:
            if path.exists():
                log.warning("ONNX model cache %s is incomplete: exporting it again", path)
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("ONNX model cache %s is damaged (%s): exporting it again", path, exc)
            return None
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only: a library prints nothing on success
        if not prepack:
            options.add_session_config_entry("session.disable_prepacking", "1")  # loads faster; a query is a few tokens
        options.intra_op_num_threads = _query_threads() if threads is None else threads
        try:
            return ort.InferenceSession(str(path / "model.onnx"), sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # a corrupted protobuf: rebuild, never crash
            log.warning("ONNX model cache %s cannot be loaded (%s): exporting it again", path, exc)
            return None

    def _export(self, path: Path) -> None:
        """Export the transformer with torch (imported only here) into a temporary folder, then rename it to
        ``path`` (atomic; a damaged export there is replaced, a concurrent one that won the race is kept)."""
        try:
            import onnx
            import torch
            from transformers import AutoModel
        except ImportError as exc:
            raise EmbeddingError(f"exporting the model to ONNX needs torch, transformers and onnx: {exc}") from exc
        path.parent.mkdir(parents=True, exist_ok=True)
        model = quietly(lambda: AutoModel.from_pretrained(str(self.model_dir), local_files_only=True, attn_implementation="eager").eval())

        class _Hidden(torch.nn.Module):
            def __init__(self, inner: Any) -> None:
                super().__init__()
                self.inner = inner

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                return self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state

        sample = tuple(torch.ones((2, 8), dtype=torch.long) for _ in _INPUTS)
        axes = {name: {0: "batch", 1: "tokens"} for name in (*_INPUTS, "last_hidden_state")}
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=path.parent))
        try:
            import warnings

            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    _Hidden(model),
                    sample,
                    str(tmp / "whole.onnx"),
                    input_names=list(_INPUTS),
                    output_names=["last_hidden_state"],
                    dynamic_axes=axes,
                    opset_version=17,
                    dynamo=False,
                )
            graph = onnx.load(str(tmp / "whole.onnx"))
            onnx.save_model(graph, str(tmp / "model.onnx"), save_as_external_data=True, all_tensors_to_one_file=True, location="model.data")
            (tmp / "whole.onnx").unlink()
            sizes = {name: (tmp / name).stat().st_size for name in _FILES}
            meta = {"sizes": sizes, "model": str(self.model_dir), "format": EXPORT_FORMAT}
            (tmp / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
            if path.exists():  # damaged (we only export when it could not be opened)
                shutil.rmtree(path, ignore_errors=True)
            try:
                os.rename(tmp, path)
            except OSError:
                if not path.is_dir():  # not a concurrent export that got there first
                    raise
        except Exception as exc:
            raise EmbeddingError(f"could not export the local model to ONNX: {exc}") from exc
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.exported = True

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> Matrix:
        """Mean-pooled, L2-normalised embeddings of ``texts`` (stripped, truncated as sentence-transformers does)."""
        import numpy as np

        self.load()
        session = self._query_session() if len(texts) <= SMALL_BATCH else self._batch_session()
        parts = []
        for i in range(0, len(texts), batch_size):
            enc = self._tokenizer.encode_batch([t.strip() for t in texts[i : i + batch_size]])
            ids = np.asarray([e.ids for e in enc], dtype=np.int64)
            mask = np.asarray([e.attention_mask for e in enc], dtype=np.int64)
            types = np.asarray([e.type_ids for e in enc], dtype=np.int64)
            (hidden,) = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            norms[norms == 0] = 1.0
            parts.append((pooled / norms).astype(np.float32))
        return np.vstack(parts)
