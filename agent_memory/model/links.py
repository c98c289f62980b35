"""Links between memories: ``[[id]]`` and ``[[Title]]`` wiki-links in record bodies, parsed in one place.

A record's body may name another record by its id (``[[2026-05-01-otters-1a2b3c4d]]``) or by its title
(``[[Sea otters]]``; ``[[Sea otters|the otters]]`` shows a label and links the part before ``|``). Both backends keep
what :func:`parse_links` finds in a link table, rewritten on every write of the record (and dropped with it), and
the title key (:func:`title_key`) of every record beside it, so a link to a title can be found from either end.

**Resolution happens at read time**, for the caller asking, by :func:`resolve`: a target that is the id of a record
the caller may see resolves to it; otherwise a current record the caller may see whose title key matches, chosen
by :func:`tier` — the linking record's own partition first (a user record of its user, then a session record of its
session, then a shared project/global record, then any other), the newest (``updated``, then id) within a tier, so
nobody takes over another user's title link by writing a shared record with that title; otherwise the link is
*unresolved* — whether no such record exists, or one exists that the caller may not see (a link never reveals a
hidden record's id, title or existence). So a link written before its
target exists resolves as soon as the target is written, and a purged target leaves its backlinks unresolved.

**An id link survives an import** that gives records new ids (PostgreSQL always, a files import on a caller's
behalf when an id is someone else's; the old id is kept in ``metadata.imported_id``): a target that is no visible
record's id resolves to a visible record imported under that id (:func:`ids_of`), chosen like a title — the
lowest :func:`tier` for the linking record, then the current one, then the newest — so ``[[<id>]]`` written before
an export still works after the import, within the same visibility (never a record the caller may not see), and a
shared record never takes over a link that a record of the linking record's own partition answers. Only an import
of whole records sets ``imported_*`` metadata (the write gate drops them from any other write:
``model.drafts.IMPORT_KEYS``), so an ordinary write cannot claim another record's id. The link text is never
rewritten: the export stays lossless, and the same body resolves on both backends.

Links inside code (fenced blocks, inline code spans) are not links; at most :data:`MAX_LINKS` distinct targets
are kept per record (the first ones), each at most :data:`MAX_TARGET` characters.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "MAX_BACKLINKS",
    "MAX_LINKS",
    "MAX_TARGET",
    "PARTITION_SQL",
    "Backlink",
    "Link",
    "LinkRef",
    "ParsedLink",
    "RecordLinks",
    "backlinks_of",
    "ids_of",
    "imported_id",
    "parse_links",
    "resolve",
    "tier",
    "title_key",
]

#: Distinct link targets kept per record (the first ones in the body).
MAX_LINKS = 64
#: Backlinks one read lists at most (the newest linking records).
MAX_BACKLINKS = 200
#: Longest link target (characters); a longer ``[[…]]`` is not a link.
MAX_TARGET = 200

_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]{0,3}\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)
_LINK = re.compile(rf"\[\[([^\[\]\n]{{1,{MAX_TARGET * 2 + 1}}})\]\]")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class ParsedLink:
    """One ``[[…]]`` of a body: ``target`` as written (spaces collapsed), ``key`` its title key."""

    target: str
    key: str


def title_key(title: str) -> str:
    """What two titles must share for a link to match: NFKC, case-folded, whitespace collapsed and trimmed."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", title)).strip().casefold()


def _without_code(text: str) -> str:
    if "`" not in text and "~~~" not in text:
        return text
    return _CODE_SPAN.sub(" ", _FENCE.sub("\n", text))


def parse_links(text: str) -> tuple[ParsedLink, ...]:
    """The distinct link targets of ``text`` in order of first appearance (at most :data:`MAX_LINKS`)."""
    if "[[" not in text:
        return ()
    out: dict[str, ParsedLink] = {}
    for match in _LINK.finditer(_without_code(text)):
        target = _SPACES.sub(" ", match.group(1).split("|", 1)[0]).strip()
        if not target or len(target) > MAX_TARGET or target in out:
            continue
        out[target] = ParsedLink(target, title_key(target))
        if len(out) >= MAX_LINKS:
            break
    return tuple(out.values())


@dataclass(frozen=True, slots=True)
class LinkRef:
    """A record a link may resolve to, as a backend found it among those the caller may see."""

    id: str
    title: str
    superseded_by: str | None = None
    scope: str = ""
    user_id: str | None = None
    session_id: str | None = None


def tier(candidate: LinkRef, source: LinkRef | None) -> int:
    """How near ``candidate`` (a record a title link may resolve to) is to the linking record ``source``: 0 a user
    record of the source's user, 1 a session record of the source's session, 2 a shared (project, global) record,
    3 any other the caller may see. A title link resolves to the lowest tier, the newest within it."""
    if source is not None and candidate.scope == "user" and source.user_id and candidate.user_id == source.user_id:
        return 0
    if source is not None and candidate.scope == "session" and source.session_id and candidate.session_id == source.session_id:
        return 1
    if candidate.scope not in ("user", "session"):  # project, global: shared
        return 2
    return 3


#: The partition a title candidate belongs to, for :func:`tier` (SQL, both backends): per title key, only the newest
#: record of each partition can win, so a read keeps one row per (key, partition).
PARTITION_SQL = (
    "CASE WHEN {a}.scope = 'user' THEN 'u:' || coalesce({a}.user_id, '')"
    " WHEN {a}.scope = 'session' THEN 's:' || coalesce({a}.session_id, '') ELSE 'shared' END"
)


@dataclass(frozen=True, slots=True)
class Link:
    """One outgoing link: ``target`` as written; ``record_id``/``title`` of the record it resolves to for this caller
    (None: unresolved), ``by`` how (``"id"`` or ``"title"``)."""

    target: str
    record_id: str | None = None
    title: str | None = None
    by: Literal["id", "title"] | None = None

    @property
    def resolved(self) -> bool:
        return self.record_id is not None

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "record_id": self.record_id, "title": self.title, "by": self.by}


@dataclass(frozen=True, slots=True)
class Backlink:
    """A current record the caller may see whose body links to the record asked about (``target``: as written)."""

    record_id: str
    title: str
    target: str
    by: Literal["id", "title"]

    def to_dict(self) -> dict[str, Any]:
        return {"record_id": self.record_id, "title": self.title, "target": self.target, "by": self.by}


@dataclass(frozen=True, slots=True)
class RecordLinks:
    """A record's outgoing links (in body order) and its backlinks (newest linking record first)."""

    record_id: str
    title: str
    outgoing: tuple[Link, ...] = ()
    backlinks: tuple[Backlink, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "record_id": self.record_id,
            "title": self.title,
            "outgoing": [link.to_dict() for link in self.outgoing],
            "backlinks": [link.to_dict() for link in self.backlinks],
        }


def resolve(
    links: Sequence[ParsedLink],
    by_id: Mapping[str, Sequence[LinkRef]],
    by_title: Mapping[str, Sequence[LinkRef]],
    source: LinkRef | None = None,
) -> tuple[Link, ...]:
    """``links`` (of the record ``source``) resolved against the records a caller may see: ``by_id`` (id → the record
    with that id, else the records imported under it, as :func:`ids_of` gives them), ``by_title`` (title key → the
    current records with that title, newest first; at least the newest of each partition). An id wins over a title:
    the record with that id, else the imported one of the lowest :func:`tier` for ``source``; among titles the lowest
    :func:`tier`, then the newest; neither: unresolved."""
    out: list[Link] = []
    for link in links:
        ids = by_id.get(link.target) or ()
        if ids:
            ref = ids[0] if ids[0].id == link.target else min(ids, key=lambda r: tier(r, source))  # min: the first of a tier
            out.append(Link(link.target, ref.id, ref.title, "id"))
            continue
        refs = by_title.get(link.key) or ()
        best = min(refs, key=lambda r: tier(r, source)) if refs else None  # min keeps the first (newest) of a tier
        out.append(Link(link.target, best.id, best.title, "title") if best is not None else Link(link.target))
    return tuple(out)


def imported_id(metadata: Mapping[str, Any] | None) -> str | None:
    """The id a record had where it was imported from (``metadata.imported_id``), when it has one."""
    value = (metadata or {}).get("imported_id")
    return value if isinstance(value, str) and value else None


def ids_of(
    ids: Sequence[str], exact: Mapping[str, LinkRef], imported: Iterable[tuple[str, LinkRef]] = ()
) -> dict[str, tuple[LinkRef, ...]]:
    """Link targets (``ids``) to records: ``exact`` (id → visible record) alone where it has the target; a target no
    visible record has as its id goes to the visible records imported under it (``imported``: ``(imported id,
    record)``, ordered current first, then newest first; :func:`resolve` picks by :func:`tier`). Both inputs hold
    only records the caller may see."""
    out: dict[str, tuple[LinkRef, ...]] = {i: (exact[i],) for i in ids if i in exact}
    wanted = set(ids) - set(out)
    found: dict[str, list[LinkRef]] = {}
    for old, ref in imported:
        if old in wanted:
            found.setdefault(old, []).append(ref)
    out.update((old, tuple(refs)) for old, refs in found.items())
    return out


def backlinks_of(
    record: LinkRef,
    candidates: Iterable[tuple[LinkRef, ParsedLink]],
    by_id: Callable[[Sequence[str]], Mapping[str, Sequence[LinkRef]]],
    by_title: Callable[[Sequence[str]], Mapping[str, Sequence[LinkRef]]],
) -> tuple[Backlink, ...]:
    """The backlinks of ``record`` among ``candidates`` (visible current source, one of its links whose target is the
    record's id or whose key is its title key): those that :func:`resolve` sends to ``record`` for this caller (each
    source's title links resolved from that source, :func:`tier`)."""
    pairs = list(candidates)
    ids = by_id(sorted({link.target for _, link in pairs}))
    titles = by_title(sorted({link.key for _, link in pairs}))
    out: dict[str, Backlink] = {}
    for source, link in pairs:
        (resolved,) = resolve([link], ids, titles, source)
        if resolved.record_id == record.id and source.id not in out:
            out[source.id] = Backlink(source.id, source.title, link.target, resolved.by or "title")
    return tuple(out.values())
