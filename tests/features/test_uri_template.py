"""URI templates (RFC 6570) matched back to their variables, and expanded: table tests."""

from __future__ import annotations

import re
import tracemalloc
from collections.abc import Callable
from urllib.parse import unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trio_mcp import ToolDefinitionError
from trio_mcp._features.uri_template import UriTemplate, Variable, _Bits

# (template, uri, the variables it matches to; None: no match)
MATCHES: list[tuple[str, str, dict[str, str | list[str]] | None]] = [
    # {var}: simple string expansion
    ("test://template/{id}/data", "test://template/123/data", {"id": "123"}),
    ("test://template/{id}/data", "test://template/123/other", None),
    ("test://template/{id}/data", "test://template/1/2/data", None),  # no "/" in a {var}
    ("test://template/{id}/data", "test://template//data", {"id": ""}),
    (
        "wh40k://units/{faction}/{unit_id}",
        "wh40k://units/orks/7",
        {"faction": "orks", "unit_id": "7"},
    ),
    # percent-encoding is decoded; an encoded "/" stays inside the value
    ("wh40k://units/{faction}", "wh40k://units/Space%20Marines", {"faction": "Space Marines"}),
    ("wh40k://units/{faction}", "wh40k://units/a%2Fb", {"faction": "a/b"}),
    ("wh40k://units/{faction}", "wh40k://units/Space Marines", {"faction": "Space Marines"}),
    ("x://{name}.{ext}", "x://archive.tar.gz", {"name": "archive.tar", "ext": "gz"}),
    ("x://{a,b}", "x://1,2", {"a": "1", "b": "2"}),
    ("x://{a,b}", "x://1", None),
    ("x://{a:3}", "x://abc", {"a": "abc"}),
    ("x://{a:3}", "x://abcd", None),
    ("x://{list*}", "x://a,b,c", {"list": ["a", "b", "c"]}),
    # {+var}: reserved expansion keeps "/"
    ("file:///{+path}", "file:///src/main.rs", {"path": "src/main.rs"}),
    ("file:///{+path}", "file:///", {"path": ""}),
    ("x://{+a}/end", "x://p/q/end", {"a": "p/q"}),
    ("x://{+a}/end", "x://p/q/other", None),
    # {#var}: fragment
    ("x://doc{#section}", "x://doc#intro/part", {"section": "intro/part"}),
    # {.var}: labels
    ("x://file{.ext}", "x://file.txt", {"ext": "txt"}),
    ("x://file{.ext*}", "x://file.tar.gz", {"ext": ["tar", "gz"]}),
    # {/var}: path segments
    ("x://root{/seg}", "x://root/a", {"seg": "a"}),
    ("x://root{/a,b}", "x://root/1/2", {"a": "1", "b": "2"}),
    ("x://root{/segs*}", "x://root/a/b/c", {"segs": ["a", "b", "c"]}),
    ("x://root{/segs*}", "x://root/a%2Fb/c", {"segs": ["a/b", "c"]}),
    ("x://root{/seg}", "x://root", None),
    # {;var}: path-style parameters, each optional
    ("x://m{;x,y}", "x://m;x=1;y=2", {"x": "1", "y": "2"}),
    ("x://m{;x,y}", "x://m;y=2", {"y": "2"}),
    ("x://m{;x,y}", "x://m", {}),
    # {?query}: any order, any left out; unknown parameters do not match
    ("x://search{?q,limit}", "x://search?q=orks&limit=5", {"q": "orks", "limit": "5"}),
    ("x://search{?q,limit}", "x://search?limit=5&q=orks", {"q": "orks", "limit": "5"}),
    ("x://search{?q,limit}", "x://search?q=orks", {"q": "orks"}),
    ("x://search{?q,limit}", "x://search", {}),
    ("x://search{?q,limit}", "x://search?", {}),
    ("x://search{?q,limit}", "x://search?other=1", None),
    ("x://search{?q,limit}", "x://search?q=a&q=b", None),  # not exploded: once only
    ("x://search{?q}", "x://search?q=Space%20Marines%26Co", {"q": "Space Marines&Co"}),
    ("x://search{?q}", "x://search?q", {"q": ""}),
    ("x://search{?tag*}", "x://search?tag=a&tag=b", {"tag": ["a", "b"]}),
    ("x://search{?q}{&page}", "x://search?page=2&q=x", {"q": "x", "page": "2"}),
    # a literal query in the template: its pairs must be there
    ("x://q?fixed=1{&a}", "x://q?a=3&fixed=1", {"a": "3"}),
    ("x://q?fixed=1{&a}", "x://q?a=3", None),
    ("x://q?fixed=1{&a}", "x://q?fixed=2", None),
    ("x://q?fixed=1{&a}", "x://q", None),
    # path and query together
    (
        "wh40k://units/{faction}{?detail}",
        "wh40k://units/orks?detail=full",
        {"faction": "orks", "detail": "full"},
    ),
    # a URI with a query never matches a template without one
    ("test://template/{id}/data", "test://template/1/data?x=1", None),
    # plain URIs (no expression) match only themselves
    ("test://static-text", "test://static-text", {}),
    ("test://static-text", "test://static-text2", None),
]


@pytest.mark.parametrize(("template", "uri", "expected"), MATCHES)
def test_match(template: str, uri: str, expected: dict[str, str | list[str]] | None) -> None:
    assert UriTemplate(template).match(uri) == expected


# (template, values, the expansion): RFC 6570 section 3.2's examples where they apply
EXPANSIONS: list[tuple[str, dict[str, str | list[str] | None], str]] = [
    ("{var}", {"var": "value"}, "value"),
    ("{hello}", {"hello": "Hello World!"}, "Hello%20World%21"),
    ("{+path}/here", {"path": "/foo/bar"}, "/foo/bar/here"),
    ("{+hello}", {"hello": "Hello World!"}, "Hello%20World!"),
    ("{#path}", {"path": "/foo/bar"}, "#/foo/bar"),
    ("X{.var}", {"var": "value"}, "X.value"),
    ("{/var,x}/here", {"var": "value", "x": "1024"}, "/value/1024/here"),
    ("{;x,y,empty}", {"x": "1024", "y": "768", "empty": ""}, ";x=1024;y=768;empty"),
    ("{?x,y,empty}", {"x": "1024", "y": "768", "empty": ""}, "?x=1024&y=768&empty="),
    ("?fixed=yes{&x}", {"x": "1024"}, "?fixed=yes&x=1024"),
    ("{var:3}", {"var": "value"}, "val"),
    ("{/list*}", {"list": ["red", "green", "blue"]}, "/red/green/blue"),
    ("{?list*}", {"list": ["red", "green"]}, "?list=red&list=green"),
    ("{?list}", {"list": ["red", "green"]}, "?list=red,green"),
    ("{?x,undef}", {"x": "1", "undef": None}, "?x=1"),
    ("{/undef}", {}, ""),
]


@pytest.mark.parametrize(("template", "values", "expected"), EXPANSIONS)
def test_expand(template: str, values: dict[str, str | list[str] | None], expected: str) -> None:
    assert UriTemplate(template).expand(values) == expected


@pytest.mark.parametrize(
    ("template", "values"),
    [
        ("wh40k://units/{faction}/{unit_id}", {"faction": "Space Marines", "unit_id": "7"}),
        ("wh40k://units/{faction}", {"faction": "a/b?c#d"}),
        ("file:///{+path}", {"path": "docs/read me.md"}),
        ("x://root{/segs*}{?q,page}", {"segs": ["a", "b c"], "q": "x&y=z", "page": "2"}),
    ],
)
def test_expand_then_match_gives_the_values_back(
    template: str, values: dict[str, str | list[str]]
) -> None:
    parsed = UriTemplate(template)
    assert parsed.match(parsed.expand(values)) == values


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("x://{a", "unmatched or nested brace"),
        ("x://a}", "unmatched or nested brace"),
        ("x://{{a}}", "unmatched or nested brace"),
        ("x://{}", "is not a variable name"),
        ("x://{a-b}", "is not a variable name"),
        ("x://{=a}", "reserved by RFC 6570"),
        ("x://{a}/{a}", "names a more than once"),
        ("x://{a:0}", "prefix 'a:0' needs a length"),
        ("x://{;a*}", "cannot be matched back"),
        ("x://s{?q}/{a}", "comes after the query"),
        ("x://s{?q}{?r}", "a second query start"),
        ("", "non-empty string"),
    ],
)
def test_malformed_templates_are_refused_at_registration(template: str, message: str) -> None:
    with pytest.raises(ToolDefinitionError, match=message):
        UriTemplate(template)


def test_variables_in_order() -> None:
    parsed = UriTemplate("x://{a}{/b*}{?c,d:2}")
    assert [(v.name, v.explode, v.prefix) for v in parsed.variables] == [
        ("a", False, None),
        ("b", True, None),
        ("c", False, None),
        ("d", False, 2),
    ]
    assert parsed.is_template
    assert not UriTemplate("x://plain").is_template


# -- the linear matcher against the regex it replaced ----------------------------------------------

# Each operator's delimiters, as the regex matcher had them (its character classes, negated).
_REFERENCE_STOPS = {"": "/?#", "+": "?#", "#": "#", ".": "/?#.", "/": "/?#", ";": "/?#;"}
_REFERENCE_LEADS = {
    "": ("", ","),
    "+": ("", ","),
    "#": ("#", ","),
    ".": (".", "."),
    "/": ("/", "/"),
}


def _reference_match(template: UriTemplate, uri: str) -> dict[str, str | list[str]] | None:
    """What the backtracking-regex matcher answered for a URI without a query (the oracle).

    The query part is matched by the same code as before, and is left out here.
    """
    pattern: list[str] = []
    groups: list[tuple[str, str, Variable, str | None]] = []
    for part in template.parts:
        if isinstance(part, str):
            pattern.append(re.escape(part))
            continue
        single = len(part.variables) == 1
        for number, variable in enumerate(part.variables):
            group = f"g{len(groups)}"
            stops = _REFERENCE_STOPS[part.operator]
            stops = stops if single or variable.explode else stops + ","
            one = f"(?:%[0-9A-Fa-f]{{2}}|[^{re.escape(stops)}])"
            value = f"{one}{{0,{variable.prefix}}}" if variable.prefix else f"{one}*"
            if part.operator == ";":
                pattern.append(f"(?:;{re.escape(variable.name)}(?P<{group}>=(?:{value}))?)?")
                groups.append((group, ";", variable, None))
                continue
            first, sep = _REFERENCE_LEADS[part.operator]
            lead = re.escape(first if number == 0 else sep)
            if variable.explode:
                pattern.append(f"{lead}(?P<{group}>{value}(?:{re.escape(sep)}{value})*)")
            else:
                pattern.append(f"{lead}(?P<{group}>{value})")
            groups.append((group, part.operator, variable, sep if variable.explode else None))
    found = re.fullmatch("".join(pattern), uri, re.DOTALL)
    if found is None:
        return None
    values: dict[str, str | list[str]] = {}
    for group, operator, variable, items_sep in groups:
        text = found.group(group)
        if text is None:
            continue
        raw = text[1:] if operator == ";" else text
        values[variable.name] = (
            [unquote(i) for i in raw.split(items_sep)] if items_sep else unquote(raw)
        )
    return values


_OPERATOR = st.sampled_from(["", "+", "#", ".", "/", ";"])
# Literal characters without "%" or hex digits: the old matcher could cut a %XX triplet in two
# to let a literal "4" or "1" match inside it, which the new one never does (a triplet is one
# unit, `_features/uri_template` Rule 2); apart from that, the two must agree.
_LITERAL = st.text(alphabet="xyz./;=,-é", min_size=1, max_size=3)
_PIECES = ["x", "y", "x", "y", "%41", "é", ".", "/", ";", "=", ",", "-", "#", "%2F", "%", "%4"]
_URI_PIECE = st.sampled_from([*_PIECES, "4", ";v1="])


@st.composite
def _templates(draw: st.DrawFn, literals: st.SearchStrategy[str] = _LITERAL) -> str:
    text = "t:" + draw(st.sampled_from(["", "x", "/"]))
    names = iter(f"v{i}" for i in range(10))
    for _ in range(draw(st.integers(1, 4))):
        operator = draw(_OPERATOR)
        specs = []
        for _ in range(draw(st.integers(1, 2))):
            name = next(names)
            modifier = draw(st.sampled_from(["", "", "*", ":1", ":2", ":3"]))
            if modifier == "*" and operator == ";":
                modifier = ""
            specs.append(name + modifier)
        text += "{" + operator + ",".join(specs) + "}"
        if draw(st.booleans()):
            text += draw(literals)
    return text


@st.composite
def _uris_for(draw: st.DrawFn, template: UriTemplate) -> str:
    """A URI shaped like `template` (its literals, each expression's lead), filled at random."""
    uri = ""
    for part in template.parts:
        if isinstance(part, str):
            uri += part if draw(st.integers(0, 9)) else draw(_LITERAL)
            continue
        for number, variable in enumerate(part.variables):
            lead = _REFERENCE_LEADS.get(part.operator, (";", ";"))[number > 0]
            if part.operator == ";":
                lead = f";{variable.name}="
            uri += lead if draw(st.integers(0, 9)) else ""
            uri += "".join(draw(st.lists(_URI_PIECE, max_size=4)))
    return uri + "".join(draw(st.lists(_URI_PIECE, max_size=2)))


@pytest.mark.slow
@settings(max_examples=1000, deadline=None)
@given(template=_templates(), data=st.data())
def test_the_linear_matcher_agrees_with_the_regex_it_replaced(
    template: str, data: st.DataObject
) -> None:
    parsed = UriTemplate(template)
    uri = data.draw(_uris_for(parsed))
    assert parsed.match(uri) == _reference_match(parsed, uri)


_HEX_LITERAL = st.text(alphabet="x.%41é/", min_size=1, max_size=3)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None)
@given(template=_templates(_HEX_LITERAL), data=st.data())
def test_values_start_and_end_between_units(template: str, data: st.DataObject) -> None:
    """With "%" and hex digits in literals too: a value never cuts a `%XX` or a character in
    two, and without any "%" in the URI the regex it replaced still agrees."""
    parsed = UriTemplate(template)
    uri = data.draw(_uris_for(parsed))
    path = uri.encode()
    bits = _Bits(path)
    spans = parsed._path.spans(path, bits)
    for span in spans or ():
        if span is not None:
            assert bits.has(bits.units, span[0]), span
            assert bits.has(bits.units, span[1]), span
    if "%" not in uri:
        assert parsed.match(uri) == _reference_match(parsed, uri)


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        # a %XX triplet and a character are one unit each: prefixes count them so
        ("x://{a:2}", "x://%41é", {"a": "Aé"}),
        ("x://{a:1}{b}", "x://%41%42", {"a": "A", "b": "B"}),
        ("x://{a:1}{b}", "x://é%42", {"a": "é", "b": "B"}),
        ("x://{a:2}.{b}", "x://%41%42%43.d", None),
        # ...and a value never ends inside one
        ("x://{a}1{b}", "x://%411", {"a": "A", "b": ""}),
        ("x://{a}1{b}", "x://%41", None),
        ("x://{a}1", "x://%41", None),
        ("x://{a}1", "x://%411", {"a": "A"}),
        ("x://{a:2}{b:2}.", "x://%41é%42x.", {"a": "Aé", "b": "Bx"}),
        ("x://{a:2}{b:2}.", "x://%41é%42x%43.", None),
        ("x://{a:2}{b}.", "x://%41é%42x%43.", {"a": "Aé", "b": "BxC"}),
        # ambiguous templates: every value as long as the rest allows (leftmost greedy)
        ("x://{a}{b}{c}{d}", "x://abc", {"a": "abc", "b": "", "c": "", "d": ""}),
        ("x://{a:1}{b:1}{c}", "x://abcd", {"a": "a", "b": "b", "c": "cd"}),
        ("x://{+a}..{b}", "x://p/..q..r", {"a": "p/..q", "b": "r"}),
        ("x://m{;x,xy}", "x://m;xy=1", {"xy": "1"}),
        ("x://m{;x,y}", "x://m;x;y=2", {"y": "2"}),
    ],
)
def test_units_and_ambiguous_templates(
    template: str, uri: str, expected: dict[str, str | list[str]] | None
) -> None:
    assert UriTemplate(template).match(uri) == expected


# Templates and URIs that made the regex matcher backtrack for minutes, by (template, URI of
# about n characters): the dots of issue 24 among them.
HOSTILE: list[tuple[str, Callable[[int], str]]] = [
    ("r://dot/{name}.{ext}", lambda n: "r://dot/" + "." * n + "/"),
    ("r://dot/{name}.{ext}", lambda n: "r://dot/" + "." * n),
    ("r://{a}{b}{c}{d}", lambda n: "r://" + "a" * n + "/"),
    ("r://{a}{b}{c}{d}", lambda n: "r://" + "%41" * (n // 3)),
    ("file:///files/{name}", lambda n: "file:///files/" + "a" * n),
    ("x://{a:9999}{b:3}.x", lambda n: "x://" + "a" * n + ".x"),
    ("x://{a:9999}{b:3}.x", lambda n: "x://" + "%41é" * (n // 5) + ".x"),
    ("x://m{;x,y}", lambda n: "x://m" + ";x" * (n // 2) + "=1"),
    ("x://{/s*}{.e*}", lambda n: "x://" + "/." * (n // 2) + "?"),
    ("x://{+a}..{+b}..{c}", lambda n: "x://" + "." * n + "/"),
]


@pytest.mark.parametrize(("template", "make"), HOSTILE)
def test_matching_is_linear_in_the_uri(template: str, make: Callable[[int], str]) -> None:
    """The work of a match does not grow faster than the URI: checked by counting, not timing.

    The matcher does a number of operations on ints as long as the path that depends on the
    template only (`_Bits.operations`), and a scan of the path per value; the same count for a
    URI twice as long, and a bounded memory per character, make it linear.
    """
    parsed = UriTemplate(template)
    counts = []
    for n in (32 * 1024, 64 * 1024):
        path = make(n).partition("?")[0].encode()
        bits = _Bits(path)
        tracemalloc.start()
        try:
            parsed._path.spans(path, bits)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        counts.append(bits.operations)
        assert peak < 16 * len(path) + 100_000, f"{peak:,} bytes for {len(path):,}"
    assert counts[0] == counts[1] < 400
