"""The sections of a full export beyond live records: archive, session logs and summaries, episodes, events.

A full export (``export_records(..., full=True)``, CLI ``agent-memory export --full``) writes the records as usual,
then one JSON line per item of the other sections a root holds (:func:`agent_memory.backends.files.layout.exported`)::

    {"section": "archive", "record": {…every field of the record…}}
    {"section": "namespaces", "namespaces": {"acme/coding": {"shared": true, "isolation": null}, …}}
    {"section": "session", "session_id": …, "user_id": …, ["namespace": …,] "messages": [{role, text, at, …}], "summaries": [{version, …}]}
    {"section": "episode", "episode": {…every field of the episode…}}
    {"section": "event", "event": {…every field of the event…}}

Import restores each section through the write gate (every string redacted, every owner id that looks like a
secret refused), idempotently: an archived record, an episode or an event already there is ``exists``; a session
gets only the messages and summary versions it does not hold yet (and is a ``conflict`` when its log differs).
Ids, owners, namespaces and times are kept. What a target cannot hold is reported per line as ``unsupported``.

The ``namespaces`` line (the root's namespace registry: which namespaces are marked shared, their default
isolation; written by the operator's export only, and only when the registry is not empty) restores the
namespaces the target does not configure yet; a namespace the target already configures keeps the target's
settings, and a difference is reported as a ``conflict`` naming both (an import never widens what a namespace
shares, nor lowers its isolation, behind the operator's back).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent_memory.backends.base import Caller, MemoryBackend
from agent_memory.backends.files.store import MemoryStore
from agent_memory.episodes import Episode, EpisodeParseError, ToolUse, episode_store, parse_episode
from agent_memory.episodes._files import read_episode_file
from agent_memory.episodes._model import check_owner
from agent_memory.errors import InvalidIdError, InvalidInputError, NotFoundError
from agent_memory.formats.atomic import atomic_write
from agent_memory.formats.quarantine import read_record_file
from agent_memory.model import scopes
from agent_memory.model.drafts import prepare_record
from agent_memory.model.events import Event, NotSupportedError, tombstone_id
from agent_memory.model.events import visible as event_visible
from agent_memory.model.records import MemoryRecord, RecordParseError, Scope, content_hash
from agent_memory.model.scopes import may_see
from agent_memory.portable._write import Guard, Owned, Target, files_store, owner_of, purged_ids, run_sync, skip_purged, was_purged
from agent_memory.portable.report import ImportReport
from agent_memory.redaction.api import contains_secret, redact_text
from agent_memory.redaction.ids import MINTED_ID
from agent_memory.sessions._files import message_line
from agent_memory.sessions.api import session_store
from agent_memory.sessions.store import SessionStore

__all__ = ["SECTIONS", "export_sections", "import_section", "purged_owners"]

SECTIONS = ("records", "archive", "namespaces", "sessions", "episodes", "events")
_EPISODE_FIELDS = {f.name for f in dataclasses.fields(Episode)} - {"path"}


# -- export -----------------------------------------------------------------------------------------------------------
def export_sections(
    source: Target,
    caller: Caller | None,
    record_line: Any,
    problems: dict[str, str],
    read: tuple[list[MemoryRecord], list[Event], dict[str, dict[str, Any]]] | None = None,
) -> Iterator[dict[str, Any]]:
    """The section lines of ``source`` after its records: every item (``caller=None``) or what ``caller`` sees
    (in its namespace view).

    ``read``: for a backend other than the files store, the archived records, events and namespace registry its
    async reads gave (:func:`agent_memory.portable.export.read_all`); session logs and episodes are read here
    (their stores are synchronous)."""
    store = files_store(source)
    archived, events, registry = read if read is not None else ([], [], {})
    if store is not None:
        from agent_memory.backends.files.namespaces import read_registry

        registry = read_registry(store.root)
    if caller is None:
        for rec in _archived(store, problems) if store is not None else archived:
            yield {"section": "archive", "record": json.loads(record_line(rec))}
        if registry:  # configuration the operator restores; a store without any writes the lines it always did
            yield {"section": "namespaces", "namespaces": {ns: dict(registry[ns]) for ns in sorted(registry)}}
    view = caller.view(registry) if caller is not None else None
    with scopes.viewing(view or scopes.ROOT_VIEW):  # a caller's export: its namespace view
        sessions = _sessions(source, store)
        if sessions is not None:
            yield from _session_lines(sessions, caller)
        episodes = _episodes(source, store, caller, problems, view)
    for ep in episodes:
        yield {"section": "episode", "episode": _episode_dict(ep)}
    for ev in _events(store, caller) if store is not None else events:
        yield {"section": "event", "event": ev.to_dict()}


def _archived(store: MemoryStore, problems: dict[str, str]) -> list[MemoryRecord]:
    """Every archived record file as it is (its archive note kept in the text, so an import writes the same bytes),
    with the hash the file stores: that of the record's text, not of the note (:func:`archived_hash`)."""
    out = []
    base = Path(store.archive_dir)
    names = sorted(p.name for p in base.glob("*.md")) if base.is_dir() and not base.is_symlink() else []
    for name in names:
        try:
            rec = read_record_file(base, name)[0]
        except (OSError, RecordParseError) as exc:
            problems[f"archive/{name}"] = str(exc) or type(exc).__name__
            continue
        out.append(rec.replace(content_hash=archived_hash(rec.content)))
    return out


def archived_text(text: str) -> str:
    """An archived record's text without the archive note(s) the store appended when it archived it."""
    from agent_memory.backends.files.history import _ANNOTATION

    while text != (text := _ANNOTATION.sub("", text)):
        pass
    return text


def archived_hash(text: str) -> str:
    """The ``content_hash`` an archive file stores: of the record's text, which the archive note does not change."""
    return content_hash(archived_text(text))


def _pg(source: Target) -> Any:
    """The PostgreSQL backend behind ``source`` (a whole-store read needs its rows), else NotSupportedError."""
    inner = getattr(source, "inner", source)
    if type(inner).__name__ != "PostgresBackend":
        raise NotSupportedError(
            f"a whole-store export of {type(inner).__name__} is not supported; export as a caller (caller=…, CLI --user/--session) instead"
        )
    return inner


def _sessions(source: Target, store: MemoryStore | None) -> SessionStore | None:
    if store is not None:
        return SessionStore(store.root, durable=store.durable)
    try:
        return session_store(getattr(source, "inner", source))
    except NotSupportedError:
        return None
    except Exception:  # noqa: BLE001 - SessionsNotSupportedError: a backend without session logs has none to export
        return None


def _session_lines(sessions: SessionStore, caller: Caller | None) -> Iterator[dict[str, Any]]:
    if caller is None:
        dirs = list(sessions.files.all_dirs())
    else:
        dirs = [d for d, _, _ in sessions.visible_logs(session_id=caller.session_id, user_id=caller.user_id)]
    for sdir in sorted(dirs, key=lambda d: (d.namespace, d.user_id or "", d.session_id)):
        messages, _ = sessions.files.read(sdir)
        current, _ = sessions.files.summary(sdir)
        summaries = sessions.files.history(sdir) + ([current] if current else [])
        yield {
            "section": "session",
            "session_id": sdir.session_id,
            "user_id": sdir.user_id,
            **({"namespace": sdir.namespace} if sdir.namespace else {}),  # a root session's line is what it was
            "messages": [_message_dict(m) for m in messages],
            "summaries": [{k: v for k, v in s.to_dict().items() if k not in ("session_id", "user_id")} for s in summaries],
        }


def _message_dict(m: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "text": m.text, "at": m.at}
    if m.speaker is not None:
        out["speaker"] = m.speaker
    if m.turn_id is not None:
        out["turn_id"] = m.turn_id
    if m.metadata:
        out["metadata"] = dict(m.metadata)
    return out


def _episodes(
    source: Target, store: MemoryStore | None, caller: Caller | None, problems: dict[str, str], view: tuple[str, ...] | None = None
) -> list[Episode]:
    if store is not None:
        base = Path(store.root) / "episodes"
        out = []
        if base.is_dir() and not base.is_symlink():
            for path in sorted(base.glob("*/ep-*.md")):
                try:
                    out.append(read_episode_file(path, path.name))
                except (OSError, EpisodeParseError) as exc:
                    problems[f"episodes/{path.parent.name}/{path.name}"] = str(exc) or type(exc).__name__
    else:
        try:
            rows = episode_store(getattr(source, "inner", source))
        except Exception:  # noqa: BLE001 - EpisodesUnsupportedError: a backend without episodes has none to export
            return []
        from agent_memory.backends.postgres import dump  # type: ignore[import-not-found,unused-ignore]

        out = dump.all_episodes(rows)
    if caller is not None:
        out = [
            e
            for e in out
            if may_see(
                e.scope.value,
                e.session_id,
                e.user_id,
                session_id=caller.session_id,
                user_id=caller.user_id,
                namespace=e.namespace,
                view=view,
            )
        ]
    return sorted(out, key=lambda e: (e.started, e.id))


def _episode_dict(ep: Episode) -> dict[str, Any]:
    data = {k: v for k, v in ep.to_dict().items() if k in _EPISODE_FIELDS}
    return data


def _events(store: MemoryStore, caller: Caller | None) -> list[Event]:
    events, _ = store.events.read()
    if caller is not None:
        from agent_memory.backends.files.namespaces import read_registry
        from agent_memory.model import scopes

        with scopes.viewing(caller.view(read_registry(store.root) if caller.namespace else None)):  # the caller's namespaces
            events = [e for e in events if event_visible(e, caller.session_id, caller.user_id)]
    return events


# -- import -----------------------------------------------------------------------------------------------------------
def import_section(
    target: Target, where: str, data: dict[str, Any], report: ImportReport, *, as_caller: bool, state: dict[str, Any]
) -> None:
    """Restore one section line (see the module docstring); every outcome is in ``report``. ``state`` is one
    import run's scratch space (the event ids the target holds, read once)."""
    section = data.get("section")
    if as_caller:
        report.skip(
            where,
            "unsupported",
            f"a {section} line is carried only by the operator's import (no --as-user/"
            "--as-session/--namespace): an import as a caller holds records only",
        )
        return
    try:
        if section in ("session", "episode") and _purged_owner(section, data, state):
            report.skip(
                where,
                "purged",
                f"a {section} of an owner purged from this store (every record of theirs the export holds has its purge "
                "tombstone here); not re-imported (pass allow_purged=True / --allow-purged to bring it back)",
            )
            return
        if section == "archive":
            _import_archive(target, where, data, report, state)
        elif section == "namespaces":
            _import_namespaces(target, where, data, report)
        elif section == "session":
            _import_session(target, where, data, report)
        elif section == "episode":
            _import_episode(target, where, data, report)
        elif section == "event":
            _import_event(target, where, data, report, state)
        else:
            report.skip(where, "invalid", "unknown section (expected archive, namespaces, session, episode or event)")
    except (InvalidInputError, InvalidIdError, EpisodeParseError, ValueError, TypeError, KeyError) as exc:
        report.skip(where, "invalid", f"{section}: {' '.join(str(exc).split())[:300]}")


def _only_keys(data: dict[str, Any], allowed: set[str]) -> None:
    unknown = set(data) - allowed
    if unknown:
        raise InvalidInputError(f"unknown field(s): {', '.join(sorted(map(str, unknown)))}")


def _import_archive(target: Target, where: str, data: dict[str, Any], report: ImportReport, state: dict[str, Any]) -> None:
    _only_keys(data, {"section", "record"})
    rec, redactions, _ = prepare_record(data.get("record"))
    rec = rec.replace(content_hash=archived_hash(rec.content))  # the stored hash: the archive note is not the record's
    if not state.get("allow_purged"):
        tombstones = state.get("tombstones")
        if tombstones is None:
            tombstones = state["tombstones"] = purged_ids(target)
        if was_purged(rec, tombstones):
            skip_purged(report, where, rec)
            return
    store = files_store(target)
    if store is None:
        _archive_in_backend(target, where, rec, report)
        return
    store.open()
    path = Path(store.archive_dir) / f"{rec.id}.md"
    body = rec.render().encode("utf-8")
    with store.lock.hold():
        if os.path.lexists(path):
            same = path.is_file() and not path.is_symlink() and path.read_bytes() == body
            report.skip(
                where,
                "exists" if same else "conflict",
                "already archived (identical record file)" if same else "a different archived record has this id; it is never overwritten",
                rec.id,
            )
            return
        if os.path.lexists(Path(store.records_dir) / f"{rec.id}.md"):
            report.skip(where, "conflict", "a live record has this id; the archived copy is not taken", rec.id)
            return
        Path(store.archive_dir).mkdir(parents=True, exist_ok=True)
        atomic_write(path, body, durable=store.durable)
    report.wrote(rec.id, "archived")
    report.redactions += redactions


def _archive_in_backend(target: Target, where: str, rec: MemoryRecord, report: ImportReport) -> None:
    """An archived record into a backend other than the files store: its archive is written only by its own
    forget/sweep, so a record it holds live under this id with the same text is archived there (forgotten, as its
    owner): the archive state an export carries — e.g. a duplicate consolidation archived in a files copy — is
    applied. Anything else is ``unsupported``."""
    backend: MemoryBackend = target  # type: ignore[assignment]
    owner = owner_of(rec)
    text = archived_text(rec.content)

    async def apply() -> str:
        try:
            live = await backend.get(rec.id, owner)
        except NotFoundError:
            return "absent"
        if live.content != text:
            return "differs"
        return "archived" if await backend.forget(rec.id, owner) else "absent"

    outcome = run_sync(apply())
    if outcome == "archived":
        report.wrote(f"archived:{rec.id}", "archived")
    elif outcome == "differs":
        report.skip(where, "conflict", "a live record with this id holds a different text; it is not archived", rec.id)
    else:
        report.skip(
            where,
            "unsupported",
            "an archived record is not imported into this backend (its archive is written only by forget/sweep)",
            rec.id,
        )


def _owner(name: str, value: object) -> str | None:
    """An owner id kept as it is: one line, never a secret (refused, not redacted: an id is an address)."""
    return check_owner(name, value)


def _sessions_of(target: Target) -> SessionStore:
    store = files_store(target)
    if store is not None:
        return SessionStore(store.root, durable=store.durable)
    return session_store(getattr(target, "inner", target))


def _import_session(target: Target, where: str, data: dict[str, Any], report: ImportReport) -> None:
    _only_keys(data, {"section", "session_id", "user_id", "namespace", "messages", "summaries"})
    sid = _owner("session_id", data.get("session_id"))
    uid = _owner("user_id", data.get("user_id"))
    ns = scopes.check_namespace(data.get("namespace"))  # an operator's restore keeps the namespace the line names
    if sid is None:
        raise InvalidInputError("session_id is required")
    raw_messages, raw_summaries = data.get("messages") or [], data.get("summaries") or []
    if not isinstance(raw_messages, list) or not isinstance(raw_summaries, list):
        raise InvalidInputError("messages and summaries must be lists")
    prepared = [message_line(m) for m in raw_messages]  # the session write gate: validated, every string redacted
    summaries = [_summary(s) for s in raw_summaries]
    summaries.sort(key=lambda s: s["version"])
    store = _sessions_of(target)
    label = f"session {sid}" + (f" of {uid}" if uid else "") + (f" in {ns}" if ns else "")
    sdir = store.files.session_dir(sid, uid, create=True, namespace=ns)
    have, _ = store.files.read(sdir)
    if len(have) > len(prepared) or any(_key(_message_dict(h)) != _key(obj) for h, (obj, _) in zip(have, prepared, strict=False)):
        report.skip(where, "conflict", f"{label}: the target's log differs from the export's; nothing appended", sid)
        return
    new = [line for _, line in prepared[len(have) :]]
    if new:
        store.files.append(sdir, new)
    current, _ = store.files.summary(sdir)
    held = store.files.history(sdir) + ([current] if current else [])
    versions = {s.version: s.text for s in held}
    wrote_summaries = 0
    for s in summaries:
        if s["version"] in versions:
            continue
        if s["version"] != (max(versions) if versions else 0) + 1:
            report.skip(where, "conflict", f"{label}: summary version {s['version']} does not follow the target's", sid)
            return
        made = store.files.write_summary(
            sdir, s["text"], messages=s["messages"], source=s["source"], fallback=s["fallback"], made_at=s["made_at"]
        )
        versions[made.version] = made.text
        wrote_summaries += 1
    if new or wrote_summaries:
        report.wrote(f"session:{sid}", "session")
    else:
        report.skip(where, "exists", f"{label}: already imported (same messages and summaries)", sid)


def _key(obj: dict[str, Any]) -> tuple[Any, ...]:
    return (obj.get("role"), obj.get("text"), obj.get("at"))


def _summary(raw: object) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise InvalidInputError("a summary must be an object")
    _only_keys(raw, {"version", "text", "made_at", "messages", "source", "fallback"})
    version, text, made_at, count = raw.get("version"), raw.get("text"), raw.get("made_at"), raw.get("messages")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InvalidInputError("a summary's version must be a whole number ≥ 1")
    if not isinstance(text, str) or not text.strip() or not isinstance(made_at, str):
        raise InvalidInputError("a summary needs text and made_at")
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise InvalidInputError("a summary's messages must be a whole number ≥ 0")
    source = raw.get("source") or "offline"
    if not isinstance(source, str) or len(source) > 40 or contains_secret(source):
        raise InvalidInputError("a summary's source must be a short name")
    return {
        "version": version,
        "text": redact_text(text),
        "made_at": made_at,
        "messages": count,
        "source": source,
        "fallback": bool(raw.get("fallback")),
    }


def _episode_of(raw: object) -> Episode:
    """An exported episode through the gate: every text redacted, owners refused when they look like secrets,
    then read back by the same parser a stored episode file passes."""
    if not isinstance(raw, dict):
        raise InvalidInputError("episode must be an object")
    _only_keys(raw, _EPISODE_FIELDS | {"path", "approach", "tokens"})
    data: dict[str, Any] = {k: v for k, v in raw.items() if k in _EPISODE_FIELDS}
    for name in ("goal", "exit_detail", "summary", "run_id", "conversation_id", "model", "refined_by", "source"):
        if isinstance(data.get(name), str):
            data[name] = redact_text(data[name])
    for name in ("worked", "failed", "sequence"):
        value = data.get(name) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InvalidInputError(f"{name} must be a list of texts")
        data[name] = tuple(redact_text(v) for v in value)
    data["session_id"] = _owner("session_id", data.get("session_id"))
    data["user_id"] = _owner("user_id", data.get("user_id"))
    data["scope"] = Scope(str(data.get("scope")))
    tools = data.get("tools") or []
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise InvalidInputError("tools must be a list of {name, calls, errors}")
    data["tools"] = tuple(ToolUse(redact_text(str(t.get("name", ""))), t.get("calls", 0), t.get("errors", 0)) for t in tools)
    episode = Episode(**data)
    return parse_episode(episode.render(), str(data.get("id")))


def _import_episode(target: Target, where: str, data: dict[str, Any], report: ImportReport) -> None:
    _only_keys(data, {"section", "episode"})
    ep = _episode_of(data.get("episode"))
    store = files_store(target)
    episodes = episode_store(store.root if store is not None else getattr(target, "inner", target))
    try:
        with scopes.viewing((ep.namespace,)):  # the episode's own namespace: is it there already?
            have = episodes.get(ep.id, session_id=ep.session_id, user_id=ep.user_id)
    except NotFoundError:
        have = None
    if have is not None:
        same = _episode_dict(have) == _episode_dict(ep)
        report.skip(
            where,
            "exists" if same else "conflict",
            "already imported (same episode)" if same else "a different episode has this id; it is never overwritten",
            ep.id,
        )
        return
    try:
        episodes.write(ep)
    except InvalidInputError as exc:
        report.skip(where, "conflict", str(exc), ep.id)
        return
    report.wrote(ep.id, "episode")


def _registry_of(target: Target) -> tuple[dict[str, dict[str, Any]], Any]:
    """The target's namespace registry and how to configure one namespace there (files or a backend)."""
    store = files_store(target)
    if store is not None:
        from agent_memory.backends.files.namespaces import configure, read_registry

        store.open()
        return read_registry(store.root), lambda ns, **cfg: configure(store.root, ns, lock=store.lock, **cfg)
    inner = getattr(target, "inner", target)
    if not (hasattr(inner, "namespaces") and hasattr(inner, "configure_namespace")):
        raise NotSupportedError(f"{type(inner).__name__} keeps no namespace registry")
    return run_sync(inner.namespaces()), lambda ns, **cfg: run_sync(inner.configure_namespace(ns, **cfg))


def _import_namespaces(target: Target, where: str, data: dict[str, Any], report: ImportReport) -> None:
    """Restore the namespaces the target does not configure yet; never change one it does (see the module docstring)."""
    _only_keys(data, {"section", "namespaces"})
    raw = data.get("namespaces")
    if not isinstance(raw, dict):
        raise InvalidInputError("namespaces must be an object {namespace: {shared, isolation}}")
    wanted: dict[str, dict[str, Any]] = {}
    for name, cfg in raw.items():
        ns = scopes.check_namespace(name)
        if not ns or not isinstance(cfg, dict):
            raise InvalidInputError(f"namespace {name!r}: a non-root namespace with an object {{shared, isolation}}")
        _only_keys(cfg, {"shared", "isolation"})
        if not isinstance(cfg.get("shared", False), bool):
            raise InvalidInputError(f"namespace {ns!r}: shared must be true or false")
        wanted[ns] = {"shared": bool(cfg.get("shared")), "isolation": scopes.check_isolation(cfg.get("isolation"))}
    try:
        have, configure = _registry_of(target)
    except NotSupportedError as exc:
        report.skip(where, "unsupported", str(exc))
        return
    for ns, cfg in sorted(wanted.items()):
        held = have.get(ns)
        if held is None:
            configure(ns, shared=cfg["shared"], isolation=cfg["isolation"])
            report.wrote(f"namespace:{ns}", "namespace")
        elif {"shared": bool(held.get("shared")), "isolation": held.get("isolation")} == cfg:
            report.skip(where, "exists", f"namespace {ns}: already configured the same", f"namespace:{ns}")
        else:
            report.skip(
                where,
                "conflict",
                f"namespace {ns}: the target's settings are kept (shared={bool(held.get('shared'))}, isolation="
                f"{held.get('isolation') or 'inherited'}); the export's (shared={cfg['shared']}, isolation="
                f"{cfg['isolation'] or 'inherited'}) were not applied: change them with `agent-memory namespace`",
                f"namespace:{ns}",
            )


def _import_event(target: Target, where: str, data: dict[str, Any], report: ImportReport, state: dict[str, Any]) -> None:
    _only_keys(data, {"section", "event"})
    raw = data.get("event")
    if not isinstance(raw, dict):
        raise InvalidInputError("event must be an object")
    withheld: list[str] = []
    for k, v in raw.items():
        if k == "id" and isinstance(v, str) and MINTED_ID.fullmatch(v):
            v = v[:-9]  # our own id's random suffix after a slug word ("…-github-token-d017ea26") is no secret
        if k != "detail" and isinstance(v, str) and contains_secret(v):
            if k in ("before", "after") and _HASH.fullmatch(v):
                # a content hash can be all digits and pass Luhn: kept only when it is the hash of a record version
                # the import file or the target holds (known content), else withheld; the event is kept either way
                if not _known_hash(target, v, state):
                    withheld.append(k)
                continue
            raise InvalidInputError(f"event field {k!r} looks like a secret; refused")
    if withheld:
        raw = {**raw, **dict.fromkeys(withheld)}
    detail = raw.get("detail") or {}
    if not isinstance(detail, dict):
        raise InvalidInputError("event detail must be an object")
    clean = {**raw, "detail": json.loads(redact_text(json.dumps(detail, ensure_ascii=False)))}
    ev = Event.from_dict(clean)
    store = files_store(target)
    if store is None:
        if ev.event == "distilled" and ev.id.startswith("session:") and ev.owner_session:
            _carry_distilled(target, where, ev, report)
            return
        report.skip(
            where,
            "unsupported",
            "events are not imported into this backend: it keeps its own event log (the imported records get fresh events there)",
            ev.eid,
        )
        return
    store.open()
    with store.lock.hold():
        eids: set[str] | None = state.get("eids")
        if eids is None:  # read once per import run
            eids = state["eids"] = {e.eid for e in store.events.read()[0]}
        if ev.eid in eids:
            report.skip(where, "exists", "already imported (same event id)", ev.eid)
            return
        store.events.append(ev)
        eids.add(ev.eid)
    report.wrote(f"event:{ev.eid}", "event")
    if withheld:
        report.drop("event_hash_withheld", len(withheld))


_HASH = re.compile(r"[0-9a-f]{16}")


def _known_hash(target: Target, value: str, state: dict[str, Any]) -> bool:
    """Is ``value`` the content hash of a record version the import file (``state["hashes"]``, filled by the
    restore) or the target's files index holds?"""
    if value in (state.get("hashes") or ()):
        return True
    store = files_store(target)
    if store is None:
        return False
    store.open()
    return bool(store.index.rows_where("content_hash = :h", {"h": value}, limit=1))


def _carry_distilled(target: Target, where: str, ev: Event, report: ImportReport) -> None:
    """A session's distill cursor (its ``distilled`` events: how far ``sessions distill`` read) into a backend that
    keeps its own event log: one ``distilled`` event of its own there, so the next distill does not re-read what the
    source already distilled. Skipped as ``exists`` when the target's cursor is already as far."""
    from agent_memory.consolidate.tend import _log_event, distilled_through
    from agent_memory.sessions._messages import SessionDir

    through = ev.detail.get("through")
    if isinstance(through, bool) or not isinstance(through, int) or ev.owner_session is None:
        raise InvalidInputError("a distilled event needs owner_session and a whole number `through`")
    sdir = SessionDir(Path(), ev.owner_session, ev.owner_user, ev.owner_namespace or "")

    async def carry() -> bool:
        if await distilled_through(target, sdir) >= through:
            return False
        detail = {k: v for k, v in ev.detail.items() if k in ("messages", "written")}
        await _log_event(target, "distilled", sdir, **{**detail, "through": through})
        return True

    if run_sync(carry()):
        report.wrote(f"cursor:{ev.owner_session}", "cursor")
    else:
        report.skip(where, "exists", f"session {ev.owner_session}: the distill cursor is already here", ev.eid)


# -- purged owners ----------------------------------------------------------------------------------------------------
def purged_owners(target: Target, records: list[Owned], sections: list[tuple[str, dict[str, Any]]], guard: Guard) -> set[Any]:
    """The owners (``("user", uid)``, ``("session", uid, sid)``) an export names whose every record — live or
    archived, at least one — has its purge tombstone in ``target``: their session logs and episodes are skipped as
    ``purged`` too. A purge leaves tombstones of record ids only (no owner), so an owner the export holds no record
    of cannot be told purged, and a single purged record that was an owner's only one reads as that owner purged."""
    tombstones = guard.tombstones if guard.tombstones is not None else purged_ids(target)
    if not tombstones:
        return set()
    counts: dict[Any, list[int]] = {}
    owned = list(records)
    for _, data in sections:
        raw = data.get("record") if data.get("section") == "archive" else None
        if isinstance(raw, dict) and isinstance(raw.get("id"), str):
            meta = raw.get("metadata")
            first = meta.get("imported_id") if isinstance(meta, dict) else None
            sid, uid = raw.get("session_id"), raw.get("user_id")
            owned.append((raw["id"], *(v if isinstance(v, str) else None for v in (first, sid, uid))))  # type: ignore[arg-type]
    for rid, first, sid, uid in owned:
        gone = tombstone_id(rid) in tombstones or (first is not None and tombstone_id(first) in tombstones)
        keys = ([("user", uid)] if uid else []) + ([("session", uid, sid)] if sid else [])
        for key in keys:
            c = counts.setdefault(key, [0, 0])
            c[0] += 1
            c[1] += int(gone)
    return {key for key, (n, gone) in counts.items() if n and n == gone}


def _purged_owner(section: str, data: dict[str, Any], state: dict[str, Any]) -> bool:
    owners = state.get("purged_owners")
    if not owners:
        return False
    raw = data.get("episode") if section == "episode" else data
    if not isinstance(raw, dict):
        return False
    sid, uid = raw.get("session_id"), raw.get("user_id")
    return bool((uid and ("user", uid) in owners) or (sid and ("session", uid, sid) in owners))
