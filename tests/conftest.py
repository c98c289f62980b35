"""Shared test configuration: the reliability report.

``pytest --reliability-report PATH`` writes a Markdown report of every test marked
``@pytest.mark.promise(KEY)``: the promise, the test that checks it (its docstring's first
line), the outcome, and the figures the test recorded through the ``reliability_figures``
fixture (processes, writes, rounds, generated cases, failures, ...).
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# Promise key -> (title, the promise as the issue states it). Order = order in the report.
PROMISES: dict[str, tuple[str, str]] = {
    "concurrency": (
        "Concurrent writers",
        "Many processes remembering at once (some appending to one shared memory_key) while others search: "
        "no lost record, no lost appended line, no duplicate file, the index agrees with the files, "
        'no "database is locked" reaches a caller.',
    ),
    "crash": (
        "Crash safety",
        "A writer killed with SIGKILL at random moments: no partial or empty record file, no orphaned temp file "
        "visible as a record, every acknowledged write survives, and the next open repairs the index.",
    ),
    "selfheal": (
        "Self-healing",
        "index.db deleted, truncated or filled with garbage is rebuilt from the files on next use; a record file "
        "with broken frontmatter is skipped with a warning, reported by doctor, and never stops a search.",
    ),
    "badinput": (
        "Bad input",
        "Generated ids, keys, titles, tags, content (NUL, emoji, huge, frontmatter-looking, lone surrogates) and "
        "tool arguments: only typed errors, nothing written outside the root, no symlink followed out of it, "
        "accepted secret-free content reads back exactly.",
    ),
    "scopes": (
        "Scope isolation",
        "Over random mixes of scopes, sessions and users, search, get, list, tools, inject and recall never return "
        "a record the caller may not see, and always find one it may.",
    ),
    "workers": (
        "Worker faults",
        "Model raises, hangs past the timeout, returns malformed tool arguments, loops past the step limit or "
        "returns an empty summary: the main agent's turn completes, recall reports fallback, capture writes "
        "nothing partial.",
    ),
    "secrets": (
        "Secrets",
        "A seeded corpus of realistic secrets passed through remember and capture: none reaches the disk "
        "(the whole root is grepped, index.db included).",
    ),
    "injection": (
        "Prompt injection",
        'A memory saying "ignore previous instructions…" reaches the main model only inside the fenced, labelled untrusted block.',
    ),
}
FIGURE_TOTALS = ("processes", "writes", "rounds", "kills", "generated_cases", "failures")

_figures_key = pytest.StashKey[dict[str, Any]]()
_results: list[dict[str, Any]] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--reliability-report",
        metavar="PATH",
        default=None,
        help="write the reliability report (Markdown) for the promise-marked tests that ran",
    )


_pycache_before: dict[Path, set[Path]] | None = None  # source folder -> its __pycache__ folders before the run


def _pycache_dirs(folder: Path) -> set[Path]:
    return set(folder.rglob("__pycache__"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "promise(key): the reliability promise a test checks (see tests/conftest.py)")
    config._reliability_started = time.time()  # type: ignore[attr-defined]
    # The Python processes the tests start (the CLI, MCP servers, workers, writers: hundreds of them) would each
    # compile every agent_memory module from source when PYTHONDONTWRITEBYTECODE is set (as on CI): ~0.13 s CPU a
    # process. They write bytecode instead (the installed libraries' is already there), and the __pycache__ folders
    # the run adds under the sources are removed at its end. (A PYTHONPYCACHEPREFIX would also recompile every
    # library a child imports, ~9 s CPU for torch alone.)
    global _pycache_before
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        import agent_memory

        folders = {Path(agent_memory.__file__).resolve().parent, Path(__file__).resolve().parent}
        _pycache_before = {folder: _pycache_dirs(folder) for folder in folders}
        del os.environ["PYTHONDONTWRITEBYTECODE"]


def pytest_unconfigure(config: pytest.Config) -> None:
    global _pycache_before
    if _pycache_before is not None:
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        for folder, before in _pycache_before.items():
            for made in _pycache_dirs(folder) - before:
                shutil.rmtree(made, ignore_errors=True)
        _pycache_before = None


@pytest.fixture
def reliability_figures(request: pytest.FixtureRequest) -> dict[str, Any]:
    """A dict the test fills with its figures; they appear in the reliability report."""
    figures: dict[str, Any] = {}
    request.node.stash[_figures_key] = figures
    return figures


def _figures(item: pytest.Item) -> dict[str, Any]:
    figures: dict[str, Any] = item.stash.get(_figures_key, {})
    return dict(figures)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    marker = item.get_closest_marker("promise")
    if marker is None:
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        doc = (getattr(item, "function", None).__doc__ or "").strip() if hasattr(item, "function") else ""
        _results.append(
            {
                "promise": marker.args[0],
                "test": item.nodeid,
                "doc": " ".join(doc.split("\n\n")[0].split()),
                "outcome": ("xfailed" if hasattr(report, "wasxfail") else "skipped") if report.skipped else report.outcome,
                "duration": report.duration,
                "figures": _figures(item),
                "reason": (getattr(report, "wasxfail", "") or (str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""))
                if report.skipped
                else "",
            }
        )


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = session.config.getoption("--reliability-report")
    if not path or not _results:
        return
    started = getattr(session.config, "_reliability_started", time.time())
    totals = {k: sum(int(r["figures"].get(k, 0) or 0) for r in _results) for k in FIGURE_TOTALS}
    counts = {o: sum(1 for r in _results if r["outcome"] == o) for o in ("passed", "failed", "xfailed", "skipped")}
    totals["failures"] += counts["failed"]
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        "# Reliability and security report",
        "",
        "Generated by `make reliability` (`pytest tests/test_reliability_*.py --reliability-report docs/reliability.md`);",
        "do not edit by hand. Each promise below is checked by the tests listed under it; the figures are from the last run.",
        "",
        f"Last run: {now}, Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, {time.time() - started:.0f} s wall time.",
        "",
        f"**{counts['passed']} passed, {counts['failed']} failed, known gaps (strict xfail): {counts['xfailed']}, "
        f"{counts['skipped']} skipped.** " + ", ".join(f"{k.replace('_', ' ')}: {_fmt(v)}" for k, v in totals.items()) + ".",
        "",
    ]
    order = list(PROMISES) + sorted({r["promise"] for r in _results} - set(PROMISES))
    cell = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    gaps: list[str] = []
    for key in order:
        rows = [r for r in _results if r["promise"] == key]
        if not rows:
            continue
        title, text = PROMISES.get(key, (key, ""))
        status = (
            "FAILED"
            if any(r["outcome"] == "failed" for r in rows)
            else "pending"
            if all(r["outcome"] == "skipped" for r in rows)
            else "kept, with a known gap"
            if any(r["outcome"] == "xfailed" for r in rows)
            else "kept"
        )
        out += [
            f"## {title} — {status}",
            "",
            f"> {text}",
            "",
            "| test | what it checks | result | time | figures |",
            "| --- | --- | --- | --- | --- |",
        ]
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in rows:  # parametrized cases share one row
            groups.setdefault(r["test"].split("[", 1)[0], []).append(r)
        for test, cases in groups.items():
            file, name = test.split("::", 1)
            tally = {o: sum(c["outcome"] == o for c in cases) for o in ("passed", "failed", "xfailed", "skipped")}
            result = ", ".join(f"{n} {o}" for o, n in tally.items() if n) if len(cases) > 1 else cases[0]["outcome"]
            params = [c["test"].split("[", 1)[1].rstrip("]") for c in cases if "[" in c["test"]]
            if params:
                result += f" ({len(cases)} cases: {', '.join(params)})"
            for c in cases:
                if c["outcome"] in ("xfailed", "skipped", "failed") and (c["reason"] or c["outcome"] == "failed"):
                    gaps.append(f"- `{c['test'].split('::', 1)[1]}` — {c['outcome']}: {c['reason'] or 'see the test output'}")
            if len(cases) == 1:
                figs = cases[0]["figures"]
            else:
                figs = {
                    k: sum(int(c["figures"].get(k, 0) or 0) for c in cases) for k in FIGURE_TOTALS if any(k in c["figures"] for c in cases)
                }
            shown = ", ".join(f"{k}={_fmt(v)}" for k, v in figs.items())
            seconds = sum(c["duration"] for c in cases)
            out.append(
                f"| `{cell(name)}` ({cell(Path(file).name)}) | {cell(cases[0]['doc'])} | {cell(result)} | {seconds:.1f} s | {cell(shown)} |"
            )
        out.append("")
    if gaps:
        out += [
            "## Known gaps and pending tests",
            "",
            "Strict xfails: each turns into a failure as soon as the gap is fixed, so it cannot be forgotten.",
            "",
        ]
        out += gaps + [""]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("\n".join(out), encoding="utf-8")
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.write_line(f"reliability report written to {path}")


# -- one behavioural suite over every backend (tests/test_contract_*.py) ----------------------------------
BACKEND_KINDS = ("files", "postgres")


@pytest.fixture(params=BACKEND_KINDS)
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A fresh store of each backend kind (``_pg.Target``): files + SQLite, then PostgreSQL in a fresh schema.

    ``backend.provider(**kw)`` opens it through ``MemoryProvider``; every provider made is closed afterwards.
    The PostgreSQL case skips without a server, and fails instead under ``AGENT_MEMORY_REQUIRE_PG=1``.
    A test module that defines its own ``backend`` fixture (test_backend_contract.py) overrides this one.
    """
    from _pg import make_target

    target = make_target(request.param, tmp_path)
    yield target
    await target.close()
