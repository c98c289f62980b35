"""Record model, ids and the Markdown + frontmatter file format."""

import pytest

from agent_memory.errors import InvalidIdError, InvalidInputError
from agent_memory.model.records import MemoryRecord, RecordParseError, Scope, new_id, parse_record, validate_id, validate_key

SEED_JSON = """---
{
"id": "2026-05-15-release-plan-a1b2c3d4",
"title": "Release plan",
"kind": "fact",
"scope": "project",
"tags": ["release"],
"metadata": {
"sessionId": "s1",
"memoryKey": "release-plan"
}
}
---
The release codename is copper."""


def test_yaml_round_trip_is_exact():
    rec = MemoryRecord(
        id="x",
        content="line one\n  indented: yes\n---\nnot frontmatter\n",
        title="T: colon",
        tags=("a", "b"),
        scope=Scope.USER,
        user_id="u1",
        memory_key="k",
        created="2026-01-01T00:00:00Z",
        importance=0.5,
        metadata={"dia_id": "D1:3"},
    )
    back = parse_record(rec.render(), "x")
    assert back.content == rec.content
    assert (back.title, back.tags, back.scope, back.user_id, back.memory_key) == ("T: colon", ("a", "b"), Scope.USER, "u1", "k")
    assert back.created == "2026-01-01T00:00:00Z" and back.importance == 0.5
    assert back.metadata == {"dia_id": "D1:3"}
    assert rec.render().startswith("---\nid: x\n")


def test_seed_json_frontmatter_loads_with_camelcase_metadata():
    rec = parse_record(SEED_JSON, "2026-05-15-release-plan-a1b2c3d4")
    assert rec.content == "The release codename is copper."
    assert rec.session_id == "s1" and rec.memory_key == "release-plan"
    assert rec.tags == ("release",) and rec.title == "Release plan"
    assert rec.body_line == 14


def test_plain_markdown_without_frontmatter_is_a_project_record():
    rec = parse_record("# Note\nHello", "note")
    assert rec.scope is Scope.PROJECT and rec.content == "# Note\nHello" and rec.title == "Note"


@pytest.mark.parametrize("text", ["---\nid: [unclosed\n---\nbody", "---\n- a list\n---\nbody", "---\nno end", "---\nscope: galaxy\n---\nx"])
def test_broken_frontmatter_is_a_typed_error(text):
    with pytest.raises(RecordParseError):
        parse_record(text, "x")


@pytest.mark.parametrize("bad", ["../x", "/etc/passwd", "a/b", "a\\b", "x\x00y", "", ".hidden", "..", "a..b", " x", 5, None])
def test_ids_that_look_like_paths_are_refused(bad):
    with pytest.raises(InvalidIdError):
        validate_id(bad)


@pytest.mark.parametrize("bad", ["../k", "/abs", "k/k", "k\x00", "", "a b", "x" * 200])
def test_bad_memory_keys_are_refused(bad):
    with pytest.raises(InvalidInputError):
        validate_key(bad)


def test_new_id_is_date_slug_hash_and_never_raw_input():
    rid = new_id("../../etc/passwd; rm -rf /", "2026-11-22T10:00:00Z")
    assert rid.startswith("2026-11-22-etc-passwd-rm-rf-")
    assert validate_id(rid) == rid and "/" not in rid and ".." not in rid
    assert new_id("", "2026-11-22T10:00:00Z").startswith("2026-11-22-memory-")
    assert new_id("Ünïcödé Title", "2026-11-22").startswith("2026-11-22-unicode-title-")


def test_safe_yaml_load_builds_the_same_plain_values_as_yaml():
    import datetime as dt

    from agent_memory.formats.frontmatter import safe_yaml_load

    text = "a: 1\nb: 1.5\nc: true\nd: ~\ne: 2026-01-02\nf: [x, {g: 'h'}]\ng: |\n  block\nh: 0x1F\n"
    assert safe_yaml_load(text) == {
        "a": 1,
        "b": 1.5,
        "c": True,
        "d": None,
        "e": dt.date(2026, 1, 2),
        "f": ["x", {"g": "h"}],
        "g": "block\n",
        "h": 31,
    }


@pytest.mark.parametrize("text", ["a: &x 1", "a: *x", "a: !tag 1", "a: !!str 1", "? [a]\n: 1", "x: " + "[" * 80 + "]" * 80])
def test_safe_yaml_load_refuses_anchors_aliases_tags_complex_keys_and_depth(text):
    from agent_memory.formats.frontmatter import FrontmatterError, safe_yaml_load

    with pytest.raises(FrontmatterError):
        safe_yaml_load(text)


@pytest.mark.parametrize(
    "value, expected",
    [
        ("2026-01-01T10:00:00+05:00", "2026-01-01T05:00:00.000000Z"),
        ("2026-01-01T10:00:00-05:00", "2026-01-01T15:00:00.000000Z"),
        ("2026-01-01", "2026-01-01T00:00:00.000000Z"),
        ("2026-01-01T10:00:00.5Z", "2026-01-01T10:00:00.500000Z"),
        ("0001-01-01T00:00:00+05:00", "0001-01-01T00:00:00.000000Z"),  # before the range: clamps, never raises
        ("soon", None),
    ],
)
def test_normalize_instant_is_one_utc_form(value, expected):
    from agent_memory.model.records import normalize_instant

    assert normalize_instant(value) == expected


def test_toml_and_json_frontmatter_carry_every_field():
    toml = '+++\ntitle = "T"\ntags = ["a", "b"]\nimportance = 0.5\ncreated = 2026-01-01T00:00:00Z\n+++\nbody'
    rec = parse_record(toml, "x")
    assert (rec.title, rec.tags, rec.importance, rec.created, rec.content) == ("T", ("a", "b"), 0.5, "2026-01-01T00:00:00Z", "body")
    js = '{\n"title": "J", "scope": "global", "tags": "x, y"\n}\nbody'
    rec = parse_record(js, "y")
    assert (rec.title, rec.scope, rec.tags, rec.content, rec.body_line) == ("J", Scope.GLOBAL, ("x", "y"), "body", 4)


def test_crlf_and_bom_files_keep_body_lines_and_content():
    rec = parse_record("\ufeff---\r\ntitle: T\r\n---\r\nline one\r\nline two\r\n", "x")
    assert rec.content == "line one\nline two" and rec.body_line == 4 and rec.title == "T"


def test_quarantine_errors_carry_a_reason_and_a_fix():
    with pytest.raises(RecordParseError) as info:
        parse_record("---\nimportance: .nan\n---\nx", "x")
    assert "importance" in info.value.reason and info.value.fix
