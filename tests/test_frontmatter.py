"""split_text through python-frontmatter with our hardened handlers: the lenient reading it always did, the exact
body and body line, the fast path agreeing with the handler path, and the handlers working in python-frontmatter's
own loads/dumps."""

from __future__ import annotations

from typing import Any

import frontmatter
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_memory.formats.frontmatter import MAX_HEADER_BYTES, FrontmatterError, split_text
from agent_memory.formats.yaml_loader import SafeJSONHandler, SafeTOMLHandler, SafeYAMLHandler, read
from agent_memory.model.records import MemoryRecord, Scope


@pytest.mark.parametrize(
    ("text", "data", "body", "body_line"),
    [
        ("---\ntitle: x\n---\nbody\n\n", {"title": "x"}, "body\n\n", 4),
        ("\ufeff---\na: 1\n---\nb", {"a": 1}, "b", 4),
        ("---  \r\na: [1, 2]\r\n---\t\r\n\r\n  b  \r\n", {"a": [1, 2]}, "\n  b  \n", 4),
        ("---\ra: 1\r---\rb\rc", {"a": 1}, "b\nc", 4),
        ("\n \n\t\n---\na: 1\n---\nb", {"a": 1}, "b", 7),
        ('{\n"a": 1\n}  \nbody', {"a": 1}, "body", 4),
        ("{ \n}\n", {}, "", 3),
        ('---\n{"a": 2}\n---\n', {"a": 2}, "", 4),
        ("+++\na = 1\n+++\nx", {"a": 1}, "x", 4),
        ("---\n---", {}, "", 3),
        ("---\n\n---\nx\n---\ny", {}, "x\n---\ny", 4),
        ("---\ntitle: x\n---", {"title": "x"}, "", 4),
        ("plain text\n---\na: 1\n---\n", {}, "plain text\n---\na: 1\n---\n", 1),
        ("----\na: 1\n----\n", {}, "----\na: 1\n----\n", 1),
    ],
)
def test_split_keeps_every_reading(text: str, data: dict[str, Any], body: str, body_line: int) -> None:
    split = split_text(text)
    assert (split.data, split.body, split.body_line) == (data, body, body_line)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("---\na: &x 1\nb: *x\n---\n", "anchors"),
        ("---\na: !!python/object 1\n---\n", "tags"),
        ("---\na: 1\n", "not closed"),
        ('{\n"a": 1\n', "not closed"),
        ("---\n- 1\n---\n", "not a mapping"),
        ("---\na: 1\n---\n---\nb: 2\n---\n", None),  # a second block is body, not a refusal
        ("user_id: u1\nhello", "outside a frontmatter block"),
        ("---\n" + "a: " + "x" * (MAX_HEADER_BYTES + 1) + "\n---\n", "larger than"),
        ("---\n" + "[" * 200 + "]" * 200 + "\n---\n", "nested deeper"),  # depth is checked while parsing
        ("---\na: " + "[" * 200 + "]" * 200 + "\n---\n", "nested deeper"),
        ("+++\na = [[[1]]\n+++\n", "TOML"),
    ],
)
def test_hostile_or_broken_headers_are_refused(text: str, reason: str | None) -> None:
    if reason is None:
        assert split_text(text).body == "---\nb: 2\n---\n"
        return
    with pytest.raises(FrontmatterError, match=reason):
        split_text(text)


SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(
    st.text(min_size=0, max_size=120),
    st.lists(st.text(min_size=1, max_size=12), max_size=3),
    st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=8), max_size=3),
    st.sampled_from(list(Scope)),
    st.integers(0, 3),
)
def test_fast_path_and_handler_path_agree(content: str, tags: list[str], metadata: dict[str, Any], scope: Scope, blank: int) -> None:
    """What split_text returns (fast path when the header is the renderer's) is what python-frontmatter's handler
    path returns for the same file: data, body and body line."""
    rec = MemoryRecord(
        id="2026-01-02-x-1",
        content=content,
        title="A title",
        scope=scope,
        tags=tuple(tags),
        session_id="s1" if scope is Scope.SESSION else None,
        user_id="u1" if scope is Scope.USER else None,
        metadata=metadata,
        created="2026-01-02T03:04:05Z",
        updated="2026-01-02T03:04:05Z",
    )
    text = rec.render()
    found = read(text)
    assert found is not None
    data, rest = found
    split = split_text("\n" * blank + text)
    assert split.data == data and split.body == rest[1:] == content + "\n"
    assert split.body_line == blank + text[: len(text) - len(rest)].count("\n") + 2


def test_python_frontmatter_loads_with_our_handlers_refuses_an_alias_bomb() -> None:
    bomb = "---\na: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n---\nbody"
    with pytest.raises(FrontmatterError, match="anchors"):
        frontmatter.loads(bomb, handler=SafeYAMLHandler())
    post = frontmatter.loads("---\ntitle: x\ntags:\n- a\n---\n\nbody\n", handler=SafeYAMLHandler())
    assert post.metadata == {"title": "x", "tags": ["a"]} and post.content == "body"


@pytest.mark.parametrize("handler", [SafeYAMLHandler(), SafeJSONHandler()])
def test_dumps_with_our_handlers_reads_back(handler: Any) -> None:
    meta = {"title": "Staging region", "tags": ["infra", "eu"], "importance": 0.8, "metadata": {"a": [1, None]}}
    text = frontmatter.dumps(frontmatter.Post("the body", handler=handler, **meta))
    split = split_text(text)
    assert split.data == meta and split.body.strip() == "the body"


def test_toml_is_read_not_written() -> None:
    assert split_text("+++\na = 1\n+++\n").data == {"a": 1}
    with pytest.raises(FrontmatterError, match="written"):
        frontmatter.dumps(frontmatter.Post("x", handler=SafeTOMLHandler(), a=1))
