"""A request is resolved once: its target looked up, and its arguments validated, one time.

Counted where the work happens (the registries' lookups, a template's match, the validators),
over a connection (the code stdio runs) and over Streamable HTTP with token verification,
where the transport's scope check reads the same record the dispatcher answers from.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import trio

from tests.helpers import open_memory_peer
from tests.http_helpers import serve
from tests.timing import scaled
from trio_mcp import Server, StaticTokenVerifier
from trio_mcp._features.registry import Registry
from trio_mcp._features.schema import CompiledTool
from trio_mcp._features.uri_template import UriTemplate

TIMEOUT = scaled(30)
SCOPE = "notes:read"


def notes_server() -> Server:
    server = Server("notes")

    @server.tool(scopes=[SCOPE])
    def find(text: str) -> str:
        return f"found {text}"

    @server.tool(inline=True, scopes=[SCOPE])
    def count(text: str) -> int:
        return len(text)

    @server.resource("note://{name}", scopes=[SCOPE])
    def note(name: str) -> str:
        return f"note {name}"

    @server.prompt(scopes=[SCOPE])
    def summarize(topic: str) -> str:
        return f"Summarize {topic}"

    return server


@contextmanager
def counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Count every registry lookup, template match and validation while the block runs."""
    counts: Counter[str] = Counter()

    def wrap(owner: Any, name: str, label: str) -> None:
        original: Callable[..., Any] = getattr(owner, name)

        def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
            counts[label(self) if callable(label) else label] += 1
            return original(self, *args, **kwargs)

        monkeypatch.setattr(owner, name, counted)

    wrap(Registry, "get", lambda registry: f"lookup {registry.kind}")  # type: ignore[arg-type]
    wrap(UriTemplate, "match", "template match")
    wrap(CompiledTool, "validate", "validate")
    yield counts


def _each(counts: Counter[str]) -> dict[str, int]:
    return dict(sorted(counts.items()))


CALLS: list[tuple[str, dict[str, Any], dict[str, int]]] = [
    ("tools/call", {"name": "find", "arguments": {"text": "x"}},
     {"lookup tools": 1, "validate": 1}),
    ("tools/call", {"name": "count", "arguments": {"text": "xyz"}},
     {"lookup tools": 1, "validate": 1}),
    ("resources/read", {"uri": "note://a"},
     {"lookup resources": 1, "template match": 1, "validate": 1}),
    ("prompts/get", {"name": "summarize", "arguments": {"topic": "t"}},
     {"lookup prompts": 1, "validate": 1}),
]  # fmt: skip


@pytest.mark.parametrize(("method", "params", "expected"), CALLS)
async def test_over_a_connection_each_request_is_resolved_once(
    monkeypatch: pytest.MonkeyPatch, method: str, params: dict[str, Any], expected: dict[str, int]
) -> None:
    async with open_memory_peer(notes_server()) as peer:
        with counting(monkeypatch) as counts:
            reply = await peer.request(method, params)
    assert "result" in reply, reply
    assert _each(counts) == expected


@pytest.mark.parametrize(("method", "params", "expected"), CALLS)
async def test_over_http_with_token_checks_each_request_is_resolved_once(
    monkeypatch: pytest.MonkeyPatch, method: str, params: dict[str, Any], expected: dict[str, int]
) -> None:
    verifier = StaticTokenVerifier("t0ken", scopes=[SCOPE])
    with trio.fail_after(TIMEOUT):
        async with serve(notes_server(), auth=verifier) as served:
            client = served.client(authorization="Bearer t0ken")
            await client.initialize()
            with counting(monkeypatch) as counts:
                reply = await client.request(method, params)
    assert reply.status == 200
    assert "result" in reply.last, reply.last
    assert _each(counts) == expected


async def test_the_token_check_reads_the_same_record_it_refuses() -> None:
    # The scopes the transport checks are the record's: a token without them is refused (403)
    # before any session sees the body, for the tool the record names.
    verifier = StaticTokenVerifier("t0ken", scopes=["other"])
    with trio.fail_after(TIMEOUT):
        async with serve(notes_server(), auth=verifier) as served:
            client = served.client(authorization="Bearer t0ken")
            await client.initialize()
            reply = await client.call("find", {"text": "x"})
    assert reply.status == 403
    assert SCOPE in reply.response.headers["www-authenticate"]
