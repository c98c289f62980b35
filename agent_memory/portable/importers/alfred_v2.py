"""Alfred v2 fact store: ``facts/<slug>.md`` (YAML ``type``, ``ts``, path ``scope``, ``ttl``) and ``episodes/<id>.json``.

- A fact keeps its slug as ``memory_key``, ``ts`` as created/updated, ``ttl`` as ``expires`` (an expired fact is
  skipped); ``type`` becomes the kind (``user`` → preference, ``project`` → fact, others as named) and is kept
  as ``metadata.alfred_type``. Alfred's ``scope`` is a workspace path, not a visibility: it is kept as
  ``metadata.scope_path`` and the record is ``project``-scoped (unless the import names a user or session).
- An episode (goal, approach, worked, failed, verifyExit, gitSha, cost, ts) becomes one ``episode`` record whose
  text lists them; the machine fields stay in metadata.
- ``archive/`` (facts Alfred retired) is not imported; ``USER.md`` is reported, to be copied by hand.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped,unused-ignore]

from agent_memory.portable.importers._common import Item, not_inside, refuse_link, str_or_none
from agent_memory.portable.report import ImportReport

KINDS = {"user": "preference", "project": "fact", "feedback": "feedback", "reference": "reference"}


def root_of(path: Path) -> Path | None:
    """The Alfred memory directory at or under ``path`` (``.alfred/memory`` or a directory with facts/ or episodes/)."""
    for cand in (path, path / "memory", path / ".alfred" / "memory"):
        if (cand / "facts").is_dir() or (cand / "episodes").is_dir():
            return cand
    return None


def _frontmatter(text: str) -> tuple[dict[str, Any], str]:
    text = text.replace("\r\n", "\n")
    if not text.startswith("---\n"):
        return {}, text
    end = text.find("\n---", 3)
    if end < 0 or text[end + 4 : end + 5] not in ("", "\n"):
        raise ValueError("frontmatter is not closed by a '---' line")
    data = yaml.safe_load(text[4:end]) or {}
    if not isinstance(data, dict):
        raise ValueError("frontmatter is not a mapping")
    return data, text[end + 5 :].strip("\n")


def _fact(path: Path, where: str) -> Item:
    data, body = _frontmatter(path.read_text(encoding="utf-8"))
    kind = str(data.get("type") or "fact").strip().lower()
    meta: dict[str, Any] = {"alfred_type": kind}
    scope_path = str_or_none(data.get("scope"))
    if scope_path:
        meta["scope_path"] = scope_path
    extra = {k: v for k, v in data.items() if k not in ("type", "ts", "scope", "ttl")}
    if extra:
        meta["alfred"] = json.loads(json.dumps(extra, default=str))
    return Item(
        where=where,
        ref=f"fact:{path.stem}",
        content=body,
        created=data.get("ts"),
        kind=KINDS.get(kind, kind),
        scope="project",
        memory_key=path.stem,
        expires=data.get("ttl"),
        metadata=meta,
    )


def _list(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else ([str(value)] if value else [])


def _episode(path: Path, where: str) -> Item:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not str(data.get("goal") or "").strip():
        raise ValueError("an episode needs a JSON object with a 'goal'")
    lines = [f"Goal: {data['goal']}"]
    if data.get("approach"):
        lines.append(f"Approach: {data['approach']}")
    for label, key in (("Worked", "worked"), ("Failed", "failed")):
        items = _list(data.get(key))
        if items:
            lines.append(f"{label}:")
            lines.extend(f"- {x}" for x in items)
    meta = {
        name: data[key]
        for key, name in (("id", "alfred_episode_id"), ("verifyExit", "verify_exit"), ("gitSha", "git_sha"), ("cost", "cost_usd"))
        if data.get(key) is not None
    }
    return Item(
        where=where,
        ref=f"episode:{data.get('id') or path.stem}",
        content="\n".join(lines),
        created=data.get("ts"),
        title=str(data["goal"]).splitlines()[0][:120],
        kind="episode",
        scope="project",
        tags=["episode"],
        metadata=meta,
    )


def read(path: Path, report: ImportReport) -> Iterator[Item]:
    refuse_link(path)
    root = root_of(path) or path
    if (root / "USER.md").is_file():
        report.skip("USER.md", "unsupported", "USER.md is hand-edited: merge it into the root's USER.md yourself")
    for sub, reader, suffix in (("facts", _fact, ".md"), ("episodes", _episode, ".json")):
        folder = root / sub
        if not folder.is_dir():
            continue
        for file in sorted(folder.iterdir()):
            where = f"{sub}/{file.name}"
            if file.name.startswith("."):
                continue
            why = not_inside(path, file)
            if why is not None:
                report.skip(where, "invalid", why)
                continue
            if not file.is_file():
                continue
            if file.suffix != suffix:
                report.skip(where, "unsupported", f"not a {suffix} file")
                continue
            try:
                yield reader(file, where)
            except (ValueError, OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
                report.skip(where, "invalid", " ".join(str(exc).split())[:200])
