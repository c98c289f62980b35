"""Old public import paths, kept for one release: each warns once and hands back the module's new home.

Before 0.2 the package was flat (``agent_memory.store``, ``agent_memory.hooks``, …). The modules now live in
layer folders; importing an old path still works, emits a :class:`DeprecationWarning` naming the new path,
and returns the very same module object (so ``isinstance`` checks and monkeypatching keep working).
Private modules (a leading underscore) just moved. Remove this module, and its hook in ``__init__``, in 0.3.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

__all__ = ["ALSO", "MOVED", "install"]

#: old dotted path (under ``agent_memory.``) -> new dotted path. A package entry covers its submodules.
MOVED: dict[str, str] = {
    "backend": "backends.base",
    "core": "agents.core_block",
    "drafts": "model.drafts",
    "events": "backends.files.events",
    "extensions": "backends.extended",
    "fence": "agents.fence",
    "focus": "search.focus",
    "frontmatter_fast": "formats.yaml_writer",
    "frontmatter_safe": "formats.frontmatter",
    "frontmatter_yaml": "formats.yaml_loader",
    "fusion": "search.fusion",
    "hooks": "integrations.hooks",
    "hybrid": "backends.files.hybrid",
    "index": "backends.files.index",
    "index_schema": "backends.files.index_schema",
    "index_sync": "backends.files.index_sync",
    "lifecycle": "backends.files.lifecycle",
    "maintenance": "backends.files.maintenance",
    "models": "agents.models",
    "profiles": "agents.profiles",
    "purge": "backends.files.purge",
    "quarantine": "formats.quarantine",  # `search` is a package now: see search/__init__
    "records": "model.records",
    "records_parse": "model.record_fields",
    "redact": "redaction.api",
    "search_types": "search.types",
    "stages": "search.stages",
    "store": "backends.files.store",
    "tokens": "agents.tokens",
    "tools": "agents.tools",
    "transcripts": "portable.transcripts",
    "vectors": "backends.files.vectors",
    "workers": "agents.workers",
}
#: Names an old module held that now live elsewhere than its new home (served by a proxy module for that old path).
ALSO: dict[str, dict[str, str]] = {
    "backend": {"FilesBackend": "backends.files.backend"},
    "fusion": {n: "backends.files.hybrid" for n in ("TermStats", "index_confidence", "index_strength", "index_term_stats")},
    "index_schema": {
        "core_line": "model.lines",
        "dates_text": "model.lines",
        "day_text": "model.lines",
        "summary_line": "model.lines",
        "is_corrupt": "formats.quarantine",
    },
    "maintenance": {"SweepReport": "model.reports", "DoctorReport": "model.reports"},
    "search_types": {"SearchEngine": "backends.files.fts", "date_filter_sql": "backends.files.index_schema"},
}
_PACKAGE = "agent_memory"


def _new_name(fullname: str) -> str | None:
    if not fullname.startswith(_PACKAGE + "."):
        return None
    rest = fullname[len(_PACKAGE) + 1 :]
    for old, new in MOVED.items():
        if rest == old or rest.startswith(old + "."):
            return f"{_PACKAGE}.{new}{rest[len(old) :]}"
    return None


class _Alias(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(
            f"{spec.name} moved to {self.new}; the old path goes away in agent-memory 0.3",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(self.new)
        extra = ALSO.get(spec.name[len(_PACKAGE) + 1 :])
        if not extra:
            return module
        proxy = ModuleType(spec.name, module.__doc__)  # the new module plus the names that moved further
        proxy.__dict__.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
        for name, home in extra.items():
            setattr(proxy, name, getattr(importlib.import_module(f"{_PACKAGE}.{home}"), name))
        return proxy

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module was imported under its new name."""


class _OldPaths(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        new = _new_name(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Put the old-path finder on ``sys.meta_path`` once (called by ``agent_memory/__init__``)."""
    if not any(isinstance(finder, _OldPaths) for finder in sys.meta_path):
        sys.meta_path.insert(0, _OldPaths())  # first: an old path must never find a stale file of an older install
