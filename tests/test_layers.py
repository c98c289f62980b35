"""The package's layers: imports point down only, and the two backends never import each other.

Each folder (or root module) has a rank; a module may import modules of its own rank or below. Imports under
``if TYPE_CHECKING:`` count too (a type is an arrow as well). ``docs/architecture.md`` draws the same table, and a
test below keeps the two in step. ``DEBTS`` lists the arrows still pointing the wrong way, each with what must move to
remove it: a fixed one must leave the list (the test fails while it is listed but gone), a new one fails the test.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = "agent_memory"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE

#: (layer, rank): a module belongs to the longest matching prefix.
LAYERS: dict[str, int] = {
    "errors": 0,
    "_compat": 0,
    "redaction": 1,
    "formats": 2,  # beside model: record files are read with the model, the model is written in the formats
    "model": 2,
    "search": 3,
    "embeddings": 3,
    "sessions": 4,
    "episodes": 4,
    "backends": 5,
    "consolidate": 6,
    "agents": 6,
    "provider": 7,
    "integrations": 7,
    "portable": 7,
    "eval": 7,
    "cli": 8,
    "mcp": 8,
    "": 9,  # agent_memory/__init__: the lazy public surface
}
#: Siblings that must not know each other (backends implement one protocol side by side).
APART = [("backends.files", "backends.postgres")]

#: Known arrows against the layers, each "importer -> imported": what must move to remove it.
DEBTS: dict[str, str] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, name: str) -> set[str]:
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{a.name}" for a in node.names)
    return {m for m in found if m.startswith(PACKAGE)}


def _existing(modules: set[str], target: str) -> str | None:
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def layer_of(module: str) -> str:
    rest = module[len(PACKAGE) + 1 :] if module != PACKAGE else ""
    best = ""
    for layer in LAYERS:
        if layer and (rest == layer or rest.startswith(layer + ".")) and len(layer) > len(best):
            best = layer
    return best


def arrows() -> set[tuple[str, str]]:
    files = {_module_name(p): p for p in ROOT.rglob("*.py")}
    edges = set()
    for name, path in files.items():
        for target in _imports(path, name):
            found = _existing(set(files), target)
            if found and found != name and found != PACKAGE:
                edges.add((name, found))
    return edges


def wrong_way() -> dict[str, str]:
    bad: dict[str, str] = {}
    for src, dst in sorted(arrows()):
        a, b = layer_of(src), layer_of(dst)
        short = f"{src[len(PACKAGE) + 1 :] or PACKAGE} -> {dst[len(PACKAGE) + 1 :]}"
        if LAYERS[b] > LAYERS[a]:
            bad[short] = f"{a or 'root'} (rank {LAYERS[a]}) imports {b} (rank {LAYERS[b]})"
        for x, y in APART:
            inner = src[len(PACKAGE) + 1 :], dst[len(PACKAGE) + 1 :]
            for p, q in ((x, y), (y, x)):
                if (inner[0] == p or inner[0].startswith(p + ".")) and (inner[1] == q or inner[1].startswith(q + ".")):
                    bad[short] = f"{p} imports {q}: backends never import each other"
    return bad


def test_imports_point_down_only() -> None:
    bad = wrong_way()
    new = {k: v for k, v in bad.items() if k not in DEBTS}
    assert not new, "arrows against the layers (move the shared part down, see docs/architecture.md):\n" + "\n".join(
        f"  {k}: {v}" for k, v in new.items()
    )


def test_paid_debts_leave_the_list() -> None:
    gone = sorted(set(DEBTS) - set(wrong_way()))
    assert not gone, f"these arrows are gone: remove them from DEBTS: {gone}"


def test_every_module_has_a_layer() -> None:
    orphans = [m for m in (_module_name(p) for p in ROOT.rglob("*.py")) if m != PACKAGE and not layer_of(m)]
    assert not orphans, f"modules outside every layer (add the folder to LAYERS and docs/architecture.md): {orphans}"


def test_the_checker_sees_an_upward_arrow(tmp_path: Path) -> None:
    """The rule itself: model importing the files backend is reported (so a broken checker cannot pass silently)."""
    assert LAYERS[layer_of("agent_memory.model.records")] < LAYERS[layer_of("agent_memory.backends.files.store")]
    assert layer_of("agent_memory.backends.postgres.search") == "backends"
    src = "from agent_memory.backends.files.store import MemoryStore\n"
    path = tmp_path / "x.py"
    path.write_text(src)
    assert "agent_memory.backends.files.store" in _imports(path, "agent_memory.model.x")


def test_architecture_doc_lists_every_layer() -> None:
    doc = (ROOT.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    for layer, rank in LAYERS.items():
        if layer and not layer.startswith("_"):
            assert re.search(rf"\|\s*{rank}\s*\|[^\n]*`{re.escape(layer)}", doc), f"docs/architecture.md: layer {layer} rank {rank}"


def test_readme_layout_names_every_layer_folder() -> None:
    """The README's layout table names every folder of the package and nothing that is gone."""
    readme = (ROOT.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    named = {n for n in re.findall(r"`([\w.]+)/?`", section) if n[0].islower() and not n.endswith(".md")}
    folders = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders <= named, f"README layout misses: {sorted(folders - named)}"
    for name in named:
        if name.endswith(".py"):
            assert (ROOT / name).exists() or any(ROOT.glob(f"*/{name}")), f"README layout names {name}, which is gone"
        elif "." not in name:
            assert (ROOT / name).is_dir() or any(ROOT.glob(f"*/{name}")), f"README layout names {name}/, which is gone"
