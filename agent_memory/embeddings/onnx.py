"""The local model's fast cold path: the same MiniLM run by ONNX Runtime, exported once from torch and cached.

Loading torch and sentence-transformers costs seconds per process; ONNX Runtime and ``tokenizers`` load in a
fraction of that. :class:`OnnxModel` runs a sentence-transformers directory whose modules are a Transformer,
mean pooling and (optionally) Normalize — the packaged all-MiniLM-L6-v2 is one — and returns the same vectors the
torch path does (cosine ≥ 0.999; tests/test_embed_onnx.py).

The graph is exported with ``torch.onnx`` the first time a process needs it (torch is imported then, once) and
cached in :func:`cache_dir` under a key of the model's content (:func:`content_key`: a digest of every file of the
model directory, worked out once per directory and file sizes/mtimes and remembered in ``ids/``), so copies of one
model in several venvs or clones share one export and a changed model is exported again. The export is a folder —
the graph, its weights as external data (memory-mapped on load: a session opens in a fifth of the time a single file
takes), their sizes and SHA-256 digests — written under a temporary name and renamed: a truncated, incomplete,
unreadable or altered export is made again (with a warning), never crashed on or used. Opening checks sizes, and
each file's size, mtime, ctime and inode against those recorded when its digests were last verified
(``checked.json``): the digests are only read again (MiniLM: 61 ms CPU) when one of those changed, so an edited or
replaced file is caught without hashing 90 MB per process (the check costs 0.14 ms CPU a process). Exports no longer used are dropped (:func:`prune`).

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

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_memory.embeddings.base import EmbeddingError, Matrix, quietly

__all__ = ["OnnxModel", "cache_dir", "content_key", "onnx_available", "onnx_fits", "prune"]

log = logging.getLogger("agent_memory")

SMALL_BATCH = 8  # texts a call may hold and still run on the one-thread query session
PREPACK_AFTER = 1  # queries a model answers on the plain session before it opens a prepacked one (None: never)
EXPORT_FORMAT = 2  # bump when the exported graph changes (inputs, opset): old cache files are then ignored (and pruned)
EXPORT_PREFIX = "export-"  # an export's folder: this and the model's content key (older versions: <model dir name>-<24 hex>)
KEEP_EXPORTS = 3  # exports kept beyond the ones used within USED_GRACE_S (the most recently used first)
UNUSED_DAYS = 30  # an export not used for this long is dropped whatever the count
USED_GRACE_S = 3600  # an export used (or a temporary folder written) this recently is never dropped: another process may hold it
KEEP_IDS = 64  # remembered directory → content key entries (each a few bytes; a forgotten one is worked out again)
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


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _stamp(path: Path) -> list[int]:
    """What changes when a file is written, replaced or copied: size, mtime, ctime (which no one can set back) and inode."""
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _write_json(path: Path, data: Any) -> None:
    """``data`` into ``path`` atomically (a temporary file renamed over it): readers see the old or the new text."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def content_key(model_dir: str | os.PathLike[str], cache: str | os.PathLike[str]) -> str:
    """The model's content identity: a digest of each file's relative path and bytes (and the export format), so
    two copies of one model — two venvs, two clones — share one export. Read from ``<cache>/ids/`` when this
    directory with these sizes and mtimes (:func:`model_key`) was digested before; worked out (reading the model
    once: ~60 ms CPU for MiniLM) and remembered otherwise."""
    root = Path(os.path.abspath(os.fspath(model_dir)))
    ids = Path(cache) / "ids"
    where = ids / model_key(root)
    try:
        known = _read_json(where)
        if isinstance(known, dict) and isinstance(known.get("key"), str) and len(known["key"]) == 32:
            if time.time() - where.stat().st_mtime > USED_GRACE_S:
                os.utime(where)  # still used: the newest KEEP_IDS are kept
            return str(known["key"])
    except (OSError, ValueError):
        pass
    h = hashlib.sha256(f"agent-memory onnx export {EXPORT_FORMAT}".encode())
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            full = Path(dirpath) / name
            h.update(f"\0{full.relative_to(root).as_posix()}\0".encode("utf-8", "surrogateescape"))
            h.update(_digest(full).encode())
    key = h.hexdigest()[:32]
    try:
        ids.mkdir(parents=True, exist_ok=True)
        _write_json(where, {"key": key, "model": str(root)})
    except OSError as exc:  # a read-only cache: worked out again next time
        log.debug("could not remember the ONNX model key in %s: %s", ids, exc)
    return key


def prune(cache: str | os.PathLike[str], keep: Path | None = None, *, now: float | None = None) -> list[str]:
    """Drop what the cache no longer needs; returns the names dropped. ``keep`` (the export in use) always stays.

    Dropped: exports of an older format or location scheme (``<name>-<24 hex>``), exports not used for
    :data:`UNUSED_DAYS`, and beyond the :data:`KEEP_EXPORTS` most recently used ones any other; temporary folders
    of an export that did not finish. Nothing touched (used, written) within :data:`USED_GRACE_S` is dropped, so a
    process still opening an export never loses it; a folder is renamed away first (atomic: a reader sees it
    whole or not at all; a session already open keeps its memory-mapped weights) and then deleted. Two processes
    pruning at once each drop what they renamed. Also keeps the :data:`KEEP_IDS` newest entries of ``ids/``."""
    base = Path(cache)
    now = time.time() if now is None else now
    dropped: list[str] = []

    def used(entry: Path) -> float:
        for probe in (entry / "used", entry / "meta.json", entry):
            with contextlib.suppress(OSError):
                return probe.stat().st_mtime
        return now

    try:
        entries = [e for e in base.iterdir() if e.is_dir() and not e.is_symlink()]
    except OSError:
        return dropped
    ours = sorted((e for e in entries if e.name.startswith(EXPORT_PREFIX)), key=used, reverse=True)
    doomed: list[Path] = []
    for rank, entry in enumerate(ours):
        if keep is not None and entry.name == keep.name:
            continue
        age = now - used(entry)
        if age > UNUSED_DAYS * 86400 or (rank >= KEEP_EXPORTS and age > USED_GRACE_S):
            doomed.append(entry)
    for entry in entries:
        old_scheme = len(entry.name) > 25 and entry.name[-25] == "-" and all(c in "0123456789abcdef" for c in entry.name[-24:])
        stale_tmp = entry.name.startswith((".tmp-", ".trash-"))
        if (old_scheme and (entry / "meta.json").exists() or stale_tmp) and now - used(entry) > USED_GRACE_S:
            doomed.append(entry)
    for entry in doomed:
        trash = entry if entry.name.startswith(".trash-") else base / f".trash-{os.getpid()}-{entry.name}"
        try:
            if trash != entry:
                os.rename(entry, trash)
        except OSError:
            continue  # gone already (another process pruned it)
        shutil.rmtree(trash, ignore_errors=True)
        dropped.append(entry.name)
    with contextlib.suppress(OSError):
        known = sorted((base / "ids").iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
        for stale in known[KEEP_IDS:]:
            stale.unlink()
    if dropped:
        log.info("ONNX model cache %s: dropped %d unused export(s)", base, len(dropped))
    return dropped


def seal(folder: Path, model_dir: Path) -> None:
    """Record what an export in ``folder`` (``model.onnx`` and ``model.data`` written) is: ``meta.json`` with the
    files' sizes and SHA-256 digests, ``checked.json`` with their stamps (so the first open reads no digest) and
    ``used``. Done before the folder is renamed into place (a rename leaves its files' stamps as they are)."""
    sizes = {name: (folder / name).stat().st_size for name in _FILES}
    digests = {name: _digest(folder / name) for name in _FILES}
    meta = {"sizes": sizes, "digests": digests, "model": str(model_dir), "format": EXPORT_FORMAT}
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    (folder / "checked.json").write_text(json.dumps({name: _stamp(folder / name) for name in _FILES}), encoding="utf-8")
    (folder / "used").touch()


def model_key(model_dir: str | os.PathLike[str]) -> str:
    """Where and which files the model is: its absolute directory, each file's relative path, size and mtime, and
    the export format (cheap: no file is read). It names the remembered :func:`content_key` of that directory."""
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
        self._path: Path | None = None

    @property
    def path(self) -> Path:
        """The cached export of this model: a folder with ``model.onnx`` (the graph), ``model.data`` (the weights,
        memory-mapped when loaded), ``meta.json`` (their sizes and digests), ``checked.json`` (the files' stamps
        when the digests were last verified) and ``used`` (touched at most hourly by the processes using it)."""
        if self._path is None:
            self._path = self.cache / f"{EXPORT_PREFIX}{content_key(self.model_dir, self.cache)}"
        return self._path

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
            self._mark_used(path)

    def _mark_used(self, path: Path) -> None:
        """Touch the export's ``used`` file when it is older than :data:`USED_GRACE_S` (so at most once an hour,
        one ``stat`` otherwise) and then drop the exports no longer used (:func:`prune`)."""
        used = path / "used"
        try:
            if time.time() - used.stat().st_mtime <= USED_GRACE_S:
                return
            os.utime(used)
        except FileNotFoundError:
            with contextlib.suppress(OSError):
                used.touch()
        except OSError:
            return
        prune(self.cache, keep=path)

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
            meta = _read_json(path / "meta.json")
            sizes = meta["sizes"]
            for name in _FILES:
                got = (path / name).stat().st_size
                if got != int(sizes[name]):
                    raise ValueError(f"{name} has {got} bytes, not {sizes[name]}")
            self._verify(path, meta["digests"])
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

    def _verify(self, path: Path, digests: Any) -> None:
        """Raise ValueError when a file of the export is not the one exported: its digest is read again only when
        its size, mtime, ctime or inode differ from those recorded at the last check (``checked.json``)."""
        stamps = {name: _stamp(path / name) for name in _FILES}
        try:
            if _read_json(path / "checked.json") == stamps:
                return
        except (OSError, ValueError):
            pass
        for name in _FILES:
            if _digest(path / name) != digests[name]:
                raise ValueError(f"{name} is not the file exported (its SHA-256 differs)")
        try:
            _write_json(path / "checked.json", stamps)
        except OSError as exc:  # a read-only cache: checked again next time
            log.debug("could not record the check of %s: %s", path, exc)

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
            seal(tmp, self.model_dir)
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
        prune(self.cache, keep=path)

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
