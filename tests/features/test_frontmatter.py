"""The YAML front matter reader of skills: what it reads, as a YAML 1.2 parser reads it, and
what it refuses by name.

The expected values are what the `yaml` package (2.9, YAML 1.2 core schema, the parser the
conformance suite compares a skill's entry with) makes of the same text.
"""

from __future__ import annotations

from typing import Any

import pytest

from trio_mcp._features.frontmatter import (
    MAX_DEPTH,
    FrontMatterError,
    front_matter,
    parse_yaml,
    same_json,
    split_front_matter,
)

READ: list[tuple[str, dict[str, Any]]] = [
    (
        "name: pdf-processing\ndescription: Extract, fill, and assemble PDF documents",
        {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
    ),
    ("name: a\ndescription: x # comment\n", {"name": "a", "description": "x"}),
    (
        "name: a\ndescription: >\n  Folded text\n  continues here.\n\n  New para.\nlicense: MIT",
        {"name": "a", "description": "Folded text continues here.\nNew para.\n", "license": "MIT"},
    ),
    (
        "name: a\ndescription: |\n  Literal\n    indented\n  end\n",
        {"name": "a", "description": "Literal\n  indented\nend\n"},
    ),
    ("d: |-\n  a\n  b\n\n", {"d": "a\nb"}),
    ("d: |+\n  a\n  b\n\n\nx: 1", {"d": "a\nb\n\n\n", "x": 1}),
    ("d: >-\n  a\n  b\n", {"d": "a b"}),
    ("d: >\n  a\n\n\n  b\n   more\n  c\n", {"d": "a\n\nb\n more\nc\n"}),
    ("d: |2\n    x\n  y\n", {"d": "  x\ny\n"}),
    ("d: 'it''s'\n", {"d": "it's"}),
    ('d: "a\\tb\\n\\u00e9\\x41\\U0001F600"', {"d": "a\tb\néA😀"}),
    ('d: "line one\n  line two\n\n  para"', {"d": "line one line two\npara"}),
    ("d: 'line one\n  line two\n\n\n  para'", {"d": "line one line two\n\npara"}),
    ('d: "escaped \\\n   break"', {"d": "escaped break"}),
    ("d: plain one\n  plain two\n\n  three", {"d": "plain one plain two\nthree"}),
    (
        "metadata:\n  version: '2.1.0'\n  author: me\n  n: 3\n  f: 1.5\n  t: true\n"
        "  nul: ~\n  e: 1e3\n  o: 0o17\n  h: 0x1F\n  neg: -4",
        {
            "metadata": {
                "version": "2.1.0",
                "author": "me",
                "n": 3,
                "f": 1.5,
                "t": True,
                "nul": None,
                "e": 1000,
                "o": 15,
                "h": 31,
                "neg": -4,
            }
        },
    ),
    (
        "tags:\n- a\n- b\n- c: 1\n  d: 2\n-\n  - x\n  - y",
        {"tags": ["a", "b", {"c": 1, "d": 2}, ["x", "y"]]},
    ),
    (
        "tags:\n  - a\n  - [b, 'c', \"d\"]\n  - {k: v, n: 1}",
        {"tags": ["a", ["b", "c", "d"], {"k": "v", "n": 1}]},
    ),
    ("allowed-tools: Bash(git:*) Read Write", {"allowed-tools": "Bash(git:*) Read Write"}),
    (
        "a: yes\nb: no\nc: on\nd: 2024-01-01\ne: 1.0\nf: .5\ng: +3\nh: 007\ni: 1_000",
        {
            "a": "yes",
            "b": "no",
            "c": "on",
            "d": "2024-01-01",
            "e": 1,
            "f": 0.5,
            "g": 3,
            "h": 7,
            "i": "1_000",
        },
    ),
    (
        "a: http://example.com/x#y\nb: x:y\nc: 'quoted: colon'",
        {"a": "http://example.com/x#y", "b": "x:y", "c": "quoted: colon"},
    ),
    (
        "a:\n  b:\n    c: deep\n  d: [1, 2.5, true, null, ~]",
        {"a": {"b": {"c": "deep"}, "d": [1, 2.5, True, None, None]}},
    ),
    ("a: [a, b]   # comment\nb: {}\nc: []", {"a": ["a", "b"], "b": {}, "c": []}),
    ("'quoted key': 1\n\"dq key\": 2", {"quoted key": 1, "dq key": 2}),
    ("a: value\n# full comment\nb: 2", {"a": "value", "b": 2}),
    ("a: '.inf'", {"a": ".inf"}),
    ("a:\tb", {"a": "b"}),
    ('description: "Use when: the user asks"', {"description": "Use when: the user asks"}),
    (
        "description: Use when the user asks about #hashtags",
        {"description": "Use when the user asks about"},
    ),
    ("d: >\n\n  leading blank\n", {"d": "\nleading blank\n"}),
    ("d: |\n\n  leading blank\n", {"d": "\nleading blank\n"}),
    ("d: |\n  a\n \n  b\n", {"d": "a\n\nb\n"}),
    ("d: >\n  a\n  \n  b\n", {"d": "a\nb\n"}),
    ("d:\n", {"d": None}),
    ("d:", {"d": None}),
    ("d: ''", {"d": ""}),
    ('d: ""', {"d": ""}),
    ('d: "\n  abc"', {"d": " abc"}),
    ("d: 'a\n\n  b '", {"d": "a\nb "}),
    ("x: -1.5e-3\ny: 12e3\nz: 0.", {"x": -0.0015, "y": 12000, "z": 0}),
    ("k: [a: 1, b]", {"k": [{"a": 1}, "b"]}),
    ("k: {a: [1, {b: c}]}", {"k": {"a": [1, {"b": "c"}]}}),
    ("k: v\n\n\n", {"k": "v"}),
    ("list:\n- a\n\n- b\n", {"list": ["a", "b"]}),
    (
        "nested:\n  - name: x\n    items:\n      - 1\n      - 2\n  - name: y",
        {"nested": [{"name": "x", "items": [1, 2]}, {"name": "y"}]},
    ),
    ("a: >+\n  a\n\nb: 1", {"a": "a\n\n", "b": 1}),
    ("a: 'x'   # c", {"a": "x"}),
    ("k: 😀 emoji\nj: café", {"k": "😀 emoji", "j": "café"}),
    ('k: "\\\\"', {"k": "\\"}),
    ("k: 'single\\n'", {"k": "single\\n"}),
    (
        "k: 123abc\nl: 0x\nm: 0o8\nn: 1.2.3\no: -.5\np: +.5e1\nq: '0'",
        {"k": "123abc", "l": "0x", "m": "0o8", "n": "1.2.3", "o": -0.5, "p": 5, "q": "0"},
    ),
]


@pytest.mark.parametrize(("source", "expected"), READ)
def test_reads_what_a_yaml_1_2_parser_reads(source: str, expected: dict[str, Any]) -> None:
    parsed = parse_yaml(source)
    assert same_json(parsed, expected), parsed
    assert list(parsed) == list(expected)  # the author's order


REFUSED: list[tuple[str, str]] = [
    ("a: &anchor 1\nb: *anchor", "line 1: an anchor"),
    ("a: *alias", "line 1: an alias"),
    ("a: !tag x", "line 1: a tag"),
    ("? complex\n: key", "line 1: a complex key"),
    ("a: .inf", "line 1: .inf has no JSON form"),
    ("a: -.Inf", "has no JSON form"),
    ("a: .nan", "has no JSON form"),
    ("a: [1, 2\n  , 3]", "line 1: an unclosed flow collection"),
    ("a: 1\na: 2", "line 2: duplicate key 'a'"),
    ("a: {b: 1, b: 2}", "duplicate key 'b'"),
    ("- a\n- b", "must be a mapping"),
    ("just text", "line 1: expected 'key: value'"),
    ("a: b: c", "line 1: ': ' inside a value"),
    ("a: x\n b: y", "line 2: ': ' inside a value"),
    ("a: 1\n  b: 2", "line 2: ': ' inside a value"),
    ("a:\n  b: 1\n c: 2", "line 3: unexpected indentation"),
    ('a: "never closed\n', "line 1: a quoted string is never closed"),
    ("a: 'x' y", "line 1: text after a string"),
    ("a: [1] x", "line 1: text after a flow collection"),
    ("a: 1\n---\nb: 2", "line 2: '---': one document"),
    ("%YAML 1.2\na: 1", "one document"),
    ("a:\n\t- b", "line 2: a tab in indentation"),
    ('a: "\\q"', "line 1: unknown escape \\q"),
    ('a: "\\ud800"', "is no character"),
    ("a: @x", "reserved indicator (@)"),
    ("a: |x", "unreadable block scalar header"),
    ("a: |\n      deep\n    shallow\n", "line 3: less indented than its block scalar"),
    ("a: |\n      \n    text\n", "needs an indentation indicator"),
    ("a: [b, , c]", "an empty entry"),
    ("a: {b, c: 1}", "a flow mapping entry without ':'"),
    ("a: - b", "cannot start a plain value"),
]


@pytest.mark.parametrize(("source", "message"), REFUSED)
def test_refuses_what_it_does_not_read_naming_the_line(source: str, message: str) -> None:
    with pytest.raises(FrontMatterError, match=None) as caught:
        parse_yaml(source)
    assert message in str(caught.value)


def test_nesting_is_bounded_before_python_recursion_is() -> None:
    deep_block = "\n".join(" " * (2 * level) + "- " for level in range(MAX_DEPTH + 2))
    with pytest.raises(FrontMatterError, match=f"more than {MAX_DEPTH} levels"):
        parse_yaml("a:\n" + deep_block)
    with pytest.raises(FrontMatterError, match=f"more than {MAX_DEPTH} levels"):
        parse_yaml("a: " + "[" * 10_000 + "]" * 10_000)
    assert parse_yaml("a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1))


def test_error_messages_quote_a_long_line_briefly() -> None:
    with pytest.raises(FrontMatterError) as caught:
        parse_yaml("a: [" + "x, " * 100_000)
    assert len(str(caught.value)) < 200


def test_the_block_is_found_at_the_top_of_the_file() -> None:
    text = "\ufeff---\r\nname: x\r\ndescription: y\r\n---\r\n# Body\n---\nnot front matter\n"
    assert split_front_matter(text) == (
        "name: x\r\ndescription: y",
        "# Body\n---\nnot front matter\n",
    )
    assert front_matter(text) == {"name": "x", "description": "y"}
    assert split_front_matter("---\nname: x\n---") == ("name: x", "")
    assert split_front_matter("---\nname: x\n---   \nbody") == ("name: x", "body")


@pytest.mark.parametrize(
    "text",
    ["# Title\n---\nname: x\n---\n", "name: x\n", "---\nname: x\n", " ---\nname: x\n---\n", ""],
)
def test_a_file_without_a_block_at_its_top_has_no_front_matter(text: str) -> None:
    assert split_front_matter(text) is None
    with pytest.raises(FrontMatterError, match="no front matter"):
        front_matter(text)


def test_an_empty_block_is_an_empty_mapping() -> None:
    assert parse_yaml("") == {}
    assert parse_yaml("# only a comment\n\n") == {}


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ({"a": 1}, {"a": 1.0}, True),
        ({"a": True}, {"a": 1}, False),
        ({"a": False}, {"a": 0}, False),
        ({"a": None}, {}, False),
        ({"a": [1, "x"]}, {"a": [1, "x"]}, True),
        ({"a": [1]}, {"a": [1, 1]}, False),
        ({"a": {"b": "c"}}, {"a": {"b": "c"}}, True),
        ({"a": "1"}, {"a": 1}, False),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
    ],
)
def test_same_json_compares_as_json_does(a: Any, b: Any, same: bool) -> None:
    assert same_json(a, b) is same
