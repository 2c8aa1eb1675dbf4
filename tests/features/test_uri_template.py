"""URI templates (RFC 6570) matched back to their variables, and expanded: table tests."""

from __future__ import annotations

import pytest

from trio_mcp import ToolDefinitionError
from trio_mcp._features.uri_template import UriTemplate

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
