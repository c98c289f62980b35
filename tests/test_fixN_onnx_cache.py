"""The ONNX model cache (agent_memory/embeddings/onnx.py): an altered export is caught on open and made again, the
check reads no digest while nothing changed, copies of one model share one export, and unused exports are dropped.

The exports here are small real ONNX graphs (one MatMul whose weights are external data), made with ``onnx.helper``
in milliseconds: no torch export runs (tests/test_embed_onnx.py covers the real model and the re-export)."""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path

import pytest

from agent_memory.embeddings import onnx as onnx_mod
from agent_memory.embeddings.onnx import OnnxModel, content_key, onnx_available, prune, seal

pytestmark = pytest.mark.skipif(not onnx_available(), reason="needs the onnx extra (onnxruntime)")


def _model(root: Path, weights: bytes = b"\x01" * 64) -> Path:
    """A stand-in model directory (only its bytes matter to the cache key)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text('{"hidden": 4}')
    (root / "model.safetensors").write_bytes(weights)
    return root


def _export(model: OnnxModel) -> Path:
    """What ``_export`` leaves in place, with a one-MatMul graph whose 256×256 weights live in ``model.data``."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.eye(256, dtype=np.float32), name="w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 256])],
        [w],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    path = model.path
    path.mkdir(parents=True)
    onnx.save_model(proto, str(path / "model.onnx"), save_as_external_data=True, location="model.data", size_threshold=0)
    seal(path, model.model_dir)
    return path


def _xor(path: Path, count: int = 4 << 20) -> None:
    with open(path, "r+b") as f:
        data = f.read(count)
        f.seek(0)
        f.write(bytes(b ^ 0x5A for b in data))


def test_an_altered_copy_of_the_export_is_refused_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    model = OnnxModel(_model(tmp_path / "m"), cache=tmp_path / "cache")
    good = _export(model)
    assert model._open(good) is not None
    copy = OnnxModel(model.model_dir, cache=tmp_path / "copied")
    shutil.copytree(good, copy.path)  # new inodes: the digests are read once, then trusted
    assert copy._open(copy.path) is not None
    _xor(copy.path / "model.data")  # the same size: the old check saw nothing and served wrong vectors
    with caplog.at_level(logging.WARNING, logger="agent_memory"):
        assert copy._open(copy.path) is None  # load() exports it again
    assert "model.data is not the file exported" in caplog.text and "exporting it again" in caplog.text


def test_an_export_altered_in_place_with_its_mtime_put_back_is_refused(tmp_path: Path) -> None:
    model = OnnxModel(_model(tmp_path / "m"), cache=tmp_path / "cache")
    path = _export(model)
    data = path / "model.data"
    before = data.stat()
    time.sleep(0.01)
    _xor(data)
    os.utime(data, ns=(before.st_atime_ns, before.st_mtime_ns))  # size and mtime as they were; the ctime cannot be set
    assert model._open(path) is None


def test_an_unchanged_export_is_opened_without_reading_a_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = OnnxModel(_model(tmp_path / "m"), cache=tmp_path / "cache")
    path = _export(model)

    def no_hashing(path: Path) -> str:
        raise AssertionError(f"{path} was hashed")

    monkeypatch.setattr(onnx_mod, "_digest", no_hashing)
    assert model._open(path) is not None and OnnxModel(model.model_dir, cache=model.cache).path == path  # the key is remembered


def test_an_export_without_digests_is_made_again(tmp_path: Path) -> None:
    import json

    model = OnnxModel(_model(tmp_path / "m"), cache=tmp_path / "cache")
    path = _export(model)
    meta = json.loads((path / "meta.json").read_text())
    del meta["digests"]
    (path / "meta.json").write_text(json.dumps(meta))
    (path / "checked.json").unlink()
    assert model._open(path) is None


def test_copies_of_one_model_share_one_export_and_a_changed_model_gets_another(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    one, two = _model(tmp_path / "venv1" / "model"), _model(tmp_path / "clone" / "model")
    assert OnnxModel(one, cache=cache).path == OnnxModel(two, cache=cache).path
    other = _model(tmp_path / "venv3" / "model", weights=b"\x02" * 64)
    assert content_key(other, cache) != content_key(one, cache)
    (one / "model.safetensors").write_bytes(b"\x03" * 64)  # changed in place: a new size or mtime, digested again
    os.utime(one / "model.safetensors", ns=(1, 1))
    assert content_key(one, cache) not in (content_key(two, cache), content_key(other, cache))


def test_prune_drops_unused_exports_and_keeps_recent_ones(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    now = time.time()
    hour, day = 3600.0, 86400.0

    def folder(name: str, age: float, *, marker: str = "used") -> Path:
        path = cache / name
        path.mkdir(parents=True)
        (path / marker).write_text("{}")
        os.utime(path / marker, (now - age, now - age))
        os.utime(path, (now - age, now - age))
        return path

    keep = folder("export-" + "0" * 32, 90 * day)  # the one in use: kept however old
    folder("export-" + "6" * 32, 60)  # used a minute ago: another process may hold it
    for i in range(2):
        folder(f"export-{i + 1:032x}", (i + 1) * hour * 2)  # with the one above, the three most recently used
    folder("export-" + "4" * 32, 10 * hour)  # beyond the three kept, unused for hours: dropped
    folder("export-" + "5" * 32, 31 * day)  # unused for a month: dropped
    folder("model-" + "a" * 24, 2 * hour, marker="meta.json")  # keyed by path (older versions): dropped
    folder("model-" + "b" * 24, 60, marker="meta.json")  # just written by an older version: not yet
    folder(".tmp-crashed", 2 * hour, marker="model.onnx")
    folder(".tmp-running", 60, marker="model.onnx")
    folder("notes", 90 * day, marker="readme")  # not ours: never touched
    dropped = prune(cache, keep=keep, now=now)
    assert sorted(dropped) == sorted([".tmp-crashed", "export-" + "4" * 32, "export-" + "5" * 32, "model-" + "a" * 24])
    assert not [p for p in cache.iterdir() if p.name.startswith(".trash-")]
    left = {p.name for p in cache.iterdir()}
    assert keep.name in left and "export-" + "6" * 32 in left and "notes" in left and ".tmp-running" in left
    assert prune(cache, keep=keep, now=now) == []  # nothing more to drop
