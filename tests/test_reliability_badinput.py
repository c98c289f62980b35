"""Bad input, generated: only typed errors, nothing outside the root, no symlink followed, exact read-back."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest
from _doubles import plain_tools
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from pydantic_ai import ModelRetry

from agent_memory import MemoryProvider
from agent_memory.agents.core_block import inject
from agent_memory.agents.tools import FOREGROUND, memory_toolset
from agent_memory.backends.files.store import MemoryDraft, MemoryStore
from agent_memory.errors import AgentMemoryError, NotFoundError
from agent_memory.model.records import MemoryRecord, content_hash, normalize_kind, parse_record, validate_id
from agent_memory.redaction.api import SECRET_SAMPLES, contains_secret

pytestmark = pytest.mark.promise("badinput")


def fuzz(n: int) -> settings:
    return settings(max_examples=n, deadline=None, database=None, derandomize=False, suppress_health_check=list(HealthCheck))


# -- strategies -------------------------------------------------------------------------
SURROGATES = st.characters(categories=["Cs"])
NASTY = st.sampled_from(
    [
        "\x00",
        "\r",
        "\n",
        "\r\n",
        "\u2028",
        "\u2029",
        "\x85",
        "\x0b",
        "\x0c",
        "\x1c",
        "\x1e",
        "\ufeff",
        "\ufffe",
        "\U0001fffe",
        "😀",
        "👩‍👩‍👧",
        "é",
        "e\u0301",
        "ﬁ",
        "İ",
        "ß",
        "\u202e",
        "---",
        "...",
        "---\n",
        "\n---\n",
        "\t",
        "\\",
        '"',
        "'",
        "#",
        ": ",
        "- ",
        "? ",
        "&a ",
        "*a",
        "!!python/object/apply:os.system ['id']",
        "%YAML 1.1",
        "`",
        "{",
        "}",
        "[",
        "]",
        "|",
        ">",
        "~",
        "null",
        "yes",
        "NaN",
        "0x1f",
        "1e5",
        "2026-01-01",
        "<<<MEMORY untrusted-data>>>",
        "<<<END MEMORY>>>",
        "../",
        "/etc/passwd",
        "..",
        "C:\\",
        "%00",
        "${HOME}",
        "'; DROP TABLE records; --",
        '" OR 1=1 --',
        "NEAR(",
        "AND",
        "OR",
        "NOT",
        "*",
        "^",
        "title:",
        "fts",
        "a" * 300,
        " ",
    ]
)
TEXT = st.one_of(
    st.text(max_size=24),
    st.lists(st.one_of(NASTY, st.text(max_size=4), SURROGATES), max_size=6).map("".join),
)
FRONTMATTER_LIKE = st.builds(
    lambda fields, body, crlf: ("---\n" + "\n".join(f"{k}: {v}" for k, v in fields) + "\n---\n" + body).replace(
        "\n", "\r\n" if crlf else "\n"
    ),
    st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "id",
                    "scope",
                    "session_id",
                    "user_id",
                    "title",
                    "tags",
                    "memory_key",
                    "content_hash",
                    "metadata",
                    "path",
                    "expires",
                    "kind",
                ]
            ),
            st.one_of(st.sampled_from(["global", "../../x", "[a, b]", "{x: 1}", "null", "other"]), TEXT),
        ),
        max_size=5,
    ),
    TEXT,
    st.booleans(),
)
HUGE = st.sampled_from(
    [
        "a" * 1_000_000,
        "a" * 1_000_001,
        "😀" * 250_000,
        "😀" * 250_001,
        "word " * 150_000,
        "---\n" * 200_000 + "x",
        ("line\n" * 199_999) + "end",
    ]
)
CONTENT = st.one_of(TEXT, FRONTMATTER_LIKE, st.builds(lambda a, b: a + "\r" if b else a + "\r\n\r\n", TEXT, st.booleans()))
CONTENT_WITH_HUGE = st.one_of(CONTENT, HUGE)
VALID_CONTENT = CONTENT.map(lambda s: re.sub("[\x00\ud800-\udfff]", "", s)).filter(str.strip)
MAYBE = lambda s: st.one_of(st.none(), s)  # noqa: E731


def mostly(valid: st.SearchStrategy[Any], invalid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Valid about 19 times in 20, so that whole drafts are often accepted and their read-back is checked."""
    return st.integers(0, 19).flatmap(lambda i: invalid if i == 0 else valid)


KEYS = st.one_of(st.sampled_from(["k", "team.standup", "user@example", "a:b", "x-1", "_"]), TEXT)
JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True), TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=6,
)
IDS = st.one_of(
    TEXT,
    st.sampled_from(
        [
            "../index",
            "../../outside/sentinel",
            "/etc/passwd",
            "..",
            ".",
            "",
            " ",
            "a/b",
            "a\\b",
            "records/../x",
            "é" * 200,
            "😀" * 70,
            "x" * 201,
            "x" * 200,
            ".hidden",
            "CON",
            "nul",
            "a\x00b",
            ".tmp-x",
            "x.md",
            "evil",
            "index.db",
            "\ud800",
            "a" * 255,
        ]
    ),
)


# -- the sandbox: a root next to an "outside" that must never change ---------------------
class Sandbox:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.root = base / "root"
        self.outside = base / "outside"
        self.outside.mkdir()
        (self.outside / "sentinel.md").write_text("---\ntitle: sentinel\n---\noutside sentinel zebrafish\n")
        (self.outside / "dir").mkdir()
        (self.root / "records").mkdir(parents=True)
        # a symlinked record pointing out of the root, and one whose target does not exist yet
        os.symlink(self.outside / "sentinel.md", self.root / "records" / "evil.md")
        os.symlink(self.outside / "dangling.md", self.root / "records" / "dangling.md")
        self.before = self.snapshot()

    def snapshot(self) -> dict[str, tuple[int, int, bytes]]:
        out = {}
        for dirpath, dirnames, filenames in os.walk(self.base):
            if Path(dirpath).resolve() == self.root.resolve() or self.root in Path(dirpath).parents:
                dirnames[:] = []
                continue
            for name in dirnames + filenames:
                p = Path(dirpath) / name
                st_ = p.lstat()
                out[str(p)] = (st_.st_mode, st_.st_size, p.read_bytes() if p.is_file() and not p.is_symlink() else b"")
        return out

    def check(self) -> None:
        assert self.snapshot() == self.before, "something outside the root changed"
        assert not (self.outside / "dangling.md").exists(), "a symlink was followed out of the root"
        allowed = {
            "records",
            "archive",
            "history",
            "events",
            "index.db",
            "index.db-wal",
            "index.db-shm",
            "index.db-journal",
            "MEMORY.md",
            "USER.md",
            ".lock",
        }
        extra = {p.name for p in self.root.iterdir()} - allowed
        assert not extra, f"unexpected files in the root: {extra}"
        for p in (self.root / "records").iterdir():
            if p.name in ("evil.md", "dangling.md"):
                assert p.is_symlink()
                continue
            assert p.suffix == ".md" and p.is_file() and not p.is_symlink(), p.name
            validate_id(p.name[:-3])


def no_secret(*values: Any) -> bool:
    return not any(isinstance(v, str) and contains_secret(v) for v in values)


def _same_json(a: Any, b: Any) -> bool:
    """Metadata equality. Known limitation (reported, not fixed): a float whose JSON form has no '.'
    (1e+16, NaN, Infinity) is read back by the YAML 1.1 loader as that string."""
    if isinstance(a, str) and isinstance(b, float) and (not math.isfinite(b) or "." not in json.dumps(b)):
        return a == json.dumps(b)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    return a == b and type(a) is type(b)


# -- tests ------------------------------------------------------------------------------
def test_remember_with_generated_fields(tmp_path: Path, reliability_figures: dict[str, Any]) -> None:
    """remember() with generated content, title, kind, scope, session, user, tags, key, on_existing, expires, importance, metadata: a typed error, or a record that reads back exactly (content and every field)."""
    box = Sandbox(tmp_path)
    store = MemoryStore(box.root, durable=False)
    counts = {"cases": 0, "accepted": 0, "rejected": 0, "checked_exactly": 0}
    reasons: dict[str, int] = {}

    SAFE = st.text(st.characters(exclude_categories=["Cs", "Cc"]), max_size=30)

    @fuzz(1500)
    @given(
        content=mostly(VALID_CONTENT, CONTENT),
        title=MAYBE(mostly(SAFE, TEXT)),
        kind=MAYBE(mostly(st.sampled_from(["fact", "Decision", "user preference", "x_1"]), TEXT)),
        scope=MAYBE(mostly(st.sampled_from(["session", "project", "user", "global", "GLOBAL"]), TEXT)),
        session_id=mostly(st.one_of(st.sampled_from(["s1", "s2"]), SAFE.filter(str.strip)), st.one_of(st.none(), TEXT)),
        user_id=mostly(st.one_of(st.sampled_from(["u1"]), SAFE.filter(str.strip)), st.one_of(st.none(), TEXT)),
        tags=st.lists(mostly(SAFE, TEXT), max_size=4),
        memory_key=MAYBE(
            mostly(
                st.one_of(
                    st.sampled_from(["k", "team.standup", "user@example", "a:b"]),
                    st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.:@-]{0,20}", fullmatch=True),
                ),
                KEYS,
            )
        ),
        on_existing=mostly(st.sampled_from(["append", "replace", "skip"]), TEXT),
        expires=MAYBE(mostly(st.sampled_from(["2099-01-01", "2099-01-01T00:00:00Z", "2099-12-31T23:59:59+02:00"]), TEXT)),
        importance=MAYBE(mostly(st.floats(0, 1), st.one_of(st.floats(), st.integers(-2, 2)))),
        metadata=MAYBE(st.dictionaries(TEXT, JSONISH, max_size=3)),
    )
    def case(**kw: Any) -> None:
        counts["cases"] += 1
        if kw["on_existing"] in ("replace", "skip") and kw["memory_key"] is None:  # refused (check_on_existing), then
            with pytest.raises(AgentMemoryError, match="needs a memory_key"):  # the same fields as an append
                store.remember(**kw)
            kw["on_existing"] = "append"
        try:
            r = store.remember(**kw)
        except AgentMemoryError as exc:
            counts["rejected"] += 1
            reasons[re.sub(r"['\"].*", "", str(exc))[:40]] = reasons.get(re.sub(r"['\"].*", "", str(exc))[:40], 0) + 1
            return
        counts["accepted"] += 1
        rec = store.get(r.id, session_id=kw["session_id"], user_id=kw["user_id"])
        content = kw["content"]
        if r.status == "created" and no_secret(content, kw["title"]):
            assert rec.content == content
            if kw["title"] is not None and kw["title"].strip():
                assert rec.title == kw["title"].strip()
            assert rec.kind == normalize_kind(kw["kind"])
            default = "user" if kw["user_id"] else "session" if kw["session_id"] else "project"  # the caller's own partition
            assert rec.scope.value == (kw["scope"] or default).lower()
            assert (rec.session_id, rec.user_id, rec.memory_key) == (kw["session_id"], kw["user_id"], kw["memory_key"])
            assert list(rec.tags) == list(dict.fromkeys(t.strip().lower() for t in kw["tags"] if t.strip()))
            if kw["importance"] is not None:
                assert rec.importance == float(kw["importance"])
            if kw["metadata"] and no_secret(repr(kw["metadata"])):
                mine = {k: v for k, v in rec.metadata.items() if k != "provenance"}  # the store's own stamp
                given = {k: v for k, v in kw["metadata"].items() if k != "provenance"}
                assert _same_json(mine, given), (rec.metadata, kw["metadata"])
            counts["checked_exactly"] += 1
        elif r.status in ("created", "duplicate", "replaced") and no_secret(content):
            assert rec.content_hash == content_hash(content) or r.status == "duplicate"
        elif r.status == "appended" and no_secret(content):
            assert content.strip("\n") in rec.content

    case()
    box.check()
    assert store.doctor().to_dict()["drift"] == {"missing_from_index": 0, "stale_in_index": 0, "orphaned_in_index": 0}
    assert counts["checked_exactly"] > 200, (counts, reasons)
    reliability_figures.update(
        generated_cases=counts["cases"],
        accepted=counts["accepted"],
        rejected_typed=counts["rejected"],
        read_back_exactly=counts["checked_exactly"],
        failures=0,
    )


def test_content_round_trips_byte_for_byte(tmp_path: Path, reliability_figures: dict[str, Any]) -> None:
    """Content alone (NUL, CR, lone surrogates, frontmatter-looking, ~1 MB, emoji): rejected with a typed error, or read back exactly, with its scope unchanged by anything inside it."""
    box = Sandbox(tmp_path)
    store = MemoryStore(box.root, durable=False)
    counts = {"cases": 0, "accepted": 0}

    @fuzz(1500)
    @given(content=CONTENT_WITH_HUGE, scope=st.sampled_from(["session", "project"]))
    def case(content: str, scope: str) -> None:
        counts["cases"] += 1
        try:
            r = store.remember(content, scope=scope, session_id="s1")
        except AgentMemoryError as exc:
            raw_ok = "\x00" not in content and content.strip() and len(content.encode("utf-8", "surrogatepass")) <= 1_000_000
            if raw_ok and not re.search("[\ud800-\udfff]", content):
                raise AssertionError(f"valid content rejected: {exc}") from None
            return
        counts["accepted"] += 1
        rec = store.get(r.id, session_id="s1")
        assert rec.scope.value == scope and rec.session_id == "s1"
        if no_secret(content):
            if r.status == "created":
                assert rec.content == content
            else:
                assert rec.content_hash == content_hash(content)
        if scope == "session":
            with pytest.raises(NotFoundError):
                store.get(r.id, session_id="s2")

    case()
    box.check()
    reliability_figures.update(generated_cases=counts["cases"], accepted=counts["accepted"], failures=0)


def test_ids_and_keys_never_escape_the_root(tmp_path: Path, reliability_figures: dict[str, Any]) -> None:
    """get/forget with generated ids (traversal, absolute, NUL, 800-byte, surrogates, symlinked names) and remember with generated memory_keys: typed errors or not-found, never a file outside the root, never the symlinked record."""
    box = Sandbox(tmp_path)
    store = MemoryStore(box.root, durable=False)
    kept = store.remember("a record that must survive every forget attempt xylophone").id
    counts = {"cases": 0}

    @fuzz(1200)
    @given(rid=IDS, key=KEYS, mode=st.sampled_from(["append", "replace", "skip"]), sid=MAYBE(TEXT))
    def case(rid: str, key: str, mode: Literal["append", "replace", "skip"], sid: str | None) -> None:
        counts["cases"] += 1
        for call in (
            lambda: store.get(rid, session_id=sid),
            lambda: store.forget(rid, session_id=sid),
            lambda: store.remember(f"keyed write for {rid!r}", memory_key=key, on_existing=mode),
            lambda: store.remember("append to the symlinked record", memory_key="evil"),
            lambda: store.remember("append by id", memory_key=rid, on_existing=mode),
        ):
            try:
                result = call()
            except AgentMemoryError:
                continue
            if isinstance(result, MemoryRecord):  # a record from get: only ever a real record file in records/
                assert result.id not in ("evil", "dangling") and "zebrafish" not in result.content
        assert store.get(kept).id == kept or rid == kept

    case()
    with pytest.raises(NotFoundError):
        store.get("evil")
    assert "zebrafish" not in str([h.snippet for h in store.search("outside sentinel zebrafish").hits])
    assert store.forget("evil") is False and (box.root / "records" / "evil.md").is_symlink()
    box.check()
    reliability_figures.update(generated_cases=counts["cases"], failures=0)


def test_read_arguments(tmp_path: Path, reliability_figures: dict[str, Any]) -> None:
    """search/list/inject with generated queries (FTS5 syntax, quotes, SQL), caller ids, tags, scopes, kinds, limits, date filters and budgets: results or typed errors only."""
    box = Sandbox(tmp_path)
    store = MemoryStore(box.root, durable=False)
    for i in range(30):
        store.remember(
            f'seed record {i} about quokkas and "quotes" and NEAR(x y)',
            tags=[f"t{i % 3}"],
            scope=["project", "session", "user", "global"][i % 4],
            session_id="s1",
            user_id="u1",
        )
    counts = {"cases": 0}
    LIMITS = st.one_of(st.integers(-5, 1005), st.sampled_from([0, 1, 10, 1000, 1001, 2**63]))
    DATES = MAYBE(st.one_of(st.sampled_from(["2026-01-01", "9999-12-31T23:59:59Z", ""]), TEXT))

    @fuzz(1500)
    @given(
        query=st.one_of(
            TEXT, st.sampled_from(['"', '""', "a OR", "NEAR(a b", "* *", "title:x", "-x", "AND AND", "quokkas", "x' OR '1'='1"])
        ),
        sid=MAYBE(TEXT),
        uid=MAYBE(TEXT),
        tags=st.lists(TEXT, max_size=3),
        scope=MAYBE(
            st.one_of(
                st.sampled_from(["session", "user", "project", "global"]),
                TEXT,
                st.lists(st.sampled_from(["session", "user", "bogus"]), max_size=2),
            )
        ),
        kind=MAYBE(st.one_of(TEXT, st.lists(TEXT, max_size=2))),
        limit=LIMITS,
        after=DATES,
        before=DATES,
        budget=st.one_of(st.integers(-3, 3000), st.just(10**9)),
    )
    def case(
        query: str, sid: Any, uid: Any, tags: list[str], scope: Any, kind: Any, limit: int, after: Any, before: Any, budget: int
    ) -> None:
        counts["cases"] += 1
        calls: list[Callable[[], Any]] = [
            lambda: store.search(
                query,
                session_id=sid,
                user_id=uid,
                tags=tags,
                scope=scope,
                kind=kind,
                limit=limit,
                created_after=after,
                updated_before=before,
                trace=True,
            ),
            lambda: store.list(
                session_id=sid, user_id=uid, tags=tags, scope=scope, kind=kind, limit=limit, updated_after=after, created_before=before
            ),
            lambda: inject(store, budget, session_id=sid, user_id=uid),
        ]
        for call in calls:
            try:
                call()
            except AgentMemoryError:
                pass

    case()
    box.check()
    reliability_figures.update(generated_cases=counts["cases"], failures=0)


def test_tool_arguments(tmp_path: Path, reliability_figures: dict[str, Any]) -> None:
    """Every memory tool with generated JSON arguments, validated as pydantic-ai does: a result, a validation retry or a ModelRetry, never a crash; nothing outside the root."""
    box = Sandbox(tmp_path)
    provider = MemoryProvider(box.root, durable=False)
    loop = asyncio.new_event_loop()
    seeded = loop.run_until_complete(provider.remember("seeded memory about otters\nsecond line", session_id="s1"))
    toolset = memory_toolset(provider, FOREGROUND, session_id="s1", user_id="u1")
    tools, functions = toolset.tools, plain_tools(toolset)
    counts = {"cases": 0, "ok": 0, "retry": 0, "invalid": 0}
    VALUE = st.one_of(
        TEXT,
        st.integers(-(2**40), 2**40),
        st.floats(),
        st.booleans(),
        st.none(),
        st.lists(TEXT, max_size=3),
        st.sampled_from([seeded.id, "evil", "../outside/sentinel", 0, -1, 10**12]),
    )
    INT = mostly(st.one_of(st.integers(-3, 60), st.integers(-(2**40), 2**40)), VALUE)
    STR = mostly(TEXT, VALUE)
    STRS = mostly(MAYBE(st.lists(TEXT, max_size=3)), VALUE)
    IDV = mostly(st.one_of(st.sampled_from([seeded.id, "evil", "dangling", "../outside/sentinel"]), IDS), VALUE)
    ARGS = {
        "memory_search": {"query": mostly(st.one_of(TEXT, st.just("otters")), VALUE), "tags": STRS, "limit": INT},
        "memory_get": {"id": IDV, "line_start": MAYBE(INT), "line_end": MAYBE(INT)},
        "memory_list": {
            "tags": STRS,
            "kind": MAYBE(STR),
            "limit": INT,
            "scope": mostly(st.sampled_from(["session", "user", "project", "global", None]), VALUE),
        },
        "memory_remember": {
            "content": mostly(CONTENT, VALUE),
            "title": MAYBE(STR),
            "kind": MAYBE(STR),
            "scope": mostly(st.sampled_from(["session", "project", "user", "global", None]), VALUE),
            "tags": STRS,
            "memory_key": MAYBE(mostly(KEYS, VALUE)),
            "on_existing": mostly(st.sampled_from(["append", "replace", "skip"]), VALUE),
        },
        "memory_forget": {"id": IDV},
    }
    REQUIRED = {"memory_search": "query", "memory_get": "id", "memory_remember": "content", "memory_forget": "id"}
    CALL = st.sampled_from(sorted(ARGS)).flatmap(
        lambda name: st.tuples(
            st.just(name),
            st.fixed_dictionaries(
                {k: v for k, v in ARGS[name].items() if k == REQUIRED.get(name)},
                optional={k: v for k, v in ARGS[name].items() if k != REQUIRED.get(name)},
            ),
        )
    )

    @fuzz(2000)
    @given(call=CALL, extra=mostly(st.just({}), st.dictionaries(TEXT, VALUE, max_size=1)))
    def case(call: tuple[str, dict[str, Any]], extra: dict[str, Any]) -> None:
        counts["cases"] += 1
        name, args = call
        tool = tools[name]
        try:
            validated = tool.function_schema.validator.validate_python({**args, **extra})
        except ValidationError:  # pydantic-ai turns this into a retry prompt for the model
            counts["invalid"] += 1
            return
        try:
            out = loop.run_until_complete(functions[name](**validated))
        except ModelRetry:
            counts["retry"] += 1
            return
        counts["ok"] += 1
        assert isinstance(out, dict)
        text = repr(out)
        assert "zebrafish" not in text

    try:
        case()
    finally:
        loop.close()
    box.check()
    reliability_figures.update(
        generated_cases=counts["cases"], ok=counts["ok"], model_retry=counts["retry"], schema_rejected=counts["invalid"], failures=0
    )


def test_planted_symlinks_are_never_followed(tmp_path: Path, reliability_figures: dict[str, Any]) -> None:
    """Symlinks planted in the root (a record, MEMORY.md, USER.md, index.db and its WAL, .lock, an archive entry) pointing outside: nothing outside is read or written."""
    box = Sandbox(tmp_path)
    root, out = box.root, box.outside
    (root / "archive").mkdir()
    links = {
        "MEMORY.md": "memory-target.md",
        "USER.md": "sentinel.md",
        "index.db": "index-target.db",
        "index.db-wal": "wal-target",
        ".lock": "lock-target",
    }
    for name, target in links.items():
        os.symlink(out / target, root / name)
    box.before = box.snapshot()
    store = MemoryStore(root)
    r = store.remember("a record written next to planted links", expires="2990-01-01")
    os.symlink(out / "archived-target.md", root / "archive" / f"{r.id}.md")
    box.before = box.snapshot()
    store.search("planted links zebrafish")
    block = inject(store, 2000)
    assert "zebrafish" not in block.text  # USER.md -> outside is not read
    # archives over the planted archive link without following it
    assert store.sweep(now=dt.datetime(2991, 1, 1, tzinfo=dt.UTC)).expired == [r.id]
    store.reindex()
    report = store.doctor()
    assert "evil.md" in report.problems and "dangling.md" in report.problems
    for name in links:
        p = root / name
        assert not p.is_symlink() or name == "USER.md", f"{name} still a symlink"
    box.check()
    reliability_figures.update(symlinks=len(links) + 3, failures=0)


def test_secret_fields_are_redacted_or_refused(tmp_path: Path, reliability_figures: dict[str, Any]) -> None:
    """Accepted content with a secret is stored redacted (so it is the one case that does not read back exactly); keys and tags with secrets are refused with a typed error."""
    store = MemoryStore(tmp_path / "mem", durable=False)
    for secret in SECRET_SAMPLES:
        r = store.remember(f"note: {secret} end")
        assert secret not in store.get(r.id).content
        for kw in ({"memory_key": secret}, {"tags": [secret]}):
            try:
                store.remember("x", **kw)
            except AgentMemoryError:
                continue
            raise AssertionError(f"accepted a secret in {kw}")  # pragma: no cover
    reliability_figures.update(secrets=len(SECRET_SAMPLES), failures=0)


def test_drafts_from_json(tmp_path: Path, reliability_figures: dict[str, Any]) -> None:
    """MemoryDraft.from_dict with generated JSON objects (the import/capture path): a draft or a typed error; remember_many(on_error='skip') never raises on bad drafts."""
    store = MemoryStore(tmp_path / "mem", durable=False)
    counts = {"cases": 0}
    FIELDS = [
        "content",
        "title",
        "kind",
        "scope",
        "session_id",
        "user_id",
        "tags",
        "memory_key",
        "on_existing",
        "expires",
        "importance",
        "metadata",
        "bogus",
    ]

    @fuzz(600)
    @given(st.dictionaries(st.sampled_from(FIELDS), st.one_of(CONTENT, JSONISH), max_size=6))
    def case(data: dict[str, Any]) -> None:
        counts["cases"] += 1
        try:
            draft = MemoryDraft.from_dict(data)
        except AgentMemoryError:
            return
        errors: list[tuple[int, str]] = []
        try:
            store.remember_many([draft], on_error="skip", errors=errors)
        except AgentMemoryError:
            raise AssertionError("on_error='skip' raised") from None
        except (TypeError, AttributeError):
            # wrong Python types inside a draft (e.g. tags=5): the draft constructor does not type-check
            pytest.fail(f"untyped error for draft {data!r}")

    case()
    reliability_figures.update(generated_cases=counts["cases"], failures=0)


def test_parse_never_crashes_on_generated_files(reliability_figures: dict[str, Any]) -> None:
    """parse_record on generated file text (frontmatter-looking, YAML/JSON junk; decoded UTF-8, so no surrogates): a record or RecordParseError (typed), nothing else."""
    counts = {"cases": 0}

    @fuzz(2000)
    @given(
        text=st.one_of(
            FRONTMATTER_LIKE,
            TEXT,
            st.builds(lambda a, b: f"---\n{a}\n---\n{b}", TEXT, TEXT),
            st.builds(lambda a: "---\n{" + a + "\n---\nbody", TEXT),
        )
    )
    def case(text: str) -> None:
        counts["cases"] += 1
        text = text.encode("utf-8", "replace").decode("utf-8")  # what load_file hands over
        try:
            parse_record(text, "x")
        except AgentMemoryError:
            pass

    case()
    reliability_figures.update(generated_cases=counts["cases"], failures=0)
