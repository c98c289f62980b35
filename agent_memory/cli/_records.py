"""Record commands: remember, search, get, list, forget, inject (never import a model library)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from agent_memory.cli._base import SCOPES, UsageError, add_identity, emit, expiry, fmt_score, fraction, note, positive, read_text
from agent_memory.cli._contradict import AUTO, contradictions
from agent_memory.cli._target import StoreTarget, check_url, embedder_name, is_url, open_target
from agent_memory.errors import NotFoundError
from agent_memory.model.wording import record_not_found

Handler = Callable[[argparse.Namespace], "int | None"]
DEFAULT_SEARCH_LIMIT = 10
DEFAULT_LIST_LIMIT = 50
DEFAULT_INJECT_BUDGET = 1500
DATE_HELP = "ISO date or datetime, e.g. 2026-11-01 or 2026-11-01T09:00:00Z (UTC unless an offset is given)"


def _filters(p: argparse.ArgumentParser, default_limit: int) -> None:
    p.add_argument(
        "--tag",
        dest="tags",
        action="append",
        default=[],
        metavar="TAG",
        help="tag (repeatable; list: every tag must match; search: a ranking hint)",
    )
    p.add_argument("--scope", choices=SCOPES, help="only records of this scope (default: every scope the caller may see)")
    p.add_argument("--kind", help="only records of this kind, e.g. fact, preference, decision (default: every kind)")
    p.add_argument("--limit", type=positive, metavar="N", help=f"at most N records (1-1000; default {default_limit})")
    for name in ("created-after", "created-before", "updated-after", "updated-before"):
        p.add_argument(f"--{name}", metavar="WHEN", help=f"{name.replace('-', ' ')} WHEN: {DATE_HELP}")
    p.add_argument(
        "--include-superseded", action="store_true", help="also records a newer fact has superseded (default: current records only)"
    )
    p.add_argument(
        "--as-of",
        metavar="WHEN",
        help=f"only records in force at WHEN, superseded ones included (a day means its end: what was held on that day): {DATE_HELP}",
    )


def _filter_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    from agent_memory.errors import InvalidInputError
    from agent_memory.model.queries import as_of_filter, date_filters
    from agent_memory.model.values import shown

    out = {k: getattr(args, k) for k in ("created_after", "created_before", "updated_after", "updated_before")}
    for name, value in [*out.items(), ("as_of", args.as_of)]:  # a date the store cannot read is a usage error (exit 2)
        try:
            as_of_filter(value) if name == "as_of" else date_filters(**{name: value})
        except InvalidInputError:
            raise UsageError(f"--{name.replace('_', '-')} {shown(value)} is not a date: {DATE_HELP}") from None
    if args.include_superseded:
        out["include_superseded"] = True
    if args.as_of is not None:
        out["as_of"] = args.as_of
    return out


def _dates(rec: Any) -> str:
    """``; on 2023-05-07; true since …`` when the record knows when it happened or held (and if superseded)."""
    from agent_memory.model.lines import dates_text

    text = dates_text(None, rec.happened_at, rec.valid_from, rec.valid_to)
    if rec.superseded_by:
        text += ("; " if text else "") + f"superseded by {rec.superseded_by}"
    return f"; {text}" if text else ""


def _caller(args: argparse.Namespace) -> dict[str, Any]:
    return {"session_id": args.session_id, "user_id": args.user_id}


def register(add: Callable[..., argparse.ArgumentParser]) -> dict[str, Handler]:
    p = add(
        "remember",
        "Store one memory (CONTENT, or - to read it from standard input).",
        [
            'agent-memory remember "Deploys happen on Fridays after noon." --tag ops --key deploys',
            'echo "Staging is eu-west-1" | agent-memory remember - --title "Staging region" --importance 0.8 --json',
            'agent-memory remember "Ada prefers tea" --user ada --expires 30d',
        ],
    )
    p.add_argument("content", help="the memory text (Markdown), or - for standard input")
    p.add_argument("--title", help="short title (default: the first words of CONTENT)")
    p.add_argument("--kind", help="fact, preference, decision, summary, … (default fact)")
    p.add_argument("--scope", choices=SCOPES, help="who may read it (default: private to --session/--user when given, else project)")
    add_identity(p)
    p.add_argument("--tag", dest="tags", action="append", default=[], metavar="TAG", help="tag (repeatable)")
    p.add_argument(
        "--key",
        dest="memory_key",
        metavar="KEY",
        help="memory_key naming one logical memory (or an existing record id): later writes with it append/replace",
    )
    p.add_argument(
        "--on-existing",
        choices=["append", "replace", "skip"],
        help="with --key, when that memory exists: append the text, replace it, or skip (default append)",
    )
    p.add_argument(
        "--expires",
        type=expiry,
        metavar="WHEN",
        help="when it stops being visible: ISO date/datetime (UTC unless an offset is given) or a duration "
        "from now: 90m, 12h, 30d, 2w; must be in the future (default: never)",
    )
    p.add_argument("--importance", type=fraction, metavar="X", help="importance between 0 and 1, a ranking hint (default: unset)")
    p.add_argument("--happened-at", metavar="WHEN", help=f"when it happened or was said: {DATE_HELP}")
    p.add_argument("--valid-from", metavar="WHEN", help=f"since when it is true: {DATE_HELP}")
    p.add_argument("--valid-to", metavar="WHEN", help=f"until when it was true: {DATE_HELP}")
    p.add_argument(
        "--supersede",
        metavar="ID",
        dest="supersedes",
        nargs="?",
        const=AUTO,
        help="the record this new fact replaces: it is kept, marked superseded, and leaves default reads; "
        "without ID, the visible record it contradicts (remember says 'this contradicts ID' on stderr)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="print only the record id (for scripts: ID=$(agent-memory remember … -q))")

    p = add(
        "search",
        "Rank memories for a query (BM25) with snippets, line ranges and scores (higher first).",
        [
            'agent-memory search "when do deploys happen?"',
            "agent-memory search deploys --user ada --limit 5 --json",
            'agent-memory search "release plan" --trace',
        ],
    )
    p.add_argument("query", help="a question or keywords, as typed (- for standard input)")
    add_identity(p)
    _filters(p, DEFAULT_SEARCH_LIMIT)
    p.add_argument("--trace", action="store_true", help="also print each ranking stage with its candidates and scores")
    p.add_argument(
        "--mode",
        choices=("lexical", "dense", "hybrid"),
        help="lexical (BM25), dense (embeddings) or hybrid (both, fused); default hybrid when the root has vectors "
        "(with the embedder that made them) or an embedder is set, else lexical (run agent-memory embed first)",
    )
    p.add_argument(
        "--embedder",
        metavar="NAME",
        help="for --mode dense|hybrid: local (MiniLM, the embeddings extra), local:PATH (a model directory) or a "
        "litellm model id (default $AGENT_MEMORY_EMBEDDER, else local)",
    )
    _tuning_flags(p)

    p = add(
        "get",
        "Print one record (says 'expired' for a record past its expiry).",
        [
            "agent-memory get 2026-11-22-deploy-day-a1b2c3d4",
            "agent-memory get 2026-11-22-deploy-day-a1b2c3d4 --user ada --json",
            "agent-memory get 2026-11-22-deploy-day-a1b2c3d4 --links",
        ],
    )
    p.add_argument("id", help="record id (as printed by remember, search and list)")
    add_identity(p)
    p.add_argument(
        "--provenance", action="store_true", help="also print who created and last changed it (session, user, actor, run/tool call)"
    )
    p.add_argument(
        "--links", action="store_true", help="also print its [[links]] and backlinks (only records this caller may see; docs/links.md)"
    )

    p = add(
        "list",
        f"List records, newest first, filtered exactly (first {DEFAULT_LIST_LIMIT} unless --limit/--all).",
        [
            "agent-memory list --tag ops",
            "agent-memory list --scope user --user ada --limit 200 --json",
            "agent-memory list --all --updated-after 2026-11-01",
        ],
    )
    add_identity(p)
    _filters(p, DEFAULT_LIST_LIMIT)
    p.add_argument("--all", action="store_true", help="list every matching record (no limit)")

    p = add(
        "forget",
        "Move one record to archive/ (undo with restore); --purge deletes every byte of it.",
        [
            "agent-memory forget 2026-11-22-deploy-day-a1b2c3d4",
            "agent-memory forget 2026-11-22-deploy-day-a1b2c3d4 --purge --json",
        ],
    )
    p.add_argument("id", help="record id")
    add_identity(p)
    p.add_argument(
        "--purge", action="store_true", help="delete it for good: file, kept versions, archive, vectors, index pages, event payloads"
    )

    p = add(
        "inject",
        "Print the core block (USER.md + the caller's MEMORY.md lines) within a token budget.",
        [
            "agent-memory inject --budget 800",
            "agent-memory inject --session s1 --user ada --json",
        ],
    )
    p.add_argument(
        "--budget",
        type=positive,
        default=DEFAULT_INJECT_BUDGET,
        metavar="TOKENS",
        help=f"token budget of the block (tiktoken tokens; default {DEFAULT_INJECT_BUDGET})",
    )
    add_identity(p)
    return {"remember": cmd_remember, "search": cmd_search, "get": cmd_get, "list": cmd_list, "forget": cmd_forget, "inject": cmd_inject}


def cmd_remember(args: argparse.Namespace) -> None:
    _check_on_existing(args)
    for scope, flag, value in (("user", "--user", args.user_id), ("session", "--session", args.session_id)):
        if args.scope == scope and not value:  # the flag that is missing, before the text is read
            raise UsageError(f"--scope {scope} needs {flag} ID (whose memory it is)")

    content = read_text(args.content, "CONTENT")
    with open_target(args.root, create=True) as target:
        found = contradictions(target, content, key=args.memory_key, session_id=args.session_id, user_id=args.user_id)
        why_not = _obstacles(args, found)
        if args.supersedes == AUTO:
            if not found:
                raise UsageError("--supersede without an ID: this text contradicts no record you can see (give the ID to supersede)")
            mine = [c.id for c in found if why_not[c.id] is None]
            if not mine:
                reasons = "; ".join(f"{c.id}: {why_not[c.id]}" for c in found)
                raise UsageError(f"--supersede without an ID: this write cannot supersede the records this text contradicts ({reasons})")
            args.supersedes = mine[0]
        _remember(args, target, content, found, why_not)


def _check_on_existing(args: argparse.Namespace) -> None:
    """``--on-existing`` needs ``--key``: the API's rule (:func:`~agent_memory.model.drafts.check_on_existing`), and
    for an explicit ``append`` too (without a key the flag does nothing)."""
    from agent_memory.errors import InvalidInputError
    from agent_memory.model.drafts import check_on_existing

    message = "--on-existing needs --key (it says what to do when that memory already exists)"
    try:
        check_on_existing(args.on_existing, args.memory_key)
    except InvalidInputError:
        raise UsageError(message) from None
    if args.on_existing and args.memory_key is None:
        raise UsageError(message)


def _obstacles(args: argparse.Namespace, found: list[Any]) -> dict[str, str | None]:
    """Why this write may not supersede each record of ``found`` (None: it may), by id: the rule of
    :func:`~agent_memory.consolidate.contradict.supersede_obstacle` for the partition and namespace it is written to."""
    from agent_memory.cli._target import IDENTITY
    from agent_memory.consolidate.contradict import supersede_obstacle
    from agent_memory.model.drafts import default_scope_for

    scope = args.scope or default_scope_for(args.session_id, args.user_id, None).value
    who = {"session_id": args.session_id, "user_id": args.user_id, "namespace": IDENTITY["namespace"]}
    return {c.id: supersede_obstacle(c.record, scope=scope, **who) for c in found}


def _remember(args: argparse.Namespace, target: Any, content: str, found: list[Any], why_not: dict[str, str | None]) -> None:
    from agent_memory.model.drafts import MemoryDraft

    draft = MemoryDraft(
        content,
        args.title,
        args.kind,
        args.scope,
        args.session_id,
        args.user_id,
        tuple(args.tags),
        args.memory_key,
        args.on_existing or "append",
        args.expires,
        args.importance,
        happened_at=args.happened_at,
        valid_from=args.valid_from,
        valid_to=args.valid_to,
        supersedes=args.supersedes,
    )
    from agent_memory.model.events import acting

    with acting("cli"):
        r = target.remember_many([draft], source="manual")[0]
    redacted = f" ({r.redactions} secret{'s' if r.redactions != 1 else ''} redacted)" if r.redactions else ""
    still = [c for c in found if c.id not in (r.id, draft.supersedes)]
    for c in still:
        fix = f"`--supersede {c.id}` replaces it" if why_not[c.id] is None else f"this write cannot supersede it: {why_not[c.id]}"
        note(f"this contradicts {c.id} ({c.title}): {c.old_value!r} → {c.new_value!r}; {fix}")
    doc = {**r.to_dict(), "contradicts": [c.to_dict() for c in still]}
    if draft.supersedes and any(c.id == draft.supersedes for c in found):
        doc["superseded"] = draft.supersedes
    emit(args, doc, lambda: r.id if args.quiet else f"{r.status}: {r.id}{redacted}")


def _tuning_flags(p: argparse.ArgumentParser) -> None:
    """Ranking stages on top of the default ranking (docs/search.md)."""
    g = p.add_argument_group("ranking (re-rank the default ranking's best hits; --trace shows each stage)")
    g.add_argument("--recency", action="store_true", help="newer records rise (a boost with a 30-day half-life)")
    g.add_argument(
        "--decay",
        metavar="DAYS",
        type=float,
        help="old records sink: a score halves every DAYS days of age (above a floor one score-spread below the weakest hit)",
    )
    g.add_argument("--mmr", metavar="LAMBDA", type=float, help="diversity in [0, 1]: lower demotes near-duplicates of better hits more")
    g.add_argument("--min-score", metavar="S", type=float, help="drop hits scoring below S × the best hit's score (S in [0, 1])")


def _stages(args: argparse.Namespace) -> dict[str, Any]:
    """``{"stages": [...]}`` for the ranking flags given, else ``{}`` (the default ranking)."""
    if not (args.recency or args.decay is not None or args.mmr is not None or args.min_score is not None):
        return {}
    from agent_memory.search.tuning import search_stages

    return {"stages": search_stages(recency=args.recency or None, decay_days=args.decay, mmr=args.mmr, min_score=args.min_score)}


def cmd_search(args: argparse.Namespace) -> None:
    query = read_text(args.query, "QUERY")
    options = {
        **_caller(args),
        "tags": args.tags,
        "scope": args.scope,
        "kind": args.kind,
        "trace": args.trace,
        "limit": DEFAULT_SEARCH_LIMIT if args.limit is None else args.limit,
        **_filter_kwargs(args),
        **_stages(args),
    }
    res = _search_once(args, query, options)
    if res is None:
        from agent_memory.cli._base import library_logs

        library_logs()  # the backend path may log (the one-shot path does not)
        from agent_memory.cli._maint import meaning_options

        with open_target(args.root, create=False) as target:
            res = target.search(query, **options, **meaning_options(target, args.mode, args.embedder))
    doc: dict[str, Any] = {"hits": [h.to_dict() for h in res.hits]}
    if args.trace:
        doc["trace"] = res.trace

    def human() -> str:
        out = []
        for h in res.hits:
            mark = f"  curated (priority {h.priority})" if h.curated else ""
            out.append(f"{fmt_score(h.score)}  {h.id}  {h.path}:{h.line_start}-{h.line_end}{_dates(h).replace('; ', '  ', 1)}{mark}")
            out.extend("        " + line for line in h.snippet.splitlines())
        if args.trace:
            out.append(json.dumps(res.trace, indent=2, ensure_ascii=False, default=str))
        return "\n".join(out) or "no matches"

    emit(args, doc, human)


def _search_once(args: argparse.Namespace, query: str, options: dict[str, Any]) -> Any:
    """A lexical search of a PostgreSQL root without importing psycopg (None: take the backend)."""
    lexical = args.mode == "lexical" or (args.mode is None and embedder_name(args.embedder) is None)
    if not is_url(args.root) or not lexical or getattr(args, "namespace", None):  # one-shot reads the root namespace only
        return None
    import importlib.util

    if importlib.util.find_spec("psycopg") is None:  # the extra is not installed: the backend path says so
        return None
    try:
        from agent_memory.backends.postgres.oneshot import search_once
    except ImportError:
        return None
    return search_once(check_url(args.root), query, **options)


def cmd_get(args: argparse.Namespace) -> None:
    with open_target(args.root, create=False) as target:
        rec = target.get(args.id, **_caller(args))
        expires = f", expires {rec.expires}" if rec.expires else ""
        doc = rec.to_dict()
        extra = ""
        if args.provenance:
            if isinstance(target, StoreTarget):
                prov = rec.metadata.get("provenance")
                doc["provenance"] = {"source": rec.source, **(prov if isinstance(prov, dict) else {})}
            else:  # a backend that keeps no provenance says so (UnsupportedError), never prints nothing
                doc["provenance"] = {k: v for k, v in target.provenance(args.id, **_caller(args)).items() if k != "id"}
            extra = "".join(
                f"\n{k}: " + (json.dumps(v, ensure_ascii=False) if isinstance(v, dict) else str(v)) for k, v in doc["provenance"].items()
            )
        if args.links:
            linked = target.links(args.id, **_caller(args))
            doc["links"] = {"outgoing": [x.to_dict() for x in linked.outgoing], "backlinks": [x.to_dict() for x in linked.backlinks]}
            extra += _links_text(linked)
    emit(args, doc, lambda: f"{rec.id} ({rec.kind}, {rec.scope.value}{expires}{_dates(rec)}) {rec.path}{extra}\n\n{rec.content}")


def _links_text(linked: Any) -> str:
    """``get --links`` in words: each outgoing link (where it leads, or unresolved), then each backlink."""
    lines = [f"  -> [[{x.target}]] " + (f"{x.record_id} ({x.title})" if x.record_id else "unresolved") for x in linked.outgoing] or [
        "  -> (no links)"
    ]
    lines += [f"  <- {x.record_id} ({x.title}) via [[{x.target}]]" for x in linked.backlinks] or ["  <- (no backlinks)"]
    return "\nlinks:\n" + "\n".join(lines)


def cmd_list(args: argparse.Namespace) -> None:
    limit = None if args.all else (DEFAULT_LIST_LIMIT if args.limit is None else args.limit)
    filters = {**_caller(args), "tags": args.tags, "scope": args.scope, "kind": args.kind, **_filter_kwargs(args)}
    with open_target(args.root, create=False) as target:
        recs = target.list(limit=limit, **filters)
        total = target.count(**filters) if limit is not None and len(recs) >= limit else len(recs)
    more = max(0, total - len(recs))
    from agent_memory.model.lines import summary_line

    def human() -> str:
        lines = [f"{r.id}  ({r.kind}, {r.scope.value}{_dates(r)})  {summary_line(r.content, 70)}" for r in recs] or ["no records"]
        if more:
            lines.append(f"… {more} more (of {total}; use --limit N or --all)")
        return "\n".join(lines)

    emit(args, {"records": [r.to_dict() for r in recs], "total": total, "more": more}, human)


def cmd_forget(args: argparse.Namespace) -> None:
    from agent_memory.model.events import acting

    with acting("cli"):
        if args.purge:
            from agent_memory.cli.lifecycle import files_store, purgeable

            if getattr(args, "namespace", None):  # as `purge ID --namespace NS`: only in its namespace and below
                purgeable(args, args.namespace)
            rep = files_store(args, "forget --purge").purge(args.id, **_caller(args))
            emit(args, {"id": args.id, "forgotten": True, "purged": True, **rep.to_dict()}, lambda: f"purged: {args.id}")
            return
        with open_target(args.root, create=False) as target:
            try:
                forgotten = target.forget(args.id, **_caller(args))
            except NotFoundError:
                forgotten = False
            if not forgotten:
                raise _not_forgettable(target, args)
    emit(
        args,
        {"id": args.id, "forgotten": True},
        lambda: f"forgotten: {args.id} (archived; `agent-memory restore {args.id}{_same_caller(args)}` brings it back)",
    )


def _not_forgettable(target: Any, args: argparse.Namespace) -> NotFoundError:
    """Why ``forget ID`` changed nothing: a record this caller reads in another namespace (``get`` shows it) says
    that only the caller's own namespace can be changed; anything else stays "not visible to this caller"."""
    from agent_memory.cli._target import not_changeable

    try:
        rec = target.get(args.id, **_caller(args))  # the caller's read view: nothing it could not read already
    except NotFoundError:
        rec = None
    if rec is not None and (rec.namespace or "") != (getattr(args, "namespace", None) or ""):
        return not_changeable("record", args.id, rec.namespace)
    return record_not_found(args.id)


def cmd_inject(args: argparse.Namespace) -> None:
    with open_target(args.root, create=False) as target:
        block = target.inject(args.budget, **_caller(args))
    emit(args, block.to_dict(), lambda: block.text)


def _same_caller(args: argparse.Namespace) -> str:
    """The identity flags a follow-up command needs to act as the same caller (the restore hint)."""
    import shlex

    flags = (("--session", args.session_id), ("--user", args.user_id), ("--namespace", getattr(args, "namespace", None)))
    return "".join(f" {flag} {shlex.quote(value)}" for flag, value in flags if value) + _same_root(args)


def _same_root(args: argparse.Namespace) -> str:
    """`` --root PATH`` when the command ran on a root the hinted command would not find by default (the absolute
    path: the hint runs from any folder); nothing for the default root or ``$AGENT_MEMORY_ROOT``'s, and nothing for a
    PostgreSQL URL (it may carry a password: a hint never prints one)."""
    import os
    import shlex

    from agent_memory.cli._base import DEFAULT_ROOT

    root = getattr(args, "root", None)
    if not root or "://" in str(root):
        return ""
    default = os.environ.get("AGENT_MEMORY_ROOT") or DEFAULT_ROOT
    if "://" not in default and os.path.abspath(default) == os.path.abspath(root):
        return ""
    return f" --root {shlex.quote(os.path.abspath(root))}"
