"""Root and maintenance commands: init, import, reindex, doctor, sweep, embed."""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import IO, Any

from agent_memory.backends.base import VectorsBackend, capability, require
from agent_memory.cli import _progress
from agent_memory.cli import export as _export
from agent_memory.cli._base import UsageError, emit, note, positive
from agent_memory.cli._errors import Interrupted
from agent_memory.cli._target import StoreTarget, check_url, embedder_name, is_url, open_target, open_url, prepare_root
from agent_memory.errors import InvalidInputError, needs_extra
from agent_memory.model.wording import plural

Handler = Callable[[argparse.Namespace], "int | None"]
DEFAULT_BATCH = 5000
RAMP = (1, 10, 100, 1000)  # first chunks of an import: progress (and a Ctrl-C count) from the first record

JSONL_FIELDS = """\
JSONL fields (one JSON object per line; blank lines are skipped; only "content" is required):
  content       the memory text (string, ≤ 1 MB)
  title         short title (default: the first words of content)
  kind          fact, preference, decision, summary, … (default fact)
  scope         session, user, project or global (default: private to session_id/user_id when given, else project)
  session_id    owning session (needed for scope "session")
  user_id       owning user (needed for scope "user")
  tags          list of strings (≤ 32)
  memory_key    names one logical memory; a later line with the same key appends/replaces/skips
  on_existing   append (default), replace or skip — what a memory_key line does when the memory exists
  expires       ISO date/datetime after which the record is invisible (and archived by sweep); must be future
  importance    number between 0 and 1 (a ranking hint)
  metadata      an object of extra fields (kept in the frontmatter, redacted)
  happened_at   ISO date/datetime: when it happened or was said
  valid_from    ISO date/datetime: since when it is true
  valid_to      ISO date/datetime: until when it was true
  supersedes    id of a record this line replaces as the current fact (kept, marked superseded)
  namespace     ignored for the namespace a line lands in: every line lands in the importer's (--namespace)
Any other field is an error naming the file and line. Imports are idempotent: re-running one skips what is
already written (status "duplicate" for JSONL drafts, "exists" for our export and other memories' files)."""


def register(add: Callable[..., argparse.ArgumentParser]) -> dict[str, Handler]:
    p = add(
        "init",
        "Create a memory root (the only command that creates missing parent directories, with -p).",
        [
            "agent-memory init",
            "agent-memory init ~/notes/.agent-memory -p",
            "agent-memory --root ./mem init --json",
        ],
    )
    p.add_argument("dir", nargs="?", help="the root to create (default: --root, $AGENT_MEMORY_ROOT or .agent-memory)")
    p.add_argument("-p", "--parents", action="store_true", help="create missing parent directories too (as mkdir -p)")

    p = add(
        "import",
        "Bulk import a JSONL file (FILE, or - for standard input): one memory object per line, or our export "
        "(told by its header line, from a file or a pipe), or another memory's files.",
        [
            "agent-memory import memories.jsonl",
            "agent-memory import memories.jsonl --skip-invalid --json",
            "cat drafts.jsonl | agent-memory import - --batch-size 1000",
            "agent-memory --root ./old export | agent-memory --root ./new import -",
        ],
        epilog_extra=JSONL_FIELDS,
    )
    p.add_argument("file", help="a .jsonl file, a directory of another memory's files (see --format), or - for standard input")
    p.add_argument(
        "--batch-size",
        type=positive,
        default=DEFAULT_BATCH,
        metavar="N",
        help=f"records per lock, transaction and fsync pass (default {DEFAULT_BATCH})",
    )
    p.add_argument(
        "--skip-invalid", action="store_true", help="skip bad lines (reported with their line numbers) instead of stopping at the first"
    )
    _export.add_import_format(p)

    add(
        "reindex",
        "Rebuild the index from the record files (files are the truth).",
        ["agent-memory reindex", "agent-memory --root ./mem reindex --json"],
    )
    add(
        "doctor",
        "Check record files against the index; name each problem with its fix. Exit 1 if any.",
        ["agent-memory doctor", "agent-memory doctor --json"],
    )
    add(
        "sweep",
        "Archive expired records and exact duplicates into archive/ (annotated, restorable).",
        ["agent-memory sweep", "agent-memory sweep --json"],
    )
    p = add(
        "embed",
        "Embed records that have no vector yet, with progress (vectors are derived data, like the index: "
        "search --mode hybrid|dense uses them; writes never wait for them).",
        ["agent-memory embed", "agent-memory embed --embedder ollama/nomic-embed-text --json"],
    )
    p.add_argument(
        "--embedder",
        metavar="NAME",
        help="local (MiniLM, the embeddings extra), local:PATH (a sentence-transformers model directory) or a litellm model id (default $AGENT_MEMORY_EMBEDDER, else local)",
    )
    return {"init": cmd_init, "import": cmd_import, "reindex": cmd_reindex, "doctor": cmd_doctor, "sweep": cmd_sweep, "embed": cmd_embed}


def meaning_options(target: Any, mode: str | None, embedder: str | None) -> dict[str, Any]:
    """Search options for ``--mode``/``--embedder``: attaches the embedder to the target's store; ``{}`` for plain
    lexical. :func:`agent_memory.backends.vector_choice.choose` decides, the same on every backend.

    Without either, a store that holds vectors is searched hybrid with the embedder recorded with them; if that
    embedder cannot run here (a missing extra), lexically with a one-line notice naming the extra. An explicit
    ``--mode dense|hybrid`` or ``--embedder`` whose extra is missing fails (MissingExtraError); ``--mode dense`` on a
    store with no vectors fails saying to run ``agent-memory embed``; ``--mode hybrid`` there searches lexically with that
    hint on stderr. An embedder (flag or ``$AGENT_MEMORY_EMBEDDER``)
    other than the one that made the vectors searches lexically, with a one-line notice, rather than ranking by
    vectors of another model (docs/meaning.md)."""
    from agent_memory.backends.vector_choice import choose, mismatch

    name = embedder_name(embedder)
    files = isinstance(target, StoreTarget)
    if mode == "lexical":
        return {} if name is None else {"mode": "lexical"}
    if files:
        from agent_memory.backends.files.vector_meta import recorded

        found = recorded(target.root)
    else:
        vectors = capability(target.backend, VectorsBackend)
        if vectors is None:  # a backend without vectors: lexical unless asked (then the capability error)
            if mode is None and name is None:
                return {}
            require(target.backend, VectorsBackend, "vector search", "use --mode lexical")
        found = target._run(vectors.recorded_embedder()) if vectors is not None else None
    choice = choose(found, mode, name)
    if choice.notice:
        note(choice.notice)
    if choice.spec is None:
        return {} if choice.mode is None else {"mode": choice.mode}
    from agent_memory.embeddings import check_installed
    from agent_memory.errors import MissingExtraError

    made: Any
    try:
        if files:
            from agent_memory.backends.files.meaning import attach

            made = attach(target.store, choice.spec).embedder
        else:
            made = _backend_embedder(target, choice.spec).embedder
        check_installed(made)
    except MissingExtraError as exc:
        if not choice.default:
            raise _spec_error(choice.spec, exc) from None
        note(f"this root has vectors but {exc}; searching lexically")
        return {"mode": "lexical"}
    choice.check()
    bare = choice.bare()
    if bare:
        note(bare)
        return {"mode": "lexical"}
    other = mismatch(found, made.name if made is not None else "")
    if other:
        note(other)
        return {"mode": "lexical"}
    return {"mode": choice.mode or "hybrid"}


def _spec_error(spec: str, exc: Exception) -> Exception:
    """A missing litellm for an embedder spec that is not ``local``/``local:PATH``/``none``: say how the spec was read
    and which forms are accepted (a typo like ``--embedder nosuch`` is read as a litellm model id)."""
    from agent_memory.errors import MissingExtraError

    if not isinstance(exc, MissingExtraError) or exc.extra != "litellm":
        return exc
    err = type(exc)(
        f"embedder {spec!r} (--embedder or $AGENT_MEMORY_EMBEDDER) is not 'local', 'local:PATH' or 'none', so it is "
        "read as a litellm model id (e.g. openai/text-embedding-3-small, ollama/nomic-embed-text), which needs the "
        "'litellm' extra: pip install 'agent-memory[litellm]'",
        name=exc.name,
    )
    err.extra = exc.extra
    return err


def _backend_embedder(target: Any, name: str) -> VectorsBackend:
    """The target's backend with embedder ``name`` attached (:class:`UnsupportedError` for a backend without vectors)."""
    vectors = require(target.backend, VectorsBackend, "vector search", "use --mode lexical")
    with needs_extra("vector search"):  # the backend imports its vector side (numpy) here
        vectors.use_embedder(name)
    return vectors


def cmd_embed(args: argparse.Namespace) -> None:
    with open_target(args.root, create=False) as target:
        _embed(args, target)


def _embed(args: argparse.Namespace, target: Any) -> None:
    from agent_memory.embeddings import EmbeddingError

    name = args.embedder or os.environ.get("AGENT_MEMORY_EMBEDDER") or "local"
    run: Callable[[Any], Any]
    if isinstance(target, StoreTarget):
        from agent_memory.backends.files.meaning import attach

        run = attach(target.store, name).embed
    else:
        backend = _backend_embedder(target, name)
        run = lambda progress: target._run(backend.embed(progress))  # noqa: E731
    bar = _progress.Progress("embedding", None, "record")

    def progress(done: int, todo: int) -> None:
        bar.total = todo
        bar(done - bar.done)

    from agent_memory.errors import MissingExtraError

    try:
        rep = run(progress)
    except MissingExtraError as exc:
        raise _spec_error(name, exc) from None
    finally:
        bar.close()
    if rep.error:
        raise EmbeddingError(
            f"{rep.error} ({rep.embedded} of {rep.total - rep.cached} embedded before it; run agent-memory embed again to resume)"
        )
    emit(
        args,
        rep.to_dict(),
        lambda: (
            f"embedded {plural(rep.embedded, 'record')} with {rep.model} ({rep.cached} already had vectors, "
            f"{rep.pruned} unused removed) in {rep.seconds:.1f}s"
        ),
    )


def cmd_init(args: argparse.Namespace) -> None:
    root = args.dir or args.root
    if is_url(root):
        from agent_memory.backends.postgres.rows import redact_url
        from agent_memory.cli._target import BackendTarget

        # connect and make the tables now: a refused connection, a missing database or role, a wrong password fail
        # here as a typed error (exit 1, the URL's password masked) instead of at the first remember
        with BackendTarget(open_url(check_url(root)), root) as target:
            target.count()
        shown = redact_url(root)
        emit(args, {"root": shown, "created": False}, lambda: f"database root {shown}: connected, tables ready")
        return
    path, _ = prepare_root(root, create=True, parents=args.parents, explicit=True)
    from agent_memory.backends.files.store import MemoryStore

    already = (path / "records").is_dir()
    store = MemoryStore(path)
    store.open()  # its index made now: a root is known as one (a root around a path) before its first write
    store.close()
    absolute = os.path.abspath(path)
    emit(
        args,
        {"root": absolute, "created": not already},
        lambda: f"{'already a memory root' if already else 'created memory root'}: {absolute}",
    )


# -- import -------------------------------------------------------------------------------------
def _lines(name: str) -> Iterator[tuple[int, str | None]]:
    """Numbered lines; None for a line that is not valid UTF-8 (that line is reported, the others are read)."""
    from agent_memory.model.drafts import decode_line

    stream: IO[bytes]
    if name == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageError("FILE is '-' (standard input) but nothing is piped in")
        if getattr(sys.stdin, "buffer", None) is None:  # a text stream (tests, embedding apps): already decoded
            yield from enumerate(sys.stdin, 1)
            return
        stream = sys.stdin.buffer
        yield from ((n, decode_line(raw)) for n, raw in enumerate(stream, 1))
        return
    with open(name, "rb") as stream:
        yield from ((n, decode_line(raw)) for n, raw in enumerate(stream, 1))


def _stdin_export(fmt: str) -> tuple[Iterator[tuple[int, str | None]], bool]:
    """Standard input's numbered lines, and whether they are our export: ``--format agent-memory``, or (``auto``)
    a first object that is our export's header line or a whole record, told exactly as for a file
    (:func:`agent_memory.portable.importers.is_export_start`). The lines read to tell are given back first."""
    from agent_memory.portable.importers import is_export_start

    lines = _lines("-")
    seen: list[tuple[int, str | None]] = []
    first: object = None
    for n, line in lines:
        seen.append((n, line))
        if line is not None and line.strip():
            try:
                first = json.loads(line)
            except (ValueError, RecursionError):
                first = None
            break
    ours = fmt == "agent-memory" or (fmt == "auto" and is_export_start(first))
    return itertools.chain(seen, lines), ours


def read_drafts(name: str, lines: Iterable[tuple[int, str | None]] | None = None) -> Iterator[tuple[int, Any]]:
    """``(line, MemoryDraft | error message)`` for each non-empty line of a JSONL file or stdin (``lines``: already
    being read)."""
    from agent_memory.model.drafts import MemoryDraft

    for n, line in _lines(name) if lines is None else lines:
        if line is None:
            yield n, "not valid UTF-8"
            continue
        if not line.strip():
            continue
        try:
            yield n, MemoryDraft.from_dict(json.loads(line))
        except (ValueError, TypeError, RecursionError) as exc:
            text = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            yield n, " ".join(text.split())[:300]


def _chunks(items: list[Any], batch: int) -> Iterable[tuple[int, list[Any]]]:
    start = 0
    for size in itertools.chain(RAMP, itertools.repeat(batch)):
        if start >= len(items):
            return
        size = min(size, batch)
        yield start, items[start : start + size]
        start += size


def cmd_import(args: argparse.Namespace) -> int | None:
    if _export.wants_portable(args):  # our export, or another memory's files (docs/export.md)
        return _export.cmd_import_format(args)
    from agent_memory.model.drafts import Override, override_draft

    fmt = getattr(args, "format", "drafts")
    piped: Iterable[tuple[int, str | None]] | None = None
    if args.file == "-" and fmt != "drafts":
        if fmt not in ("auto", "agent-memory"):
            raise UsageError(f"--format {fmt} reads a file or folder, not standard input (pass its path)")
        piped, ours = _stdin_export(fmt)
        if ours:  # `agent-memory export | agent-memory import -`: our export, as from a file
            args.piped = piped
            return _export.cmd_import_format(args)

    where = "<stdin>" if args.file == "-" else args.file
    override = Override(user_id=getattr(args, "as_user", None), session_id=getattr(args, "as_session", None))
    rescoped: list[dict[str, Any]] = []
    errors: list[tuple[int, str]] = []
    drafts, lines = [], []
    for n, item in read_drafts(args.file, piped):
        if isinstance(item, str):
            if not args.skip_invalid:
                raise InvalidInputError(f"{where}: line {n}: {item} (nothing imported; fix the line, or pass --skip-invalid)")
            errors.append((n, item))
        else:
            try:
                item, asked = override_draft(item, override)  # --as-user/--as-session: that caller's partition
            except InvalidInputError as exc:
                if not args.skip_invalid:
                    raise InvalidInputError(f"{where}: line {n}: {exc} (nothing imported; fix the line, or pass --skip-invalid)") from None
                errors.append((n, str(exc)))
                continue
            if asked is not None:
                rescoped.append({"line": n, "asked": asked.value, "scope": str(item.scope)})
            drafts.append(item)
            lines.append(n)
    target = open_target(args.root, create=True)
    progress = _progress.Progress("importing", len(drafts))
    start = time.monotonic()
    results: list[Any] = []
    before = _indexed(target)
    try:
        for offset, chunk in _chunks(drafts, args.batch_size):
            rejected: list[tuple[int, str]] = []
            results.extend(
                target.remember_many(
                    chunk, source="import", batch_size=args.batch_size, on_error="skip", errors=rejected, progress=progress
                )
            )
            errors.extend((lines[offset + i], msg) for i, msg in rejected)
            if rejected and not args.skip_invalid:
                n, msg = lines[offset + rejected[0][0]], rejected[0][1]
                raise InvalidInputError(
                    f"{where}: line {n}: {msg} (stopped; {plural(len(results), 'record')} written: fix the "
                    "line and re-run, written records are skipped as duplicates; or pass --skip-invalid)"
                )
    except KeyboardInterrupt:
        progress.close()
        raise Interrupted(_interrupted(target, before, results, len(drafts), where)) from None
    finally:
        progress.close()
        target.close()  # the connections close on the loop that opened them (agent_memory.backends.postgres.pool)
    elapsed = time.monotonic() - start
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    errors.sort()
    doc = {
        "imported": len(results),
        "statuses": counts,
        "errors": [{"line": n, "message": m} for n, m in errors],
        "rescoped": rescoped,
        "elapsed_s": round(elapsed, 3),
        "rate_per_s": round(len(results) / elapsed, 1) if elapsed else None,
    }
    emit(
        args,
        doc,
        lambda: (
            f"imported {plural(len(results), 'record')} in {elapsed:.2f}s ({doc['rate_per_s']}/s): "
            + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
            + "".join(f"\n  skipped {where} line {n}: {m}" for n, m in errors)
        ),
    )
    return None


def _indexed(target: Any) -> int | None:
    """The records a files root's index holds (None for a database: its batches commit or roll back whole)."""
    return target.store.index.count() if isinstance(target, StoreTarget) else None


def _interrupted(target: Any, before: int | None, results: list[Any], total: int, where: str) -> str:
    """What an interrupted import wrote. On a files root the batch being written when Ctrl-C came has its files on
    disk but its index rows rolled back: they are indexed here (files are the truth, as the next write would do),
    so the count is what the store now holds and `doctor` is clean."""
    rerun = "re-running the same import is safe (records already written are skipped as duplicates)"
    done = len(results)
    if before is None:
        return f"interrupted: {done} of {total} records from {where} were written; {rerun}"
    import signal

    old = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the index is brought in line with the files: not cut short
    try:
        target.store.index.refresh(force=True, wait=True)
        with target.store.lock.hold():
            target.store.write_memory_md()  # the records indexed now are listed too
        added = target.store.index.count() - before
    except Exception as exc:  # noqa: BLE001 - the message still says what to run
        return (
            f"interrupted: {done} of {total} records from {where} were written and indexed; the batch being "
            f"written may have left record files the index lacks ({exc}): run `agent-memory reindex`, then {rerun}"
        )
    finally:
        signal.signal(signal.SIGINT, old)
    extra = max(0, added - sum(1 for r in results if r.status == "created"))  # new rows the results do not hold
    healed = f" ({extra} of them from the batch being written when interrupted, indexed now)" if extra else ""
    return f"interrupted: {done + extra} of {total} records from {where} were written{healed}; {rerun}"


# -- maintenance --------------------------------------------------------------------------------
def _op(target: Any, name: str) -> Callable[..., Any]:
    if isinstance(target, StoreTarget):
        return getattr(target.store, name)  # type: ignore[no-any-return]
    return partial(target.call, name)


def cmd_reindex(args: argparse.Namespace) -> None:
    with open_target(args.root, create=False) as target:
        rep = _progress.run(_op(target, "reindex"), "reindexing")
    problems = dict(getattr(rep, "problems", {}) or {})
    n = int(getattr(rep, "added", 0) + getattr(rep, "updated", 0))
    doc = {"records": n, "scanned": getattr(rep, "scanned", 0), "problems": problems}
    emit(
        args,
        doc,
        lambda: (
            f"reindexed {plural(n, 'record')}"
            + "".join(f"\n  problem: {k}: {v}" for k, v in problems.items())
            + ("\n  fix: see `agent-memory doctor` for what to do with each file" if problems else "")
        ),
    )


def doctor_fixes(report: dict[str, Any], *, rows: bool = False) -> list[str]:
    """One suggested fix per kind of problem in a doctor report (the report's own suggestions come first);
    ``rows``: the report is a database's (rows, no files)."""
    fixes = [str(f) for f in report.get("fixes") or report.get("suggestions") or []]
    problems = report.get("problems") or {}
    if rows:
        stale = [k for k in problems if k != "schema_version"]
        if not fixes and (stale or (report.get("drift") or {}).get("missing_from_index")):
            fixes.append(
                f"{len(stale)} row(s) edited outside agent_memory or missing from the text index: run "
                "`agent-memory reindex` (rows are the truth; it repairs their hashes and rebuilds the index)"
            )
        if "schema_version" in problems:
            fixes.append("the schema's version is not this release's: use the agent-memory release that wrote it, or upgrade this one")
        return fixes
    if problems and not fixes:
        fixes.append(
            f"{len(problems)} record file(s) cannot be used (quarantined: never read): fix the frontmatter of "
            "each named file by hand, or move it out of records/ — then run `agent-memory reindex`"
        )
    drift = {k: v for k, v in (report.get("drift") or {}).items() if v}
    if drift:
        fixes.append(
            "the index disagrees with the files ("
            + ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in drift.items())
            + "): run `agent-memory reindex` (files are the truth)"
        )
    return fixes


def _session_problems(base: Path) -> dict[str, str]:
    from agent_memory.sessions import SessionStore

    return {f"{p.path}" + (f":{p.line}" if p.line else ""): p.reason for p in SessionStore(base).problems()}


def _episode_problems(base: Path) -> dict[str, str]:
    from agent_memory.episodes import EpisodeStore

    return {e["path"]: e["reason"] for e in EpisodeStore(base).doctor()}


#: Checks of the root's stores that the record store's own doctor does not cover (it checks records, archive,
#: the index and the event log); together they cover every entry of the registry marked ``doctor``.
LAYER_DOCTORS: dict[str, Callable[[Path], dict[str, str]]] = {"sessions": _session_problems, "episodes": _episode_problems}
STORE_DOCTOR = frozenset({"records", "archive", "index", "events"})


def layer_problems(root: str) -> dict[str, str]:
    """Problems in the stores a root holds beside its records (session logs, episodes, …: every entry of
    :data:`agent_memory.backends.files.layout.ROOT_LAYOUT` the record store's doctor does not check)."""
    from agent_memory.backends.files.layout import ROOT_LAYOUT

    base = Path(root)
    if "://" in root or not base.is_dir():
        return {}
    out: dict[str, str] = {}
    for entry in ROOT_LAYOUT:
        check = LAYER_DOCTORS.get(entry.name)
        if check is not None and entry.location(base).is_dir():
            out.update(check(base))
    return out


def cmd_doctor(args: argparse.Namespace) -> int:
    with open_target(args.root, create=False) as target:
        rep = _progress.run(_op(target, "doctor"), "checking")
    more = layer_problems(str(args.root))
    if more:
        rep = dataclasses.replace(rep, problems={**rep.problems, **more}, ok=False)
    doc = rep.to_dict()
    rows = is_url(str(args.root))  # a database holds rows (no files): its problems are rows and their fixes say so
    doc["fixes"] = doctor_fixes(doc, rows=rows)
    counted = plural(int(doc.get("records") or 0), "row" if rows else "file")
    emit(
        args,
        doc,
        lambda: (
            ("ok" if rep.ok else "problems found")
            + f": {counted}, {doc.get('indexed')} indexed"
            + "".join(f"\n  {'problem' if rows else 'unreadable'}: {k}: {v}" for k, v in (doc.get("problems") or {}).items())
            + "".join(f"\n  drift: {k} = {v}" for k, v in (doc.get("drift") or {}).items() if v)
            + "".join(f"\n  fix: {f}" for f in doc["fixes"])
        ),
    )
    return 0 if rep.ok else 1  # usable as a check in scripts; the report is already printed


def cmd_sweep(args: argparse.Namespace) -> None:
    with open_target(args.root, create=False) as target:
        rep = _progress.run(_op(target, "sweep"), "sweeping")
    emit(
        args,
        rep.to_dict(),
        lambda: (
            f"archived {len(rep.expired)} expired and {len(rep.duplicates)} duplicate records"
            + "".join(f"\n  expired: {i}" for i in rep.expired)
            + "".join(f"\n  duplicate: {i}" for i in rep.duplicates)
        ),
    )
    if rep.expired or rep.duplicates:
        where = "archive/" if isinstance(target, StoreTarget) else "the archive table"
        note(f"archived records are in {where} (`agent-memory restore ID --user U --namespace NS` brings one back; `undo` too)")
