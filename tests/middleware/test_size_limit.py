"""`ResultSizeLimit`: results over the limit are cut with a note, in their valid wire shape.

Every message of these tests is checked against the official schema of its revision
(`trio_mcp.testing.connect`), so a cut that broke the shape would fail them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tests.http_helpers import serve
from trio_mcp import (
    EmbeddedResource,
    ImageContent,
    ResourceContents,
    Server,
    TextContent,
)
from trio_mcp._core.jsonrpc import Request
from trio_mcp.middleware import ResolvedRequest, ResultSizeLimit
from trio_mcp.testing import connect

TIMEOUT = 30
LIMIT = 2000
MODERN = "2026-07-28"
# Characters that take more than one byte as JSON: accents, an emoji (4 bytes of UTF-8), a quote
# and a newline (escaped), a control character (\u0001: six bytes).
MIXED = 'abc é 🙂 "q"\n\x01 ' * 400


class Listing(BaseModel):
    items: list[str]


def size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def make_server(limit: ResultSizeLimit | None = None) -> Server:
    server = Server("limited", middleware=[limit or ResultSizeLimit(LIMIT)])

    @server.tool()
    def small() -> str:
        return "fits"

    @server.tool()
    def long_text() -> str:
        return MIXED

    @server.tool()
    def huge_listing() -> Listing:
        return Listing(items=[f"item {i}" for i in range(500)])  # ~6 KB, and its mirror

    @server.tool()
    def mirrored() -> Listing:
        return Listing(items=[f"i{i}" for i in range(200)])  # fits alone, not with its mirror

    @server.tool()
    def blocks() -> list[TextContent | ImageContent]:
        return [
            TextContent("first"),
            ImageContent(b"\x89PNG" * 1000, "image/png"),
            TextContent("after the image"),
        ]

    @server.tool()
    def embedded() -> EmbeddedResource:
        return EmbeddedResource("file:///log.txt", text=MIXED, mime_type="text/plain")

    @server.resource("log://{name}")
    def log(name: str) -> str:
        return MIXED

    @server.resource("bin://blob")
    def blob() -> ResourceContents:
        return ResourceContents(blob=b"\x00" * 5000, mime_type="application/octet-stream")

    @server.prompt()
    def story(who: str) -> list[str]:
        return [f"Tell {who} a story", MIXED, "and then more"]

    return server


def note_of(text: str, limit: int = LIMIT) -> None:
    assert text.startswith("...truncated: the result was ")
    assert f"bytes, over the {limit:,} limit" in text


@pytest.mark.parametrize("version", ["2025-11-25", MODERN])
async def test_text_is_cut_at_a_character_boundary_and_noted(version: str) -> None:
    async with connect(make_server(), protocol_version=version) as client:
        fits = await client.call_tool("small")
        cut = await client.call_tool("long_text")
        raw = await client.request("tools/call", {"name": "long_text"})
    assert fits.text == "fits"
    assert not cut.is_error
    text, note = (block["text"] for block in raw["content"])
    assert MIXED.startswith(text)
    assert len(text) > LIMIT // 3  # the room was used, not thrown away
    note_of(note)
    whole: dict[str, Any] = {"content": [{"type": "text", "text": MIXED}]}
    if version == MODERN:
        whole["resultType"] = "complete"
    assert f"was {size(whole):,} bytes" in note
    assert size(raw) <= LIMIT


async def test_structured_content_too_big_alone_is_left_out_and_the_call_fails() -> None:
    async with connect(make_server()) as client:
        await client.list_tools()  # the client checks results against their output schemas
        result = await client.call_tool("huge_listing")
        raw = await client.request("tools/call", {"name": "huge_listing"})
    # A result without structuredContent would break the tool's output schema: isError.
    assert result.is_error
    assert result.structured is None
    assert raw["content"][-1]["text"].endswith("(structuredContent left out)")
    assert size(raw) <= LIMIT


async def test_structured_content_that_fits_stays_whole_and_its_mirror_is_cut() -> None:
    async with connect(make_server()) as client:
        await client.list_tools()
        result = await client.call_tool("mirrored")
        raw = await client.request("tools/call", {"name": "mirrored"})
    assert not result.is_error  # valid against its output schema
    assert result.structured == {"items": [f"i{i}" for i in range(200)]}
    mirror = json.dumps(result.structured, separators=(",", ":"))
    assert mirror.startswith(raw["content"][0]["text"])
    assert len(raw["content"][0]["text"]) < len(mirror)
    note_of(raw["content"][-1]["text"])
    assert size(raw) <= LIMIT


async def test_a_block_that_cannot_be_cut_is_left_out_with_those_after_it() -> None:
    async with connect(make_server()) as client:
        raw = await client.request("tools/call", {"name": "blocks"})
        embedded = await client.request("tools/call", {"name": "embedded"})
    assert [b["type"] for b in raw["content"]] == ["text", "text"]
    assert raw["content"][0]["text"] == "first"
    note_of(raw["content"][1]["text"])
    # An embedded text resource is cut like a text block.
    resource = embedded["content"][0]["resource"]
    assert MIXED.startswith(resource["text"])
    assert resource["uri"] == "file:///log.txt"
    assert size(embedded) <= LIMIT


@pytest.mark.parametrize("version", ["2025-11-25", MODERN])
async def test_reads_and_prompts_are_cut_the_same_way(version: str) -> None:
    async with connect(make_server(), protocol_version=version) as client:
        read = await client.request("resources/read", {"uri": "log://a"})
        blob = await client.request("resources/read", {"uri": "bin://blob"})
        got = await client.request("prompts/get", {"name": "story", "arguments": {"who": "Ann"}})
    text, note = read["contents"]
    assert text["uri"] == "log://a"
    assert MIXED.startswith(text["text"])
    assert note["uri"] == "log://a"
    assert note["mimeType"] == "text/plain"
    note_of(note["text"])
    assert size(read) <= LIMIT
    # A blob cannot be cut (it would decode to a broken file): only the note is left.
    (only,) = blob["contents"]
    note_of(only["text"])
    messages = got["messages"]
    assert messages[0]["content"]["text"] == "Tell Ann a story"
    assert MIXED.startswith(messages[1]["content"]["text"])
    assert messages[-1]["role"] == "user"
    note_of(messages[-1]["content"]["text"])
    assert len(messages) == 3  # "and then more" did not fit after the cut one
    assert size(got) <= LIMIT
    if version == MODERN:
        assert read["resultType"] == got["resultType"] == "complete"


async def test_families_can_be_left_alone() -> None:
    limit = ResultSizeLimit(LIMIT, resources=False, prompts=False)
    async with connect(make_server(limit)) as client:
        read = await client.read_resource("log://a")
        got = await client.get_prompt("story", {"who": "Ann"})
        cut = await client.request("tools/call", {"name": "long_text"})
    assert read.text == MIXED
    assert len(got.messages) == 3
    assert len(cut["content"]) == 2


async def test_over_streamable_http() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve(make_server()) as served:
            client = served.client()
            await client.initialize()
            reply = await client.call("long_text")
    note_of(reply.result["content"][-1]["text"])
    assert size(reply.result) <= LIMIT


def test_a_limit_too_small_for_the_note_is_refused() -> None:
    with pytest.raises(ValueError, match="1024 or more"):
        ResultSizeLimit(100)


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(min_size=0, max_size=3000),
    limit=st.integers(min_value=1024, max_value=4000),
    meta=st.booleans(),
)
def test_any_text_is_cut_to_fit_with_a_prefix_kept(text: str, limit: int, meta: bool) -> None:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": False}
    if meta:
        result["_meta"] = {"note": "x" * 1500}  # fields of its own that take room too
    request = ResolvedRequest(Request(1, "tools/call", {"name": "t"}), "tool", name="t")

    async def call_next(_: ResolvedRequest) -> dict[str, Any]:
        return result

    async def run() -> dict[str, Any]:
        return await ResultSizeLimit(limit).on_call_tool(request, call_next)

    out = trio.run(run)
    whole = size(result)
    if whole <= limit:
        assert out is result
        return
    assert size(out) <= limit
    assert out["isError"] is False
    *kept, note = out["content"]
    note_of(note["text"], limit)
    if kept:
        assert text.startswith(kept[0]["text"])
