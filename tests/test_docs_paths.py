"""The docs name what exists: every path, module and name README.md and docs/*.md mention is in the package.

After the move into layer folders the docs kept naming flat modules (``agent_memory/embeddings.py``, "the
``search.py`` docstring") and a rewrite script turned SQL table names into module paths. So:

- every ``agent_memory/<path>.py`` / ``agent_memory/<dir>/`` and every ``tests/``, ``benchmarks/``, ``examples/``
  file named exists; a package-relative path (``backends/files/fts.py``) exists under ``agent_memory/``;
- a bare ``<name>.py`` names a file that exists somewhere in the repository, and not an old flat module that is a
  package now (``search.py``), unless the text says where it is now (``… , now `formats/yaml_loader.py```);
- every dotted ``agent_memory.x.y`` outside SQL blocks imports (a module, or a name of one); an old flat path that
  ``agent_memory/_compat.py`` still serves is allowed only in a paragraph that calls it old;
- ``agent_memory.<table>`` in a SQL block is a table the PostgreSQL schema creates;
- a few field lists and capability claims the docs spell out match the code.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path

import pytest

from agent_memory._compat import _new_name

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "agent_memory"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
TOP = ("agent_memory/", "tests/", "benchmarks/", "examples/", "docs/", "profiles/")


def _where(doc: Path, text: str, pos: int) -> str:
    return f"{doc.relative_to(ROOT)}:{text.count(chr(10), 0, pos) + 1}"


def _prose(text: str) -> str:
    """The text with SQL blocks blanked (same length, so positions keep their line numbers)."""
    return FENCE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)) if m.group(1) == "sql" else m.group(0), text)


def _paragraph(text: str, pos: int) -> str:
    start = text.rfind("\n\n", 0, pos)
    end = text.find("\n\n", pos)
    return text[start + 1 : len(text) if end < 0 else end]


def _mentions(pattern: str, *, prose: bool = True) -> Iterator[tuple[str, str, str, int]]:
    """``(where, match, text, position)`` for every match of ``pattern`` in the docs."""
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        body = _prose(text) if prose else text
        for m in re.finditer(pattern, body):
            yield _where(doc, text, m.start()), m.group(1), body, m.start()


PATHS = list(_mentions(r"(?<![\w/.-])((?:agent_memory|tests|benchmarks|examples|docs|profiles)/[\w/.*-]*[\w/])"))
BARE = list(_mentions(r"`(?:[\w.-]+/)*?([\w-]+\.py)\b"))
DOTTED = list(_mentions(r"(?<![\w/.])(agent_memory(?:\.[A-Za-z_]\w*)+)"))
SQL_NAMES = [
    (w, name)
    for doc in DOCS
    for m in FENCE.finditer(doc.read_text(encoding="utf-8"))
    if m.group(1) == "sql"
    for name in re.findall(r"agent_memory\.([\w.]+)", m.group(2))
    for w in [_where(doc, doc.read_text(encoding="utf-8"), m.start())]
]


def test_the_docs_name_paths_and_modules() -> None:
    assert len(PATHS) > 50 and len(DOTTED) > 30 and len(BARE) > 50  # the patterns still find what they look for


def test_every_named_path_exists() -> None:
    missing = []
    for where, path, _, _ in PATHS:
        if "*" in path or "<" in path:
            continue
        if not (ROOT / path).exists():
            missing.append(f"{where}: {path}")
    assert not missing, "the docs name paths that do not exist:\n" + "\n".join(missing)


def test_package_relative_paths_exist() -> None:
    """``backends/files/fts.py``, ``model/scopes.py``: a path with a folder, written relative to the package."""
    missing = []
    for where, _, text, pos in BARE:
        full = re.match(r"`([\w./-]+\.py)", text[pos:])
        assert full is not None
        path = full.group(1)
        if "/" not in path or path.startswith(TOP):
            continue
        if not ((PKG / path).exists() or (ROOT / path).exists()):
            missing.append(f"{where}: {path}")
    assert not missing, "the docs name package files that do not exist:\n" + "\n".join(missing)


def _all_files() -> set[str]:
    return {p.name for top in ("agent_memory", "tests", "benchmarks", "examples") for p in (ROOT / top).rglob("*.py")} | {
        p.name for p in ROOT.glob("*.py")
    }


def test_bare_file_names_exist_or_say_where_they_are_now() -> None:
    names = _all_files()
    packages = {p.name for p in PKG.rglob("*") if p.is_dir() and (p / "__init__.py").exists()}
    wrong = []
    for where, name, text, pos in BARE:
        full = re.match(r"`([\w./-]+\.py)", text[pos:])
        assert full is not None
        if "/" in full.group(1):
            continue  # checked as a path
        said_now = re.search(r"\bnow\b[^.;]{0,80}`[\w/]+\.py`", text[pos : pos + 200])
        stem = name[: -len(".py")]
        if stem in packages and not said_now:
            wrong.append(f"{where}: {name} is a package now ({stem}/): name the module in it")
        elif name not in names and not said_now:
            wrong.append(f"{where}: no file {name} (say where it is now: `… , now `path/to/it.py``)")
    assert not wrong, "\n".join(wrong)


def _resolve(name: str) -> tuple[str, str | None]:
    """``(module, attribute path)`` of the longest importable module prefix of ``name``."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        module = ".".join(parts[:i])
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            return module, ".".join(parts[i:]) or None
    raise AssertionError(f"nothing of {name} imports")


def test_every_dotted_name_imports_and_old_paths_are_marked() -> None:
    wrong = []
    for where, name, text, pos in DOTTED:
        if _new_name(name) is not None:
            if not re.search(r"\bold\b", _paragraph(text, pos), re.I):
                wrong.append(f"{where}: {name} is an old path (now {_new_name(name)}): use the new one or call it old")
            continue
        try:
            module, attr = _resolve(name)
        except AssertionError as exc:
            wrong.append(f"{where}: {exc}")
            continue
        if attr is None:
            continue
        obj: object = importlib.import_module(module)
        for part in attr.split("."):
            if not hasattr(obj, part):
                wrong.append(f"{where}: {module} has no {attr}")
                break
            obj = getattr(obj, part)
    assert not wrong, "\n".join(wrong)


def test_sql_blocks_name_tables_the_schema_creates() -> None:
    schema = (PKG / "backends" / "postgres" / "schema.py").read_text(encoding="utf-8")
    tables = set(re.findall(r'CREATE TABLE IF NOT EXISTS "\{s\}"\.(\w+)', schema))
    assert {"records", "archive", "user_md", "record_vectors"} <= tables
    assert SQL_NAMES, "docs/postgres.md's Citus example names the schema's tables"
    wrong = [f"{where}: agent_memory.{name}" for where, name in SQL_NAMES if name not in tables]
    assert not wrong, "SQL blocks name tables the schema does not create:\n" + "\n".join(wrong)


# -- field lists the docs spell out ------------------------------------------------------------------------------


def test_export_doc_lists_every_jsonl_field_in_order() -> None:
    from agent_memory.portable.export import EXPORT_FIELDS

    text = (ROOT / "docs" / "export.md").read_text(encoding="utf-8")
    m = re.search(r"every field in a fixed order — `([^`]+)`", text)
    assert m is not None
    assert [f.strip() for f in m.group(1).split(",")] == list(EXPORT_FIELDS)


def test_readme_names_a_hits_real_fields() -> None:
    from agent_memory.search.types import SearchHit

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"\.hits: ([\w, ]+)", text)
    assert m is not None
    named = [f.strip() for f in m.group(1).split(",") if f.strip()]
    assert named and set(named) <= {f.name for f in fields(SearchHit)}, named


# -- capability claims: a doc must not say "not yet" about what the code does -----------------------------------


def _mcp_time_params() -> bool:
    from agent_memory.mcp._tools import SPECS

    return all({"as_of", "include_superseded"} <= {p.name for p in SPECS[t].params} for t in ("memory_search", "memory_list"))


def _pg_has(*members: str) -> bool:
    from agent_memory.backends.postgres.backend import PostgresBackend

    return all(hasattr(PostgresBackend, m) for m in members)


def _hooks_pass_turn_time() -> bool:
    from agent_memory.integrations.hooks import MemoryHooks

    return "at=" in inspect.getsource(MemoryHooks.on_turn_end)


def _capability_consolidates() -> bool:
    from agent_memory.integrations.pydantic_ai import MemoryCapability

    return "consolidate_every" in inspect.signature(MemoryCapability.__init__).parameters


CLAIMS = [
    ("docs/time.md", r"take neither `as_of` nor `include_superseded`", _mcp_time_params),
    ("docs/time.md", r"do not pass a turn's time as `at=`", _hooks_pass_turn_time),
    ("docs/cli.md", r"PostgreSQL roots have no vector search", lambda: _pg_has("embed", "embedded", "use_embedder")),
    ("docs/cli.md", r"Files backend only", lambda: _pg_has("episodes")),
    ("docs/consolidate.md", r"capability\s+after N turns or at compaction is not wired", _capability_consolidates),
]


@pytest.mark.parametrize(("doc", "stale", "done"), CLAIMS, ids=[f"{d}:{s[:30]}" for d, s, _ in CLAIMS])
def test_docs_do_not_deny_what_the_code_does(doc: str, stale: str, done: object) -> None:
    assert callable(done) and done(), f"the code no longer does what makes {stale!r} stale: recheck {doc}"
    assert not re.search(stale, (ROOT / doc).read_text(encoding="utf-8")), f"{doc} says {stale!r}, which is no longer true"
