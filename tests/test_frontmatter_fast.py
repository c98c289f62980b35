"""The fast frontmatter reader gives the safe YAML loader's result whenever it answers, and answers for what we write."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_memory.formats.frontmatter import FrontmatterError, split_text
from agent_memory.formats.yaml_loader import safe_yaml_load
from agent_memory.formats.yaml_writer import fast_load, yaml_scalar
from agent_memory.model.records import MemoryRecord, Scope

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

keys = st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True)
texts = st.text(max_size=40) | st.sampled_from(
    [
        "yes",
        "No",
        "null",
        "True",
        "a: b",
        "x #y",
        "1e5",
        "0x1f",
        "2026-01-02",
        "NaN",
        "-",
        "~",
        "_",
        "a ",
        " a",
        "it's",
        "é",
        "\u2028",
        "\x85",
        "'q'",
    ]
)
numbers = st.integers(-(10**30), 10**30) | st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, 1e-05, 1e20])
json_values = st.recursive(
    st.none() | st.booleans() | numbers | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)
values = (
    texts | numbers | st.booleans() | st.lists(texts | numbers, min_size=1, max_size=5) | st.dictionaries(texts, json_values, max_size=4)
)


def render(data: dict[str, Any]) -> str:
    """A header the way ``MemoryRecord.render`` writes one."""
    out = []
    for key, value in data.items():
        if isinstance(value, list) and value:
            out.append(f"{key}:")
            out.extend(f"- {yaml_scalar(v)}" for v in value)
        else:
            out.append(f"{key}: {yaml_scalar(value)}")
    return "\n".join(out)


def safe(header: str) -> Any:
    try:
        return safe_yaml_load(header)
    except FrontmatterError:
        return FrontmatterError


def same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to itself and -0.0 told from 0.0."""
    if isinstance(a, float) and isinstance(b, float):
        return repr(a) == repr(b)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def check(header: str) -> bool:
    """Whenever the fast reader answers, its answer is the safe loader's. True if it answered."""
    fast = fast_load(header)
    if fast is None:
        return False
    assert same(fast, safe(header)), header
    return True


@SETTINGS
@given(st.dictionaries(keys, values, min_size=1, max_size=8))
def test_rendered_headers_read_alike(data: dict[str, Any]) -> None:
    check(render(data))


@SETTINGS
@given(st.dictionaries(keys, values, min_size=1, max_size=6), st.data())
def test_mutated_headers_read_alike_or_fall_back(data: dict[str, Any], draw: st.DataObject) -> None:
    header = render(data)
    for _ in range(draw.draw(st.integers(1, 4))):
        at = draw.draw(st.integers(0, len(header)))
        cut = draw.draw(st.integers(0, 3))
        bit = draw.draw(
            st.sampled_from(
                [
                    " ",
                    "\t",
                    "\n",
                    "- ",
                    ": ",
                    "#",
                    "&a",
                    "*a",
                    "!t",
                    "'",
                    '"',
                    "{",
                    "}",
                    "[",
                    "]",
                    ",",
                    "\\",
                    "\\u",
                    "\x85",
                    "\ufeff",
                    "e5",
                    "0",
                    "-",
                    "?",
                    "|",
                    ">",
                    "%",
                    "...",
                ]
            )
        )
        header = header[:at] + bit + header[at + cut :]
    check(header)


@SETTINGS
@given(st.text(alphabet=st.sampled_from(list("ab:- \n\"'{}[],#&*!|>?%.0179eE\\u\t")), max_size=60))
def test_arbitrary_text_reads_alike_or_falls_back(header: str) -> None:
    check(header)


@SETTINGS
@given(
    st.text(min_size=1, max_size=200),
    st.lists(st.text(min_size=1, max_size=20), max_size=4),
    st.dictionaries(st.text(max_size=10), json_values, max_size=3),
    st.sampled_from(list(Scope)),
)
def test_record_files_split_the_same_either_way(content: str, tags: list[str], metadata: dict[str, Any], scope: Scope) -> None:
    """A whole record file as the renderer writes it: ``split_text`` (fast path when it answers) = the safe loader."""
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
    header = text.split("\n---\n", 1)[0][len("---\n") :]
    expected = safe(header)
    if expected is FrontmatterError:  # e.g. metadata deeper than the safe loader accepts: the fast reader declines too
        assert fast_load(header) is None
        return
    assert same(split_text(text).data, expected)


def test_the_renderers_usual_output_is_read_fast() -> None:
    header = render(
        {
            "title": "Staging region",
            "kind": "fact",
            "scope": "project",
            "tags": ["infra", "eu"],
            "created": "2026-01-02T03:04:05Z",
            "importance": 0.8,
            "metadata": {"a": [1, 2.5, None, True, "x"]},
        }
    )
    assert (
        fast_load(header)
        == safe_yaml_load(header)
        == {
            "title": "Staging region",
            "kind": "fact",
            "scope": "project",
            "tags": ["infra", "eu"],
            "created": "2026-01-02T03:04:05Z",
            "importance": 0.8,
            "metadata": {"a": [1, 2.5, None, True, "x"]},
        }
    )


def test_what_yaml_reads_otherwise_is_left_to_it() -> None:
    for header in (
        "a: yes",
        "a: 1e-05",
        "a: 2026-01-02",
        "a: 0x1f",
        "a: 010",
        "a:\n  - x",
        "a: x # c",
        "a:",
        "a: &x 1",
        "on: 1",
        "a: 'x'",
        "a: {b: 1}",
        "a: [1,2]",
        "a:  x",
        "a: x\n  y",
        "a: 1\n\nb: 2",
        'a: "\\/"',
        'a: {"b": 1e5}',
        'a: "x\ty"',
    ):
        assert fast_load(header) is None, header


def test_records_rendered_by_the_store_are_read_fast() -> None:
    """Every record file the renderer writes for typical records takes the fast path (the point of the reader)."""
    for i, content in enumerate(["plain words", "a: b # not a comment", "line one\nline two", "ünïcode ✓ 😀", "yes"]):
        rec = MemoryRecord(
            id=f"2026-01-02-x-{i}",
            content=content,
            title=content[:12],
            tags=("t1", "two words"),
            metadata={"k": {"n": [1, 0.5]}},
            created="2026-01-02T03:04:05Z",
            updated="2026-01-02T03:04:05Z",
        )
        header = rec.render().split("\n---\n", 1)[0][len("---\n") :]
        assert fast_load(header) is not None, header


def test_a_number_python_will_not_convert_is_left_to_the_safe_loader() -> None:
    header = 'id: "a"\nimportance: ' + "9" * 5000
    assert fast_load(header) is None  # declined, never a raw ValueError from int()
