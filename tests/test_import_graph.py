"""No import cycle anywhere in agent_memory/ (static: every import, module- or function-level).

Imports under ``if TYPE_CHECKING:`` count too (issue 28): a module that names another's type depends on
it as much as one that calls it, and a cycle hidden behind ``TYPE_CHECKING`` is still a cycle of design.
A cycle is reported as the module chain that closes it, so the failure says which dependency to cut.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = "agent_memory"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement at any depth: module level, in functions, under ``if TYPE_CHECKING:`` or not."""
    return [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the agent_memory modules it imports, type-only imports included (``from pkg import sub`` counts sub)."""
    files = {_module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _resolve(name, is_package, node)
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base for alias in node.names]
            for target in targets:
                while target and target not in files:  # `import agent_memory.x.y` -> the deepest module we have
                    target = target.rpartition(".")[0]
                if target.startswith(PACKAGE) and target != name:
                    graph[name].add(target)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one module (Tarjan), as a closed chain."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return [_chain(graph, set(c)) for c in components]


def _chain(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest closed path through ``component`` starting at its first module."""
    start = min(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & component):
            if w == start:
                return paths[v] + [start]
            if w not in paths:
                paths[w] = paths[v] + [w]
                queue.append(w)
    return sorted(component)  # pragma: no cover - a component always closes


# Cycles other engineers are removing on their branches; each entry must still exist (so it is deleted
# here once fixed), and no other cycle may appear. Target: empty.
KNOWN_CYCLES: set[frozenset[str]] = set()


def test_agent_memory_has_no_import_cycle() -> None:
    cycles = find_cycles(import_graph())
    new = [c for c in cycles if frozenset(c) not in KNOWN_CYCLES]
    assert not new, "import cycles in agent_memory/:\n" + "\n".join(" -> ".join(c) for c in new)
    gone = KNOWN_CYCLES - {frozenset(c) for c in cycles}
    assert not gone, f"fixed, remove from KNOWN_CYCLES: {sorted(map(sorted, gone))}"


def _self_as_any(tree: ast.AST) -> list[int]:
    """Lines of methods whose ``self`` is annotated ``Any``: the mark of a mixin typed against a host it cannot name."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.args.args
        and node.args.args[0].arg == "self"
        and isinstance(node.args.args[0].annotation, ast.Name)
        and node.args.args[0].annotation.id == "Any"
    ]


def test_no_mixin_declares_its_host() -> None:
    """Issue 28: helpers that reach into a class's privates fold back into it or use a public interface; no mixin
    whose methods take ``self: Any`` to reach attributes their host declares."""
    found = [
        f"{path.relative_to(ROOT.parent)}:{line}"
        for path in sorted(ROOT.rglob("*.py"))
        for line in _self_as_any(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    ]
    assert not found, "methods typed against a host they cannot name (self: Any):\n" + "\n".join(found)


def test_the_mixin_check_finds_self_as_any() -> None:
    tree = ast.parse("from typing import Any\nclass M:\n    def a(self: Any) -> None: ...\n    def b(self) -> None: ...\n")
    assert _self_as_any(tree) == [3]


def _write(root: Path, files: dict[str, str]) -> Path:
    pkg = root / PACKAGE
    for rel, text in files.items():
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return pkg


@pytest.mark.parametrize(
    "files, expected",
    [
        (
            {"__init__.py": "", "a.py": "from . import b\n", "b.py": "from .a import thing\n"},
            [["agent_memory.a", "agent_memory.b", "agent_memory.a"]],
        ),
        # a function-level import closes a cycle too
        (
            {
                "__init__.py": "",
                "a.py": "def f():\n    from .sub.c import x\n",
                "sub/__init__.py": "",
                "sub/c.py": "import agent_memory.a\n",
            },
            [["agent_memory.a", "agent_memory.sub.c", "agent_memory.a"]],
        ),
        # TYPE_CHECKING imports count (a type-only dependency is a dependency), and so does their else branch
        (
            {
                "__init__.py": "",
                "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
                "b.py": "from .a import A\n",
            },
            [["agent_memory.a", "agent_memory.b", "agent_memory.a"]],
        ),
        (
            {
                "__init__.py": "",
                "a.py": "import typing\nif typing.TYPE_CHECKING:\n    from .b import B\n",
                "b.py": "def f():\n    from .a import A\n",
            },
            [["agent_memory.a", "agent_memory.b", "agent_memory.a"]],
        ),
        (
            {
                "__init__.py": "",
                "a.py": "import typing\nif typing.TYPE_CHECKING:\n    pass\nelse:\n    from .b import B\n",
                "b.py": "from .a import A\n",
            },
            [["agent_memory.a", "agent_memory.b", "agent_memory.a"]],
        ),
        # the package __init__ re-exporting a module that imports the package is a cycle
        (
            {"__init__.py": "from .x import X\n", "x.py": "from agent_memory import Y\n"},
            [["agent_memory", "agent_memory.x", "agent_memory"]],
        ),
        ({"__init__.py": "", "a.py": "from .b import f\n", "b.py": "import json\n"}, []),
    ],
)
def test_the_checker_finds_cycles_it_should(tmp_path: Path, files: dict[str, str], expected: list[list[str]]) -> None:
    assert find_cycles(import_graph(_write(tmp_path, files))) == expected
