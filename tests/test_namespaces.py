"""Namespaces (issue 29): agents in ``acme/support`` and ``acme/coding`` keep apart, on files and PostgreSQL.

The rule itself (views, the SQL forms agreeing with Python) is tests/test_scopes.py; here every read path of the
Python API is driven through ``MemoryProvider(..., namespace=...)`` on both backends, writes are checked to land
in the writer's namespace whatever a draft says, and the on-disk bytes of a caller without a namespace are
checked to be what they were before namespaces.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agent_memory import MemoryDraft, MemoryProvider
from agent_memory.backends.base import Caller
from agent_memory.backends.files.index import SCHEMA_VERSION
from agent_memory.errors import InvalidInputError, NotFoundError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


async def _seed(backend: Any) -> dict[str, str]:
    """One project record in the root, in ``acme``, in ``acme/coding`` and in ``acme/support``."""
    ids = {}
    for ns, text in [
        (None, "Root: the office wifi password rotates monthly."),
        ("acme", "Acme: the acme escalation phone rota lives in the wiki."),
        ("acme/coding", "Coding: the acme build uses the turbocharger cache."),
        ("acme/support", "Support: refunds above 500 need a manager."),
    ]:
        p = backend.provider(namespace=ns)
        ids[ns or ""] = (await p.remember(text, scope="project")).id
    return ids


async def _seen(p: MemoryProvider, ids: dict[str, str], query: str = "acme OR wifi OR refunds OR turbocharger") -> dict[str, set[str]]:
    """What ``p`` sees of the seeded records through search, list, count, get and the core block."""
    by_id = {v: k for k, v in ids.items()}
    found = {h.id for h in (await p.search(query, limit=20)).hits}
    listed = {r.id for r in await p.list(limit=50)}
    got = set()
    for rid in ids.values():
        try:
            await p.get(rid)
            got.add(rid)
        except NotFoundError:
            pass
    block = (await p.inject(4000)).text
    return {
        "search": {by_id[i] for i in found if i in by_id},
        "list": {by_id[i] for i in listed if i in by_id},
        "get": {by_id[i] for i in got},
        "count": {str(await p.count())},
        "core": {ns for ns in ids if _title_in(block, ns)},
    }


def _title_in(block: str, ns: str) -> bool:
    marks = {"": "wifi", "acme": "escalation", "acme/coding": "turbocharger", "acme/support": "refunds"}
    return marks[ns] in block


async def test_full_isolation_sees_only_its_own_namespace(backend: Any) -> None:
    ids = await _seed(backend)
    support = backend.provider(namespace="acme/support", isolation="full")
    seen = await _seen(support, ids)
    assert seen["search"] == seen["list"] == seen["get"] == seen["core"] == {"acme/support"}
    assert seen["count"] == {"1"}
    with pytest.raises(NotFoundError):
        await support.get(ids["acme/coding"])


async def test_inherited_isolation_sees_its_ancestors_not_its_siblings(backend: Any) -> None:
    ids = await _seed(backend)
    support = backend.provider(namespace="acme/support")  # inherited is the default
    seen = await _seen(support, ids)
    assert seen["search"] == seen["list"] == seen["get"] == seen["core"] == {"", "acme", "acme/support"}
    assert seen["count"] == {"3"}
    # a parent never sees its children; the root sees the root only (today's behaviour)
    assert (await _seen(backend.provider(namespace="acme"), ids))["list"] == {"", "acme"}
    assert (await _seen(backend.provider(), ids))["list"] == {""}


async def test_shared_isolation_sees_a_sibling_only_once_it_is_marked_shared(backend: Any) -> None:
    ids = await _seed(backend)
    other = await backend.provider(namespace="other").remember("Other: the other turbocharger notes", scope="project")
    support = backend.provider(namespace="acme/support", isolation="shared")
    assert (await _seen(support, ids))["search"] == {"", "acme", "acme/support"}
    admin = backend.provider()
    done = await admin.configure_namespace("acme/coding", shared=True)
    assert done == {"namespace": "acme/coding", "shared": True, "isolation": None}
    await admin.configure_namespace("other", shared=True)  # shared, but not a sibling of acme/support
    seen = await _seen(support, ids)
    assert seen["search"] == seen["list"] == seen["get"] == {"", "acme", "acme/support", "acme/coding"}
    assert other.id not in {h.id for h in (await support.search("turbocharger")).hits}
    # full and inherited callers ignore the mark
    assert (await _seen(backend.provider(namespace="acme/support", isolation="full"), ids))["list"] == {"acme/support"}
    assert (await _seen(backend.provider(namespace="acme/support"), ids))["list"] == {"", "acme", "acme/support"}
    # unmarking takes it away again; a registry default isolation applies to a caller that names none
    await admin.configure_namespace("acme/coding", shared=False)
    assert (await _seen(support, ids))["list"] == {"", "acme", "acme/support"}
    await admin.configure_namespace("acme/support", isolation="full")
    assert (await _seen(backend.provider(namespace="acme/support"), ids))["list"] == {"acme/support"}


async def test_writes_land_in_the_callers_namespace_whatever_the_draft_says(backend: Any) -> None:
    support = backend.provider(namespace="acme/support")
    made = await support.remember("Support: the queue closes at six.", scope="project")
    assert (await support.get(made.id)).namespace == "acme/support"
    with pytest.raises(InvalidInputError, match="namespace"):
        await support.remember_many([MemoryDraft("Sneaky: into coding", scope="project", namespace="acme/coding")])
    with pytest.raises(InvalidInputError, match="namespace"):
        await support.remember_many([MemoryDraft("Sneaky: into the parent", scope="project", namespace="acme")])
    coding = backend.provider(namespace="acme/coding", isolation="full")
    assert await coding.list() == []
    # drafts without a namespace are stamped with the writer's
    [res] = await support.remember_many([MemoryDraft("Support: tickets get a reply within a day.", scope="project")])
    assert (await support.get(res.id)).namespace == "acme/support"
    # a capture's extractor cannot choose either
    capturing = MemoryProvider(
        backend.target,
        namespace="acme/support",
        turn_extractor=lambda ctx: [MemoryDraft("Captured: the support phone is 555-0100.", scope="project", namespace="acme")],
        **backend.options,
    )
    backend.providers.append(capturing)
    result = await capturing.capture_turn("the support phone is 555-0100", "noted")
    [cid] = [w["id"] for w in result.written]
    assert (await support.get(cid)).namespace == "acme/support"
    assert await backend.provider(namespace="acme", isolation="full").list() == []
    # a bad namespace is a typed error naming the rule, and writes nothing
    with pytest.raises(InvalidInputError, match="segments"):
        MemoryProvider(backend.target, namespace="Acme/../x", **backend.options)
    with pytest.raises(InvalidInputError, match="segments"):
        await support.search("x", namespace="acme//x")


async def test_same_key_and_same_content_in_two_namespaces_are_two_records(backend: Any) -> None:
    support = backend.provider(namespace="acme/support")
    coding = backend.provider(namespace="acme/coding")
    a = await support.remember("Team lead is Dana.", memory_key="lead", scope="project", on_existing="replace")
    b = await coding.remember("Team lead is Eli.", memory_key="lead", scope="project", on_existing="replace")
    assert b.status == "created" and a.id != b.id
    assert "Dana" in (await support.get(a.id)).content  # not replaced by coding's keyed write
    c = await support.remember("Same words everywhere.", scope="project")
    d = await coding.remember("Same words everywhere.", scope="project")
    assert d.status == "created" and c.id != d.id  # not deduplicated into support's record


async def test_two_users_in_one_namespace_stay_apart(backend: Any) -> None:
    support = backend.provider(namespace="acme/support", isolation="full")
    mine = await support.remember("Alice's locker room is 4411.", user_id="alice")
    assert [h.id for h in (await support.search("locker", user_id="alice")).hits] == [mine.id]
    assert (await support.search("locker", user_id="bob")).hits == []
    assert await support.list(user_id="bob") == []
    with pytest.raises(NotFoundError):
        await support.get(mine.id, user_id="bob")
    # and the same user in another namespace does not see it either
    coding = backend.provider(namespace="acme/coding", isolation="full")
    assert (await coding.search("locker", user_id="alice")).hits == []


async def test_changes_stay_in_the_callers_own_namespace(backend: Any) -> None:
    ids = await _seed(backend)
    support = backend.provider(namespace="acme/support")
    assert (await support.get(ids["acme"])).namespace == "acme"  # it reads its parent …
    assert await support.forget(ids["acme"]) is False  # … but cannot forget the parent's record
    assert await support.forget(ids["acme/coding"]) is False
    assert (await backend.provider(namespace="acme").get(ids["acme"])).id == ids["acme"]
    assert await support.forget(ids["acme/support"]) is True
    event = await support.undo()
    assert event.id == ids["acme/support"]
    assert (await support.get(ids["acme/support"])).namespace == "acme/support"


async def test_events_and_history_follow_the_namespace(backend: Any) -> None:
    ids = await _seed(backend)
    full = backend.provider(namespace="acme/support", isolation="full")
    seen = {e.id for e in await full.events()}
    assert ids["acme/support"] in seen and ids["acme/coding"] not in seen and ids[""] not in seen
    assert await full.events(record_id=ids["acme/coding"]) == []
    coding = backend.provider(namespace="acme/coding")
    assert ids["acme/coding"] in {e.id for e in await coding.events()}
    with pytest.raises(NotFoundError):
        await full.history(ids["acme/coding"])
    assert (await coding.history(ids["acme/coding"])).id == ids["acme/coding"]


async def test_recall_worker_searches_in_the_callers_view(backend: Any) -> None:
    ids = await _seed(backend)
    full = backend.provider(namespace="acme/support", isolation="full")
    got = await full.recall("what do we know about the turbocharger cache and refunds?")
    cited = {src.get("id") for src in got.sources}
    assert ids["acme/support"] in cited and ids["acme/coding"] not in cited and "turbocharger" not in got.summary
    inherited = backend.provider(namespace="acme/support")
    assert ids["acme"] in {src.get("id") for src in (await inherited.recall("acme escalation phone rota")).sources}


async def test_per_call_namespace_overrides_the_providers(backend: Any) -> None:
    ids = await _seed(backend)
    root = backend.provider()
    assert {r.id for r in await root.list(namespace="acme/coding", isolation="full")} == {ids["acme/coding"]}
    made = await root.remember("Per call: into support", scope="project", namespace="acme/support")
    assert (await root.get(made.id, namespace="acme/support")).namespace == "acme/support"
    with pytest.raises(NotFoundError):
        await root.get(made.id)


# -- files: bytes, index migration, export/import -------------------------------------------------------------
async def test_files_without_a_namespace_write_the_same_bytes(tmp_path: Path) -> None:
    p = MemoryProvider(tmp_path / "m")
    made = await p.remember("Plain record, no namespace.", scope="project")
    text = Path(made.path).read_text(encoding="utf-8")
    assert "\nnamespace:" not in text
    support = MemoryProvider(tmp_path / "m", namespace="acme/support")
    other = await support.remember("Namespaced record.", scope="project")
    assert "\nnamespace: acme/support\n" in Path(other.path).read_text(encoding="utf-8")
    assert not (tmp_path / "m" / "namespaces.json").exists()  # nothing configured: no registry file
    await p.aclose()
    await support.aclose()


async def test_hand_written_namespace_is_checked_and_an_old_index_is_migrated(tmp_path: Path) -> None:
    root = tmp_path / "m"
    p = MemoryProvider(root)
    await p.remember("Before namespaces.", scope="project")
    await p.aclose()
    # make the index what schema 5 left: no namespace column
    conn = sqlite3.connect(root / "index.db")
    tok = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0].split("|", 1)[1]
    conn.execute("ALTER TABLE records DROP COLUMN namespace")
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (f"5|{tok}",))
    conn.commit()
    conn.close()
    (root / "records" / "hand.md").write_text("---\nscope: project\nnamespace: acme/coding\n---\nHand-made coding note.\n")
    (root / "records" / "bad.md").write_text("---\nscope: project\nnamespace: Acme/../x\n---\nBad namespace.\n")
    p = MemoryProvider(root)
    assert [r.content for r in await p.list()] == ["Before namespaces."]
    coding = MemoryProvider(root, namespace="acme/coding", isolation="full")
    assert [r.content for r in await coding.list()] == ["Hand-made coding note."]
    conn = sqlite3.connect(root / "index.db")
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0].startswith(f"{SCHEMA_VERSION}|")
    conn.close()
    doctor = await p.doctor()
    assert "bad.md" in json.dumps(dataclasses.asdict(doctor), default=str)
    await p.aclose()
    await coding.aclose()


async def test_export_carries_the_namespace_and_import_lands_in_the_importers(backend: Any, tmp_path: Path) -> None:
    from agent_memory.portable import export_records, import_file

    ids = await _seed(backend)
    admin = backend.provider()
    out = tmp_path / "all.jsonl"
    export_records(admin.backend, out)
    lines = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    by_id = {line["id"]: line for line in lines}
    assert by_id[ids["acme/coding"]]["namespace"] == "acme/coding"
    assert "namespace" not in by_id[ids[""]]  # a root record's line is unchanged
    # an operator restore into a fresh store keeps the namespaces; an import as a namespace re-homes every record
    fresh = MemoryProvider(tmp_path / "restored")
    import_file(fresh.backend, out)
    assert (await fresh.get(ids["acme/coding"], namespace="acme/coding")).namespace == "acme/coding"
    as_ns = MemoryProvider(tmp_path / "as-ns")
    import_file(as_ns.backend, out, namespace="acme/support")
    full = as_ns.in_namespace("acme/support", "full")
    assert {r.namespace for r in await full.list()} == {"acme/support"} and len(await full.list()) == 4
    assert await as_ns.list() == []
    # a caller export holds what that caller sees
    mine = tmp_path / "support.jsonl"
    export_records(admin.backend, mine, caller=Caller(namespace="acme/support", isolation="full"))
    assert [json.loads(x)["id"] for x in mine.read_text().splitlines()[1:]] == [ids["acme/support"]]
    await fresh.aclose()
    await as_ns.aclose()


async def test_session_logs_are_namespaced(tmp_path: Path) -> None:
    coding = MemoryProvider(tmp_path / "m", namespace="acme/coding")
    await coding.log_messages([{"role": "user", "text": "coding secret plan"}], session_id="s1")
    support = MemoryProvider(tmp_path / "m", namespace="acme/support", isolation="full")
    assert await support.sessions(session_id="s1") == []


async def test_postgres_schema_6_is_migrated_in_place(tmp_path: Path) -> None:
    """A schema written before namespaces (version 6) gains the column, the events column and the registry table;
    its rows are the root's, and namespaced writes work next to them."""
    from _pg import fresh_schema, require_psycopg, server

    require_psycopg()
    import psycopg

    url, schema = server().url, fresh_schema()
    old = MemoryProvider(url, schema=schema)
    made = await old.remember("Written before namespaces existed.", scope="project")
    await old.aclose()
    with psycopg.connect(url, autocommit=True) as conn:  # undo migrations 7 and 8: what a version-6 schema holds
        conn.execute(f'ALTER TABLE "{schema}".records DROP COLUMN namespace')
        conn.execute(f'ALTER TABLE "{schema}".events DROP COLUMN owner_namespace')
        conn.execute(f'DROP TABLE "{schema}".namespaces')
        conn.execute(f'DROP TABLE "{schema}".record_links, "{schema}".record_titles')  # and migration 8 (links)
        conn.execute(f'DELETE FROM "{schema}".schema_version WHERE version >= 7')
    root = MemoryProvider(url, schema=schema)
    assert [r.id for r in await root.list()] == [made.id] and (await root.get(made.id)).namespace == ""
    support = root.in_namespace("acme/support", "full")
    await support.remember("Written in support after the migration.", scope="project")
    assert [r.id for r in await root.list()] == [made.id]
    assert [r.namespace for r in await support.list()] == ["acme/support"]
    from agent_memory.backends.postgres.schema import LATEST

    with psycopg.connect(url) as conn:
        row = conn.execute(f'SELECT max(version) FROM "{schema}".schema_version').fetchone()
        assert row is not None and row[0] == LATEST  # namespaces (7), links (8), namespaced session logs and episodes (9)
    await root.aclose()


async def test_consolidation_never_merges_across_namespaces(tmp_path: Path) -> None:
    support = MemoryProvider(tmp_path / "m", namespace="acme/support")
    coding = MemoryProvider(tmp_path / "m", namespace="acme/coding")
    a = await support.remember("The deploy window is Friday afternoon after lunch.", scope="project")
    b = await coding.remember("The deploy window is Friday afternoon after lunch!", scope="project")
    c = await coding.remember("The deploy window is Friday afternoon, after lunch.", scope="project")
    await MemoryProvider(tmp_path / "m").consolidate(max_share=1.0)  # the whole-store pass
    assert (await support.get(a.id)).id == a.id  # support's record is never merged into coding's (nor the reverse)
    assert {b.id, c.id} & {r.id for r in await coding.in_namespace("acme/coding", "full").list()}
    for p in (support, coding):
        await p.aclose()
